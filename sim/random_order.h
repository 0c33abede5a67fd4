// A uniformly random order of n items, and the random subset of a packet's
// chunks that lands at once, drawn from one of the fabric's seeded 64-bit
// streams. Placement (placement.cc) draws once per RDMA write packet, so
// this is on the hot path of every large write: a packet of up to 64
// chunks (4 KiB) takes ChunksLandingNow, a larger one RandomOrder.
//
// The algorithms are fixed here, not left to the standard library, because
// the draws decide which chunks land late and when the rest lands, and so
// the timelines a seed reproduces: the same seed must place the same chunks
// with any compiler. Both take the words the placement has always taken,
// those of this order:
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

// The raw word DrawBelow(rng, range) accepts: it draws exactly the words
// DrawBelow would and returns the last, whose bits are then as good as
// uniform (the rejected tail is below 2^-32 of all words for every range the
// placement uses).
template <typename Rng>
inline uint64_t AcceptedWord(Rng& rng, uint64_t range) {
  uint64_t word = static_cast<uint64_t>(rng());
  unsigned __int128 product = static_cast<unsigned __int128>(word) * range;
  if (__builtin_expect(static_cast<uint64_t>(product) < range, 0)) {
    const uint64_t threshold = (0 - range) % range;
    while (static_cast<uint64_t>(product) < threshold) {
      word = static_cast<uint64_t>(rng());
      product = static_cast<unsigned __int128>(word) * range;
    }
  }
  return word;
}

// Which of a packet's n chunks (2 <= n <= 64) land at once: bit i for chunk
// i. The count is uniform in 0 .. n and, given the count, every subset of
// that size is equally likely (as with a prefix of RandomOrder's order).
//
// It takes exactly the words that RandomOrder(items, n) and then one more
// word (the count, word % (n + 1)) take, so every later draw of the stream
// (when the rest lands, what comes after) is the same: only which chunks
// land at once differs from the order RandomOrder would give. The subset is
// Floyd's sampling of the smaller of it and its complement: member j
// (j = n - s .. n - 1 for a subset of size s) takes a position t uniform in
// 0 .. j from the next 32 bits of the shuffle's words (t = bits * (j + 1) /
// 2^32, biased by at most 2^-26), and j itself when t is taken already.
template <typename Rng>
uint64_t ChunksLandingNow(Rng& rng, uint32_t n) {
  uint64_t words[32];
  uint32_t count = 0;
  uint32_t i = 1;
  if (n % 2 == 0) {
    words[count++] = AcceptedWord(rng, 2);
    i = 2;
  }
  for (; i < n; i += 2) {
    words[count++] = AcceptedWord(rng, (uint64_t{i} + 1) * (uint64_t{i} + 2));
  }
  const uint32_t now = static_cast<uint32_t>(rng() % (n + 1));
  const uint32_t size = now <= n - now ? now : n - now;
  uint64_t subset = 0;
  for (uint32_t k = 0; k < size; ++k) {
    const uint64_t word = words[k / 2];
    const uint64_t bits = k % 2 == 0 ? word & 0xffffffffu : word >> 32;
    const uint32_t j = n - size + k;
    const uint32_t t = static_cast<uint32_t>((bits * (uint64_t{j} + 1)) >> 32);
    // Without a branch: whether t is taken cannot be predicted.
    const uint64_t taken = 0 - (subset >> t & 1);
    subset |= (uint64_t{1} << j & taken) | (uint64_t{1} << t & ~taken);
  }
  if (now == size) return subset;
  const uint64_t all = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  return all & ~subset;
}

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_RANDOM_ORDER_H_
