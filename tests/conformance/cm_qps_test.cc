// QPs made by hand and connected through the connection manager
// (Provider::ConnectQps: rdma_connect(3) / rdma_accept(3) with
// rdma_conn_param.qp_num, librdmacm's "external QP"): the only way an iWARP
// QP reaches RTS, and one that works on every provider.
#include <cstdint>
#include <memory>

#include "core/endpoint.h"
#include "core/provider.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

class CmQpsTest : public ProviderTest {
 protected:
  void SetUp() override {
    ProviderTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(a_, OpenSide(0));
    ASSERT_OK_AND_ASSIGN(b_, OpenSide(devices().size() > 1 ? 1 : 0));
  }

  EndpointAttr Attr() const {
    EndpointAttr attr;
    attr.qp_access = FullAccess();
    return attr;
  }

  std::unique_ptr<Side> a_;
  std::unique_ptr<Side> b_;
};

TEST_P(CmQpsTest, HandMadeQpsCarryWritesAndSendsBothWays) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qa, CreateQpOn(*a_, QpType::kRc));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qb, CreateQpOn(*b_, QpType::kRc));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<QpLink> link,
                       provider().ConnectQps(qa.get(), qb.get(), Attr()));
  ExpectQpState(qa.get(), QpState::kRts);
  ExpectQpState(qb.get(), QpState::kRts);

  Buffer abuf(8192), bbuf(8192);
  abuf.FillPattern(5, 0, 3000);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> amr,
                       a_->pd->RegMr(abuf.data(), 8192, FullAccess()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> bmr,
                       b_->pd->RegMr(bbuf.data(), 8192, FullAccess()));
  // a writes 3000 bytes into b's buffer.
  const Sge wsge = SgeOf(*amr, 0, 3000);
  SendWr write = MakeWr(WrOpcode::kRdmaWrite, 1, {&wsge, 1});
  write.rdma.remote_addr = bbuf.addr();
  write.rdma.rkey = bmr->rkey();
  ASSERT_OK(qa->PostSend(write));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wwc, Await(a_->cq.get()));
  EXPECT_THAT(wwc, WcOk(1u, WcOpcode::kRdmaWrite)) << wwc;
  EXPECT_EQ(bbuf.Bytes(0, 3000), abuf.Bytes(0, 3000));
  // b sends them back into a's second half.
  const Sge rsge = SgeOf(*amr, 4096, 4096);
  RecvWr recv;
  recv.wr_id = 2;
  recv.sg_list = {&rsge, 1};
  ASSERT_OK(qa->PostRecv(recv));
  const Sge ssge = SgeOf(*bmr, 0, 3000);
  ASSERT_OK(qb->PostSend(MakeWr(WrOpcode::kSend, 3, {&ssge, 1})));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(b_->cq.get()));
  EXPECT_THAT(swc, WcOk(3u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(a_->cq.get()));
  EXPECT_THAT(rwc, WcOk(2u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, 3000u);
  EXPECT_EQ(abuf.Bytes(4096, 3000), abuf.Bytes(0, 3000));
}

// The QPs get the retry and timer attributes the caller asked for, whatever
// the CM would choose: a SEND to a peer with no receive runs out of its RNR
// retries (IBA 9.7.5.2.8) as it does between QPs connected by hand.
TEST_P(CmQpsTest, TheQpsTakeTheRetryAttributesAsked) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qa, CreateQpOn(*a_, QpType::kRc));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qb, CreateQpOn(*b_, QpType::kRc));
  EndpointAttr attr = Attr();
  attr.timeout = 14;
  attr.retry_cnt = 2;
  attr.rnr_retry = 2;
  attr.min_rnr_timer = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<QpLink> link,
                       provider().ConnectQps(qa.get(), qb.get(), attr));
  if (expect().query_reports_qp_attrs) {
    for (Qp* qp : {qa.get(), qb.get()}) {
      ASSERT_OK_AND_ASSIGN(QpAttr got, qp->Query());
      EXPECT_EQ(got.timeout, 14) << "qp " << qp->qp_num();
      EXPECT_EQ(got.retry_cnt, 2) << "qp " << qp->qp_num();
      EXPECT_EQ(got.rnr_retry, 2) << "qp " << qp->qp_num();
      EXPECT_EQ(got.min_rnr_timer, 1) << "qp " << qp->qp_num();
    }
  }
  if (!expect().has_rnr) return;  // iWARP: no RNR (RnrTest says more)
  Buffer abuf(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> amr,
                       a_->pd->RegMr(abuf.data(), 4096, FullAccess()));
  const Sge sge = SgeOf(*amr, 0, 64);
  ASSERT_OK(qa->PostSend(MakeWr(WrOpcode::kSend, 7, {&sge, 1})));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(a_->cq.get()));
  EXPECT_THAT(wc, WcStatusIn(expect().rnr_exceeded)) << wc;
  EXPECT_EQ(wc.wr_id, 7u);
}

TEST_P(CmQpsTest, OneQpTwiceIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qa, CreateQpOn(*a_, QpType::kRc));
  EXPECT_THAT(provider().ConnectQps(qa.get(), qa.get(), Attr()),
              HasErrno(EINVAL));
  EXPECT_THAT(provider().ConnectQps(qa.get(), nullptr, Attr()),
              HasErrno(EINVAL));
  ExpectQpState(qa.get(), QpState::kReset);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(CmQpsTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
