// A uniformly random order of n items, drawn from one of the fabric's
// seeded 64-bit streams. Placement (placement.cc) draws the order in which
// a packet's chunks land with it, once per RDMA write packet, so it is on
// the hot path of every large write.
//
// The algorithm is fixed here, not left to the standard library, because
// the draws decide which chunks land late and so the timelines a seed
// reproduces: the same seed must place the same chunks with any compiler.
// It is the one the placement has always used:
//
//   Fisher-Yates from the front: item i (i = 1 .. n-1) swaps with a
//   position drawn uniformly from 0 .. i. When n is even, item 1 goes
//   first on its own. The rest go in pairs (i, i+1): one draw x, uniform
//   in 0 .. (i+1)(i+2)-1, gives both positions, x / (i+2) for item i and
//   x % (i+2) for item i+1.
//
//   A draw uniform in 0 .. r-1 takes a 64-bit word w and keeps the high
//   64 bits of the 128-bit product w * r, unless the low 64 bits are below
//   2^64 mod r: then it takes another word (a rejection that keeps the
//   result unbiased; with r below 2^32 it happens about once in 2^32
//   draws).
#ifndef VERBSIM_SIM_RANDOM_ORDER_H_
#define VERBSIM_SIM_RANDOM_ORDER_H_

#include <cstdint>
#include <limits>
#include <utility>

namespace verbsim::sim {

// The rare case of DrawBelow: the first word fell in the biased tail.
template <typename Rng>
[[gnu::noinline]] uint64_t DrawBelowAgain(Rng& rng, uint64_t range,
                                          unsigned __int128 product) {
  const uint64_t threshold = (0 - range) % range;
  while (static_cast<uint64_t>(product) < threshold) {
    product =
        static_cast<unsigned __int128>(static_cast<uint64_t>(rng())) * range;
  }
  return static_cast<uint64_t>(product >> 64);
}

// A draw uniform in 0 .. range-1 (range >= 1), as described above.
template <typename Rng>
inline uint64_t DrawBelow(Rng& rng, uint64_t range) {
  static_assert(Rng::min() == 0 &&
                    Rng::max() == std::numeric_limits<uint64_t>::max(),
                "the stream must give whole 64-bit words");
  const unsigned __int128 product =
      static_cast<unsigned __int128>(static_cast<uint64_t>(rng())) * range;
  if (__builtin_expect(static_cast<uint64_t>(product) < range, 0)) {
    return DrawBelowAgain(rng, range, product);
  }
  return static_cast<uint64_t>(product >> 64);
}

// x / d and x % d for a 32-bit x and 2 <= d < 2^32 without a division
// instruction: with c = ceil(2^64 / d), x / d is the high 64 bits of c * x,
// and x % d the high 64 bits of (c * x mod 2^64) * d, exactly, for every
// such x and d (Lemire, Kaser and Kurz, "Faster Remainder by Direct
// Computation", 2019, for 32-bit operands and a 64-bit c). The pair loop
// of RandomOrder divides by every d of 3 .. n+1 once per packet; a table
// of c for the small ones saves a division's latency per pair.
inline constexpr uint32_t kReciprocals = 260;  // d below it: 258 chunks
struct Reciprocals {
  uint64_t c[kReciprocals] = {};
  constexpr Reciprocals() {
    for (uint32_t d = 2; d < kReciprocals; ++d) c[d] = ~uint64_t{0} / d + 1;
  }
};
inline constexpr Reciprocals kReciprocal{};

inline void DivMod32(uint32_t x, uint32_t d, uint64_t* q, uint64_t* r) {
  if (d >= 2 && d < kReciprocals) {
    const uint64_t c = kReciprocal.c[d];
    const uint64_t low = c * x;
    *q = static_cast<uint64_t>((static_cast<unsigned __int128>(c) * x) >> 64);
    *r = static_cast<uint64_t>((static_cast<unsigned __int128>(low) * d) >> 64);
    return;
  }
  *q = x / d;
  *r = x % d;
}

// Puts items[0 .. n-1] in a random order, as described above.
template <typename Rng, typename T>
void RandomOrder(T* items, uint32_t n, Rng& rng) {
  if (n < 2) return;
  uint32_t i = 1;
  if (n % 2 == 0) {
    std::swap(items[1], items[DrawBelow(rng, 2)]);
    i = 2;
  }
  for (; i < n; i += 2) {
    const uint64_t b1 = uint64_t{i} + 2;
    const uint64_t x = DrawBelow(rng, (b1 - 1) * b1);
    uint64_t first, second;
    if (x <= std::numeric_limits<uint32_t>::max()) {
      // Every packet's chunk count (n below 2^16): 32-bit operands.
      DivMod32(static_cast<uint32_t>(x), static_cast<uint32_t>(b1), &first,
               &second);
    } else {
      first = x / b1;
      second = x % b1;
    }
    std::swap(items[i], items[first]);
    std::swap(items[i + 1], items[second]);
  }
}

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_RANDOM_ORDER_H_
