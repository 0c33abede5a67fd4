// A SEND that has to be sent again after its memory region was
// deregistered. ibv_dereg_mr(3) leaves using an MR that outstanding WRs
// still name to the device; rxe builds every packet, a retry's too, by
// reading the buffer through its key (rxe_req.c copy_data), so the retry
// fails the WR (found by the differential runs, docs/fidelity.md).
#include <cstdint>
#include <memory>

#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

class RetryRegatherTest : public ProviderTest {};

TEST_P(RetryRegatherTest, ASendRetriedAfterItsMrWasDeregistered) {
  if (!expect().has_rnr) {
    GTEST_SKIP() << "iWARP has no RNR: a send without a receive ends the "
                    "connection (IwarpTest.SendWithoutAReceiveTerminates)";
  }
  EndpointAttr attr = DefaultAttr();
  attr.rnr_retry = 2;
  attr.min_rnr_timer = 25;  // 61.44 ms: time to deregister before a retry
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  Buffer buf(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       p->client().pd()->RegMr(buf.data(), 4096,
                                               kAccessLocalWrite));
  // No receive at the server: the SEND draws an RNR NAK and waits.
  const Sge sge = SgeOf(*mr, 0, 64);
  ASSERT_OK(p->client().Post(MakeWr(WrOpcode::kSend, 1, {&sge, 1})));
  ASSERT_OK(mr->Destroy());
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_EQ(wc.wr_id, 1u);
  if (expect().regathers_on_retransmit) {
    EXPECT_THAT(wc, WcStatusIn(expect().bad_lkey)) << wc;
  } else {
    EXPECT_THAT(wc, WcStatusIn(expect().rnr_exceeded)) << wc;
  }
  ExpectQpState(p->client().qp(), QpState::kErr);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(RetryRegatherTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
