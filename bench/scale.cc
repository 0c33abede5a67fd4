// Scale: N sim nodes and M RC QPs connected by hand in one process,
// reporting the set-up time and the resident memory per QP. One size per
// process, so the memory figure is clean: tools/bench.sh runs it once per
// size.
//
//   scale <nodes> <qps> [<profile>]
//
// Each node gets one context, one PD and one CQ that all its QPs share (the
// usual layout of a server with many connections). The QPs form M/2
// connections; connection k joins node k mod N with a node chosen so that
// the connections spread over all node pairs. Each side goes RESET -> INIT
// -> RTR -> RTS with the other's QP number and GID (what rdma_cm's REQ, REP
// and RTU exchange does). The first and the last connection then carry an
// RDMA write each, to prove they work.
//
// Timed: creating and connecting the M QPs. Memory: VmRSS of
// /proc/self/status before the first QP and after the last one.
// Output: one JSON object on stdout.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "core/types.h"
#include "core/verbs.h"

namespace verbsim::bench {
namespace {

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"), or -1.
int64_t StatusKib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = field + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, prefix.size(), prefix) == 0) {
      return std::strtoll(line.c_str() + prefix.size(), nullptr, 10);
    }
  }
  return -1;
}

int Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "scale: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  return 1;
}

struct NodeObjects {
  std::unique_ptr<Context> context;
  std::unique_ptr<Pd> pd;
  std::unique_ptr<Cq> cq;
  Gid gid{};
};

// Writes 8 bytes over the connection (a -> b) and polls the completion.
absl::Status CheckConnection(NodeObjects& na, Qp* qa, NodeObjects& nb) {
  uint64_t src = 0x0123456789abcdefULL, dst = 0;
  auto smr = na.pd->RegMr(&src, sizeof(src), kAccessLocalWrite);
  if (!smr.ok()) return smr.status();
  auto dmr =
      nb.pd->RegMr(&dst, sizeof(dst), kAccessLocalWrite | kAccessRemoteWrite);
  if (!dmr.ok()) return dmr.status();
  const Sge sge{reinterpret_cast<uint64_t>(&src), sizeof(src), (*smr)->lkey()};
  SendWr wr;
  wr.wr_id = 42;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.sg_list = {&sge, 1};
  wr.rdma.remote_addr = reinterpret_cast<uint64_t>(&dst);
  wr.rdma.rkey = (*dmr)->rkey();
  absl::Status s = qa->PostSend(wr);
  if (!s.ok()) return s;
  WorkCompletion wc;
  for (int i = 0; i < 1000; ++i) {
    auto n = na.cq->Poll({&wc, 1});
    if (!n.ok()) return n.status();
    if (*n == 1) {
      if (wc.status != WcStatus::kSuccess || dst != src) {
        return absl::InternalError(absl::StrCat("write completed with status ",
                                                static_cast<int>(wc.status)));
      }
      return absl::OkStatus();
    }
  }
  return absl::DeadlineExceededError("no completion for the check write");
}

int Run(int nodes, int64_t qps, const std::string& profile) {
  const std::string spec = absl::StrCat("sim:", profile, ",nodes=", nodes);
  auto provider = OpenProvider(spec);
  if (!provider.ok())
    return Die("OpenProvider(" + spec + ")", provider.status());
  auto devices = (*provider)->ListDevices();
  if (!devices.ok()) return Die("ListDevices", devices.status());
  if (static_cast<int>(devices->size()) != nodes) {
    std::fprintf(stderr, "scale: %s has %zu devices, wanted %d\n", spec.c_str(),
                 devices->size(), nodes);
    return 1;
  }

  const int64_t connections = (qps + 1) / 2;
  EndpointAttr attr;  // caps, access and timers of a default endpoint
  QpInitAttr init;
  init.cap = attr.cap;
  init.qp_type = QpType::kRc;
  const int cq_depth = 1024;

  std::vector<NodeObjects> n(nodes);
  for (int i = 0; i < nodes; ++i) {
    auto context = (*provider)->Open((*devices)[i]);
    if (!context.ok()) return Die("Open", context.status());
    n[i].context = *std::move(context);
    auto pd = n[i].context->AllocPd();
    if (!pd.ok()) return Die("AllocPd", pd.status());
    n[i].pd = *std::move(pd);
    auto cq = n[i].context->CreateCq(cq_depth, nullptr);
    if (!cq.ok()) return Die("CreateCq", cq.status());
    n[i].cq = *std::move(cq);
    auto gid = n[i].context->QueryGid(1, 0);
    if (!gid.ok()) return Die("QueryGid", gid.status());
    n[i].gid = *gid;
  }

  std::vector<std::unique_ptr<Qp>> handles;
  handles.reserve(static_cast<size_t>(connections) * 2);
  std::vector<int> node_of;  // node index of handles[i]
  node_of.reserve(handles.capacity());

  const int64_t rss_before = StatusKib("VmRSS");
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  for (int64_t k = 0; k < connections; ++k) {
    const int a = static_cast<int>(k % nodes);
    const int b = static_cast<int>((a + 1 + (k / nodes) % (nodes - 1)) % nodes);
    init.send_cq = n[a].cq.get();
    init.recv_cq = n[a].cq.get();
    auto qa = n[a].pd->CreateQp(init);
    if (!qa.ok()) return Die(absl::StrCat("CreateQp #", 2 * k), qa.status());
    init.send_cq = n[b].cq.get();
    init.recv_cq = n[b].cq.get();
    auto qb = n[b].pd->CreateQp(init);
    if (!qb.ok())
      return Die(absl::StrCat("CreateQp #", 2 * k + 1), qb.status());
    Qp* pa = qa->get();
    Qp* pb = qb->get();
    absl::Status s = ModifyQpToInit(pa, attr);
    if (s.ok()) s = ModifyQpToInit(pb, attr);
    if (s.ok()) s = ModifyQpToRtr(pa, attr, pb->qp_num(), n[b].gid, 0);
    if (s.ok()) s = ModifyQpToRtr(pb, attr, pa->qp_num(), n[a].gid, 0);
    if (s.ok()) s = ModifyQpToRts(pa, attr, 0);
    if (s.ok()) s = ModifyQpToRts(pb, attr, 0);
    if (!s.ok()) return Die(absl::StrCat("connecting pair #", k), s);
    handles.push_back(*std::move(qa));
    handles.push_back(*std::move(qb));
    node_of.push_back(a);
    node_of.push_back(b);
  }
  const double setup_s =
      std::chrono::duration<double>(Clock::now() - t0).count();
  const int64_t rss_after = StatusKib("VmRSS");
  const int64_t hwm = StatusKib("VmHWM");

  // The first and the last connection must carry traffic.
  for (size_t i : {size_t{0}, handles.size() - 2}) {
    absl::Status s =
        CheckConnection(n[node_of[i]], handles[i].get(), n[node_of[i + 1]]);
    if (!s.ok()) return Die(absl::StrCat("check write on pair #", i / 2), s);
  }

  const Clock::time_point t1 = Clock::now();
  handles.clear();
  const double teardown_s =
      std::chrono::duration<double>(Clock::now() - t1).count();

  const int64_t created = static_cast<int64_t>(node_of.size());
  const double bytes_per_qp = static_cast<double>(rss_after - rss_before) *
                              1024.0 / static_cast<double>(created);
  std::printf(
      "{\"nodes\": %d, \"qps\": %lld, \"setup_s\": %.6f, "
      "\"setup_us_per_qp\": %.3f, \"rss_before_kib\": %lld, "
      "\"rss_after_kib\": %lld, \"vm_hwm_kib\": %lld, "
      "\"bytes_per_qp\": %.1f, \"teardown_s\": %.6f}\n",
      nodes, static_cast<long long>(created), setup_s,
      setup_s * 1e6 / static_cast<double>(created),
      static_cast<long long>(rss_before), static_cast<long long>(rss_after),
      static_cast<long long>(hwm), bytes_per_qp, teardown_s);
  return 0;
}

}  // namespace
}  // namespace verbsim::bench

int main(int argc, char** argv) {
  int nodes = 0;
  int64_t qps = 0;
  if ((argc != 3 && argc != 4) || !absl::SimpleAtoi(argv[1], &nodes) ||
      !absl::SimpleAtoi(argv[2], &qps) || nodes < 2 || qps < 2) {
    std::fprintf(stderr,
                 "usage: scale <nodes >= 2> <qps >= 2> [<profile>]\n"
                 "  e.g. scale 100 100000\n");
    return 2;
  }
  const std::string profile = argc == 4 ? argv[3] : "ibta";
  return verbsim::bench::Run(nodes, qps, profile);
}
