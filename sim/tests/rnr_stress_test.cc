// Many sends against a receiver that posts receives only a few at a time:
// RNR NAKs, go-back and ACK coalescing must never acknowledge a send that was
// not delivered.
#include <cstring>
#include <vector>

#include "core/endpoint.h"
#include "core/provider.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/sim_provider.h"
#include "sim/testing/seeds.h"

namespace verbsim::sim {
namespace {

TEST(RnrStress, EveryAcknowledgedSendIsDelivered) {
  testing::ForEachSeed(50, [](uint64_t seed) {
    auto provider = *OpenProvider(absl::StrCat("sim:seed=", seed));
    Fabric& fabric = AsSimProvider(provider.get())->fabric();
    fabric.KeepTrace(true);
    EndpointAttr attr;
    attr.min_rnr_timer = 1;
    auto eps = *CreateConnectedPair(*provider, attr);
    constexpr int kMessages = 300;
    std::vector<uint32_t> src(kMessages), dst(kMessages, 0);
    for (int i = 0; i < kMessages; ++i) src[i] = 1000 + i;
    auto smr = *eps.client->RegMsgs(src.data(), src.size() * 4);
    auto dmr = *eps.server->RegMsgs(dst.data(), dst.size() * 4);
    int posted_sends = 0, sent_ok = 0, posted_recvs = 0, got = 0;
    uint64_t rounds = 0;
    while (got < kMessages && ++rounds < 200000) {
      while (posted_sends < kMessages &&
             eps.client->PostSend(posted_sends, &src[posted_sends], 4,
                                  smr.get(), kSendSignaled)
                 .ok()) {
        ++posted_sends;
      }
      // A few receives now and then.
      if (rounds % (1 + seed % 13) == 0) {
        while (posted_recvs < kMessages && posted_recvs - got < 32) {
          ASSERT_TRUE(eps.server
                          ->PostRecv(posted_recvs, &dst[posted_recvs], 4,
                                     dmr.get())
                          .ok());
          ++posted_recvs;
        }
      }
      WorkCompletion wc;
      if (*eps.client->send_cq()->Poll({&wc, 1}) == 1) {
        ASSERT_EQ(wc.status, WcStatus::kSuccess);
        ASSERT_EQ(wc.wr_id, static_cast<uint64_t>(sent_ok));
        ++sent_ok;
      }
      if (*eps.server->recv_cq()->Poll({&wc, 1}) == 1) {
        ASSERT_EQ(wc.status, WcStatus::kSuccess);
        ASSERT_EQ(wc.wr_id, static_cast<uint64_t>(got));
        ++got;
      }
    }
    EXPECT_EQ(got, kMessages) << "sent_ok " << sent_ok << " posted_recvs "
                              << posted_recvs;
    EXPECT_EQ(dst, src);
  });
}

}  // namespace
}  // namespace verbsim::sim
