// A user's test through Bazel: an RDMA write and read back over the pair
// the fixture connects, then the same write with its first packet lost on
// the sim (the data still lands; the transport retransmitted).
#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "tests/matchers.h"
#include "tests/provider_fixture.h"

namespace {

using verbsim::kAccessLocalWrite;
using verbsim::kAccessRemoteRead;
using verbsim::kAccessRemoteWrite;
using verbsim::testing::IsOk;
using verbsim::testing::WcStatusIs;

class RdmaCodeTest : public verbsim::testing::ProviderTest {
 protected:
  // Writes 4 KiB from the client into the server's buffer; true when the
  // write completed successfully and the bytes are there.
  bool WriteAndCheck() {
    static char src[4096], dst[4096];
    for (size_t i = 0; i < sizeof(src); ++i) src[i] = static_cast<char>(i * 7);
    std::memset(dst, 0, sizeof(dst));
    const uint32_t access =
        kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite;
    auto smr = client().RegMr(src, sizeof(src), access);
    auto dmr = server().RegMr(dst, sizeof(dst), access);
    EXPECT_THAT(smr, IsOk());
    EXPECT_THAT(dmr, IsOk());
    if (!smr.ok() || !dmr.ok()) return false;
    EXPECT_THAT(client().PostWrite(1, src, sizeof(src), smr->get(),
                                   verbsim::kSendSignaled,
                                   reinterpret_cast<uint64_t>(dst),
                                   (*dmr)->rkey()),
                IsOk());
    auto wc = client().GetSendComp(absl::Seconds(5));
    EXPECT_THAT(wc, IsOk());
    if (!wc.ok()) return false;
    EXPECT_THAT(*wc, WcStatusIs(verbsim::WcStatus::kSuccess));
    return wc->status == verbsim::WcStatus::kSuccess &&
           std::memcmp(src, dst, sizeof(src)) == 0;
  }
};

TEST_F(RdmaCodeTest, WriteLands) { EXPECT_TRUE(WriteAndCheck()); }

TEST_F(RdmaCodeTest, WriteLandsAfterALostPacket) {
  verbsim::sim::Fabric* f = fabric();
  if (f == nullptr) GTEST_SKIP() << "not the sim: no fault rules";
  ASSERT_THAT(f->AddFaults("drop op=RDMA_WRITE_MIDDLE nth=1"), IsOk());
  EXPECT_TRUE(WriteAndCheck());
  verbsim::sim::SimQpStats stats;
  ASSERT_TRUE(verbsim::sim::GetSimQpStats(client().qp(), &stats));
  EXPECT_GE(stats.retransmissions, 1u);
}

}  // namespace
