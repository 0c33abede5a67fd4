// A SEND posted before RTS on a QP connected by hand. The post fails, but
// on rxe the WR is in the send queue all the same: libibverbs' rxe writes
// every valid WR into the queue and then rings the doorbell, which the
// kernel refuses below RTS (providers/rxe/rxe.c rxe_post_send,
// rxe_verbs.c rxe_post_send). Entering RTS does not run the requester
// (rxe_qp.c rxe_qp_modify), so the WR waits for the next doorbell, the
// next post_send, and then goes out ahead of that post's WR. Elsewhere the
// refused WR is gone. Found by the differential runs (docs/fidelity.md);
// iWARP's ring before RTS is WaitingRingTest's.
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
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

using ::testing::IsEmpty;

class KeptBeforeRtsTest : public ProviderTest {};

TEST_P(KeptBeforeRtsTest, ASendRefusedInInitGoesWithTheNextPost) {
  if (!expect().hand_connected_qps) {
    GTEST_SKIP() << "iWARP QPs reach RTS through the CM only "
                    "(WaitingRingTest covers its send ring before RTS)";
  }
  const int other = devices().size() > 1 ? 1 : 0;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> a, MakeRawQp());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> b,
                       MakeRawQp({16, 16, 2, 2, 0}, other));
  Buffer abuf(4096), bbuf(4096);
  bbuf.Set(0xee);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> amr,
                       a->pd->RegMr(abuf.data(), 4096, kAccessLocalWrite));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> bmr,
                       b->pd->RegMr(bbuf.data(), 4096, kAccessLocalWrite));
  abuf.FillPattern(7, 0, 4096);
  const EndpointAttr attr;
  ASSERT_OK(ModifyQpToInit(a->qp.get(), attr));
  ASSERT_OK(ModifyQpToInit(b->qp.get(), attr));

  // In INIT: refused.
  const Sge first = SgeOf(*amr, 0, 100);
  EXPECT_THAT(a->qp->PostSend(MakeWr(WrOpcode::kSend, 1, {&first, 1},
                                     kSendSignaled)),
              HasErrno(EINVAL));

  for (uint64_t id : {10u, 11u}) {
    const Sge rsge = SgeOf(*bmr, (id - 10) * 1024, 1024);
    RecvWr rwr;
    rwr.wr_id = id;
    rwr.sg_list = {&rsge, 1};
    ASSERT_OK(b->qp->PostRecv(rwr));
  }
  ASSERT_OK(ModifyQpToRtr(a->qp.get(), attr, b->qp->qp_num(), b->gid, 100));
  ASSERT_OK(ModifyQpToRtr(b->qp.get(), attr, a->qp->qp_num(), a->gid, 200));
  ASSERT_OK(ModifyQpToRts(a->qp.get(), attr, 200));
  ASSERT_OK(ModifyQpToRts(b->qp.get(), attr, 100));
  // Reaching RTS sends nothing.
  LetTimePass(absl::Milliseconds(20));
  EXPECT_THAT(Drain(a->cq.get()), IsEmpty());
  EXPECT_THAT(Drain(b->cq.get()), IsEmpty());

  const Sge second = SgeOf(*amr, 1000, 200);
  ASSERT_OK(a->qp->PostSend(MakeWr(WrOpcode::kSend, 2, {&second, 1},
                                   kSendSignaled)));
  if (expect().keeps_send_wrs_posted_before_rts) {
    ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> swcs,
                         AwaitN(a->cq.get(), 2));
    EXPECT_THAT(swcs[0], WcOk(1u, WcOpcode::kSend)) << swcs[0];
    EXPECT_THAT(swcs[1], WcOk(2u, WcOpcode::kSend)) << swcs[1];
    ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> rwcs,
                         AwaitN(b->cq.get(), 2));
    EXPECT_THAT(rwcs[0], WcOk(10u, WcOpcode::kRecv)) << rwcs[0];
    EXPECT_EQ(rwcs[0].byte_len, 100u);
    EXPECT_THAT(rwcs[1], WcOk(11u, WcOpcode::kRecv)) << rwcs[1];
    EXPECT_EQ(rwcs[1].byte_len, 200u);
    EXPECT_EQ(bbuf.Bytes(0, 100), abuf.Bytes(0, 100));
    EXPECT_EQ(bbuf.Bytes(1024, 200), abuf.Bytes(1000, 200));
    return;
  }
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a->cq.get()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b->cq.get()));
  EXPECT_THAT(rwc, WcOk(10u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, 200u);
  EXPECT_EQ(bbuf.Bytes(0, 200), abuf.Bytes(1000, 200));
  EXPECT_THAT(Drain(a->cq.get()), IsEmpty());
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(KeptBeforeRtsTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
