// The trace: what travels on the wire for simple operations, and its hash.
#include <string>
#include <vector>

#include "core/endpoint.h"
#include "core/provider.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

using ::testing::ElementsAre;

struct Traced {
  std::unique_ptr<Provider> provider;
  EndpointPair eps;
  Fabric* fabric = nullptr;
};

Traced Connect() {
  Traced r;
  r.provider = *OpenProvider("sim");
  r.fabric = &AsSimProvider(r.provider.get())->fabric();
  r.eps = *CreateConnectedPair(*r.provider);
  r.fabric->KeepTrace(true);
  return r;
}

// (kind, opcode name) of each packet record, for compact expectations.
std::vector<std::string> Packets(Fabric& fabric) {
  std::vector<std::string> out;
  for (const TraceRecord& r : fabric.TraceRecords()) {
    if (r.kind == TraceKind::kTransmit) {
      out.push_back(std::string(RcOpName(static_cast<RcOp>(r.opcode))) +
                    " " + std::to_string(r.psn));
    }
  }
  return out;
}

TEST(SimTrace, ThreePacketWriteIsFirstMiddleLastThenOneAck) {
  Traced r = Connect();
  std::vector<char> src(2500, 'x'), dst(2500);
  auto smr = r.eps.client->RegMsgs(src.data(), src.size());
  auto dmr = r.eps.server->RegWrite(dst.data(), dst.size());
  ASSERT_TRUE(r.eps.client
                  ->PostWrite(1, src.data(), src.size(), smr->get(),
                              kSendSignaled,
                              reinterpret_cast<uint64_t>(dst.data()),
                              (*dmr)->rkey())
                  .ok());
  auto wc = r.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kSuccess);
  // Path MTU 1024: 1024 + 1024 + 452 bytes; the ACK carries the last PSN.
  EXPECT_THAT(Packets(*r.fabric),
              ElementsAre("RDMA_WRITE_FIRST 0", "RDMA_WRITE_MIDDLE 1",
                          "RDMA_WRITE_LAST 2", "ACKNOWLEDGE 2"));
}

TEST(SimTrace, BadRkeyIsAnsweredWithARemoteAccessNak) {
  Traced r = Connect();
  char src[8] = "abc", dst[8];
  auto smr = r.eps.client->RegMsgs(src, sizeof(src));
  auto dmr = r.eps.server->RegWrite(dst, sizeof(dst));
  ASSERT_TRUE(r.eps.client
                  ->PostWrite(1, src, 8, smr->get(), kSendSignaled,
                              reinterpret_cast<uint64_t>(dst),
                              (*dmr)->rkey() + 2)
                  .ok());
  auto wc = r.eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kRemAccessErr);
  const std::vector<TraceRecord> records = r.fabric->TraceRecords();
  bool nak = false;
  for (const TraceRecord& rec : records) {
    if (rec.kind == TraceKind::kTransmit &&
        static_cast<RcOp>(rec.opcode) == RcOp::kAcknowledge) {
      EXPECT_EQ(rec.syndrome, 0x62) << "NAK, remote access error";
      nak = true;
    }
  }
  EXPECT_TRUE(nak) << r.fabric->TraceText();
}

TEST(SimTrace, CapturedPacketsCarryTheirHeaders) {
  Traced r = Connect();
  r.fabric->KeepPackets(true);
  char src[16] = "captured", dst[16];
  auto smr = r.eps.client->RegMsgs(src, sizeof(src));
  auto dmr = r.eps.server->RegWrite(dst, sizeof(dst));
  ASSERT_TRUE(r.eps.client
                  ->PostWrite(1, src, 9, smr->get(), kSendSignaled,
                              reinterpret_cast<uint64_t>(dst), (*dmr)->rkey())
                  .ok());
  ASSERT_TRUE(r.eps.client->GetSendComp().ok());
  auto packets = r.fabric->CapturedPackets();
  ASSERT_EQ(packets.size(), 2u);
  EXPECT_EQ(packets[0].packet.opcode, RcOp::kWriteOnly);
  EXPECT_EQ(packets[0].packet.rkey, (*dmr)->rkey());
  EXPECT_EQ(packets[0].packet.va, reinterpret_cast<uint64_t>(dst));
  EXPECT_EQ(packets[0].packet.dma_len, 9u);
  EXPECT_EQ(std::string(packets[0].packet.payload.begin(),
                        packets[0].packet.payload.end()),
            std::string("captured\0", 9));
  EXPECT_FALSE(packets[0].lost);
  EXPECT_EQ(packets[1].packet.opcode, RcOp::kAcknowledge);
  EXPECT_LT(packets[0].time_ns, packets[1].time_ns);
}

TEST(SimTrace, HashDependsOnWhatHappened) {
  auto run = [](size_t bytes) {
    Traced r = Connect();
    std::vector<char> src(bytes, 'x'), dst(bytes);
    auto smr = r.eps.client->RegMsgs(src.data(), src.size());
    auto dmr = r.eps.server->RegWrite(dst.data(), dst.size());
    EXPECT_TRUE(r.eps.client
                    ->PostWrite(1, src.data(), bytes, smr->get(),
                                kSendSignaled,
                                reinterpret_cast<uint64_t>(dst.data()),
                                (*dmr)->rkey())
                    .ok());
    EXPECT_TRUE(r.eps.client->GetSendComp().ok());
    return r.fabric->TraceHash();
  };
  EXPECT_EQ(run(3000), run(3000));
  EXPECT_NE(run(3000), run(3001));
}

}  // namespace
}  // namespace verbsim::sim

namespace verbsim::sim {
namespace {

// Each node pair can have its own link: latency and rate set when packets
// arrive; a packet larger than the link MTU is dropped.
TEST(SimLinks, PerPairLatencyRateAndMtu) {
  auto provider = *OpenProvider("sim:nodes=3");
  Fabric& fabric = AsSimProvider(provider.get())->fabric();
  LinkModel slow;
  slow.latency = absl::Microseconds(50);
  slow.gbit_per_s = 10;
  ASSERT_TRUE(fabric.SetLink(0, 1, slow).ok());
  EXPECT_EQ(fabric.GetLink(1, 0).latency, absl::Microseconds(50));
  EXPECT_EQ(fabric.GetLink(0, 2).latency, absl::Microseconds(1));
  EXPECT_FALSE(fabric.SetLink(0, 0, slow).ok());
  EXPECT_FALSE(fabric.SetLink(0, 3, slow).ok());
  LinkModel bad = slow;
  bad.gbit_per_s = 0;
  EXPECT_FALSE(fabric.SetLink(0, 1, bad).ok());

  // One write on the slow link takes at least its latency there and back.
  auto eps = *CreateConnectedPair(*provider);  // sim0 -> sim1
  char src[8] = "slow", dst[8];
  auto smr = *eps.client->RegMsgs(src, sizeof(src));
  auto dmr = *eps.server->RegWrite(dst, sizeof(dst));
  const absl::Duration t0 = fabric.Now();
  ASSERT_TRUE(eps.client
                  ->PostWrite(1, src, 8, smr.get(), kSendSignaled,
                              reinterpret_cast<uint64_t>(dst), dmr->rkey())
                  .ok());
  auto wc = eps.client->GetSendComp();
  ASSERT_TRUE(wc.ok() && wc->status == WcStatus::kSuccess);
  EXPECT_GE(fabric.Now() - t0, absl::Microseconds(100));

  // A link MTU below the path MTU: the packets never arrive.
  LinkModel small;
  small.mtu = 512;
  ASSERT_TRUE(fabric.SetLink(0, 1, small).ok());
  EndpointAttr attr;
  attr.retry_cnt = 1;
  attr.timeout = 8;
  auto eps2 = *CreateConnectedPair(*provider, attr);
  std::vector<char> big(1024, 'x'), into(1024);
  auto bmr = *eps2.client->RegMsgs(big.data(), big.size());
  auto imr = *eps2.server->RegWrite(into.data(), into.size());
  fabric.KeepTrace(true);
  ASSERT_TRUE(eps2.client
                  ->PostWrite(1, big.data(), big.size(), bmr.get(),
                              kSendSignaled,
                              reinterpret_cast<uint64_t>(into.data()),
                              imr->rkey())
                  .ok());
  wc = eps2.client->GetSendComp();
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->status, WcStatus::kRetryExcErr);
  EXPECT_NE(fabric.TraceText().find("larger than the link MTU"),
            std::string::npos);
}

}  // namespace
}  // namespace verbsim::sim
