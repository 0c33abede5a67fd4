// An RDMA WRITE with immediate whose R_Key names nothing: the requester
// gets the remote access error and the responder's QP moves to ERR
// (IBA 9.7.5.2.4, Class C). What becomes of the receive the immediate
// needed is the device's: rxe takes it when the packet that needs it
// arrives, before the R_Key check (rxe_resp.c: check_resource, then
// check_rkey), so a one-packet WRITE completes that receive with the error
// while a longer one fails at its first packet, before its last takes a
// receive; elsewhere every receive is flushed. Found by the differential
// runs (docs/fidelity.md).
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

// The WRITE's length: one packet, or several at any path MTU.
class WriteImmBadRkeyTest : public ProviderTestWithParam<uint32_t> {};

TEST_P(WriteImmBadRkeyTest, TheReceiveItTookOrAFlush) {
  if (!expect().has_immediate) {
    GTEST_SKIP() << "no immediate data on profile " << expect().profile;
  }
  const uint32_t length = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024));
  p->sbuf.FillPattern(4);
  const std::vector<uint8_t> before = p->sbuf.Bytes(0, 64 * 1024);
  ASSERT_OK(p->server().PostRecv(10, p->sbuf.data(), 64, p->smr.get()));
  ASSERT_OK(p->server().PostRecv(11, p->sbuf.data() + 64, 64, p->smr.get()));
  const Sge sge = SgeOf(*p->cmr, 0, length);
  SendWr wr = MakeWr(WrOpcode::kRdmaWriteWithImm, 1, {&sge, 1});
  wr.imm_data = 7;
  wr.rdma.remote_addr = p->sbuf.addr(4096);
  wr.rdma.rkey = BadKey(p->smr->rkey());
  ASSERT_OK(p->client().Post(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_THAT(wc, WcStatusIn(expect().bad_rkey)) << wc;
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> recvs,
                       AwaitN(p->server().recv_cq(), 2));
  if (expect().failed_write_imm_completes_its_recv && length <= 256) {
    EXPECT_EQ(recvs[0].wr_id, 10u);
    EXPECT_EQ(recvs[0].status, WcStatus::kRemAccessErr) << recvs[0];
  } else {
    EXPECT_THAT(recvs[0], WcFlushed(10u)) << recvs[0];
  }
  EXPECT_THAT(recvs[1], WcFlushed(11u)) << recvs[1];
  ExpectQpState(p->server().qp(), QpState::kErr);
  EXPECT_EQ(p->sbuf.Bytes(0, 64 * 1024), before);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(WriteImmBadRkeyTest,
                                       ::testing::Values(64u, 16384u));

}  // namespace
}  // namespace testing
}  // namespace verbsim
