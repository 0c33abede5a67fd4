// Bad input for every call: null, zero or oversized arguments, objects of the
// wrong context or PD, objects still in use (EBUSY) and destroyed objects.
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"
#include "tests/observed.h"

namespace verbsim {
namespace testing {
namespace {

using ::testing::IsEmpty;

// --- CreateQp ------------------------------------------------------------------

// What a bad QpInitAttr case may use.
struct QpWorld {
  const DeviceAttr& device;
  Cq* own_cq;
  Cq* foreign_cq;  // a CQ of another context
  Cq* dead_cq;     // a destroyed CQ of this context
};

struct BadQpInit {
  const char* name;
  std::function<void(QpInitAttr&, const QpWorld&)> spoil;
};
void PrintTo(const BadQpInit& c, std::ostream* os) { *os << c.name; }

class BadQpInitTest : public ProviderTestWithParam<BadQpInit> {};

TEST_P(BadQpInitTest, CreateQpFailsWithEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> other, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, context->AllocPd());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(64, nullptr));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> foreign,
                       other->CreateCq(64, nullptr));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> dead, context->CreateCq(64, nullptr));
  ASSERT_OK(dead->Destroy());
  QpInitAttr init;
  init.send_cq = cq.get();
  init.recv_cq = cq.get();
  init.cap = {16, 16, 1, 1, 0};
  init.qp_type = QpType::kRc;
  // The unspoiled attributes work.
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qp, pd->CreateQp(init));
    ASSERT_OK(Destroy(qp));
  }
  param().spoil(init, QpWorld{context->device_attr(), cq.get(), foreign.get(),
                              dead.get()});
  EXPECT_THAT(pd->CreateQp(init), HasErrno(EINVAL));
  // Nothing was left behind: the CQ and PD are free again.
  EXPECT_OK(Destroy(cq));
  EXPECT_OK(Destroy(pd));
}

std::vector<BadQpInit> BadQpInits() {
  using I = QpInitAttr;
  using W = QpWorld;
  return {
      {"NullSendCq", [](I& i, const W&) { i.send_cq = nullptr; }},
      {"NullRecvCq", [](I& i, const W&) { i.recv_cq = nullptr; }},
      {"SendCqOfAnotherContext",
       [](I& i, const W& w) { i.send_cq = w.foreign_cq; }},
      {"RecvCqOfAnotherContext",
       [](I& i, const W& w) { i.recv_cq = w.foreign_cq; }},
      {"DestroyedSendCq", [](I& i, const W& w) { i.send_cq = w.dead_cq; }},
      {"DestroyedRecvCq", [](I& i, const W& w) { i.recv_cq = w.dead_cq; }},
      {"MaxSendWrOverDevice",
       [](I& i, const W& w) {
         i.cap.max_send_wr = static_cast<uint32_t>(w.device.max_qp_wr) + 1;
       }},
      {"MaxRecvWrOverDevice",
       [](I& i, const W& w) {
         i.cap.max_recv_wr = static_cast<uint32_t>(w.device.max_qp_wr) + 1;
       }},
      {"MaxSendSgeOverDevice",
       [](I& i, const W& w) {
         i.cap.max_send_sge = static_cast<uint32_t>(w.device.max_sge) + 1;
       }},
      {"MaxRecvSgeOverDevice",
       [](I& i, const W& w) {
         i.cap.max_recv_sge = static_cast<uint32_t>(w.device.max_sge) + 1;
       }},
      {"MaxInlineOverDevice",
       [](I& i, const W& w) {
         i.cap.max_inline_data =
             static_cast<uint32_t>(w.device.max_inline_data) + 1;
       }},
      {"UnknownQpType",
       [](I& i, const W&) { i.qp_type = static_cast<QpType>(99); }},
  };
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(BadQpInitTest,
                                       ::testing::ValuesIn(BadQpInits()));

// --- Busy objects (EBUSY) and destroyed objects (EINVAL) ----------------------

class ObjectLifetimeTest : public ProviderTest {
 protected:
  void SetUp() override {
    ProviderTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(raw_, MakeRawQp());
  }
  std::unique_ptr<RawQp> raw_;
};

TEST_P(ObjectLifetimeTest, PdWithALiveMrIsBusyAndStaysUsable) {
  Buffer buf(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, raw_->context->AllocPd());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       pd->RegMr(buf.data(), 4096, kAccessLocalWrite));
  EXPECT_THAT(pd->Destroy(), HasErrno(EBUSY));
  // Both still work.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr2,
                       pd->RegMr(buf.data(), 4096, kAccessLocalWrite));
  EXPECT_EQ(mr->pd(), pd.get());
  EXPECT_OK(Destroy(mr2));
  EXPECT_THAT(pd->Destroy(), HasErrno(EBUSY));
  EXPECT_OK(Destroy(mr));
  EXPECT_OK(Destroy(pd));
}

TEST_P(ObjectLifetimeTest, MrOfABusyPdStillWorksOnTheWire) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  EXPECT_THAT(p->client().pd()->Destroy(), HasErrno(EBUSY));
  EXPECT_THAT(p->server().pd()->Destroy(), HasErrno(EBUSY));
  p->cbuf.FillPattern(1, 0, 64);
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 64, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaWrite)) << wc;
  EXPECT_EQ(p->sbuf.Bytes(0, 64), p->cbuf.Bytes(0, 64));
}

TEST_P(ObjectLifetimeTest, PdWithALiveQpIsBusy) {
  EXPECT_THAT(raw_->pd->Destroy(), HasErrno(EBUSY));
  EXPECT_OK(BringQpTo(*raw_, QpState::kInit));
  EXPECT_OK(Destroy(raw_->qp));
  EXPECT_OK(Destroy(raw_->pd));
}

TEST_P(ObjectLifetimeTest, PdWithALiveAhIsBusy) {
  if (!expect().has_ah) {
    GTEST_SKIP() << "the provider has no address handles";
  }
  AhAttr attr;
  attr.dgid = raw_->gid;
  attr.port_num = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, raw_->context->AllocPd());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Ah> ah, pd->CreateAh(attr));
  EXPECT_EQ(ah->pd(), pd.get());
  EXPECT_EQ(ah->attr().dgid, raw_->gid);
  EXPECT_THAT(pd->Destroy(), HasErrno(EBUSY));
  EXPECT_OK(Destroy(ah));
  EXPECT_OK(Destroy(pd));
}

TEST_P(ObjectLifetimeTest, CqUsedByAQpIsBusyAndStaysUsable) {
  EXPECT_THAT(raw_->cq->Destroy(), HasErrno(EBUSY));
  // The QP still works and completes on that CQ.
  ASSERT_OK(BringQpTo(*raw_, QpState::kInit));
  Buffer buf(64);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       raw_->pd->RegMr(buf.data(), 64, kAccessLocalWrite));
  const Sge sge = SgeOf(*mr, 0, 64);
  RecvWr wr;
  wr.wr_id = 5;
  wr.sg_list = {&sge, 1};
  ASSERT_OK(raw_->qp->PostRecv(wr));
  ASSERT_OK(BringQpTo(*raw_, QpState::kErr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(raw_->cq.get()));
  EXPECT_THAT(wc, WcFlushed(5u));
  EXPECT_OK(Destroy(raw_->qp));
  EXPECT_OK(Destroy(raw_->cq));
}

TEST_P(ObjectLifetimeTest, ChannelUsedByACqIsBusy) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompChannel> channel,
                       raw_->context->CreateCompChannel());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq,
                       raw_->context->CreateCq(8, channel.get()));
  EXPECT_THAT(channel->Destroy(), HasErrno(EBUSY));
  EXPECT_OK(cq->ReqNotify(false));
  EXPECT_OK(Destroy(cq));
  EXPECT_OK(Destroy(channel));
}

TEST_P(ObjectLifetimeTest, ChannelOfAnotherContextIsRejected) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> other, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompChannel> channel,
                       other->CreateCompChannel());
  EXPECT_THAT(raw_->context->CreateCq(8, channel.get()), HasErrno(EINVAL));
  EXPECT_OK(Destroy(channel));
}

TEST_P(ObjectLifetimeTest, CallsOnADestroyedQpFail) {
  Qp* qp = raw_->qp.get();
  ASSERT_OK(BringQpTo(*raw_, QpState::kInit));
  ASSERT_OK(qp->Destroy());
  const QpStep step = ToStateStep(QpState::kErr);
  EXPECT_THAT(qp->Modify(step.attr, step.mask), HasErrno(EINVAL));
  EXPECT_THAT(qp->Query(), HasErrno(EINVAL));
  EXPECT_THAT(qp->PostSend(MakeWr(WrOpcode::kSend, 1, {})), HasErrno(EINVAL));
  RecvWr wr;
  EXPECT_THAT(qp->PostRecv(wr), HasErrno(EINVAL));
  EXPECT_THAT(qp->Destroy(), HasErrno(EINVAL));
  // Its users are released: CQ and PD can go.
  EXPECT_OK(Destroy(raw_->cq));
  EXPECT_OK(Destroy(raw_->pd));
}

TEST_P(ObjectLifetimeTest, CallsOnADestroyedCqFail) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq,
                       raw_->context->CreateCq(8, nullptr));
  ASSERT_OK(cq->Destroy());
  WorkCompletion wc;
  EXPECT_THAT(cq->Poll({&wc, 1}), HasErrno(EINVAL));
  EXPECT_THAT(cq->ReqNotify(false), HasErrno(EINVAL));
  EXPECT_THAT(cq->Destroy(), HasErrno(EINVAL));
}

TEST_P(ObjectLifetimeTest, CallsOnADestroyedPdFail) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, raw_->context->AllocPd());
  ASSERT_OK(pd->Destroy());
  Buffer buf(64);
  EXPECT_THAT(pd->RegMr(buf.data(), 64, kAccessLocalWrite), HasErrno(EINVAL));
  EXPECT_THAT(pd->CreateQp(raw_->qp->init_attr()), HasErrno(EINVAL));
  AhAttr attr;
  attr.dgid = raw_->gid;
  EXPECT_THAT(pd->CreateAh(attr), HasErrno(EINVAL));
  EXPECT_THAT(pd->Destroy(), HasErrno(EINVAL));
}

TEST_P(ObjectLifetimeTest, CallsOnADestroyedChannelFail) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompChannel> channel,
                       raw_->context->CreateCompChannel());
  ASSERT_OK(channel->Destroy());
  EXPECT_THAT(channel->GetEvent(absl::Milliseconds(1)), HasErrno(EINVAL));
  EXPECT_THAT(raw_->context->CreateCq(8, channel.get()), HasErrno(EINVAL));
  EXPECT_THAT(channel->Destroy(), HasErrno(EINVAL));
}

TEST_P(ObjectLifetimeTest, DestroyOfANullHandleIsEinval) {
  std::unique_ptr<Pd> none;
  EXPECT_THAT(Destroy(none), HasErrno(EINVAL));
}

TEST_P(ObjectLifetimeTest, CreateAhRejectsBadPorts) {
  AhAttr attr;
  attr.dgid = raw_->gid;
  attr.port_num = 0;
  EXPECT_THAT(raw_->pd->CreateAh(attr), HasErrno(EINVAL));
  attr.port_num =
      static_cast<uint8_t>(raw_->context->device_attr().phys_port_cnt + 1);
  EXPECT_THAT(raw_->pd->CreateAh(attr), HasErrno(EINVAL));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(ObjectLifetimeTest);

// --- Bad work requests --------------------------------------------------------

class BadWrTest : public ProviderTest {};

TEST_P(BadWrTest, UnknownOpcodeIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  EXPECT_THAT(p->client().Post(MakeWr(static_cast<WrOpcode>(42), 1, {&sge, 1})),
              HasErrno(EINVAL));
  EXPECT_THAT(p->client().Post(MakeWr(static_cast<WrOpcode>(-1), 1, {&sge, 1})),
              HasErrno(EINVAL));
  ExpectQpState(p->client().qp(), QpState::kRts);
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(BadWrTest, UnknownSendFlagIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  SendWr wr = MakeWr(WrOpcode::kRdmaWrite, 1, {&sge, 1},
                     kSendSignaled | (1u << 10));
  wr.rdma.remote_addr = p->sbuf.addr();
  wr.rdma.rkey = p->smr->rkey();
  EXPECT_THAT(p->client().Post(wr), HasErrno(EINVAL));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

// A signaled IBV_SEND_INLINE READ of `sge` from the server's buffer.
SendWr InlineRead(const RcPair& p, const Sge& sge) {
  SendWr wr = MakeWr(WrOpcode::kRdmaRead, 1, {&sge, 1},
                     kSendSignaled | kSendInline);
  wr.rdma.remote_addr = p.sbuf.addr();
  wr.rdma.rkey = p.smr->rkey();
  return wr;
}

TEST_P(BadWrTest, InlineReadIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  const SendWr wr = InlineRead(*p, sge);
  if (!expect().inline_read.empty()) {
    // Posted; the response has no SGE list to land in.
    ASSERT_OK(p->client().Post(wr));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
    EXPECT_THAT(wc, WcStatusIn(expect().inline_read)) << wc;
    return;
  }
  EXPECT_THAT(p->client().Post(wr), HasErrno(EINVAL));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

// A zero-length inline READ: where an inline READ is posted, its response
// has no bytes to place, so the missing SGE list is never looked at and the
// READ succeeds (rxe_comp.c copy_data returns at once for length 0).
TEST_P(BadWrTest, ZeroLengthInlineRead) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const Sge sge = SgeOf(*p->cmr, 0, 0);
  const SendWr wr = InlineRead(*p, sge);
  if (!expect().inline_read.empty()) {
    ASSERT_OK(p->client().Post(wr));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
    EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaRead)) << wc;
    // The QP goes on: a later WRITE completes.
    const Sge one = SgeOf(*p->cmr, 0, 8);
    SendWr write = MakeWr(WrOpcode::kRdmaWrite, 2, {&one, 1}, kSendSignaled);
    write.rdma.remote_addr = p->sbuf.addr();
    write.rdma.rkey = p->smr->rkey();
    ASSERT_OK(p->client().Post(write));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc2, Await(p->client().send_cq()));
    EXPECT_THAT(wc2, WcOk(2u, WcOpcode::kRdmaWrite)) << wc2;
    return;
  }
  EXPECT_THAT(p->client().Post(wr), HasErrno(EINVAL));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(BadWrTest, TooManySendSgesIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK_AND_ASSIGN(QpAttr attr, p->client().qp()->Query());
  // The QP's cap, or the provider library's own limit (libsiw: 6).
  const uint32_t limit = expect().library_sge_limit != 0
                             ? expect().library_sge_limit
                             : attr.cap.max_send_sge;
  std::vector<Sge> sges(limit + 1, SgeOf(*p->cmr, 0, 8));
  EXPECT_THAT(p->client().PostSendv(1, sges, kSendSignaled), HasErrno(EINVAL));
  EXPECT_THAT(p->client().PostWritev(2, sges, kSendSignaled, p->sbuf.addr(),
                                     p->smr->rkey()),
              HasErrno(EINVAL));
  // Exactly the limit is fine.
  sges.pop_back();
  EXPECT_OK(p->client().PostWritev(3, sges, kSendSignaled, p->sbuf.addr(),
                                   p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(3u, WcOpcode::kRdmaWrite)) << wc;
}

TEST_P(BadWrTest, TooManyRecvSgesIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK_AND_ASSIGN(QpAttr attr, p->server().qp()->Query());
  const uint32_t limit = expect().library_sge_limit != 0
                             ? expect().library_sge_limit
                             : attr.cap.max_recv_sge;
  std::vector<Sge> sges(limit + 1, SgeOf(*p->smr, 0, 8));
  EXPECT_THAT(p->server().PostRecvv(1, sges), HasErrno(EINVAL));
  // Nothing was queued: ERR flushes nothing.
  ASSERT_OK(p->server().qp()->Modify(ToStateStep(QpState::kErr).attr,
                                     kQpState));
  EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
}

TEST_P(BadWrTest, FirstBadWrStopsABatchAndIsReported) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  std::vector<SendWr> wrs;
  for (uint64_t id = 1; id <= 4; ++id) {
    SendWr wr = MakeWr(WrOpcode::kRdmaWrite, id, {&sge, 1});
    wr.rdma.remote_addr = p->sbuf.addr();
    wr.rdma.rkey = p->smr->rkey();
    wrs.push_back(wr);
  }
  wrs[2].opcode = static_cast<WrOpcode>(42);
  size_t bad = 99;
  EXPECT_THAT(p->client().qp()->PostSend(wrs, &bad), HasErrno(EINVAL));
  EXPECT_EQ(bad, 2u);
  // The two before it were posted and complete; the rest were not.
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(wcs[0], WcOk(1u, WcOpcode::kRdmaWrite));
  EXPECT_THAT(wcs[1], WcOk(2u, WcOpcode::kRdmaWrite));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(BadWrTest, SendQueueFullIsEnomem) {
  if (!expect().sq_full_at_depth) {
    GTEST_SKIP() << "libsiw's send ring is full only while the kernel has "
                    "not taken its slots (providers/siw/siw.c): a race";
  }
  EndpointAttr attr = DefaultAttr();
  attr.cap.max_send_wr = 8;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  // A silent peer keeps everything outstanding.
  ASSERT_OK(p->server().qp()->Modify(ToStateStep(QpState::kReset).attr,
                                     kQpState));
  ASSERT_OK_AND_ASSIGN(QpAttr qattr, p->client().qp()->Query());
  const uint32_t depth = qattr.cap.max_send_wr;
  ASSERT_GE(depth, 8u);
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  std::vector<SendWr> wrs;
  for (uint32_t i = 0; i <= depth; ++i) {
    SendWr wr = MakeWr(WrOpcode::kRdmaWrite, i, {&sge, 1});
    wr.rdma.remote_addr = p->sbuf.addr();
    wr.rdma.rkey = p->smr->rkey();
    wrs.push_back(wr);
  }
  size_t bad = 12345;
  EXPECT_THAT(p->client().qp()->PostSend(wrs, &bad), HasErrno(ENOMEM));
  EXPECT_EQ(bad, depth);
  EXPECT_THAT(p->client().qp()->PostSend(wrs.back()), HasErrno(ENOMEM));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(BadWrTest);

// --- When a send-queue slot is free again -----------------------------------

class SendQueueSlotTest : public ProviderTest {
 protected:
  // Waits until the first `bytes` bytes of the server's buffer equal the
  // client's (the writes landed), polling the server's receive CQ, which
  // must stay empty, so that the sim progresses meanwhile; then watches it
  // for kQuiet more, time for the ACKs to reach the client.
  void AwaitWritesLanded(const RcPair& p, size_t bytes) {
    const absl::Time deadline = absl::Now() + kTimeout;
    while (p.sbuf.Bytes(0, bytes) != p.cbuf.Bytes(0, bytes)) {
      ASSERT_LT(absl::Now(), deadline) << "the writes never landed";
      WorkCompletion wc;
      ASSERT_OK_AND_ASSIGN(int n, p.server().recv_cq()->Poll({&wc, 1}));
      ASSERT_EQ(n, 0) << "the server's receive CQ got wr_id " << wc.wr_id
                      << " status " << WcStatusName(wc.status);
    }
    EXPECT_THAT(Drain(p.server().recv_cq()), ::testing::IsEmpty());
  }
};

// ibv_post_send(3) gives a send queue max_send_wr outstanding WRs and leaves
// open when a completed unsignaled WR stops counting. mlx5 frees its slot
// only when a completion of it or of a later WR of the queue is polled
// (providers/mlx5/cq.c moves the SQ's tail; providers/mlx5/qp.c
// mlx5_wq_overflow), and so does the ibta profile; rxe frees it as the WR
// completes (rxe_comp.c), siw as the kernel takes it (siw_qp.c
// siw_activate_tx_from_sq). Here every WR has completed on the wire and no
// completion was polled: the next post is ENOMEM where slots are held, and
// polling the one signaled WR's completion frees every slot before it.
TEST_P(SendQueueSlotTest, CompletedUnsignaledWrsHoldSlotsUntilAPoll) {
  EndpointAttr attr = DefaultAttr();
  attr.cap.max_send_wr = 8;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  ASSERT_OK_AND_ASSIGN(QpAttr qattr, p->client().qp()->Query());
  const uint32_t depth = qattr.cap.max_send_wr;
  ASSERT_GE(depth, 8u);
  NoteValue("max_send_wr", depth);
  p->cbuf.FillPattern(7, 0, 8 * (depth + 1));
  auto write = [&](uint32_t i, uint32_t flags) {
    const Sge sge = SgeOf(*p->cmr, 8 * i, 8);
    SendWr wr = MakeWr(WrOpcode::kRdmaWrite, i, {&sge, 1}, flags);
    wr.rdma.remote_addr = p->sbuf.addr(8 * i);
    wr.rdma.rkey = p->smr->rkey();
    return p->client().qp()->PostSend(wr);
  };
  // depth - 1 unsignaled writes, then a signaled one: the queue is full,
  // every WR completes on the wire, and only the last gives a completion.
  for (uint32_t i = 0; i + 1 < depth; ++i) ASSERT_OK(write(i, 0));
  AwaitWritesLanded(*p, 8 * (depth - 1));
  if (HasFatalFailure()) return;
  ASSERT_OK(write(depth - 1, kSendSignaled));
  AwaitWritesLanded(*p, 8 * depth);
  if (HasFatalFailure()) return;

  // One more WR (it would write the bytes after the rest).
  const absl::Status extra = write(depth, 0);
  const bool held = ErrnoOf(extra) == ENOMEM;
  NoteValue("enomem_before_poll", held ? 1 : 0);
  switch (expect().sq_slots_held_until_polled) {
    case Known::kYes:
      EXPECT_THAT(extra, HasErrno(ENOMEM));
      break;
    case Known::kNo:
      EXPECT_OK(extra);
      break;
    case Known::kUnknown:
      EXPECT_TRUE(extra.ok() || held) << extra;
      break;
  }

  // The signaled WR's completion, the only one: polling it frees its slot
  // and the slots of the depth - 1 unsignaled WRs before it.
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  NoteCompletionStatus(wc.status);
  EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_EQ(wc.wr_id, depth - 1);
  if (extra.ok()) AwaitWritesLanded(*p, 8 * (depth + 1));
  if (HasFatalFailure()) return;
  EXPECT_THAT(Drain(p->client().send_cq()), ::testing::IsEmpty());
  // depth - 1 more WRs fit now (the extra one, where it was taken, may
  // still hold one slot), the last signaled to end the case cleanly.
  for (uint32_t i = 0; i + 1 < depth; ++i) {
    ASSERT_OK(write(i, i + 2 == depth ? kSendSignaled : 0))
        << "WR " << i << " of " << depth - 1 << " after the poll";
  }
  ASSERT_OK_AND_ASSIGN(wc, Await(p->client().send_cq()));
  EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_EQ(wc.wr_id, depth - 2);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(SendQueueSlotTest);

// --- Endpoint creation -------------------------------------------------------

class EndpointCreateTest : public ProviderTest {};

TEST_P(EndpointCreateTest, NullContextIsEinval) {
  EXPECT_THAT(Endpoint::Create(nullptr, EndpointAttr()), HasErrno(EINVAL));
}

TEST_P(EndpointCreateTest, ZeroCqDepthIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  EndpointAttr attr;
  attr.cq_depth = 0;
  EXPECT_THAT(Endpoint::Create(std::move(context), attr), HasErrno(EINVAL));
}

TEST_P(EndpointCreateTest, CapsOverTheDeviceAreEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  EndpointAttr attr;
  attr.cap.max_send_sge =
      static_cast<uint32_t>(context->device_attr().max_sge) + 1;
  EXPECT_THAT(Endpoint::Create(std::move(context), attr), HasErrno(EINVAL));
}

TEST_P(EndpointCreateTest, ANewEndpointIsInReset) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  Context* raw_context = context.get();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Endpoint> ep,
                       Endpoint::Create(std::move(context), EndpointAttr()));
  EXPECT_EQ(ep->context(), raw_context);
  ExpectQpState(ep->qp(), QpState::kReset);
  EXPECT_EQ(ep->qp()->pd(), ep->pd());
  EXPECT_EQ(ep->qp()->send_cq(), ep->send_cq());
  EXPECT_EQ(ep->qp()->recv_cq(), ep->recv_cq());
  EXPECT_NE(ep->send_cq(), ep->recv_cq());
  EXPECT_GE(ep->send_cq()->cqe(), EndpointAttr().cq_depth);
  EXPECT_THAT(ep->WaitConnected(absl::Milliseconds(1)), HasErrno(ENOTCONN));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(EndpointCreateTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
