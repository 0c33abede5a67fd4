// The status a failed WR reports when it fails behind an outstanding one
// and the QP is then flushed. ibv_poll_cq(3) leaves it to the device: the
// spec's requester completes WRs in order, so the failed WR waits for the
// one ahead; a move to ERR then completes both. rxe's flush sets
// WR_FLUSH_ERR on every WR left in the send queue, the failed one included
// (rxe_comp.c rxe_drain_resp_pkts); the sim's ibta profile keeps the WR's
// own status (found by the differential runs, docs/fidelity.md).
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

class FlushStatusTest : public ProviderTest {};

TEST_P(FlushStatusTest, AFailedWrBehindAnOutstandingRead) {
  if (!expect().has_transport_retries) {
    GTEST_SKIP() << "iWARP: a silent peer leaves no READ outstanding "
                    "(TCP carries it; RcErrorTest.ModifyToErrFlushes"
                    "OutstandingSends says more)";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  // The server is silent (RESET): the READ stays outstanding.
  QpAttr reset;
  reset.qp_state = QpState::kReset;
  ASSERT_OK(p->server().qp()->Modify(reset, kQpState));
  const Sge sge = SgeOf(*p->cmr, 0, 64);
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 1, {&sge, 1});
  read.rdma.remote_addr = p->sbuf.addr();
  read.rdma.rkey = p->smr->rkey();
  ASSERT_OK(p->client().Post(read));
  // Behind it, a SEND whose lkey names no MR: it fails as it is sent.
  Sge bad = SgeOf(*p->cmr, 0, 64);
  bad.lkey = BadKey(p->cmr->lkey());
  ASSERT_OK(p->client().Post(MakeWr(WrOpcode::kSend, 2, {&bad, 1})));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
  ASSERT_OK(MoveToErr(p->client().qp()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(wcs[0], WcFlushed(1u)) << wcs[0];
  if (expect().flush_overrides_failures) {
    EXPECT_THAT(wcs[1], WcFlushed(2u)) << wcs[1];
  } else {
    EXPECT_THAT(wcs[1], WcStatusIn(expect().bad_lkey)) << wcs[1];
    EXPECT_EQ(wcs[1].wr_id, 2u);
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(FlushStatusTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
