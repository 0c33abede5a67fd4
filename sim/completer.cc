// The completer: consumes ACKs, NAKs, read responses and atomic ACKs at the
// requester; retries on timeout, sequence NAK and RNR NAK; fails a WQE on a
// remote error NAK (IBA 9.7.5, 9.9; kernel rxe rxe_comp.c is the model), and
// completes finished WQEs in post order (CompleterRun).
#include <cstring>

#include "sim/fabric.h"
#include "sim/sg.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

// IBA table 45: the RNR NAK timer field (5 bits) in microseconds.
constexpr int64_t kRnrTimerUs[32] = {
    655360, 10,    20,    30,    40,     60,     80,     120,
    160,    240,   320,   480,   640,    960,    1280,   1920,
    2560,   3840,  5120,  7680,  10240,  15360,  20480,  30720,
    40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};

uint32_t LastPsn(const SendWqe& w) { return PsnAdd(w.first_psn, w.num_psn - 1); }

// The PSN from which `w` has to be sent again.
uint32_t RestartPsn(const SendWqe& w) {
  return w.opcode == WrOpcode::kRdmaRead ? PsnAdd(w.first_psn, w.responses_got)
                                         : w.first_psn;
}

// Completes in-flight sends and writes acknowledged by `psn` (inclusive or
// not); an ACK never completes a read or atomic, which need their responses.
bool AckSendsAndWrites(QpCore& qp, uint32_t psn, bool inclusive) {
  bool progress = false;
  for (SendWqe& w : qp.sq) {
    if (w.phase == SendWqe::Phase::kDone) continue;
    if (w.phase != SendWqe::Phase::kInFlight || IsRdAtomic(w.opcode)) break;
    const int32_t d = PsnDiff(LastPsn(w), psn);
    if (d > 0 || (d == 0 && !inclusive)) break;
    w.phase = SendWqe::Phase::kDone;
    progress = true;
  }
  return progress;
}

SendWqe* FirstInFlight(QpCore& qp) {
  for (SendWqe& w : qp.sq) {
    if (w.phase == SendWqe::Phase::kInFlight) return &w;
    if (w.phase == SendWqe::Phase::kPosted) return nullptr;
  }
  return nullptr;
}

SendWqe* InFlightHolding(QpCore& qp, uint32_t psn) {
  for (SendWqe& w : qp.sq) {
    if (w.phase != SendWqe::Phase::kInFlight) continue;
    const int32_t d = PsnDiff(psn, w.first_psn);
    if (d >= 0 && d < static_cast<int32_t>(w.num_psn)) return &w;
  }
  return nullptr;
}

void Fail(QpCore& qp, SendWqe& w, WcStatus status) {
  w.status = status;
  w.phase = SendWqe::Phase::kDone;
  qp.req_halted = true;
  qp.timer_armed = false;
}

void Progressed(QpCore& qp) {
  qp.implicit_nak_pending = false;
  ArmRetryTimer(qp, /*restart=*/true);
}

// A response for a PSN beyond what the oldest outstanding read or atomic
// still awaits means that response was lost (or overtaken): the requester
// retries from there, once per gap (IBA 9.7.5.1.3, "implied NAK"). The
// responder answers the repeated requests as duplicates: reads are executed
// again, atomics answered from the saved result.
// Whether the oldest outstanding read or atomic still awaits a response
// for a PSN before `psn`.
bool ResponseMissingBefore(QpCore& qp, uint32_t psn) {
  SendWqe* w = FirstInFlight(qp);
  return w != nullptr && IsRdAtomic(w->opcode) &&
         PsnDiff(psn, RestartPsn(*w)) > 0;
}

void CheckImpliedNak(QpCore& qp, uint32_t beyond_psn) {
  SendWqe* w = FirstInFlight(qp);
  if (w == nullptr || !IsRdAtomic(w->opcode)) return;
  const uint32_t expected = RestartPsn(*w);
  if (PsnDiff(beyond_psn, expected) <= 0) return;
  if (qp.implicit_nak_pending && qp.implicit_nak_psn == expected) return;
  qp.implicit_nak_pending = true;
  qp.implicit_nak_psn = expected;
  RequesterRewind(qp, expected);
}

void TraceQpEvent(QpCore& qp, TraceKind kind, uint32_t psn) {
  TraceFields r;
  r.time_ns = qp.node->fabric->now_ns();
  r.kind = kind;
  r.node = qp.node->index;
  r.qpn = qp.qpn;
  r.psn = psn;
  qp.node->fabric->trace().Record(r);
}

void OnRetryTimeout(QpCore& qp) {
  qp.timer_armed = false;
  SendWqe* w = FirstInFlight(qp);
  if (w == nullptr) return;
  ++qp.timeouts;
  TraceQpEvent(qp, TraceKind::kTimeout, RestartPsn(*w));
  if (qp.retry_left <= 0) {
    Fail(qp, *w, WcStatus::kRetryExcErr);
    CompleterRun(qp);
    return;
  }
  --qp.retry_left;
  RequesterRewind(qp, RestartPsn(*w));
}

void OnRnrNak(QpCore& qp, uint32_t psn, uint8_t timer) {
  SendWqe* w = InFlightHolding(qp, psn);
  if (w == nullptr) return;
  // rnr_retry 7 means retry forever (IBA 9.7.5.2.8).
  if (qp.attr.rnr_retry != 7) {
    if (qp.rnr_left <= 0) {
      Fail(qp, *w, WcStatus::kRnrRetryExcErr);
      CompleterRun(qp);
      return;
    }
    --qp.rnr_left;
  }
  qp.rnr_waiting = true;
  TraceQpEvent(qp, TraceKind::kRnrWait, psn);
  qp.timer_armed = false;  // the RNR timer runs instead
  Fabric* fabric = qp.node->fabric;
  Node* node = qp.node;
  const uint32_t qpn = qp.qpn;
  fabric->Schedule(
      fabric->now_ns() + kRnrTimerUs[timer & 31] * 1000, [node, qpn, psn]() {
        QpCore* q = node->FindQp(qpn);
        if (q == nullptr || !q->rnr_waiting) return;
        q->rnr_waiting = false;
        RequesterRewind(*q, psn);
      });
}

void OnNak(QpCore& qp, uint32_t psn, NakCode code) {
  if (code != NakCode::kPsnSequenceError &&
      qp.node->fabric->profile().iwarp.remote_errors_terminate) {
    // This QP dropped the connection itself (SuspendInRts): the peer's
    // TERMINATE finds no socket (IwarpRules::drops_connection_at_refused_head).
    if (qp.tx_suspended && !qp.cm_connected &&
        qp.node->fabric->profile().iwarp.drops_connection_at_refused_head) {
      return;
    }
    // The NAK stands for the responder's TERMINATE: the connection ends and
    // everything outstanding is flushed (siw_qp_rx.c, siw_qp_cm_drop). The
    // SENDs and WRITEs sent by then had completed SUCCESS (IwarpRules::
    // completes_on_transmit), the one that failed included.
    if (qp.node->fabric->profile().iwarp.completes_on_transmit) {
      for (SendWqe& w : qp.sq) {
        if (w.phase != SendWqe::Phase::kInFlight || IsRdAtomic(w.opcode)) {
          break;
        }
        w.phase = SendWqe::Phase::kDone;
      }
      CompleterRun(qp);
    }
    EnterError(qp);
    return;
  }
  SendWqe* w = InFlightHolding(qp, psn);
  if (w == nullptr) return;
  switch (code) {
    case NakCode::kPsnSequenceError:
      if (qp.retry_left <= 0) {
        Fail(qp, *w, WcStatus::kRetryExcErr);
        CompleterRun(qp);
        return;
      }
      --qp.retry_left;
      RequesterRewind(qp, psn);
      return;
    case NakCode::kInvalidRequest:
      Fail(qp, *w, WcStatus::kRemInvReqErr);
      break;
    case NakCode::kRemoteAccessError:
      Fail(qp, *w, WcStatus::kRemAccessErr);
      break;
    case NakCode::kRemoteOperationalError:
      Fail(qp, *w, WcStatus::kRemOpErr);
      break;
    case NakCode::kInvalidRdRequest:
      Fail(qp, *w, WcStatus::kRemInvRdReqErr);
      break;
  }
  CompleterRun(qp);
}

// Profiles that check a READ's or an atomic's local SGEs when the response
// arrives (rxe_comp.c: copy_data into the WQE's SGE list): false, with the
// WQE failed, when they do not take it. An inline READ has no SGE list,
// which matters only when there are bytes to place: a zero-length READ
// copies nothing (rxe_comp.c copy_data returns at once for length 0).
// `offset` and `length` name the bytes of the response at hand; profiles
// that copy per packet (gathers_per_packet: rxe copies each READ response
// packet as it comes) check just those, so the packets before a failing
// one are placed; the others check the whole sink at the first response.
// `data` is the response's payload (its first `length` bytes), of which a
// profile that scatters up to a failing SGE places what lands before it.
bool ResponseSgesOk(QpCore& qp, SendWqe& w, uint64_t offset, uint64_t length,
                    const uint8_t* data) {
  const SimProfile& profile = qp.node->fabric->profile();
  if (!profile.checks_response_sges_on_arrival) return true;
  if (IsAtomicWr(w.opcode)) {
    offset = 0;
    length = 8;
  } else if (!profile.gathers_per_packet) {
    if (offset > 0) return true;  // checked whole at the first response
    length = w.length;
  }
  if (length == 0) return true;
  uint64_t passed = 0;
  if (!w.is_inline &&
      CheckSgeRange(qp.node->keys, qp.pd.get(), w.sges, offset, length,
                    kAccessLocalWrite, &passed) == AccessResult::kOk) {
    return true;
  }
  // Only where the check covers the payload at hand (per packet, or an
  // atomic's 8 bytes) does `passed` count bytes of `data`.
  if (profile.scatters_up_to_a_failing_sge && passed > 0 &&
      (profile.gathers_per_packet || IsAtomicWr(w.opcode))) {
    ScatterTo(w.sges, offset, data, passed);
  }
  Fail(qp, w, w.opcode == WrOpcode::kRdmaRead ? profile.read_sink_status
                                               : profile.bad_lkey_status);
  return false;
}

void OnReadResponse(QpCore& qp, const Packet& p) {
  // A response implicitly acknowledges every earlier request (IBA 9.7.5.1.3).
  if (AckSendsAndWrites(qp, p.psn, false)) Progressed(qp);
  SendWqe* w = FirstInFlight(qp);
  if (w == nullptr) return;
  if (w->opcode != WrOpcode::kRdmaRead) {
    CheckImpliedNak(qp, p.psn);
    return;
  }
  const uint32_t expected = PsnAdd(w->first_psn, w->responses_got);
  const int32_t d = PsnDiff(p.psn, expected);
  if (d < 0) return;  // a duplicate response
  if (d > 0) {
    // A response was lost: ask again from the first one missing.
    CheckImpliedNak(qp, p.psn);
    return;
  }
  const uint64_t offset =
      static_cast<uint64_t>(w->responses_got) *
      PacketPayloadBytes(qp, WrOpcode::kRdmaRead);
  if (!ResponseSgesOk(qp, *w, offset, p.payload.size(), p.payload.data())) {
    return;
  }
  ScatterTo(w->sges, offset, p.payload.data(), p.payload.size());
  ++w->responses_got;
  if (w->responses_got == w->num_psn) w->phase = SendWqe::Phase::kDone;
  Progressed(qp);
}

void OnAtomicAck(QpCore& qp, const Packet& p) {
  if (AckSendsAndWrites(qp, p.psn, false)) Progressed(qp);
  SendWqe* w = FirstInFlight(qp);
  if (w == nullptr || w->first_psn != p.psn ||
      (w->opcode != WrOpcode::kAtomicCmpAndSwp &&
       w->opcode != WrOpcode::kAtomicFetchAndAdd)) {
    CheckImpliedNak(qp, p.psn);
    return;
  }
  uint8_t bytes[8];
  std::memcpy(bytes, &p.atomic_orig, 8);
  if (!ResponseSgesOk(qp, *w, 0, 8, bytes)) return;
  ScatterTo(w->sges, 0, bytes, 8);
  w->phase = SendWqe::Phase::kDone;
  Progressed(qp);
}

}  // namespace

namespace {

// How soon an expired ACK timer looks again when its process has not yet
// drained its sockets since the deadline (the progress thread is woken to).
constexpr int64_t kDrainFirstNs = 50'000;

// The one timer event of a QP: it fires at the deadline it was scheduled for
// and, if the deadline moved later meanwhile, schedules itself again, so
// restarting the timer on every ACK costs no event.
void ScheduleTimerEvent(QpCore& qp, int64_t at_ns) {
  Fabric* fabric = qp.node->fabric;
  Node* node = qp.node;
  // The capture fits std::function's inline storage (16 bytes), so the
  // event allocates nothing: the QP number and the low half of the
  // generation. The generation moves on a reset or an error of the QP, a
  // verb call or a fault each; 2^32 of them while one timer event waits
  // would be needed to mistake an old event for a current one.
  const uint64_t qpn_generation =
      uint64_t{qp.qpn} << 32 | static_cast<uint32_t>(qp.timer_generation);
  qp.timer_event_pending = true;
  fabric->Schedule(at_ns, [node, qpn_generation]() {
    QpCore* found = node->FindQp(static_cast<uint32_t>(qpn_generation >> 32));
    if (found == nullptr) return;
    QpCore& q = *found;
    if (static_cast<uint32_t>(q.timer_generation) !=
        static_cast<uint32_t>(qpn_generation)) {
      return;  // reset or error since
    }
    q.timer_event_pending = false;
    if (!q.timer_armed) return;
    const int64_t now = node->fabric->now_ns();
    if (now < q.timer_deadline_ns) {
      ScheduleTimerEvent(q, q.timer_deadline_ns);
      return;
    }
    if (q.state != verbsim::QpState::kRts && q.state != verbsim::QpState::kSqd) {
      q.timer_armed = false;
      return;
    }
    // Across processes the timer runs on the wall clock: an expiry counts
    // only when the silence is the peer's (Fabric::JudgeAckTimeout).
    switch (node->fabric->JudgeAckTimeout(q)) {
      case Fabric::AckTimerVerdict::kCount:
        break;
      case Fabric::AckTimerVerdict::kDrainFirst:
        // The deadline stays; look again once this process has drained.
        ScheduleTimerEvent(q, now + kDrainFirstNs);
        return;
      case Fabric::AckTimerVerdict::kPeerNotRun:
        ++q.timeouts_held;
        ArmRetryTimer(q, /*restart=*/true);
        return;
    }
    OnRetryTimeout(q);
  });
}

}  // namespace

void ArmRetryTimer(QpCore& qp, bool restart) {
  // timeout 0 means an infinite local ACK timeout (ibv_modify_qp(3)).
  if (qp.attr.timeout == 0) return;
  if (FirstInFlight(qp) == nullptr) {
    qp.timer_armed = false;
    return;
  }
  if (qp.timer_armed && !restart) return;
  // Local ACK timeout: 4.096 us * 2^timeout (IBA 9.7.6.1.3).
  const int64_t delay_ns = int64_t{4096} << qp.attr.timeout;
  qp.timer_armed = true;
  qp.timer_deadline_ns = qp.node->fabric->now_ns() + delay_ns;
  if (!qp.timer_event_pending) ScheduleTimerEvent(qp, qp.timer_deadline_ns);
}

void CompleterReceive(QpCore& qp, Packet& p) {
  Fabric* fabric = qp.node->fabric;
  if (qp.state != verbsim::QpState::kRts && qp.state != verbsim::QpState::kSqd) {
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "QP cannot complete");
    return;
  }
  if (p.src_node != qp.dest_node || p.src_qpn != qp.attr.dest_qp_num) {
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "not from the connected QP");
    return;
  }
  // A response acknowledging PSNs not acknowledged before is forward
  // progress: the retry counters start again (IBA 9.7.6.1.4).
  const bool is_nak = p.opcode == RcOp::kAcknowledge && !IsAck(p.syndrome);
  const uint32_t acked = is_nak ? PsnAdd(p.psn, kPsnMask) : p.psn;
  if (PsnDiff(acked, qp.max_acked_psn) > 0) {
    qp.max_acked_psn = acked;
    qp.retry_left = qp.attr.retry_cnt;
    qp.rnr_left = qp.attr.rnr_retry;
  }
  switch (p.opcode) {
    case RcOp::kAcknowledge:
      if (IsAck(p.syndrome)) {
        if (AckSendsAndWrites(qp, p.psn, true)) Progressed(qp);
        CheckImpliedNak(qp, PsnAdd(p.psn, 1));
      } else if (IsRnrNak(p.syndrome)) {
        ++qp.rnr_naks;
        if (AckSendsAndWrites(qp, p.psn, false)) Progressed(qp);
        OnRnrNak(qp, p.psn, p.syndrome & 0x1f);
      } else if (IsNak(p.syndrome)) {
        ++qp.naks_received;
        if (AckSendsAndWrites(qp, p.psn, false)) Progressed(qp);
        // A NAK past a read or atomic whose response has not come: that
        // response was lost, and the requester retries from it before it
        // acts on the NAK, which the retried requests will meet again
        // (implied NAK, IBA 9.7.5.1.3; rxe_comp.c check_psn retries a
        // READ or atomic ahead of any later packet's answer). A TERMINATE
        // on iWARP ends everything instead (OnNak).
        if (!fabric->profile().iwarp.remote_errors_terminate &&
            ResponseMissingBefore(qp, p.psn)) {
          CheckImpliedNak(qp, p.psn);
        } else {
          OnNak(qp, p.psn, static_cast<NakCode>(p.syndrome & 0x1f));
        }
      }
      break;
    case RcOp::kAtomicAcknowledge:
      OnAtomicAck(qp, p);
      break;
    default:
      if (IsReadResponse(p.opcode)) OnReadResponse(qp, p);
      break;
  }
  CompleterRun(qp);
}


void CompleterRun(QpCore& qp) {
  bool completed = false;
  while (!qp.sq.empty() && qp.sq.front().phase == SendWqe::Phase::kDone) {
    const SendWqe& done = qp.sq.front();
    if (qp.req_next > 0) --qp.req_next;
    if (done.holds_rd_atomic) --qp.rd_atomic_in_flight;
    if (done.status == WcStatus::kSuccess) {
      // The common case takes what the completion needs, if it has one,
      // and frees the slot without moving the whole WQE out first. The WQE
      // leaves the ring before its completion is pushed, as a failed one
      // does below: an overrun of the CQ puts this QP in error, which must
      // not flush it again.
      if (!done.signaled) {
        qp.sq.pop_front();
        completed = true;
        continue;
      }
      const WorkCompletion wc = SendCompletion(qp, done, WcStatus::kSuccess);
      const SqRelease release{qp.qpn, done.seq};
      qp.sq.pop_front();
      PushCompletion(*qp.send_cq, wc, false, release);
      completed = true;
      continue;
    }
    SendWqe w = std::move(qp.sq.front());
    qp.sq.pop_front();
    PushSendCompletion(qp, w, w.status);
    TerminateConnection(qp);
    if (w.failed_at_transmit &&
        qp.node->fabric->profile().iwarp.transmit_errors_keep_rts) {
      SuspendInRts(qp);
    } else {
      EnterError(qp);
    }
    return;
  }
  if (completed) RequesterRun(qp);
}

}  // namespace verbsim::sim
