// Shared pieces of the verbsim benchmarks: a connected RC pair on
// the provider named by VERBSIM_PROVIDER ("sim" by default), buffers, and a
// poll loop that checks every completion.
//
// Every failure is reported through benchmark::State::SkipWithError with the
// reason, so a provider that cannot open or has no device shows up as a
// skipped benchmark with a message instead of a crash.
#ifndef VERBSIM_BENCH_BENCH_UTIL_H_
#define VERBSIM_BENCH_BENCH_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "benchmark/benchmark.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "core/types.h"
#include "core/verbs.h"

namespace verbsim::bench {

// Every access flag a benchmark target needs (write, read, atomics, recv).
inline constexpr uint32_t kAllAccess = kAccessLocalWrite | kAccessRemoteWrite |
                                       kAccessRemoteRead | kAccessRemoteAtomic;

// Page-aligned, zero-filled memory that stays put (MRs point into it).
class Buffer {
 public:
  explicit Buffer(size_t size);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  uint64_t addr() const { return reinterpret_cast<uint64_t>(data_); }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A provider and a connected RC pair (client -> server).
class PairFixture {
 public:
  // Opens the provider of VERBSIM_PROVIDER and connects a pair with `attr`.
  // With `port_mtu`, the path MTU is the active MTU of the first device's
  // port (as ib_write_bw chooses it) instead of attr.path_mtu.
  // On failure calls state.SkipWithError with the reason and returns false.
  bool Open(benchmark::State& state, const EndpointAttr& attr,
            bool port_mtu = false);

  const std::string& spec() const { return spec_; }
  Provider& provider() { return *provider_; }
  Endpoint& client() { return *pair_.client; }
  Endpoint& server() { return *pair_.server; }
  // The path MTU the pair was connected with.
  Mtu path_mtu() const { return path_mtu_; }
  // Virtual time of the sim fabric in ns, or -1 on another provider.
  int64_t VirtualNowNs();

 private:
  std::string spec_;
  std::unique_ptr<Provider> provider_;
  EndpointPair pair_;
  Mtu path_mtu_ = Mtu::k1024;
};

// Registers [buf, buf + size) on `ep` with kAllAccess; SkipWithError and null
// on failure.
std::unique_ptr<Mr> Register(benchmark::State& state, Endpoint& ep,
                             const Buffer& buf);

// Polls `cq` until `want` completions arrived (busy polling; the sim drives
// its fabric inside Poll). Every completion must be SUCCESS. On a failed
// call, an error completion or 10 s of wall time without progress, calls
// SkipWithError and returns false.
bool PollN(benchmark::State& state, Cq* cq, int want);

// SkipWithError with "<what>: <status>". Always returns false.
bool Fail(benchmark::State& state, absl::string_view what,
          const absl::Status& status);

// The spec the benchmarks use: VERBSIM_PROVIDER, or "sim".
std::string BenchProviderSpec();

// Registration options every benchmark shares: wall time, and a fixed
// iteration count when VERBSIM_BENCH_ITERATIONS is set (for a deterministic
// profile under valgrind --tool=callgrind, where time-based iteration counts
// vary from run to run).
benchmark::internal::Benchmark* Configure(benchmark::internal::Benchmark* b);

// The main() of a benchmark binary: Google Benchmark's flags, then
// `register_all` registers the benchmarks (through Configure), then they
// run. Returns the process's exit status.
int RunBenchmarks(int argc, char** argv, void (*register_all)());

}  // namespace verbsim::bench

#endif  // VERBSIM_BENCH_BENCH_UTIL_H_
