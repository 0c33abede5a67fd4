// The sim's progress model: nothing moves until someone polls, waits or runs
// the fabric; the same calls give the same virtual time and packets; several
// threads may post and poll.
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/endpoint.h"
#include "core/names.h"
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

// Two threads, each on a QP pair of its own on one fabric, one of them
// calling in without a pause: the fabric lock goes by turns (a thread
// keeps it for a run of calls while another waits), and the waiting thread
// still gets its turns: both move on, neither loses or mixes up data.
TEST(SimProgress, AThreadThatNeverPausesLeavesTurnsToAnother) {
  auto provider = OpenProvider("sim");
  ASSERT_TRUE(provider.ok()) << provider.status();
  auto busy_pair = CreateConnectedPair(**provider);
  auto main_pair = CreateConnectedPair(**provider);
  ASSERT_TRUE(busy_pair.ok() && main_pair.ok());
  std::vector<uint64_t> busy_src(1), busy_dst(1), src(1), dst(1);
  auto busy_smr = busy_pair->client->RegMsgs(busy_src.data(), 8);
  auto busy_dmr = busy_pair->server->RegWrite(busy_dst.data(), 8);
  auto smr = main_pair->client->RegMsgs(src.data(), 8);
  auto dmr = main_pair->server->RegWrite(dst.data(), 8);
  ASSERT_TRUE(busy_smr.ok() && busy_dmr.ok() && smr.ok() && dmr.ok());

  // Writes `value` through `pair` and polls for its completion without
  // ever blocking, as a busy program does.
  auto write = [](EndpointPair& pair, uint64_t* from, Mr* mr, uint64_t* to,
                  uint32_t rkey, uint64_t value) -> absl::Status {
    *from = value;
    absl::Status s =
        pair.client->PostWrite(value, from, 8, mr, kSendSignaled,
                               reinterpret_cast<uint64_t>(to), rkey);
    if (!s.ok()) return s;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    WorkCompletion wc;
    while (true) {
      absl::StatusOr<int> n = pair.client->send_cq()->Poll({&wc, 1});
      if (!n.ok()) return n.status();
      if (*n == 1) break;
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("write ", value, " never completed"));
      }
    }
    if (wc.status != WcStatus::kSuccess || wc.wr_id != value) {
      return absl::InternalError(absl::StrCat(
          "write ", value, " completed as wr_id ", wc.wr_id, " with ",
          WcStatusName(wc.status)));
    }
    if (*to != value) {
      return absl::InternalError(
          absl::StrCat("write ", value, " left ", *to, " in its target"));
    }
    return absl::OkStatus();
  };

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> busy_done{0};
  absl::Status busy_status;
  std::thread busy([&] {
    for (uint64_t v = 1; !stop.load(); ++v) {
      busy_status = write(*busy_pair, busy_src.data(), busy_smr->get(),
                          busy_dst.data(), (*busy_dmr)->rkey(), v);
      if (!busy_status.ok()) return;
      busy_done.store(v);
    }
  });
  while (busy_done.load() < 100 && busy_status.ok()) std::this_thread::yield();

  // Enough writes to span many turns of the busy thread, and on until it
  // has had one: on a loaded machine the scheduler may not run the busy
  // thread at all during the first few milliseconds. A lock that never
  // gives it a turn keeps it at `busy_before` to the deadline.
  constexpr uint64_t kWrites = 5000;
  const uint64_t busy_before = busy_done.load();
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  absl::Status status;
  for (uint64_t v = 1; status.ok() &&
                       (v <= kWrites || (busy_done.load() == busy_before &&
                                         absl::Now() < deadline));
       ++v) {
    status = write(*main_pair, src.data(), smr->get(), dst.data(),
                   (*dmr)->rkey(), v);
  }
  const uint64_t busy_after = busy_done.load();
  stop.store(true);
  busy.join();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_TRUE(busy_status.ok()) << busy_status;
  EXPECT_GT(busy_after, busy_before)
      << "the busy thread never had a turn while this one wrote";
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
  // join returns once the thread's ID is cleared, which the kernel does
  // while the thread still runs its last steps of exit: it may be seen
  // running for a moment after.
  bool gone = false;
  for (int i = 0; i < 5000 && !gone; ++i) {
    gone = !ThreadIsRunnable(tid);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(gone) << "thread " << tid << " still running 5 s after it exited";
  EXPECT_FALSE(ThreadIsRunnable(0));
  EXPECT_FALSE(ThreadIsRunnable(-1));
}

}  // namespace
}  // namespace verbsim::sim
