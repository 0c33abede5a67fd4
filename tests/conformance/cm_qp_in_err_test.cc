// Provider::ConnectQps given a QP in ERR. On iWARP nothing reports the
// state (siw_query_qp says RESET), so a program can hand the CM such a QP.
// siw refuses it as the connection is set up (EINVAL): the passive side's
// accept first (siw_cm.c siw_accept), else the active side when the MPA
// reply arrives (siw_proc_mpareply), once the passive side has accepted.
// Every side whose connection had begun is dropped (siw_qp_cm_drop): it
// enters ERR and its queues flush, the WRs that waited in its rings while
// it was out of RTS included. Found by the differential runs
// (docs/fidelity.md).
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
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

enum class InErr { kActive, kPassive };
void PrintTo(InErr side, std::ostream* os) {
  *os << (side == InErr::kActive ? "ActiveInErr" : "PassiveInErr");
}

class CmQpInErrTest : public ProviderTestWithParam<InErr> {};

// Every completion `cq` gives: polled until `n` have come (or the
// fixture's timeout passed), then for kQuiet more. siw drops a refused
// connection from its CM work (siw_qp_cm_drop) and flushes the dropped
// side's queues then, not within a fixed time of the refusal.
std::vector<WorkCompletion> AwaitThenDrain(Cq* cq, size_t n) {
  std::vector<WorkCompletion> got;
  while (got.size() < n) {
    absl::StatusOr<WorkCompletion> wc = Await(cq);
    if (!wc.ok()) break;
    got.push_back(*wc);
  }
  std::vector<WorkCompletion> more = Drain(cq);
  got.insert(got.end(), more.begin(), more.end());
  return got;
}

TEST_P(CmQpInErrTest, IsRefusedAndTheStartedSidesFlush) {
  if (expect().hand_connected_qps) {
    GTEST_SKIP() << "an InfiniBand QP reports its state, and ConnectQps "
                    "takes QPs in RESET (CmQpsTest)";
  }
  if (devices().size() < 2) GTEST_SKIP() << "needs two devices";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> a, OpenSide(0));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> b, OpenSide(1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qa, CreateQpOn(*a, QpType::kRc));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qb, CreateQpOn(*b, QpType::kRc));
  Buffer buf(8192);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> amr,
                       a->pd->RegMr(buf.data(), 4096, FullAccess()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> bmr,
                       b->pd->RegMr(buf.data() + 4096, 4096, FullAccess()));
  const Sge sa = SgeOf(*amr, 0, 64);
  const Sge sb = SgeOf(*bmr, 0, 64);
  auto post_recv = [](Qp* qp, uint64_t wr_id, const Sge& sge) {
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = {&sge, 1};
    return qp->PostRecv(wr);
  };
  ASSERT_OK(post_recv(qa.get(), 10, sa));
  ASSERT_OK(post_recv(qb.get(), 20, sb));
  const bool active = param() == InErr::kActive;
  Qp* in_err = active ? qa.get() : qb.get();
  ASSERT_OK(MoveToErr(in_err));
  ASSERT_OK_AND_ASSIGN(WorkCompletion flushed,
                       Await(active ? a->cq.get() : b->cq.get()));
  EXPECT_THAT(flushed, WcFlushed(active ? 10u : 20u));
  // Work that waits: a receive on each, and a SEND, which the QP in ERR
  // takes and the other keeps in its ring behind the refused doorbell.
  ASSERT_OK(post_recv(qa.get(), 11, sa));
  ASSERT_OK(post_recv(qb.get(), 21, sb));
  const absl::Status send_a = qa->PostSend(MakeWr(WrOpcode::kSend, 30, {&sa, 1}));
  const absl::Status send_b = qb->PostSend(MakeWr(WrOpcode::kSend, 40, {&sb, 1}));
  EXPECT_THAT(active ? send_a : send_b, IsOk());
  EXPECT_THAT(active ? send_b : send_a,
              HasErrno(expect().post_send_before_rts_errno));

  EndpointAttr attr;
  attr.qp_access = FullAccess();
  EXPECT_THAT(provider().ConnectQps(qa.get(), qb.get(), attr),
              HasErrno(EINVAL));
  LetTimePass(absl::Milliseconds(200));
  if (active) {
    EXPECT_THAT(AwaitThenDrain(a->cq.get(), 2),
                ElementsAre(WcFlushed(30u), WcFlushed(11u)));
    EXPECT_THAT(AwaitThenDrain(b->cq.get(), 3),
                ElementsAre(WcFlushed(40u), WcFlushed(20u), WcFlushed(21u)));
  } else {
    EXPECT_THAT(AwaitThenDrain(a->cq.get(), 3),
                ElementsAre(WcFlushed(30u), WcFlushed(10u), WcFlushed(11u)));
    EXPECT_THAT(Drain(b->cq.get()), IsEmpty());
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(CmQpInErrTest,
                                       ::testing::Values(InErr::kActive,
                                                         InErr::kPassive));

}  // namespace
}  // namespace testing
}  // namespace verbsim
