// Time across processes (docs/udp-transport.md, "Time and progress"): with
// the UDP transport the fabric's clock is the wall clock, and a process that
// is not running answers nothing. A real HCA is never descheduled; in the
// sim the peer's HCA is its process. So an RC ACK timer that expires counts
// (a retry, in the end RETRY_EXC_ERR) only when the silence is the peer's:
//  1. this process has looked at its own sockets since the deadline passed
//     (an ACK may be waiting there while the timer's event runs first), and
//  2. the peer's process is gone, or it has received and delivered every
//     datagram this QP sent (its liveness slot, sim/peer_liveness.h), and
//     still no answer came.
// Otherwise the timer runs another period and nothing is counted. None of
// this exists in-process: the fabric's virtual time and its determinism are
// untouched.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "sim/fabric.h"
#include "sim/peer_liveness.h"
#include "sim/udp_transport.h"

namespace verbsim::sim {

void Fabric::StartLiveness() {
  const int base = options_.udp.base_port;
  absl::StatusOr<std::unique_ptr<LivenessTable>> table =
      LivenessTable::Open(LivenessTable::DefaultName());
  absl::Status status = table.status();
  // The ports this process bound (UdpSockets::Open): one per local node,
  // in its process slot.
  for (size_t i = 0; status.ok() && i < options_.udp.local_nodes.size(); ++i) {
    status = (*table)->Claim(SlotPort(base, num_nodes(),
                                      options_.udp.local_nodes[i],
                                      process_slot_));
  }
  if (!status.ok()) {
    // Degraded, not failed: every expiry then counts, as a fabric without
    // the table always did.
    std::fprintf(stderr,
                 "verbsim: UDP transport on port %d: no liveness table (%s); "
                 "an ACK timeout counts even while the peer's process is not "
                 "running\n",
                 base, std::string(status.message()).c_str());
    return;
  }
  liveness_ = *std::move(table);
}

void Fabric::NoteDrained(int64_t began_ns, bool emptied) {
  // A drain that stopped at its batch left datagrams behind: it says
  // nothing about what came before it began.
  if (!emptied) return;
  udp_drained_ns_.store(began_ns, std::memory_order_release);
  if (liveness_ != nullptr) liveness_->Beat(began_ns);
}

int Fabric::PeerPort(const QpCore& qp) const {
  return SlotPort(options_.udp.base_port, num_nodes(), qp.dest_node,
                  QpnSlot(qp.attr.dest_qp_num));
}

Fabric::AckTimerVerdict Fabric::JudgeAckTimeout(const QpCore& qp) {
  // A peer in this process (a local node, and a QPN of this process's
  // slot) runs when this process does.
  if (udp_ == nullptr || qp.dest_node < 0 || qp.dest_node >= num_nodes() ||
      (!nodes_[qp.dest_node]->remote &&
       QpnSlot(qp.attr.dest_qp_num) == process_slot_)) {
    return AckTimerVerdict::kCount;
  }
  // 1. The deadline on the monotonic clock: now, less how late the event
  // runs. A drain that began before it may have missed the answer.
  const int64_t mono = MonotonicNs();
  const int64_t late_ns = std::max<int64_t>(0, now_ns_ - qp.timer_deadline_ns);
  if (udp_drained_ns_.load(std::memory_order_acquire) < mono - late_ns) {
    udp_->Wake();  // the progress thread drains, then runs the event again
    return AckTimerVerdict::kDrainFirst;
  }
  // 2. The peer's process.
  if (liveness_ == nullptr) return AckTimerVerdict::kCount;
  return liveness_->Check(PeerPort(qp), qp.udp_sent_ns) ==
                 LivenessTable::Peer::kNotRunSince
             ? AckTimerVerdict::kPeerNotRun
             : AckTimerVerdict::kCount;
}

}  // namespace verbsim::sim
