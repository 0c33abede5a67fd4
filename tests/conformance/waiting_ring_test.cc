// WRs an iWARP QP took before the CM connected it. libsiw writes each into
// the send ring; the kernel refuses the doorbell out of RTS (ENOTCONN) and
// the WRs wait there (IwarpTest.PostsOutOfRtsWaitInTheSendRing). Reaching
// RTS does not start the send engine (siw_qp.c siw_qp_nextstate_from_idle
// sets the state only), and libsiw rings the doorbell only when the slot
// before the first new WR is free (providers/siw/siw.c siw_post_send), so
// later posts wait behind them. The engine runs when it has work of its
// own: an RDMA READ request from the peer starts the send queue, which
// answers it and goes on with the ring (siw_qp_rx.c, siw_qp_tx.c
// siw_activate_tx). Found by the differential runs (docs/fidelity.md).
#include <cstdint>
#include <memory>
#include <vector>

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

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class WaitingRingTest : public ProviderTest {};

TEST_P(WaitingRingTest, WrsPostedBeforeTheConnectWaitForAReadResponse) {
  if (expect().hand_connected_qps) {
    GTEST_SKIP() << "an InfiniBand QP takes no send before RTS "
                    "(QpStateTest covers post_send_before_rts_errno)";
  }
  if (devices().size() < 2) GTEST_SKIP() << "needs two devices";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> a, OpenSide(0));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> b, OpenSide(1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qa, CreateQpOn(*a, QpType::kRc));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qb, CreateQpOn(*b, QpType::kRc));
  Buffer abuf(8192), bbuf(8192);
  abuf.FillPattern(6);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> amr,
                       a->pd->RegMr(abuf.data(), 8192, FullAccess()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> bmr,
                       b->pd->RegMr(bbuf.data(), 8192, FullAccess()));
  std::vector<Sge> recv_sges;
  for (uint64_t i = 0; i < 3; ++i) recv_sges.push_back(SgeOf(*bmr, 64 * i, 64));
  for (uint64_t i = 0; i < 3; ++i) {
    RecvWr recv;
    recv.wr_id = 20 + i;
    recv.sg_list = {&recv_sges[i], 1};
    ASSERT_OK(qb->PostRecv(recv));
  }
  std::vector<Sge> send_sges;
  for (uint64_t i = 0; i < 3; ++i) send_sges.push_back(SgeOf(*amr, 16 * i, 16));
  auto send = [&](uint64_t i) {
    return qa->PostSend(MakeWr(WrOpcode::kSend, 1 + i, {&send_sges[i], 1}));
  };
  EXPECT_THAT(send(0), HasErrno(expect().post_send_before_rts_errno));
  EXPECT_OK(send(1));

  EndpointAttr attr;
  attr.qp_access = FullAccess();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<QpLink> link,
                       provider().ConnectQps(qa.get(), qb.get(), attr));
  LetTimePass(absl::Milliseconds(100));
  EXPECT_THAT(Drain(a->cq.get()), IsEmpty()) << "the connect started the ring";
  EXPECT_OK(send(2));  // no doorbell: the slot before it is taken
  LetTimePass(absl::Milliseconds(100));
  EXPECT_THAT(Drain(a->cq.get()), IsEmpty()) << "a post started the ring";
  EXPECT_THAT(Drain(b->cq.get()), IsEmpty());

  // A READ from b: a's send engine answers it, then sends the ring.
  const Sge sink = SgeOf(*bmr, 4096, 64);
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 40, {&sink, 1});
  read.rdma.remote_addr = abuf.addr(1024);
  read.rdma.rkey = amr->rkey();
  ASSERT_OK(qb->PostSend(read));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> sent,
                       AwaitN(a->cq.get(), 3));
  EXPECT_THAT(sent, ElementsAre(WcOk(1u, WcOpcode::kSend),
                                WcOk(2u, WcOpcode::kSend),
                                WcOk(3u, WcOpcode::kSend)));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> got,
                       AwaitN(b->cq.get(), 4));
  EXPECT_THAT(got, ElementsAre(WcOk(40u, WcOpcode::kRdmaRead),
                               WcOk(20u, WcOpcode::kRecv),
                               WcOk(21u, WcOpcode::kRecv),
                               WcOk(22u, WcOpcode::kRecv)));
  EXPECT_EQ(bbuf.Bytes(4096, 64), abuf.Bytes(1024, 64));
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(bbuf.Bytes(64 * i, 16), abuf.Bytes(16 * i, 16)) << "send " << i;
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(WaitingRingTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
