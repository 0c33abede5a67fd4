// Fault injection: the text form, each action, and the recovery of RC as the
// trace shows it (the Lumina-style examples of docs/faults.md).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/faults.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Wired {
  std::unique_ptr<Provider> provider;
  EndpointPair eps;
  Fabric* fabric = nullptr;
};

Wired Connect(const EndpointAttr& attr = {}) {
  Wired w;
  w.provider = *OpenProvider("sim");
  w.fabric = &AsSimProvider(w.provider.get())->fabric();
  auto eps = CreateConnectedPair(*w.provider, attr);
  EXPECT_TRUE(eps.ok()) << eps.status();
  w.eps = *std::move(eps);
  w.fabric->KeepTrace(true);
  return w;
}


std::string Describe(const TraceRecord& r) {
  const RcOp op = static_cast<RcOp>(r.opcode);
  std::string s;
  if (op == RcOp::kAcknowledge) {
    if (IsAck(r.syndrome)) s = "ACK";
    else if (IsRnrNak(r.syndrome)) s = "RNR";
    else if ((r.syndrome & 0x1f) == 0) s = "NAK-SEQ";
    else s = "NAK";
    s += " " + std::to_string(r.psn);
  } else if (IsReadResponse(op)) {
    s = "R" + std::to_string(r.psn);
  } else {
    s = "P" + std::to_string(r.psn);
  }
  return s;
}

// The packets as they reached a QP ("P2") or were lost on the wire or to a
// bad ICRC ("xP2"), in time order. (A QP may still discard a packet it got,
// e.g. one ahead of the expected PSN: that shows in the trace text.)
std::vector<std::string> Arrivals(Fabric& fabric) {
  std::vector<std::string> out;
  for (const TraceRecord& r : fabric.TraceRecords()) {
    if (r.kind == TraceKind::kDeliver) out.push_back(Describe(r));
    if (r.kind == TraceKind::kDrop && r.peer_node >= 0 &&
        (r.note.rfind("fault", 0) == 0 || r.note == "bad ICRC")) {
      out.push_back("x" + Describe(r));
    }
  }
  return out;
}

int Count(Fabric& fabric, TraceKind kind) {
  int n = 0;
  for (const TraceRecord& r : fabric.TraceRecords()) n += r.kind == kind;
  return n;
}

TEST(FaultText, ParsesEveryAction) {
  auto plan = ParseFaults(
      "drop op=RDMA_WRITE_MIDDLE nth=3; dup prob=0.05; delay us=20 prob=0.1;"
      " reorder qp=17; corrupt op=ACK src=sim1 dst=0 psn=4;"
      " linkdown a=0 b=1 from_us=10 until_us=500; crash node=1 at_us=100;"
      " qperr node=0 qp=17 at_us=5; cqoverflow node=1 qp=3 cq=recv;"
      " regfail nth=2; postfail nth=4");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->packets.size(), 5u);
  EXPECT_EQ(plan->packets[0].action, FaultAction::kDrop);
  EXPECT_EQ(plan->packets[0].opcode, static_cast<int>(RcOp::kWriteMiddle));
  EXPECT_EQ(plan->packets[0].nth, 3u);
  EXPECT_EQ(plan->packets[2].delay_ns, 20000);
  EXPECT_EQ(plan->packets[4].src_node, 1);
  EXPECT_EQ(plan->packets[4].psn, 4);
  ASSERT_EQ(plan->links.size(), 1u);
  EXPECT_EQ(plan->links[0].until_ns, 500000);
  ASSERT_EQ(plan->crashes.size(), 1u);
  EXPECT_EQ(plan->crashes[0].at_ns, 100000);
  EXPECT_EQ(plan->qp_errors[0].qpn, 17u);
  ASSERT_EQ(plan->cq_overflows.size(), 1u);
  EXPECT_TRUE(plan->cq_overflows[0].recv_cq);
  EXPECT_EQ(plan->cq_overflows[0].qpn, 3u);
  EXPECT_EQ(plan->regfail_nth, 2u);
  EXPECT_EQ(plan->postfail_nth, 4u);
}

TEST(FaultText, ErrorsNameTheColumn) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"drop nth=0", "column 10: bad value '0' for nth"},
           {"drop op=WRITE", "column 9: unknown opcode 'WRITE'"},
           {"smash prob=1", "column 1: unknown action 'smash'"},
           {"drop; dup size=3", "column 11: 'dup' takes no key 'size'"},
           {"drop prob=1.5", "column 11: bad value '1.5' for prob"},
           {"delay prob=0.5", "column 1: delay needs us="},
           {"linkdown a=0 b=1 from_us=5 until_us=5", "from_us < until_us"},
           {"crash at_us=3", "crash needs node="},
           {"drop psn", "column 6: expected key=value, got 'psn'"},
       }) {
    auto plan = ParseFaults(c.text);
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_EQ(ErrnoOf(plan.status()), EINVAL);
    EXPECT_THAT(std::string(plan.status().message()), HasSubstr(c.says))
        << c.text;
  }
}

TEST(FaultText, BadTextAddsNothing) {
  Wired w = Connect();
  EXPECT_FALSE(w.fabric->AddFaults("drop nth=1; drop nth=x").ok());
  EXPECT_TRUE(w.fabric->PacketRules().empty());
  EXPECT_FALSE(w.fabric->AddFaults("crash node=9").ok());
}

// Lumina example 1: the third packet of a ten-packet write is lost. The
// responder NAKs the gap once (PSN sequence error) and drops what follows;
// the requester goes back to PSN 2 and sends 2..9 again.
TEST(FaultRecovery, DropThirdPacketOfTenPacketWriteIsGoBackN) {
  Wired w = Connect();
  ASSERT_TRUE(w.fabric->AddFaults("drop op=RDMA_WRITE_MIDDLE psn=2 nth=1").ok());
  std::vector<char> src(10 * 1024), dst(10 * 1024);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 13);
  auto smr = w.eps.client->RegMsgs(src.data(), src.size());
  auto dmr = w.eps.server->RegWrite(dst.data(), dst.size());
  ASSERT_TRUE(w.eps.client
                  ->PostWrite(1, src.data(), src.size(), smr->get(),
                              kSendSignaled,
                              reinterpret_cast<uint64_t>(dst.data()),
                              (*dmr)->rkey())
                  .ok());
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok()) << wc.status();
  EXPECT_EQ(wc->status, WcStatus::kSuccess);
  EXPECT_EQ(src, dst);
  EXPECT_THAT(Arrivals(*w.fabric),
              ElementsAre("P0", "P1", "xP2", "P3", "P4", "P5", "P6", "P7",
                          "P8", "P9", "NAK-SEQ 2", "P2", "P3", "P4", "P5",
                          "P6", "P7", "P8", "P9", "ACK 9"))
      << w.fabric->TraceText();
}

// Lumina example 2: the only ACK is lost. The requester's ACK timer fires,
// the send goes again, the responder sees a duplicate, does not deliver it a
// second time, and ACKs again.
TEST(FaultRecovery, DropTheAckIsTimeoutAndDuplicateDetection) {
  EndpointAttr attr;
  attr.timeout = 10;  // 4.2 ms
  Wired w = Connect(attr);
  ASSERT_TRUE(w.fabric->AddFaults("drop op=ACK nth=1").ok());
  char src[32] = "once only", dst[2][32] = {};
  auto smr = w.eps.client->RegMsgs(src, sizeof(src));
  auto dmr = w.eps.server->RegMsgs(dst, sizeof(dst));
  ASSERT_TRUE(w.eps.server->PostRecv(1, dst[0], 32, dmr->get()).ok());
  ASSERT_TRUE(w.eps.server->PostRecv(2, dst[1], 32, dmr->get()).ok());
  const absl::Duration t0 = w.fabric->Now();
  ASSERT_TRUE(
      w.eps.client->PostSend(7, src, 10, smr->get(), kSendSignaled).ok());
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok()) << wc.status();
  EXPECT_EQ(wc->status, WcStatus::kSuccess);
  EXPECT_GE(w.fabric->Now() - t0, absl::Nanoseconds(4096 << 10));
  EXPECT_THAT(Arrivals(*w.fabric), ElementsAre("P0", "xACK 0", "P0", "ACK 0"));
  EXPECT_EQ(Count(*w.fabric, TraceKind::kTimeout), 1);
  auto rc = w.eps.server->GetRecvComp();
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(rc->wr_id, 1u);
  EXPECT_STREQ(dst[0], "once only");
  // The duplicate did not consume the second receive.
  EXPECT_EQ(w.eps.server->GetRecvComp(absl::Milliseconds(20)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

// Lumina example 3: a send with no receive posted and rnr_retry 2: three RNR
// NAKs, then RNR_RETRY_EXC_ERR.
TEST(FaultRecovery, RnrRetryTwoIsThreeRnrNaksThenError) {
  EndpointAttr attr;
  attr.rnr_retry = 2;
  attr.min_rnr_timer = 1;  // 0.01 ms
  Wired w = Connect(attr);
  char src[8] = "x";
  auto smr = w.eps.client->RegMsgs(src, sizeof(src));
  ASSERT_TRUE(
      w.eps.client->PostSend(1, src, 8, smr->get(), kSendSignaled).ok());
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kRnrRetryExcErr);
  EXPECT_THAT(Arrivals(*w.fabric),
              ElementsAre("P0", "RNR 0", "P0", "RNR 0", "P0", "RNR 0"));
  EXPECT_EQ(Count(*w.fabric, TraceKind::kRnrWait), 2);
}

// Lumina example 4: a read response arrives corrupted. The receiver drops it
// on the ICRC and counts it; the requester sees the gap and asks again for
// the rest; the data arrives intact.
TEST(FaultRecovery, CorruptedReadResponseIsReadAgain) {
  Wired w = Connect();
  ASSERT_TRUE(w.fabric->AddFaults("corrupt op=RDMA_READ_RESPONSE_MIDDLE").ok());
  std::vector<char> remote(3000), local(3000, 0);
  for (size_t i = 0; i < remote.size(); ++i) remote[i] = static_cast<char>(i);
  auto lmr = w.eps.client->RegMsgs(local.data(), local.size());
  auto rmr = w.eps.server->RegRead(remote.data(), remote.size());
  ASSERT_TRUE(w.eps.client
                  ->PostRead(1, local.data(), local.size(), lmr->get(),
                             kSendSignaled,
                             reinterpret_cast<uint64_t>(remote.data()),
                             (*rmr)->rkey())
                  .ok());
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kSuccess);
  EXPECT_EQ(local, remote);
  auto stats = w.fabric->GetNodeStats(0);
  ASSERT_TRUE(stats.ok());
  // The middle response is corrupted every time it is sent: once in the first
  // answer; the retried read starts at PSN 1 and its FIRST is fine.
  EXPECT_GE(stats->icrc_errors, 1u);
  EXPECT_THAT(Arrivals(*w.fabric),
              ::testing::IsSupersetOf({"xR1", "R0", "R2"}));
}

// A READ's response is lost and the WRITE after it is NAKed: the NAK's PSN
// is past the READ, so the response is missing and the requester retries
// the READ first (implied NAK, IBA 9.7.5.1.3) instead of waiting for it
// forever. The responder went to ERR with the NAK, so the retries go
// unanswered: the READ ends RETRY_EXC_ERR and the WRITE is flushed.
TEST(FaultRecovery, LostReadResponseBeforeANakIsRetriedNotAwaited) {
  EndpointAttr attr;
  attr.retry_cnt = 2;
  Wired w = Connect(attr);
  ASSERT_TRUE(w.fabric->AddFaults("drop op=RDMA_READ_RESPONSE_ONLY nth=1").ok());
  std::vector<char> remote(64, 7), local(64, 0);
  auto lmr = w.eps.client->RegMsgs(local.data(), local.size());
  auto rmr = w.eps.server->RegRead(remote.data(), remote.size());
  ASSERT_TRUE(lmr.ok() && rmr.ok());
  ASSERT_TRUE(w.eps.client
                  ->PostRead(1, local.data(), local.size(), lmr->get(),
                             kSendSignaled,
                             reinterpret_cast<uint64_t>(remote.data()),
                             (*rmr)->rkey())
                  .ok());
  ASSERT_TRUE(w.eps.client
                  ->PostWrite(2, local.data(), 8, lmr->get(), kSendSignaled,
                              reinterpret_cast<uint64_t>(remote.data()),
                              (*rmr)->rkey() ^ 0x1000)
                  .ok());
  auto first = w.eps.client->GetSendComp();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->wr_id, 1u);
  EXPECT_EQ(first->status, WcStatus::kRetryExcErr);
  auto second = w.eps.client->GetSendComp();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->wr_id, 2u);
  EXPECT_EQ(second->status, WcStatus::kWrFlushErr);
  EXPECT_THAT(Arrivals(*w.fabric),
              ::testing::IsSupersetOf({"xR0", "NAK 1", "P0"}));
}

TEST(FaultActions, DuplicatedAtomicIsAppliedOnce) {
  Wired w = Connect();
  ASSERT_TRUE(w.fabric->AddFaults("dup op=FETCH_ADD; dup op=ATOMIC_ACKNOWLEDGE").ok());
  alignas(8) uint64_t counter = 5, old = 0;
  auto cmr = w.eps.server->RegMr(&counter, 8,
                                 kAccessLocalWrite | kAccessRemoteAtomic);
  auto omr = w.eps.client->RegMsgs(&old, 8);
  Sge sge{reinterpret_cast<uint64_t>(&old), 8, (*omr)->lkey()};
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kAtomicFetchAndAdd;
  wr.sg_list = {&sge, 1};
  wr.send_flags = kSendSignaled;
  wr.atomic.remote_addr = reinterpret_cast<uint64_t>(&counter);
  wr.atomic.rkey = (*cmr)->rkey();
  wr.atomic.compare_add = 10;
  ASSERT_TRUE(w.eps.client->Post(wr).ok());
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kSuccess);
  w.fabric->RunUntilIdle();
  EXPECT_EQ(counter, 15u);
  EXPECT_EQ(old, 5u);
}

TEST(FaultActions, ReorderedPacketsAreRecoveredInOrder) {
  Wired w = Connect();
  ASSERT_TRUE(w.fabric->AddFaults("reorder op=SEND_MIDDLE nth=1").ok());
  std::vector<char> src(4096), dst(4096, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7);
  auto smr = w.eps.client->RegMsgs(src.data(), src.size());
  auto dmr = w.eps.server->RegMsgs(dst.data(), dst.size());
  ASSERT_TRUE(w.eps.server->PostRecv(1, dst.data(), dst.size(), dmr->get()).ok());
  ASSERT_TRUE(w.eps.client
                  ->PostSend(1, src.data(), src.size(), smr->get(),
                             kSendSignaled)
                  .ok());
  auto rc = w.eps.server->GetRecvComp();
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(rc->status, WcStatus::kSuccess);
  EXPECT_EQ(rc->byte_len, 4096u);
  EXPECT_EQ(src, dst);
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kSuccess);
  EXPECT_EQ(w.fabric->PacketRules()[0].fired, 1u);
}

TEST(FaultActions, LinkDownLongerThanTheRetriesIsRetryExcErr) {
  EndpointAttr attr;
  attr.timeout = 8;  // 1 ms
  attr.retry_cnt = 2;
  Wired w = Connect(attr);
  ASSERT_TRUE(
      w.fabric->AddFaults("linkdown a=0 b=1 from_us=0 until_us=100000").ok());
  char src[8] = "x";
  auto smr = w.eps.client->RegMsgs(src, sizeof(src));
  ASSERT_TRUE(
      w.eps.client->PostSend(1, src, 8, smr->get(), kSendSignaled).ok());
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kRetryExcErr);
  EXPECT_EQ(Count(*w.fabric, TraceKind::kTimeout), 3);
}

TEST(FaultActions, LinkDownShorterThanTheRetriesRecovers) {
  EndpointAttr attr;
  attr.timeout = 8;  // 1 ms
  attr.retry_cnt = 7;
  Wired w = Connect(attr);
  ASSERT_TRUE(
      w.fabric->AddFaults("linkdown a=0 b=1 from_us=0 until_us=2500").ok());
  char src[8] = "x", dst[8];
  auto smr = w.eps.client->RegMsgs(src, sizeof(src));
  auto dmr = w.eps.server->RegWrite(dst, sizeof(dst));
  ASSERT_TRUE(w.eps.client
                  ->PostWrite(1, src, 8, smr->get(), kSendSignaled,
                              reinterpret_cast<uint64_t>(dst), (*dmr)->rkey())
                  .ok());
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kSuccess);
  EXPECT_GE(Count(*w.fabric, TraceKind::kTimeout), 2);
}

TEST(FaultActions, CrashedPeerMeansTimeoutsAndLocalQpsFatal) {
  EndpointAttr attr;
  attr.timeout = 8;
  attr.retry_cnt = 1;
  Wired w = Connect(attr);
  ASSERT_TRUE(w.fabric->AddFaults("crash node=1").ok());
  char src[8] = "x", dst[8];
  auto smr = w.eps.client->RegMsgs(src, sizeof(src));
  auto dmr = w.eps.server->RegMsgs(dst, sizeof(dst));
  ASSERT_TRUE(w.eps.server->PostRecv(5, dst, 8, dmr->get()).ok());
  ASSERT_TRUE(
      w.eps.client->PostSend(1, src, 8, smr->get(), kSendSignaled).ok());
  auto wc = w.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kRetryExcErr);
  // On the crashed node: the QP is in ERR, its receive flushed, QP_FATAL.
  EXPECT_EQ(w.eps.server->qp()->state(), QpState::kErr);
  auto rc = w.eps.server->GetRecvComp();
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(rc->status, WcStatus::kWrFlushErr);
  auto ev = w.eps.server->context()->GetAsyncEvent(absl::Milliseconds(10));
  ASSERT_TRUE(ev.ok()) << ev.status();
  EXPECT_EQ(ev->type, AsyncEventType::kQpFatal);
  EXPECT_EQ(ev->qp_num, w.eps.server->qp()->qp_num());
}

TEST(FaultActions, QpErrorAtATime) {
  Wired w = Connect();
  const uint32_t qpn = w.eps.client->qp()->qp_num();
  ASSERT_TRUE(w.fabric
                  ->AddFaults(absl::StrCat("qperr node=0 qp=", qpn,
                                           " at_us=50"))
                  .ok());
  w.fabric->RunFor(absl::Microseconds(60));
  EXPECT_EQ(w.eps.client->qp()->state(), QpState::kErr);
  auto ev = w.eps.client->context()->GetAsyncEvent(absl::Milliseconds(1));
  ASSERT_TRUE(ev.ok());
  EXPECT_EQ(ev->type, AsyncEventType::kQpFatal);
}

TEST(FaultActions, ForcedCqOverflowIsCqErrAndQpToErr) {
  Wired w = Connect();
  const uint32_t qpn = w.eps.server->qp()->qp_num();
  ASSERT_TRUE(w.fabric
                  ->AddFaults(absl::StrCat("cqoverflow node=1 qp=", qpn,
                                           " cq=recv at_us=10"))
                  .ok());
  char buf[8];
  auto mr = w.eps.server->RegMsgs(buf, sizeof(buf));
  ASSERT_TRUE(w.eps.server->PostRecv(1, buf, 8, mr->get()).ok());
  w.fabric->RunFor(absl::Microseconds(20));
  EXPECT_EQ(w.eps.server->qp()->state(), QpState::kErr);
  auto ev = w.eps.server->context()->GetAsyncEvent(absl::Milliseconds(1));
  ASSERT_TRUE(ev.ok()) << ev.status();
  EXPECT_EQ(ev->type, AsyncEventType::kCqErr);
  // The CQ is in error: the flushed receive is lost with it.
  WorkCompletion wc;
  EXPECT_EQ(*w.eps.server->recv_cq()->Poll({&wc, 1}), 0);
  EXPECT_NE(w.fabric->TraceText().find("receive CQ overflows"),
            std::string::npos);
}

// The trace of 8 signaled 4 KiB writes with `faults` added after connecting.
std::string WritesUnder(const std::string& faults) {
  Wired w = Connect();
  EXPECT_TRUE(w.fabric->AddFaults(faults).ok()) << faults;
  std::vector<char> src(4096, 'x'), dst(4096);
  auto smr = *w.eps.client->RegMsgs(src.data(), src.size());
  auto dmr = *w.eps.server->RegWrite(dst.data(), dst.size());
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(w.eps.client
                    ->PostWrite(i, src.data(), src.size(), smr.get(),
                                kSendSignaled,
                                reinterpret_cast<uint64_t>(dst.data()),
                                dmr->rkey())
                    .ok());
  }
  w.fabric->RunUntilIdle();
  return w.fabric->TraceText();
}

// Each component draws from a stream of its own (Fabric::Streams): a rule
// whose draws never fire leaves every other draw, and so the whole run, as
// it was; one that fires changes the run.
TEST(FaultStreams, ARuleThatNeverFiresChangesNothing) {
  const std::string plain = WritesUnder("");
  // prob=0: the rule matches every packet and draws for each, never firing.
  EXPECT_EQ(WritesUnder("drop prob=0"), plain);
  EXPECT_EQ(WritesUnder("dup prob=0; delay us=3 prob=0"), plain);
  EXPECT_NE(WritesUnder("drop prob=0.5"), plain);
}

TEST(FaultActions, RegistrationAndPostFailOnTheNthCall) {
  Wired w = Connect();
  ASSERT_TRUE(w.fabric->AddFaults("regfail nth=2; postfail nth=2").ok());
  char buf[64];
  auto first = w.eps.client->RegMsgs(buf, 32);
  ASSERT_TRUE(first.ok());
  auto second = w.eps.client->RegMsgs(buf, 32);
  EXPECT_EQ(ErrnoOf(second.status()), ENOMEM);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("injected"));
  auto third = w.eps.client->RegMsgs(buf, 32);
  ASSERT_TRUE(third.ok());
  ASSERT_TRUE(w.eps.server->PostRecv(1, buf, 32, third->get()).ok());
  absl::Status failed = w.eps.server->PostRecv(2, buf, 32, third->get());
  EXPECT_EQ(ErrnoOf(failed), ENOMEM);
  EXPECT_TRUE(w.eps.server->PostRecv(3, buf, 32, third->get()).ok());
  // Send posts count too (found by //fuzz:sequence_fuzzer).
  ASSERT_TRUE(w.fabric->AddFaults("postfail nth=4").ok());
  EXPECT_EQ(ErrnoOf(w.eps.client->PostSend(4, buf, 8, third->get(),
                                           kSendSignaled)),
            ENOMEM);
  int recorded = 0;
  for (const TraceRecord& r : w.fabric->TraceRecords()) {
    recorded += r.note == "fault: registration fails (regfail)" ||
                r.note == "fault: post fails (postfail)";
  }
  EXPECT_EQ(recorded, 3) << w.fabric->TraceText();
}

}  // namespace
}  // namespace verbsim::sim
