// The liveness table of fabrics spread over processes (sim/peer_liveness.h):
// claims, beats and what a peer's slot says about its process while it
// runs, is stopped, is killed (a zombie not yet reaped included) or execs;
// the last user removes the file; a file that is not the user's own table is
// refused, not trusted.
#include "sim/peer_liveness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "gtest/gtest.h"

namespace verbsim::sim {
namespace {

using Peer = LivenessTable::Peer;

constexpr int kBase = 40000;  // the ports claimed: kBase, kBase + 1, ...

// A table name of this test run alone (/dev/shm is shared with runs in
// other PID namespaces, where the pid may be the same).
std::string TestName() {
  static const uint64_t run = std::random_device()() * 0x100000000ull ^
                              std::random_device()();
  static int n = 0;
  return absl::StrCat("/verbsim-liveness-test-", absl::Hex(run), "-", n++);
}

bool Exists(const std::string& name) {
  return access(absl::StrCat("/dev/shm", name).c_str(), F_OK) == 0;
}

// Polls `check` for up to 5 s until it says `want`.
bool Await(const std::function<Peer()>& check, Peer want) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (absl::Now() < deadline) {
    if (check() == want) return true;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return check() == want;
}

// A child that opens `name`, claims `port`, beats at `beat_ns`, says so on
// `fd` (one byte) and then waits to be killed, or execs `exec_path`.
pid_t ClaimingChild(const std::string& name, int port, int64_t beat_ns, int fd,
                    const char* exec_path = nullptr) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  alarm(30);  // the child's own watchdog
  auto table = LivenessTable::Open(name);
  if (!table.ok() || !(*table)->Claim(port).ok()) _exit(2);
  (*table)->Beat(beat_ns);
  const char ok = 1;
  if (write(fd, &ok, 1) != 1) _exit(3);
  if (exec_path != nullptr) {
    execl(exec_path, exec_path, "30", static_cast<char*>(nullptr));
    _exit(4);
  }
  for (;;) pause();
}

bool ReadByte(int fd) {
  char c = 0;
  return read(fd, &c, 1) == 1;
}

TEST(PeerLiveness, ClaimBeatAndCheckInOneProcess) {
  const std::string name = TestName();
  auto table = LivenessTable::Open(name);
  ASSERT_TRUE(table.ok()) << table.status();
  LivenessTable& t = **table;
  const int port = kBase + 3;
  EXPECT_EQ(t.Check(port, 0), Peer::kGone) << "nobody claimed it yet";
  ASSERT_TRUE(t.Claim(port).ok());
  // Claimed, never drained: it has not run since any time after 0.
  EXPECT_EQ(t.Check(port, 1), Peer::kNotRunSince);
  const int64_t beat = MonotonicNs();
  t.Beat(beat);
  EXPECT_EQ(t.Check(port, beat - 1000), Peer::kRanSince);
  EXPECT_EQ(t.Check(port, beat), Peer::kRanSince);
  EXPECT_EQ(t.Check(port, beat + 1), Peer::kNotRunSince);
  // Other ports: unclaimed, or outside the table.
  EXPECT_EQ(t.Check(kBase + 4, 0), Peer::kGone);
  EXPECT_EQ(t.Check(-1, 0), Peer::kGone);
  EXPECT_EQ(t.Check(LivenessTable::kSlots, 0), Peer::kGone);
  EXPECT_EQ(ErrnoOf(t.Claim(LivenessTable::kSlots)), ERANGE);
  t.Release(port);
  EXPECT_EQ(t.Check(port, 0), Peer::kGone);
}

TEST(PeerLiveness, TwoFabricsOfOneProcessShareTheFile) {
  const std::string name = TestName();
  auto a = LivenessTable::Open(name);
  auto b = LivenessTable::Open(name);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Claim(kBase).ok());
  ASSERT_TRUE((*b)->Claim(kBase + 1).ok());
  (*b)->Beat(MonotonicNs());
  EXPECT_EQ((*a)->Check(kBase + 1, 1), Peer::kRanSince);
  // Closing one keeps the other's claim (POSIX locks belong to the process:
  // a second descriptor closed would drop them all).
  a->reset();
  const pid_t pid = fork();
  if (pid == 0) {
    auto c = LivenessTable::Open(name);
    _exit(c.ok() && (*c)->Check(kBase + 1, 1) == Peer::kRanSince &&
                  (*c)->Check(kBase, 0) == Peer::kGone
              ? 0
              : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "another process saw the wrong slots (status " << status << ")";
}

// A forked child has a copy of its parent's table; destroying the copy
// leaves the parent's claims and the file alone.
TEST(PeerLiveness, AForkedChildsCopyLeavesTheParentsClaims) {
  const std::string name = TestName();
  auto table = LivenessTable::Open(name);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE((*table)->Claim(kBase).ok());
  (*table)->Beat(MonotonicNs());
  const pid_t pid = fork();
  if (pid == 0) {
    table->reset();
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ((*table)->Check(kBase, 1), Peer::kRanSince);
  EXPECT_TRUE(Exists(name));
  // And another process still sees the parent's claim (its lock held).
  const pid_t other = fork();
  if (other == 0) {
    auto t = LivenessTable::Open(name);
    _exit(t.ok() && (*t)->Check(kBase, 1) == Peer::kRanSince ? 0 : 1);
  }
  ASSERT_EQ(waitpid(other, &status, 0), other);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(PeerLiveness, AnotherProcessRunningStoppedAndKilled) {
  const std::string name = TestName();
  auto table = LivenessTable::Open(name);
  ASSERT_TRUE(table.ok()) << table.status();
  LivenessTable& t = **table;
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int port = kBase + 1;
  const int64_t beat = MonotonicNs();
  const pid_t pid = ClaimingChild(name, port, beat, p[1]);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(ReadByte(p[0])) << "the child did not claim its port";
  EXPECT_EQ(t.Check(port, beat), Peer::kRanSince);
  EXPECT_EQ(t.Check(port, beat + 1), Peer::kNotRunSince);
  // Stopped: alive, and it runs no more.
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  EXPECT_EQ(t.Check(port, beat + 1), Peer::kNotRunSince);
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  // Killed: gone as soon as the kernel has closed its files, before anyone
  // reaps it (a zombie still answers kill(pid, 0)).
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_TRUE(Await([&] { return t.Check(port, beat + 1); }, Peer::kGone));
  EXPECT_EQ(kill(pid, 0), 0) << "the child was reaped; the check proves less";
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  // Its slot can be claimed again.
  EXPECT_TRUE(t.Claim(port).ok());
  close(p[0]);
  close(p[1]);
}

TEST(PeerLiveness, AProcessThatExecsIsGone) {
  const std::string name = TestName();
  auto table = LivenessTable::Open(name);
  ASSERT_TRUE(table.ok()) << table.status();
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int port = kBase + 2;
  const pid_t pid = ClaimingChild(name, port, MonotonicNs(), p[1], "/bin/sleep");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(ReadByte(p[0]));
  // The same pid runs on, another program: the table's descriptor closed
  // on exec and took the lock with it.
  EXPECT_TRUE(Await([&] { return (*table)->Check(port, 0); }, Peer::kGone));
  EXPECT_EQ(kill(pid, 0), 0);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(p[0]);
  close(p[1]);
}

TEST(PeerLiveness, TheLastUserRemovesTheTable) {
  const std::string name = TestName();
  {
    auto table = LivenessTable::Open(name);
    ASSERT_TRUE(table.ok());
    EXPECT_TRUE(Exists(name));
  }
  EXPECT_FALSE(Exists(name)) << "the only user closed it";
  // Another process still using it keeps it.
  auto table = LivenessTable::Open(name);
  ASSERT_TRUE(table.ok());
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t pid = ClaimingChild(name, kBase, MonotonicNs(), p[1]);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(ReadByte(p[0]));
  table->reset();
  EXPECT_TRUE(Exists(name)) << "removed while another process used it";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  // Killed users remove nothing; the next one to close does.
  auto again = LivenessTable::Open(name);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->Check(kBase, 0), Peer::kGone);
  again->reset();
  EXPECT_FALSE(Exists(name));
  close(p[0]);
  close(p[1]);
}

TEST(PeerLiveness, FilesThatAreNotOurTableAreRefused) {
  const std::string name = TestName();
  const std::string path = absl::StrCat("/dev/shm", name);
  // Open to others: anyone could make our timers wait.
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fchmod(fd, 0644), 0);
  auto table = LivenessTable::Open(name);
  EXPECT_EQ(ErrnoOf(table.status()), EACCES) << table.status();
  // Ours alone, but another layout.
  ASSERT_EQ(fchmod(fd, 0600), 0);
  const char junk[64] = "not a liveness table";
  ASSERT_EQ(write(fd, junk, sizeof(junk)), static_cast<ssize_t>(sizeof(junk)));
  table = LivenessTable::Open(name);
  EXPECT_EQ(ErrnoOf(table.status()), EPROTO) << table.status();
  EXPECT_TRUE(Exists(name)) << "a file that is not ours to remove was removed";
  close(fd);
  shm_unlink(name.c_str());
}

}  // namespace
}  // namespace verbsim::sim
