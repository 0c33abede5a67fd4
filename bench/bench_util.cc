#include "bench/bench_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/environment.h"
#include "core/names.h"
#include "sim/sim_provider.h"

namespace verbsim::bench {

Buffer::Buffer(size_t size) : size_(size) {
  const size_t rounded = std::max<size_t>(4096, (size + 4095) / 4096 * 4096);
  void* p = nullptr;
  if (posix_memalign(&p, 4096, rounded) != 0) {
    std::fprintf(stderr, "out of memory for a %zu-byte buffer\n", size);
    std::abort();
  }
  std::memset(p, 0, rounded);  // touch every page now, not inside a timing
  data_ = static_cast<uint8_t*>(p);
}

Buffer::~Buffer() { std::free(data_); }

std::string BenchProviderSpec() { return ProviderSpecFromEnv(); }

benchmark::internal::Benchmark* Configure(benchmark::internal::Benchmark* b) {
  b->UseRealTime();
  const env::Number<int64_t> iterations =
      env::GetNumber<int64_t>(env::kBenchIterations, 1, INT64_MAX);
  if (!iterations.ok()) {
    std::fprintf(stderr, "%s\n", iterations.error.c_str());
    std::exit(2);
  }
  if (iterations.value) b->Iterations(*iterations.value);
  return b;
}

int RunBenchmarks(int argc, char** argv, void (*register_all)()) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

bool Fail(benchmark::State& state, absl::string_view what,
          const absl::Status& status) {
  const std::string msg = absl::StrCat(what, ": ", status.ToString());
  state.SkipWithError(msg.c_str());
  return false;
}

bool PairFixture::Open(benchmark::State& state, const EndpointAttr& attr_in,
                       bool port_mtu) {
  EndpointAttr attr = attr_in;
  spec_ = BenchProviderSpec();
  auto provider = OpenProvider(spec_);
  if (!provider.ok()) {
    return Fail(state,
                absl::StrCat("provider '", spec_, "' cannot be opened (known: ",
                             absl::StrJoin(RegisteredProviders(), ", "), ")"),
                provider.status());
  }
  provider_ = *std::move(provider);
  auto devices = provider_->ListDevices();
  if (!devices.ok()) {
    return Fail(state, absl::StrCat("provider '", spec_, "' lists no devices"),
                devices.status());
  }
  if (devices->empty()) {
    const std::string msg =
        absl::StrCat("provider '", spec_, "' has no device");
    state.SkipWithError(msg.c_str());
    return false;
  }
  if (port_mtu) {
    auto context = provider_->Open(devices->front());
    if (!context.ok()) {
      return Fail(state, absl::StrCat("opening ", devices->front()),
                  context.status());
    }
    auto port = (*context)->QueryPort(1);
    if (!port.ok()) return Fail(state, "ibv_query_port", port.status());
    attr.path_mtu = port->active_mtu;
  }
  path_mtu_ = attr.path_mtu;
  auto pair = CreateConnectedPair(*provider_, attr);
  if (!pair.ok()) {
    return Fail(state,
                absl::StrCat("connecting a pair on '", spec_, "' failed"),
                pair.status());
  }
  pair_ = *std::move(pair);
  return true;
}

int64_t PairFixture::VirtualNowNs() {
  sim::SimProvider* sim = sim::AsSimProvider(provider_.get());
  if (sim == nullptr) return -1;
  return absl::ToInt64Nanoseconds(sim->fabric().Now());
}

std::unique_ptr<Mr> Register(benchmark::State& state, Endpoint& ep,
                             const Buffer& buf) {
  auto mr = ep.RegMr(buf.data(), buf.size(), kAllAccess);
  if (!mr.ok()) {
    Fail(state, "ibv_reg_mr", mr.status());
    return nullptr;
  }
  return *std::move(mr);
}

bool PollN(benchmark::State& state, Cq* cq, int want) {
  constexpr int kChunk = 64;
  // Not on the stack: constructing 64 WorkCompletions per call would cost
  // more than a poll of the sim.
  static thread_local WorkCompletion wcs[kChunk];
  int got = 0;
  uint64_t empty_polls = 0;
  absl::Time deadline = absl::InfiniteFuture();
  while (got < want) {
    const int ask = std::min(want - got, kChunk);
    absl::StatusOr<int> n = cq->Poll({wcs, static_cast<size_t>(ask)});
    if (!n.ok()) return Fail(state, "ibv_poll_cq", n.status());
    for (int i = 0; i < *n; ++i) {
      if (wcs[i].status != WcStatus::kSuccess) {
        const std::string msg =
            absl::StrCat("completion of wr_id ", wcs[i].wr_id, " has status ",
                         WcStatusName(wcs[i].status));
        state.SkipWithError(msg.c_str());
        return false;
      }
    }
    got += *n;
    if (*n > 0) {
      empty_polls = 0;
      deadline = absl::InfiniteFuture();
      continue;
    }
    // Reading the clock on every empty poll would distort a busy poll on
    // hardware; look every 1024 polls.
    if (++empty_polls % 1024 != 0) continue;
    const absl::Time now = absl::Now();
    if (deadline == absl::InfiniteFuture()) {
      deadline = now + absl::Seconds(10);
    } else if (now > deadline) {
      const std::string msg = absl::StrCat("no completion within 10 s (", got,
                                           " of ", want, " arrived)");
      state.SkipWithError(msg.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace verbsim::bench
