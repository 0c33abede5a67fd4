// The C control API of the drop-in (dropin/control/verbsim/control.h,
// docs/control.md): the process's fabric steered from a program between its
// verbs calls. Exported under the version node VERBSIM_CONTROL_1
// (libibverbs.map).
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>

#include "dropin/control/verbsim/control.h"
#include "dropin/verbs/state.h"
#include "sim/handles.h"
#include "sim/sim_provider.h"
#include "tools/verbsim/pcap.h"

using namespace verbsim;
using namespace verbsim::dropin;

namespace {

// The fabric of this process; null when the environment made none.
sim::Fabric* TheFabric() {
  auto* p = dynamic_cast<sim::SimProvider*>(GetProvider());
  return p == nullptr ? nullptr : &p->fabric();
}

int Errno(const absl::Status& s) {
  return s.ok() ? 0 : ErrnoFrom(s, "verbsim control");
}

}  // namespace

extern "C" {

int verbsim_add_faults(const char* rules) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  if (rules == nullptr) return EINVAL;
  return Errno(f->AddFaults(rules));
}

int verbsim_clear_faults(void) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  f->ClearFaults();
  return 0;
}

int verbsim_set_seed(uint64_t seed) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  f->Reseed(seed);
  return 0;
}

int verbsim_query_qp_counters(ibv_qp* qp, verbsim_qp_counters* out) {
  if (qp == nullptr || out == nullptr) return EINVAL;
  ObjectUse use = UseObject(qp, ObjectKind::kQp, nullptr);
  if (use.error()) return use.error();
  sim::SimQpStats st;
  if (!sim::GetSimQpStats(WrapOf<QpWrap>(qp)->impl.get(), &st)) return ENOENT;
  *out = verbsim_qp_counters{};
  out->packets_sent = st.packets_sent;
  out->packets_received = st.packets_received;
  out->packets_dropped = st.packets_dropped;
  out->retransmissions = st.retransmissions;
  out->timeouts = st.timeouts;
  out->rnr_naks = st.rnr_naks;
  out->naks_received = st.naks_received;
  out->naks_sent = st.naks_sent;
  return 0;
}

int verbsim_query_node_counters(int node, verbsim_node_counters* out) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  if (out == nullptr) return EINVAL;
  absl::StatusOr<sim::NodeStats> st = f->GetNodeStats(node);
  if (!st.ok()) return Errno(st.status());
  *out = verbsim_node_counters{};
  out->packets_sent = st->packets_sent;
  out->packets_received = st->packets_received;
  out->packets_dropped = st->packets_dropped;
  out->icrc_errors = st->icrc_errors;
  return 0;
}

int verbsim_advance_time(uint64_t ns) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  if (f->real_time()) return EOPNOTSUPP;  // the wall clock runs it
  f->RunFor(absl::Nanoseconds(static_cast<int64_t>(ns)));
  return 0;
}

int verbsim_freeze_time(int frozen) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  return Errno(f->Freeze(frozen != 0));
}

uint64_t verbsim_now_ns(void) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return 0;
  return static_cast<uint64_t>(absl::ToInt64Nanoseconds(f->Now()));
}

int verbsim_keep_records(int keep) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  f->KeepTrace(keep != 0);
  f->KeepPackets(keep != 0);
  return 0;
}

int verbsim_write_trace(const char* path) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  if (path == nullptr) return EINVAL;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return errno != 0 ? errno : EIO;
  out << f->TraceText();
  out.close();
  return out ? 0 : EIO;
}

int verbsim_write_pcap(const char* path) {
  sim::Fabric* f = TheFabric();
  if (f == nullptr) return ENODEV;
  if (path == nullptr) return EINVAL;
  std::vector<cli::PcapPacket> packets;
  for (const sim::Fabric::CapturedPacket& c : f->CapturedPackets()) {
    packets.push_back({c.time_ns, c.packet});
  }
  return Errno(cli::WritePcap(path, packets, f->options().address_base));
}

}  // extern "C"
