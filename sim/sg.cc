#include "sim/sg.h"

#include <algorithm>
#include <cstring>

namespace verbsim::sim {

uint64_t SgeTotal(absl::Span<const Sge> sges) {
  uint64_t total = 0;
  for (const Sge& s : sges) total += s.length;
  return total;
}

namespace {

// Calls fn(sge, offset_in_sge, len, offset_in_message) for each piece of
// [offset, offset + len) that lies in an SGE; stops early when fn is false.
template <typename Fn>
bool ForEachPiece(absl::Span<const Sge> sges, uint64_t offset, uint64_t len,
                  Fn fn) {
  uint64_t sge_start = 0;
  uint64_t done = 0;
  for (const Sge& s : sges) {
    if (done == len) break;
    const uint64_t sge_end = sge_start + s.length;
    const uint64_t want = offset + done;
    if (want < sge_end) {
      const uint64_t in_sge = want - sge_start;
      const uint64_t n = std::min<uint64_t>(s.length - in_sge, len - done);
      if (!fn(s, in_sge, n, done)) return false;
      done += n;
    }
    sge_start = sge_end;
  }
  return true;
}

}  // namespace

void ScatterTo(absl::Span<const Sge> sges, uint64_t offset,
               const uint8_t* data, uint64_t len) {
  ForEachPiece(sges, offset, len,
               [&](const Sge& s, uint64_t in_sge, uint64_t n, uint64_t done) {
                 std::memcpy(reinterpret_cast<void*>(s.addr + in_sge),
                             data + done, n);
                 return true;
               });
}

Payload GatherFrom(absl::Span<const Sge> sges) {
  return GatherPrefix(sges, SgeTotal(sges));
}

Payload GatherPrefix(absl::Span<const Sge> sges, uint64_t len) {
  Payload out;
  out.ResizeForOverwrite(std::min(len, SgeTotal(sges)));
  uint64_t at = 0;
  for (const Sge& s : sges) {
    if (at >= out.size()) break;
    const uint64_t n = std::min<uint64_t>(s.length, out.size() - at);
    if (n > 0) {
      std::memcpy(out.data() + at, reinterpret_cast<const void*>(s.addr), n);
    }
    at += n;
  }
  return out;
}

void GatherRange(absl::Span<const Sge> sges, uint64_t offset, uint64_t len,
                 uint8_t* out) {
  ForEachPiece(sges, offset, len,
               [&](const Sge& s, uint64_t in_sge, uint64_t n, uint64_t done) {
                 std::memcpy(out + done,
                             reinterpret_cast<const void*>(s.addr + in_sge), n);
                 return true;
               });
}

AccessResult CheckSgeRange(const KeyTable& keys, const PdState* pd,
                           absl::Span<const Sge> sges, uint64_t offset,
                           uint64_t len, uint32_t required,
                           uint64_t* passed) {
  AccessResult result = AccessResult::kOk;
  uint64_t ok_bytes = 0;
  ForEachPiece(sges, offset, len,
               [&](const Sge& s, uint64_t in_sge, uint64_t n, uint64_t done) {
                 result = CheckAccess(keys, s.lkey, KeyKind::kLocal, pd,
                                      s.addr + in_sge, n, required);
                 if (result != AccessResult::kOk) return false;
                 ok_bytes = done + n;
                 return true;
               });
  if (passed != nullptr) *passed = ok_bytes;
  return result;
}

}  // namespace verbsim::sim
