// A READ whose sink runs out of its memory region partway. The requester
// checks the sink when the response arrives; rxe copies each response
// packet as it comes (rxe_comp.c copy_data), so the packets before the
// first that does not fit are in memory when the READ fails; the sim's ibta
// and siw profiles check the whole sink first and place nothing (found by
// the differential runs, docs/fidelity.md).
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

class ReadSinkTest : public ProviderTest {};

TEST_P(ReadSinkTest, ASinkThatEndsPartwayPlacesWhatTheDevicePlaces) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  uint32_t mtu = 1024;
  if (expect().query_reports_qp_attrs) {
    ASSERT_OK_AND_ASSIGN(QpAttr attr, p->client().qp()->Query());
    mtu = static_cast<uint32_t>(MtuBytes(attr.path_mtu));
  }
  // The sink: an MR of 2 MTUs and 100 bytes; the READ asks for 3 MTUs.
  const uint32_t mr_len = 2 * mtu + 100;
  Buffer sink(4 * mtu);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       p->client().pd()->RegMr(sink.data(), mr_len,
                                               kAccessLocalWrite));
  p->sbuf.FillPattern(7, 0, 3 * mtu);
  const Sge sge = SgeOf(*mr, 0, 3 * mtu);
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 1, {&sge, 1});
  read.rdma.remote_addr = p->sbuf.addr();
  read.rdma.rkey = p->smr->rkey();
  ASSERT_OK(p->client().Post(read));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_NE(wc.status, WcStatus::kSuccess) << wc;
  if (expect().places_read_packets_before_a_bad_one) {
    EXPECT_EQ(sink.Bytes(0, 2 * mtu), p->sbuf.Bytes(0, 2 * mtu));
  } else {
    EXPECT_EQ(sink.Bytes(0, 2 * mtu), std::vector<uint8_t>(2 * mtu, 0));
  }
  // Nothing past the region, in any case.
  EXPECT_EQ(sink.Bytes(mr_len, 4 * mtu - mr_len),
            std::vector<uint8_t>(4 * mtu - mr_len, 0));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(ReadSinkTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
