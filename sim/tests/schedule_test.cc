// Randomised schedules stay inside what the spec allows, and exercise what it
// does not promise.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

struct Pair {
  std::unique_ptr<Provider> provider;
  EndpointPair eps;
  Fabric* fabric = nullptr;
};

Pair Connect(uint64_t seed) {
  Pair p;
  p.provider = *OpenProvider(absl::StrCat("sim:seed=", seed));
  p.fabric = &AsSimProvider(p.provider.get())->fabric();
  p.eps = *CreateConnectedPair(*p.provider);
  return p;
}

// Polling the last byte of an RDMA write is not a completion signal
// (ibv_query_qp_data_in_order(3)): under some seeds the last byte lands while
// earlier bytes of the write are still missing. The completion is: once the
// write completes, every byte is there, under every seed.
TEST(Schedule, LastByteOfAWriteIsNotACompletionSignal) {
  int seeds_where_last_byte_came_early = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Pair p = Connect(seed);
    std::vector<uint8_t> src(1024, 0xab), dst(1024, 0);
    auto smr = *p.eps.client->RegMsgs(src.data(), src.size());
    auto dmr = *p.eps.server->RegWrite(dst.data(), dst.size());
    ASSERT_TRUE(p.eps.client
                    ->PostWrite(1, src.data(), src.size(), smr.get(),
                                kSendSignaled,
                                reinterpret_cast<uint64_t>(dst.data()),
                                dmr->rkey())
                    .ok());
    // The anti-pattern: spin (polling an unrelated CQ, which lets time pass)
    // until the last byte shows up, then trust the buffer.
    WorkCompletion wc;
    for (int i = 0; i < 10000 && dst.back() != 0xab; ++i) {
      ASSERT_TRUE(p.eps.server->recv_cq()->Poll({&wc, 1}).ok());
    }
    ASSERT_EQ(dst.back(), 0xab) << "seed " << seed;
    if (std::count(dst.begin(), dst.end(), 0xab) < 1024) {
      ++seeds_where_last_byte_came_early;
    }
    // The right way: wait for the completion.
    auto done = p.eps.client->GetSendComp();
    ASSERT_TRUE(done.ok());
    EXPECT_EQ(done->status, WcStatus::kSuccess);
    EXPECT_EQ(std::count(dst.begin(), dst.end(), 0xab), 1024) << "seed " << seed;
  }
  EXPECT_GT(seeds_where_last_byte_came_early, 0);
}

// A read after a write on the same QP sees the whole write (IBA 10.8.3), under
// every seed, even though the write's bytes land in random order.
TEST(Schedule, ReadAfterWriteOnOneQpSeesTheWholeWrite) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Pair p = Connect(seed);
    std::vector<uint8_t> src(3000), back(3000, 0), remote(3000, 0);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i);
    auto smr = *p.eps.client->RegMsgs(src.data(), src.size());
    auto bmr = *p.eps.client->RegMsgs(back.data(), back.size());
    auto rmr = *p.eps.server->RegMr(
        remote.data(), remote.size(),
        kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
    const uint64_t addr = reinterpret_cast<uint64_t>(remote.data());
    ASSERT_TRUE(p.eps.client
                    ->PostWrite(1, src.data(), src.size(), smr.get(), 0, addr,
                                rmr->rkey())
                    .ok());
    ASSERT_TRUE(p.eps.client
                    ->PostRead(2, back.data(), back.size(), bmr.get(),
                               kSendSignaled, addr, rmr->rkey())
                    .ok());
    auto wc = p.eps.client->GetSendComp();
    ASSERT_TRUE(wc.ok());
    EXPECT_EQ(wc->status, WcStatus::kSuccess);
    EXPECT_EQ(back, src) << "seed " << seed;
  }
}

// ACKs may be coalesced: under some seeds ten sends are acknowledged with
// fewer than ten ACKs; every send still completes, in order.
TEST(Schedule, AcksAreSometimesCoalesced) {
  int coalesced = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Pair p = Connect(seed);
    p.fabric->KeepTrace(true);
    char buf[10][8] = {};
    auto smr = *p.eps.client->RegMsgs(buf, sizeof(buf));
    auto rmr = *p.eps.server->RegMsgs(buf, sizeof(buf));
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(p.eps.server->PostRecv(i, buf[i], 8, rmr.get()).ok());
    }
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(
          p.eps.client->PostSend(i, buf[i], 8, smr.get(), kSendSignaled).ok());
    }
    for (int i = 0; i < 10; ++i) {
      auto wc = p.eps.client->GetSendComp();
      ASSERT_TRUE(wc.ok());
      EXPECT_EQ(wc->wr_id, static_cast<uint64_t>(i));
      EXPECT_EQ(wc->status, WcStatus::kSuccess);
    }
    int acks = 0;
    for (const TraceRecord& r : p.fabric->TraceRecords()) {
      acks += r.kind == TraceKind::kTransmit &&
              static_cast<RcOp>(r.opcode) == RcOp::kAcknowledge;
    }
    EXPECT_GE(acks, 1);
    coalesced += acks < 10;
  }
  EXPECT_GT(coalesced, 0);
}

}  // namespace
}  // namespace verbsim::sim
