// The fabric's event trace: every packet put on a link, delivered or dropped,
// every completion and every retry, in virtual-time order. A running 64-bit
// hash over each record's fields identifies a run: the same seed and
// the same calls give the same hash. Records are kept only when asked for.
#ifndef VERBSIM_SIM_TRACE_H_
#define VERBSIM_SIM_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace verbsim::sim {

enum class TraceKind : uint8_t {
  kTransmit,  // a packet left a node
  kDeliver,   // a packet reached its QP
  kDrop,      // a packet was lost (no such QP, wrong state, fault)
  kComplete,  // a completion was pushed to a CQ
  kTimeout,   // the local ACK timer fired
  kRnrWait,   // an RNR NAK made the requester wait
};
absl::string_view TraceKindName(TraceKind kind);

// A record's fields but its note: what the hash takes, built without a
// string when records are not kept.
struct TraceFields {
  int64_t time_ns = 0;
  TraceKind kind = TraceKind::kTransmit;
  int node = 0;        // where it happened
  uint32_t qpn = 0;
  int peer_node = -1;  // the other end of a packet
  uint32_t peer_qpn = 0;
  uint8_t opcode = 0;  // BTH opcode, or the completion status
  uint32_t psn = 0;
  uint8_t syndrome = 0;
  uint32_t length = 0;  // payload bytes, or the completion's byte_len
  uint64_t wr_id = 0;
};

struct TraceRecord : TraceFields {
  std::string note;  // why a packet was dropped, which fault hit it
};

// One line, e.g. "  12.345us sim0 qp17 -> sim1 qp18 SEND_ONLY psn 0 len 8".
std::string FormatTraceRecord(const TraceRecord& r);

class Trace {
 public:
  void set_keep(bool keep) { keep_ = keep; }
  bool keep() const { return keep_; }
  void Record(TraceRecord record);
  // The same for a record of `fields` and `note`: a TraceRecord is built
  // only when records are kept.
  void Record(const TraceFields& fields, absl::string_view note = {});
  uint64_t hash() const { return hash_; }
  uint64_t size() const { return count_; }
  const std::vector<TraceRecord>& records() const { return records_; }
  void Clear() { records_.clear(); }

 private:
  // Mixes the record into the hash and counts it.
  void Mix(const TraceFields& r, absl::string_view note);
  bool keep_ = false;
  uint64_t hash_ = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  uint64_t count_ = 0;
  std::vector<TraceRecord> records_;
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_TRACE_H_
