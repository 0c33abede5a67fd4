// After a WR fails as it is sent (its lkey names no MR). The spec's
// requester moves the QP to ERR and flushes the WRs behind it (IBA
// 10.7.3.1). siw completes the WR with its error and ends the connection,
// but leaves the QP in RTS with transmission suspended (siw_qp_tx.c
// siw_qp_sq_process): later posts are taken and wait, the first in the
// send slot and the rest in the ring, until the application moves the QP
// to ERR. That flush completes the outstanding READs, then the WR in the
// slot, then the ring (siw_qp.c siw_sq_flush), so a READ in the slot, also
// outstanding, is flushed twice; and a fenced READ, which siw never starts,
// is refused by the doorbell and stays in the ring (siw_activate_tx). Found
// by the differential runs (docs/fidelity.md).
#include <cstdint>
#include <memory>
#include <utility>
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

class SuspendedQpTest : public ProviderTest {
 protected:
  // Posts a signaled SEND (wr_id 1) whose lkey names no MR and awaits its
  // completion, which carries the device's local error.
  void FailASendAtTransmit(RcPair& p) {
    Sge bad = SgeOf(*p.cmr, 0, 64);
    bad.lkey = BadKey(p.cmr->lkey());
    ASSERT_OK(p.client().Post(MakeWr(WrOpcode::kSend, 1, {&bad, 1})));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p.client().send_cq()));
    EXPECT_THAT(wc, WcStatusIn(expect().bad_lkey)) << wc;
    EXPECT_EQ(wc.wr_id, 1u);
  }

  // A signaled 64-byte WRITE into the server's buffer.
  absl::Status PostAWrite(RcPair& p, uint64_t wr_id) {
    return p.client().PostWrite(wr_id, p.cbuf.data(), 64, p.cmr.get(),
                                kSendSignaled, p.sbuf.addr() + 1024,
                                p.smr->rkey());
  }

  // Checks that nothing has completed yet, moves the client QP to ERR and
  // returns the `n` completions of the flush; no more may follow.
  std::vector<WorkCompletion> Flush(RcPair& p, size_t n) {
    EXPECT_THAT(Drain(p.client().send_cq()), IsEmpty());
    EXPECT_OK(MoveToErr(p.client().qp()));
    absl::StatusOr<std::vector<WorkCompletion>> wcs =
        AwaitN(p.client().send_cq(), n);
    EXPECT_OK(wcs.status());
    EXPECT_THAT(Drain(p.client().send_cq()), IsEmpty());
    return wcs.ok() ? *std::move(wcs) : std::vector<WorkCompletion>{};
  }

  SendWr Read(RcPair& p, const Sge& sge, uint64_t wr_id) {
    SendWr read = MakeWr(WrOpcode::kRdmaRead, wr_id, {&sge, 1});
    read.rdma.remote_addr = p.sbuf.addr();
    read.rdma.rkey = p.smr->rkey();
    return read;
  }
};

TEST_P(SuspendedQpTest, WrsPostedAfterATransmitErrorWaitForTheFlush) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  FailASendAtTransmit(*p);
  const Sge sge = SgeOf(*p->cmr, 0, 64);
  if (!expect().transmit_errors_suspend) {
    // In ERR: what is posted now is flushed (or, where the device takes
    // WRs posted in ERR without completing them, nothing comes).
    ASSERT_OK(p->client().Post(Read(*p, sge, 2)));
    if (expect().flushes_send_posted_in_err) {
      ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
      EXPECT_THAT(wc, WcFlushed(2u)) << wc;
    } else {
      EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    }
    return;
  }
  // Suspended in RTS: a READ moves into the send slot, a WRITE waits in
  // the ring, and neither is sent.
  ASSERT_OK(p->client().Post(Read(*p, sge, 2)));
  ASSERT_OK(PostAWrite(*p, 3));
  EXPECT_THAT(Flush(*p, 3),
              ElementsAre(WcFlushed(2u), WcFlushed(2u), WcFlushed(3u)));
}

TEST_P(SuspendedQpTest, ASendInTheSlotIsFlushedOnce) {
  if (!expect().transmit_errors_suspend) {
    GTEST_SKIP() << "a transmit error moves the QP to ERR here "
                    "(WrsPostedAfterATransmitErrorWaitForTheFlush)";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  FailASendAtTransmit(*p);
  const Sge sge = SgeOf(*p->cmr, 0, 64);
  ASSERT_OK(p->client().Post(MakeWr(WrOpcode::kSend, 2, {&sge, 1})));
  ASSERT_OK(p->client().Post(Read(*p, sge, 3)));
  EXPECT_THAT(Flush(*p, 2), ElementsAre(WcFlushed(2u), WcFlushed(3u)));
}

TEST_P(SuspendedQpTest, AFencedReadIsRefusedAndStaysInTheRing) {
  if (!expect().transmit_errors_suspend || !expect().refuses_fenced_read) {
    GTEST_SKIP() << "a transmit error moves the QP to ERR here "
                    "(WrsPostedAfterATransmitErrorWaitForTheFlush)";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  FailASendAtTransmit(*p);
  const Sge sge = SgeOf(*p->cmr, 0, 64);
  SendWr fenced = Read(*p, sge, 2);
  fenced.send_flags |= kSendFence;
  EXPECT_THAT(p->client().Post(fenced),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK(PostAWrite(*p, 3));
  EXPECT_THAT(Flush(*p, 2), ElementsAre(WcFlushed(2u), WcFlushed(3u)));
}

// The ring of a suspended QP fills, since nothing leaves it: then a post
// says ENOMEM whatever the WR, a bad one included (libsiw siw_post_send
// finds the ring slot taken before push_send_wqe looks at the WR).
TEST_P(SuspendedQpTest, AFullRingIsReportedBeforeABadWr) {
  if (!expect().transmit_errors_suspend) {
    GTEST_SKIP() << "a transmit error moves the QP to ERR here, and a "
                    "full send queue is BadWrTest.SendQueueFullIsEnomem";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  FailASendAtTransmit(*p);
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  uint64_t posted = 0;
  absl::Status last;
  for (uint64_t wr_id = 2; wr_id < 4096; ++wr_id) {
    last = p->client().PostWrite(wr_id, p->cbuf.data(), 8, p->cmr.get(),
                                 kSendSignaled, p->sbuf.addr(),
                                 p->smr->rkey());
    if (!last.ok()) break;
    ++posted;
  }
  EXPECT_THAT(last, HasErrno(ENOMEM));
  ASSERT_GE(posted, 1u);
  // Too many SGEs: EINVAL on a ring with room (BadWrTest), ENOMEM here.
  std::vector<Sge> sges(65, sge);
  EXPECT_THAT(p->client().Post(MakeWr(WrOpcode::kSend, 9999, sges)),
              HasErrno(ENOMEM));
  const std::vector<WorkCompletion> wcs = Flush(*p, posted);
  ASSERT_EQ(wcs.size(), posted);
  for (uint64_t i = 0; i < posted; ++i) {
    EXPECT_THAT(wcs[i], WcFlushed(i + 2)) << wcs[i];
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(SuspendedQpTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
