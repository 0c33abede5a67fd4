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
