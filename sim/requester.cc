// The requester: turns send WQEs into request packets with PSNs, in post
// order, honouring the initiator depth (max_rd_atomic), IBV_SEND_FENCE and
// the fence of local invalidate (docs/semantics.md section 4, IBA 10.8.3).
#include <algorithm>

#include "sim/fabric.h"
#include "sim/sg.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

// PSNs a WQE consumes: one per packet, for a read one per response packet
// (IBA 9.7.1.1).
uint32_t NumPsn(const QpCore& qp, const SendWqe& w) {
  if (w.opcode == WrOpcode::kAtomicCmpAndSwp ||
      w.opcode == WrOpcode::kAtomicFetchAndAdd) {
    return 1;
  }
  const uint64_t mtu = PacketPayloadBytes(qp, w.opcode);
  return static_cast<uint32_t>(std::max<uint64_t>(1, (w.length + mtu - 1) / mtu));
}

// Checks the local SGEs and gathers the payload; false (with w.status set)
// when a local protection check fails (ibv_post_send(3): the lkey is checked
// when the WR is processed, not when it is posted).
bool PrepareWqe(QpCore& qp, SendWqe& w) {
  const KeyTable& keys = qp.node->keys;
  switch (w.opcode) {
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
    case WrOpcode::kSendWithInv:
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
      if (w.is_inline) return true;  // copied at post; lkey not checked
      if (const AccessResult r =
              CheckSgeRange(keys, qp.pd.get(), w.sges, 0, w.length, 0);
          r != AccessResult::kOk) {
        const SimProfile& profile = qp.node->fabric->profile();
        w.status = r == AccessResult::kBadKey || r == AccessResult::kPdMismatch
                       ? profile.gather_key_lookup_status
                       : profile.bad_lkey_status;
        if (profile.gathers_per_packet && qp.type == QpType::kRc) {
          // The whole packets before the first that fails are sent.
          const uint64_t mtu = PacketPayloadBytes(qp, w.opcode);
          uint32_t good = 0;
          while ((good + 1) * mtu <= w.length &&
                 CheckSgeRange(keys, qp.pd.get(), w.sges, good * mtu, mtu,
                               0) == AccessResult::kOk) {
            ++good;
          }
          w.good_packets = good;
          w.data = GatherPrefix(w.sges, good * mtu);
        }
        return false;
      }
      // Copied now where the device copies during the post; otherwise each
      // packet reads its bytes as it leaves (SendPackets). UC and UD WRs
      // complete once sent, so their bytes are taken now.
      if (qp.node->fabric->profile().memory.gathers_at_post ||
          qp.type != QpType::kRc) {
        w.data = GatherFrom(w.sges);
      }
      w.checked_at_changes = keys.changes();
      return true;
    case WrOpcode::kRdmaRead:
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd:
      // Checked when the response arrives instead (completer.cc).
      if (qp.node->fabric->profile().checks_response_sges_on_arrival) {
        return true;
      }
      // The response is written into local memory: LOCAL_WRITE needed.
      if (CheckSgeRange(keys, qp.pd.get(), w.sges, 0, w.length,
                        kAccessLocalWrite) != AccessResult::kOk) {
        const SimProfile& profile = qp.node->fabric->profile();
        w.status = w.opcode == WrOpcode::kRdmaRead ? profile.read_sink_status
                                                   : profile.bad_lkey_status;
        return false;
      }
      return true;
    case WrOpcode::kLocalInv:
    case WrOpcode::kBindMw:
      return true;
  }
  return true;
}

// Fails `w`, the WR at qp.req_next, by the requester's own check as it was
// to be sent (w.status says how): it is done, nothing after it is sent,
// and the completer reports it in order. `w` may be gone on return.
void FailAtTransmit(QpCore& qp, SendWqe& w) {
  w.failed_at_transmit = true;
  w.phase = SendWqe::Phase::kDone;
  qp.req_halted = true;
  ++qp.req_next;
  CompleterRun(qp);
}

// `w` sent its packets before the one that failed its local check, and the
// responder's answer to them comes first (SimProfile::
// answers_arrive_between_packets): `w` stays in flight, nothing after it is
// sent, and its own failure is applied once that answer is due, unless a
// NAK has failed it by then. `w` stays valid on return.
void DeferTransmitFailure(QpCore& qp, SendWqe& w) {
  w.local_failure_pending = true;
  w.pending_status = w.status;
  w.status = WcStatus::kSuccess;
  w.phase = SendWqe::Phase::kInFlight;
  qp.req_halted = true;
  ++qp.req_next;
  Fabric* fabric = qp.node->fabric;
  Node* node = qp.node;
  const uint32_t qpn = qp.qpn;
  const uint64_t seq = w.seq;
  fabric->Schedule(
      fabric->AnswerDueNs(node->index, qp.dest_node), [node, qpn, seq]() {
        QpCore* q = node->FindQp(qpn);
        if (q == nullptr || q->sq.empty() || seq < q->sq.front().seq ||
            seq - q->sq.front().seq >= q->sq.size()) {
          return;  // completed or flushed meanwhile
        }
        SendWqe& pending = q->sq[seq - q->sq.front().seq];
        if (pending.seq != seq || !pending.local_failure_pending ||
            pending.phase != SendWqe::Phase::kInFlight) {
          return;
        }
        pending.local_failure_pending = false;
        pending.status = pending.pending_status;
        pending.failed_at_transmit = true;
        pending.phase = SendWqe::Phase::kDone;
        CompleterRun(*q);
      });
}

// A retransmitted send or write whose buffers are read again
// (SimProfile::regathers_on_retransmit): false, with w.status set, when a key
// it names changed and no longer covers them.
bool RegatherOk(QpCore& qp, SendWqe& w) {
  const SimProfile& profile = qp.node->fabric->profile();
  const bool sends_data = w.opcode == WrOpcode::kSend ||
                          w.opcode == WrOpcode::kSendWithImm ||
                          w.opcode == WrOpcode::kSendWithInv ||
                          w.opcode == WrOpcode::kRdmaWrite ||
                          w.opcode == WrOpcode::kRdmaWriteWithImm;
  const KeyTable& keys = qp.node->keys;
  if (!profile.regathers_on_retransmit || !sends_data || w.is_inline ||
      w.checked_at_changes == keys.changes()) {
    return true;
  }
  const AccessResult r =
      CheckSgeRange(keys, qp.pd.get(), w.sges, 0, w.length, 0);
  if (r == AccessResult::kOk) {
    w.checked_at_changes = keys.changes();
    return true;
  }
  w.status = r == AccessResult::kBadKey || r == AccessResult::kPdMismatch
                 ? profile.gather_key_lookup_status
                 : profile.bad_lkey_status;
  return false;
}

RcOp SendOpcode(const SendWqe& w, uint32_t index, uint32_t count) {
  const bool imm = w.opcode == WrOpcode::kSendWithImm;
  const bool inv = w.opcode == WrOpcode::kSendWithInv;
  if (count == 1) {
    return imm ? RcOp::kSendOnlyImm : inv ? RcOp::kSendOnlyInv : RcOp::kSendOnly;
  }
  if (index == 0) return RcOp::kSendFirst;
  if (index + 1 < count) return RcOp::kSendMiddle;
  return imm ? RcOp::kSendLastImm : inv ? RcOp::kSendLastInv : RcOp::kSendLast;
}

RcOp WriteOpcode(const SendWqe& w, uint32_t index, uint32_t count) {
  const bool imm = w.opcode == WrOpcode::kRdmaWriteWithImm;
  if (count == 1) return imm ? RcOp::kWriteOnlyImm : RcOp::kWriteOnly;
  if (index == 0) return RcOp::kWriteFirst;
  if (index + 1 < count) return RcOp::kWriteMiddle;
  return imm ? RcOp::kWriteLastImm : RcOp::kWriteLast;
}

// Sends the packets of `w` from PSN `from` on (those before `limit`).
void SendPackets(QpCore& qp, const SendWqe& w, uint32_t from,
                 uint32_t limit = UINT32_MAX) {
  const uint32_t mtu = PacketPayloadBytes(qp, w.opcode);
  const uint32_t skip = static_cast<uint32_t>(PsnDiff(from, w.first_psn));
  switch (w.opcode) {
    case WrOpcode::kRdmaRead: {
      // A retried read asks only for what has not arrived (IBA 9.7.5.1.2).
      const uint64_t offset = static_cast<uint64_t>(skip) * mtu;
      Packet p;
      p.opcode = RcOp::kReadRequest;
      p.psn = from;
      p.ack_req = true;
      p.va = w.remote_addr + offset;
      p.rkey = w.rkey;
      p.dma_len = static_cast<uint32_t>(w.length - std::min(offset, w.length));
      TransmitFrom(qp, std::move(p));
      return;
    }
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd: {
      Packet p;
      p.opcode = w.opcode == WrOpcode::kAtomicCmpAndSwp ? RcOp::kCompareSwap
                                                        : RcOp::kFetchAdd;
      p.psn = from;
      p.ack_req = true;
      p.va = w.remote_addr;
      p.rkey = w.rkey;
      p.dma_len = 8;
      p.compare = w.compare_add;
      p.swap_add = w.opcode == WrOpcode::kAtomicCmpAndSwp ? w.swap
                                                          : w.compare_add;
      TransmitFrom(qp, std::move(p));
      return;
    }
    default:
      break;
  }
  const bool is_write = w.opcode == WrOpcode::kRdmaWrite ||
                        w.opcode == WrOpcode::kRdmaWriteWithImm;
  // Bytes not gathered at post are read per packet: some packets now, the
  // rest (from the first deferred one on) as they leave the link, after
  // the post returned (MemoryModel::gathers_at_post, docs/ordering.md
  // rule B1). A kept packet capture reads every payload now.
  Fabric* fabric = qp.node->fabric;
  Fabric::UdpBatch batch(*fabric);
  bool defer = false;
  for (uint32_t i = skip; i < std::min(w.num_psn, limit); ++i) {
    Packet p;
    p.opcode = is_write ? WriteOpcode(w, i, w.num_psn)
                        : SendOpcode(w, i, w.num_psn);
    p.psn = PsnAdd(w.first_psn, i);
    p.transport = qp.type;
    const bool last = i + 1 == w.num_psn;
    p.ack_req = last && qp.type == QpType::kRc;
    p.solicited = last && (w.flags & kSendSolicited) != 0;
    if (is_write && i == 0) {
      p.va = w.remote_addr;
      p.rkey = w.rkey;
      p.dma_len = static_cast<uint32_t>(w.length);
    }
    if (last) p.imm = w.opcode == WrOpcode::kSendWithInv ? w.invalidate_rkey
                                                         : w.imm;
    const uint64_t begin = static_cast<uint64_t>(i) * mtu;
    const uint64_t end = std::min<uint64_t>(w.length, begin + mtu);
    if (end > begin && end <= w.data.size()) {
      p.payload.Set(w.data.data() + begin, end - begin);
    } else if (end > begin) {
      defer = defer || (fabric->memory_rng()() & 1);
      if (defer && !fabric->keeping_packets()) {
        p.deferred_wqe = w.seq;
        p.deferred_offset = begin;
        p.deferred_len = static_cast<uint32_t>(end - begin);
      } else {
        p.payload.ResizeForOverwrite(end - begin);
        GatherRange(w.sges, begin, end - begin, p.payload.data());
      }
    }
    TransmitFrom(qp, std::move(p));
  }
}

// BIND_MW and LOCAL_INV run here, at their turn in the send queue
// (mw.cc).
WcStatus ExecuteLocalOp(QpCore& qp, SendWqe& w) {
  return w.opcode == WrOpcode::kBindMw
             ? ExecuteBind(qp, w)
             : ExecuteLocalInvalidate(qp, w.invalidate_rkey);
}

}  // namespace

void RequesterRun(QpCore& qp) {
  if (qp.state != verbsim::QpState::kRts || qp.req_halted ||
      qp.send_engine_idle) {
    return;
  }
  // In an RNR wait only WRs not sent yet may go, and only where the profile
  // says so: req_next is past every WR in flight until the RNR timer
  // rewinds it (RequesterRewind).
  if (qp.rnr_waiting &&
      !qp.node->fabric->profile().sends_new_wrs_during_rnr_wait) {
    return;
  }
  const int depth = std::max<int>(1, qp.attr.max_rd_atomic);
  bool sent = false;
  while (qp.req_next < qp.sq.size()) {
    SendWqe& w = qp.sq[qp.req_next];
    if (w.phase == SendWqe::Phase::kDone) {
      ++qp.req_next;
      continue;
    }
    if (w.phase == SendWqe::Phase::kPosted) {
      if (w.refused_at_activation) {
        // Stays at the ring's head; reached right after a transmission, it
        // ends the connection (IwarpRules::drops_connection_at_refused_head).
        if (sent && RefusedWrAtHead(qp)) {
          DropConnectionAtRefusedHead(qp);
          return;
        }
        break;
      }
      if (IsRdAtomic(w.opcode) && qp.rd_atomic_in_flight >= depth) break;
      if ((w.flags & kSendFence) && qp.rd_atomic_in_flight > 0) break;
      if (w.opcode == WrOpcode::kLocalInv && qp.req_next != 0) break;
      if (!OpcodeValidOn(qp.type, w.opcode)) {
        w.status = WcStatus::kLocQpOpErr;
        FailAtTransmit(qp, w);
        return;
      }
      if (!PrepareWqe(qp, w)) {
        if (w.good_packets > 0) {
          // Gathered per packet: what passed goes out before the WR fails.
          w.first_psn = qp.req_psn;
          w.num_psn = NumPsn(qp, w);
          SendPackets(qp, w, w.first_psn, w.good_packets);
          qp.req_psn = PsnAdd(w.first_psn, w.good_packets);
          if (qp.node->fabric->profile().answers_arrive_between_packets &&
              (w.opcode == WrOpcode::kRdmaWrite ||
               w.opcode == WrOpcode::kRdmaWriteWithImm)) {
            DeferTransmitFailure(qp, w);
            return;
          }
        }
        FailAtTransmit(qp, w);
        return;
      }
      if (w.opcode == WrOpcode::kLocalInv || w.opcode == WrOpcode::kBindMw) {
        w.status = ExecuteLocalOp(qp, w);
        w.num_psn = 0;
        w.phase = SendWqe::Phase::kDone;
        if (w.status != WcStatus::kSuccess) qp.req_halted = true;
        ++qp.req_next;
        CompleterRun(qp);
        return;
      }
      if (qp.type != QpType::kRc) {
        // UC and UD: nothing is acknowledged; the WR is complete once its
        // packets are on the wire (IBA 9.8.3, 9.8.4).
        if (qp.type == QpType::kUd) {
          w.status = UdSend(qp, w);
        } else {
          w.first_psn = qp.req_psn;
          w.num_psn = NumPsn(qp, w);
          SendPackets(qp, w, w.first_psn);
          qp.req_psn = PsnAdd(w.first_psn, w.num_psn);
        }
        w.phase = SendWqe::Phase::kDone;
        ++qp.req_next;
        if (w.status != WcStatus::kSuccess) {
          qp.req_halted = true;
          CompleterRun(qp);
          return;
        }
        continue;
      }
      w.first_psn = qp.req_psn;
      w.num_psn = NumPsn(qp, w);
      w.phase = SendWqe::Phase::kInFlight;
      if (IsRdAtomic(w.opcode)) {
        ++qp.rd_atomic_in_flight;
        w.holds_rd_atomic = true;
      }
      SendPackets(qp, w, w.first_psn);
    } else {
      // In flight already: a retransmission after RequesterRewind.
      if ((w.flags & kSendFence) && qp.rd_atomic_in_flight > 0 &&
          qp.node->fabric->profile().fence_waits_for_later_reads_on_retry) {
        // Stalled behind READs that wait for it (see the profile field): no
        // packet, so no retry timer either, unless earlier WRs went again.
        if (!sent) return;
        break;
      }
      if (!RegatherOk(qp, w)) {
        FailAtTransmit(qp, w);
        return;
      }
      ++qp.retransmissions;
      SendPackets(qp, w, qp.req_psn);
    }
    sent = true;
    qp.req_psn = PsnAdd(w.first_psn, w.num_psn);
    ++qp.req_next;
  }
  if (qp.type != QpType::kRc) {
    CompleterRun(qp);
    return;
  }
  ArmRetryTimer(qp, /*restart=*/false);
}

bool GatherDeferred(QpCore& qp, Packet& p) {
  if (qp.sq.empty() || p.deferred_wqe < qp.sq.front().seq ||
      p.deferred_wqe - qp.sq.front().seq >= qp.sq.size()) {
    return false;  // its WR completed or was flushed: nothing to read
  }
  SendWqe& w = qp.sq[p.deferred_wqe - qp.sq.front().seq];
  if (w.seq != p.deferred_wqe || w.phase != SendWqe::Phase::kInFlight) {
    return false;
  }
  if (qp.node->keys.changes() != w.checked_at_changes &&
      CheckSgeRange(qp.node->keys, qp.pd.get(), w.sges, p.deferred_offset,
                    p.deferred_len, 0) != AccessResult::kOk) {
    // The region was deregistered before the device read it: the WR fails
    // its local protection check now (ibv_post_send(3): buffers belong to
    // the device until the completion).
    w.status = qp.node->fabric->profile().bad_lkey_status;
    w.phase = SendWqe::Phase::kDone;
    qp.req_halted = true;
    CompleterRun(qp);
    return false;
  }
  p.payload.ResizeForOverwrite(p.deferred_len);
  GatherRange(w.sges, p.deferred_offset, p.deferred_len, p.payload.data());
  p.deferred_wqe = 0;
  p.deferred_offset = 0;
  p.deferred_len = 0;
  return true;
}

void RequesterRewind(QpCore& qp, uint32_t psn) {
  // In an RNR wait the RNR timer rewinds (completer.cc OnRnrNak): a timeout
  // or a sequence NAK meanwhile has only spent its retry.
  if (qp.rnr_waiting) return;
  for (size_t i = 0; i < qp.sq.size(); ++i) {
    const SendWqe& w = qp.sq[i];
    if (w.phase != SendWqe::Phase::kInFlight) continue;
    const int32_t d = PsnDiff(psn, w.first_psn);
    if (d < static_cast<int32_t>(w.num_psn)) {
      qp.req_next = i;
      qp.req_psn = d >= 0 ? psn : w.first_psn;
      break;
    }
  }
  // Nothing in flight from `psn` on (it was acknowledged meanwhile): WQEs
  // posted while the requester waited still have to go.
  RequesterRun(qp);
}

}  // namespace verbsim::sim
