#include "sim/trace.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/names.h"
#include "sim/packet.h"

namespace verbsim::sim {
namespace {

// FNV-1a over 64-bit words rather than bytes (a tenth of the cost; the
// hash only has to tell runs apart, not resist attack).
void MixWord(uint64_t& h, uint64_t v) {
  h ^= v;
  h *= 0x100000001b3ull;  // FNV-1a prime
  h ^= h >> 29;
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

void Trace::Mix(const TraceRecord& r, absl::string_view note) {
  MixWord(hash_, static_cast<uint64_t>(r.time_ns));
  MixWord(
      hash_, static_cast<uint64_t>(r.kind) |
                 static_cast<uint64_t>(static_cast<uint32_t>(r.node)) << 8 |
                 static_cast<uint64_t>(r.opcode) << 40 |
                 static_cast<uint64_t>(r.syndrome) << 48);
  MixWord(hash_, static_cast<uint64_t>(r.qpn) << 32 | r.peer_qpn);
  MixWord(
      hash_,
      static_cast<uint64_t>(static_cast<uint32_t>(r.peer_node)) << 32 | r.psn);
  MixWord(hash_, static_cast<uint64_t>(r.length) << 32);
  MixWord(hash_, r.wr_id);
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

void Trace::Record(const TraceRecord& r, absl::string_view note) {
  Mix(r, note);
  if (keep_) {
    records_.push_back(r);
    records_.back().note = std::string(note);
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
