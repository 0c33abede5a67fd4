// Completion queues and channels: depth, polling, blocking waits with
// timeouts, notification, overflow.
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
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

class CqDepthTest : public ProviderTestWithParam<int> {};

TEST_P(CqDepthTest, HoldsAtLeastTheRequestedEntries) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq,
                       context->CreateCq(param(), nullptr));
  EXPECT_GE(cq->cqe(), param());
  EXPECT_LE(cq->cqe(), context->device_attr().max_cqe);
  EXPECT_EQ(cq->channel(), nullptr);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(CqDepthTest,
                                       ::testing::Values(1, 2, 100, 1000));

class CqTest : public ProviderTest {};

TEST_P(CqTest, MaxCqeIsAccepted) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  const int max = context->device_attr().max_cqe;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(max, nullptr));
  EXPECT_GE(cq->cqe(), max);
}

TEST_P(CqTest, BadDepthIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  EXPECT_THAT(context->CreateCq(0, nullptr), HasErrno(EINVAL));
  EXPECT_THAT(context->CreateCq(-1, nullptr), HasErrno(EINVAL));
  EXPECT_THAT(context->CreateCq(context->device_attr().max_cqe + 1, nullptr),
              HasErrno(EINVAL));
}

TEST_P(CqTest, PollOfAnEmptyCqReturnsZero) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(16, nullptr));
  std::vector<WorkCompletion> wcs(4);
  EXPECT_THAT(cq->Poll(absl::MakeSpan(wcs)), IsOkAndHolds(0));
  EXPECT_THAT(cq->Poll(absl::MakeSpan(wcs)), IsOkAndHolds(0));
}

TEST_P(CqTest, GetSendCompTimesOutWhenNothingIsPosted) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const absl::Time start = absl::Now();
  absl::StatusOr<WorkCompletion> wc =
      p->client().GetSendComp(absl::Milliseconds(50));
  const absl::Duration took = absl::Now() - start;
  EXPECT_THAT(wc, HasErrno(ETIMEDOUT));
  EXPECT_THAT(wc, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_GE(took, absl::Milliseconds(45));
  EXPECT_LT(took, absl::Seconds(5));
}

TEST_P(CqTest, GetRecvCompTimesOutWhenNothingArrives) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 64, p->smr.get()));
  EXPECT_THAT(p->server().GetRecvComp(absl::Milliseconds(50)),
              HasErrno(ETIMEDOUT));
}

TEST_P(CqTest, GetSendCompAndGetRecvCompReturnCompletions) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 64, p->smr.get()));
  ASSERT_OK(p->client().PostSend(2, p->cbuf.data(), 64, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, p->client().GetSendComp(kTimeout));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, p->server().GetRecvComp(kTimeout));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
}

TEST_P(CqTest, PollReturnsSeveralCompletionsAtOnceInOrder) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  for (uint64_t id = 0; id < 5; ++id) {
    ASSERT_OK(p->client().PostWrite(id, p->cbuf.data(), 8, p->cmr.get(),
                                    kSendSignaled, p->sbuf.addr(),
                                    p->smr->rkey()));
  }
  // Wait until all five are there, then take them with one Poll.
  std::vector<WorkCompletion> got;
  const absl::Time deadline = absl::Now() + kTimeout;
  std::vector<WorkCompletion> wcs(10);
  while (got.size() < 5 && absl::Now() < deadline) {
    ASSERT_OK_AND_ASSIGN(int n, p->client().send_cq()->Poll(absl::MakeSpan(wcs)));
    ASSERT_LE(n, 10);
    got.insert(got.end(), wcs.begin(), wcs.begin() + n);
  }
  ASSERT_EQ(got.size(), 5u);
  for (uint64_t id = 0; id < 5; ++id) {
    EXPECT_THAT(got[id], WcOk(id, WcOpcode::kRdmaWrite)) << got[id];
  }
  EXPECT_THAT(p->client().send_cq()->Poll(absl::MakeSpan(wcs)),
              IsOkAndHolds(0));
}

TEST_P(CqTest, PollIntoAnEmptySpanReturnsZeroAndKeepsTheCompletion) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 8, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaWrite));
  ASSERT_OK(p->client().PostWrite(2, p->cbuf.data(), 8, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  EXPECT_THAT(p->client().send_cq()->Poll({}), IsOkAndHolds(0));
  ASSERT_OK_AND_ASSIGN(wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(2u, WcOpcode::kRdmaWrite));
}

TEST_P(CqTest, OneCqServesBothQueuesOfAQp) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  // Connected to itself, or on iWARP through the CM to raw->peer.
  ASSERT_OK(BringQpTo(*raw, QpState::kRts));
  Buffer buf(8192);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       raw->pd->RegMr(buf.data(), 8192, kAccessLocalWrite));
  buf.FillPattern(3, 0, 100);
  const Sge rsge = SgeOf(*mr, 4096, 4096);
  RecvWr rwr;
  rwr.wr_id = 1;
  rwr.sg_list = {&rsge, 1};
  ASSERT_OK(raw->qp->PostRecv(rwr));
  // A peer takes the message and sends it back.
  Buffer pbuf(4096);
  std::unique_ptr<Mr> pmr;
  if (raw->peer != nullptr) {
    ASSERT_OK_AND_ASSIGN(pmr, raw->peer->pd->RegMr(pbuf.data(), 4096,
                                                   kAccessLocalWrite));
    const Sge psge = SgeOf(*pmr, 0, 4096);
    RecvWr pwr;
    pwr.wr_id = 3;
    pwr.sg_list = {&psge, 1};
    ASSERT_OK(raw->peer->qp->PostRecv(pwr));
  }
  const Sge ssge = SgeOf(*mr, 0, 100);
  ASSERT_OK(raw->qp->PostSend(MakeWr(WrOpcode::kSend, 2, {&ssge, 1})));
  if (raw->peer != nullptr) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion pwc, Await(raw->peer->cq.get()));
    ASSERT_THAT(pwc, WcOk(3u, WcOpcode::kRecv)) << pwc;
    const Sge back = SgeOf(*pmr, 0, 100);
    ASSERT_OK(raw->peer->qp->PostSend(MakeWr(WrOpcode::kSend, 4, {&back, 1})));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(raw->cq.get(), 2));
  // One of each, on the one CQ (their relative order is not specified).
  int sends = 0, recvs = 0;
  for (const WorkCompletion& wc : wcs) {
    EXPECT_EQ(wc.status, WcStatus::kSuccess) << wc;
    if (wc.opcode == WcOpcode::kSend && wc.wr_id == 2) ++sends;
    if (wc.opcode == WcOpcode::kRecv && wc.wr_id == 1) ++recvs;
  }
  EXPECT_EQ(sends, 1);
  EXPECT_EQ(recvs, 1);
  EXPECT_EQ(buf.Bytes(4096, 100), buf.Bytes(0, 100));
}

// --- Completion channels -----------------------------------------------------

TEST_P(CqTest, ArmedCqRaisesAChannelEvent) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Cq* cq = p->client().send_cq();
  CompChannel* channel = cq->channel();
  ASSERT_NE(channel, nullptr);
  ASSERT_OK(cq->ReqNotify(false));
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 8, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(Cq* event_cq, channel->GetEvent(kTimeout));
  EXPECT_EQ(event_cq, cq);
  channel->AckEvents(event_cq, 1);
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(cq));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaWrite));
}

TEST_P(CqTest, UnarmedCqRaisesNoEvent) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Cq* cq = p->client().send_cq();
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 8, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(cq));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaWrite));
  EXPECT_THAT(cq->channel()->GetEvent(absl::Milliseconds(50)),
              HasErrno(ETIMEDOUT));
}

TEST_P(CqTest, ArmingLastsForOneEvent) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Cq* cq = p->client().send_cq();
  ASSERT_OK(cq->ReqNotify(false));
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 8, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(Cq* event_cq, cq->channel()->GetEvent(kTimeout));
  cq->channel()->AckEvents(event_cq, 1);
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(cq));
  // Not re-armed: the second completion raises nothing.
  ASSERT_OK(p->client().PostWrite(2, p->cbuf.data(), 8, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(wc, Await(cq));
  EXPECT_THAT(wc, WcOk(2u, WcOpcode::kRdmaWrite));
  EXPECT_THAT(cq->channel()->GetEvent(absl::Milliseconds(50)),
              HasErrno(ETIMEDOUT));
}

TEST_P(CqTest, SolicitedOnlyArmingIgnoresUnsolicitedMessages) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Cq* rcq = p->server().recv_cq();
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 64, p->smr.get()));
  ASSERT_OK(p->server().PostRecv(2, p->sbuf.data() + 64, 64, p->smr.get()));
  ASSERT_OK(rcq->ReqNotify(/*solicited_only=*/true));
  // An unsolicited send: delivered (the sender's completion says so) ...
  ASSERT_OK(p->client().PostSend(10, p->cbuf.data(), 8, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(10u, WcOpcode::kSend));
  // ... but raises no event.
  EXPECT_THAT(rcq->channel()->GetEvent(absl::Milliseconds(50)),
              HasErrno(ETIMEDOUT));
  // A solicited one does, except on siw, which never passes a message's
  // solicited flag to the CQ (siw_qp.c siw_rqe_complete): the arming never
  // fires there.
  ASSERT_OK(p->client().PostSend(11, p->cbuf.data(), 8, p->cmr.get(),
                                 kSendSignaled | kSendSolicited));
  if (expect().solicited_only_events) {
    ASSERT_OK_AND_ASSIGN(Cq* event_cq, rcq->channel()->GetEvent(kTimeout));
    EXPECT_EQ(event_cq, rcq);
    rcq->channel()->AckEvents(event_cq, 1);
  } else {
    ASSERT_OK_AND_ASSIGN(WorkCompletion swc2, Await(p->client().send_cq()));
    EXPECT_THAT(swc2, WcOk(11u, WcOpcode::kSend));
    EXPECT_THAT(rcq->channel()->GetEvent(absl::Milliseconds(50)),
                HasErrno(ETIMEDOUT));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs, AwaitN(rcq, 2));
  EXPECT_THAT(wcs[0], WcOk(1u, WcOpcode::kRecv));
  EXPECT_THAT(wcs[1], WcOk(2u, WcOpcode::kRecv));
}

TEST_P(CqTest, SolicitedOnlyRequestDoesNotNarrowANextCompletionOne) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Cq* rcq = p->server().recv_cq();
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 64, p->smr.get()));
  ASSERT_OK(rcq->ReqNotify(/*solicited_only=*/false));
  ASSERT_OK(rcq->ReqNotify(/*solicited_only=*/true));
  // An unsolicited send completes a receive.
  ASSERT_OK(p->client().PostSend(10, p->cbuf.data(), 8, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(10u, WcOpcode::kSend));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(rcq));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv));
  if (expect().next_arming_survives_solicited) {
    ASSERT_OK_AND_ASSIGN(Cq* event_cq, rcq->channel()->GetEvent(kTimeout));
    EXPECT_EQ(event_cq, rcq);
    rcq->channel()->AckEvents(event_cq, 1);
  } else {
    EXPECT_THAT(rcq->channel()->GetEvent(absl::Milliseconds(50)),
                HasErrno(ETIMEDOUT));
  }
}

TEST_P(CqTest, ChannelGetEventTimesOutWithNothingArmed) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompChannel> channel,
                       context->CreateCompChannel());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq,
                       context->CreateCq(8, channel.get()));
  EXPECT_EQ(cq->channel(), channel.get());
  ASSERT_OK(cq->ReqNotify(false));
  EXPECT_THAT(channel->GetEvent(absl::Milliseconds(50)), HasErrno(ETIMEDOUT));
}

TEST_P(CqTest, ReqNotifyWithoutAChannelIsAccepted) {
  // ibv_req_notify_cq on a CQ without a channel is legal; nothing is ever
  // delivered.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(8, nullptr));
  EXPECT_OK(cq->ReqNotify(false));
  EXPECT_OK(cq->ReqNotify(true));
}

// --- A destroyed QP's completions ---------------------------------------------

// ibv_destroy_qp(3) does not say what becomes of completions of the QP that
// are still in its CQ. rxe and siw leave them there (the CQ is a ring the
// process maps, which destroying a QP does not touch), and so does every
// sim profile; mlx4 and mlx5 remove them. A program that destroys a QP
// before it has polled the QP's completions meets them later, with the
// number of a QP that is gone (docs/semantics.md, section 10).
TEST_P(CqTest, ADestroyedQpsCompletionsStayInItsCq) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> a, OpenSide(0));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> b,
                       OpenSide(devices().size() > 1 ? 1 : 0));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompChannel> channel,
                       a->context->CreateCompChannel());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq,
                       a->context->CreateCq(16, channel.get()));
  QpInitAttr init;
  init.send_cq = cq.get();
  init.recv_cq = cq.get();
  init.cap = {16, 16, 2, 2, 0};
  init.qp_type = QpType::kRc;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qa, a->pd->CreateQp(init));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qb, CreateQpOn(*b, QpType::kRc));
  ASSERT_OK(ConnectQps(qa.get(), a->gid, qb.get(), b->gid));
  Buffer abuf(4096), bbuf(4096);
  abuf.FillPattern(9, 0, 64);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> amr,
                       a->pd->RegMr(abuf.data(), 4096, kAccessLocalWrite));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Mr> bmr,
      b->pd->RegMr(bbuf.data(), 4096, kAccessLocalWrite | kAccessRemoteWrite));
  const uint32_t qpn = qa->qp_num();
  ASSERT_OK(cq->ReqNotify(false));
  const Sge sge = SgeOf(*amr, 0, 64);
  SendWr write = MakeWr(WrOpcode::kRdmaWrite, 11, {&sge, 1});
  write.rdma.remote_addr = bbuf.addr();
  write.rdma.rkey = bmr->rkey();
  ASSERT_OK(qa->PostSend(write));
  // The completion is in the CQ once its event has come; nothing polls it
  // before the QP is destroyed.
  ASSERT_OK_AND_ASSIGN(Cq* event_cq, channel->GetEvent(kTimeout));
  EXPECT_EQ(event_cq, cq.get());
  channel->AckEvents(event_cq, 1);
  ASSERT_OK(qa->Destroy());
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(cq.get()));
  EXPECT_THAT(wc, WcOk(11u, WcOpcode::kRdmaWrite)) << wc;
  EXPECT_EQ(wc.qp_num, qpn);
  EXPECT_EQ(bbuf.Bytes(0, 64), abuf.Bytes(0, 64));
  // Nothing else: the QP had no other work to flush.
  EXPECT_THAT(Drain(cq.get(), absl::Milliseconds(20)), IsEmpty());
}

// --- Overflow ------------------------------------------------------------------

TEST_P(CqTest, OverflowRaisesCqErrAndMovesTheQpToErr) {
  EndpointAttr attr = DefaultAttr();
  attr.cq_depth = 4;
  attr.cap.max_send_wr = 128;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  const int depth = p->client().send_cq()->cqe();
  if (depth + 1 > 128) {
    GTEST_SKIP() << "the CQ was rounded up to " << depth << " entries";
  }
  // depth + 1 signaled writes, none polled.
  for (int i = 0; i <= depth; ++i) {
    ASSERT_OK(p->client().PostWrite(i, p->cbuf.data(), 8, p->cmr.get(),
                                    kSendSignaled, p->sbuf.addr(),
                                    p->smr->rkey()));
  }
  // Progress without draining the client's send CQ: poll the server's
  // (empty) CQs while waiting for the async event.
  absl::StatusOr<AsyncEvent> event;
  const absl::Time deadline = absl::Now() + kTimeout;
  do {
    EXPECT_THAT(Drain(p->server().recv_cq(), absl::Milliseconds(1)), IsEmpty());
    event = p->client().context()->GetAsyncEvent(absl::Milliseconds(5));
  } while (!event.ok() && absl::Now() < deadline);
  ASSERT_OK(event);
  EXPECT_EQ(event->type, AsyncEventType::kCqErr) << event->type;
  // The QP that completes there is in error (rxe leaves it in RTS).
  const QpState want =
      expect().cq_overflow_errors_qps ? QpState::kErr : QpState::kRts;
  const absl::Time qp_deadline = absl::Now() + kTimeout;
  while (p->client().qp()->state() != want && absl::Now() < qp_deadline) {
    Drain(p->server().recv_cq(), absl::Milliseconds(1));
  }
  ExpectQpState(p->client().qp(), want);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(CqTest);

// ibv_resize_cq(3): a new size, the completions held kept; a size outside
// [1, max_cqe] or below what the CQ holds is EINVAL with the CQ unchanged
// (rxe_cq.c rxe_cq_chk_attr).
class CqResizeTest : public ProviderTest {};

TEST_P(CqResizeTest, UnsupportedIsEopnotsuppAndKeepsTheSize) {
  if (expect().resizes_cq) GTEST_SKIP() << "the provider resizes CQs";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(16, nullptr));
  const int before = cq->cqe();
  EXPECT_THAT(cq->Resize(64), HasErrno(EOPNOTSUPP));
  EXPECT_EQ(cq->cqe(), before);
}

TEST_P(CqResizeTest, GrowsAndShrinks) {
  if (!expect().resizes_cq) GTEST_SKIP() << "the provider has no ibv_resize_cq";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(16, nullptr));
  ASSERT_OK(cq->Resize(1000));
  EXPECT_GE(cq->cqe(), 1000);
  EXPECT_LE(cq->cqe(), context->device_attr().max_cqe);
  ASSERT_OK(cq->Resize(8));
  EXPECT_GE(cq->cqe(), 8);
  EXPECT_LT(cq->cqe(), 1000);
}

TEST_P(CqResizeTest, OutOfRangeIsEinvalAndKeepsTheSize) {
  if (!expect().resizes_cq) GTEST_SKIP() << "the provider has no ibv_resize_cq";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(16, nullptr));
  const int before = cq->cqe();
  EXPECT_THAT(cq->Resize(0), HasErrno(EINVAL));
  EXPECT_THAT(cq->Resize(-1), HasErrno(EINVAL));
  EXPECT_THAT(cq->Resize(context->device_attr().max_cqe + 1), HasErrno(EINVAL));
  EXPECT_EQ(cq->cqe(), before);
}

// Four receives complete on the server's CQ, unpolled (each send's
// completion at the client means its receive has completed): shrinking
// below four is refused, to four is not, and all four are still there.
TEST_P(CqResizeTest, KeepsTheCompletionsItHolds) {
  if (!expect().resizes_cq) GTEST_SKIP() << "the provider has no ibv_resize_cq";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_OK(p->server().PostRecv(i, p->sbuf.data() + 64 * i, 64,
                                   p->smr.get()));
  }
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_OK(p->client().PostSend(10 + i, p->cbuf.data(), 8, p->cmr.get(),
                                   kSendSignaled));
  }
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, p->client().GetSendComp(kTimeout));
    EXPECT_THAT(wc, WcOk(10 + i, WcOpcode::kSend)) << wc;
  }
  Cq* cq = p->server().recv_cq();
  const int before = cq->cqe();
  EXPECT_THAT(cq->Resize(3), HasErrno(EINVAL));
  EXPECT_EQ(cq->cqe(), before);
  ASSERT_OK(cq->Resize(4));
  EXPECT_GE(cq->cqe(), 4);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, p->server().GetRecvComp(kTimeout));
    EXPECT_THAT(wc, WcOk(i, WcOpcode::kRecv)) << wc;
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(CqResizeTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
