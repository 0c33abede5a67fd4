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
  // Inline: the hash step is a few multiplications, less than a call.
  void Record(const TraceFields& fields, absl::string_view note = {}) {
    Mix(fields, note);
    if (keep_) Keep(fields, note);
  }
  uint64_t hash() const { return hash_; }
  uint64_t size() const { return count_; }
  const std::vector<TraceRecord>& records() const { return records_; }
  void Clear() { records_.clear(); }

 private:
  // FNV-1a's step over a 64-bit word rather than a byte, with a shift to
  // carry the high bits down (the hash only has to tell runs apart, not
  // resist attack).
  static void MixWord(uint64_t& h, uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ull;  // FNV-1a prime
    h ^= h >> 29;
  }
  // A record's fields in one word: each field word times an odd constant
  // of its own (a bijection, so a change of any one field changes the
  // digest), rotated apart and combined. The multiplications are
  // independent of one another, so a record costs the hash one step of
  // its serial chain, not one per field.
  static uint64_t Digest(uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                         uint64_t e, uint64_t f) {
    auto rotl = [](uint64_t x, int k) { return x << k | x >> (64 - k); };
    return (a * 0x9e3779b97f4a7c15ull) ^
           rotl(b * 0xbf58476d1ce4e5b9ull, 11) ^
           rotl(c * 0x94d049bb133111ebull, 22) ^
           rotl(d * 0xd6e8feb86659fd93ull, 33) ^
           rotl(e * 0xff51afd7ed558ccdull, 44) ^
           rotl(f * 0xc4ceb9fe1a85ec53ull, 55);
  }
  // Mixes the record into the hash and counts it.
  void Mix(const TraceFields& r, absl::string_view note) {
    MixWord(hash_,
            Digest(static_cast<uint64_t>(r.time_ns),
                   static_cast<uint64_t>(r.kind) |
                       static_cast<uint64_t>(static_cast<uint32_t>(r.node))
                           << 8 |
                       static_cast<uint64_t>(r.opcode) << 40 |
                       static_cast<uint64_t>(r.syndrome) << 48,
                   static_cast<uint64_t>(r.qpn) << 32 | r.peer_qpn,
                   static_cast<uint64_t>(static_cast<uint32_t>(r.peer_node))
                           << 32 |
                       r.psn,
                   static_cast<uint64_t>(r.length) << 32, r.wr_id));
    if (!note.empty()) MixNote(note);
    ++count_;
  }
  // The note's bytes, eight to a word.
  void MixNote(absl::string_view note);
  // Appends a TraceRecord of `fields` and `note` to records_.
  void Keep(const TraceFields& fields, absl::string_view note);
  bool keep_ = false;
  uint64_t hash_ = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  uint64_t count_ = 0;
  std::vector<TraceRecord> records_;
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_TRACE_H_
