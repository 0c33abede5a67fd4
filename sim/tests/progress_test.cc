// The sim's progress model: nothing moves until someone polls, waits or runs
// the fabric; the same calls give the same virtual time and packets; several
// threads may post and poll.
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/endpoint.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/sim_provider.h"
#include "sim/thread_state.h"

namespace verbsim::sim {
namespace {

struct SimSetup {
  std::unique_ptr<Provider> provider;
  EndpointPair eps;
  SimProvider* sim = nullptr;
};

SimSetup MakeSetup(absl::string_view spec = "sim") {
  SimSetup s;
  auto provider = OpenProvider(spec);
  EXPECT_TRUE(provider.ok()) << provider.status();
  s.provider = *std::move(provider);
  s.sim = AsSimProvider(s.provider.get());
  auto eps = CreateConnectedPair(*s.provider);
  EXPECT_TRUE(eps.ok()) << eps.status();
  s.eps = *std::move(eps);
  return s;
}

TEST(SimProgress, NothingMovesUntilTheFabricRuns) {
  SimSetup s = MakeSetup();
  std::vector<char> src(3000, 'a'), dst(3000, 0);
  auto smr = s.eps.client->RegMsgs(src.data(), src.size());
  auto dmr = s.eps.server->RegWrite(dst.data(), dst.size());
  ASSERT_TRUE(smr.ok() && dmr.ok());
  const absl::Duration t0 = s.sim->fabric().Now();
  ASSERT_TRUE(s.eps.client
                  ->PostWrite(1, src.data(), src.size(), smr->get(),
                              kSendSignaled,
                              reinterpret_cast<uint64_t>(dst.data()),
                              (*dmr)->rkey())
                  .ok());
  EXPECT_EQ(dst[0], 0) << "data landed before anything drove the fabric";
  EXPECT_EQ(s.sim->fabric().Now(), t0);
  EXPECT_TRUE(s.sim->fabric().RunUntilIdle());
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.size()), 0);
  EXPECT_GT(s.sim->fabric().Now(), t0);
  WorkCompletion wc;
  auto n = s.eps.client->send_cq()->Poll({&wc, 1});
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 1);
  EXPECT_EQ(wc.status, WcStatus::kSuccess);
}

TEST(SimProgress, RunForAdvancesTheClockExactly) {
  SimSetup s = MakeSetup();
  const absl::Duration t0 = s.sim->fabric().Now();
  s.sim->fabric().RunFor(absl::Milliseconds(5));
  EXPECT_EQ(s.sim->fabric().Now() - t0, absl::Milliseconds(5));
}

// A fixed workload; returns (virtual time, packets sent).
std::pair<absl::Duration, uint64_t> RunWorkload() {
  SimSetup s = MakeSetup();
  std::vector<char> a(20000), b(20000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(i);
  const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite |
                          kAccessRemoteRead | kAccessRemoteAtomic;
  auto amr = s.eps.client->RegMr(a.data(), a.size(), access);
  auto bmr = s.eps.server->RegMr(b.data(), b.size(), access);
  EXPECT_TRUE(amr.ok() && bmr.ok());
  const uint64_t remote = reinterpret_cast<uint64_t>(b.data());
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(s.eps.server->PostRecv(i, b.data() + 10000, 5000, bmr->get())
                    .ok());
  }
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(s.eps.client
                    ->PostWrite(100 + i, a.data(), 1000 * (i + 1), amr->get(),
                                0, remote, (*bmr)->rkey())
                    .ok());
    EXPECT_TRUE(
        s.eps.client->PostSend(200 + i, a.data(), 300 * i, amr->get(), 0)
            .ok());
  }
  EXPECT_TRUE(s.eps.client
                  ->PostRead(300, a.data() + 15000, 4000, amr->get(),
                             kSendSignaled, remote, (*bmr)->rkey())
                  .ok());
  auto wc = s.eps.client->GetSendComp(absl::Seconds(1));
  EXPECT_TRUE(wc.ok() && wc->status == WcStatus::kSuccess);
  return {s.sim->fabric().Now(), s.sim->fabric().packets_sent()};
}

TEST(SimProgress, SameCallsSameVirtualTimeAndPackets) {
  auto first = RunWorkload();
  auto second = RunWorkload();
  EXPECT_EQ(first.first, second.first);
  EXPECT_EQ(first.second, second.second);
  EXPECT_GT(first.second, 40u);
}

TEST(SimProgress, PostAndPollFromSeveralThreads) {
  SimSetup s = MakeSetup();
  constexpr int kMessages = 500;
  std::vector<uint32_t> src(kMessages), dst(kMessages, 0);
  for (int i = 0; i < kMessages; ++i) src[i] = 1000 + i;
  auto smr = s.eps.client->RegMsgs(src.data(), src.size() * 4);
  auto dmr = s.eps.server->RegMsgs(dst.data(), dst.size() * 4);
  ASSERT_TRUE(smr.ok() && dmr.ok());

  // The receiver keeps a window of receives posted and collects messages.
  std::thread receiver([&] {
    int posted = 0, got = 0;
    while (got < kMessages) {
      while (posted < kMessages && posted - got < 32) {
        ASSERT_TRUE(s.eps.server
                        ->PostRecv(posted, &dst[posted], 4, dmr->get())
                        .ok());
        ++posted;
      }
      auto wc = s.eps.server->GetRecvComp(absl::Seconds(30));
      ASSERT_TRUE(wc.ok()) << wc.status();
      ASSERT_EQ(wc->status, WcStatus::kSuccess);
      ASSERT_EQ(wc->wr_id, static_cast<uint64_t>(got));
      ++got;
    }
  });
  // The sender keeps at most one send queue's worth of WRs unreaped: the
  // send queue frees a slot when a WR completes, so reaping less often would
  // overflow the CQ (which moves the QP to ERR, as on a device).
  int completed = 0;
  const int depth = static_cast<int>(s.eps.client->attr().cap.max_send_wr);
  for (int i = 0; i < kMessages; ++i) {
    if (i - completed >= depth) {
      auto wc = s.eps.client->GetSendComp(absl::Seconds(30));
      ASSERT_TRUE(wc.ok()) << wc.status();
      ASSERT_EQ(wc->status, WcStatus::kSuccess);
      ++completed;
    }
    ASSERT_TRUE(
        s.eps.client->PostSend(i, &src[i], 4, smr->get(), kSendSignaled).ok());
  }
  while (completed < kMessages) {
    auto wc = s.eps.client->GetSendComp(absl::Seconds(30));
    ASSERT_TRUE(wc.ok()) << wc.status();
    ASSERT_EQ(wc->status, WcStatus::kSuccess);
    ++completed;
  }
  receiver.join();
  EXPECT_EQ(src, dst);
}

// The helpers' test of an application thread (Fabric::HelperWait): the
// thread asking is running, so runnable; a thread blocked on a condition
// variable is asleep; an id that names no thread of the process is not
// runnable.
TEST(SimProgress, AThreadBlockedIsNotRunnableAndARunningOneIs) {
  const int me = CurrentThreadTid();
  ASSERT_GT(me, 0);
  EXPECT_EQ(CurrentThreadTid(), me);
  EXPECT_TRUE(ThreadIsRunnable(me));

  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  int waiter_tid = 0;
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mu);
    waiter_tid = CurrentThreadTid();
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  int tid = 0;
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return waiter_tid != 0; });
    tid = waiter_tid;
  }
  EXPECT_NE(tid, me);
  // It goes to sleep in the kernel soon after it released the lock.
  bool asleep = false;
  for (int i = 0; i < 5000 && !asleep; ++i) {
    asleep = !ThreadIsRunnable(tid);
    if (!asleep) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(asleep) << "thread " << tid << " never seen asleep";
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  waiter.join();
  EXPECT_FALSE(ThreadIsRunnable(tid)) << "a thread that has exited";
  EXPECT_FALSE(ThreadIsRunnable(0));
  EXPECT_FALSE(ThreadIsRunnable(-1));
}

}  // namespace
}  // namespace verbsim::sim
