// What an iWARP device (kernel siw) does where InfiniBand's rules do not
// apply: the cases qp_state_test and rc_errors_test skip there, asserted the
// iWARP way (RFC 5040 RDMAP over TCP; the siw sources are named in
// tools/guest/known_differences.md "## siw"). Skipped on InfiniBand
// providers, whose rules those files cover.
#include <cstdint>
#include <memory>
#include <vector>

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

class IwarpTest : public ProviderTest {
 protected:
  void SetUp() override {
    ProviderTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (expect().hand_connected_qps) {
      GTEST_SKIP() << "an InfiniBand provider: qp_state_test and "
                      "rc_errors_test cover its rules";
    }
  }

  // A receive on the client whose flush shows the TERMINATE arrived.
  static absl::Status PostSentinel(RcPair& p) {
    return p.client().PostRecv(99, p.cbuf.data() + p.cbuf.size() - 64, 64,
                               p.cmr.get());
  }
  static void ExpectSentinelFlushed(RcPair& p) {
    absl::StatusOr<WorkCompletion> wc = Await(p.client().recv_cq());
    ASSERT_TRUE(wc.ok()) << wc.status();
    EXPECT_THAT(*wc, WcFlushed(99u)) << *wc;
  }
};

TEST_P(IwarpTest, AQpConnectedByHandCannotReachRts) {
  // siw_qp.c siw_qp_modify: RTS needs the socket of an rdma_cm connection.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  const QpStep init = ResetToInitStep();
  ASSERT_OK(raw->qp->Modify(init.attr, init.mask));
  const QpStep rtr = InitToRtrStep(raw->qp->qp_num(), raw->gid);
  ASSERT_OK(raw->qp->Modify(rtr.attr, rtr.mask));
  const QpStep rts = RtrToRtsStep();
  EXPECT_THAT(raw->qp->Modify(rts.attr, rts.mask), HasErrno(EINVAL));
}

TEST_P(IwarpTest, QueryReportsNoStateNoPsnAndFixedAccess) {
  // siw_verbs.c siw_query_qp.
  EndpointAttr attr = DefaultAttr();
  attr.qp_access = kAccessLocalWrite;
  attr.sq_psn = 1234;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  ASSERT_OK_AND_ASSIGN(QpAttr q, p->client().qp()->Query());
  EXPECT_EQ(q.qp_state, QpState::kReset);
  EXPECT_EQ(q.sq_psn, 0u);
  EXPECT_EQ(q.qp_access_flags,
            kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
}

TEST_P(IwarpTest, SendWithoutAReceiveTerminates) {
  // No RNR: siw_qp_rx.c siw_proc_send finds no receive and TERMINATEs; the
  // SEND itself completed once sent.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(PostSentinel(*p));
  ASSERT_OK(p->client().PostSend(1, p->cbuf.data(), 100, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kSend)) << wc;
  ASSERT_NO_FATAL_FAILURE(ExpectSentinelFlushed(*p));
  EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
}

TEST_P(IwarpTest, QpAccessFlagsAreNotEnforced) {
  // siw keeps a QP's REMOTE_* flags (siw_qp.c) but never checks them: a
  // write to a QP without REMOTE_WRITE lands.
  EndpointAttr attr = DefaultAttr();
  attr.qp_access = kAccessLocalWrite;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  p->cbuf.FillPattern(7, 0, 256);
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 256, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaWrite)) << wc;
  // A send after it shows the write has landed (placement is in order).
  ASSERT_OK(p->server().PostRecv(2, p->sbuf.data() + 4096, 64, p->smr.get()));
  ASSERT_OK(p->client().PostSend(3, p->cbuf.data(), 8, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(2u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(p->sbuf.Bytes(0, 256), p->cbuf.Bytes(0, 256));
}

TEST_P(IwarpTest, PostsOutOfRtsWaitInTheSendRing) {
  // libsiw writes each valid WR into its send ring and rings the doorbell
  // only when the ring looked idle; the kernel refuses a doorbell out of
  // RTS (siw_verbs.c siw_post_send: ENOTCONN). The WRs stay in the ring,
  // holding their slots, and IDLE -> ERR flushes only the receives
  // (siw_qp.c siw_qp_nextstate_from_idle).
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp({4, 4, 1, 1, 0}));
  const QpStep init = ResetToInitStep();
  ASSERT_OK(raw->qp->Modify(init.attr, init.mask));
  const uint32_t slots = raw->qp->init_attr().cap.max_send_wr;
  ASSERT_GE(slots, 2u);
  Buffer buf(64);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       raw->pd->RegMr(buf.data(), 64, kAccessLocalWrite));
  const Sge sge = SgeOf(*mr, 0, 16);
  EXPECT_THAT(raw->qp->PostSend(MakeWr(WrOpcode::kSend, 0, {&sge, 1})),
              HasErrno(ENOTCONN));
  for (uint32_t i = 1; i < slots; ++i) {
    EXPECT_OK(raw->qp->PostSend(MakeWr(WrOpcode::kSend, i, {&sge, 1})))
        << "WR " << i << " of " << slots;
  }
  EXPECT_THAT(raw->qp->PostSend(MakeWr(WrOpcode::kSend, slots, {&sge, 1})),
              HasErrno(ENOMEM));
  const QpStep err = ToStateStep(QpState::kErr);
  ASSERT_OK(raw->qp->Modify(err.attr, err.mask));
  EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(IwarpTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
