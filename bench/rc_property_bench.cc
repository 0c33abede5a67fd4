// The larger variant of the RC property test: 4,000,000 mixed
// messages (send, write, read, fetch-and-add) over a fabric that drops 10% of
// the packets and duplicates and reorders 5% each, every property checked as
// in //sim/tests:rc_property_test. Reports messages per second of wall time.
#include <string>

#include "benchmark/benchmark.h"
#include "sim/testing/rc_property.h"

namespace verbsim::bench {
namespace {

void BM_RcProperty(benchmark::State& state) {
  sim::testing::PropertyOptions options;
  options.messages = static_cast<uint64_t>(state.range(0));
  uint64_t seed = 1;
  for (auto _ : state) {
    options.seed = seed++;
    sim::testing::PropertyResult result;
    absl::Status s = sim::testing::RunRcProperty(options, &result);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
    state.counters["packets_per_message"] =
        static_cast<double>(result.packets) / result.messages;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          state.range(0));
}
BENCHMARK(BM_RcProperty)
    ->Name("rc_property/lossy_mixed")
    ->ArgName("messages")
    ->Arg(4000000)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace verbsim::bench

BENCHMARK_MAIN();
