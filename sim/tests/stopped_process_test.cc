// A process of an RC connection over the UDP transport that does not run
// for a while (SIGSTOP, then SIGCONT), as a descheduled process on a loaded
// machine does not: its peer's ACK timer expires many times meanwhile, and
// none of those expiries counts against retry_cnt (docs/udp-transport.md,
// "Time and progress"). A process killed while stopped still ends its
// peer's WRs in RETRY_EXC_ERR.
//
// The test process is the controller: it forks the requester and the
// responder, relays their connection data, and stops, continues and kills
// them. Each child checks what it sees and exits 0 when it saw no failure.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "core/types.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "sim/peer_liveness.h"
#include "sim/tests/two_process.h"

namespace verbsim::sim {
namespace {

enum : uint32_t { kReady = 1, kGo = 2, kPosted = 3, kStopped = 4, kDone = 5 };

// The ACK timeout exponent of both sides: 4.096 us * 2^10 = 4 ms, so that
// retry_cnt (7) expiries take about 33 ms: every stop below is far longer.
constexpr uint8_t kTimeout = 10;
constexpr absl::Duration kAckTimeout = absl::Nanoseconds(4096 << kTimeout);

struct Child {
  pid_t pid = -1;
  Channel ch;
};

// Forks `fn` with a pipe each way; the child exits 0 when it saw no
// failure, and is killed by its own watchdog after 60 s.
Child Spawn(int base, const std::function<void(int, Channel&)>& fn) {
  int to_child[2], to_parent[2];
  Child c;
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return c;
  }
  c.pid = fork();
  if (c.pid == 0) {
    alarm(60);
    close(to_child[1]);
    close(to_parent[0]);
    Channel ch{to_child[0], to_parent[1]};
    fn(base, ch);
    std::fflush(stdout);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  close(to_child[0]);
  close(to_parent[1]);
  c.ch = Channel{to_parent[0], to_child[1]};
  EXPECT_GT(c.pid, 0) << "fork: " << std::strerror(errno);
  return c;
}

// Waits up to 60 s for the child to end (killing it then); its wait status.
int Reap(Child& c) {
  if (c.pid <= 0) return -1;
  int status = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  pid_t r = 0;
  while ((r = waitpid(c.pid, &status, WNOHANG)) == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (r == 0) {
    kill(c.pid, SIGCONT);
    kill(c.pid, SIGKILL);
    waitpid(c.pid, &status, 0);
    ADD_FAILURE() << "child " << c.pid << " hung and was killed";
  }
  close(c.ch.rd);
  close(c.ch.wr);
  c.pid = -1;
  return status;
}

// SIGSTOP, and waits until every thread of the child has stopped: the
// signal stops the threads one after another, and one that is still running
// may receive and answer meanwhile.
bool Stop(const Child& c) {
  if (kill(c.pid, SIGSTOP) != 0) return false;
  int status = 0;
  return waitpid(c.pid, &status, WUNTRACED) == c.pid && WIFSTOPPED(status);
}

bool ExitedZero(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The children's side of the connection set-up: node `me`, Info to the
// controller, the peer's back, connected, kReady.
bool ConnectSide(int base, int me, Channel& ch, Side* s, Info* peer) {
  if (!MakeSide(base, me, QpType::kRc, s, kTimeout).ok()) return false;
  if (!ch.Write(&s->info, sizeof(s->info)) || !ch.Read(peer, sizeof(*peer))) {
    return false;
  }
  return Connect(*s, *peer).ok() && ch.Token(kReady);
}

// The controller relays each child's Info to the other and waits until
// both are connected.
void Relay(Child& a, Child& b) {
  Info ia, ib;
  ASSERT_TRUE(a.ch.Read(&ia, sizeof(ia)) && b.ch.Read(&ib, sizeof(ib)));
  ASSERT_TRUE(a.ch.Write(&ib, sizeof(ib)) && b.ch.Write(&ia, sizeof(ia)));
  ASSERT_TRUE(a.ch.Expect(kReady) && b.ch.Expect(kReady));
}

QpCounters Counters(Side& s) {
  QpCounters c;
  EXPECT_TRUE(GetSimQpStats(s.ep->qp(), &c));
  std::printf("requester: %llu ACK timeouts counted, %llu held, %llu NAKs, "
              "%llu retransmissions\n",
              static_cast<unsigned long long>(c.timeouts),
              static_cast<unsigned long long>(c.timeouts_held),
              static_cast<unsigned long long>(c.naks_received),
              static_cast<unsigned long long>(c.retransmissions));
  return c;
}

constexpr size_t kWrite = 16 * 1024;  // 16 packets at MTU 1024

// The responder stops mid-transfer for 75 ACK timeouts (retry_cnt allows
// 8): the requester's WRs all complete SUCCESS once it runs again, and the
// data is all there.
TEST(StoppedProcess, ResponderStoppedForManyAckTimeouts) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  Child requester = Spawn(base, [](int base, Channel& ch) {
    Side s;
    Info peer;
    ASSERT_TRUE(ConnectSide(base, 0, ch, &s, &peer));
    ASSERT_TRUE(ch.Expect(kGo));  // the responder is connected too
    Fill(s.buf.data(), s.buf.size(), 5);
    constexpr int kBefore = 40, kAfter = 8;
    auto post = [&](int i) {
      const size_t off = (i % 4) * kWrite;
      ASSERT_TRUE(s.ep->PostWrite(i, s.buf.data() + off, kWrite, s.mr.get(),
                                  kSendSignaled, peer.addr + off, peer.rkey)
                      .ok());
    };
    for (int i = 0; i < kBefore; ++i) post(i);
    auto first = s.ep->GetSendComp(kComp);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->status, WcStatus::kSuccess);
    ASSERT_TRUE(ch.Token(kPosted));
    // These go out while the responder is stopped: nothing acknowledges
    // them until it runs again.
    ASSERT_TRUE(ch.Expect(kStopped));
    for (int i = kBefore; i < kBefore + kAfter; ++i) post(i);
    for (int i = 1; i < kBefore + kAfter; ++i) {
      auto wc = s.ep->GetSendComp(kComp);
      ASSERT_TRUE(wc.ok()) << "completion " << i << ": " << wc.status();
      EXPECT_EQ(wc->status, WcStatus::kSuccess) << "completion " << i;
      EXPECT_EQ(wc->wr_id, static_cast<uint64_t>(i));
    }
    EXPECT_EQ(s.ep->qp()->state(), QpState::kRts);
    const QpCounters c = Counters(s);
    EXPECT_GE(c.timeouts_held, 1u) << "the timer never expired during the stop";
    EXPECT_EQ(c.naks_received, 0u) << "a packet was lost";
    ASSERT_TRUE(ch.Token(kDone));
  });
  Child responder = Spawn(base, [](int base, Channel& ch) {
    Side s;
    Info peer;
    ASSERT_TRUE(ConnectSide(base, 1, ch, &s, &peer));
    ASSERT_TRUE(ch.Expect(kDone));
    // This process's progress thread placed the data, under the fabric's
    // lock; a call into the fabric orders those writes before the reads
    // below for ThreadSanitizer, which cannot see the order that the ACKs
    // and the channel give across processes.
    EXPECT_EQ(s.ep->qp()->state(), QpState::kRts);
    std::vector<uint8_t> want(s.buf.size());
    Fill(want.data(), want.size(), 5);
    EXPECT_EQ(std::memcmp(s.buf.data(), want.data(), want.size()), 0)
        << "the written data is not all there";
  });
  Relay(requester, responder);
  ASSERT_TRUE(requester.ch.Token(kGo));
  ASSERT_TRUE(requester.ch.Expect(kPosted));
  ASSERT_TRUE(Stop(responder));
  ASSERT_TRUE(requester.ch.Token(kStopped));
  absl::SleepFor(75 * kAckTimeout);
  ASSERT_EQ(kill(responder.pid, SIGCONT), 0);
  EXPECT_TRUE(requester.ch.Expect(kDone));
  EXPECT_TRUE(responder.ch.Token(kDone));
  EXPECT_TRUE(ExitedZero(Reap(requester))) << "see the requester's output";
  EXPECT_TRUE(ExitedZero(Reap(responder))) << "see the responder's output";
}

constexpr int kSends = 16;
constexpr size_t kSend = 1024;

// The requester stops while its ACKs arrive: the responder is stopped when
// the sends go out (the requester's timer expires and is held), then the
// requester is stopped and the responder continued (it receives the sends
// and its ACKs wait in the stopped requester's socket, long past the
// deadline). When the requester runs again it takes those ACKs before its
// overdue timer: not one expiry counts.
TEST(StoppedProcess, RequesterStoppedWhileItsAcksArrive) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  Child requester = Spawn(base, [](int base, Channel& ch) {
    Side s;
    Info peer;
    ASSERT_TRUE(ConnectSide(base, 0, ch, &s, &peer));
    ASSERT_TRUE(ch.Expect(kGo));
    for (int i = 0; i < kSends; ++i) {
      uint8_t* at = s.buf.data() + i * kSend;
      Fill(at, kSend, i);
      ASSERT_TRUE(s.ep->PostSend(i, at, kSend, s.mr.get(), kSendSignaled).ok());
    }
    ASSERT_TRUE(ch.Token(kPosted));
    for (int i = 0; i < kSends; ++i) {
      auto wc = s.ep->GetSendComp(kComp);
      ASSERT_TRUE(wc.ok()) << "completion " << i << ": " << wc.status();
      EXPECT_EQ(wc->status, WcStatus::kSuccess) << "completion " << i;
    }
    const QpCounters c = Counters(s);
    EXPECT_GE(c.timeouts_held, 1u) << "the timer never expired while the "
                                      "responder was stopped";
    EXPECT_EQ(c.timeouts, 0u) << "an expiry counted though its ACK was there";
    EXPECT_EQ(c.retransmissions, 0u);
  });
  Child responder = Spawn(base, [](int base, Channel& ch) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 1, QpType::kRc, &s, kTimeout).ok());
    for (int i = 0; i < kSends; ++i) {
      ASSERT_TRUE(
          s.ep->PostRecv(i, s.buf.data() + i * kSend, kSend, s.mr.get()).ok());
    }
    Info peer;
    ASSERT_TRUE(ch.Write(&s.info, sizeof(s.info)) &&
                ch.Read(&peer, sizeof(peer)));
    ASSERT_TRUE(Connect(s, peer).ok() && ch.Token(kReady));
    std::vector<uint8_t> want(kSend);
    for (int i = 0; i < kSends; ++i) {
      auto wc = s.ep->GetRecvComp(kComp);
      ASSERT_TRUE(wc.ok()) << "receive " << i << ": " << wc.status();
      EXPECT_EQ(wc->status, WcStatus::kSuccess);
      EXPECT_EQ(wc->wr_id, static_cast<uint64_t>(i));
      Fill(want.data(), kSend, i);
      EXPECT_EQ(std::memcmp(s.buf.data() + i * kSend, want.data(), kSend), 0);
    }
  });
  Relay(requester, responder);
  ASSERT_TRUE(Stop(responder));
  ASSERT_TRUE(requester.ch.Token(kGo));
  ASSERT_TRUE(requester.ch.Expect(kPosted));
  absl::SleepFor(5 * kAckTimeout);  // expiries, held: the responder is away
  ASSERT_TRUE(Stop(requester));
  ASSERT_EQ(kill(responder.pid, SIGCONT), 0);
  absl::SleepFor(25 * kAckTimeout);  // the ACKs wait in the requester's socket
  ASSERT_EQ(kill(requester.pid, SIGCONT), 0);
  EXPECT_TRUE(ExitedZero(Reap(requester))) << "see the requester's output";
  EXPECT_TRUE(ExitedZero(Reap(responder))) << "see the responder's output";
}

// A responder killed while stopped: the held timer counts again once the
// process is gone, and the requester's WR ends in RETRY_EXC_ERR in about
// retry_cnt + 1 timeouts, not never.
TEST(StoppedProcess, ResponderKilledWhileStopped) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  Child requester = Spawn(base, [](int base, Channel& ch) {
    Side s;
    Info peer;
    ASSERT_TRUE(ConnectSide(base, 0, ch, &s, &peer));
    ASSERT_TRUE(ch.Expect(kGo));
    ASSERT_TRUE(s.ep->PostWrite(1, s.buf.data(), kWrite, s.mr.get(),
                                kSendSignaled, peer.addr, peer.rkey)
                    .ok());
    ASSERT_TRUE(ch.Token(kPosted));
    ASSERT_TRUE(ch.Expect(kDone));  // the responder is dead now
    const absl::Time killed_at = absl::Now();
    auto wc = s.ep->GetSendComp(kComp);
    ASSERT_TRUE(wc.ok()) << wc.status();
    EXPECT_EQ(wc->status, WcStatus::kRetryExcErr);
    EXPECT_LT(absl::Now() - killed_at, absl::Seconds(5));
    EXPECT_EQ(s.ep->qp()->state(), QpState::kErr);
    const QpCounters c = Counters(s);
    EXPECT_GE(c.timeouts_held, 1u) << "the timer never expired while stopped";
    EXPECT_EQ(c.timeouts, 8u) << "1 + retry_cnt expiries after the death";
  });
  Child responder = Spawn(base, [](int base, Channel& ch) {
    Side s;
    Info peer;
    ASSERT_TRUE(ConnectSide(base, 1, ch, &s, &peer));
    for (;;) pause();  // until killed
  });
  Relay(requester, responder);
  ASSERT_TRUE(Stop(responder));
  ASSERT_TRUE(requester.ch.Token(kGo));
  ASSERT_TRUE(requester.ch.Expect(kPosted));
  absl::SleepFor(20 * kAckTimeout);  // held expiries
  ASSERT_EQ(kill(responder.pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(responder.pid, &status, 0), responder.pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  responder.pid = -1;
  close(responder.ch.rd);
  close(responder.ch.wr);
  ASSERT_TRUE(requester.ch.Token(kDone));
  EXPECT_TRUE(ExitedZero(Reap(requester))) << "see the requester's output";
}

// Puts a file that is not a liveness table (another layout) under a name of
// this test's own and makes that the table's name for the fabrics of this
// process and the children it forks; undoes both when destroyed.
class BadTable {
 public:
  BadTable()
      : name_(absl::StrCat("/verbsim-liveness-bad-",
                           absl::Hex(uint64_t{std::random_device()()} << 32 ^
                                     std::random_device()()))) {
    const int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0) << name_ << ": " << std::strerror(errno);
    const char junk[64] = "not a liveness table";
    EXPECT_EQ(write(fd, junk, sizeof(junk)), static_cast<ssize_t>(sizeof(junk)));
    close(fd);
    LivenessTable::SetDefaultNameForTesting(name_);
  }
  ~BadTable() {
    LivenessTable::SetDefaultNameForTesting("");
    shm_unlink(name_.c_str());
  }
  bool Exists() const {
    return access(absl::StrCat("/dev/shm", name_).c_str(), F_OK) == 0;
  }

 private:
  std::string name_;
};

// Without a table (here: a file of another layout in its place) the
// transport starts all the same, says so in one line, and leaves the file.
TEST(NoLivenessTable, TheTransportStartsAndSaysSo) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  BadTable bad;
  ::testing::internal::CaptureStderr();
  auto provider =
      OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=0"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(provider.ok()) << provider.status();
  EXPECT_TRUE(absl::StrContains(err, "no liveness table")) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  provider->reset();
  EXPECT_TRUE(bad.Exists()) << "a file that is not a table was removed";
}

// ... and every expiry counts, as before: a stopped responder is a silent
// one, and the requester's WR ends in RETRY_EXC_ERR.
TEST(NoLivenessTable, AStoppedPeerCountsAsBefore) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  BadTable bad;
  Child requester = Spawn(base, [](int base, Channel& ch) {
    Side s;
    Info peer;
    ASSERT_TRUE(ConnectSide(base, 0, ch, &s, &peer));
    ASSERT_TRUE(ch.Expect(kGo));
    ASSERT_TRUE(s.ep->PostWrite(1, s.buf.data(), kWrite, s.mr.get(),
                                kSendSignaled, peer.addr, peer.rkey)
                    .ok());
    auto wc = s.ep->GetSendComp(kComp);
    ASSERT_TRUE(wc.ok()) << wc.status();
    EXPECT_EQ(wc->status, WcStatus::kRetryExcErr);
    const QpCounters c = Counters(s);
    EXPECT_EQ(c.timeouts_held, 0u);
    EXPECT_EQ(c.timeouts, 8u);
    ASSERT_TRUE(ch.Token(kDone));
  });
  Child responder = Spawn(base, [](int base, Channel& ch) {
    Side s;
    Info peer;
    ASSERT_TRUE(ConnectSide(base, 1, ch, &s, &peer));
    ASSERT_TRUE(ch.Expect(kDone));
  });
  Relay(requester, responder);
  ASSERT_TRUE(Stop(responder));
  ASSERT_TRUE(requester.ch.Token(kGo));
  EXPECT_TRUE(requester.ch.Expect(kDone));
  ASSERT_EQ(kill(responder.pid, SIGCONT), 0);
  EXPECT_TRUE(responder.ch.Token(kDone));
  EXPECT_TRUE(ExitedZero(Reap(requester))) << "see the requester's output";
  EXPECT_TRUE(ExitedZero(Reap(responder))) << "see the responder's output";
}

}  // namespace
}  // namespace verbsim::sim
