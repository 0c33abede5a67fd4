// UC: connected like RC, unreliable like UD. Nothing is acknowledged: a WR
// completes once its packets are sent, and whatever the responder cannot
// take (a bad rkey, a QP without REMOTE_WRITE, no receive posted) is dropped
// silently (IBA 9.8.3; kernel rxe rxe_resp.c). Reads, atomics and
// invalidation are not carried (ibv_post_send(3), IBA table 30).
#include <cstdint>
#include <memory>
#include <ostream>
#include <vector>

#include "core/names.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

using ::testing::IsEmpty;

constexpr size_t kBuf = 16384;

// A message size in path MTUs plus bytes: {"MtuPlusOne", 1, 1} is MTU + 1.
struct UcSize {
  const char* name;
  uint32_t mtus;
  uint32_t extra;
};
void PrintTo(const UcSize& s, std::ostream* os) { *os << s.name; }

// Two UC QPs in RTS, connected to each other: qa_ on device 0 (the sender)
// and qb_ on device 1 (the receiver), a registered buffer on each side (the
// receiver's with REMOTE_WRITE).
template <typename Base>
class UcFixture : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    if (this->IsSkipped() || this->HasFatalFailure()) return;
    if (!this->expect().has_uc) GTEST_SKIP() << "the provider has no UC QPs";
    ASSERT_OK_AND_ASSIGN(a_, this->OpenSide(0));
    ASSERT_OK_AND_ASSIGN(b_, this->OpenSide(1));
    ASSERT_OK_AND_ASSIGN(qa_, CreateQpOn(*a_, QpType::kUc));
    ASSERT_OK_AND_ASSIGN(qb_, CreateQpOn(*b_, QpType::kUc));
    ASSERT_OK(ConnectQps(qa_.get(), a_->gid, qb_.get(), b_->gid,
                         kAccessLocalWrite | kAccessRemoteWrite));
    ASSERT_OK_AND_ASSIGN(mra_, a_->pd->RegMr(abuf_.data(), kBuf,
                                             kAccessLocalWrite));
    ASSERT_OK_AND_ASSIGN(
        mrb_, b_->pd->RegMr(bbuf_.data(), kBuf,
                            kAccessLocalWrite | kAccessRemoteWrite));
  }

  // Payload bytes per packet on the connection.
  uint32_t Mtu() const {
    absl::StatusOr<QpAttr> attr = qa_->Query();
    return attr.ok() ? static_cast<uint32_t>(MtuBytes(attr->path_mtu)) : 0;
  }
  // Posts a receive of `len` bytes at `offset` of the receiver's buffer.
  absl::Status PostRecvB(uint64_t wr_id, uint32_t len, size_t offset = 0) {
    Sge sge = SgeOf(*mrb_, offset, len);
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = {&sge, 1};
    return qb_->PostRecv(wr);
  }
  // Sends `len` bytes from the start of the sender's buffer.
  absl::Status SendA(uint64_t wr_id, uint32_t len,
                     WrOpcode opcode = WrOpcode::kSend) {
    Sge sge = SgeOf(*mra_, 0, len);
    SendWr wr = MakeWr(opcode, wr_id, {&sge, 1});
    wr.imm_data = 0xc0ffee;
    return qa_->PostSend(wr);
  }
  // Writes `len` bytes from the start of the sender's buffer to `offset` of
  // the receiver's, with `rkey` (the receiver's MR unless given).
  absl::Status WriteA(uint64_t wr_id, uint32_t len,
                      WrOpcode opcode = WrOpcode::kRdmaWrite,
                      size_t offset = 0, uint32_t rkey = 0) {
    Sge sge = SgeOf(*mra_, 0, len);
    SendWr wr = MakeWr(opcode, wr_id, {&sge, 1});
    wr.imm_data = 0xc0ffee;
    wr.rdma.remote_addr = bbuf_.addr(offset);
    wr.rdma.rkey = rkey != 0 ? rkey : mrb_->rkey();
    return qa_->PostSend(wr);
  }
  // Sends an empty message into receive `wr_id` and waits for it: UC keeps
  // the order of one QP's messages, so what was sent before has landed.
  // Consumes the send's completion too.
  void Fence(uint64_t wr_id) {
    ASSERT_OK(PostRecvB(wr_id, 0, kBuf - 64));
    ASSERT_OK(SendA(wr_id, 0));
    ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
    ASSERT_THAT(rwc, WcOk(wr_id, WcOpcode::kRecv)) << rwc;
    ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
    ASSERT_THAT(swc, WcOk(wr_id, WcOpcode::kSend)) << swc;
  }
  // The receiving QP's counters, where the provider keeps them per QP
  // (Expectations::counts_per_qp).
  QpCounters CountersB() const {
    absl::StatusOr<QpCounters> c = qb_->QueryCounters();
    EXPECT_EQ(c.ok(), this->expect().counts_per_qp) << c.status();
    return c.ok() ? *c : QpCounters{};
  }

  std::unique_ptr<Side> a_, b_;
  std::unique_ptr<Qp> qa_, qb_;
  Buffer abuf_{kBuf}, bbuf_{kBuf};
  std::unique_ptr<Mr> mra_, mrb_;
};

class UcTest : public UcFixture<ProviderTest> {};
class UcSizeTest : public UcFixture<ProviderTestWithParam<UcSize>> {
 protected:
  uint32_t Bytes() const { return param().mtus * Mtu() + param().extra; }
};


TEST_P(UcSizeTest, SendArrivesIntact) {
  const uint32_t len = Bytes();
  ASSERT_LE(len + 64, kBuf);
  abuf_.FillPattern(static_cast<uint8_t>(len));
  ASSERT_OK(PostRecvB(1, len + 64));
  ASSERT_OK(SendA(2, len));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  ASSERT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, len);
  EXPECT_EQ(rwc.qp_num, qb_->qp_num());
  EXPECT_EQ(bbuf_.Bytes(0, len), abuf_.Bytes(0, len));
  EXPECT_EQ(bbuf_.Bytes(len, 64), std::vector<uint8_t>(64, 0));
}

TEST_P(UcSizeTest, WriteLandsIntactWithoutAReceive) {
  const uint32_t len = Bytes();
  abuf_.FillPattern(static_cast<uint8_t>(len + 1));
  ASSERT_OK(WriteA(3, len));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(3u, WcOpcode::kRdmaWrite)) << swc;
  Fence(4);
  EXPECT_EQ(bbuf_.Bytes(0, len), abuf_.Bytes(0, len));
  EXPECT_EQ(bbuf_[len], 0) << "wrote past the end";
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty()) << "a write consumed a receive";
}

TEST_P(UcSizeTest, WriteWithImmediateCompletesAReceive) {
  const uint32_t len = Bytes();
  abuf_.FillPattern(static_cast<uint8_t>(len + 2));
  ASSERT_OK(PostRecvB(1, 0, kBuf - 64));
  ASSERT_OK(WriteA(5, len, WrOpcode::kRdmaWriteWithImm));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(5u, WcOpcode::kRdmaWrite)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  ASSERT_THAT(rwc, WcOk(1u, WcOpcode::kRecvRdmaWithImm)) << rwc;
  EXPECT_NE(rwc.wc_flags & kWcWithImm, 0u);
  EXPECT_EQ(rwc.imm_data, 0xc0ffeeu);
  // byte_len is the length of the write, not of the (empty) receive.
  EXPECT_EQ(rwc.byte_len, len);
  EXPECT_EQ(bbuf_.Bytes(0, len), abuf_.Bytes(0, len));
}

TEST_P(UcTest, SendWithImmediateCarriesIt) {
  ASSERT_OK(PostRecvB(1, 16));
  ASSERT_OK(SendA(2, 16, WrOpcode::kSendWithImm));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  ASSERT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_NE(rwc.wc_flags & kWcWithImm, 0u);
  EXPECT_EQ(rwc.imm_data, 0xc0ffeeu);
  EXPECT_EQ(rwc.byte_len, 16u);
}

// A bad rkey is dropped by the responder, with no NAK to tell the requester:
// the requester completes SUCCESS, the responder QP stays in RTS, and the
// next good write lands.
TEST_P(UcTest, BadRkeyWriteIsDroppedSilently) {
  abuf_.FillPattern(7, 0, 256);
  ASSERT_OK(WriteA(1, 256, WrOpcode::kRdmaWrite, 0, BadKey(mrb_->rkey())));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kRdmaWrite)) << swc;
  Fence(9);
  EXPECT_EQ(bbuf_.Bytes(0, 256), std::vector<uint8_t>(256, 0));
  EXPECT_EQ(qa_->state(), QpState::kRts);
  EXPECT_EQ(qb_->state(), QpState::kRts);
  if (expect().counts_per_qp) {
    EXPECT_EQ(CountersB().msg_drops, 1u);
  }
  ASSERT_OK(WriteA(2, 256));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc2, Await(a_->cq.get()));
  EXPECT_THAT(swc2, WcOk(2u, WcOpcode::kRdmaWrite)) << swc2;
  Fence(10);
  EXPECT_EQ(bbuf_.Bytes(0, 256), abuf_.Bytes(0, 256));
}

// A write with immediate and a bad rkey is dropped before it takes a
// receive: the receive is still there for the next message.
TEST_P(UcTest, BadRkeyWriteWithImmediateLeavesTheReceivePosted) {
  ASSERT_OK(PostRecvB(1, 64));
  ASSERT_OK(WriteA(2, 32, WrOpcode::kRdmaWriteWithImm, 0,
                   BadKey(mrb_->rkey())));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kRdmaWrite)) << swc;
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
  ASSERT_OK(SendA(3, 8));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, 8u);
}

// A write beyond the end of the remote MR fails the rkey check: dropped.
TEST_P(UcTest, WriteOutsideTheRemoteMrIsDropped) {
  abuf_.FillPattern(3, 0, 128);
  ASSERT_OK(WriteA(1, 128, WrOpcode::kRdmaWrite, kBuf - 64));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kRdmaWrite)) << swc;
  Fence(2);
  EXPECT_EQ(bbuf_.Bytes(kBuf - 64, 64), std::vector<uint8_t>(64, 0));
  EXPECT_EQ(qb_->state(), QpState::kRts);
}

// A remote MR registered without REMOTE_WRITE: dropped.
TEST_P(UcTest, WriteToAnMrWithoutRemoteWriteIsDropped) {
  Buffer target(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> ro,
                       b_->pd->RegMr(target.data(), 4096, kAccessLocalWrite));
  abuf_.FillPattern(4, 0, 64);
  Sge sge = SgeOf(*mra_, 0, 64);
  SendWr wr = MakeWr(WrOpcode::kRdmaWrite, 1, {&sge, 1});
  wr.rdma.remote_addr = target.addr();
  wr.rdma.rkey = ro->rkey();
  ASSERT_OK(qa_->PostSend(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kRdmaWrite)) << swc;
  Fence(2);
  EXPECT_EQ(target.Bytes(0, 64), std::vector<uint8_t>(64, 0));
  EXPECT_EQ(qb_->state(), QpState::kRts);
}

// The responder QP lacks REMOTE_WRITE: writes to it are dropped; sends
// still arrive.
TEST_P(UcTest, QpWithoutRemoteWriteDropsWrites) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qa2, CreateQpOn(*a_, QpType::kUc));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qb2, CreateQpOn(*b_, QpType::kUc));
  ASSERT_OK(ConnectQps(qa2.get(), a_->gid, qb2.get(), b_->gid,
                       kAccessLocalWrite));
  abuf_.FillPattern(5, 0, 64);
  Sge sge = SgeOf(*mra_, 0, 64);
  SendWr wr = MakeWr(WrOpcode::kRdmaWrite, 1, {&sge, 1});
  wr.rdma.remote_addr = bbuf_.addr();
  wr.rdma.rkey = mrb_->rkey();
  ASSERT_OK(qa2->PostSend(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kRdmaWrite)) << swc;
  // A send behind it arrives: the write was dropped, not delayed.
  Sge rsge = SgeOf(*mrb_, 8192, 64);
  RecvWr rwr;
  rwr.wr_id = 7;
  rwr.sg_list = {&rsge, 1};
  ASSERT_OK(qb2->PostRecv(rwr));
  SendWr send = MakeWr(WrOpcode::kSend, 2, {&sge, 1});
  ASSERT_OK(qa2->PostSend(send));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  EXPECT_THAT(rwc, WcOk(7u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(bbuf_.Bytes(0, 64), std::vector<uint8_t>(64, 0));
  EXPECT_EQ(bbuf_.Bytes(8192, 64), abuf_.Bytes(0, 64));
  EXPECT_EQ(qb2->state(), QpState::kRts);
}

// No receive posted: the message is dropped, never RNR; the requester
// completes SUCCESS; a later send with a receive posted arrives.
TEST_P(UcTest, NoReceivePostedDropsTheSend) {
  abuf_.FillPattern(6, 0, 32);
  ASSERT_OK(SendA(1, 32));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kSend)) << swc;
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
  EXPECT_EQ(qb_->state(), QpState::kRts);
  EXPECT_EQ(qa_->state(), QpState::kRts);
  if (expect().counts_per_qp) {
    const QpCounters st = CountersB();
    EXPECT_EQ(st.no_recv_drops, 1u);
    EXPECT_EQ(st.naks_sent, 0u);
  }
  ASSERT_OK(PostRecvB(2, 32));
  ASSERT_OK(SendA(3, 32));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  EXPECT_THAT(rwc, WcOk(2u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(bbuf_.Bytes(0, 32), abuf_.Bytes(0, 32));
}

// A write with immediate needs a receive for its completion; without one
// the message is dropped (no RNR) and the QPs stay in RTS.
TEST_P(UcTest, WriteWithImmediateWithoutAReceiveIsDropped) {
  ASSERT_OK(WriteA(1, 16, WrOpcode::kRdmaWriteWithImm));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kRdmaWrite)) << swc;
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
  EXPECT_EQ(qb_->state(), QpState::kRts);
  ASSERT_OK(PostRecvB(2, 0));
  ASSERT_OK(WriteA(3, 16, WrOpcode::kRdmaWriteWithImm));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  EXPECT_THAT(rwc, WcOk(2u, WcOpcode::kRecvRdmaWithImm)) << rwc;
}

// A receive too small for the message: the receiver completes it in error
// and its QP goes to ERR (expectations: uc_recv_too_small_receiver); the
// requester, told nothing, completes SUCCESS and stays in RTS.
TEST_P(UcTest, ReceiveTooSmallFailsTheReceiver) {
  ASSERT_OK(PostRecvB(1, 16));
  ASSERT_OK(PostRecvB(2, 64, 64));
  ASSERT_OK(SendA(3, 32));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(3u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> r,
                       AwaitN(b_->cq.get(), 2));
  EXPECT_EQ(r[0].wr_id, 1u);
  EXPECT_THAT(r[0], WcStatusIn(expect().uc_recv_too_small_receiver)) << r[0];
  EXPECT_THAT(r[1], WcFlushed(2u)) << r[1];
  EXPECT_EQ(qb_->state(), QpState::kErr);
  EXPECT_EQ(qa_->state(), QpState::kRts);
}

// Receives complete in post order, one per message.
TEST_P(UcTest, ReceivesCompleteInPostOrder) {
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_OK(PostRecvB(10 + i, 64, i * 64));
  }
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_OK(SendA(20 + i, static_cast<uint32_t>(8 * (i + 1))));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> r,
                       AwaitN(b_->cq.get(), 4));
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_THAT(r[i], WcOk(10 + i, WcOpcode::kRecv)) << r[i];
    EXPECT_EQ(r[i].byte_len, 8 * (i + 1));
  }
}

// A receive with two SGEs is filled in order.
TEST_P(UcTest, SendScattersOverTwoSges) {
  abuf_.FillPattern(8, 0, 100);
  Sge sges[2] = {SgeOf(*mrb_, 0, 40), SgeOf(*mrb_, 4096, 60)};
  RecvWr rwr;
  rwr.wr_id = 1;
  rwr.sg_list = sges;
  ASSERT_OK(qb_->PostRecv(rwr));
  ASSERT_OK(SendA(2, 100));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  ASSERT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, 100u);
  EXPECT_EQ(bbuf_.Bytes(0, 40), abuf_.Bytes(0, 40));
  EXPECT_EQ(bbuf_.Bytes(4096, 60), abuf_.Bytes(40, 60));
}

// Unsignaled WRs complete silently; a signaled one behind them completes.
TEST_P(UcTest, UnsignaledSendsLeaveNoCompletion) {
  ASSERT_OK(PostRecvB(1, 8));
  ASSERT_OK(PostRecvB(2, 8, 64));
  Sge sge = SgeOf(*mra_, 0, 8);
  SendWr quiet = MakeWr(WrOpcode::kSend, 3, {&sge, 1}, 0);
  ASSERT_OK(qa_->PostSend(quiet));
  ASSERT_OK(SendA(4, 8));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(4u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> r,
                       AwaitN(b_->cq.get(), 2));
  EXPECT_EQ(r[0].wr_id, 1u);
  EXPECT_EQ(r[1].wr_id, 2u);
  EXPECT_THAT(Drain(a_->cq.get()), IsEmpty());
}

// An opcode UC does not carry fails the QP; the WRs behind it are flushed.
TEST_P(UcTest, WrsAfterAnUnsupportedOpcodeAreFlushed) {
  Sge sge = SgeOf(*mra_, 0, 8);
  SendWr wrs[2] = {MakeWr(WrOpcode::kRdmaRead, 1, {&sge, 1}),
                   MakeWr(WrOpcode::kSend, 2, {&sge, 1})};
  wrs[0].rdma.remote_addr = bbuf_.addr();
  wrs[0].rdma.rkey = mrb_->rkey();
  ASSERT_OK(qa_->PostSend(wrs));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> s,
                       AwaitN(a_->cq.get(), 2));
  EXPECT_EQ(s[0].wr_id, 1u);
  EXPECT_THAT(s[0], WcStatusIs(WcStatus::kLocQpOpErr)) << s[0];
  EXPECT_THAT(s[1], WcFlushed(2u)) << s[1];
  EXPECT_EQ(qa_->state(), QpState::kErr);
}

// Moving a UC QP to ERR flushes its posted receives.
TEST_P(UcTest, ErrorFlushesPostedReceives) {
  ASSERT_OK(PostRecvB(1, 8));
  ASSERT_OK(PostRecvB(2, 8, 64));
  QpStep err = ToStateStep(QpState::kErr);
  ASSERT_OK(qb_->Modify(err.attr, err.mask));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> r,
                       AwaitN(b_->cq.get(), 2));
  EXPECT_THAT(r[0], WcFlushed(1u));
  EXPECT_THAT(r[1], WcFlushed(2u));
}

TEST_P(UcTest, QueryShowsTheConnection) {
  ASSERT_OK_AND_ASSIGN(QpAttr attr, qa_->Query());
  EXPECT_EQ(qa_->type(), QpType::kUc);
  EXPECT_EQ(attr.qp_state, QpState::kRts);
  EXPECT_EQ(attr.dest_qp_num, qb_->qp_num());
  EXPECT_EQ(attr.ah_attr.dgid, b_->gid);
  EXPECT_NE(attr.qp_access_flags & kAccessRemoteWrite, 0u);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(UcTest);

const UcSize kUcSizes[] = {
    {"Zero", 0, 0},       {"One", 0, 1},
    {"Mtu", 1, 0},        {"MtuPlusOne", 1, 1},
    {"ThreeMtusPlus7", 3, 7},
};
INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(UcSizeTest,
                                       ::testing::ValuesIn(kUcSizes));

// Opcodes UC does not carry: accepted by the post, then the WR completes
// LOC_QP_OP_ERR and the QP goes to ERR (rxe_req.c next_opcode); nothing
// reaches the responder.
class UcOpcodeTest : public UcFixture<ProviderTestWithParam<WrOpcode>> {};

TEST_P(UcOpcodeTest, CompletesLocQpOpErr) {
  bbuf_.Store64(0, 42);
  Sge sge = SgeOf(*mra_, 0, 8);
  SendWr wr = MakeWr(param(), 5, {&sge, 1});
  wr.rdma.rkey = mrb_->rkey();
  wr.rdma.remote_addr = bbuf_.addr();
  wr.atomic.rkey = mrb_->rkey();
  wr.atomic.remote_addr = bbuf_.addr();
  wr.atomic.compare_add = 42;
  wr.atomic.swap = 7;
  wr.invalidate_rkey = mrb_->rkey();
  ASSERT_OK(qa_->PostSend(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(a_->cq.get()));
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_THAT(wc, WcStatusIs(WcStatus::kLocQpOpErr)) << wc;
  EXPECT_EQ(qa_->state(), QpState::kErr);
  EXPECT_EQ(qb_->state(), QpState::kRts);
  EXPECT_EQ(bbuf_.Load64(0), 42u);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    UcOpcodeTest,
    ::testing::Values(WrOpcode::kRdmaRead, WrOpcode::kAtomicCmpAndSwp,
                      WrOpcode::kAtomicFetchAndAdd, WrOpcode::kSendWithInv,
                      WrOpcode::kLocalInv));

// The modify-QP masks of UC (docs/semantics.md section 3): INIT->RTR needs AV,
// PATH_MTU, DEST_QPN and RQ_PSN; RTR->RTS needs SQ_PSN. The RC attributes of
// reads, atomics and retries are not UC's: naming one is EINVAL and leaves
// the QP as it was.
struct UcMaskCase {
  const char* name;
  QpState from;    // kInit: the INIT->RTR step; kRtr: the RTR->RTS step
  uint32_t extra;  // the RC-only attribute added to the step
};
void PrintTo(const UcMaskCase& c, std::ostream* os) { *os << c.name; }

// One UC QP in INIT on device 0.
template <typename Base>
class UcInitFixture : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    if (this->IsSkipped() || this->HasFatalFailure()) return;
    if (!this->expect().has_uc) GTEST_SKIP() << "the provider has no UC QPs";
    ASSERT_OK_AND_ASSIGN(side_, this->OpenSide(0));
    ASSERT_OK_AND_ASSIGN(qp_, CreateQpOn(*side_, QpType::kUc));
    QpStep init = ResetToInitStep(kAccessLocalWrite | kAccessRemoteWrite);
    ASSERT_OK(qp_->Modify(init.attr, init.mask));
  }
  // INIT->RTR with UC's required attributes only (a loopback connection).
  QpStep UcRtrStep() const {
    QpStep s = InitToRtrStep(qp_->qp_num(), side_->gid);
    // RoCE: the source GID of the same type as the IPv4-mapped dgid.
    s.attr.ah_attr.sgid_index = side_->gid_index;
    s.mask &= ~(kQpMaxDestRdAtomic | kQpMinRnrTimer);
    return s;
  }
  // RTR->RTS with SQ_PSN only; the RC values stay in the attributes.
  static QpStep UcRtsStep() {
    QpStep s = RtrToRtsStep();
    s.mask = kQpState | kQpSqPsn;
    return s;
  }
  std::unique_ptr<Side> side_;
  std::unique_ptr<Qp> qp_;
};

class UcModifyTest : public UcInitFixture<ProviderTestWithParam<UcMaskCase>> {};
class UcStateTest : public UcInitFixture<ProviderTest> {};

TEST_P(UcModifyTest, RcAttributeIsEinvalAndChangesNothing) {
  if (param().from == QpState::kRtr) {
    QpStep rtr = UcRtrStep();
    ASSERT_OK(qp_->Modify(rtr.attr, rtr.mask));
  }
  QpStep step = param().from == QpState::kInit ? UcRtrStep() : UcRtsStep();
  const QpState to = param().from == QpState::kInit ? QpState::kRtr
                                                    : QpState::kRts;
  EXPECT_THAT(qp_->Modify(step.attr, step.mask | param().extra),
              HasErrno(EINVAL));
  EXPECT_EQ(qp_->state(), param().from);
  ASSERT_OK_AND_ASSIGN(QpAttr attr, qp_->Query());
  EXPECT_EQ(attr.qp_state, param().from);
  // Without it the same step succeeds.
  EXPECT_OK(qp_->Modify(step.attr, step.mask));
  EXPECT_EQ(qp_->state(), to);
}

const UcMaskCase kUcMaskCases[] = {
    {"RtrMaxDestRdAtomic", QpState::kInit, kQpMaxDestRdAtomic},
    {"RtrMinRnrTimer", QpState::kInit, kQpMinRnrTimer},
    {"RtsTimeout", QpState::kRtr, kQpTimeout},
    {"RtsRetryCnt", QpState::kRtr, kQpRetryCnt},
    {"RtsRnrRetry", QpState::kRtr, kQpRnrRetry},
    {"RtsMaxQpRdAtomic", QpState::kRtr, kQpMaxQpRdAtomic},
};
INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(UcModifyTest,
                                       ::testing::ValuesIn(kUcMaskCases));

TEST_P(UcStateTest, RtrAndRtsNeedOnlyUcAttributes) {
  const QpStep rtr = UcRtrStep();
  for (uint32_t required : {kQpAv, kQpPathMtu, kQpDestQpn, kQpRqPsn}) {
    EXPECT_THAT(qp_->Modify(rtr.attr, rtr.mask & ~required), HasErrno(EINVAL))
        << QpAttrMaskName(required);
    EXPECT_EQ(qp_->state(), QpState::kInit);
  }
  EXPECT_OK(qp_->Modify(rtr.attr, rtr.mask));
  const QpStep rts = UcRtsStep();
  EXPECT_THAT(qp_->Modify(rts.attr, kQpState), HasErrno(EINVAL))
      << "RTS without SQ_PSN";
  EXPECT_EQ(qp_->state(), QpState::kRtr);
  EXPECT_OK(qp_->Modify(rts.attr, rts.mask));
  EXPECT_EQ(qp_->state(), QpState::kRts);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(UcStateTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
