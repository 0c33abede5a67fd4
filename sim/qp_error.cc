// The error state of a QP (IBA 10.7.3.1, ibv_poll_cq(3)): an error completes
// even an unsignaled WR, and once in ERR every outstanding and later WR
// completes with WR_FLUSH_ERR, in post order per queue. RESET discards them
// without completions.
#include <utility>

#include "sim/fabric.h"
#include "sim/ring.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

WorkCompletion FlushedRecv(const QpCore& qp, const RecvWqe& r) {
  WorkCompletion wc;
  wc.wr_id = r.wr_id;
  wc.status = WcStatus::kWrFlushErr;
  wc.opcode = WcOpcode::kRecv;
  wc.qp_num = qp.qpn;
  return wc;
}

}  // namespace

// iWARP: an error at the requester ends the connection too; the TERMINATE
// (siw_qp_tx.c siw_qp_sq_process's error path, siw_qp_cm_drop) moves the
// peer to ERR. A NAK stands for it on the sim's wire (completer.cc OnNak).
void TerminateConnection(QpCore& qp) {
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

void EnterError(QpCore& qp) {
  // Data already received is placed; ACKs held back are not sent.
  FlushPlacements(qp);
  DropPlacements(qp);
  DropPendingAck(qp);
  qp.state = verbsim::QpState::kErr;
  qp.req_halted = true;
  qp.rnr_waiting = false;
  qp.timer_armed = false;
  qp.timer_event_pending = false;
  ++qp.timer_generation;
  // Send queue, in post order: a WQE that failed keeps its status, unless
  // the profile says a flush overrides it.
  Ring<SendWqe> sq = std::move(qp.sq);
  qp.sq.clear();
  qp.req_next = 0;
  qp.rd_atomic_in_flight = 0;
  const bool keep_failures =
      !qp.node->fabric->profile().flush_overrides_failures;
  for (const SendWqe& w : sq) {
    WcStatus status = (keep_failures && w.phase == SendWqe::Phase::kDone &&
                       w.status != WcStatus::kSuccess)
                          ? w.status
                          : WcStatus::kWrFlushErr;
    PushSendCompletion(qp, w, status);
    // siw flushes a READ in its send slot twice (IwarpRules).
    if (w.in_send_slot && w.opcode == WrOpcode::kRdmaRead) {
      PushSendCompletion(qp, w, status);
    }
  }
  qp.tx_suspended = false;
  qp.sq_outside_ring = 0;
  qp.send_engine_idle = false;
  // Receive queue: a receive being filled first, then the posted ones.
  Ring<RecvWqe> rq = std::move(qp.rq);
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

bool RefusedWrAtHead(const QpCore& qp) {
  if (!qp.node->fabric->profile().iwarp.drops_connection_at_refused_head ||
      qp.tx_suspended || qp.req_next >= qp.sq.size()) {
    return false;
  }
  const SendWqe& w = qp.sq[qp.req_next];
  return w.phase == SendWqe::Phase::kPosted && w.refused_at_activation;
}

void DropConnectionAtRefusedHead(QpCore& qp) {
  TerminateConnection(qp);
  SuspendInRts(qp);
}

void SuspendInRts(QpCore& qp) {
  qp.tx_suspended = true;
  DropPendingAck(qp);
  qp.req_halted = true;
  qp.rnr_waiting = false;
  qp.timer_armed = false;
  qp.timer_event_pending = false;
  ++qp.timer_generation;
  qp.cm_connected = false;
}

void FlushReceivesPostedInError(QpCore& qp) {
  Ring<RecvWqe> rq = std::move(qp.rq);
  qp.rq.clear();
  for (const RecvWqe& r : rq) {
    PushCompletion(*qp.recv_cq, FlushedRecv(qp, r), false);
  }
}

void ResetQueues(QpCore& qp) {
  DropPlacements(qp);
  DropPendingAck(qp);
  qp.sq.clear();
  qp.rq.clear();
  qp.tx_suspended = false;
  qp.sq_outside_ring = 0;
  qp.send_engine_idle = false;
  // RESET empties the send queue: every slot is free again, held or not.
  qp.sq_freed_seq = qp.next_wqe_seq - 1;
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

}  // namespace verbsim::sim
