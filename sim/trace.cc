#include "sim/trace.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/names.h"
#include "sim/packet.h"

namespace verbsim::sim {
namespace {

// FNV-1a's step over a 64-bit word rather than a byte, with a shift to
// carry the high bits down (the hash only has to tell runs apart, not
// resist attack).
void MixWord(uint64_t& h, uint64_t v) {
  h ^= v;
  h *= 0x100000001b3ull;  // FNV-1a prime
  h ^= h >> 29;
}

// A record's fields in one word: each field word times an odd constant of
// its own (a bijection, so a change of any one field changes the digest),
// rotated apart and combined. The multiplications are independent of one
// another, so a record costs the hash one step of its serial chain, not
// one per field.
uint64_t Digest(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e,
                uint64_t f) {
  auto rotl = [](uint64_t x, int k) { return x << k | x >> (64 - k); };
  return (a * 0x9e3779b97f4a7c15ull) ^
         rotl(b * 0xbf58476d1ce4e5b9ull, 11) ^
         rotl(c * 0x94d049bb133111ebull, 22) ^
         rotl(d * 0xd6e8feb86659fd93ull, 33) ^
         rotl(e * 0xff51afd7ed558ccdull, 44) ^
         rotl(f * 0xc4ceb9fe1a85ec53ull, 55);
}

}  // namespace

absl::string_view TraceKindName(TraceKind kind) {
  switch (kind) {
    case TraceKind::kTransmit: return "send";
    case TraceKind::kDeliver: return "recv";
    case TraceKind::kDrop: return "drop";
    case TraceKind::kComplete: return "cqe";
    case TraceKind::kTimeout: return "timeout";
    case TraceKind::kRnrWait: return "rnr-wait";
  }
  return "?";
}

void Trace::Mix(const TraceFields& r, absl::string_view note) {
  MixWord(
      hash_,
      Digest(static_cast<uint64_t>(r.time_ns),
             static_cast<uint64_t>(r.kind) |
                 static_cast<uint64_t>(static_cast<uint32_t>(r.node)) << 8 |
                 static_cast<uint64_t>(r.opcode) << 40 |
                 static_cast<uint64_t>(r.syndrome) << 48,
             static_cast<uint64_t>(r.qpn) << 32 | r.peer_qpn,
             static_cast<uint64_t>(static_cast<uint32_t>(r.peer_node)) << 32 |
                 r.psn,
             static_cast<uint64_t>(r.length) << 32, r.wr_id));
  for (size_t i = 0; i < note.size(); i += 8) {
    uint64_t word = 0;
    for (size_t k = i; k < i + 8 && k < note.size(); ++k) {
      word = word << 8 | static_cast<uint8_t>(note[k]);
    }
    MixWord(hash_, word);
  }
  ++count_;
}

void Trace::Record(TraceRecord r) {
  Mix(r, r.note);
  if (keep_) records_.push_back(std::move(r));
}

void Trace::Record(const TraceFields& fields, absl::string_view note) {
  Mix(fields, note);
  if (keep_) {
    TraceRecord r;
    static_cast<TraceFields&>(r) = fields;
    r.note = std::string(note);
    records_.push_back(std::move(r));
  }
}

std::string FormatTraceRecord(const TraceRecord& r) {
  const std::string when =
      absl::StrFormat("%10.3fus", static_cast<double>(r.time_ns) / 1000.0);
  switch (r.kind) {
    case TraceKind::kComplete:
      return absl::StrFormat("%s sim%d qp%u cqe wr_id %u %s len %u", when,
                             r.node, r.qpn, r.wr_id,
                             WcStatusName(static_cast<WcStatus>(r.opcode)),
                             r.length);
    case TraceKind::kTimeout:
    case TraceKind::kRnrWait:
      return absl::StrFormat("%s sim%d qp%u %s psn %u", when, r.node, r.qpn,
                             TraceKindName(r.kind), r.psn);
    default:
      break;
  }
  std::string line = absl::StrFormat(
      "%s sim%d qp%u %s sim%d qp%u %s psn %u", when, r.node, r.qpn,
      r.kind == TraceKind::kTransmit ? "->" : "<-", r.peer_node, r.peer_qpn,
      RcOpName(static_cast<RcOp>(r.opcode)), r.psn);
  if (r.length > 0) absl::StrAppendFormat(&line, " len %u", r.length);
  if (static_cast<RcOp>(r.opcode) == RcOp::kAcknowledge) {
    absl::StrAppendFormat(&line, " aeth 0x%02x", r.syndrome);
  }
  if (r.kind == TraceKind::kDrop) absl::StrAppend(&line, " DROPPED");
  if (!r.note.empty()) absl::StrAppend(&line, " (", r.note, ")");
  return line;
}

}  // namespace verbsim::sim
