// The installed gtest helpers used as a user's suite uses them: the fixture
// on the provider VERBSIM_PROVIDER names (the sim here), the matchers, and
// a fault rule on the sim's fabric.
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/matchers.h"
#include "tests/provider_fixture.h"

namespace verbsim::testing {
namespace {

class ProviderFixtureTest : public ProviderTest {};

TEST_F(ProviderFixtureTest, SendsOverTheConnectedPair) {
  char out[32] = "through the fixture", in[32] = {};
  auto omr = client().RegMsgs(out, sizeof(out));
  auto imr = server().RegMsgs(in, sizeof(in));
  ASSERT_THAT(omr, IsOk());
  ASSERT_THAT(imr, IsOk());
  ASSERT_THAT(server().PostRecv(1, in, sizeof(in), imr->get()), IsOk());
  ASSERT_THAT(client().PostSend(2, out, sizeof(out), omr->get(), kSendSignaled),
              IsOk());
  absl::StatusOr<WorkCompletion> wc = server().GetRecvComp(absl::Seconds(5));
  ASSERT_THAT(wc, IsOk());
  EXPECT_THAT(*wc, WcStatusIs(WcStatus::kSuccess));
  EXPECT_STREQ(in, "through the fixture");
}

TEST_F(ProviderFixtureTest, AFaultRuleOnTheSimMakesARetransmission) {
  sim::Fabric* f = fabric();
  if (f == nullptr) GTEST_SKIP() << "not the sim: no fault rules";
  ASSERT_THAT(f->AddFaults("drop op=SEND_ONLY nth=1"), IsOk());
  EXPECT_THAT(f->AddFaults("drop op=NOPE"), HasErrno(EINVAL));
  char out[8] = "x", in[8] = {};
  auto omr = client().RegMsgs(out, sizeof(out));
  auto imr = server().RegMsgs(in, sizeof(in));
  ASSERT_THAT(server().PostRecv(1, in, sizeof(in), imr->get()), IsOk());
  ASSERT_THAT(client().PostSend(2, out, 2, omr->get(), kSendSignaled), IsOk());
  absl::StatusOr<WorkCompletion> wc = client().GetSendComp(absl::Seconds(5));
  ASSERT_THAT(wc, IsOk());
  EXPECT_THAT(*wc, WcStatusIs(WcStatus::kSuccess));
  // The sim counts per QP (Qp::QueryCounters): one request dropped, sent
  // again, and no NAK.
  absl::StatusOr<QpCounters> counters = client().qp()->QueryCounters();
  ASSERT_THAT(counters, IsOk());
  EXPECT_GE(counters->retransmissions, 1u);
  EXPECT_GE(counters->packets_sent, 2u);
  EXPECT_EQ(counters->naks_received, 0u);
}

}  // namespace
}  // namespace verbsim::testing
