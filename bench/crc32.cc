// The ICRC's CRC-32 (sim/crc32.h), each way on its own, over the lengths a
// RoCEv2 frame of the UDP transport has: a small packet, one of 1 KiB and
// a full 4 KiB MTU packet with its headers. bytes_per_second is the rate;
// a way this processor lacks is skipped with the reason.
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "sim/crc32.h"

namespace verbsim::sim {
namespace {

using Update = uint32_t (*)(uint32_t, const uint8_t*, size_t);

void Run(benchmark::State& state, Update update, bool available,
         size_t min_length) {
  const size_t n = static_cast<size_t>(state.range(0));
  if (!available) {
    state.SkipWithError("this processor lacks the instructions of this way");
    return;
  }
  if (n < min_length) {
    state.SkipWithError("shorter than this way takes");
    return;
  }
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  uint32_t reg = 0xffffffffu;
  for (auto _ : state) {
    reg = update(reg, data.data(), n);
    benchmark::DoNotOptimize(reg);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_Sliced(benchmark::State& state) {
  Run(state, crc32_internal::SlicedUpdate, true, 0);
}
void BM_Folded(benchmark::State& state) {
  Run(state, crc32_internal::FoldedUpdate, crc32_internal::HasClmul(), 64);
}
void BM_WideFolded(benchmark::State& state) {
  Run(state, crc32_internal::WideFoldedUpdate, crc32_internal::HasWideClmul(),
      256);
}
void BM_Crc32Update(benchmark::State& state) {
  Run(state, Crc32Update, true, 0);
}

// 64 B: a small packet; 1,082 and 4,154 B: a 1 KiB and a 4 KiB payload with
// the frame's headers and ICRC as the transport checks them.
#define VERBSIM_CRC_LENGTHS Arg(64)->Arg(1082)->Arg(4154)
BENCHMARK(BM_Sliced)->VERBSIM_CRC_LENGTHS;
BENCHMARK(BM_Folded)->VERBSIM_CRC_LENGTHS;
BENCHMARK(BM_WideFolded)->Arg(1082)->Arg(4154);
BENCHMARK(BM_Crc32Update)->VERBSIM_CRC_LENGTHS;

}  // namespace
}  // namespace verbsim::sim

BENCHMARK_MAIN();
