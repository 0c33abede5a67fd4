// Packets on the simulated wire: the InfiniBand transport headers verbsim
// models (BTH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH) as plain
// fields, with the payload bytes.
#ifndef VERBSIM_SIM_PACKET_H_
#define VERBSIM_SIM_PACKET_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/types.h"
#include "sim/payload.h"

namespace verbsim::sim {

// BTH opcodes of the RC transport (IBA table 38). UC and UD use the same low
// five bits with another transport prefix.
enum class RcOp : uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastImm = 0x03,
  kSendOnly = 0x04,
  kSendOnlyImm = 0x05,
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteLastImm = 0x09,
  kWriteOnly = 0x0a,
  kWriteOnlyImm = 0x0b,
  kReadRequest = 0x0c,
  kReadResponseFirst = 0x0d,
  kReadResponseMiddle = 0x0e,
  kReadResponseLast = 0x0f,
  kReadResponseOnly = 0x10,
  kAcknowledge = 0x11,
  kAtomicAcknowledge = 0x12,
  kCompareSwap = 0x13,
  kFetchAdd = 0x14,
  kSendLastInv = 0x16,
  kSendOnlyInv = 0x17,
};
absl::string_view RcOpName(RcOp op);

// AETH syndrome (IBA 9.7.5.1): the top three bits say ACK, RNR NAK or NAK.
enum class NakCode : uint8_t {
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
  kInvalidRdRequest = 4,
};
inline uint8_t AckSyndrome() { return 0x1f; }  // ACK, credits "invalid"
inline uint8_t RnrNakSyndrome(uint8_t timer) { return 0x20 | (timer & 0x1f); }
inline uint8_t NakSyndrome(NakCode c) {
  return 0x60 | static_cast<uint8_t>(c);
}
inline bool IsAck(uint8_t s) { return (s & 0xe0) == 0x00; }
inline bool IsRnrNak(uint8_t s) { return (s & 0xe0) == 0x20; }
inline bool IsNak(uint8_t s) { return (s & 0xe0) == 0x60; }

struct Packet {
  int src_node = 0;
  int dst_node = 0;
  uint32_t src_qpn = 0;
  uint32_t dst_qpn = 0;
  // The transport: the BTH opcode is opcode's low five bits with the RC
  // (0x00), UC (0x20) or UD (0x60) prefix.
  QpType transport = QpType::kRc;
  RcOp opcode = RcOp::kSendOnly;
  uint32_t psn = 0;  // 24 bits
  bool ack_req = false;
  bool solicited = false;
  // RETH
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_len = 0;
  // AtomicETH
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  // ImmDt, or IETH's rkey for *_INV
  uint32_t imm = 0;
  // DETH (UD): the Q_Key; the source QP is src_qpn.
  uint32_t qkey = 0;
  // GRH fields of a UD datagram (RoCEv2: the IPv4 header's TOS and TTL).
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  // AETH and AtomicAckETH
  uint8_t syndrome = 0;
  uint32_t msn = 0;
  uint64_t atomic_orig = 0;
  Payload payload;
  // A payload still in the sender's memory, `deferred_len` bytes (0: the
  // payload is in `payload`), read when the packet leaves the link
  // (MemoryModel in sim/profile.h):
  //  - a request of the send WQE posted as number `deferred_wqe`
  //    (SendWqe::seq): message offset `deferred_offset` (GatherDeferred in
  //    requester.cc);
  //  - a read response (deferred_wqe 0): address `deferred_offset` of the
  //    region whose own key (its lkey) `rkey` holds at the responder
  //    (FetchDeferredRead in responder.cc).
  uint64_t deferred_wqe = 0;
  uint64_t deferred_offset = 0;
  uint32_t deferred_len = 0;
};

// The payload bytes a packet carries, read or still to be read.
inline size_t PayloadLength(const Packet& p) {
  return p.payload.size() + p.deferred_len;
}

// Opcode classes.
bool IsSend(RcOp op);
bool IsWrite(RcOp op);
bool IsReadResponse(RcOp op);
bool IsAtomicRequest(RcOp op);
bool IsRequest(RcOp op);  // travels requester -> responder
bool IsFirstOrOnly(RcOp op);
bool IsLastOrOnly(RcOp op);
bool HasImmediate(RcOp op);
bool HasInvalidate(RcOp op);
// The IPv4 header checksum of the `n` header bytes at `h` (RFC 791; the
// checksum field itself must be zero).
uint16_t Ipv4Checksum(const uint8_t* h, size_t n);
// The BTH opcode byte of `op` on `transport`.
uint8_t BthOpcode(QpType transport, RcOp op);

// 24-bit PSN arithmetic (IBA 9.7.1: compare within half the space).
constexpr uint32_t kPsnMask = 0xffffff;
inline uint32_t PsnAdd(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }
// Signed distance a - b in the 24-bit circle.
inline int32_t PsnDiff(uint32_t a, uint32_t b) {
  int32_t d = static_cast<int32_t>((a - b) & kPsnMask);
  return d >= (1 << 23) ? d - (1 << 24) : d;
}

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_PACKET_H_
