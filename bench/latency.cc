// Ping-pong latency: the client sends 8 bytes, the server receives
// them and sends 8 bytes back, the client receives: one round trip per
// iteration, in wall time, both sides driven from one thread (as a unit test
// drives the sim). Sends are inline (as ib_send_lat sends small messages),
// unsignaled with every 32nd signaled.
//
// Counters: virtual_rtt_us (sim only): the round trip in the fabric's
// virtual time (two link latencies and serialisations).
// The provider comes from VERBSIM_PROVIDER ("sim" by default).
#include <cstdint>

#include "bench/bench_util.h"
#include "benchmark/benchmark.h"
#include "core/endpoint.h"
#include "core/types.h"

namespace verbsim::bench {
namespace {

constexpr uint32_t kMsgBytes = 8;
constexpr uint64_t kSignalEvery = 32;

void BM_PingPong(benchmark::State& state) {
  PairFixture f;
  if (!f.Open(state, EndpointAttr())) return;
  Endpoint& client = f.client();
  Endpoint& server = f.server();

  Buffer cbuf(4096), sbuf(4096);
  std::unique_ptr<Mr> cmr = Register(state, client, cbuf);
  if (cmr == nullptr) return;
  std::unique_ptr<Mr> smr = Register(state, server, sbuf);
  if (smr == nullptr) return;

  // Receive buffers at offset 64; the sent bytes at offset 0 (inline).
  const Sge crecv{cbuf.addr() + 64, kMsgBytes, cmr->lkey()};
  const Sge srecv{sbuf.addr() + 64, kMsgBytes, smr->lkey()};
  const Sge csend{cbuf.addr(), kMsgBytes, 0};
  const Sge ssend{sbuf.addr(), kMsgBytes, 0};
  RecvWr crwr, srwr;
  crwr.sg_list = {&crecv, 1};
  srwr.sg_list = {&srecv, 1};
  SendWr cwr, swr;
  cwr.opcode = swr.opcode = WrOpcode::kSend;
  cwr.sg_list = {&csend, 1};
  swr.sg_list = {&ssend, 1};

  absl::Status s = client.qp()->PostRecv(crwr);
  if (s.ok()) s = server.qp()->PostRecv(srwr);
  if (!s.ok()) {
    Fail(state, "ibv_post_recv", s);
    return;
  }

  uint64_t round = 0;
  const int64_t virtual_t0 = f.VirtualNowNs();
  for (auto _ : state) {
    const bool sig = ++round % kSignalEvery == 0;
    cwr.send_flags = swr.send_flags = kSendInline | (sig ? kSendSignaled : 0);
    cwr.wr_id = swr.wr_id = round;
    // Ping.
    s = client.qp()->PostSend(cwr);
    if (!s.ok()) {
      Fail(state, "client ibv_post_send", s);
      break;
    }
    if (!PollN(state, server.recv_cq(), 1)) break;
    s = server.qp()->PostRecv(srwr);
    // Pong.
    if (s.ok()) s = server.qp()->PostSend(swr);
    if (!s.ok()) {
      Fail(state, "server post", s);
      break;
    }
    if (!PollN(state, client.recv_cq(), 1)) break;
    s = client.qp()->PostRecv(crwr);
    if (!s.ok()) {
      Fail(state, "client ibv_post_recv", s);
      break;
    }
    if (sig) {
      if (!PollN(state, client.send_cq(), 1)) break;
      if (!PollN(state, server.send_cq(), 1)) break;
    }
  }
  if (state.error_occurred()) return;
  const int64_t virtual_ns = f.VirtualNowNs() - virtual_t0;
  if (virtual_ns > 0 && state.iterations() > 0) {
    state.counters["virtual_rtt_us"] = static_cast<double>(virtual_ns) / 1e3 /
                                       static_cast<double>(state.iterations());
  }
  state.SetLabel(f.spec().c_str());
}

}  // namespace
}  // namespace verbsim::bench

int main(int argc, char** argv) {
  return verbsim::bench::RunBenchmarks(argc, argv, [] {
    verbsim::bench::Configure(
        benchmark::RegisterBenchmark("latency/ping_pong_rtt",
                                     verbsim::bench::BM_PingPong))
        ->Unit(benchmark::kMicrosecond);
  });
}
