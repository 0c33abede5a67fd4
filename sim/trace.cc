#include "sim/trace.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/names.h"
#include "sim/packet.h"

namespace verbsim::sim {

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

void Trace::MixNote(absl::string_view note) {
  for (size_t i = 0; i < note.size(); i += 8) {
    uint64_t word = 0;
    for (size_t k = i; k < i + 8 && k < note.size(); ++k) {
      word = word << 8 | static_cast<uint8_t>(note[k]);
    }
    MixWord(hash_, word);
  }
}

void Trace::Record(TraceRecord r) {
  Mix(r, r.note);
  if (keep_) records_.push_back(std::move(r));
}

void Trace::Keep(const TraceFields& fields, absl::string_view note) {
  TraceRecord r;
  static_cast<TraceFields&>(r) = fields;
  r.note = std::string(note);
  records_.push_back(std::move(r));
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
