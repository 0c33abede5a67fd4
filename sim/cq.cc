// Completions and the completion queue: a send WQE's completion, pushing a
// completion, notifying an armed CQ's channel, and overrun (ibv_poll_cq(3),
// ibv_req_notify_cq(3), ibv_create_cq(3)).
#include <algorithm>
#include <vector>

#include "sim/fabric.h"
#include "sim/transport.h"

namespace verbsim::sim {

WcOpcode WcOpcodeFor(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
      return WcOpcode::kRdmaWrite;
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
    case WrOpcode::kSendWithInv:
      return WcOpcode::kSend;
    case WrOpcode::kRdmaRead:
      return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCmpAndSwp:
      return WcOpcode::kCompSwap;
    case WrOpcode::kAtomicFetchAndAdd:
      return WcOpcode::kFetchAdd;
    case WrOpcode::kLocalInv:
      return WcOpcode::kLocalInv;
    case WrOpcode::kBindMw:
      return WcOpcode::kBindMw;
  }
  return WcOpcode::kSend;
}

WorkCompletion SendCompletion(const QpCore& qp, const SendWqe& w,
                              WcStatus status) {
  WorkCompletion wc;
  wc.wr_id = w.wr_id;
  wc.status = status;
  wc.opcode = WcOpcodeFor(w.opcode);
  wc.qp_num = qp.qpn;
  if (status == WcStatus::kSuccess) {
    wc.byte_len = static_cast<uint32_t>(w.length);
  }
  return wc;
}

void OverflowCq(CqState& cq) {
  if (cq.overflowed) return;
  // CQ overrun: the CQ is in error, an async CQ_ERR event is raised and the
  // QPs that complete here go to ERR (ibv_create_cq(3), IBA 11.4.2.1).
  cq.overflowed = true;
  AsyncEvent ev;
  ev.type = AsyncEventType::kCqErr;
  ev.cq_id = cq.id;
  cq.context->async_events.push_back(ev);
  if (cq.context->node->fabric->profile().cq_overflow_errors_qps) {
    std::vector<QpCore*> qps(cq.qps.begin(), cq.qps.end());
    for (QpCore* qp : qps) {
      if (qp->state != verbsim::QpState::kErr) EnterError(*qp);
    }
  }
  cq.context->node->fabric->Wake();
}

void PushSendCompletion(QpCore& qp, const SendWqe& w, WcStatus status) {
  PushCompletion(*qp.send_cq, SendCompletion(qp, w, status), false,
                 SqRelease{qp.qpn, w.seq});
}

uint64_t SqSlotsHeld(const QpCore& qp) {
  if (!qp.node->fabric->profile().sq_slots_held_until_polled) {
    return qp.sq.size() - qp.sq_outside_ring;
  }
  return qp.next_wqe_seq - 1 - qp.sq_freed_seq;
}

void ReleaseSqSlots(Node& node, const SqRelease& release) {
  if (release.seq == 0) return;
  // The QP may be gone (destroyed: nothing to free) or reset since (its
  // slots were freed then, and sq_freed_seq is past this seq).
  QpCore* qp = node.FindQp(release.qpn);
  if (qp == nullptr) return;
  qp->sq_freed_seq = std::max(qp->sq_freed_seq, release.seq);
}

void PushCompletion(CqState& cq, const WorkCompletion& wc, bool solicited,
                    SqRelease release) {
  Fabric* fabric = cq.context->node->fabric;
  if (cq.overflowed || cq.dead) return;
  if (static_cast<int>(cq.entries.size()) >= cq.cqe) {
    OverflowCq(cq);
    return;
  }
  // The opcode is not valid on an error completion (ibv_poll_cq(3)): what
  // the profile reports there (ErrorCompletionOpcode).
  WorkCompletion entry = wc;
  if (wc.status != WcStatus::kSuccess) {
    switch (fabric->profile().error_completion_opcode) {
      case ErrorCompletionOpcode::kOtherQueues:
        entry.opcode = wc.opcode == WcOpcode::kRecv ||
                               wc.opcode == WcOpcode::kRecvRdmaWithImm
                           ? WcOpcode::kSend
                           : WcOpcode::kRecv;
        break;
      case ErrorCompletionOpcode::kZero:
        entry.opcode = WcOpcode::kSend;
        break;
      case ErrorCompletionOpcode::kTheWrs:
        break;
    }
  }
  TraceFields r;
  r.time_ns = fabric->now_ns();
  r.kind = TraceKind::kComplete;
  r.node = cq.context->node->index;
  r.qpn = wc.qp_num;
  r.opcode = static_cast<uint8_t>(wc.status);
  r.length = wc.byte_len;
  r.wr_id = wc.wr_id;
  fabric->trace().Record(r);
  cq.entries.push_back(entry);
  cq.releases.push_back(release);
  // Under the fabric's lock: one writer at a time.
  cq.ready.store(cq.ready.load(std::memory_order_relaxed) + 1,
                 std::memory_order_release);
  const bool fires_solicited =
      fabric->profile().cq_solicited_events &&
      (solicited || wc.status != WcStatus::kSuccess);
  if (cq.armed && (!cq.armed_solicited_only || fires_solicited)) {
    cq.armed = false;
    if (cq.channel != nullptr && !cq.channel->dead) {
      cq.channel->events.push_back(cq.shared_from_this());
    }
  }
  fabric->WakeForCompletion();
}

}  // namespace verbsim::sim
