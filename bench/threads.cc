// Threads: 1, 2 and 4 threads, each posting 8-byte RDMA writes on a
// connected RC pair of its own, every pair on one provider (one sim
// fabric). items_per_second is the messages of all threads per second of
// wall time; docs/performance.md compares it with one thread's.
//
//   batch:32/signal_every:32  a span of 32 writes per PostSend, the 32nd
//                             signaled (as msg_rate's row of the same name)
//   batch:1/signal_every:1    one write per PostSend, each one polled
//
// Each of the two also runs as one thread pinned to each CPU the process
// may use (`.../cpu:N`). The cores of a virtual machine need not be equally
// fast, and several threads under the fabric's one lock run at about the
// mean of their cores' single-thread rates, while an unpinned single thread
// runs at the rate of whichever core it lands on; the pinned runs give
// tools/bench.sh both figures (docs/performance.md, "Threads: cores of
// unequal speed").
//
// The threads of one run share a provider opened by the first of them and
// closed by the last; each run starts with a new one.
#include <pthread.h>
#include <sched.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"
#include "benchmark/benchmark.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "core/types.h"

namespace verbsim::bench {
namespace {

constexpr uint32_t kMsgBytes = 8;

// The provider of the threads of one run.
class SharedProvider {
 public:
  // The run's provider, opened by the first thread to ask; null with the
  // reason in *error.
  std::shared_ptr<Provider> Join(std::string* error) {
    std::lock_guard<std::mutex> lock(mu_);
    if (users_++ == 0) {
      auto opened = OpenProvider(BenchProviderSpec());
      if (opened.ok()) {
        provider_ = std::shared_ptr<Provider>(std::move(*opened));
      } else {
        status_ = opened.status();
      }
    }
    if (provider_ == nullptr) *error = status_.ToString();
    return provider_;
  }
  // The last thread of the run closes it.
  void Leave() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--users_ == 0) {
      provider_.reset();
      status_ = absl::OkStatus();
    }
  }

 private:
  std::mutex mu_;
  int users_ = 0;
  std::shared_ptr<Provider> provider_;
  absl::Status status_;
};

SharedProvider& Shared() {
  static SharedProvider* shared = new SharedProvider;
  return *shared;
}

void RunWrites(benchmark::State& state, Provider& provider, int batch,
               int signal_every) {
  EndpointAttr attr;
  attr.cap.max_send_wr = 128;
  attr.cq_depth = 512;
  auto pair = CreateConnectedPair(provider, attr);
  if (!pair.ok()) {
    Fail(state, "connecting a pair", pair.status());
    return;
  }
  Buffer local(4096), remote(4096);
  std::unique_ptr<Mr> local_mr = Register(state, *pair->client, local);
  if (local_mr == nullptr) return;
  std::unique_ptr<Mr> remote_mr = Register(state, *pair->server, remote);
  if (remote_mr == nullptr) return;
  const Sge sge{local.addr(), kMsgBytes, local_mr->lkey()};
  std::vector<SendWr> wrs(batch);
  for (int i = 0; i < batch; ++i) {
    wrs[i].wr_id = static_cast<uint64_t>(i);
    wrs[i].sg_list = {&sge, 1};
    wrs[i].opcode = WrOpcode::kRdmaWrite;
    wrs[i].rdma.remote_addr = remote.addr();
    wrs[i].rdma.rkey = remote_mr->rkey();
  }
  uint64_t posted = 0;
  for (auto _ : state) {
    int signaled = 0;
    for (SendWr& wr : wrs) {
      const bool sig = ++posted % signal_every == 0;
      wr.send_flags = sig ? kSendSignaled : 0;
      signaled += sig ? 1 : 0;
    }
    absl::Status s = pair->client->qp()->PostSend(wrs);
    if (!s.ok()) {
      Fail(state, "ibv_post_send", s);
      break;
    }
    if (signaled > 0 && !PollN(state, pair->client->send_cq(), signaled)) {
      break;
    }
  }
  if (state.error_occurred()) return;
  state.SetItemsProcessed(state.iterations() * batch);
}

void BM_Threads(benchmark::State& state, int batch, int signal_every) {
  std::string error;
  std::shared_ptr<Provider> provider = Shared().Join(&error);
  if (provider == nullptr) {
    state.SkipWithError(absl::StrCat("opening the provider: ", error).c_str());
  } else {
    RunWrites(state, *provider, batch, signal_every);
  }
  provider.reset();
  Shared().Leave();
}

// Pins the calling thread to one CPU for its lifetime, then gives it back
// the CPUs it had.
class PinnedToCpu {
 public:
  explicit PinnedToCpu(int cpu) {
    if (pthread_getaffinity_np(pthread_self(), sizeof(old_), &old_) != 0) {
      return;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    error_ = pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    pinned_ = error_ == 0;
  }
  ~PinnedToCpu() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof(old_), &old_);
  }
  PinnedToCpu(const PinnedToCpu&) = delete;
  PinnedToCpu& operator=(const PinnedToCpu&) = delete;

  bool pinned() const { return pinned_; }
  int error() const { return error_; }

 private:
  cpu_set_t old_;
  bool pinned_ = false;
  int error_ = -1;
};

void BM_OneThreadOnCpu(benchmark::State& state, int batch, int signal_every,
                       int cpu) {
  PinnedToCpu pin(cpu);
  if (!pin.pinned()) {
    state.SkipWithError(
        absl::StrCat("pinning to CPU ", cpu, ": error ", pin.error()).c_str());
    return;
  }
  BM_Threads(state, batch, signal_every);
}

// The CPUs this process may run on, in order.
std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

void RegisterAll() {
  for (int batch : {32, 1}) {
    const int every = batch;
    const std::string name = absl::StrCat(
        "threads/rdma_write/batch:", batch, "/signal_every:", every);
    Configure(benchmark::RegisterBenchmark(name.c_str(), BM_Threads, batch,
                                           every))
        ->Unit(benchmark::kNanosecond)
        ->Threads(1)
        ->Threads(2)
        ->Threads(4);
  }
  const std::vector<int> cpus = AllowedCpus();
  for (int batch : {32, 1}) {
    const int every = batch;
    for (int cpu : cpus) {
      const std::string name =
          absl::StrCat("threads/rdma_write/batch:", batch, "/signal_every:",
                       every, "/cpu:", cpu);
      Configure(benchmark::RegisterBenchmark(name.c_str(), BM_OneThreadOnCpu,
                                             batch, every, cpu))
          ->Unit(benchmark::kNanosecond);
    }
  }
}

}  // namespace
}  // namespace verbsim::bench

int main(int argc, char** argv) {
  return verbsim::bench::RunBenchmarks(argc, argv, verbsim::bench::RegisterAll);
}
