// The wall-time cost of packet loss: the same bytes delivered by
// RDMA writes over a lossless sim fabric and over one that drops 10% of the
// packets at random, so RC recovers with sequence NAKs, go-back-N and
// timeouts. Reports delivered bytes per second of wall time; the table of
// tools/bench.sh sets the lossy figure beside the lossless one.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/endpoint.h"
#include "core/names.h"
#include "core/provider.h"
#include "sim/sim_provider.h"

namespace verbsim::bench {
namespace {

constexpr int kWrites = 512;        // per iteration
constexpr uint32_t kBytes = 16384;  // 16 packets at path MTU 1024
constexpr int kWindow = 16;

void BM_LossCost(benchmark::State& state) {
  const int loss_pct = static_cast<int>(state.range(0));
  sim::FabricOptions options;
  options.seed = 1;
  auto profile = sim::ProfileByName("ibta");
  options.profile = *profile;
  sim::SimProvider provider(options);
  if (loss_pct > 0) {
    absl::Status s = provider.fabric().AddFaults(
        absl::StrCat("drop prob=", loss_pct / 100.0));
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  EndpointAttr attr;
  attr.cap.max_send_wr = kWindow;
  attr.timeout = 6;  // 262 us: a lost tail costs little virtual time
  auto pair = CreateConnectedPair(provider, attr);
  if (!pair.ok()) {
    state.SkipWithError(std::string(pair.status().message()).c_str());
    return;
  }
  std::vector<uint8_t> src(kBytes, 0x5a), dst(kBytes * kWindow);
  auto smr = pair->client->RegMsgs(src.data(), src.size());
  auto dmr = pair->server->RegWrite(dst.data(), dst.size());
  if (!smr.ok() || !dmr.ok()) {
    state.SkipWithError("registration failed");
    return;
  }
  const uint64_t base = reinterpret_cast<uint64_t>(dst.data());
  for (auto _ : state) {
    int posted = 0, done = 0;
    while (done < kWrites) {
      while (posted < kWrites && posted - done < kWindow) {
        absl::Status s = pair->client->PostWrite(
            posted, src.data(), kBytes, smr->get(), kSendSignaled,
            base + (posted % kWindow) * kBytes, (*dmr)->rkey());
        if (!s.ok()) {
          state.SkipWithError(std::string(s.message()).c_str());
          return;
        }
        ++posted;
      }
      auto wc = pair->client->GetSendComp(absl::Seconds(60));
      if (!wc.ok() || wc->status != WcStatus::kSuccess) {
        state.SkipWithError("a write did not complete with SUCCESS");
        return;
      }
      ++done;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kWrites *
                          kBytes);
  state.counters["packets_per_write"] = benchmark::Counter(
      static_cast<double>(provider.fabric().packets_sent()) /
      (static_cast<double>(state.iterations()) * kWrites));
}
BENCHMARK(BM_LossCost)
    ->Name("loss_cost/rdma_write_16KiB")
    ->ArgName("loss_pct")
    ->Arg(0)
    ->Arg(10)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace verbsim::bench

BENCHMARK_MAIN();
