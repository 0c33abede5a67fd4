// The UC responder (IBA 9.8.3; kernel rxe rxe_resp.c): PSNs in order as on
// RC, but nothing is acknowledged. A gap, a bad rkey, a missing QP access
// right or a missing receive drops the whole message silently; the next
// FIRST or ONLY packet starts afresh. The requester completes each WR once
// its packets are sent.
#include <cstring>

#include "sim/fabric.h"
#include "sim/remote_access.h"
#include "sim/sg.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

// Drops the message in progress (and the rest of it); a receive it was
// filling goes back to its queue for the next message.
void DropMessage(QpCore& qp, const Packet& p, absl::string_view why) {
  if (qp.in_send) {
    qp.in_send = false;
    ReturnRecv(qp, std::move(qp.cur_recv));
  }
  qp.in_write = false;
  // A message counts once, however many of its packets are dropped.
  if (!qp.drop_msg) ++qp.msg_drops;
  qp.drop_msg = !IsLastOrOnly(p.opcode);
  ++qp.packets_dropped;
  qp.node->fabric->TracePacket(TraceKind::kDrop, p, why);
}

// A local error on the receive: completed with `status`, the QP to ERR
// (IBA 10.7.3.1; rxe class D).
void FailRecv(QpCore& qp, const RecvWqe& r, WcStatus status, const Packet& p) {
  qp.in_send = false;
  CompleteRecv(qp, r, status, WcOpcode::kRecv, 0, p);
  EnterError(qp);
}

void ReceiveSend(QpCore& qp, const Packet& p) {
  const SimProfile& profile = qp.node->fabric->profile();
  if (IsFirstOrOnly(p.opcode)) {
    if (!HasRecv(qp)) {
      ++qp.no_recv_drops;
      DropMessage(qp, p, "no receive posted");
      return;
    }
    BeginRecv(qp);
  }
  const uint64_t len = p.payload.size();
  switch (CheckRecvSpace(qp, len)) {
    case RecvSpace::kOk:
      break;
    case RecvSpace::kTooSmall:
      FailRecv(qp, qp.cur_recv, profile.uc_recv_too_small_status, p);
      return;
    case RecvSpace::kRefused:
      ScatterBeforeRefusal(qp, {p.payload.data(), len});
      FailRecv(qp, qp.cur_recv, profile.recv_access_status, p);
      return;
  }
  ScatterTo(qp.cur_recv.sges, qp.recv_offset, p.payload.data(), len);
  qp.recv_offset += len;
  if (IsLastOrOnly(p.opcode)) {
    qp.in_send = false;
    CompleteRecv(qp, qp.cur_recv, WcStatus::kSuccess, WcOpcode::kRecv,
                 qp.recv_offset, p);
  }
}

void ReceiveWrite(QpCore& qp, const Packet& p) {
  switch (CheckWritePacket(qp, p)) {
    case WriteCheck::kOk:
      break;
    case WriteCheck::kQpDenies:
      DropMessage(qp, p, "QP lacks REMOTE_WRITE");
      return;
    case WriteCheck::kRkeyDenies:
      DropMessage(qp, p, "rkey check failed");
      return;
    case WriteCheck::kLongerThanRequested:
      DropMessage(qp, p, "write longer than its RETH length");
      return;
  }
  const uint64_t len = p.payload.size();
  if (HasImmediate(p.opcode) && !HasRecv(qp)) {
    // The immediate needs a receive; without one the message is dropped.
    ++qp.no_recv_drops;
    DropMessage(qp, p, "no receive posted");
    return;
  }
  if (len > 0) std::memcpy(reinterpret_cast<void*>(qp.write_va), p.payload.data(), len);
  qp.write_va += len;
  qp.write_left -= len;
  if (IsLastOrOnly(p.opcode)) {
    qp.in_write = false;
    if (HasImmediate(p.opcode)) {
      RecvWqe r = TakeRecv(qp);
      CompleteRecv(qp, r, WcStatus::kSuccess, WcOpcode::kRecvRdmaWithImm,
                   qp.write_len, p);
    }
  }
}

}  // namespace

void UcReceive(QpCore& qp, Packet& p) {
  // ResponderReceive has checked the state and the peer.
  Fabric* fabric = qp.node->fabric;
  if (!IsSend(p.opcode) && !IsWrite(p.opcode)) {
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "opcode not valid on UC");
    return;
  }
  const bool in_order = PsnDiff(p.psn, qp.epsn) == 0;
  // A new message resynchronises (IBA 9.8.3.2); anything else out of order,
  // or the rest of a dropped message, is dropped.
  if (!IsFirstOrOnly(p.opcode) && (!in_order || qp.drop_msg)) {
    qp.epsn = PsnAdd(p.psn, 1);
    DropMessage(qp, p, qp.drop_msg ? "rest of a dropped message"
                                   : "PSN gap: message dropped");
    return;
  }
  if (IsFirstOrOnly(p.opcode)) {
    qp.drop_msg = false;
    if (qp.in_send || qp.in_write) {
      // The previous message lost its end: it is dropped.
      ++qp.msg_drops;
      if (qp.in_send) ReturnRecv(qp, std::move(qp.cur_recv));
      qp.in_send = qp.in_write = false;
    }
  } else if (qp.in_send != IsSend(p.opcode) ||
             qp.in_write != IsWrite(p.opcode)) {
    qp.epsn = PsnAdd(p.psn, 1);
    DropMessage(qp, p, "opcode out of sequence");
    return;
  }
  qp.epsn = PsnAdd(p.psn, 1);
  if (IsSend(p.opcode)) {
    ReceiveSend(qp, p);
  } else {
    ReceiveWrite(qp, p);
  }
}

}  // namespace verbsim::sim
