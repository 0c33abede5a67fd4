// The transports of a simulated QP. RC runs as three state machines in the
// manner of kernel rxe: the requester turns send WQEs into request packets
// (requester.cc), the responder executes request packets against local memory
// and answers (responder.cc), and the completer consumes ACKs, NAKs and
// read/atomic responses, retries, and completes WQEs in order
// (completer.cc). Packets travel between them over the link (link.cc). All
// run under the fabric mutex. The sections below follow a request's way, one
// file each.
#ifndef VERBSIM_SIM_TRANSPORT_H_
#define VERBSIM_SIM_TRANSPORT_H_

#include <functional>
#include <vector>

#include "absl/types/span.h"
#include "core/types.h"
#include "sim/packet.h"
#include "sim/state.h"

namespace verbsim::sim {

// Opcode classes of work requests.
inline bool IsAtomicWr(WrOpcode op) {
  return op == WrOpcode::kAtomicCmpAndSwp || op == WrOpcode::kAtomicFetchAndAdd;
}
// Reads and atomics: bounded by max_rd_atomic, answered by responses.
inline bool IsRdAtomic(WrOpcode op) {
  return op == WrOpcode::kRdmaRead || IsAtomicWr(op);
}

// The opcodes each transport carries (IBA 9.8.3 / 9.8.4, rxe_opcode.c): UC
// has no reads, atomics or invalidation, UD sends only.
inline bool OpcodeValidOn(QpType type, WrOpcode op) {
  switch (type) {
    case QpType::kRc:
      return true;
    case QpType::kUc:
      return op == WrOpcode::kSend || op == WrOpcode::kSendWithImm ||
             op == WrOpcode::kRdmaWrite || op == WrOpcode::kRdmaWriteWithImm ||
             op == WrOpcode::kBindMw;
    case QpType::kUd:
      return op == WrOpcode::kSend || op == WrOpcode::kSendWithImm;
  }
  return false;
}

// --- requester.cc: send WQEs become request packets ----------------------
// Sends what the send queue allows (rd/atomic depth, fences).
void RequesterRun(QpCore& qp);
// Goes back to `psn` and sends again from there (go-back-N).
void RequesterRewind(QpCore& qp, uint32_t psn);
// Reads the payload a packet of `qp` left in the sender's buffers
// (Packet::deferred_wqe) as the packet leaves the link. False when the
// packet is to be dropped: its WR is gone, or the bytes fail their local
// check (the WR then fails).
bool GatherDeferred(QpCore& qp, Packet& packet);

// --- link.cc: from one QP to another ---------------------------------------
// Payload bytes per packet of a message of `opcode` on this QP (for a READ,
// per response packet): the path MTU, or what an iWARP profile's FPDU
// holds (IwarpRules::tcp_segment_bytes).
uint32_t PacketPayloadBytes(const QpCore& qp, WrOpcode opcode);
// Sends `packet` from `qp` to its peer (Fabric::Transmit, Arrive, Deliver).
void TransmitFrom(QpCore& qp, Packet&& packet);

// --- responder.cc: request packets executed against local memory ----------
// One request packet arrived for `qp` (dispatches UC and UD).
void ResponderReceive(QpCore& qp, Packet& packet);
// Completes a receive WQE; byte_len and the flags only on success.
void CompleteRecv(QpCore& qp, const RecvWqe& r, WcStatus status,
                  WcOpcode opcode, uint64_t byte_len, const Packet& p,
                  uint32_t extra_flags = 0);
// Reads the data of a read response fetched late
// (MemoryModel::fetches_reads_in_order) as it leaves the link; false when
// the region is gone (deregistered, or re-registered elsewhere: the packet
// is then lost, and the read's retry meets the check again). The request's
// R_Key was checked when the read executed; a window it named may have
// been invalidated since (a later SEND with Invalidate), which takes no
// memory away, so the check here is of the region itself.
bool FetchDeferredRead(QpCore& qp, Packet& packet);
bool FetchDeferredRead(QpCore& qp, Packet& packet);
// ACKs: now, or a little later coalesced with the ACKs of later messages
// (IBA 9.7.5.1.2); FlushPendingAck sends one held back, DropPendingAck
// forgets it (the QP leaves the states that answer).
void SendAckNow(QpCore& qp, uint32_t psn);
void AckMessage(QpCore& qp, uint32_t psn);
void FlushPendingAck(QpCore& qp);
void DropPendingAck(QpCore& qp);

// --- placement.cc: RDMA write data into responder memory -------------------
// Places write data in random chunk order; `then` runs once every chunk is
// placed; Flush places what is left now; Drop forgets it (the QP's error or
// reset).
void PlaceWriteData(QpCore& qp, uint64_t va, Payload&& data);
void AfterPlacement(QpCore& qp, std::function<void(QpCore&)> then);
void FlushPlacements(QpCore& qp);
void DropPlacements(QpCore& qp);

// --- uc.cc, ud.cc: the unreliable transports --------------------------------
// The UD and UC responders; UC packets come after ResponderReceive's checks
// of the QP's state and the connected peer.
void UdReceive(QpCore& qp, Packet& packet);
void UcReceive(QpCore& qp, Packet& packet);
// The UD requester: sends datagram `w` (one packet, or one per member of a
// multicast group); returns the WQE's completion status.
WcStatus UdSend(QpCore& qp, SendWqe& w);

// --- recv_queue.cc: receive WQEs -------------------------------------------
// From the QP's own queue or its SRQ. Taking the last WQEs of an armed SRQ
// raises IBV_EVENT_SRQ_LIMIT_REACHED once.
bool HasRecv(const QpCore& qp);
RecvWqe TakeRecv(QpCore& qp);
// Gives a WQE back to the front of the queue it came from (a UC message that
// was dropped part way reuses its receive).
void ReturnRecv(QpCore& qp, RecvWqe r);
// A send message's first packet takes the receive it fills (RC and UC).
void BeginRecv(QpCore& qp);
// Whether `len` more bytes of the message fit in that receive and its SGEs
// grant LOCAL_WRITE over where they land (RC and UC).
enum class RecvSpace { kOk, kTooSmall, kRefused };
RecvSpace CheckRecvSpace(const QpCore& qp, uint64_t len);
// After CheckRecvSpace refused the payload at hand: on a profile that copies
// SGE by SGE (scatters_up_to_a_failing_sge), places the bytes that land in the
// pieces before the one that failed, as the device has by then.
void ScatterBeforeRefusal(QpCore& qp, absl::Span<const uint8_t> payload);
// Queues an asynchronous event on `context` (ibv_get_async_event(3)).
void RaiseAsyncEvent(ContextState& context, const AsyncEvent& event);

// --- mw.cc: memory windows and invalidation --------------------------------
// Each returns the status of the work request: SUCCESS, MW_BIND_ERR for a
// refused bind, the profile's local-invalidate error for a refused LOCAL_INV.
WcStatus ExecuteBind(QpCore& qp, SendWqe& w);
WcStatus ExecuteLocalInvalidate(QpCore& qp, uint32_t rkey);
// SEND_WITH_INV at the responder: whether `rkey` named a type 2 window of
// the QP's PD that is now invalidated.
bool InvalidateRemote(QpCore& qp, uint32_t rkey);
// Unbinds a window (dealloc, invalidate, zero-length bind).
void UnbindMw(MwState& mw);

// --- completer.cc: responses consumed, WQEs completed in order ------------
// One response packet (ACK, NAK, read response, atomic ACK).
void CompleterReceive(QpCore& qp, Packet& packet);
// Completes finished WQEs at the head of the send queue in order.
void CompleterRun(QpCore& qp);
// Arms the local ACK timer while requests are unacknowledged; `restart`
// moves its deadline to a full timeout from now (on forward progress).
void ArmRetryTimer(QpCore& qp, bool restart);

// --- cq.cc: completions and the completion queue ---------------------------
// The completion opcode of a send WR opcode.
WcOpcode WcOpcodeFor(WrOpcode op);
// The completion of send WQE `w` with `status` (byte_len on success).
WorkCompletion SendCompletion(const QpCore& qp, const SendWqe& w,
                              WcStatus status);
// Pushes a completion; handles overflow (CQ_ERR, QPs to ERR) and channel
// notification. `release`: the send-queue slots polling it frees (a send
// WR's completion; a receive's frees none).
void PushCompletion(CqState& cq, const WorkCompletion& wc, bool solicited,
                    SqRelease release = SqRelease());
// A send WR's completion: SendCompletion pushed to the QP's send CQ with
// the release of `w`'s slot (and of every earlier WR's).
void PushSendCompletion(QpCore& qp, const SendWqe& w, WcStatus status);
// The send-queue slots `qp` holds: WRs posted and not yet completed, and,
// where the profile holds a slot until a completion is polled
// (SimProfile::sq_slots_held_until_polled), WRs completed whose slot no
// polled completion freed yet.
uint64_t SqSlotsHeld(const QpCore& qp);
// Polling a completion that carries `release` frees its slots.
void ReleaseSqSlots(Node& node, const SqRelease& release);
// The CQ overruns: in error from now on, CQ_ERR raised, its QPs to ERR.
void OverflowCq(CqState& cq);

// --- qp_error.cc: the error state and RESET --------------------------------
// Moves the QP to ERR: every outstanding WR on both queues completes, the
// first erroring one with its status and the rest WR_FLUSH_ERR.
void EnterError(QpCore& qp);
// iWARP (IwarpRules::transmit_errors_keep_rts): the connection is gone but
// the QP stays in RTS; nothing more is sent and nothing is flushed until the
// application moves it to ERR.
void SuspendInRts(QpCore& qp);
// A move to ERR of a QP already there: receives posted since it entered ERR
// (kept where the profile does not flush them at the post) complete with
// WR_FLUSH_ERR. rxe's user-space post only writes the ring; each move to
// ERR runs the responder again (rxe_qp_error), which drains the receive
// queue (rxe_resp.c).
void FlushReceivesPostedInError(QpCore& qp);
// RESET: discards every queued WR without completions.
void ResetQueues(QpCore& qp);
// iWARP: a requester's error ends the connection (a TERMINATE, which a NAK
// stands for on the sim's wire); nothing on other transports and profiles.
void TerminateConnection(QpCore& qp);
// IwarpRules::drops_connection_at_refused_head: whether the next WR the send
// engine would start is one it refuses (refused_at_activation), and the
// drop that follows: the peer is told (TerminateConnection) and this QP is
// suspended in RTS (SuspendInRts), nothing flushed.
bool RefusedWrAtHead(const QpCore& qp);
void DropConnectionAtRefusedHead(QpCore& qp);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_TRANSPORT_H_
