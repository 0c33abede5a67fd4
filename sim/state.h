// The sim's internal object state. Everything here is guarded by the owning
// Fabric's mutex; the public handles (sim/handles.h) lock it and call in.
#ifndef VERBSIM_SIM_STATE_H_
#define VERBSIM_SIM_STATE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "core/types.h"
#include "sim/packet.h"
#include "sim/ring.h"

namespace verbsim {
class Cq;
}  // namespace verbsim

namespace verbsim::sim {

struct Node;
struct QpCore;

struct ContextState {
  Node* node = nullptr;
  uint32_t id = 0;
  Ring<AsyncEvent> async_events;
  int pds = 0, cqs = 0, channels = 0;  // live children, for EBUSY
  bool dead = false;
};

struct PdState {
  std::shared_ptr<ContextState> context;
  uint32_t id = 0;
  int mrs = 0, qps = 0, ahs = 0, mws = 0, srqs = 0;  // live users, for EBUSY
  bool dead = false;
};

struct MrState {
  Node* node = nullptr;
  std::shared_ptr<PdState> pd;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint32_t slot = 0;
  int mws_bound = 0;  // memory windows bound to it: dereg and rereg EBUSY
  bool dead = false;
};

// A memory window (IBA 10.6.7). Its rkey is 0x80000000 | index << 8 | key:
// the top bit tells window keys from MR keys, the low 8 bits are the key the
// consumer owns (ibv_inc_rkey).
struct MwState {
  Node* node = nullptr;
  std::shared_ptr<PdState> pd;
  MwType type = MwType::kType1;
  uint32_t index = 0;
  uint32_t rkey = 0;         // the key the window answers to now
  uint32_t posted_rkey = 0;  // type 1: the key ibv_bind_mw last gave it
  // Bound: the window grants `access` to [addr, addr + length) of `mr`.
  bool bound = false;
  std::shared_ptr<MrState> mr;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t qpn = 0;  // type 2: the QP it was bound through, the only user
  bool dead = false;
};


struct CqState;

// Orders a CQ's QPs by QP number (a CQ's QPs are all of one node, whose QP
// numbers are never reused), never by address, so that walking them (on a
// CQ overflow) goes the same way in every run whatever the heap layout.
struct QpOrder {
  bool operator()(const QpCore* a, const QpCore* b) const;
};

// What polling a send queue's completion frees where the profile holds a
// slot until then (SimProfile::sq_slots_held_until_polled): the slots of
// QP `qpn`'s WRs up to post number `seq`, the completed WR's and every
// earlier one's. seq 0: a receive's completion, which frees none.
struct SqRelease {
  uint32_t qpn = 0;
  uint64_t seq = 0;
};

struct ChannelState {
  std::shared_ptr<ContextState> context;
  // Events not yet returned by GetEvent, in order.
  Ring<std::shared_ptr<CqState>> events;
  int cqs = 0;
  bool dead = false;
};

struct CqState : std::enable_shared_from_this<CqState> {
  std::shared_ptr<ContextState> context;
  std::shared_ptr<ChannelState> channel;  // may be null
  uint32_t id = 0;
  int cqe = 0;
  Ring<WorkCompletion> entries;
  // Beside each entry: the send-queue slots polling it frees (SqRelease).
  Ring<SqRelease> releases;
  // entries.size(), kept beside it for a poll that reads it without the
  // fabric's lock (SimCq::Poll with a progress thread).
  std::atomic<size_t> ready{0};
  // ibv_req_notify_cq: armed for the next completion (or the next solicited
  // one).
  bool armed = false;
  bool armed_solicited_only = false;
  // Overflowed: the CQ is in error and drops further completions.
  bool overflowed = false;
  std::set<QpCore*, QpOrder> qps;  // QPs that complete here
  Cq* handle = nullptr;    // the public object, null once it is gone
  bool dead = false;
};

struct AhState {
  std::shared_ptr<PdState> pd;
  AhAttr attr;
  int dest_node = -1;  // -1 for a multicast group
  bool dead = false;
};

// A posted send work request and the requester's progress on it.
struct SendWqe {
  uint64_t seq = 0;  // post order on its QP, from 1 (QpCore::next_wqe_seq)
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t flags = 0;
  bool signaled = false;
  absl::InlinedVector<Sge, 2> sges;
  uint64_t length = 0;
  bool is_inline = false;
  // Inline bytes, or gathered when first sent where the profile gathers at
  // post (MemoryModel); empty while each packet reads its own bytes.
  Payload data;
  // KeyTable::changes() when the SGEs passed their check: while it is the
  // same, bytes read later need no second check.
  uint64_t checked_at_changes = 0;
  // Profiles that gather per packet (rxe): how many packets of a send or
  // write passed their local check before one failed (they still go out).
  uint32_t good_packets = 0;
  uint32_t imm = 0;
  uint32_t invalidate_rkey = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // UD: where the datagram goes.
  std::shared_ptr<AhState> ah;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
  // BIND_MW: the window, its new rkey and what it is bound to; `bind_verb`
  // for a type 1 bind made by ibv_bind_mw.
  std::shared_ptr<MwState> mw;
  std::shared_ptr<MrState> bind_mr;
  uint32_t bind_rkey = 0;
  uint64_t bind_addr = 0;
  uint64_t bind_length = 0;
  uint32_t bind_access = 0;
  std::optional<uint32_t> bind_named_rkey;  // SendWr::bind_mw.current_rkey
  bool bind_verb = false;

  enum class Phase { kPosted, kInFlight, kDone };
  Phase phase = Phase::kPosted;
  WcStatus status = WcStatus::kSuccess;
  uint32_t first_psn = 0;
  uint32_t num_psn = 0;        // PSNs it consumes (response packets for reads)
  uint32_t responses_got = 0;  // read response packets received in order
  bool holds_rd_atomic = false;  // counted in the initiator depth
  // siw: the kernel refused to start it (IwarpRules::refuses_at_activation):
  // it stays at the head of the send ring and nothing after it goes out.
  bool refused_at_activation = false;
  // Failed by the requester's own checks as it was to be sent (a bad local
  // SGE, an opcode the QP type lacks), not by a response or a NAK.
  bool failed_at_transmit = false;
  // Failed by its local check at a later packet after the packets before it
  // went out (SimProfile::answers_arrive_between_packets): the failure,
  // with this status, waits for the responder's answer to those packets.
  bool local_failure_pending = false;
  WcStatus pending_status = WcStatus::kSuccess;
  // siw: moved into the send slot of a suspended QP (QpCore::tx_suspended).
  bool in_send_slot = false;
};

// An RDMA write packet whose data has partly landed: the 64-byte chunks
// `left` of `bytes` (to be placed at va) are still to come, at due_ns unless
// something forces them out first (placement.cc).
struct PendingChunk {
  uint64_t va = 0;
  Payload bytes;
  // The 64-byte chunks of `bytes` still to land: bit i % 64 of word i / 64
  // (one word for a 4 KiB packet).
  absl::InlinedVector<uint64_t, 1> left;
  int64_t due_ns = 0;
};

struct RecvWqe {
  uint64_t wr_id = 0;
  absl::InlinedVector<Sge, 2> sges;
  uint64_t capacity = 0;
};

// A shared receive queue (IBA 10.2.9).
struct SrqState {
  std::shared_ptr<PdState> pd;
  uint32_t id = 0;
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t limit = 0;  // armed while nonzero
  Ring<RecvWqe> wqes;
  int qps = 0;  // QPs using it, for EBUSY
  bool dead = false;
};

// Read and atomic requests the responder executed, kept to answer duplicates
// (IBA 9.7.5.1.1); an atomic is never executed twice.
struct RdAtomicResource {
  uint32_t psn = 0;
  bool is_atomic = false;
  uint64_t atomic_orig = 0;
};

// The entries of the fabric's link and flow tables (Fabric::Transmit) that
// a QP's packets to one peer QP use; valid for as long as the fabric lives
// (the tables' entries never move and are never removed).
struct LinkFlowCache {
  int dst_node = -1;
  uint32_t dst_qpn = 0;
  int64_t* link_free_ns = nullptr;
  int64_t* flow_last_ns = nullptr;
};

struct QpCore {
  Node* node = nullptr;
  uint32_t qpn = 0;
  QpType type = QpType::kRc;
  verbsim::QpState state = verbsim::QpState::kReset;
  std::shared_ptr<PdState> pd;
  std::shared_ptr<CqState> send_cq;
  std::shared_ptr<CqState> recv_cq;
  std::shared_ptr<SrqState> srq;  // receives come from here when set
  QpCap cap;
  bool sq_sig_all = false;
  QpAttr attr;  // the attributes last set
  bool dead = false;
  // Connected through the sim's connection manager (Endpoint connect/
  // accept): on an iWARP profile only such a QP may enter RTS.
  bool cm_connected = false;
  // The port the kernel's core layer holds for the QP (ib_qp.port): set by
  // a modify with IBV_QP_PORT (or an AV outside INIT -> RTR), 0 before.
  uint8_t core_port = 0;

  // The peer, resolved from the AV's GID at RTR.
  int dest_node = -1;

  // Send queue: WQEs not yet completed, in post order.
  Ring<SendWqe> sq;
  uint64_t next_wqe_seq = 1;
  // The WRs posted up to this post number hold no send-queue slot any more
  // (SimProfile::sq_slots_held_until_polled: a polled completion of the
  // queue, or RESET, frees them). Slots held: next_wqe_seq - 1 - this.
  uint64_t sq_freed_seq = 0;
  // Requester: index in sq of the next WQE to (re)transmit; next PSN.
  size_t req_next = 0;
  uint32_t req_psn = 0;
  int rd_atomic_in_flight = 0;
  bool req_halted = false;  // a local error stopped the requester
  // siw: suspended in RTS after a WR failed at transmit (SuspendInRts);
  // the WR a later doorbell moved out of the ring into the send slot, where
  // it waits, never sent (1 or 0 of them).
  bool tx_suspended = false;
  uint32_t sq_outside_ring = 0;
  // siw: the QP entered RTS with WRs waiting in its send ring. Nothing
  // starts the send engine then, and libsiw rings no doorbell while the
  // slot before a new WR still holds one (IwarpRules::
  // rts_leaves_the_ring_waiting); the engine starts only when it has work
  // of its own, a READ response.
  bool send_engine_idle = false;
  // Completer: retry state and the retransmission timer.
  int retry_left = 0;
  int rnr_left = 0;
  bool rnr_waiting = false;
  uint64_t timer_generation = 0;  // bumped on reset/error: old events void
  bool timer_armed = false;
  int64_t timer_deadline_ns = 0;
  bool timer_event_pending = false;
  uint32_t max_acked_psn = 0;  // the newest PSN a response acknowledged
  bool implicit_nak_pending = false;  // a retry for an implied NAK is out
  uint32_t implicit_nak_psn = 0;
  // Across processes (the UDP transport): when this QP's latest packet
  // left, on the monotonic clock (Fabric::JudgeAckTimeout).
  int64_t udp_sent_ns = 0;
  // Where the fabric keeps the link and flow state of this QP's latest
  // packets (Fabric::Transmit), so that the next packet to the same peer QP
  // needs no look-up.
  LinkFlowCache link_flow;

  // Responder.
  Ring<RecvWqe> rq;
  uint32_t epsn = 0;
  uint32_t msn = 0;
  bool nak_sent = false;  // a sequence NAK is outstanding
  bool in_send = false;   // inside a multi-packet send
  RecvWqe cur_recv;
  uint64_t recv_offset = 0;
  bool in_write = false;  // inside a multi-packet write
  bool drop_msg = false;  // UC: the rest of this message is dropped
  uint64_t write_va = 0;
  uint64_t write_left = 0;
  uint64_t write_len = 0;
  Ring<RdAtomicResource> resources;
  // Write data still to land (placement.cc).
  Ring<PendingChunk> placements;
  // Run in order once no placement is pending (the ACKs and immediate
  // completions of writes).
  std::vector<std::function<void(QpCore&)>> after_placement;
  uint64_t placement_generation = 0;
  bool ack_pending = false;
  uint32_t ack_pending_psn = 0;
  uint64_t ack_generation = 0;

  // Counters tests can read.
  uint64_t packets_sent = 0;
  uint64_t packets_received = 0;
  uint64_t packets_dropped = 0;
  uint64_t retransmissions = 0;
  uint64_t timeouts = 0;
  uint64_t timeouts_held = 0;  // expiries not counted: the peer had not run
  uint64_t rnr_naks = 0;       // RNR NAKs received (requester)
  uint64_t naks_received = 0;  // other NAKs received (requester)
  uint64_t naks_sent = 0;      // NAKs of every kind sent (responder)
  uint64_t no_recv_drops = 0;  // UD/UC messages dropped: no receive posted
  uint64_t qkey_drops = 0;     // UD datagrams dropped: Q_Key mismatch
  uint64_t msg_drops = 0;      // UC messages dropped (gap, rkey, access)
};

inline bool QpOrder::operator()(const QpCore* a, const QpCore* b) const {
  return a->qpn < b->qpn;
}

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_STATE_H_
