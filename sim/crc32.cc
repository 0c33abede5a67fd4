#include "sim/crc32.h"

#include <array>
#include <cstdint>
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
// d bits before the lane it folds into adds lo * K(d + 32) and hi * K(d - 32)
// there, where K(e) is x^e mod P bit-reflected in 32 bits and shifted one
// bit up (the 33-bit form the reflected product needs). The constants are
// those for d = 512 (four lanes 64 bytes apart) and d = 128 (neighbouring
// lanes), for the 256-bit fold d = 1024 (four 32-byte blocks 128 bytes
// apart), and for the 512-bit fold d = 2048 (four 64-byte blocks 256 bytes
// apart). The lane left at the end has the same CRC as everything folded
// into it, so the tables finish it and any tail. Crc32Test checks every way
// at every length up to past two wide steps against a bitwise CRC.
constexpr int64_t kFold512Lo = 0x154442bd4;   // K(544)
constexpr int64_t kFold512Hi = 0x1c6e41596;   // K(480)
constexpr int64_t kFold128Lo = 0x1751997d0;   // K(160)
constexpr int64_t kFold128Hi = 0x0ccaa009e;   // K(96)
constexpr int64_t kFold1024Lo = 0x1e88ef372;  // K(1056)
constexpr int64_t kFold1024Hi = 0x14a7fe880;  // K(992)
constexpr int64_t kFold2048Lo = 0x11542778a;  // K(2080)
constexpr int64_t kFold2048Hi = 0x1322d1430;  // K(2016)

#define VERBSIM_CLMUL __attribute__((target("pclmul,sse4.1")))
#define VERBSIM_YMM_CLMUL \
  __attribute__((target("vpclmulqdq,avx2,pclmul,sse4.1")))
#define VERBSIM_WIDE_CLMUL __attribute__((target("vpclmulqdq,avx512f")))

VERBSIM_CLMUL inline __m128i Load(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

VERBSIM_CLMUL inline __m128i Fold(__m128i a, __m128i k, __m128i into) {
  const __m128i lo = _mm_clmulepi64_si128(a, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(a, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), into);
}

// Four lanes a0..a3, 16 bytes apart in each 64-byte block, folded into one
// and then over the rest 16 bytes a step; the tables finish it.
VERBSIM_CLMUL uint32_t FinishLanes(__m128i a0, __m128i a1, __m128i a2,
                                   __m128i a3, const uint8_t* p, size_t n) {
  const __m128i k128 = _mm_set_epi64x(kFold128Hi, kFold128Lo);
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

VERBSIM_YMM_CLMUL inline __m256i Load32(const uint8_t* q) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
}

// Two 128-bit folds in one instruction pair.
VERBSIM_YMM_CLMUL inline __m256i Fold2(__m256i a, __m256i k, __m256i into) {
  const __m256i lo = _mm256_clmulepi64_epi128(a, k, 0x00);
  const __m256i hi = _mm256_clmulepi64_epi128(a, k, 0x11);
  return _mm256_xor_si256(_mm256_xor_si256(lo, hi), into);
}

VERBSIM_WIDE_CLMUL inline __m512i Load64(const uint8_t* q) {
  return _mm512_loadu_si512(q);
}

// Four 128-bit folds in one instruction pair; the three-way XOR is one
// ternary-logic instruction (truth table 0x96).
VERBSIM_WIDE_CLMUL inline __m512i Fold4(__m512i a, __m512i k, __m512i into) {
  const __m512i lo = _mm512_clmulepi64_epi128(a, k, 0x00);
  const __m512i hi = _mm512_clmulepi64_epi128(a, k, 0x11);
  return _mm512_ternarylogic_epi64(lo, hi, into, 0x96);
}

#endif  // __x86_64__

}  // namespace

namespace crc32_internal {

uint32_t SlicedUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  return verbsim::sim::SlicedUpdate(reg, p, n);
}

#if defined(__x86_64__)

bool HasClmul() {
  static const bool has = __builtin_cpu_supports("pclmul") &&
                          __builtin_cpu_supports("sse4.1");
  return has;
}

bool HasYmmClmul() {
  static const bool has = HasClmul() &&
                          __builtin_cpu_supports("vpclmulqdq") &&
                          __builtin_cpu_supports("avx2");
  return has;
}

bool HasWideClmul() {
  static const bool has = HasClmul() &&
                          __builtin_cpu_supports("vpclmulqdq") &&
                          __builtin_cpu_supports("avx512f");
  return has;
}

VERBSIM_CLMUL uint32_t FoldedUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  const __m128i k512 = _mm_set_epi64x(kFold512Hi, kFold512Lo);
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
  return FinishLanes(a0, a1, a2, a3, p, n);
}

// The same lanes as FoldedUpdate, two to a 256-bit register, and four such
// registers (128 bytes) in flight; then the first two fold into the last two
// (64 bytes on), whose four lanes FinishLanes takes. For processors with
// VPCLMULQDQ but no AVX-512.
VERBSIM_YMM_CLMUL uint32_t YmmFoldedUpdate(uint32_t reg, const uint8_t* p,
                                           size_t n) {
  const __m256i k1024 =
      _mm256_set_epi64x(kFold1024Hi, kFold1024Lo, kFold1024Hi, kFold1024Lo);
  const __m256i k512 =
      _mm256_set_epi64x(kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo);
  const __m256i first = _mm256_set_epi64x(0, 0, 0, reg);
  __m256i b0 = _mm256_xor_si256(Load32(p), first);
  __m256i b1 = Load32(p + 32);
  __m256i b2 = Load32(p + 64);
  __m256i b3 = Load32(p + 96);
  p += 128;
  n -= 128;
  while (n >= 128) {
    b0 = Fold2(b0, k1024, Load32(p));
    b1 = Fold2(b1, k1024, Load32(p + 32));
    b2 = Fold2(b2, k1024, Load32(p + 64));
    b3 = Fold2(b3, k1024, Load32(p + 96));
    p += 128;
    n -= 128;
  }
  b2 = Fold2(b0, k512, b2);
  b3 = Fold2(b1, k512, b3);
  uint8_t lanes[64];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), b2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes + 32), b3);
  return FinishLanes(Load(lanes), Load(lanes + 16), Load(lanes + 32),
                     Load(lanes + 48), p, n);
}

// The same lanes as FoldedUpdate, four to a 512-bit register, and four such
// registers (256 bytes) in flight, so that the multiplications' latency
// overlaps; then the four fold into one, which goes on 64 bytes a step.
VERBSIM_WIDE_CLMUL uint32_t WideFoldedUpdate(uint32_t reg, const uint8_t* p,
                                             size_t n) {
  // (Set element by element: gcc 12's broadcast and extract intrinsics warn
  // of their own undefined operand.)
  const __m512i k2048 =
      _mm512_set_epi64(kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo,
                       kFold2048Hi, kFold2048Lo, kFold2048Hi, kFold2048Lo);
  const __m512i k512 =
      _mm512_set_epi64(kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo,
                       kFold512Hi, kFold512Lo, kFold512Hi, kFold512Lo);
  const __m512i first = _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, reg);
  __m512i b0 = _mm512_xor_si512(Load64(p), first);
  __m512i b1 = Load64(p + 64);
  __m512i b2 = Load64(p + 128);
  __m512i b3 = Load64(p + 192);
  p += 256;
  n -= 256;
  while (n >= 256) {
    b0 = Fold4(b0, k2048, Load64(p));
    b1 = Fold4(b1, k2048, Load64(p + 64));
    b2 = Fold4(b2, k2048, Load64(p + 128));
    b3 = Fold4(b3, k2048, Load64(p + 192));
    p += 256;
    n -= 256;
  }
  __m512i b = Fold4(b0, k512, b1);
  b = Fold4(b, k512, b2);
  b = Fold4(b, k512, b3);
  while (n >= 64) {
    b = Fold4(b, k512, Load64(p));
    p += 64;
    n -= 64;
  }
  uint8_t lanes[64];
  _mm512_storeu_si512(lanes, b);
  return FinishLanes(Load(lanes), Load(lanes + 16), Load(lanes + 32),
                     Load(lanes + 48), p, n);
}

#else  // no carry-less multiplication: never called (Has* are false)

bool HasClmul() { return false; }
bool HasYmmClmul() {
  static const bool has = HasClmul() &&
                          __builtin_cpu_supports("vpclmulqdq") &&
                          __builtin_cpu_supports("avx2");
  return has;
}

bool HasYmmClmul() { return false; }
bool HasWideClmul() { return false; }
uint32_t YmmFoldedUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  return verbsim::sim::SlicedUpdate(reg, p, n);
}
uint32_t FoldedUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  return verbsim::sim::SlicedUpdate(reg, p, n);
}
uint32_t WideFoldedUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  return verbsim::sim::SlicedUpdate(reg, p, n);
}

#endif  // __x86_64__

}  // namespace crc32_internal

uint32_t Crc32Update(uint32_t reg, const uint8_t* p, size_t n) {
  if (n >= 256 && crc32_internal::HasWideClmul()) {
    return crc32_internal::WideFoldedUpdate(reg, p, n);
  }
  if (n >= 128 && crc32_internal::HasYmmClmul()) {
    return crc32_internal::YmmFoldedUpdate(reg, p, n);
  }
  if (n >= 64 && crc32_internal::HasClmul()) {
    return crc32_internal::FoldedUpdate(reg, p, n);
  }
  return SlicedUpdate(reg, p, n);
}

}  // namespace verbsim::sim
