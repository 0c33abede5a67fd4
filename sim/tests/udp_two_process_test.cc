// The UDP link transport between two processes (docs/udp-transport.md):
// the test forks a child that owns node 1 of a two-node fabric while the
// parent owns node 0; they exchange QPN, PSN, GID, address and rkey over
// pipes, then run RC, UC and UD traffic as RoCEv2 datagrams on loopback in
// real time. Both sides check statuses and bytes; the child's verdict is its
// exit status. A watchdog kills a child that hangs, and every child is
// reaped.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "sim/sim_provider.h"
#include "sim/udp_transport.h"
#include "sim/wire.h"

namespace verbsim::sim {
namespace {

constexpr uint32_t kBase = kDefaultAddressBase;  // the fabrics' default

constexpr absl::Duration kComp = absl::Seconds(10);

// What one side tells the other.
struct Info {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  Gid gid{};
};

// A pipe pair between parent and child; every read is bounded in time.
struct Channel {
  int rd = -1, wr = -1;
  bool Write(const void* p, size_t n) {
    return write(wr, p, n) == static_cast<ssize_t>(n);
  }
  bool Read(void* p, size_t n, int timeout_ms = 20000) {
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
  bool Token(uint32_t t) { return Write(&t, sizeof(t)); }
  bool Expect(uint32_t want) {
    uint32_t t = 0;
    return Read(&t, sizeof(t)) && t == want;
  }
};

// Two free UDP ports base, base+1 on loopback (probed; the child binds its
// own after the fork).
int FreeBasePort() {
  std::mt19937 rng(static_cast<uint32_t>(getpid()) * 2654435761u ^
                   static_cast<uint32_t>(absl::GetCurrentTimeNanos()));
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int base = 20000 + static_cast<int>(rng() % 40000);
    bool ok = true;
    int fds[2] = {-1, -1};
    for (int i = 0; i < 2 && ok; ++i) {
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

// One side: its provider (a two-node fabric whose node `me` is local) and
// one endpoint on that node.
struct Side {
  std::unique_ptr<Provider> provider;
  std::unique_ptr<Endpoint> ep;
  std::vector<uint8_t> buf = std::vector<uint8_t>(64 * 1024);
  std::unique_ptr<Mr> mr;
  Info info;

  Fabric& fabric() { return AsSimProvider(provider.get())->fabric(); }
};

// `timeout`: the RC ACK timeout exponent (10: 4 ms, so that a lost packet
// is retried soon; 14, the default, 67 ms, for bursts that a sanitizer
// build takes a while to receive).
absl::Status MakeSide(int base, int me, QpType type, Side* s,
                      uint8_t timeout = 10) {
  auto provider =
      OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=", me));
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

// Runs `child` in a forked process and `parent` here, with a channel each
// way. The child exits 0 when it saw no failure; it is killed after 60 s.
void RunTwoProcesses(const std::function<void(int base, Channel&)>& parent,
                     const std::function<void(int base, Channel&)>& child) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0) << "no two free UDP ports on loopback";
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) {
    alarm(60);  // the child's own watchdog
    close(to_child[1]);
    close(to_parent[0]);
    Channel ch{to_child[0], to_parent[1]};
    child(base, ch);
    // Let the parent's last packets be acknowledged before the node goes.
    absl::SleepFor(absl::Milliseconds(100));
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  close(to_child[0]);
  close(to_parent[1]);
  Channel ch{to_parent[0], to_child[1]};
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

// Exchanges Info: the parent writes first.
bool Exchange(Channel& ch, const Info& mine, Info* peer, bool parent) {
  if (parent) return ch.Write(&mine, sizeof(mine)) && ch.Read(peer, sizeof(*peer));
  return ch.Read(peer, sizeof(*peer)) && ch.Write(&mine, sizeof(mine));
}

enum : uint32_t { kReady = 1, kAtomicsDone = 2, kBadRkeyDone = 3, kDone = 4 };

void Fill(uint8_t* p, size_t n, int seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 13 + seed);
}

TEST(UdpTwoProcess, RcSendWriteReadAtomicsAndBadRkey) {
  // Server: the child, node 1.
  auto server = [](int base, Channel& ch) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 1, QpType::kRc, &s).ok());
    Fill(s.buf.data() + 16384, 3000, 3);  // read back by the client
    uint64_t counter = 100;
    std::memcpy(s.buf.data() + 32768, &counter, 8);
    for (int i = 0; i < 3; ++i) {
      // At buf (8192 bytes), buf + 8192 and buf + 8256 (64 bytes each).
      uint8_t* at = s.buf.data() + (i == 0 ? 0 : 8192 + 64 * (i - 1));
      ASSERT_TRUE(s.ep->PostRecv(i, at, i == 0 ? 8192 : 64, s.mr.get()).ok());
    }
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, false));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Token(kReady));
    // 1: a 6000-byte send (6 packets at MTU 1024).
    auto rc = s.ep->GetRecvComp(kComp);
    ASSERT_TRUE(rc.ok()) << rc.status();
    EXPECT_EQ(rc->status, WcStatus::kSuccess);
    EXPECT_EQ(rc->wr_id, 0u);
    EXPECT_EQ(rc->byte_len, 6000u);
    std::vector<uint8_t> want(6000);
    Fill(want.data(), want.size(), 1);
    EXPECT_EQ(std::memcmp(s.buf.data(), want.data(), 6000), 0);
    // 2: a send after the write: the write's bytes are in place.
    rc = s.ep->GetRecvComp(kComp);
    ASSERT_TRUE(rc.ok()) << rc.status();
    EXPECT_EQ(rc->status, WcStatus::kSuccess);
    EXPECT_EQ(rc->wr_id, 1u);
    EXPECT_EQ(rc->byte_len, 4u);
    Fill(want.data(), 5000, 2);
    EXPECT_EQ(std::memcmp(s.buf.data() + 40000, want.data(), 5000), 0);
    ASSERT_TRUE(ch.Expect(kAtomicsDone));
    // No local completion orders the atomics' writes (made by the progress
    // thread under the fabric lock) before this read; taking the lock does,
    // which ThreadSanitizer sees (the token came through another process).
    s.fabric().Now();
    std::memcpy(&counter, s.buf.data() + 32768, 8);
    EXPECT_EQ(counter, 7u);  // 100 + 5, then compare 105 swap 7
    ASSERT_TRUE(ch.Expect(kBadRkeyDone));
    // The responder NAKs the bad rkey and its QP enters ERR, as in-process
    // (a class C error: rxe_resp.c do_class_ac_error sets goto_error), so
    // its last receive is flushed.
    const absl::Time until = absl::Now() + absl::Seconds(5);
    while (s.ep->qp()->state() != QpState::kErr && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    EXPECT_EQ(s.ep->qp()->state(), QpState::kErr);
    auto flushed = s.ep->GetRecvComp(kComp);
    ASSERT_TRUE(flushed.ok()) << flushed.status();
    EXPECT_EQ(flushed->status, WcStatus::kWrFlushErr);
    EXPECT_EQ(flushed->wr_id, 2u);
    absl::StatusOr<NodeStats> st = s.fabric().GetNodeStats(1);
    ASSERT_TRUE(st.ok());
    EXPECT_GT(st->packets_received, 10u);
    EXPECT_EQ(st->icrc_errors, 0u);
    EXPECT_EQ(s.fabric().udp_malformed(), 0u);
    ASSERT_TRUE(ch.Token(kDone));
  };
  auto client = [](int base, Channel& ch) {
    Side c;
    absl::Status made = MakeSide(base, 0, QpType::kRc, &c);
    ASSERT_TRUE(made.ok()) << made;
    // The device list shows this process's node only.
    auto devices = c.provider->ListDevices();
    ASSERT_TRUE(devices.ok());
    EXPECT_EQ(*devices, std::vector<std::string>{"sim0"});
    EXPECT_EQ(ErrnoOf(c.provider->Open("sim1").status()), ENODEV);
    Info peer;
    ASSERT_TRUE(Exchange(ch, c.info, &peer, true));
    ASSERT_TRUE(Connect(c, peer).ok());
    ASSERT_TRUE(ch.Expect(kReady));
    uint8_t* b = c.buf.data();
    Fill(b, 6000, 1);
    ASSERT_TRUE(c.ep->PostSend(10, b, 6000, c.mr.get(), kSendSignaled).ok());
    auto sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    EXPECT_EQ(sc->wr_id, 10u);
    // Write 5000 bytes to the server's buf + 40000, then a send.
    Fill(b + 8192, 5000, 2);
    ASSERT_TRUE(c.ep->PostWrite(11, b + 8192, 5000, c.mr.get(), kSendSignaled,
                                peer.addr + 40000, peer.rkey)
                    .ok());
    sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    EXPECT_EQ(sc->opcode, WcOpcode::kRdmaWrite);
    ASSERT_TRUE(c.ep->PostSend(12, b, 4, c.mr.get(), kSendSignaled).ok());
    sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    // Read 3000 bytes back.
    std::memset(b + 20000, 0, 3000);
    ASSERT_TRUE(c.ep->PostRead(13, b + 20000, 3000, c.mr.get(), kSendSignaled,
                               peer.addr + 16384, peer.rkey)
                    .ok());
    sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    EXPECT_EQ(sc->opcode, WcOpcode::kRdmaRead);
    EXPECT_EQ(sc->byte_len, 3000u);
    std::vector<uint8_t> want(3000);
    Fill(want.data(), want.size(), 3);
    EXPECT_EQ(std::memcmp(b + 20000, want.data(), 3000), 0);
    // Atomics: fetch-add 5 on 100, then compare 105 swap 7.
    uint64_t* result = reinterpret_cast<uint64_t*>(b + 30000);
    const Sge sge{reinterpret_cast<uint64_t>(result), 8, c.mr->lkey()};
    SendWr wr;
    wr.wr_id = 14;
    wr.sg_list = absl::MakeConstSpan(&sge, 1);
    wr.opcode = WrOpcode::kAtomicFetchAndAdd;
    wr.send_flags = kSendSignaled;
    wr.atomic.remote_addr = peer.addr + 32768;
    wr.atomic.rkey = peer.rkey;
    wr.atomic.compare_add = 5;
    ASSERT_TRUE(c.ep->Post(wr).ok());
    sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    EXPECT_EQ(sc->opcode, WcOpcode::kFetchAdd);
    EXPECT_EQ(*result, 100u);
    wr.wr_id = 15;
    wr.opcode = WrOpcode::kAtomicCmpAndSwp;
    wr.atomic.compare_add = 105;
    wr.atomic.swap = 7;
    ASSERT_TRUE(c.ep->Post(wr).ok());
    sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    EXPECT_EQ(sc->opcode, WcOpcode::kCompSwap);
    EXPECT_EQ(*result, 105u);
    ASSERT_TRUE(ch.Token(kAtomicsDone));
    // A write with a bad rkey: REM_ACCESS_ERR, the QP goes to ERR.
    ASSERT_TRUE(c.ep->PostWrite(16, b, 8, c.mr.get(), kSendSignaled,
                                peer.addr, peer.rkey ^ 0x1000)
                    .ok());
    sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kRemAccessErr);
    EXPECT_EQ(c.ep->qp()->state(), QpState::kErr);
    ASSERT_TRUE(ch.Token(kBadRkeyDone));
    ASSERT_TRUE(ch.Expect(kDone));
  };
  RunTwoProcesses(client, server);
}

TEST(UdpTwoProcess, RcLossIsRecoveredByRetransmission) {
  constexpr int kMessages = 20;
  auto server = [](int base, Channel& ch) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 1, QpType::kRc, &s).ok());
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_TRUE(
          s.ep->PostRecv(i, s.buf.data() + 2048 * i, 2048, s.mr.get()).ok());
    }
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, false));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Token(kReady));
    for (int i = 0; i < kMessages; ++i) {
      auto rc = s.ep->GetRecvComp(kComp);
      ASSERT_TRUE(rc.ok()) << rc.status();
      EXPECT_EQ(rc->status, WcStatus::kSuccess);
      EXPECT_EQ(rc->wr_id, static_cast<uint64_t>(i));  // in order, once each
      EXPECT_EQ(rc->byte_len, 1500u);
      std::vector<uint8_t> want(1500);
      Fill(want.data(), want.size(), i);
      EXPECT_EQ(std::memcmp(s.buf.data() + 2048 * i, want.data(), 1500), 0)
          << "message " << i;
    }
    ASSERT_TRUE(ch.Expect(kDone));
    // The corrupted datagram failed this side's ICRC check, was dropped and
    // counted (IBA 7.8.1); RC resent it.
    absl::StatusOr<NodeStats> st = s.fabric().GetNodeStats(1);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->icrc_errors, 1u);
    EXPECT_EQ(s.fabric().udp_malformed(), 0u);
  };
  auto client = [](int base, Channel& ch) {
    Side c;
    ASSERT_TRUE(MakeSide(base, 0, QpType::kRc, &c).ok());
    // Lose the 3rd SEND_FIRST and the 7th SEND_LAST on the way out of this
    // process (the datagrams are never sent) and corrupt the 12th SEND_FIRST
    // (the server's ICRC check drops it): the server NAKs the PSN gap or the
    // ACK timer fires, and the client goes back and resends.
    ASSERT_TRUE(c.fabric()
                    .AddFaults("drop op=SEND_FIRST nth=3; "
                               "drop op=SEND_LAST nth=7; "
                               "corrupt op=SEND_FIRST nth=12")
                    .ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, c.info, &peer, true));
    ASSERT_TRUE(Connect(c, peer).ok());
    ASSERT_TRUE(ch.Expect(kReady));
    for (int i = 0; i < kMessages; ++i) {
      Fill(c.buf.data() + 2048 * i, 1500, i);
      ASSERT_TRUE(c.ep->PostSend(100 + i, c.buf.data() + 2048 * i, 1500,
                                 c.mr.get(), kSendSignaled)
                      .ok());
    }
    for (int i = 0; i < kMessages; ++i) {
      auto sc = c.ep->GetSendComp(kComp);
      ASSERT_TRUE(sc.ok()) << sc.status();
      EXPECT_EQ(sc->status, WcStatus::kSuccess);
      EXPECT_EQ(sc->wr_id, static_cast<uint64_t>(100 + i));
    }
    std::vector<PacketRule> rules = c.fabric().PacketRules();
    ASSERT_EQ(rules.size(), 3u);
    EXPECT_EQ(rules[0].fired, 1u);
    EXPECT_EQ(rules[1].fired, 1u);
    EXPECT_EQ(rules[2].fired, 1u);
    SimQpStats stats;
    ASSERT_TRUE(GetSimQpStats(c.ep->qp(), &stats));
    EXPECT_GE(stats.retransmissions, 1u);
    ASSERT_TRUE(ch.Token(kDone));
  };
  RunTwoProcesses(client, server);
}

TEST(UdpTwoProcess, UcSendAndWrite) {
  auto server = [](int base, Channel& ch) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 1, QpType::kUc, &s).ok());
    s.fabric().KeepTrace(true);
    ASSERT_TRUE(s.ep->PostRecv(1, s.buf.data(), 4096, s.mr.get()).ok());
    ASSERT_TRUE(s.ep->PostRecv(2, s.buf.data() + 4096, 64, s.mr.get()).ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, false));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Token(kReady));
    auto rc = s.ep->GetRecvComp(kComp);
    ASSERT_TRUE(rc.ok()) << rc.status();
    EXPECT_EQ(rc->status, WcStatus::kSuccess);
    EXPECT_EQ(rc->byte_len, 3000u);
    std::vector<uint8_t> want(3000);
    Fill(want.data(), want.size(), 5);
    EXPECT_EQ(std::memcmp(s.buf.data(), want.data(), 3000), 0);
    // A write with immediate consumes the second receive.
    rc = s.ep->GetRecvComp(kComp);
    ASSERT_TRUE(rc.ok()) << rc.status() << s.fabric().TraceText();
    EXPECT_EQ(rc->status, WcStatus::kSuccess);
    EXPECT_EQ(rc->wr_id, 2u);
    EXPECT_EQ(rc->opcode, WcOpcode::kRecvRdmaWithImm);
    EXPECT_EQ(rc->imm_data, 0xabcdu);
    EXPECT_EQ(rc->byte_len, 2500u);
    Fill(want.data(), 2500, 6);
    EXPECT_EQ(std::memcmp(s.buf.data() + 10000, want.data(), 2500), 0);
    ASSERT_TRUE(ch.Expect(kDone));
  };
  auto client = [](int base, Channel& ch) {
    Side c;
    ASSERT_TRUE(MakeSide(base, 0, QpType::kUc, &c).ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, c.info, &peer, true));
    ASSERT_TRUE(Connect(c, peer).ok());
    ASSERT_TRUE(ch.Expect(kReady));
    Fill(c.buf.data(), 3000, 5);
    ASSERT_TRUE(
        c.ep->PostSend(1, c.buf.data(), 3000, c.mr.get(), kSendSignaled).ok());
    auto sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    Fill(c.buf.data() + 8192, 2500, 6);
    const Sge sge{reinterpret_cast<uint64_t>(c.buf.data() + 8192), 2500,
                  c.mr->lkey()};
    SendWr wr;
    wr.wr_id = 2;
    wr.sg_list = absl::MakeConstSpan(&sge, 1);
    wr.opcode = WrOpcode::kRdmaWriteWithImm;
    wr.send_flags = kSendSignaled;
    wr.imm_data = 0xabcd;
    wr.rdma.remote_addr = peer.addr + 10000;
    wr.rdma.rkey = peer.rkey;
    ASSERT_TRUE(c.ep->Post(wr).ok());
    sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    ASSERT_TRUE(ch.Token(kDone));
  };
  RunTwoProcesses(client, server);
}

TEST(UdpTwoProcess, UdDatagramsBothWays) {
  auto server = [](int base, Channel& ch) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 1, QpType::kUd, &s).ok());
    ASSERT_TRUE(s.ep->PostRecv(1, s.buf.data(), 40 + 1024, s.mr.get()).ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, false));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Token(kReady));
    auto rc = s.ep->GetRecvComp(kComp);
    ASSERT_TRUE(rc.ok()) << rc.status();
    EXPECT_EQ(rc->status, WcStatus::kSuccess);
    EXPECT_EQ(rc->byte_len, 40u + 700u);  // the GRH, then the payload
    EXPECT_EQ(rc->src_qp, peer.qpn);
    std::vector<uint8_t> want(700);
    Fill(want.data(), want.size(), 8);
    EXPECT_EQ(std::memcmp(s.buf.data() + 40, want.data(), 700), 0);
    // Reply to the sender's GID and QPN.
    AhAttr ah_attr;
    ah_attr.dgid = peer.gid;
    auto ah = s.ep->pd()->CreateAh(ah_attr);
    ASSERT_TRUE(ah.ok()) << ah.status();
    Fill(s.buf.data() + 4096, 100, 9);
    ASSERT_TRUE(s.ep->PostUdSend(2, s.buf.data() + 4096, 100, s.mr.get(),
                                 kSendSignaled, ah->get(), peer.qpn)
                    .ok());
    auto sc = s.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    ASSERT_TRUE(ch.Expect(kDone));
  };
  auto client = [](int base, Channel& ch) {
    Side c;
    ASSERT_TRUE(MakeSide(base, 0, QpType::kUd, &c).ok());
    ASSERT_TRUE(c.ep->PostRecv(1, c.buf.data() + 8192, 40 + 1024, c.mr.get())
                    .ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, c.info, &peer, true));
    ASSERT_TRUE(Connect(c, peer).ok());
    ASSERT_TRUE(ch.Expect(kReady));
    AhAttr ah_attr;
    ah_attr.dgid = peer.gid;
    auto ah = c.ep->pd()->CreateAh(ah_attr);
    ASSERT_TRUE(ah.ok()) << ah.status();
    Fill(c.buf.data(), 700, 8);
    ASSERT_TRUE(c.ep->PostUdSend(1, c.buf.data(), 700, c.mr.get(),
                                 kSendSignaled, ah->get(), peer.qpn)
                    .ok());
    auto sc = c.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    auto rc = c.ep->GetRecvComp(kComp);
    ASSERT_TRUE(rc.ok()) << rc.status();
    EXPECT_EQ(rc->status, WcStatus::kSuccess);
    EXPECT_EQ(rc->byte_len, 140u);
    EXPECT_EQ(rc->src_qp, peer.qpn);
    std::vector<uint8_t> want(100);
    Fill(want.data(), want.size(), 9);
    EXPECT_EQ(std::memcmp(c.buf.data() + 8192 + 40, want.data(), 100), 0);
    ASSERT_TRUE(ch.Token(kDone));
  };
  RunTwoProcesses(client, server);
}

// Figures, with loose bounds: the round trip of a 64-byte RC send between
// the processes, and the rate of 64 KiB RDMA writes (printed for
// docs/udp-transport.md; a bound far off means progress went wrong, e.g. a
// packet waiting for a timer instead of being sent at once).
TEST(UdpTwoProcess, PingPongAndWriteRateFigures) {
  constexpr int kRounds = 500;
  constexpr int kWrites = 64;
  auto server = [](int base, Channel& ch) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 1, QpType::kRc, &s, 14).ok());
    ASSERT_TRUE(s.ep->PostRecv(0, s.buf.data(), 64, s.mr.get()).ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, false));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Token(kReady));
    for (int i = 0; i < kRounds; ++i) {
      auto rc = s.ep->GetRecvComp(kComp);
      ASSERT_TRUE(rc.ok()) << rc.status();
      ASSERT_EQ(rc->status, WcStatus::kSuccess);
      ASSERT_TRUE(s.ep->PostRecv(0, s.buf.data(), 64, s.mr.get()).ok());
      ASSERT_TRUE(s.ep->PostSend(1, s.buf.data() + 128, 64, s.mr.get(), 0)
                      .ok());
    }
    ASSERT_TRUE(ch.Expect(kDone));
  };
  auto client = [](int base, Channel& ch) {
    Side c;
    ASSERT_TRUE(MakeSide(base, 0, QpType::kRc, &c, 14).ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, c.info, &peer, true));
    ASSERT_TRUE(Connect(c, peer).ok());
    ASSERT_TRUE(ch.Expect(kReady));
    absl::Time t0 = absl::Now();
    for (int i = 0; i < kRounds; ++i) {
      ASSERT_TRUE(c.ep->PostRecv(0, c.buf.data(), 64, c.mr.get()).ok());
      ASSERT_TRUE(c.ep->PostSend(1, c.buf.data() + 128, 64, c.mr.get(), 0)
                      .ok());
      auto rc = c.ep->GetRecvComp(kComp);
      ASSERT_TRUE(rc.ok()) << rc.status();
      ASSERT_EQ(rc->status, WcStatus::kSuccess);
    }
    const absl::Duration rtt = (absl::Now() - t0) / kRounds;
    t0 = absl::Now();
    for (int i = 0; i < kWrites; ++i) {
      ASSERT_TRUE(c.ep->PostWrite(2, c.buf.data(), 32768, c.mr.get(),
                                  i % 16 == 15 ? kSendSignaled : 0,
                                  peer.addr + 32768, peer.rkey)
                      .ok());
      if (i % 16 == 15) {
        auto sc = c.ep->GetSendComp(kComp);
        ASSERT_TRUE(sc.ok()) << sc.status();
        ASSERT_EQ(sc->status, WcStatus::kSuccess);
      }
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);
    const double mbyte_s = kWrites * 32768.0 / seconds / 1e6;
    SimQpStats stats;
    ASSERT_TRUE(GetSimQpStats(c.ep->qp(), &stats));
    std::printf("UDP transport: %llu retransmissions, %llu timeouts\n",
                static_cast<unsigned long long>(stats.retransmissions),
                static_cast<unsigned long long>(stats.timeouts));
    std::printf("UDP transport figures: RC send round trip %s, "
                "RDMA write %.1f MB/s (32 KiB writes, MTU 1024)\n",
                absl::FormatDuration(rtt).c_str(), mbyte_s);
    EXPECT_LT(rtt, absl::Milliseconds(5));
    EXPECT_GT(mbyte_s, 1.0);
    ASSERT_TRUE(ch.Token(kDone));
  };
  RunTwoProcesses(client, server);
}

// A UDP socket bound to 127.0.0.1:`port`, or -1.
int BoundSocket(int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return -1;
  sockaddr_in b = LoopbackAddress(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&b), sizeof(b)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Datagrams that are not RoCEv2 packets of the sim are dropped and counted;
// a corrupted one counts as an ICRC error of the node. One process: node 0
// is local, the junk comes from a plain socket.
TEST(UdpTransport, JunkAndCorruptDatagramsAreCountedNotFatal) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  auto provider =
      OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=0"));
  ASSERT_TRUE(provider.ok()) << provider.status();
  Fabric& fabric = AsSimProvider(provider->get())->fabric();
  // From node 1's port (node 1 lives in no process here), so the datagrams
  // pass the check of who sent them.
  const int fd = BoundSocket(base + 1);
  ASSERT_GE(fd, 0);
  sockaddr_in a = LoopbackAddress(base);
  const uint8_t junk[5] = {1, 2, 3, 4, 5};
  sendto(fd, junk, sizeof(junk), 0, reinterpret_cast<sockaddr*>(&a),
         sizeof(a));
  Packet p;
  p.src_node = 1;
  p.dst_node = 0;
  p.opcode = RcOp::kAcknowledge;
  std::vector<uint8_t> bad = EncodeRoceV2Ip(p, 1, kBase);
  bad[bad.size() - 6] ^= 0x40;  // inside the AETH: only the ICRC sees it
  sendto(fd, bad.data(), bad.size(), 0, reinterpret_cast<sockaddr*>(&a),
         sizeof(a));
  close(fd);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline &&
         (fabric.udp_malformed() < 1 || fabric.GetNodeStats(0)->icrc_errors < 1)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(fabric.udp_malformed(), 1u);
  EXPECT_EQ(fabric.GetNodeStats(0)->icrc_errors, 1u);
  EXPECT_EQ(fabric.udp_foreign(), 0u);
}

// Only the fabric's nodes send to it: a valid packet from a port that is no
// node's, and one whose source is another node than its port's, are
// dropped and counted, and reach nobody.
TEST(UdpTransport, DatagramsFromOutsideTheFabricAreDroppedAndCounted) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  auto provider =
      OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=0"));
  ASSERT_TRUE(provider.ok()) << provider.status();
  Fabric& fabric = AsSimProvider(provider->get())->fabric();
  sockaddr_in a = LoopbackAddress(base);
  Packet p;
  p.src_node = 1;
  p.dst_node = 0;
  p.opcode = RcOp::kAcknowledge;
  const std::vector<uint8_t> ack = EncodeRoceV2Ip(p, 1, kBase);
  const int stranger = socket(AF_INET, SOCK_DGRAM, 0);  // an ephemeral port
  ASSERT_GE(stranger, 0);
  sendto(stranger, ack.data(), ack.size(), 0, reinterpret_cast<sockaddr*>(&a),
         sizeof(a));
  close(stranger);
  p.src_node = 0;  // node 0's address, from node 1's port
  const std::vector<uint8_t> posing = EncodeRoceV2Ip(p, 1, kBase);
  const int node1 = BoundSocket(base + 1);
  ASSERT_GE(node1, 0);
  sendto(node1, posing.data(), posing.size(), 0,
         reinterpret_cast<sockaddr*>(&a), sizeof(a));
  close(node1);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline && fabric.udp_foreign() < 2) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(fabric.udp_foreign(), 2u);
  EXPECT_EQ(fabric.udp_malformed(), 0u);
  EXPECT_EQ(fabric.GetNodeStats(0)->packets_received, 0u);
}

// Two nodes of one process on the UDP transport (node 2 is elsewhere): their
// packets go through the event queue, in real time, driven by the progress
// thread; the connection setup of the provider works between them.
TEST(UdpTransport, LocalNodesTalkInRealTime) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  auto provider =
      OpenProvider(absl::StrCat("sim:nodes=3,udp=", base, ",local=0+1"));
  ASSERT_TRUE(provider.ok()) << provider.status();
  auto devices = (*provider)->ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<std::string>{"sim0", "sim1"}));
  auto eps = CreateConnectedPair(**provider, EndpointAttr{});
  ASSERT_TRUE(eps.ok()) << eps.status();
  Endpoint& c = *eps->client;
  Endpoint& s = *eps->server;
  std::vector<uint8_t> cbuf(4096), sbuf(4096);
  auto cmr = c.RegMsgs(cbuf.data(), cbuf.size());
  auto smr = s.RegMsgs(sbuf.data(), sbuf.size());
  ASSERT_TRUE(cmr.ok() && smr.ok());
  Fill(cbuf.data(), 3000, 4);
  ASSERT_TRUE(s.PostRecv(1, sbuf.data(), 4096, smr->get()).ok());
  Fabric& fabric = AsSimProvider(provider->get())->fabric();
  const absl::Duration t0 = fabric.Now();
  ASSERT_TRUE(c.PostSend(2, cbuf.data(), 3000, cmr->get(), kSendSignaled).ok());
  auto rc = s.GetRecvComp(kComp);
  ASSERT_TRUE(rc.ok()) << rc.status();
  EXPECT_EQ(rc->status, WcStatus::kSuccess);
  EXPECT_EQ(rc->byte_len, 3000u);
  EXPECT_EQ(std::memcmp(sbuf.data(), cbuf.data(), 3000), 0);
  auto sc = c.GetSendComp(kComp);
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kSuccess);
  // The clock is the wall clock: it moved, by less than the test's bound.
  const absl::Duration dt = fabric.Now() - t0;
  EXPECT_GT(dt, absl::ZeroDuration());
  EXPECT_LT(dt, kComp);
  // Nothing left this process.
  EXPECT_EQ(fabric.GetNodeStats(2)->packets_received, 0u);
}

// The ACK timer runs in real time: a send to a node whose port nobody
// listens on is retried retry_cnt times, 4.096 us * 2^timeout apart on the
// wall clock, then fails with RETRY_EXC_ERR (IBA 9.7.6.1.3).
TEST(UdpTransport, AckTimeoutRunsInRealTime) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  Side c;
  absl::Status made = MakeSide(base, 0, QpType::kRc, &c);
  ASSERT_TRUE(made.ok()) << made;
  EndpointAttr attr = c.ep->attr();
  attr.retry_cnt = 3;
  Info peer;  // node 1's GID, a QP that does not exist
  peer.qpn = 99;
  peer.gid = Ipv4MappedGid(NodeIpv4(kBase, 1));  // node 1
  ASSERT_TRUE(ModifyQpToRtr(c.ep->qp(), attr, peer.qpn, peer.gid, 0).ok());
  ASSERT_TRUE(ModifyQpToRts(c.ep->qp(), attr, 0).ok());
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(
      c.ep->PostSend(1, c.buf.data(), 8, c.mr.get(), kSendSignaled).ok());
  auto sc = c.ep->GetSendComp(kComp);
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kRetryExcErr);
  const absl::Duration elapsed = absl::Now() - t0;
  // 1 + retry_cnt timeouts of 4.096 us * 2^10 (the side's timeout).
  EXPECT_GE(elapsed, absl::Nanoseconds(4 * (4096 << 10)));
  EXPECT_LT(elapsed, absl::Seconds(5));
  SimQpStats stats;
  ASSERT_TRUE(GetSimQpStats(c.ep->qp(), &stats));
  EXPECT_EQ(stats.timeouts, 4u);
}

TEST(UdpTransport, BadOptionsAreRefused) {
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:local=0").status()), EINVAL);
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:udp=0").status()), EINVAL);
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:udp=70000").status()), EINVAL);
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:nodes=2,udp=30000,local=5").status()),
            EINVAL);
  // A port already bound: EADDRINUSE naming it.
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  auto first = OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=0"));
  ASSERT_TRUE(first.ok()) << first.status();
  auto second =
      OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=0"));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(ErrnoOf(second.status()), EADDRINUSE);
  EXPECT_NE(second.status().message().find(std::to_string(base)),
            std::string::npos)
      << second.status();
}

}  // namespace
}  // namespace verbsim::sim
