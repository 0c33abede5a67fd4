// The RC transport of a simulated QP, as three state machines in the manner
// of kernel rxe: the requester turns send WQEs into request packets
// (requester.cc), the responder executes request packets against local memory
// and answers (responder.cc), and the completer consumes ACKs, NAKs and
// read/atomic responses, retries, and completes WQEs in order
// (completer.cc). All run under the fabric mutex.
#ifndef VERBSIM_SIM_TRANSPORT_H_
#define VERBSIM_SIM_TRANSPORT_H_

#include <functional>
#include <vector>

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

// Requester: sends what the send queue allows (rd/atomic depth, fences).
void RequesterRun(QpCore& qp);
// Requester: go back to `psn` and send again from there (go-back-N).
void RequesterRewind(QpCore& qp, uint32_t psn);
// Requester: reads the payload a packet of `qp` left in the sender's
// buffers (Packet::deferred_wqe) as the packet leaves the link. False when
// the packet is to be dropped: its WR is gone, or the bytes fail their local
// check (the WR then fails).
bool GatherDeferred(QpCore& qp, Packet& p);

// Responder: one request packet arrived for `qp` (dispatches UC and UD).
void ResponderReceive(QpCore& qp, Packet& packet);
// The UD and UC responders (ud.cc, uc.cc); UC packets come after
// ResponderReceive's checks of the QP's state and the connected peer.
void UdReceive(QpCore& qp, Packet& packet);
void UcReceive(QpCore& qp, Packet& packet);
// The UD requester: sends datagram `w` (one packet, or one per member of a
// multicast group); returns the WQE's completion status.
WcStatus UdSend(QpCore& qp, SendWqe& w);

// Receive WQEs (recv_queue.cc): from the QP's own queue or its SRQ. Taking
// the last WQEs of an armed SRQ raises IBV_EVENT_SRQ_LIMIT_REACHED once.
bool HasRecv(const QpCore& qp);
RecvWqe TakeRecv(QpCore& qp);
// Gives a WQE back to the front of the queue it came from (a UC message that
// was dropped part way reuses its receive).
void ReturnRecv(QpCore& qp, RecvWqe r);
// Completes a receive WQE; byte_len and the flags only on success.
void CompleteRecv(QpCore& qp, const RecvWqe& r, WcStatus status,
                  WcOpcode opcode, uint64_t byte_len, const Packet& p,
                  uint32_t extra_flags = 0);
// Queues an asynchronous event on `context` (ibv_get_async_event(3)).
void RaiseAsyncEvent(ContextState& context, const AsyncEvent& event);

// Memory windows and invalidation (mw.cc). Each returns the status of the
// work request: SUCCESS, MW_BIND_ERR for a refused bind, the profile's
// local-invalidate error for a refused LOCAL_INV.
WcStatus ExecuteBind(QpCore& qp, SendWqe& w);
WcStatus ExecuteLocalInvalidate(QpCore& qp, uint32_t rkey);
// SEND_WITH_INV at the responder: whether `rkey` named a type 2 window of
// the QP's PD that is now invalidated.
bool InvalidateRemote(QpCore& qp, uint32_t rkey);
// Unbinds a window (dealloc, invalidate, zero-length bind).
void UnbindMw(MwState& mw);

// Completer: one response packet (ACK, NAK, read response, atomic ACK).
void CompleterReceive(QpCore& qp, Packet& packet);
// Completer: completes finished WQEs at the head of the send queue in order.
void CompleterRun(QpCore& qp);
// Arms the local ACK timer while requests are unacknowledged; `restart`
// moves its deadline to a full timeout from now (on forward progress).
void ArmRetryTimer(QpCore& qp, bool restart);

// Moves the QP to ERR: every outstanding WR on both queues completes, the
// first erroring one with its status and the rest WR_FLUSH_ERR.
void EnterError(QpCore& qp);
// RESET: discards every queued WR without completions.
void ResetQueues(QpCore& qp);

// The completion opcode of a send WR opcode.
WcOpcode WcOpcodeFor(WrOpcode op);

// The CQ overruns: in error from now on, CQ_ERR raised, its QPs to ERR.
void OverflowCq(CqState& cq);
// Pushes a completion; handles overflow (CQ_ERR, QPs to ERR) and channel
// notification.
void PushCompletion(CqState& cq, const WorkCompletion& wc, bool solicited);

// Randomised schedules (schedule.cc). Write data placed in random chunk
// order; `then` runs once every chunk is placed; Flush places what is left
// now (before the QP's next request executes).
void PlaceWriteData(QpCore& qp, uint64_t va, std::vector<uint8_t>&& data);
void AfterPlacement(QpCore& qp, std::function<void(QpCore&)> then);
void FlushPlacements(QpCore& qp);
void DropPlacements(QpCore& qp);
// Acknowledges a message now or a little later, coalesced with later ACKs.
void AckMessage(QpCore& qp, uint32_t psn);
void FlushPendingAck(QpCore& qp);
// Sends an ACK for `psn` at once (responder.cc).
void SendAckNow(QpCore& qp, uint32_t psn);
// Responder: reads the data of a read response fetched late
// (MemoryModel::fetches_reads_in_order) as it leaves the link; false when
// the region no longer allows it (the packet is then lost, and the read's
// retry meets the check again).
bool FetchDeferredRead(QpCore& qp, Packet& p);

// Payload bytes per packet on this QP.
uint32_t PathMtuBytes(const QpCore& qp);
// Sends `packet` from `qp` to its peer.
void TransmitFrom(QpCore& qp, Packet packet);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_TRANSPORT_H_
