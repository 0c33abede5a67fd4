// Threads: 1, 2 and 4 threads, each posting 8-byte RDMA writes on a
// connected RC pair of its own, every pair on one provider (one sim
// fabric). items_per_second is the messages of all threads per second of
// wall time; docs/performance.md compares it with one thread's.
//
//   batch:32/signal_every:32  a span of 32 writes per PostSend, the 32nd
//                             signaled (as msg_rate's row of the same name)
//   batch:1/signal_every:1    one write per PostSend, each one polled
//
// The threads of one run share a provider opened by the first of them and
// closed by the last; each run starts with a new one.
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
}

}  // namespace
}  // namespace verbsim::bench

int main(int argc, char** argv) {
  return verbsim::bench::RunBenchmarks(argc, argv, verbsim::bench::RegisterAll);
}
