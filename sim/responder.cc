// The responder: executes request packets of an RC QP in PSN order against
// local memory and answers with ACK, NAK, read responses or atomic ACKs
// (IBA 9.7.4, 9.7.5; kernel rxe rxe_resp.c is the model). Every memory check
// goes through CheckAccess (sim/keys.h).
#include <algorithm>
#include <cstring>

#include "sim/fabric.h"
#include "sim/remote_access.h"
#include "sim/sg.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

void SendAck(QpCore& qp, uint32_t psn, uint8_t syndrome) {
  // An ACK held back for coalescing goes first: ACKs and NAKs leave in PSN
  // order.
  FlushPendingAck(qp);
  if (!IsAck(syndrome)) ++qp.naks_sent;
  Packet p;
  p.opcode = RcOp::kAcknowledge;
  p.psn = psn;
  p.syndrome = syndrome;
  p.msn = qp.msn;
  TransmitFrom(qp, std::move(p));
}

// Places the data earlier writes still have pending, which runs what waited
// for it: their immediate completions and ACKs. A completion can overrun its
// CQ and so move this QP to ERR (OverflowCq); then the packet being handled
// is dropped here, with nothing taken from the flushed queues.
bool FlushPlacementsLeftErr(QpCore& qp) {
  FlushPlacements(qp);
  return qp.state == verbsim::QpState::kErr;
}

// A NAK that ends the connection (IBA 9.9.3: responder class B/C/D errors):
// the responder QP goes to ERR too. Earlier writes' data lands and is
// acknowledged first.
void FatalNak(QpCore& qp, uint32_t psn, NakCode code) {
  if (FlushPlacementsLeftErr(qp)) return;
  SendAck(qp, psn, NakSyndrome(code));
  EnterError(qp);
}

NakCode NakFor(WcStatus requester_status) {
  switch (requester_status) {
    case WcStatus::kRemAccessErr: return NakCode::kRemoteAccessError;
    case WcStatus::kRemOpErr: return NakCode::kRemoteOperationalError;
    default: return NakCode::kInvalidRequest;
  }
}

void SendRnrNak(QpCore& qp, uint32_t psn) {
  SendAck(qp, psn, RnrNakSyndrome(qp.attr.min_rnr_timer));
  // Later packets of the burst are dropped silently until the retry
  // (IBA 9.7.5.2.8).
  qp.nak_sent = true;
}


void ExecuteSend(QpCore& qp, const Packet& p) {
  const SimProfile& profile = qp.node->fabric->profile();
  if (IsFirstOrOnly(p.opcode)) {
    if (!HasRecv(qp) && profile.iwarp.remote_errors_terminate) {
      // iWARP has no RNR: no receive is a DDP error, TERMINATE (siw_qp_rx.c
      // siw_proc_send).
      FatalNak(qp, p.psn, NakCode::kRemoteOperationalError);
      return;
    }
    if (!HasRecv(qp)) {
      SendRnrNak(qp, p.psn);
      return;
    }
    BeginRecv(qp);
  }
  const uint64_t len = p.payload.size();
  switch (CheckRecvSpace(qp, len)) {
    case RecvSpace::kOk:
      break;
    case RecvSpace::kTooSmall:
      // Receive buffer too small: LOC_LEN_ERR here, NAK invalid request
      // (IBA 9.9.3.1.1, class C), or what the profile says.
      qp.in_send = false;
      CompleteRecv(qp, qp.cur_recv, profile.recv_too_small_status,
                   WcOpcode::kRecv, 0, p);
      FatalNak(qp, p.psn, NakFor(profile.recv_too_small_sender_status));
      return;
    case RecvSpace::kRefused:
      // The receive buffer fails its local check: the receiver completes
      // with a local error, the sender gets NAK remote operational error.
      ScatterBeforeRefusal(qp, {p.payload.data(), len});
      qp.in_send = false;
      CompleteRecv(qp, qp.cur_recv, profile.recv_access_status,
                   WcOpcode::kRecv, 0, p);
      FatalNak(qp, p.psn, NakCode::kRemoteOperationalError);
      return;
  }
  ScatterTo(qp.cur_recv.sges, qp.recv_offset, p.payload.data(), len);
  qp.recv_offset += len;
  qp.epsn = PsnAdd(qp.epsn, 1);
  if (IsLastOrOnly(p.opcode)) {
    qp.in_send = false;
    if (HasInvalidate(p.opcode) && !InvalidateRemote(qp, p.imm)) {
      // IBA 10.6.5.2: the rkey must name a type 2 window of this QP's PD
      // (regions from ibv_reg_mr cannot be invalidated). The receive
      // completes in error and the sender gets a remote access error, or
      // where the profile says so an ACK (the responder alone fails).
      CompleteRecv(qp, qp.cur_recv, WcStatus::kRemInvReqErr, WcOpcode::kRecv,
                   0, p);
      if (profile.naks_failed_send_invalidate) {
        FatalNak(qp, p.psn, NakCode::kRemoteAccessError);
      } else {
        ++qp.msn;
        SendAckNow(qp, p.psn);
        EnterError(qp);
      }
      return;
    }
    ++qp.msn;
    CompleteRecv(qp, qp.cur_recv, WcStatus::kSuccess, WcOpcode::kRecv,
                 qp.recv_offset, p);
    AckMessage(qp, p.psn);
  }
}

void ExecuteWrite(QpCore& qp, Packet& p) {
  const SimProfile& profile = qp.node->fabric->profile();
  // An immediate needs a receive WQE; without one, RNR before anything else.
  if (HasImmediate(p.opcode) && !HasRecv(qp)) {
    SendRnrNak(qp, p.psn);
    return;
  }
  switch (CheckWritePacket(qp, p)) {
    case WriteCheck::kOk:
      break;
    case WriteCheck::kQpDenies:
      FatalNak(qp, p.psn, NakFor(profile.qp_access_denied_status));
      return;
    case WriteCheck::kRkeyDenies:
      if (p.opcode == RcOp::kWriteOnlyImm &&
          profile.failed_write_imm_completes_its_recv) {
        if (FlushPlacementsLeftErr(qp)) return;  // earlier messages first
        CompleteRecv(qp, TakeRecv(qp), WcStatus::kRemAccessErr,
                     WcOpcode::kRecvRdmaWithImm, 0, p);
      }
      FatalNak(qp, p.psn, NakCode::kRemoteAccessError);
      return;
    case WriteCheck::kLongerThanRequested:
      FatalNak(qp, p.psn, NakCode::kInvalidRequest);
      return;
  }
  const uint64_t len = p.payload.size();
  PlaceWriteData(qp, qp.write_va, std::move(p.payload));
  // Placing may have flushed an earlier write that overlaps this one, and
  // its completion may have moved the QP to ERR (see
  // FlushPlacementsLeftErr): the rest of this packet is not executed.
  if (qp.state == verbsim::QpState::kErr) return;
  qp.write_va += len;
  qp.write_left -= len;
  qp.epsn = PsnAdd(qp.epsn, 1);
  if (IsLastOrOnly(p.opcode)) {
    qp.in_write = false;
    if (qp.write_left != 0) {
      FatalNak(qp, p.psn, NakCode::kInvalidRequest);
      return;
    }
    ++qp.msn;
    // The receive completion and the ACK come once the data is in memory.
    const bool with_imm = HasImmediate(p.opcode);
    RecvWqe r;
    if (with_imm) r = TakeRecv(qp);
    if (qp.placements.empty()) {
      // The data is all in memory already (AfterPlacement would run these
      // at once): no closure to build.
      if (with_imm) {
        CompleteRecv(qp, r, WcStatus::kSuccess, WcOpcode::kRecvRdmaWithImm,
                     qp.write_len, p);
      }
      AckMessage(qp, p.psn);
      return;
    }
    Packet header = p;
    header.payload.clear();
    const uint64_t write_len = qp.write_len;
    AfterPlacement(qp, [with_imm, r = std::move(r), header,
                        write_len](QpCore& q) {
      if (with_imm) {
        CompleteRecv(q, r, WcStatus::kSuccess, WcOpcode::kRecvRdmaWithImm,
                     write_len, header);
      }
      AckMessage(q, header.psn);
    });
  }
}

// The response packets of a read. Their data is read from memory now, or,
// with `fetch_late`, as each packet leaves the link (FetchDeferredRead): by
// then later writes of the QP may have executed (docs/ordering.md rule R3).
void SendReadResponses(QpCore& qp, uint32_t psn, uint64_t va, uint64_t len,
                       uint32_t rkey, bool fetch_late) {
  FlushPendingAck(qp);
  const uint64_t mtu = PacketPayloadBytes(qp, WrOpcode::kRdmaRead);
  const uint32_t n =
      static_cast<uint32_t>(std::max<uint64_t>(1, (len + mtu - 1) / mtu));
  Fabric::UdpBatch batch(*qp.node->fabric);
  for (uint32_t i = 0; i < n; ++i) {
    Packet r;
    if (n == 1) {
      r.opcode = RcOp::kReadResponseOnly;
    } else if (i == 0) {
      r.opcode = RcOp::kReadResponseFirst;
    } else if (i + 1 < n) {
      r.opcode = RcOp::kReadResponseMiddle;
    } else {
      r.opcode = RcOp::kReadResponseLast;
    }
    r.psn = PsnAdd(psn, i);
    r.syndrome = AckSyndrome();
    r.msn = qp.msn;
    const uint64_t begin = i * mtu;
    const uint64_t end = std::min(len, begin + mtu);
    if (end > begin && fetch_late && !qp.node->fabric->keeping_packets()) {
      r.rkey = rkey;
      r.deferred_offset = va + begin;
      r.deferred_len = static_cast<uint32_t>(end - begin);
    } else if (end > begin) {
      const auto* src = reinterpret_cast<const uint8_t*>(va + begin);
      r.payload.Set(src, end - begin);
    }
    TransmitFrom(qp, std::move(r));
  }
}

void KeepResource(QpCore& qp, const RdAtomicResource& res) {
  qp.resources.push_back(res);
  const size_t cap = std::max<size_t>(1, qp.attr.max_dest_rd_atomic);
  while (qp.resources.size() > cap) qp.resources.pop_front();
}

void ExecuteRead(QpCore& qp, const Packet& p) {
  const SimProfile& profile = qp.node->fabric->profile();
  if (!QpGrants(qp, kAccessRemoteRead)) {
    FatalNak(qp, p.psn, NakFor(profile.qp_access_denied_status));
    return;
  }
  if (!RkeyGrants(qp, p.rkey, p.va, p.dma_len, ReadSourceRights(qp))) {
    if (profile.iwarp.transmit_errors_keep_rts) {
      // Found as the response is to be sent: the requester gets the
      // TERMINATE, this QP stays in RTS, suspended (IwarpRules).
      if (FlushPlacementsLeftErr(qp)) return;
      SendAck(qp, p.psn, NakSyndrome(NakCode::kRemoteAccessError));
      SuspendInRts(qp);
      return;
    }
    FatalNak(qp, p.psn, NakCode::kRemoteAccessError);
    return;
  }
  const uint64_t mtu = PacketPayloadBytes(qp, WrOpcode::kRdmaRead);
  const uint32_t n = static_cast<uint32_t>(
      std::max<uint64_t>(1, (uint64_t{p.dma_len} + mtu - 1) / mtu));
  KeepResource(qp, RdAtomicResource{p.psn, false, 0});
  qp.epsn = PsnAdd(p.psn, n);
  ++qp.msn;
  // Read relaxed ordering (docs/ordering.md rule R3): later sends, writes
  // and atomics of the QP may execute before the data is fetched.
  // One read in four is fetched late.
  const bool fetch_late = !profile.memory.fetches_reads_in_order &&
                          (qp.node->fabric->memory_rng()() & 3) == 0;
  // A late fetch finds the region by its own key (FetchDeferredRead).
  MrState* source = nullptr;
  uint32_t fetch_key = p.rkey;
  if (fetch_late && p.dma_len > 0 &&
      CheckAccess(qp.node->keys, p.rkey, KeyKind::kRemote, qp.pd.get(), p.va,
                  p.dma_len, ReadSourceRights(qp), &source,
                  qp.qpn) == AccessResult::kOk &&
      source != nullptr) {
    fetch_key = source->lkey;
  }
  SendReadResponses(qp, p.psn, p.va, p.dma_len, fetch_key, fetch_late);
  // The send engine, done with the responses, finds a WR it refuses at the
  // head of the ring (IwarpRules::drops_connection_at_refused_head).
  if (RefusedWrAtHead(qp)) DropConnectionAtRefusedHead(qp);
}

// The atomic ACK of the request at `psn`, carrying the target's original
// value.
void SendAtomicAck(QpCore& qp, uint32_t psn, uint64_t orig) {
  FlushPendingAck(qp);
  Packet ack;
  ack.opcode = RcOp::kAtomicAcknowledge;
  ack.psn = psn;
  ack.syndrome = AckSyndrome();
  ack.msn = qp.msn;
  ack.atomic_orig = orig;
  TransmitFrom(qp, std::move(ack));
}

void ExecuteAtomic(QpCore& qp, const Packet& p) {
  const SimProfile& profile = qp.node->fabric->profile();
  if (!QpGrants(qp, kAccessRemoteAtomic) ||
      profile.device.atomic_cap == AtomicCap::kNone) {
    FatalNak(qp, p.psn, NakFor(profile.qp_access_denied_status));
    return;
  }
  // The target must be 8-byte aligned (IBA 9.4.5: otherwise invalid request).
  if (p.va % 8 != 0) {
    FatalNak(qp, p.psn, NakCode::kInvalidRequest);
    return;
  }
  if (!RkeyGrants(qp, p.rkey, p.va, 8, kAccessRemoteAtomic)) {
    FatalNak(qp, p.psn, NakCode::kRemoteAccessError);
    return;
  }
  auto* target = reinterpret_cast<uint64_t*>(p.va);
  uint64_t orig;
  std::memcpy(&orig, target, 8);
  uint64_t result = p.opcode == RcOp::kCompareSwap
                        ? (orig == p.compare ? p.swap_add : orig)
                        : orig + p.swap_add;
  std::memcpy(target, &result, 8);
  KeepResource(qp, RdAtomicResource{p.psn, true, orig});
  qp.epsn = PsnAdd(qp.epsn, 1);
  ++qp.msn;
  SendAtomicAck(qp, p.psn, orig);
}

// A request with a PSN already executed (IBA 9.7.5.1.1): sends and writes are
// acknowledged again, reads are executed again, atomics answered from the
// saved result and never applied twice.
void HandleDuplicate(QpCore& qp, const Packet& p) {
  if (IsSend(p.opcode) || IsWrite(p.opcode)) {
    SendAck(qp, PsnAdd(qp.epsn, kPsnMask), AckSyndrome());
    return;
  }
  if (p.opcode == RcOp::kReadRequest) {
    if (!RkeyGrants(qp, p.rkey, p.va, p.dma_len, ReadSourceRights(qp))) {
      return;
    }
    SendReadResponses(qp, p.psn, p.va, p.dma_len, p.rkey,
                      /*fetch_late=*/false);
    return;
  }
  for (const RdAtomicResource& res : qp.resources) {
    if (res.is_atomic && res.psn == p.psn) {
      SendAtomicAck(qp, p.psn, res.atomic_orig);
      return;
    }
  }
}

bool IsMiddleOrLast(RcOp op) { return IsRequest(op) && !IsFirstOrOnly(op); }

}  // namespace

void CompleteRecv(QpCore& qp, const RecvWqe& r, WcStatus status,
                  WcOpcode opcode, uint64_t byte_len, const Packet& p,
                  uint32_t extra_flags) {
  WorkCompletion wc;
  wc.wr_id = r.wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.qp_num = qp.qpn;
  if (status == WcStatus::kSuccess) {
    wc.byte_len = static_cast<uint32_t>(byte_len);
    wc.src_qp = p.src_qpn;
    wc.wc_flags |= extra_flags;
    if (HasImmediate(p.opcode)) {
      wc.wc_flags |= kWcWithImm;
      wc.imm_data = p.imm;
    }
    if (HasInvalidate(p.opcode) &&
        qp.node->fabric->profile().reports_with_inv) {
      wc.wc_flags |= kWcWithInv;
      wc.invalidated_rkey = p.imm;
    }
  }
  PushCompletion(*qp.recv_cq, wc, p.solicited);
}

bool FetchDeferredRead(QpCore& qp, Packet& p) {
  if (CheckAccess(qp.node->keys, p.rkey, KeyKind::kLocal, qp.pd.get(),
                  p.deferred_offset, p.deferred_len,
                  /*required=*/0) != AccessResult::kOk) {
    return false;  // deregistered since the read executed
  }
  const auto* src = reinterpret_cast<const uint8_t*>(p.deferred_offset);
  p.payload.Set(src, p.deferred_len);
  p.rkey = 0;
  p.deferred_offset = 0;
  p.deferred_len = 0;
  return true;
}

void SendAckNow(QpCore& qp, uint32_t psn) {
  SendAck(qp, psn, AckSyndrome());
}

// ACK coalescing (IBA 9.7.5.1.2): the responder may hold an ACK back briefly
// (a draw of Fabric::ack_rng) and send one ACK for the messages executed
// meanwhile. Not across processes (the UDP transport): there time is real,
// the receiver's program may see the completion and end its process within
// the hold, and the ACK would go with it, as no device lets it.
void AckMessage(QpCore& qp, uint32_t psn) {
  Fabric* fabric = qp.node->fabric;
  if (!fabric->options().randomize_schedule || fabric->real_time()) {
    SendAckNow(qp, psn);
    return;
  }
  if (qp.ack_pending) {
    qp.ack_pending_psn = psn;  // coalesced into the ACK already waiting
    return;
  }
  if (fabric->ack_rng()() % 2 == 0) {
    SendAckNow(qp, psn);
    return;
  }
  qp.ack_pending = true;
  qp.ack_pending_psn = psn;
  ++qp.ack_generation;
  // The QP number and the generation's low 32 bits share one word, so the
  // event's capture fits std::function's inline storage (16 bytes) and
  // needs no allocation. A stale event is due within 2 us of virtual time;
  // mistaking it for the current one would take 2^32 changes of the
  // generation meanwhile.
  Node* node = qp.node;
  const uint64_t key = uint64_t{qp.qpn} << 32 |
                       static_cast<uint32_t>(qp.ack_generation);
  fabric->Schedule(
      fabric->now_ns() + 1 + static_cast<int64_t>(fabric->ack_rng()() % 2000),
      [node, key]() {
        QpCore* q = node->FindQp(static_cast<uint32_t>(key >> 32));
        if (q == nullptr ||
            static_cast<uint32_t>(q->ack_generation) !=
                static_cast<uint32_t>(key)) {
          return;
        }
        FlushPendingAck(*q);
      });
}

void FlushPendingAck(QpCore& qp) {
  if (!qp.ack_pending) return;
  qp.ack_pending = false;
  ++qp.ack_generation;
  SendAckNow(qp, qp.ack_pending_psn);
}

void DropPendingAck(QpCore& qp) {
  qp.ack_pending = false;
  ++qp.ack_generation;
}

void ResponderReceive(QpCore& qp, Packet& p) {
  const auto s = qp.state;
  Fabric* fabric = qp.node->fabric;
  if (p.transport != qp.type) {
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "packet of another transport");
    return;
  }
  if (qp.type == QpType::kUd) {
    UdReceive(qp, p);
    return;
  }
  // Connected transports (RC, UC): a receiving state, the connected peer.
  if (!(s == verbsim::QpState::kRtr || s == verbsim::QpState::kRts ||
        s == verbsim::QpState::kSqd)) {
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "QP cannot receive");
    return;
  }
  if (p.src_node != qp.dest_node || p.src_qpn != qp.attr.dest_qp_num) {
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "not from the connected QP");
    return;
  }
  if (qp.type == QpType::kUc) {
    UcReceive(qp, p);
    return;
  }
  const int32_t d = PsnDiff(p.psn, qp.epsn);
  if (d > 0) {
    // A packet is missing: one sequence NAK, then silence until the gap is
    // filled (IBA 9.7.5.2.2).
    if (!qp.nak_sent) {
      SendAck(qp, qp.epsn, NakSyndrome(NakCode::kPsnSequenceError));
      qp.nak_sent = true;
    }
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "PSN ahead of the expected one");
    return;
  }
  if (d < 0) {
    if (!FlushPlacementsLeftErr(qp)) HandleDuplicate(qp, p);
    return;
  }
  qp.nak_sent = false;
  // Everything an earlier request wrote is in memory before this one runs,
  // or, where messages may land out of order, before a send, read or
  // atomic runs (docs/ordering.md rule W2; overlapping writes:
  // PlaceWriteData).
  if ((fabric->profile().memory.places_messages_in_order ||
       !IsWrite(p.opcode)) &&
      FlushPlacementsLeftErr(qp)) {
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "QP cannot receive");
    return;
  }
  // Opcode sequence (IBA 9.8.3.1): a multi-packet message continues with its
  // own MIDDLE/LAST packets and nothing else.
  const bool continues_send = IsSend(p.opcode) && IsMiddleOrLast(p.opcode);
  const bool continues_write = IsWrite(p.opcode) && IsMiddleOrLast(p.opcode);
  if (qp.in_send != continues_send || qp.in_write != continues_write) {
    if (qp.in_send) {
      qp.in_send = false;
      CompleteRecv(qp, qp.cur_recv, WcStatus::kRemInvReqErr, WcOpcode::kRecv,
                   0, p);
    }
    FatalNak(qp, p.psn, NakCode::kInvalidRequest);
    return;
  }
  if (IsSend(p.opcode)) {
    ExecuteSend(qp, p);
  } else if (IsWrite(p.opcode)) {
    ExecuteWrite(qp, p);
  } else if (p.opcode == RcOp::kReadRequest) {
    ExecuteRead(qp, p);
    if (qp.send_engine_idle && qp.state == verbsim::QpState::kRts &&
        qp.node->fabric->profile().iwarp.rts_leaves_the_ring_waiting) {
      // The READ response runs the send engine, which goes on with the
      // WRs waiting in the ring (IwarpRules::rts_leaves_the_ring_waiting).
      qp.send_engine_idle = false;
      RequesterRun(qp);
    }
  } else if (IsAtomicRequest(p.opcode)) {
    ExecuteAtomic(qp, p);
  }
}

}  // namespace verbsim::sim
