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

// The send engine of the QP holding the refused READ serves the peer's READ
// and then moves on to the head of its ring: on siw the refusal there drops
// the connection (siw_qp_tx.c siw_qp_sq_process -> siw_activate_tx fails;
// siw_sq_resume -> siw_qp_cm_drop). The peer's READ has its response and
// completes; the peer then sees the connection close and goes to ERR (its
// receive flushed), while this QP stays in RTS with nothing flushed, its
// receive waiting too. Where the fenced READ is taken, nothing ends.
TEST_P(FencedReadTest, APeersReadThenEndsTheConnectionOfARefusedRing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->cbuf.FillPattern(4, 512, 64);
  ASSERT_OK(p->client().PostRecv(10, p->cbuf.data() + 1024, 64,
                                 p->cmr.get()));
  ASSERT_OK(p->server().PostRecv(30, p->sbuf.data() + 1024, 64,
                                 p->smr.get()));
  const Sge sge = SgeOf(*p->cmr, 0, 64);
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 1, {&sge, 1});
  read.send_flags |= kSendFence;
  read.rdma.remote_addr = p->sbuf.addr();
  read.rdma.rkey = p->smr->rkey();
  if (expect().refuses_fenced_read) {
    EXPECT_THAT(p->client().Post(read),
                StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
  } else {
    ASSERT_OK(p->client().Post(read));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
    EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaRead)) << wc;
  }
  // The server reads 64 bytes of the client's buffer.
  ASSERT_OK(p->server().PostRead(20, p->sbuf.data() + 512, 64, p->smr.get(),
                                 kSendSignaled, p->cbuf.addr() + 512,
                                 p->cmr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->server().send_cq()));
  EXPECT_THAT(wc, WcOk(20u, WcOpcode::kRdmaRead)) << wc;
  EXPECT_EQ(p->sbuf.Bytes(512, 64), p->cbuf.Bytes(512, 64));
  if (expect().refuses_fenced_read) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion flushed, Await(p->server().recv_cq()));
    EXPECT_THAT(flushed, WcFlushed(30u)) << flushed;
  } else {
    EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
  }
  // The client: nothing completes, neither its receive nor its ring.
  EXPECT_THAT(Drain(p->client().recv_cq()), IsEmpty());
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(FencedReadTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
