// Shared receive queues (ibv_create_srq(3), ibv_post_srq_recv(3),
// ibv_modify_srq(3); IBA 10.2.9): one queue of receive WQEs that several
// QPs consume in post order, its limit event, and the last-WQE-reached event
// of a QP on an SRQ that enters ERR (IBA 11.6.3.2).
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
constexpr uint32_t kSrqWr = 16;

// An SRQ on device 0 (max_wr 16, max_sge 2, not armed) and RC QPs on it,
// each connected to a plain RC QP on device 1 that sends to it. The SRQ
// side's QPs complete on s_->cq, the senders on p_->cq.
template <typename Base>
class SrqFixture : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    if (this->IsSkipped() || this->HasFatalFailure()) return;
    if (!this->expect().has_srq) {
      GTEST_SKIP() << "the provider has no shared receive queues";
    }
    ASSERT_OK_AND_ASSIGN(s_, this->OpenSide(0));
    ASSERT_OK_AND_ASSIGN(p_, this->OpenSide(1));
    SrqAttr attr;
    attr.max_wr = kSrqWr;
    attr.max_sge = 2;
    ASSERT_OK_AND_ASSIGN(srq_, s_->pd->CreateSrq(attr));
    ASSERT_OK_AND_ASSIGN(
        mrr_, s_->pd->RegMr(rbuf_.data(), kBuf,
                            kAccessLocalWrite | kAccessRemoteWrite));
    ASSERT_OK_AND_ASSIGN(mrs_, p_->pd->RegMr(sbuf_.data(), kBuf,
                                             kAccessLocalWrite));
    ASSERT_NO_FATAL_FAILURE(AddPair());
  }

  // One more RC QP on the SRQ and its connected sender.
  void AddPair() {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> rq,
                         CreateQpOn(*s_, QpType::kRc, {16, 16, 2, 2, 64},
                                    srq_.get()));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> sq, CreateQpOn(*p_, QpType::kRc));
    // Through the CM where the provider needs it (iWARP).
    ASSERT_OK(this->ConnectQps(sq.get(), p_->gid, rq.get(), s_->gid));
    rqs_.push_back(std::move(rq));
    sqs_.push_back(std::move(sq));
  }
  // The SRQ's sizes: ibv_query_srq, or where the library has none (libsiw)
  // the sizes asked for, which siw keeps (siw_create_srq rounds max_wr up
  // to a power of two, and 16 is one).
  absl::StatusOr<SrqAttr> Sizes() {
    if (this->expect().queries_srq) return srq_->Query();
    SrqAttr attr;
    attr.max_wr = kSrqWr;
    attr.max_sge = 2;
    return attr;
  }
  // Posts a receive of `len` bytes at `offset` of the SRQ side's buffer.
  absl::Status PostSrq(uint64_t wr_id, uint32_t len, size_t offset = 0) {
    Sge sge = SgeOf(*mrr_, offset, len);
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = {&sge, 1};
    return srq_->PostRecv(wr);
  }
  // Sender `i` sends `len` bytes from the start of its buffer.
  absl::Status SendFrom(size_t i, uint64_t wr_id, uint32_t len,
                        WrOpcode opcode = WrOpcode::kSend) {
    Sge sge = SgeOf(*mrs_, 0, len);
    SendWr wr = MakeWr(opcode, wr_id, {&sge, 1});
    wr.imm_data = 0x5151;
    wr.rdma.remote_addr = rbuf_.addr(8192);
    wr.rdma.rkey = mrr_->rkey();
    return sqs_[i]->PostSend(wr);
  }
  // Sender `i` sends `len` bytes; returns the receive completion.
  absl::StatusOr<WorkCompletion> Deliver(size_t i, uint64_t wr_id,
                                         uint32_t len) {
    if (absl::Status s = SendFrom(i, wr_id, len); !s.ok()) return s;
    absl::StatusOr<WorkCompletion> swc = Await(p_->cq.get());
    if (!swc.ok()) return swc.status();
    return Await(s_->cq.get());
  }
  absl::StatusOr<AsyncEvent> NextEvent(absl::Duration timeout = kTimeout) {
    return s_->context->GetAsyncEvent(timeout);
  }
  absl::Status SetLimit(uint32_t limit) {
    SrqAttr attr;
    attr.srq_limit = limit;
    return srq_->Modify(attr, kSrqLimit);
  }

  std::unique_ptr<Side> s_, p_;
  std::unique_ptr<Srq> srq_;
  std::vector<std::unique_ptr<Qp>> rqs_, sqs_;
  Buffer rbuf_{kBuf}, sbuf_{kBuf};
  std::unique_ptr<Mr> mrr_, mrs_;
};

class SrqTest : public SrqFixture<ProviderTest> {};

TEST_P(SrqTest, SendArrivesThroughTheSrq) {
  sbuf_.FillPattern(1, 0, 100);
  ASSERT_OK(PostSrq(7, 128));
  ASSERT_OK(SendFrom(0, 1, 100));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p_->cq.get()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(s_->cq.get()));
  ASSERT_THAT(rwc, WcOk(7u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, 100u);
  EXPECT_EQ(rwc.qp_num, rqs_[0]->qp_num());
  EXPECT_EQ(rbuf_.Bytes(0, 100), sbuf_.Bytes(0, 100));
}

TEST_P(SrqTest, QueryReturnsTheAttributes) {
  if (!expect().queries_srq) {
    // libsiw has no query_srq.
    EXPECT_THAT(srq_->Query(), HasErrno(EOPNOTSUPP));
    return;
  }
  ASSERT_OK_AND_ASSIGN(SrqAttr attr, srq_->Query());
  // A provider may round the sizes up, never down.
  EXPECT_GE(attr.max_wr, kSrqWr);
  EXPECT_GE(attr.max_sge, 2u);
  EXPECT_EQ(attr.srq_limit, 0u);
  EXPECT_EQ(srq_->pd(), s_->pd.get());
  EXPECT_EQ(rqs_[0]->init_attr().srq, srq_.get());
}

// Several QPs take WQEs from one SRQ in the order they were posted,
// whichever QP a message arrives on.
TEST_P(SrqTest, SeveralQpsConsumeInPostOrder) {
  ASSERT_NO_FATAL_FAILURE(AddPair());
  ASSERT_NO_FATAL_FAILURE(AddPair());
  for (uint64_t i = 0; i < 6; ++i) {
    ASSERT_OK(PostSrq(100 + i, 64, i * 64));
  }
  for (uint64_t i = 0; i < 6; ++i) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Deliver(i % 3, i, 8));
    EXPECT_THAT(rwc, WcOk(100 + i, WcOpcode::kRecv)) << rwc;
    EXPECT_EQ(rwc.qp_num, rqs_[i % 3]->qp_num());
  }
}

// ibv_create_qp(3): with an SRQ the QP's own receive queue does not exist;
// posting to it is EINVAL.
TEST_P(SrqTest, PostRecvOnAQpWithAnSrqIsEinval) {
  Sge sge = SgeOf(*mrr_, 0, 8);
  RecvWr wr;
  wr.wr_id = 1;
  wr.sg_list = {&sge, 1};
  EXPECT_THAT(rqs_[0]->PostRecv(wr), HasErrno(EINVAL));
}

// The receive queue caps are ignored with an SRQ (ibv_create_qp(3)): even
// values over the device's limits are accepted.
TEST_P(SrqTest, ReceiveCapsAreIgnoredWithAnSrq) {
  const DeviceAttr& dev = s_->context->device_attr();
  QpCap cap = {16, static_cast<uint32_t>(dev.max_qp_wr) + 1, 2,
               static_cast<uint32_t>(dev.max_sge) + 1, 0};
  EXPECT_OK(CreateQpOn(*s_, QpType::kRc, cap, srq_.get()).status());
}

TEST_P(SrqTest, SrqOfAnotherContextIsEinval) {
  EXPECT_THAT(CreateQpOn(*p_, QpType::kRc, {16, 16, 2, 2, 64}, srq_.get()),
              HasErrno(EINVAL));
}

TEST_P(SrqTest, DestroyWhileAQpUsesItIsEbusy) {
  EXPECT_THAT(srq_->Destroy(), HasErrno(EBUSY));
  ASSERT_OK(Destroy(rqs_[0]));
  EXPECT_OK(Destroy(srq_));
}

TEST_P(SrqTest, PdWithAnSrqIsBusy) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, s_->context->AllocPd());
  SrqAttr attr;
  attr.max_wr = 4;
  attr.max_sge = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Srq> srq, pd->CreateSrq(attr));
  EXPECT_THAT(pd->Destroy(), HasErrno(EBUSY));
  ASSERT_OK(Destroy(srq));
  EXPECT_OK(Destroy(pd));
}

TEST_P(SrqTest, DestroyedSrqIsGoneForGood) {
  SrqAttr attr;
  attr.max_wr = 4;
  attr.max_sge = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Srq> srq, s_->pd->CreateSrq(attr));
  Srq* raw = srq.get();
  ASSERT_OK(raw->Destroy());
  EXPECT_THAT(raw->Destroy(), HasErrno(EINVAL));
}

// ibv_post_srq_recv(3): too many SGEs is EINVAL; `bad_index` names the WR
// and the ones before it are posted.
TEST_P(SrqTest, TooManySgesIsEinvalAtThatWr) {
  ASSERT_OK_AND_ASSIGN(SrqAttr attr, Sizes());
  // libsiw checks its own fixed limit rather than the SRQ's.
  const uint32_t limit = expect().library_sge_limit != 0
                             ? expect().library_sge_limit
                             : attr.max_sge;
  std::vector<Sge> many(limit + 1, SgeOf(*mrr_, 0, 8));
  Sge one = SgeOf(*mrr_, 0, 64);
  RecvWr wrs[2];
  wrs[0].wr_id = 1;
  wrs[0].sg_list = {&one, 1};
  wrs[1].wr_id = 2;
  wrs[1].sg_list = many;
  size_t bad = 99;
  EXPECT_THAT(srq_->PostRecv(wrs, &bad), HasErrno(EINVAL));
  EXPECT_EQ(bad, 1u);
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Deliver(0, 3, 8));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
}

// A full SRQ: ENOMEM at the first WR that does not fit.
TEST_P(SrqTest, FullSrqIsEnomemAtThatWr) {
  ASSERT_OK_AND_ASSIGN(SrqAttr attr, Sizes());
  Sge sge = SgeOf(*mrr_, 0, 8);
  std::vector<RecvWr> wrs(attr.max_wr + 1);
  for (size_t i = 0; i < wrs.size(); ++i) {
    wrs[i].wr_id = i;
    wrs[i].sg_list = {&sge, 1};
  }
  size_t bad = 0;
  EXPECT_THAT(srq_->PostRecv(wrs, &bad), HasErrno(ENOMEM));
  EXPECT_EQ(bad, attr.max_wr);
  EXPECT_THAT(PostSrq(99, 8), HasErrno(ENOMEM));
}

TEST_P(SrqTest, ModifyLimitOverMaxWrIsEinval) {
  ASSERT_OK_AND_ASSIGN(SrqAttr before, Sizes());
  EXPECT_THAT(SetLimit(before.max_wr + 1), HasErrno(EINVAL));
  if (!expect().queries_srq) return;
  ASSERT_OK_AND_ASSIGN(SrqAttr after, srq_->Query());
  EXPECT_EQ(after.srq_limit, 0u);
  EXPECT_EQ(after.max_wr, before.max_wr);
}

// Resizing (IBV_SRQ_MAX_WR) grows the queue: more WRs fit.
TEST_P(SrqTest, ModifyMaxWrGrowsTheQueue) {
  ASSERT_OK_AND_ASSIGN(SrqAttr before, Sizes());
  SrqAttr attr;
  attr.max_wr = before.max_wr * 2;
  if (!expect().resizes_srq) {
    // libsiw's modify_srq takes the limit only.
    EXPECT_THAT(srq_->Modify(attr, kSrqMaxWr), HasErrno(EOPNOTSUPP));
    return;
  }
  ASSERT_OK(srq_->Modify(attr, kSrqMaxWr));
  ASSERT_OK_AND_ASSIGN(SrqAttr after, srq_->Query());
  EXPECT_GE(after.max_wr, before.max_wr * 2);
  for (uint32_t i = 0; i < before.max_wr * 2; ++i) {
    ASSERT_OK(PostSrq(i, 8)) << "WR " << i;
  }
}

// Shrinking below the WRs posted is EINVAL; the SRQ keeps its size and its
// WRs.
TEST_P(SrqTest, ModifyMaxWrBelowThePostedCountIsEinval) {
  for (uint64_t i = 0; i < 8; ++i) ASSERT_OK(PostSrq(i, 64, i * 64));
  ASSERT_OK_AND_ASSIGN(SrqAttr before, Sizes());
  SrqAttr attr;
  attr.max_wr = 4;
  EXPECT_THAT(srq_->Modify(attr, kSrqMaxWr),
              HasErrno(expect().resizes_srq ? EINVAL : EOPNOTSUPP));
  ASSERT_OK_AND_ASSIGN(SrqAttr after, Sizes());
  EXPECT_EQ(after.max_wr, before.max_wr);
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Deliver(0, 1, 8));
  EXPECT_THAT(rwc, WcOk(0u, WcOpcode::kRecv)) << rwc;
}

// The limit event (ibv_modify_srq(3)): it fires once, when after a WQE is
// taken fewer than `srq_limit` remain, and disarms the limit.
TEST_P(SrqTest, LimitEventFiresOnceWhenFewerRemain) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_OK(PostSrq(i, 64, i * 64));
  ASSERT_OK(SetLimit(2));
  ASSERT_THAT(Deliver(0, 10, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  ASSERT_THAT(Deliver(0, 11, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  // Two remain: not fewer than the limit.
  EXPECT_THAT(NextEvent(kQuiet), HasErrno(ETIMEDOUT));
  ASSERT_THAT(Deliver(0, 12, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  ASSERT_OK_AND_ASSIGN(AsyncEvent ev, NextEvent());
  EXPECT_EQ(ev.type, AsyncEventType::kSrqLimitReached);
  EXPECT_EQ(ev.srq_id, srq_->srq_id());
  if (expect().queries_srq) {
    ASSERT_OK_AND_ASSIGN(SrqAttr attr, srq_->Query());
    EXPECT_EQ(attr.srq_limit, 0u);
  }
  ASSERT_THAT(Deliver(0, 13, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  EXPECT_THAT(NextEvent(kQuiet), HasErrno(ETIMEDOUT));
}

TEST_P(SrqTest, LimitNotArmedRaisesNoEvent) {
  for (uint64_t i = 0; i < 2; ++i) ASSERT_OK(PostSrq(i, 64, i * 64));
  ASSERT_THAT(Deliver(0, 10, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  ASSERT_THAT(Deliver(0, 11, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  EXPECT_THAT(NextEvent(kQuiet), HasErrno(ETIMEDOUT));
}

// A limit of 0 disarms an armed limit.
TEST_P(SrqTest, LimitZeroDisarms) {
  for (uint64_t i = 0; i < 3; ++i) ASSERT_OK(PostSrq(i, 64, i * 64));
  ASSERT_OK(SetLimit(3));
  ASSERT_OK(SetLimit(0));
  ASSERT_THAT(Deliver(0, 10, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  EXPECT_THAT(NextEvent(kQuiet), HasErrno(ETIMEDOUT));
}

// After the event the limit can be armed again, and fires again.
TEST_P(SrqTest, LimitCanBeArmedAgain) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_OK(PostSrq(i, 64, i * 64));
  ASSERT_OK(SetLimit(4));
  ASSERT_THAT(Deliver(0, 10, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  ASSERT_OK_AND_ASSIGN(AsyncEvent first, NextEvent());
  EXPECT_EQ(first.type, AsyncEventType::kSrqLimitReached);
  ASSERT_OK(SetLimit(3));
  ASSERT_THAT(Deliver(0, 11, 8), IsOkAndHolds(WcStatusIs(WcStatus::kSuccess)));
  ASSERT_OK_AND_ASSIGN(AsyncEvent second, NextEvent());
  EXPECT_EQ(second.type, AsyncEventType::kSrqLimitReached);
  EXPECT_EQ(second.srq_id, srq_->srq_id());
}

TEST_P(SrqTest, NoEventIsEtimedout) {
  EXPECT_THAT(NextEvent(kQuiet), HasErrno(ETIMEDOUT));
}

// A QP on an SRQ that enters ERR takes no more WQEs from it: IBA 11.6.3.2
// raises IBV_EVENT_QP_LAST_WQE_REACHED (expectations:
// raises_last_wqe_reached).
TEST_P(SrqTest, QpEnteringErrRaisesLastWqeReached) {
  QpStep err = ToStateStep(QpState::kErr);
  ASSERT_OK(rqs_[0]->Modify(err.attr, err.mask));
  if (expect().raises_last_wqe_reached) {
    ASSERT_OK_AND_ASSIGN(AsyncEvent ev, NextEvent());
    EXPECT_EQ(ev.type, AsyncEventType::kQpLastWqeReached);
    EXPECT_EQ(ev.qp_num, rqs_[0]->qp_num());
  } else {
    EXPECT_THAT(NextEvent(kQuiet), HasErrno(ETIMEDOUT));
  }
}

// The SRQ's WQEs belong to no QP: one QP entering ERR flushes none of
// them, and another QP still consumes them.
TEST_P(SrqTest, OneQpInErrFlushesNoSrqWqe) {
  ASSERT_NO_FATAL_FAILURE(AddPair());
  ASSERT_OK(PostSrq(1, 64));
  ASSERT_OK(PostSrq(2, 64, 64));
  QpStep err = ToStateStep(QpState::kErr);
  ASSERT_OK(rqs_[0]->Modify(err.attr, err.mask));
  EXPECT_THAT(Drain(s_->cq.get()), IsEmpty());
  ASSERT_OK_AND_ASSIGN(WorkCompletion r1, Deliver(1, 10, 8));
  EXPECT_THAT(r1, WcOk(1u, WcOpcode::kRecv)) << r1;
  EXPECT_EQ(r1.qp_num, rqs_[1]->qp_num());
  ASSERT_OK_AND_ASSIGN(WorkCompletion r2, Deliver(1, 11, 8));
  EXPECT_THAT(r2, WcOk(2u, WcOpcode::kRecv)) << r2;
}

// An SRQ WQE too small for the message fails that QP only (RC: the
// receiver's and the sender's statuses of a receive too small); the next
// WQE goes to another QP.
TEST_P(SrqTest, ReceiveTooSmallFailsThatQpOnly) {
  ASSERT_NO_FATAL_FAILURE(AddPair());
  ASSERT_OK(PostSrq(1, 16));
  ASSERT_OK(PostSrq(2, 64, 64));
  ASSERT_OK(SendFrom(0, 10, 32));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p_->cq.get()));
  EXPECT_THAT(swc, WcStatusIn(expect().recv_too_small_sender)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(s_->cq.get()));
  EXPECT_EQ(rwc.wr_id, 1u);
  EXPECT_THAT(rwc, WcStatusIn(expect().recv_too_small_receiver)) << rwc;
  this->ExpectQpState(rqs_[0].get(), QpState::kErr);
  ASSERT_OK_AND_ASSIGN(WorkCompletion r2, Deliver(1, 11, 32));
  EXPECT_THAT(r2, WcOk(2u, WcOpcode::kRecv)) << r2;
  EXPECT_EQ(r2.qp_num, rqs_[1]->qp_num());
}

// RC with an empty SRQ: RNR NAK and retry, as with an empty receive queue;
// a WQE posted meanwhile takes the message.
TEST_P(SrqTest, EmptySrqMeansRnrUntilAWqeIsPosted) {
  if (!expect().has_rnr) {
    GTEST_SKIP() << "iWARP has no RNR: a send without a receive ends the "
                    "connection (IwarpTest.SendWithoutAReceiveTerminates)";
  }
  ASSERT_OK(SendFrom(0, 1, 8));
  EXPECT_THAT(Drain(s_->cq.get()), IsEmpty());
  EXPECT_THAT(Drain(p_->cq.get()), IsEmpty());
  ASSERT_OK(PostSrq(5, 8));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(s_->cq.get()));
  EXPECT_THAT(rwc, WcOk(5u, WcOpcode::kRecv)) << rwc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p_->cq.get()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kSend)) << swc;
}

// An RDMA write with immediate consumes an SRQ WQE for its completion.
TEST_P(SrqTest, WriteWithImmediateConsumesAnSrqWqe) {
  if (!expect().has_immediate) {
    GTEST_SKIP() << "no immediate data on profile " << expect().profile;
  }
  sbuf_.FillPattern(2, 0, 48);
  ASSERT_OK(PostSrq(4, 0));
  ASSERT_OK(SendFrom(0, 1, 48, WrOpcode::kRdmaWriteWithImm));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(s_->cq.get()));
  ASSERT_THAT(rwc, WcOk(4u, WcOpcode::kRecvRdmaWithImm)) << rwc;
  EXPECT_EQ(rwc.imm_data, 0x5151u);
  EXPECT_EQ(rwc.byte_len, 48u);
  EXPECT_EQ(rbuf_.Bytes(8192, 48), sbuf_.Bytes(0, 48));
}

// An SRQ WQE with two SGEs is filled in order.
TEST_P(SrqTest, WqeWithTwoSgesScatters) {
  sbuf_.FillPattern(3, 0, 100);
  Sge sges[2] = {SgeOf(*mrr_, 0, 30), SgeOf(*mrr_, 4096, 70)};
  RecvWr wr;
  wr.wr_id = 6;
  wr.sg_list = sges;
  ASSERT_OK(srq_->PostRecv(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Deliver(0, 1, 100));
  ASSERT_THAT(rwc, WcOk(6u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rbuf_.Bytes(0, 30), sbuf_.Bytes(0, 30));
  EXPECT_EQ(rbuf_.Bytes(4096, 70), sbuf_.Bytes(30, 70));
}

// A UD QP may receive from an SRQ too; its receives hold the GRH first.
TEST_P(SrqTest, UdQpReceivesFromTheSrq) {
  if (!expect().has_ud) GTEST_SKIP() << "the provider has no UD QPs";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> ud,
                       CreateQpOn(*s_, QpType::kUd, {16, 16, 2, 2, 0},
                                  srq_.get()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> sender,
                       CreateQpOn(*p_, QpType::kUd));
  ASSERT_OK(BringUdQpToRts(ud.get()));
  ASSERT_OK(BringUdQpToRts(sender.get()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Ah> ah, CreateAhTo(p_->pd.get(), s_->gid,
                                                         p_->gid_index));
  sbuf_.FillPattern(4, 0, 24);
  ASSERT_OK(PostSrq(8, 40 + 24));
  Sge sge = SgeOf(*mrs_, 0, 24);
  SendWr wr = MakeWr(WrOpcode::kSend, 1, {&sge, 1});
  wr.ud.ah = ah.get();
  wr.ud.remote_qpn = ud->qp_num();
  wr.ud.remote_qkey = kTestQkey;
  ASSERT_OK(sender->PostSend(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(s_->cq.get()));
  ASSERT_THAT(rwc, WcOk(8u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.qp_num, ud->qp_num());
  EXPECT_EQ(rwc.byte_len, 40u + 24u);
  EXPECT_EQ(rbuf_.Bytes(40, 24), sbuf_.Bytes(0, 24));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(SrqTest);

// ibv_create_srq(3) with sizes outside the device's limits: EINVAL.
struct BadSrqAttr {
  const char* name;
  int max_wr_delta;   // added to 16, or to max_srq_wr + 1 when `over_wr`
  bool over_wr;
  bool over_sge;      // max_sge = max_srq_sge + 1
};
void PrintTo(const BadSrqAttr& b, std::ostream* os) { *os << b.name; }

class SrqCreateTest : public ProviderTestWithParam<BadSrqAttr> {};

TEST_P(SrqCreateTest, OutOfRangeIsEinval) {
  if (!expect().has_srq) {
    GTEST_SKIP() << "the provider has no shared receive queues";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> side, OpenSide(0));
  const DeviceAttr& dev = side->context->device_attr();
  SrqAttr attr;
  attr.max_wr = param().over_wr ? static_cast<uint32_t>(dev.max_srq_wr) + 1
                                : 16 + param().max_wr_delta;
  attr.max_sge = param().over_sge ? static_cast<uint32_t>(dev.max_srq_sge) + 1
                                  : 1;
  EXPECT_THAT(side->pd->CreateSrq(attr), HasErrno(EINVAL));
  // The same with sizes in range is fine.
  SrqAttr good;
  good.max_wr = 16;
  good.max_sge = 1;
  EXPECT_OK(side->pd->CreateSrq(good).status());
}

const BadSrqAttr kBadSrqAttrs[] = {
    {"ZeroMaxWr", -16, false, false},
    {"MaxWrOverDevice", 0, true, false},
    {"MaxSgeOverDevice", 0, false, true},
};
INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(SrqCreateTest,
                                       ::testing::ValuesIn(kBadSrqAttrs));

}  // namespace
}  // namespace testing
}  // namespace verbsim
