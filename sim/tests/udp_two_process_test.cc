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
#include "sim/tests/two_process.h"
#include "sim/sim_provider.h"
#include "sim/udp_transport.h"
#include "sim/wire.h"

namespace verbsim::sim {
namespace {

enum : uint32_t { kReady = 1, kAtomicsDone = 2, kBadRkeyDone = 3, kDone = 4 };

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
      // Every 16th send signaled and its completion polled: on the ibta
      // profile an unsignaled send keeps its slot until a later
      // completion of the send queue is polled (as on mlx5).
      const bool signal = i % 16 == 15;
      ASSERT_TRUE(s.ep->PostSend(1, s.buf.data() + 128, 64, s.mr.get(),
                                 signal ? kSendSignaled : 0)
                      .ok());
      if (signal) {
        auto sc = s.ep->GetSendComp(kComp);
        ASSERT_TRUE(sc.ok()) << sc.status();
        ASSERT_EQ(sc->status, WcStatus::kSuccess);
      }
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
      const bool signal = i % 16 == 15;  // as the server's sends
      ASSERT_TRUE(c.ep->PostSend(1, c.buf.data() + 128, 64, c.mr.get(),
                                 signal ? kSendSignaled : 0)
                      .ok());
      if (signal) {
        auto sc = c.ep->GetSendComp(kComp);
        ASSERT_TRUE(sc.ok()) << sc.status();
        ASSERT_EQ(sc->status, WcStatus::kSuccess);
      }
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

}  // namespace
}  // namespace verbsim::sim
