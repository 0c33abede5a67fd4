// A packet's payload: inline, on the heap, and in the blocks of the
// per-thread pool (sim/payload.h).
#include "sim/payload.h"

#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace verbsim::sim {
namespace {

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

Payload Of(const std::vector<uint8_t>& v) {
  Payload p;
  p.Set(v.data(), v.size());
  return p;
}

bool Holds(const Payload& p, const std::vector<uint8_t>& v) {
  return p.size() == v.size() &&
         std::vector<uint8_t>(p.begin(), p.end()) == v;
}

// Sizes on each side of the inline room, the pooled block's lower bound
// (more than half a block) and the block itself, and past it.
const size_t kSizes[] = {0,    1,    Payload::kInline,     Payload::kInline + 1,
                         2048, 2049, kPooledBlock - 1, kPooledBlock,
                         kPooledBlock + 1, 3 * kPooledBlock};

TEST(Payload, SetCopyMoveAndGrowKeepTheBytes) {
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    const auto v = Pattern(n, 3);
    Payload a = Of(v);
    EXPECT_TRUE(Holds(a, v));
    Payload b = a;  // copy
    EXPECT_TRUE(Holds(b, v));
    EXPECT_TRUE(Holds(a, v));
    Payload c = std::move(a);
    EXPECT_TRUE(Holds(c, v));
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): documented
    // Assignments between every pair of sizes, both ways.
    for (size_t m : kSizes) {
      const auto w = Pattern(m, 9);
      Payload d = Of(w);
      Payload e = Of(v);
      e = d;
      EXPECT_TRUE(Holds(e, w));
      Payload f = Of(v);
      f = std::move(d);
      EXPECT_TRUE(Holds(f, w));
      EXPECT_TRUE(d.empty());  // NOLINT(bugprone-use-after-move)
    }
    // Growing byte by byte past the inline room and the pooled block keeps
    // what was there.
    Payload g = Of(v);
    auto expect = v;
    for (int i = 0; i < 40; ++i) {
      g.push_back(static_cast<uint8_t>(i));
      expect.push_back(static_cast<uint8_t>(i));
    }
    EXPECT_TRUE(Holds(g, expect));
    g.resize(n + kPooledBlock);
    expect.resize(n + kPooledBlock, 0);
    EXPECT_TRUE(Holds(g, expect));
  }
}

TEST(PayloadPool, AFullBlockIsReusedByTheSameThread) {
  if (payload_pool::kPoolMax == 0) {
    GTEST_SKIP() << "no payload pool under AddressSanitizer (sim/payload.h)";
  }
  payload_pool::Drain();
  const uint8_t* first;
  {
    Payload p = Of(Pattern(kPooledBlock, 1));
    first = p.data();
  }
  EXPECT_EQ(payload_pool::Spare(), 1);
  Payload q = Of(Pattern(3000, 2));  // more than half a block: pooled
  EXPECT_EQ(q.data(), first);
  EXPECT_EQ(payload_pool::Spare(), 0);
  EXPECT_TRUE(Holds(q, Pattern(3000, 2)));
  // Smaller heap payloads are not pooled.
  { Payload small = Of(Pattern(1000, 4)); }
  EXPECT_EQ(payload_pool::Spare(), 0);
}

TEST(PayloadPool, HoldsAtMostItsBoundAndDrains) {
  if (payload_pool::kPoolMax == 0) {
    GTEST_SKIP() << "no payload pool under AddressSanitizer (sim/payload.h)";
  }
  payload_pool::Drain();
  {
    std::vector<Payload> many;
    for (int i = 0; i < payload_pool::kPoolMax + 10; ++i) {
      many.push_back(Of(Pattern(kPooledBlock, static_cast<uint8_t>(i))));
    }
  }
  EXPECT_EQ(payload_pool::Spare(), payload_pool::kPoolMax);
  payload_pool::Drain();
  EXPECT_EQ(payload_pool::Spare(), 0);
}

TEST(PayloadPool, EachThreadHasItsOwnPool) {
  payload_pool::Drain();
  int other_spare = -1;
  std::thread t([&other_spare] {
    { Payload p = Of(Pattern(kPooledBlock, 5)); }
    other_spare = payload_pool::Spare();
    // The blocks left here are freed when the thread ends (LeakSanitizer
    // would report them otherwise, where there is a pool).
  });
  t.join();
  EXPECT_EQ(other_spare, payload_pool::kPoolMax > 0 ? 1 : 0);
  EXPECT_EQ(payload_pool::Spare(), 0);
  // A payload made on one thread and freed on another goes to the pool of
  // the thread that frees it.
  Payload made_here = Of(Pattern(kPooledBlock, 6));
  std::thread u([p = std::move(made_here)]() mutable {
    EXPECT_TRUE(Holds(p, Pattern(kPooledBlock, 6)));
  });
  u.join();
  EXPECT_EQ(payload_pool::Spare(), 0);
}

}  // namespace
}  // namespace verbsim::sim
