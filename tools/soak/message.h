// The bytes every soak message carries (tools/soak.sh, docs/reliability.md
// "Soak"): a header naming the stream, the sequence numbers and the length,
// sealed with a hash over the header and the payload, so that a receiver
// can tell a lost, repeated, reordered, corrupted or misdelivered message.
#ifndef VERBSIM_TOOLS_SOAK_MESSAGE_H_
#define VERBSIM_TOOLS_SOAK_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace verbsim::soak {

inline constexpr uint32_t kMagic = 0x4b4f5356;  // "VSOK" in memory order

enum class Kind : uint8_t {
  kSend = 1,      // RC send with a random payload
  kWrite = 2,     // RC RDMA write into a slot of the receiver's ring
  kWriteImm = 3,  // the same with immediate data (consumes a receive)
  kFin = 4,       // RC send: the sender's totals, its last message
  kAck = 5,       // RC send back: what the receiver verified
  kUd = 6,        // UD send
};

const char* KindName(Kind kind);

struct Header {
  uint32_t magic = kMagic;
  Kind kind = Kind::kSend;
  uint8_t src = 0;  // sending process
  uint8_t dst = 0;  // receiving process
  uint8_t reserved = 0;
  uint32_t len = 0;  // bytes including this header
  uint32_t reserved2 = 0;
  // Sends, writes with immediate, FINs, ACKs and UD datagrams: the message's
  // number in its stream, from 1. Plain writes: 0.
  uint64_t msg_seq = 0;
  // Writes: the write's number in its stream, from 1. Sends and FINs: the
  // last write posted before them (the writes they make visible).
  uint64_t write_seq = 0;
  uint64_t hash = 0;  // Seal(): over the header (this field 0) and payload
};
static_assert(sizeof(Header) == 40, "the header's layout is the wire's");

inline constexpr size_t kHeaderBytes = sizeof(Header);

// FIN's payload: what the sender sent on the stream in all.
struct FinBody {
  uint64_t messages = 0;  // receive-consuming messages, the FIN included
  uint64_t writes = 0;    // writes, with and without immediate
  uint64_t ud_sent = 0;   // UD datagrams to the same peer
};

// ACK's payload: what the receiver of a stream took and checked.
struct AckBody {
  uint64_t consumed = 0;        // receives consumed (every kind)
  uint64_t writes_checked = 0;  // writes verified, all up to this number
  uint64_t ud_highest = 0;      // highest UD number seen from the peer
  uint64_t fin_seen = 0;        // 1 once the FIN was taken and checked
};

// A 64-bit hash of `n` bytes (FNV-1a, then a final mix).
uint64_t Hash(const uint8_t* p, size_t n);

// The soak's random numbers (splitmix64 over `*state`).
uint64_t Random(uint64_t* state);
// A size in [lo, hi], small ones as likely as large ones of each power of
// two.
uint32_t RandomSize(uint64_t* state, uint32_t lo, uint32_t hi);

// Fills `n` payload bytes after a header from the generator state `*rng`.
void FillRandom(uint8_t* p, size_t n, uint64_t* rng);

// Writes `h` at `buf` with its hash over `buf[0, h.len)`: the payload must
// already be in place after the header.
void Seal(Header h, uint8_t* buf);

// Checks the header at `buf` (magic, length within `max_len`, hash) and
// returns it in `*out`; empty when it is intact, else what is wrong.
std::string Open(const uint8_t* buf, size_t max_len, Header* out);

// The byte at `offset` of the read region a stream's receiver exposes; the
// reader checks every byte it fetched against it.
uint8_t PatternByte(uint32_t stream, uint64_t offset);

}  // namespace verbsim::soak

#endif  // VERBSIM_TOOLS_SOAK_MESSAGE_H_
