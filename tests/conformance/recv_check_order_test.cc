// A SEND both too long for its receive and landing outside the receive's
// region. The responder checks each packet as it arrives, the receive's
// length first and then its region (siw_qp_rx.c siw_send_check_ntoh before
// siw_check_sge; rxe_mr.c copy_data tests the length before it looks up a
// key; sim/recv_queue.cc CheckRecvSpace). So what fails is
// decided by the first packet: one longer than the receive fails the
// length; one that fits fails the region. On rxe a packet is the path MTU;
// siw sends a message up to about one TCP segment as a single FPDU, so the
// same SEND fails the length there. Found by the differential runs
// (docs/fidelity.md).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/endpoint.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

class RecvCheckOrderTest : public ProviderTest {};

TEST_P(RecvCheckOrderTest, TheFirstPacketDecidesBetweenLengthAndRegion) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  constexpr uint32_t kRecvLen = 4096, kSendLen = 8192;
  Buffer rbuf(kRecvLen + 64);
  rbuf.Set(0xee);
  // The MR starts 8 bytes into the buffer; the receive starts at the
  // buffer, 8 bytes before its MR.
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Mr> mr,
      p->server().RegMr(rbuf.data() + 8, kRecvLen, kAccessLocalWrite));
  Sge sge = SgeOf(*mr, 0, kRecvLen);
  sge.addr = rbuf.addr(0);
  ASSERT_OK(p->server().PostRecvv(1, {&sge, 1}));
  ASSERT_OK_AND_ASSIGN(QpAttr attr, p->client().qp()->Query());
  const uint32_t segment = expect().send_segment_bytes != 0
                               ? expect().send_segment_bytes
                               : static_cast<uint32_t>(MtuBytes(attr.path_mtu));
  ASSERT_GT(segment, 0u) << "path MTU " << static_cast<int>(attr.path_mtu);
  const bool length_fails = std::min(kSendLen, segment) > kRecvLen;

  p->cbuf.FillPattern(5, 0, kSendLen);
  ASSERT_OK(p->client().PostSend(10, p->cbuf.data(), kSendLen, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_EQ(swc.wr_id, 10u);
  EXPECT_THAT(swc, WcStatusIn(length_fails ? expect().recv_too_small_sender
                                           : expect().recv_prot_sender))
      << swc << " (first packet " << std::min(kSendLen, segment) << " bytes)";
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_EQ(rwc.wr_id, 1u);
  EXPECT_THAT(rwc, WcStatusIn(length_fails ? expect().recv_too_small_receiver
                                           : expect().recv_prot_receiver))
      << rwc << " (first packet " << std::min(kSendLen, segment) << " bytes)";
  // Neither check let a byte through.
  EXPECT_EQ(rbuf.Bytes(0, kRecvLen + 64),
            std::vector<uint8_t>(kRecvLen + 64, 0xee));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(RecvCheckOrderTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
