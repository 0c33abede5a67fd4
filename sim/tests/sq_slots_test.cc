// When a send-queue slot is free again (SimProfile::sq_slots_held_until_polled,
// docs/semantics.md section 10): on the ibta profile a send WR keeps its
// slot after it completed until a completion of it or of a later WR of its
// send queue is polled, as on mlx5; on rxe the slot is free once the WR
// completes. What only the sim shows cheaply: every QP type, the error
// state's flush (each polled flush completion frees the slots up to it, a
// WR posted in ERR holds one until its own is polled), RESET, sq_sig_all,
// and the ENOMEM message. The provider-neutral case is
// //tests:conformance_test SendQueueSlotTest.
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::verbsim::testing::Await;
using ::verbsim::testing::AwaitN;
using ::verbsim::testing::BringUdQpToRts;
using ::verbsim::testing::Buffer;
using ::verbsim::testing::ConnectQps;
using ::verbsim::testing::CreateQpOn;
using ::verbsim::testing::HasErrno;
using ::verbsim::testing::MakeWr;
using ::verbsim::testing::SgeOf;
using ::verbsim::testing::Side;

constexpr uint32_t kDepth = 4;

// Two devices of one sim profile, a QP of one type on each, connected (RC,
// UC) or in RTS with an address handle to the other (UD); a buffer and MR
// on each.
class SqSlotsTest
    : public ::testing::TestWithParam<std::tuple<std::string, QpType>>,
      public ::verbsim::testing::Harness {
 protected:
  void SetUp() override {
    Init("sim:" + profile());
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(a_, OpenSide(0));
    ASSERT_OK_AND_ASSIGN(b_, OpenSide(1));
    ASSERT_OK_AND_ASSIGN(mra_, a_->pd->RegMr(abuf_.data(), abuf_.size(),
                                             kAccessLocalWrite));
    ASSERT_OK_AND_ASSIGN(
        mrb_, b_->pd->RegMr(bbuf_.data(), bbuf_.size(),
                            kAccessLocalWrite | kAccessRemoteWrite));
    MakeQps(/*sq_sig_all=*/false);
  }

  void MakeQps(bool sq_sig_all) {
    qa_.reset();
    qb_.reset();
    const QpCap cap = {kDepth, 64, 1, 1, 0};
    ASSERT_OK_AND_ASSIGN(qa_, CreateQpOn(*a_, type(), cap, nullptr,
                                         sq_sig_all));
    ASSERT_OK_AND_ASSIGN(qb_, CreateQpOn(*b_, type(), cap));
    if (type() == QpType::kUd) {
      ASSERT_OK(BringUdQpToRts(qa_.get()));
      ASSERT_OK(BringUdQpToRts(qb_.get()));
      ASSERT_OK_AND_ASSIGN(ah_, ::verbsim::testing::CreateAhTo(
                                    a_->pd.get(), b_->gid, a_->gid_index));
    } else {
      ASSERT_OK(ConnectQps(qa_.get(), a_->gid, qb_.get(), b_->gid));
    }
  }

  const std::string& profile() const { return std::get<0>(GetParam()); }
  QpType type() const { return std::get<1>(GetParam()); }
  bool held() const { return profile() == "ibta"; }

  // An 8-byte WR from A to B, signaled or not: a send on UD (B posts a
  // receive for it), an RDMA write otherwise.
  absl::Status Post(uint64_t wr_id, uint32_t flags) {
    const Sge sge = SgeOf(*mra_, 0, 8);
    if (type() == QpType::kUd) {
      RecvWr r;
      r.wr_id = wr_id;
      const Sge rsge = SgeOf(*mrb_, 0, 64);
      r.sg_list = {&rsge, 1};
      if (absl::Status s = qb_->PostRecv(r); !s.ok()) return s;
      SendWr wr = MakeWr(WrOpcode::kSend, wr_id, {&sge, 1}, flags);
      wr.ud.ah = ah_.get();
      wr.ud.remote_qpn = qb_->qp_num();
      wr.ud.remote_qkey = ::verbsim::testing::kTestQkey;
      return qa_->PostSend(wr);
    }
    SendWr wr = MakeWr(WrOpcode::kRdmaWrite, wr_id, {&sge, 1}, flags);
    wr.rdma.remote_addr = bbuf_.addr(8 * wr_id % 4096);
    wr.rdma.rkey = mrb_->rkey();
    return qa_->PostSend(wr);
  }

  // Lets the fabric run (every WR posted so far completes on the wire)
  // without polling A's CQ: 10 ms of virtual time, however slow the
  // machine (a real-time wait on B's CQ was too short under load).
  void LetItRun() { LetTimePass(absl::Milliseconds(10)); }

  Buffer abuf_{4096};
  Buffer bbuf_{4096};
  std::unique_ptr<Side> a_, b_;
  std::unique_ptr<Mr> mra_, mrb_;
  std::unique_ptr<Qp> qa_, qb_;
  std::unique_ptr<Ah> ah_;
};

TEST_P(SqSlotsTest, UnsignaledWrsFillTheQueueUntilACompletionIsPolled) {
  ASSERT_OK_AND_ASSIGN(QpAttr attr, qa_->Query());
  const uint32_t depth = attr.cap.max_send_wr;
  // depth - 1 unsignaled WRs and a signaled one, all completed on the wire.
  for (uint32_t i = 1; i < depth; ++i) ASSERT_OK(Post(i, 0));
  ASSERT_OK(Post(depth, kSendSignaled));
  LetItRun();
  const absl::Status extra = Post(depth + 1, 0);
  if (held()) {
    EXPECT_THAT(extra, HasErrno(ENOMEM));
    EXPECT_THAT(extra.message(), HasSubstr("hold their slots"));
  } else {
    EXPECT_OK(extra);
  }
  // Polling the signaled WR's completion frees its slot and every earlier
  // one: depth - 1 more fit (the extra WR, where taken, may hold one).
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(a_->cq.get()));
  EXPECT_EQ(wc.wr_id, depth);
  EXPECT_EQ(wc.status, WcStatus::kSuccess);
  for (uint32_t i = 1; i < depth; ++i) {
    ASSERT_OK(Post(100 + i, i + 1 == depth ? kSendSignaled : 0)) << i;
  }
  ASSERT_OK_AND_ASSIGN(wc, Await(a_->cq.get()));
  EXPECT_EQ(wc.wr_id, 100 + depth - 1);
}

TEST_P(SqSlotsTest, SqSigAllCompletionsHoldTheirSlotsUntilPolled) {
  MakeQps(/*sq_sig_all=*/true);
  ASSERT_OK_AND_ASSIGN(QpAttr attr, qa_->Query());
  const uint32_t depth = attr.cap.max_send_wr;
  for (uint32_t i = 1; i <= depth; ++i) ASSERT_OK(Post(i, 0));
  LetItRun();
  const absl::Status extra = Post(depth + 1, 0);
  if (held()) {
    EXPECT_THAT(extra, HasErrno(ENOMEM));
    // One polled completion frees exactly one slot (its own).
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(a_->cq.get()));
    EXPECT_EQ(wc.wr_id, 1u);
    ASSERT_OK(Post(depth + 2, 0));
    EXPECT_THAT(Post(depth + 3, 0), HasErrno(ENOMEM));
  } else {
    EXPECT_OK(extra);
  }
}

TEST_P(SqSlotsTest, ResetFreesEverySlot) {
  if (type() == QpType::kUd) GTEST_SKIP() << "the RC/UC reconnect path";
  ASSERT_OK_AND_ASSIGN(QpAttr attr, qa_->Query());
  const uint32_t depth = attr.cap.max_send_wr;
  for (uint32_t i = 1; i <= depth; ++i) ASSERT_OK(Post(i, 0));
  LetItRun();
  if (held()) {
    EXPECT_THAT(Post(depth + 1, 0), HasErrno(ENOMEM));
  }
  const ::verbsim::testing::QpStep reset =
      ::verbsim::testing::ToStateStep(QpState::kReset);
  ASSERT_OK(qa_->Modify(reset.attr, reset.mask));
  ASSERT_OK(qb_->Modify(reset.attr, reset.mask));
  ASSERT_OK(ConnectQps(qa_.get(), a_->gid, qb_.get(), b_->gid));
  for (uint32_t i = 1; i < depth; ++i) ASSERT_OK(Post(10 + i, 0)) << i;
  ASSERT_OK(Post(10 + depth, kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(a_->cq.get()));
  EXPECT_EQ(wc.wr_id, 10 + depth);
  EXPECT_THAT(::verbsim::testing::Drain(a_->cq.get()), IsEmpty());
}

// RC with a silent peer: the WRs stay outstanding until the QP is moved to
// ERR, which flushes each, unsignaled ones included (ibv_poll_cq(3); mlx5
// and rxe do the same); each polled flush completion frees the slots up to
// its WR, and a WR posted in ERR holds one until its own flush is polled.
TEST_P(SqSlotsTest, EachPolledFlushFreesTheSlotsUpToItsWr) {
  if (type() != QpType::kRc) GTEST_SKIP() << "RC: the WRs stay outstanding";
  const ::verbsim::testing::QpStep reset =
      ::verbsim::testing::ToStateStep(QpState::kReset);
  ASSERT_OK(qb_->Modify(reset.attr, reset.mask));  // silent peer
  ASSERT_OK_AND_ASSIGN(QpAttr attr, qa_->Query());
  const uint32_t depth = attr.cap.max_send_wr;
  for (uint32_t i = 1; i <= depth; ++i) ASSERT_OK(Post(i, 0));
  EXPECT_THAT(Post(depth + 1, 0), HasErrno(ENOMEM));  // all outstanding
  const ::verbsim::testing::QpStep err =
      ::verbsim::testing::ToStateStep(QpState::kErr);
  ASSERT_OK(qa_->Modify(err.attr, err.mask));
  if (held()) {
    // Flushed, not yet polled: still held.
    EXPECT_THAT(Post(depth + 1, 0), HasErrno(ENOMEM));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(a_->cq.get()));
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, WcStatus::kWrFlushErr);
    // One slot: a WR posted in ERR takes it and is flushed at once.
    ASSERT_OK(Post(depth + 1, 0));
    EXPECT_THAT(Post(depth + 2, 0), HasErrno(ENOMEM));
  } else {
    // The flush emptied the queue; a WR posted in ERR is flushed at once.
    ASSERT_OK(Post(depth + 1, 0));
  }
  // Every flush, in post order, the one posted in ERR last.
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(a_->cq.get(), held() ? depth : depth + 1));
  for (const WorkCompletion& wc : wcs) {
    EXPECT_EQ(wc.status, WcStatus::kWrFlushErr) << wc.wr_id;
  }
  EXPECT_EQ(wcs.back().wr_id, depth + 1);
  for (uint32_t i = 1; i <= depth; ++i) ASSERT_OK(Post(20 + i, 0)) << i;
}

INSTANTIATE_TEST_SUITE_P(
    Profiles, SqSlotsTest,
    ::testing::Combine(::testing::Values("ibta", "rxe"),
                       ::testing::Values(QpType::kRc, QpType::kUc,
                                         QpType::kUd)),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" +
             std::string(QpTypeName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace verbsim::sim
