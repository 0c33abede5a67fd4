// A READ with IBV_SEND_FENCE (ibv_post_send(3): the fence waits for earlier
// READs and atomics; IBA 10.8.3.3). Most devices take it; siw refuses to
// start a fenced READ (siw_qp.c siw_activate_tx, "cannot fence read"): the
// post says EINVAL, the WR stays in the send ring and nothing after it is
// sent until a move to ERR flushes the ring (found by the differential
// runs, docs/fidelity.md).
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

class FencedReadTest : public ProviderTest {};

TEST_P(FencedReadTest, AFencedReadIsTakenOrBlocksTheRing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.FillPattern(9, 0, 64);
  const Sge sge = SgeOf(*p->cmr, 0, 64);
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 1, {&sge, 1});
  read.send_flags |= kSendFence;
  read.rdma.remote_addr = p->sbuf.addr();
  read.rdma.rkey = p->smr->rkey();
  if (!expect().refuses_fenced_read) {
    ASSERT_OK(p->client().Post(read));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
    EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaRead)) << wc;
    EXPECT_EQ(p->cbuf.Bytes(0, 64), p->sbuf.Bytes(0, 64));
    return;
  }
  EXPECT_THAT(p->client().Post(read), StatusIs(absl::StatusCode::kInvalidArgument));
  // Taken all the same: it holds its slot and what follows waits behind it.
  ASSERT_OK(p->client().PostWrite(2, p->cbuf.data(), 64, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr() + 1024,
                                  p->smr->rkey()));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
  EXPECT_NE(p->cbuf.Bytes(0, 64), p->sbuf.Bytes(0, 64));
  ASSERT_OK(MoveToErr(p->client().qp()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(wcs, ElementsAre(WcFlushed(1u), WcFlushed(2u)));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(FencedReadTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
