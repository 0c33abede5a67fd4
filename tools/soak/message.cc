#include "tools/soak/message.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace verbsim::soak {
namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

uint64_t Fnv(const uint8_t* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kSend: return "send";
    case Kind::kWrite: return "write";
    case Kind::kWriteImm: return "write_imm";
    case Kind::kFin: return "fin";
    case Kind::kAck: return "ack";
    case Kind::kUd: return "ud";
  }
  return "unknown";
}

uint64_t Hash(const uint8_t* p, size_t n) { return Mix(Fnv(p, n, kFnvOffset)); }

uint64_t Random(uint64_t* state) {
  *state += 0x9e3779b97f4a7c15ull;
  return Mix(*state);
}

uint32_t RandomSize(uint64_t* state, uint32_t lo, uint32_t hi) {
  int bits = 0;
  while ((uint64_t{1} << bits) < hi) ++bits;
  uint64_t top = uint64_t{1} << (Random(state) % (bits + 1));
  if (top < lo) top = lo;
  if (top > hi) top = hi;
  return lo + static_cast<uint32_t>(Random(state) % (top - lo + 1));
}

void FillRandom(uint8_t* p, size_t n, uint64_t* rng) {
  size_t i = 0;
  while (i < n) {
    const uint64_t v = Random(rng);
    const size_t k = n - i < 8 ? n - i : 8;
    std::memcpy(p + i, &v, k);
    i += k;
  }
}

void Seal(Header h, uint8_t* buf) {
  h.hash = 0;
  std::memcpy(buf, &h, kHeaderBytes);
  h.hash = Hash(buf, h.len);
  std::memcpy(buf, &h, kHeaderBytes);
}

std::string Open(const uint8_t* buf, size_t max_len, Header* out) {
  Header h;
  std::memcpy(&h, buf, kHeaderBytes);
  *out = h;
  if (h.magic != kMagic) {
    return absl::StrCat("bad magic 0x", absl::Hex(h.magic));
  }
  if (h.len < kHeaderBytes || h.len > max_len) {
    return absl::StrCat("bad length ", h.len);
  }
  // The hash over the bytes as they are, with the hash field zero.
  Header zero = h;
  zero.hash = 0;
  const uint64_t state =
      Fnv(buf + kHeaderBytes, h.len - kHeaderBytes,
          Fnv(reinterpret_cast<const uint8_t*>(&zero), kHeaderBytes, kFnvOffset));
  if (Mix(state) != h.hash) {
    return absl::StrCat("hash mismatch over ", h.len, " bytes");
  }
  return "";
}

uint8_t PatternByte(uint32_t stream, uint64_t offset) {
  const uint64_t word = Mix((static_cast<uint64_t>(stream) << 40) ^ (offset / 8) ^
                            0x5bd1e9955bd1e995ull);
  return static_cast<uint8_t>(word >> (8 * (offset % 8)));
}

}  // namespace verbsim::soak
