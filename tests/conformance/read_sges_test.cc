// An RDMA READ with more than one SGE. The verbs scatter the response over
// the SGE list in order (ibv_post_send(3)); siw reads into the first SGE
// only: it sets a READ's SGE count to 1 when it starts the WR, so the
// request asks for the first SGE's length and the other SGEs are neither
// filled nor checked (siw_qp.c siw_activate_tx_from_sq, found by the
// differential runs, docs/fidelity.md).
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

class ReadSgesTest : public ProviderTest {};

constexpr uint32_t kPiece = 16;

TEST_P(ReadSgesTest, AResponseFillsTheSgesInOrder) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.FillPattern(3, 0, 2 * kPiece);
  // Two sink pieces apart from each other, the second first in memory.
  const Sge sges[2] = {SgeOf(*p->cmr, 256, kPiece), SgeOf(*p->cmr, 0, kPiece)};
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 1, {sges, 2});
  read.rdma.remote_addr = p->sbuf.addr();
  read.rdma.rkey = p->smr->rkey();
  ASSERT_OK(p->client().Post(read));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  ASSERT_EQ(wc.status, WcStatus::kSuccess) << wc;
  EXPECT_EQ(wc.opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(p->cbuf.Bytes(256, kPiece), p->sbuf.Bytes(0, kPiece));
  if (expect().read_uses_first_sge) {
    EXPECT_EQ(wc.byte_len, kPiece);
    EXPECT_EQ(p->cbuf.Bytes(0, kPiece), std::vector<uint8_t>(kPiece, 0));
  } else {
    EXPECT_EQ(wc.byte_len, 2 * kPiece);
    EXPECT_EQ(p->cbuf.Bytes(0, kPiece), p->sbuf.Bytes(kPiece, kPiece));
  }
}

// The second SGE would take the READ past the end of the remote region:
// the responder refuses the request (IBA C9-88: remote access error), unless
// only the first SGE's length is asked for.
TEST_P(ReadSgesTest, TheSgesTogetherDecideTheRemoteRange) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const uint64_t remote_len = p->sbuf.size();
  p->sbuf.FillPattern(5, 0, kPiece);
  // Both pieces fit the local region; together they overrun the remote one.
  const Sge sges[2] = {SgeOf(*p->cmr, 0, kPiece),
                       SgeOf(*p->cmr, kPiece,
                             static_cast<uint32_t>(remote_len - kPiece))};
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 1, {sges, 2});
  read.rdma.remote_addr = p->sbuf.addr() + kPiece;
  read.rdma.rkey = p->smr->rkey();
  ASSERT_OK(p->client().Post(read));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  if (expect().read_uses_first_sge) {
    ASSERT_EQ(wc.status, WcStatus::kSuccess) << wc;
    EXPECT_EQ(wc.byte_len, kPiece);
    EXPECT_EQ(p->cbuf.Bytes(0, kPiece), p->sbuf.Bytes(kPiece, kPiece));
  } else {
    EXPECT_EQ(wc.status, WcStatus::kRemAccessErr) << wc;
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(ReadSgesTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
