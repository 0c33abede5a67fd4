// Bandwidth: RDMA write and RDMA read of 4 KiB to 4 MiB between the
// two endpoints of a connected RC pair, posted and polled from one thread,
// each set beside a memcpy of the same size measured in the same run (the
// physical limit of an in-process copy).
//
// One iteration posts kWindow signaled WRs of `size` bytes in one PostSend
// and polls their kWindow completions. Counters (wall time):
//   rdma_GBps      payload bytes moved per second (1e9 bytes)
//   memcpy_GBps    memcpy of `size` bytes, same process, just before
//   pct_of_memcpy  100 * rdma_GBps / memcpy_GBps
//   virtual_Gbps   (sim only) payload rate in the fabric's virtual time
// The path MTU is the port's active MTU, as ib_write_bw would use.
// The provider comes from VERBSIM_PROVIDER ("sim" by default).
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "benchmark/benchmark.h"
#include "core/endpoint.h"
#include "core/types.h"

namespace verbsim::bench {
namespace {

constexpr int kWindow = 4;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// memcpy bandwidth for `size` bytes from src to dst, in bytes per second:
// warm up, then copy for at least 50 ms.
double MemcpyBytesPerSecond(const Buffer& src, const Buffer& dst, size_t size) {
  for (int i = 0; i < 3; ++i) {
    std::memcpy(dst.data(), src.data(), size);
    benchmark::ClobberMemory();
  }
  using Clock = std::chrono::steady_clock;
  uint64_t copies = 0;
  const Clock::time_point t0 = Clock::now();
  Clock::time_point t1;
  do {
    for (int i = 0; i < 8; ++i) {
      std::memcpy(dst.data(), src.data(), size);
      benchmark::DoNotOptimize(dst.data());
      benchmark::ClobberMemory();
    }
    copies += 8;
    t1 = Clock::now();
  } while (Seconds(t1 - t0) < 0.05);
  return static_cast<double>(copies) * static_cast<double>(size) /
         Seconds(t1 - t0);
}

void BM_Bandwidth(benchmark::State& state, bool write) {
  const size_t size = static_cast<size_t>(state.range(0));
  EndpointAttr attr;
  attr.cap.max_send_wr = 64;
  PairFixture f;
  if (!f.Open(state, attr, /*port_mtu=*/true)) return;
  Endpoint& client = f.client();
  Endpoint& server = f.server();

  Buffer local(size), remote(size), copy_dst(size);
  std::memset(local.data(), 0x5a, size);
  std::memset(remote.data(), 0xa5, size);
  std::unique_ptr<Mr> local_mr = Register(state, client, local);
  if (local_mr == nullptr) return;
  std::unique_ptr<Mr> remote_mr = Register(state, server, remote);
  if (remote_mr == nullptr) return;

  // The reference: a memcpy of the same size, here, now. RDMA write copies
  // local -> remote, read remote -> local; the memcpy copies the same source.
  const double memcpy_bps =
      MemcpyBytesPerSecond(write ? local : remote, copy_dst, size);

  const Sge sge{local.addr(), static_cast<uint32_t>(size), local_mr->lkey()};
  std::vector<SendWr> wrs(kWindow);
  for (int i = 0; i < kWindow; ++i) {
    SendWr& wr = wrs[i];
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = {&sge, 1};
    wr.opcode = write ? WrOpcode::kRdmaWrite : WrOpcode::kRdmaRead;
    wr.send_flags = kSendSignaled;
    wr.rdma.remote_addr = remote.addr();
    wr.rdma.rkey = remote_mr->rkey();
  }

  using Clock = std::chrono::steady_clock;
  const int64_t virtual_t0 = f.VirtualNowNs();
  const Clock::time_point t0 = Clock::now();
  for (auto _ : state) {
    absl::Status s = client.qp()->PostSend(wrs);
    if (!s.ok()) {
      Fail(state, "ibv_post_send", s);
      break;
    }
    if (!PollN(state, client.send_cq(), kWindow)) break;
  }
  const double wall = Seconds(Clock::now() - t0);
  const int64_t virtual_ns = f.VirtualNowNs() - virtual_t0;
  if (state.error_occurred()) return;

  // Check the data arrived (outside the timing).
  const Buffer& dst = write ? remote : local;
  const uint8_t expect = write ? 0x5a : 0xa5;
  if (dst.data()[0] != expect || dst.data()[size - 1] != expect) {
    state.SkipWithError("the payload did not arrive intact");
    return;
  }

  const double bytes = static_cast<double>(state.iterations()) * kWindow *
                       static_cast<double>(size);
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  const double rdma_bps = bytes / wall;
  state.counters["rdma_GBps"] = rdma_bps / 1e9;
  state.counters["memcpy_GBps"] = memcpy_bps / 1e9;
  state.counters["pct_of_memcpy"] = 100.0 * rdma_bps / memcpy_bps;
  if (virtual_ns > 0) {
    state.counters["virtual_Gbps"] =
        bytes * 8 / static_cast<double>(virtual_ns);
  }
  state.counters["mtu"] = MtuBytes(f.path_mtu());
  state.SetLabel(f.spec().c_str());
}

void RegisterAll() {
  for (bool write : {true, false}) {
    Configure(benchmark::RegisterBenchmark(
                  write ? "bandwidth/rdma_write" : "bandwidth/rdma_read",
                  BM_Bandwidth, write))
        ->RangeMultiplier(4)
        ->Range(4 << 10, 4 << 20)
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace verbsim::bench

int main(int argc, char** argv) {
  return verbsim::bench::RunBenchmarks(argc, argv, verbsim::bench::RegisterAll);
}
