// Completions, flushing and the error state (ibv_poll_cq(3); IBA 10.7.3.1:
// an error completes even an unsignaled WR, and once in ERR every outstanding
// and later WR completes with WR_FLUSH_ERR, in post order per queue).
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

void PushCompletion(CqState& cq, const WorkCompletion& wc, bool solicited) {
  Fabric* fabric = cq.context->node->fabric;
  if (cq.overflowed || cq.dead) return;
  if (static_cast<int>(cq.entries.size()) >= cq.cqe) {
    OverflowCq(cq);
    return;
  }
  TraceRecord r;
  r.time_ns = fabric->now_ns();
  r.kind = TraceKind::kComplete;
  r.node = cq.context->node->index;
  r.qpn = wc.qp_num;
  r.opcode = static_cast<uint8_t>(wc.status);
  r.length = wc.byte_len;
  r.wr_id = wc.wr_id;
  fabric->trace().Record(std::move(r));
  cq.entries.push_back(wc);
  if (cq.armed && (!cq.armed_solicited_only || solicited ||
                   wc.status != WcStatus::kSuccess)) {
    cq.armed = false;
    if (cq.channel != nullptr && !cq.channel->dead) {
      cq.channel->events.push_back(cq.shared_from_this());
    }
  }
  fabric->Wake();
}

namespace {

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

WorkCompletion FlushedRecv(const QpCore& qp, const RecvWqe& r) {
  WorkCompletion wc;
  wc.wr_id = r.wr_id;
  wc.status = WcStatus::kWrFlushErr;
  wc.opcode = WcOpcode::kRecv;
  wc.qp_num = qp.qpn;
  return wc;
}

// iWARP: an error at the requester ends the connection too; the TERMINATE
// (siw_qp_tx.c siw_qp_sq_process's error path, siw_qp_cm_drop) moves the
// peer to ERR. A NAK stands for it on the sim's wire (completer.cc OnNak).
void TerminatePeer(QpCore& qp) {
  if (qp.type != QpType::kRc || qp.dest_node < 0 ||
      !qp.node->fabric->profile().iwarp.remote_errors_terminate) {
    return;
  }
  Packet p;
  p.opcode = RcOp::kAcknowledge;
  p.psn = qp.req_psn;
  p.syndrome = NakSyndrome(NakCode::kRemoteOperationalError);
  TransmitFrom(qp, std::move(p));
}

}  // namespace

void CompleterRun(QpCore& qp) {
  bool completed = false;
  while (!qp.sq.empty() && qp.sq.front().phase == SendWqe::Phase::kDone) {
    SendWqe w = std::move(qp.sq.front());
    qp.sq.pop_front();
    if (qp.req_next > 0) --qp.req_next;
    if (w.holds_rd_atomic) --qp.rd_atomic_in_flight;
    if (w.status != WcStatus::kSuccess) {
      PushCompletion(*qp.send_cq, SendCompletion(qp, w, w.status), false);
      TerminatePeer(qp);
      EnterError(qp);
      return;
    }
    if (w.signaled) {
      PushCompletion(*qp.send_cq, SendCompletion(qp, w, WcStatus::kSuccess),
                     false);
    }
    completed = true;
  }
  if (completed) RequesterRun(qp);
}

void EnterError(QpCore& qp) {
  // Data already received is placed; ACKs held back are not sent.
  FlushPlacements(qp);
  DropPlacements(qp);
  qp.state = verbsim::QpState::kErr;
  qp.req_halted = true;
  qp.rnr_waiting = false;
  qp.timer_armed = false;
  qp.timer_event_pending = false;
  ++qp.timer_generation;
  // Send queue, in post order: a WQE that failed keeps its status.
  std::deque<SendWqe> sq = std::move(qp.sq);
  qp.sq.clear();
  qp.req_next = 0;
  qp.rd_atomic_in_flight = 0;
  for (const SendWqe& w : sq) {
    WcStatus status = (w.phase == SendWqe::Phase::kDone &&
                       w.status != WcStatus::kSuccess)
                          ? w.status
                          : WcStatus::kWrFlushErr;
    PushCompletion(*qp.send_cq, SendCompletion(qp, w, status), false);
  }
  // Receive queue: a receive being filled first, then the posted ones.
  std::deque<RecvWqe> rq = std::move(qp.rq);
  qp.rq.clear();
  if (qp.in_send) {
    qp.in_send = false;
    PushCompletion(*qp.recv_cq, FlushedRecv(qp, qp.cur_recv), false);
  }
  for (const RecvWqe& r : rq) {
    PushCompletion(*qp.recv_cq, FlushedRecv(qp, r), false);
  }
  qp.in_write = false;
  qp.drop_msg = false;
  if (qp.srq != nullptr &&
      qp.node->fabric->profile().raises_last_wqe_reached) {
    // IBA 11.6.3.2: a QP on an SRQ that enters ERR consumes no more WQEs of
    // it: "last WQE reached".
    AsyncEvent ev;
    ev.type = AsyncEventType::kQpLastWqeReached;
    ev.qp_num = qp.qpn;
    RaiseAsyncEvent(*qp.pd->context, ev);
  }
}

void ResetQueues(QpCore& qp) {
  DropPlacements(qp);
  qp.sq.clear();
  qp.rq.clear();
  qp.req_next = 0;
  qp.rd_atomic_in_flight = 0;
  qp.req_halted = false;
  qp.rnr_waiting = false;
  qp.timer_armed = false;
  qp.timer_event_pending = false;
  ++qp.timer_generation;
  qp.in_send = false;
  qp.in_write = false;
  qp.drop_msg = false;
  qp.nak_sent = false;
  qp.resources.clear();
  qp.msn = 0;
}

uint32_t PathMtuBytes(const QpCore& qp) {
  int bytes = MtuBytes(qp.attr.path_mtu);
  return bytes > 0 ? static_cast<uint32_t>(bytes) : 1024;
}

void TransmitFrom(QpCore& qp, Packet packet) {
  ++qp.packets_sent;
  packet.src_node = qp.node->index;
  packet.src_qpn = qp.qpn;
  packet.dst_node = qp.dest_node;
  packet.dst_qpn = qp.attr.dest_qp_num;
  qp.node->fabric->Transmit(std::move(packet));
}

}  // namespace verbsim::sim
