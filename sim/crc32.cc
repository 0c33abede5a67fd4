#include "sim/crc32.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace verbsim::sim {
namespace {

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// tables[0] is the byte-at-a-time table; tables[k][b] is the register
// contribution of byte b followed by k zero bytes, so eight bytes fold in
// with eight look-ups and no dependency between them.
const Tables& CrcTables() {
  static const Tables tables = [] {
    Tables t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int k = 1; k < 8; ++k) {
        t[k][i] = t[0][t[k - 1][i] & 0xff] ^ (t[k - 1][i] >> 8);
      }
    }
    return t;
  }();
  return tables;
}

uint32_t SlicedUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  const Tables& t = CrcTables();
  while (n >= 8) {
    // Little-endian loads: the first byte in memory is the low byte, the
    // one the reflected register consumes first.
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    if constexpr (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) {
      lo = __builtin_bswap32(lo);
      hi = __builtin_bswap32(hi);
    }
    lo ^= reg;
    reg = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
          t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
          t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  for (size_t i = 0; i < n; ++i) reg = t[0][(reg ^ p[i]) & 0xff] ^ (reg >> 8);
  return reg;
}

#if defined(__x86_64__)
// Folding with carry-less multiplication (the method of Gopal et al.,
// "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
// Instruction", Intel, 2009). A 128-bit lane a = lo + hi * x^64 that stands
// d bits before the lane it folds into adds lo * (x^(d+32) mod P) and
// hi * (x^(d+96) mod P) there (bit-reflected, one bit up); the constants
// are those remainders for d = 512 (four lanes at a time) and d = 128.
// The lane left at the end has the same CRC as everything folded into it,
// so the tables finish it and any tail. Crc32Test checks every length
// against a bitwise CRC.
#define VERBSIM_CLMUL __attribute__((target("pclmul,sse4.1")))

VERBSIM_CLMUL inline __m128i Load(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

VERBSIM_CLMUL inline __m128i Fold(__m128i a, __m128i k, __m128i into) {
  const __m128i lo = _mm_clmulepi64_si128(a, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(a, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), into);
}

VERBSIM_CLMUL uint32_t FoldedUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  const __m128i k512 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
  const __m128i k128 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
  // The register enters as the first four bytes' complement (the CRC is
  // linear: CRC(reg, m) == CRC(0, m with reg XORed into its start)).
  __m128i a0 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  __m128i a1 = Load(p + 16);
  __m128i a2 = Load(p + 32);
  __m128i a3 = Load(p + 48);
  p += 64;
  n -= 64;
  while (n >= 64) {
    a0 = Fold(a0, k512, Load(p));
    a1 = Fold(a1, k512, Load(p + 16));
    a2 = Fold(a2, k512, Load(p + 32));
    a3 = Fold(a3, k512, Load(p + 48));
    p += 64;
    n -= 64;
  }
  __m128i a = Fold(a0, k128, a1);
  a = Fold(a, k128, a2);
  a = Fold(a, k128, a3);
  while (n >= 16) {
    a = Fold(a, k128, Load(p));
    p += 16;
    n -= 16;
  }
  uint8_t lane[16];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lane), a);
  return SlicedUpdate(SlicedUpdate(0, lane, sizeof(lane)), p, n);
}

bool HasClmul() {
  static const bool has = __builtin_cpu_supports("pclmul") &&
                          __builtin_cpu_supports("sse4.1");
  return has;
}
#endif

}  // namespace

uint32_t Crc32Update(uint32_t reg, const uint8_t* p, size_t n) {
#if defined(__x86_64__)
  if (n >= 64 && HasClmul()) return FoldedUpdate(reg, p, n);
#endif
  return SlicedUpdate(reg, p, n);
}

}  // namespace verbsim::sim
