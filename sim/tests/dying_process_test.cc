// A process that dies mid-transfer (SIGKILL), in each role of an RC
// connection over the UDP transport (docs/udp-transport.md): the survivor
// gets what an HCA gives when its peer's host dies (docs/reliability.md,
// "A peer that dies"), never a hang, and its own objects stay usable and
// destroyable.
//
//  - The responder dies: the requester's unacknowledged WRs end with one
//    RETRY_EXC_ERR once the ACK timer has fired retry_cnt times
//    (docs/semantics.md, "peer silent"), the QP enters ERR and every later
//    WR is flushed (WR_FLUSH_ERR).
//  - The requester dies: the responder is told nothing (only a requester
//    keeps a timer), its receives stay posted and its QP stays
//    in RTS; its first send to the dead peer ends in RETRY_EXC_ERR, and then
//    its receives, the one a message was half-way into among them, flush.
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/time/clock.h"
#include "core/endpoint.h"
#include "core/types.h"
#include "gtest/gtest.h"
#include "sim/tests/two_process.h"

namespace verbsim::sim {
namespace {

enum : uint32_t { kReady = 1 };

// The ACK timeout exponent of both sides: 4.096 us * 2^10 = 4 ms, so that
// seven retries take tens of milliseconds.
constexpr uint8_t kTimeout = 10;

// The victim's last act: wait to be killed.
[[noreturn]] void AwaitDeath() {
  for (;;) pause();
}

// Drains `n` send completions, in order.
std::vector<WorkCompletion> SendComps(Endpoint& ep, int n) {
  std::vector<WorkCompletion> out;
  for (int i = 0; i < n; ++i) {
    auto wc = ep.GetSendComp(kComp);
    EXPECT_TRUE(wc.ok()) << "send completion " << i << " of " << n << ": "
                         << wc.status();
    if (!wc.ok()) break;
    out.push_back(*wc);
  }
  return out;
}

// After a peer died: SUCCESS*, then one RETRY_EXC_ERR, then WR_FLUSH_ERR*,
// with the wr_ids in post order from `first_id`.
void ExpectRetryThenFlush(const std::vector<WorkCompletion>& wcs,
                          uint64_t first_id) {
  int retry_errors = 0;
  for (size_t i = 0; i < wcs.size(); ++i) {
    EXPECT_EQ(wcs[i].wr_id, first_id + i) << "completion " << i;
    if (retry_errors == 0) {
      if (wcs[i].status == WcStatus::kRetryExcErr) {
        ++retry_errors;
      } else {
        EXPECT_EQ(wcs[i].status, WcStatus::kSuccess) << "completion " << i;
      }
    } else {
      EXPECT_EQ(wcs[i].status, WcStatus::kWrFlushErr) << "completion " << i;
    }
  }
  EXPECT_EQ(retry_errors, 1) << "no RETRY_EXC_ERR among " << wcs.size();
}

// The survivor's objects after its QP failed: the QP goes back to RESET and
// INIT and takes a receive, a new region registers, the CQs are empty.
void ExpectStillUsable(Side& s) {
  QpAttr reset;
  reset.qp_state = QpState::kReset;
  ASSERT_TRUE(s.ep->qp()->Modify(reset, kQpState).ok());
  ASSERT_TRUE(ModifyQpToInit(s.ep->qp(), s.ep->attr()).ok());
  EXPECT_EQ(s.ep->qp()->state(), QpState::kInit);
  EXPECT_TRUE(s.ep->PostRecv(99, s.buf.data(), 64, s.mr.get()).ok());
  std::vector<uint8_t> more(4096);
  auto mr = s.ep->RegMsgs(more.data(), more.size());
  ASSERT_TRUE(mr.ok()) << mr.status();
  EXPECT_TRUE(s.ep->DeregMr(*mr).ok());
  WorkCompletion wc;
  EXPECT_EQ(*s.ep->send_cq()->Poll(absl::MakeSpan(&wc, 1)), 0);
  EXPECT_EQ(*s.ep->recv_cq()->Poll(absl::MakeSpan(&wc, 1)), 0);
}

TEST(DyingProcess, ResponderKilledMidTransfer) {
  auto responder = [](int base, Channel& ch) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 1, QpType::kRc, &s, kTimeout).ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, false));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Token(kReady));
    AwaitDeath();
  };
  auto requester = [](int base, Channel& ch,
                      const std::function<void()>& kill_responder) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 0, QpType::kRc, &s, kTimeout).ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, true));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Expect(kReady));
    // 40 writes of 16 KiB (16 packets each) into the peer's region.
    constexpr int kBefore = 40, kAfter = 8;
    constexpr size_t kWrite = 16 * 1024;
    Fill(s.buf.data(), s.buf.size(), 5);
    for (int i = 0; i < kBefore; ++i) {
      const size_t off = (i % 4) * kWrite;
      ASSERT_TRUE(s.ep->PostWrite(i, s.buf.data() + off, kWrite, s.mr.get(),
                                  kSendSignaled, peer.addr + off, peer.rkey)
                      .ok());
    }
    // Mid-transfer: the first write has landed, most are still going.
    auto first = s.ep->GetSendComp(kComp);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->status, WcStatus::kSuccess);
    const absl::Time killed_at = absl::Now();
    kill_responder();
    // Posted after the responder is gone: nothing can acknowledge these.
    for (int i = kBefore; i < kBefore + kAfter; ++i) {
      ASSERT_TRUE(s.ep->PostWrite(i, s.buf.data(), 4096, s.mr.get(),
                                  kSendSignaled, peer.addr, peer.rkey)
                      .ok());
    }
    std::vector<WorkCompletion> wcs = SendComps(*s.ep, kBefore + kAfter - 1);
    wcs.insert(wcs.begin(), *first);
    ASSERT_EQ(wcs.size(), static_cast<size_t>(kBefore + kAfter));
    ExpectRetryThenFlush(wcs, 0);
    for (int i = kBefore; i < kBefore + kAfter; ++i) {
      EXPECT_NE(wcs[i].status, WcStatus::kSuccess)
          << "a write posted after the responder died succeeded";
    }
    EXPECT_EQ(s.ep->qp()->state(), QpState::kErr);
    // The failure took the ACK timer's retries, not the test's patience.
    EXPECT_LT(absl::Now() - killed_at, kComp);
    // A WR posted now is flushed at once.
    ASSERT_TRUE(s.ep->PostWrite(100, s.buf.data(), 64, s.mr.get(),
                                kSendSignaled, peer.addr, peer.rkey)
                    .ok());
    auto late = s.ep->GetSendComp(kComp);
    ASSERT_TRUE(late.ok()) << late.status();
    EXPECT_EQ(late->status, WcStatus::kWrFlushErr);
    EXPECT_EQ(late->wr_id, 100u);
    ExpectStillUsable(s);
  };
  RunWithVictim(requester, responder);
}

constexpr int kRecvs = 16;
constexpr size_t kLen = 4096;  // four packets at MTU 1024

TEST(DyingProcess, RequesterKilledMidTransfer) {
  // The requester sends two whole messages, then one whose middle packets
  // never arrive (a fault rule of its own process), and dies while it is
  // retrying them: the responder holds a message half received.
  auto requester = [](int base, Channel& ch) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 1, QpType::kRc, &s, kTimeout).ok());
    ASSERT_TRUE(s.fabric().AddFaults("drop op=SEND_MIDDLE").ok());
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, false));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Expect(kReady));
    for (uint64_t id = 0; id < 3; ++id) {
      uint8_t* at = s.buf.data() + id * kLen;
      Fill(at, kLen, static_cast<int>(id));
      const size_t len = id < 2 ? 1024 : kLen;  // one packet, then four
      ASSERT_TRUE(s.ep->PostSend(id, at, len, s.mr.get(), kSendSignaled).ok());
    }
    AwaitDeath();
  };
  auto responder = [](int base, Channel& ch,
                      const std::function<void()>& kill_requester) {
    Side s;
    ASSERT_TRUE(MakeSide(base, 0, QpType::kRc, &s, kTimeout).ok());
    for (int i = 0; i < kRecvs; ++i) {
      ASSERT_TRUE(
          s.ep->PostRecv(i, s.buf.data() + i * kLen, kLen, s.mr.get()).ok());
    }
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, true));
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Token(kReady));
    std::vector<uint8_t> want(1024);
    for (uint64_t i = 0; i < 2; ++i) {
      auto wc = s.ep->GetRecvComp(kComp);
      ASSERT_TRUE(wc.ok()) << wc.status();
      EXPECT_EQ(wc->status, WcStatus::kSuccess);
      EXPECT_EQ(wc->wr_id, i);
      EXPECT_EQ(wc->byte_len, 1024u);
      Fill(want.data(), want.size(), static_cast<int>(i));
      EXPECT_EQ(std::memcmp(s.buf.data() + i * kLen, want.data(), 1024), 0);
    }
    // The third message's first packet has landed; its middle ones are
    // being retried when the requester dies.
    absl::SleepFor(absl::Milliseconds(20));
    kill_requester();
    WorkCompletion none;
    absl::SleepFor(absl::Milliseconds(200));
    EXPECT_EQ(*s.ep->recv_cq()->Poll(absl::MakeSpan(&none, 1)), 0)
        << "a receive completed after the requester died";
    constexpr size_t kReceived = 2;
    // The responder is not told: its QP is still in RTS.
    EXPECT_EQ(s.ep->qp()->state(), QpState::kRts);
    // Its first send to the dead peer is retried, then fails; the QP enters
    // ERR and the receives left flush, in order.
    std::vector<uint8_t> small(64, 7);
    ASSERT_TRUE(s.ep->PostSend(500, small.data(), small.size(), nullptr,
                               kSendSignaled | kSendInline)
                    .ok());
    auto sc = s.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kRetryExcErr);
    EXPECT_EQ(s.ep->qp()->state(), QpState::kErr);
    for (size_t i = kReceived; i < kRecvs; ++i) {
      auto wc = s.ep->GetRecvComp(kComp);
      ASSERT_TRUE(wc.ok()) << "flush of receive " << i << ": " << wc.status();
      EXPECT_EQ(wc->status, WcStatus::kWrFlushErr);
      EXPECT_EQ(wc->wr_id, i);
    }
    ExpectStillUsable(s);
  };
  RunWithVictim(responder, requester);
}

}  // namespace
}  // namespace verbsim::sim
