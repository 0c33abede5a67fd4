// A WR posted while an earlier SEND waits out an RNR NAK (IBA 9.7.5.2.8:
// the requester sends the NAKed message again once the RNR timer has run).
// Whether the later WR starts during the wait is the device's: rxe takes
// the next WQE unless a retry is due (rxe_req.c rxe_requester checks
// need_retry only once wait_for_rnr_timer is clear). A WR that fails its
// local checks there puts rxe's requester in its error state, in which it
// sends nothing again: the RNR retry never goes out, the SEND at the head
// of the queue never completes, and neither does anything behind it until
// the QP moves to ERR. Found by the differential runs (docs/fidelity.md).
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

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class RnrWaitTest : public ProviderTest {};

TEST_P(RnrWaitTest, AWrFailingLocallyDuringTheWait) {
  if (!expect().has_rnr) {
    GTEST_SKIP() << "iWARP has no RNR: a send without a receive ends the "
                    "connection (IwarpTest.SendWithoutAReceiveTerminates)";
  }
  EndpointAttr attr = DefaultAttr();
  attr.rnr_retry = 7;       // retries without end
  attr.min_rnr_timer = 24;  // 40.96 ms between them
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  // The server has no receive: the SEND draws an RNR NAK, and the client
  // waits 41 ms before sending it again.
  ASSERT_OK(p->client().PostSend(1, p->cbuf.data(), 64, p->cmr.get(),
                                 kSendSignaled));
  LetTimePass(absl::Milliseconds(5));
  // In the wait: the receive the retry will find, then a WRITE whose lkey
  // names nothing.
  ASSERT_OK(p->server().PostRecv(10, p->sbuf.data(), 64, p->smr.get()));
  Sge sge = SgeOf(*p->cmr, 4096, 64);
  sge.lkey = BadKey(sge.lkey);
  SendWr write = MakeWr(WrOpcode::kRdmaWrite, 2, {&sge, 1});
  write.rdma.remote_addr = p->sbuf.addr(8192);
  write.rdma.rkey = p->smr->rkey();
  ASSERT_OK(p->client().Post(write));
  if (!expect().transmit_failure_in_rnr_wait_stalls) {
    // The WRITE waits for the retry; the SEND goes again and lands.
    ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                         AwaitN(p->client().send_cq(), 2));
    EXPECT_THAT(wcs[0], WcOk(1u, WcOpcode::kSend)) << wcs[0];
    EXPECT_EQ(wcs[1].wr_id, 2u);
    EXPECT_THAT(wcs[1], WcStatusIn(expect().bad_lkey)) << wcs[1];
    ASSERT_OK_AND_ASSIGN(WorkCompletion recv, Await(p->server().recv_cq()));
    EXPECT_THAT(recv, WcOk(10u, WcOpcode::kRecv)) << recv;
    return;
  }
  // Stalled: the RNR timer runs out (several times over) and nothing is
  // sent again; nothing completes on either side, the QP stays in RTS.
  EXPECT_THAT(Drain(p->client().send_cq(), absl::Milliseconds(300)),
              IsEmpty());
  EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
  ExpectQpState(p->client().qp(), QpState::kRts);
  ASSERT_OK(MoveToErr(p->client().qp()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(wcs, ElementsAre(WcFlushed(1u), WcFlushed(2u)));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(RnrWaitTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
