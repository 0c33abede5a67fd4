// RandomOrder and DrawBelow (sim/random_order.h): the draws that decide
// which chunks of a write packet land late.
#include "sim/random_order.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace verbsim::sim {
namespace {

std::vector<uint32_t> Ordered(uint32_t n) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(RandomOrder, IsAPermutationOfEverySize) {
  std::mt19937_64 rng(7);
  for (uint32_t n = 0; n <= 300; ++n) {
    std::vector<uint32_t> v = Ordered(n);
    RandomOrder(v.data(), n, rng);
    std::vector<uint32_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, Ordered(n)) << "n=" << n;
  }
}

TEST(RandomOrder, EveryOrderOfFourItemsIsAboutEquallyLikely) {
  // 24,000 orders of 4 items from one seed: each of the 24 orders is
  // expected 1,000 times (standard deviation about 31).
  std::mt19937_64 rng(11);
  std::map<std::array<uint32_t, 4>, int> seen;
  for (int round = 0; round < 24000; ++round) {
    std::array<uint32_t, 4> v = {0, 1, 2, 3};
    RandomOrder(v.data(), 4, rng);
    ++seen[v];
  }
  ASSERT_EQ(seen.size(), 24u);
  for (const auto& [order, count] : seen) {
    EXPECT_GT(count, 850);
    EXPECT_LT(count, 1150);
  }
}

TEST(DivMod32, IsTheDivisionForEveryDrawOfThePairLoop) {
  // Every x the pair loop can draw for each divisor with a reciprocal
  // (x below (d - 1) * d), and the edges of the 32-bit range.
  for (uint32_t d = 2; d < kReciprocals + 4; ++d) {
    for (uint32_t x = 0; x < (d - 1) * d; ++x) {
      uint64_t q, r;
      DivMod32(x, d, &q, &r);
      ASSERT_EQ(q, x / d) << x << " / " << d;
      ASSERT_EQ(r, x % d) << x << " % " << d;
    }
    for (uint32_t x : {0xffffffffu, 0xfffffffeu, 0x80000000u, 0x7fffffffu,
                       d * 12345u, d * 12345u - 1}) {
      uint64_t q, r;
      DivMod32(x, d, &q, &r);
      ASSERT_EQ(q, x / d) << x << " / " << d;
      ASSERT_EQ(r, x % d) << x << " % " << d;
    }
  }
}

TEST(DrawBelow, StaysInRangeAndRejectsTheBiasedTail) {
  std::mt19937_64 rng(3);
  // A range just above 2^63: nearly half of all words are rejected, so
  // the loop that draws again is exercised.
  const uint64_t range = (uint64_t{1} << 63) + 12345;
  for (int i = 0; i < 1000; ++i) EXPECT_LT(DrawBelow(rng, range), range);
  for (uint64_t r = 1; r < 100; ++r) EXPECT_LT(DrawBelow(rng, r), r);
}

// A generator that gives a fixed list of words, then counts up.
class Scripted {
 public:
  using result_type = uint64_t;
  explicit Scripted(std::vector<uint64_t> words) : words_(std::move(words)) {}
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t{0}; }
  uint64_t operator()() {
    return next_ < words_.size() ? words_[next_++] : 1000 + next_++;
  }

 private:
  std::vector<uint64_t> words_;
  size_t next_ = 0;
};

TEST(ChunksLandingNow, TakesTheDrawsOfRandomOrderAndTheCount) {
  // What lands later, and every later draw, come from the words after
  // these: they must be the same words as with RandomOrder.
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    for (uint32_t n = 2; n <= 64; ++n) {
      std::mt19937_64 ours(seed), theirs(seed);
      const uint64_t mask = ChunksLandingNow(ours, n);
      std::vector<uint32_t> order = Ordered(n);
      RandomOrder(order.data(), n, theirs);
      const uint64_t count = theirs() % (n + 1);
      EXPECT_EQ(static_cast<uint64_t>(__builtin_popcountll(mask)), count)
          << "seed=" << seed << " n=" << n;
      if (n < 64) EXPECT_EQ(mask >> n, 0u) << "seed=" << seed << " n=" << n;
      EXPECT_EQ(ours(), theirs()) << "the streams went apart: seed=" << seed
                                  << " n=" << n;
    }
  }
}

TEST(ChunksLandingNow, RejectsTheWordsDrawBelowRejects) {
  // n = 3 draws once, in 0 .. 5; 2^64 mod 6 = 4, so the words 0 and
  // 2^63 (products 0 and 2 mod 2^64) are rejected and drawn again.
  for (const std::vector<uint64_t>& script :
       {std::vector<uint64_t>{0, 7, 9}, std::vector<uint64_t>{0, 0, 1u << 20},
        std::vector<uint64_t>{uint64_t{1} << 63, 5, 11}}) {
    Scripted ours(script), theirs(script);
    const uint64_t mask = ChunksLandingNow(ours, 3);
    std::vector<uint32_t> order = Ordered(3);
    RandomOrder(order.data(), 3, theirs);
    EXPECT_EQ(static_cast<uint64_t>(__builtin_popcountll(mask)),
              theirs() % 4);
    EXPECT_EQ(ours(), theirs());
  }
}

TEST(ChunksLandingNow, EverySubsetOfASizeIsAboutEquallyLikely) {
  // The count is uniform in 0 .. n, and each subset of a count equally
  // likely: a subset of k of n chunks is expected
  // rounds / (n + 1) / C(n, k) times.
  for (uint32_t n : {4u, 5u}) {
    const int rounds = 300000;
    std::mt19937_64 rng(n);
    std::map<uint64_t, int> seen;
    for (int round = 0; round < rounds; ++round) ++seen[ChunksLandingNow(rng, n)];
    ASSERT_EQ(seen.size(), size_t{1} << n) << "n=" << n;
    for (const auto& [mask, times] : seen) {
      const int k = __builtin_popcountll(mask);
      int choose = 1;
      for (int i = 0; i < k; ++i) choose = choose * (static_cast<int>(n) - i) / (i + 1);
      const double expected = static_cast<double>(rounds) / (n + 1) / choose;
      EXPECT_NEAR(times, expected, expected * 0.1)
          << "n=" << n << " mask=" << mask;
    }
  }
}

#if defined(__GLIBCXX__)
// The placement's draws have always been those of libstdc++'s shuffle and
// uniform_int_distribution with a 64-bit generator: the same seeds must
// keep taking the same words (and so keep every timeline and trace).
TEST(RandomOrder, DrawsAsThePlacementAlwaysHas) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    for (uint32_t n : {1u, 2u, 3u, 7u, 16u, 63u, 64u, 65u, 128u, 141u}) {
      std::mt19937_64 ours(seed), theirs(seed);
      std::vector<uint32_t> a = Ordered(n), b = Ordered(n);
      RandomOrder(a.data(), n, ours);
      std::shuffle(b.begin(), b.end(), theirs);
      EXPECT_EQ(a, b) << "seed=" << seed << " n=" << n;
      EXPECT_EQ(ours(), theirs()) << "the streams went apart: seed=" << seed
                                  << " n=" << n;
    }
  }
  std::mt19937_64 ours(5), theirs(5);
  for (uint64_t range : {uint64_t{1}, uint64_t{2}, uint64_t{4160},
                         (uint64_t{1} << 63) + 12345, ~uint64_t{0}}) {
    for (int i = 0; i < 200; ++i) {
      ASSERT_EQ(DrawBelow(ours, range),
                std::uniform_int_distribution<uint64_t>(0, range - 1)(theirs))
          << "range=" << range << " draw " << i;
    }
  }
}
#else
TEST(RandomOrder, DrawsAsThePlacementAlwaysHas) {
  GTEST_SKIP() << "the reference draws are libstdc++'s; this build uses "
                  "another standard library";
}
#endif

}  // namespace
}  // namespace verbsim::sim
