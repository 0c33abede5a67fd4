// A fenced WR that has to be sent again. IBA 10.8.3.3: a fenced WR waits for
// the READs and atomics posted before it. On a retry (here after RNR NAKs)
// rxe applies its fence check again and counts every READ in flight, those
// posted after the fenced WR too; they cannot complete before it, so the QP
// stalls until it is moved to ERR (rxe_req.c rxe_wqe_is_fenced; found by
// the differential runs, docs/fidelity.md).
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

class FenceRetryTest : public ProviderTest {};

TEST_P(FenceRetryTest, AFencedSendRetriedBehindALaterRead) {
  if (!expect().has_rnr) {
    GTEST_SKIP() << "iWARP has no RNR: a send without a receive ends the "
                    "connection (IwarpTest.SendWithoutAReceiveTerminates)";
  }
  EndpointAttr attr = DefaultAttr();
  attr.rnr_retry = 2;
  attr.min_rnr_timer = 1;  // 0.01 ms
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  // The server has no receive: the SEND draws RNR NAKs. The READ behind it
  // goes out meanwhile.
  ASSERT_OK(p->client().PostSend(1, p->cbuf.data(), 64, p->cmr.get(),
                                 kSendSignaled | kSendFence));
  const Sge sge = SgeOf(*p->cmr, 4096, 64);
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 2, {&sge, 1});
  read.rdma.remote_addr = p->sbuf.addr();
  read.rdma.rkey = p->smr->rkey();
  ASSERT_OK(p->client().Post(read));
  if (!expect().fence_retry_stalls) {
    ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                         AwaitN(p->client().send_cq(), 2));
    EXPECT_THAT(wcs[0], WcStatusIn(expect().rnr_exceeded)) << wcs[0];
    EXPECT_EQ(wcs[0].wr_id, 1u);
    EXPECT_THAT(wcs[1], WcFlushed(2u)) << wcs[1];
    ExpectQpState(p->client().qp(), QpState::kErr);
    return;
  }
  // Stalled: no retry counts down, nothing completes, the QP stays in RTS.
  EXPECT_THAT(Drain(p->client().send_cq(), absl::Milliseconds(300)),
              IsEmpty());
  ExpectQpState(p->client().qp(), QpState::kRts);
  ASSERT_OK(MoveToErr(p->client().qp()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(wcs, ElementsAre(WcFlushed(1u), WcFlushed(2u)));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(FenceRetryTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
