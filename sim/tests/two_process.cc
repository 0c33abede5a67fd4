#include "sim/tests/two_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "gtest/gtest.h"

namespace verbsim::sim {

bool Channel::Write(const void* p, size_t n) {
  return write(wr, p, n) == static_cast<ssize_t>(n);
}

bool Channel::Read(void* p, size_t n, int timeout_ms) {
  size_t got = 0;
  while (got < n) {
    pollfd pfd{rd, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0) return false;
    const ssize_t r = read(rd, static_cast<char*>(p) + got, n - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// Two free UDP ports base, base+1 on loopback (probed; the child binds its
// own after the fork).
int FreeBasePort(int count) {
  std::mt19937 rng(static_cast<uint32_t>(getpid()) * 2654435761u ^
                   static_cast<uint32_t>(absl::GetCurrentTimeNanos()));
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int base = 20000 + static_cast<int>(rng() % 40000);
    bool ok = true;
    std::vector<int> fds(static_cast<size_t>(count), -1);
    for (int i = 0; i < count && ok; ++i) {
      fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(base + i));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ok = bind(fds[i], reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    }
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
    if (ok) return base;
  }
  return 0;
}

absl::Status MakeSide(int base, int me, QpType type, Side* s,
                      uint8_t timeout) {
  return MakeSideWith(absl::StrCat("sim:nodes=2,udp=", base, ",local=", me),
                      me, type, s, timeout);
}

absl::Status MakeSideWith(const std::string& spec, int me, QpType type,
                          Side* s, uint8_t timeout) {
  auto provider = OpenProvider(spec);
  if (!provider.ok()) return provider.status();
  s->provider = *std::move(provider);
  auto ctx = s->provider->Open(absl::StrCat("sim", me));
  if (!ctx.ok()) return ctx.status();
  EndpointAttr attr;
  attr.qp_type = type;
  attr.timeout = timeout;
  auto ep = Endpoint::Create(*std::move(ctx), attr);
  if (!ep.ok()) return ep.status();
  s->ep = *std::move(ep);
  if (absl::Status st = ModifyQpToInit(s->ep->qp(), attr); !st.ok()) return st;
  auto mr = s->ep->RegMr(s->buf.data(), s->buf.size(),
                         kAccessLocalWrite | kAccessRemoteWrite |
                             kAccessRemoteRead | kAccessRemoteAtomic);
  if (!mr.ok()) return mr.status();
  s->mr = *std::move(mr);
  auto gid = s->ep->context()->QueryGid(1, 0);
  if (!gid.ok()) return gid.status();
  s->info.qpn = s->ep->qp()->qp_num();
  s->info.psn = 0x100 * (me + 1);
  s->info.addr = reinterpret_cast<uint64_t>(s->buf.data());
  s->info.rkey = s->mr->rkey();
  s->info.gid = *gid;
  return absl::OkStatus();
}

absl::Status Connect(Side& s, const Info& peer) {
  const EndpointAttr& attr = s.ep->attr();
  if (absl::Status st = ModifyQpToRtr(s.ep->qp(), attr, peer.qpn, peer.gid,
                                      peer.psn);
      !st.ok()) {
    return st;
  }
  return ModifyQpToRts(s.ep->qp(), attr, s.info.psn);
}

namespace {

// Forks a child with a pipe each way: the child runs `child` on its end of
// the channel (under a 60 s watchdog) and exits with what it returns; here
// `*pid` is the child and `*ch` the parent's end.
void ForkChild(int base, const std::function<int(int, Channel&)>& child,
               pid_t* pid, Channel* ch) {
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  *pid = fork();
  ASSERT_GE(*pid, 0) << std::strerror(errno);
  if (*pid == 0) {
    alarm(60);  // the child's own watchdog
    close(to_child[1]);
    close(to_parent[0]);
    Channel child_ch{to_child[0], to_parent[1]};
    _exit(child(base, child_ch));
  }
  close(to_child[0]);
  close(to_parent[1]);
  *ch = Channel{to_parent[0], to_child[1]};
}

}  // namespace

// Runs `child` in a forked process and `parent` here, with a channel each
// way. The child exits 0 when it saw no failure; it is killed after 60 s.
void RunTwoProcesses(const std::function<void(int base, Channel&)>& parent,
                     const std::function<void(int base, Channel&)>& child) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0) << "no two free UDP ports on loopback";
  pid_t pid = -1;
  Channel ch;
  ForkChild(
      base,
      [&](int b, Channel& c) {
        child(b, c);
        // Let the parent's last packets be acknowledged before the node goes.
        absl::SleepFor(absl::Milliseconds(100));
        return ::testing::Test::HasFailure() ? 1 : 0;
      },
      &pid, &ch);
  if (::testing::Test::HasFatalFailure()) return;
  parent(base, ch);
  close(ch.wr);
  // Reap the child, killing it if it does not finish in time.
  int status = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  pid_t r = 0;
  while ((r = waitpid(pid, &status, WNOHANG)) == 0 &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (r == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ADD_FAILURE() << "child hung and was killed";
  }
  close(ch.rd);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child failed (status " << status << "); see its output above";
}

void RunWithVictim(
    const std::function<void(int base, Channel&,
                             const std::function<void()>& kill_victim)>&
        survivor,
    const std::function<void(int base, Channel&)>& victim) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0) << "no two free UDP ports on loopback";
  pid_t pid = -1;
  Channel ch;
  ForkChild(
      base,
      [&](int b, Channel& c) {
        victim(b, c);
        // The victim waits to be killed; an early return is a failure
        // (exit 1) as much as a failed assertion (exit 2).
        return ::testing::Test::HasFailure() ? 2 : 1;
      },
      &pid, &ch);
  if (::testing::Test::HasFatalFailure()) return;
  bool killed = false;
  int status = 0;
  const auto kill_victim = [&] {
    if (killed) return;
    killed = true;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  };
  survivor(base, ch, kill_victim);
  if (!killed) {
    kill_victim();
    ADD_FAILURE() << "the survivor never killed the victim";
  }
  close(ch.rd);
  close(ch.wr);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the victim did not die of SIGKILL (status " << status
      << "); see its output above";
}

// Exchanges Info: the parent writes first.
bool Exchange(Channel& ch, const Info& mine, Info* peer, bool parent) {
  if (parent) return ch.Write(&mine, sizeof(mine)) && ch.Read(peer, sizeof(*peer));
  return ch.Read(peer, sizeof(*peer)) && ch.Write(&mine, sizeof(mine));
}

void Fill(uint8_t* p, size_t n, int seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 13 + seed);
}

}  // namespace verbsim::sim
