// Message rate: 8-byte RDMA write, send/recv, RDMA read and
// fetch-and-add between the two endpoints of a connected RC pair, posted and
// polled from one thread.
//
//   batch:1   one SendWr per PostSend
//   batch:32  a span of 32 SendWr in one PostSend (and, for send/recv, 32
//             RecvWr in one PostRecv)
//   signal_every:1   every WR signaled, every completion polled
//   signal_every:32  unsignaled, every 32nd WR signaled; its completion
//                    stands for the 31 before it (ibv_poll_cq(3) ordering)
//
// One benchmark iteration is one PostSend of `batch` WRs (plus the polls due
// after it); items_per_second is messages per second of wall time.
// virtual_ns_per_msg (sim only): virtual time that passed per message.
// The provider comes from VERBSIM_PROVIDER ("sim" by default).
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "benchmark/benchmark.h"
#include "core/endpoint.h"
#include "core/types.h"

namespace verbsim::bench {
namespace {

enum class Op { kWrite, kSend, kRead, kFetchAdd };

const char* OpName(Op op) {
  switch (op) {
    case Op::kWrite:
      return "rdma_write";
    case Op::kSend:
      return "send_recv";
    case Op::kRead:
      return "rdma_read";
    case Op::kFetchAdd:
      return "fetch_add";
  }
  return "?";
}

constexpr uint32_t kMsgBytes = 8;

void BM_MessageRate(benchmark::State& state, Op op, int batch,
                    int signal_every) {
  EndpointAttr attr;
  // Room for 32 unsignaled WRs in flight plus a batch of 32.
  attr.cap.max_send_wr = 128;
  attr.cap.max_recv_wr = 128;
  attr.cq_depth = 512;
  PairFixture f;
  if (!f.Open(state, attr)) return;
  Endpoint& client = f.client();
  Endpoint& server = f.server();

  // Client: the 8-byte local buffer. Server: the RDMA/atomic target and the
  // receive buffers, one MR granting every access.
  Buffer local(4096), remote(4096);
  std::unique_ptr<Mr> local_mr = Register(state, client, local);
  if (local_mr == nullptr) return;
  std::unique_ptr<Mr> remote_mr = Register(state, server, remote);
  if (remote_mr == nullptr) return;

  const Sge sge{local.addr(), kMsgBytes, local_mr->lkey()};
  std::vector<SendWr> wrs(batch);
  for (int i = 0; i < batch; ++i) {
    SendWr& wr = wrs[i];
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = {&sge, 1};
    switch (op) {
      case Op::kWrite:
        wr.opcode = WrOpcode::kRdmaWrite;
        wr.rdma.remote_addr = remote.addr();
        wr.rdma.rkey = remote_mr->rkey();
        break;
      case Op::kSend:
        wr.opcode = WrOpcode::kSend;
        break;
      case Op::kRead:
        wr.opcode = WrOpcode::kRdmaRead;
        wr.rdma.remote_addr = remote.addr();
        wr.rdma.rkey = remote_mr->rkey();
        break;
      case Op::kFetchAdd:
        wr.opcode = WrOpcode::kAtomicFetchAndAdd;
        wr.atomic.remote_addr = remote.addr();
        wr.atomic.rkey = remote_mr->rkey();
        wr.atomic.compare_add = 1;
        break;
    }
  }
  // Receive buffers for send/recv: 8 bytes each, past the atomic target.
  std::vector<Sge> recv_sges(batch);
  std::vector<RecvWr> rwrs(batch);
  for (int i = 0; i < batch; ++i) {
    recv_sges[i] = Sge{remote.addr() + 64 + 8 * static_cast<uint64_t>(i),
                       kMsgBytes, remote_mr->lkey()};
    rwrs[i].wr_id = static_cast<uint64_t>(i);
    rwrs[i].sg_list = {&recv_sges[i], 1};
  }

  const int64_t virtual_t0 = f.VirtualNowNs();
  uint64_t posted = 0;     // messages posted so far
  int recvs_unpolled = 0;  // receive completions not yet polled
  for (auto _ : state) {
    if (op == Op::kSend) {
      absl::Status s = server.qp()->PostRecv(rwrs);
      if (!s.ok()) {
        Fail(state, "ibv_post_recv", s);
        break;
      }
    }
    int signaled = 0;
    for (SendWr& wr : wrs) {
      const bool sig = ++posted % signal_every == 0;
      wr.send_flags = sig ? kSendSignaled : 0;
      signaled += sig ? 1 : 0;
    }
    absl::Status s = client.qp()->PostSend(wrs);
    if (!s.ok()) {
      Fail(state, "ibv_post_send", s);
      break;
    }
    if (op == Op::kSend) recvs_unpolled += batch;
    if (signaled == 0) continue;
    if (!PollN(state, client.send_cq(), signaled)) break;
    if (op == Op::kSend) {
      // The signaled send completed, so every receive before it did too.
      if (!PollN(state, server.recv_cq(), recvs_unpolled)) break;
      recvs_unpolled = 0;
    }
  }
  if (state.error_occurred()) return;
  state.SetItemsProcessed(state.iterations() * batch);
  const int64_t virtual_ns = f.VirtualNowNs() - virtual_t0;
  if (virtual_ns > 0 && posted > 0) {
    state.counters["virtual_ns_per_msg"] =
        static_cast<double>(virtual_ns) / static_cast<double>(posted);
  }
  state.SetLabel(f.spec().c_str());
}

void RegisterAll() {
  for (Op op : {Op::kWrite, Op::kSend, Op::kRead, Op::kFetchAdd}) {
    for (int batch : {1, 32}) {
      for (int every : {1, 32}) {
        const std::string name = absl::StrCat(
            "msg_rate/", OpName(op), "/batch:", batch, "/signal_every:", every);
        Configure(benchmark::RegisterBenchmark(name.c_str(), BM_MessageRate, op,
                                               batch, every))
            ->Unit(benchmark::kNanosecond);
      }
    }
  }
}

}  // namespace
}  // namespace verbsim::bench

int main(int argc, char** argv) {
  return verbsim::bench::RunBenchmarks(argc, argv, verbsim::bench::RegisterAll);
}
