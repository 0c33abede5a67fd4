// A WRITE whose local SGE runs past its MR by a few bytes, so that only its
// last packet fails the local check, to a remote key that names nothing, so
// that its first packet fails at the responder. Which error the WR reports
// is the device's: one that checks the whole SGE list before sending fails
// it locally (ibv_post_send(3): the lkey is checked as the WR is
// processed); rxe builds and sends packet by packet (rxe_req.c) and, on one
// device, the responder NAKs the first packet and the completer fails the
// WR before the requester reaches the last (rxe_resp.c rxe_resp_queue_pkt
// and rxe_comp.c rxe_comp_queue_pkt run their task at once). Found by the
// differential runs (docs/fidelity.md).
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

class PartialGatherTest : public ProviderTest {};

TEST_P(PartialGatherTest, ARemoteErrorOnTheFirstPacketOrTheLocalError) {
  constexpr size_t kBuffer = 64 * 1024;
  constexpr uint32_t kLength = 12 * 1024;  // three packets or more
  constexpr size_t kPast = 16;             // bytes past the MR's end
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(kBuffer));
  p->sbuf.FillPattern(3);
  const std::vector<uint8_t> server_before = p->sbuf.Bytes(0, kBuffer);
  Sge sge = SgeOf(*p->cmr, kBuffer - kLength + kPast, kLength - kPast);
  sge.length = kLength;
  SendWr write = MakeWr(WrOpcode::kRdmaWrite, 1, {&sge, 1});
  write.rdma.remote_addr = p->sbuf.addr();
  write.rdma.rkey = BadKey(p->smr->rkey());
  ASSERT_OK(p->client().Post(write));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_EQ(wc.wr_id, 1u);
  if (expect().remote_error_beats_a_later_local_error) {
    EXPECT_THAT(wc, WcStatusIn(expect().remote_mr_access)) << wc;
  } else {
    EXPECT_THAT(wc, WcStatusIn(expect().bad_lkey)) << wc;
  }
  // Nothing was written: the key names no region.
  EXPECT_EQ(p->sbuf.Bytes(0, kBuffer), server_before);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(PartialGatherTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
