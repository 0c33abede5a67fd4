#include "sim/packet.h"

namespace verbsim::sim {

absl::string_view RcOpName(RcOp op) {
  switch (op) {
    case RcOp::kSendFirst: return "SEND_FIRST";
    case RcOp::kSendMiddle: return "SEND_MIDDLE";
    case RcOp::kSendLast: return "SEND_LAST";
    case RcOp::kSendLastImm: return "SEND_LAST_WITH_IMMEDIATE";
    case RcOp::kSendOnly: return "SEND_ONLY";
    case RcOp::kSendOnlyImm: return "SEND_ONLY_WITH_IMMEDIATE";
    case RcOp::kWriteFirst: return "RDMA_WRITE_FIRST";
    case RcOp::kWriteMiddle: return "RDMA_WRITE_MIDDLE";
    case RcOp::kWriteLast: return "RDMA_WRITE_LAST";
    case RcOp::kWriteLastImm: return "RDMA_WRITE_LAST_WITH_IMMEDIATE";
    case RcOp::kWriteOnly: return "RDMA_WRITE_ONLY";
    case RcOp::kWriteOnlyImm: return "RDMA_WRITE_ONLY_WITH_IMMEDIATE";
    case RcOp::kReadRequest: return "RDMA_READ_REQUEST";
    case RcOp::kReadResponseFirst: return "RDMA_READ_RESPONSE_FIRST";
    case RcOp::kReadResponseMiddle: return "RDMA_READ_RESPONSE_MIDDLE";
    case RcOp::kReadResponseLast: return "RDMA_READ_RESPONSE_LAST";
    case RcOp::kReadResponseOnly: return "RDMA_READ_RESPONSE_ONLY";
    case RcOp::kAcknowledge: return "ACKNOWLEDGE";
    case RcOp::kAtomicAcknowledge: return "ATOMIC_ACKNOWLEDGE";
    case RcOp::kCompareSwap: return "COMPARE_SWAP";
    case RcOp::kFetchAdd: return "FETCH_ADD";
    case RcOp::kSendLastInv: return "SEND_LAST_WITH_INVALIDATE";
    case RcOp::kSendOnlyInv: return "SEND_ONLY_WITH_INVALIDATE";
  }
  return "UNKNOWN_OPCODE";
}

bool IsSend(RcOp op) {
  switch (op) {
    case RcOp::kSendFirst: case RcOp::kSendMiddle: case RcOp::kSendLast:
    case RcOp::kSendLastImm: case RcOp::kSendOnly: case RcOp::kSendOnlyImm:
    case RcOp::kSendLastInv: case RcOp::kSendOnlyInv:
      return true;
    default:
      return false;
  }
}

bool IsWrite(RcOp op) {
  return op >= RcOp::kWriteFirst && op <= RcOp::kWriteOnlyImm;
}

bool IsReadResponse(RcOp op) {
  return op >= RcOp::kReadResponseFirst && op <= RcOp::kReadResponseOnly;
}

bool IsAtomicRequest(RcOp op) {
  return op == RcOp::kCompareSwap || op == RcOp::kFetchAdd;
}

bool IsRequest(RcOp op) {
  return IsSend(op) || IsWrite(op) || op == RcOp::kReadRequest ||
         IsAtomicRequest(op);
}

bool IsFirstOrOnly(RcOp op) {
  switch (op) {
    case RcOp::kSendFirst: case RcOp::kSendOnly: case RcOp::kSendOnlyImm:
    case RcOp::kSendOnlyInv: case RcOp::kWriteFirst: case RcOp::kWriteOnly:
    case RcOp::kWriteOnlyImm:
      return true;
    default:
      return false;
  }
}

bool IsLastOrOnly(RcOp op) {
  switch (op) {
    case RcOp::kSendLast: case RcOp::kSendLastImm: case RcOp::kSendOnly:
    case RcOp::kSendOnlyImm: case RcOp::kSendLastInv: case RcOp::kSendOnlyInv:
    case RcOp::kWriteLast: case RcOp::kWriteLastImm: case RcOp::kWriteOnly:
    case RcOp::kWriteOnlyImm:
      return true;
    default:
      return false;
  }
}

bool HasImmediate(RcOp op) {
  return op == RcOp::kSendLastImm || op == RcOp::kSendOnlyImm ||
         op == RcOp::kWriteLastImm || op == RcOp::kWriteOnlyImm;
}

bool HasInvalidate(RcOp op) {
  return op == RcOp::kSendLastInv || op == RcOp::kSendOnlyInv;
}

uint16_t Ipv4Checksum(const uint8_t* h, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    sum += static_cast<uint32_t>(h[i]) << 8 | h[i + 1];
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

uint8_t BthOpcode(QpType transport, RcOp op) {
  // IBA 9.2 table 38: bits 7..5 select the transport.
  const uint8_t prefix = transport == QpType::kUc   ? 0x20
                         : transport == QpType::kUd ? 0x60
                                                    : 0x00;
  return static_cast<uint8_t>(prefix | (static_cast<uint8_t>(op) & 0x1f));
}

}  // namespace verbsim::sim
