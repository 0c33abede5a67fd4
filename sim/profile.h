// Sim profiles: the one place where the simulated device's behaviour differs
// by the implementation it models. "ibta" follows the spec and what
// rdma-unit-test expects of hardware; "rxe" follows kernel rxe where it
// deviates (docs/semantics.md sections 2 and 6).
#ifndef VERBSIM_SIM_PROFILE_H_
#define VERBSIM_SIM_PROFILE_H_

#include <cerrno>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"

namespace verbsim::sim {

// How a device sizes a queue asked for n entries (CQ, send and receive
// queues, SRQ): exactly n, the fewest the spec allows and so the ibta
// profile's choice (a program that relies on more is caught); the smallest
// 2^k - 1 >= n (rxe: a ring of 2^k slots keeps one empty, rxe_queue.c);
// the smallest 2^k >= n (siw).
enum class QueueRounding { kExact, kPowerOfTwoMinusOne, kPowerOfTwo };

// The checks ibv_post_send makes on each work request before anything is
// sent. They belong to the provider library in rdma-core (user space), so
// they differ by provider more than the wire does: each field is one rule,
// true where the spec's rule (docs/semantics.md section 5) applies, and a
// profile sets the fields its library does otherwise. CheckSendWr
// (sim/qp_verbs.cc) is the one routine that applies them; the fuzz model
// keeps its own copy of these rules (fuzz/model.h PostSendRules). A new
// provider's rule is a new field here, its default the spec's.
struct PostSendChecks {
  // IBV_SEND_INLINE only with sends and RDMA writes (rdma-core
  // providers/rxe/rxe.c validate_send_wr checks the inline length only, so
  // an inline READ is posted and fails as its response finds no SGE to
  // land in: rxe_comp.c, LOC_PROT_ERR).
  bool inline_needs_send_or_write = true;
  // An atomic needs exactly one 8-byte SGE; otherwise (rxe.c
  // validate_send_wr: `length < 8`) 8 bytes or more in any SGE list, the
  // original value landing in the first 8.
  bool atomic_needs_one_8_byte_sge = true;
  // A misaligned atomic target is refused at post (EINVAL; rxe.c
  // validate_send_wr: `remote_addr & 7`) rather than by the responder
  // (REM_INV_REQ_ERR, IBA 9.4.5).
  bool atomic_target_aligned_at_post = false;
  // A UD post checks remote_qpn: 24 bits, and 0xFFFFFF exactly for a group
  // (rxe.c convert_send_wr copies it unchecked).
  bool ud_remote_qpn_checked = true;
  // A BIND_MW work request for a type 1 window is refused (IBA 10.6.7.2;
  // rxe accepts it: rdma-core's ibv_bind_mw for rxe posts one itself).
  bool type1_bind_wr_refused = true;
  // Opcodes the provider library refuses at post with EINVAL, as a mask of
  // 1 << WrOpcode (rdma-core providers/siw/siw.c map_send_opcode knows only
  // SEND, SEND_WITH_INV, RDMA_WRITE and RDMA_READ).
  uint32_t refused_opcodes = 0;
  // The SGE count a post is checked against: the QP's max_send_sge /
  // max_recv_sge (0), or the library's fixed limit (libsiw push_send_wqe /
  // push_recv_wqe: SIW_MAX_SGE, 6, whatever the QP was created with).
  uint32_t library_sge_limit = 0;
  // Likewise the inline limit: the QP's max_inline_data (0), or the
  // library's (libsiw push_send_wqe: SIW_MAX_INLINE, 80).
  uint32_t library_inline_limit = 0;
  // A full send queue is found before anything about the WR itself
  // (libsiw siw_post_send tests the ring slot's VALID flag before
  // push_send_wqe looks at the WR: ENOMEM wins over EINVAL).
  bool full_queue_checked_first = false;
  // A receive may have no SGE (a zero-byte receive); libsiw push_recv_wqe
  // refuses num_sge 0 (EINVAL).
  bool recv_may_have_no_sge = true;
};

// The behaviour of an iWARP transport (RDMAP/DDP/MPA over TCP, RFC 5040 to
// 5044) where it is not InfiniBand's, as kernel siw implements it (tools/
// guest/known_differences.md "## siw" has what the guest showed). Every
// field's default is InfiniBand's.
struct IwarpRules {
  // A READ reads into its first SGE only: the others are dropped unchecked,
  // the request asks for the first SGE's length, and the completion's
  // byte_len is that length (siw_qp.c siw_activate_tx_from_sq sets a READ's
  // num_sge to 1; siw_qp_tx.c siw_qp_prepare_tx builds the request from
  // sge[0]). docs/fidelity.md, "Differential runs".
  bool read_uses_first_sge = false;
  // A QP reaches RTS only through the connection manager, which hands it
  // the TCP socket (siw_qp.c siw_qp_modify: "no socket", EINVAL); the sim's
  // Endpoint connect marks its QPs so.
  bool rts_needs_cm = false;
  // Entering RTS does not start the send engine (siw_qp.c
  // siw_qp_nextstate_from_idle sets the state only), and libsiw rings the
  // doorbell only when the ring slot before the first new WR is free
  // (providers/siw/siw.c siw_post_send): WRs posted before the CM connected
  // the QP, and every WR after them, wait in the ring until the engine runs
  // for work of its own, a READ response (siw_qp_rx.c: an RDMA READ request
  // starts the send queue, which goes on with the ring), or a flush.
  bool rts_leaves_the_ring_waiting = false;
  // 0: a message is cut into packets of the path MTU. Otherwise the bytes
  // of one TCP segment, which siw fills with one FPDU (siw_qp_tx.c
  // siw_update_tcpseg and siw_prepare_fpdu): the MSS, as siw_create_qp
  // limits GSO to one segment, rounded down to 8 bytes. An FPDU carries
  // its header (20 bytes for a SEND, 16 for a WRITE or READ response:
  // siw's iwarp.h) and 4 of MPA CRC besides its payload, so where the
  // receiver checks a receive's length per FPDU (siw_qp_rx.c
  // siw_send_check_ntoh), a SEND too long for its receive fails LOC_LEN_ERR
  // before any of its bytes are checked against the receive's region.
  uint32_t tcp_segment_bytes = 0;
  // ibv_modify_qp reaches a driver that takes only the state and the access
  // flags (siw_verbs.c siw_verbs_modify_qp): no transition table, no
  // required or forbidden attributes, no ranges; only the kernel's core
  // checks of ports come first (sim/qp_modify_iwarp.cc).
  bool takes_state_only = false;
  // ibv_query_qp reports what was set. siw_verbs.c siw_query_qp never fills
  // qp_state (0: RESET), takes path_mtu from the netdev (the port's active
  // MTU), has no PSN (0), and reports fixed access flags LOCAL_WRITE |
  // REMOTE_WRITE | REMOTE_READ.
  bool query_reports_qp_attrs = true;
  // SENDs and RDMA WRITEs complete once transmitted: RDMAP has no ACK
  // (siw_qp_tx.c siw_qp_sq_process completes them SUCCESS after tx), so a
  // remote error never fails them. The sim still completes them when the
  // responder's acknowledgement returns (by then the data is placed, as it
  // is on a TCP path by the time siw's completion is polled); what this
  // changes is a TERMINATE: the SENDs and WRITEs sent before it complete
  // SUCCESS, the one that caused it included.
  bool completes_on_transmit = false;
  // An error the responder detects ends the connection with a TERMINATE
  // (siw_qp_rx.c siw_init_terminate; siw_qp_cm_drop on the peer): both QPs
  // go to ERR and the requester's outstanding WRs (a READ among them) are
  // flushed rather than failed with a remote status. A SEND finding no
  // receive is such an error: iWARP has no RNR (siw_qp_rx.c siw_rqe_get).
  bool remote_errors_terminate = false;
  // The responder enforces the QP's REMOTE_* access flags (siw stores them,
  // siw_qp.c, but its receive path never looks at them).
  bool checks_qp_access = true;
  // An RDMA READ needs REMOTE_READ on the source MR (siw_qp_tx.c
  // siw_qp_sq_proc_tx checks a READ RESPONSE's source with no permission
  // bits: key, PD and bounds only).
  bool read_needs_remote_read = true;
  // Address handles exist (libsiw siw_create_ah: none, EOPNOTSUPP), and QP
  // types other than RC (siw_verbs.c siw_create_qp: EOPNOTSUPP).
  bool has_ah = true;
  bool rc_only = false;
  // libsiw writes an INLINE WR of any opcode and a fenced READ into the send
  // ring; the kernel refuses to start them (siw_qp.c siw_activate_tx: INLINE
  // only for SEND and WRITE, "cannot fence read"), leaving the WR in the
  // ring: a doorbell that starts it answers EINVAL (siw_verbs.c
  // siw_post_send, when the send engine is idle), nothing after it is sent,
  // and only the flush of a move to ERR completes it and what follows.
  bool refuses_at_activation = false;
  // A WR that fails as it is to be sent (a bad local SGE: siw_qp_tx.c
  // siw_qp_sq_process) completes LOC_QP_OP_ERR and ends the connection (a
  // TERMINATE to the peer, which goes to ERR), but the QP itself stays in
  // RTS with its send and receive processing suspended: nothing is flushed,
  // later WRs wait in the rings, until the application moves it to ERR
  // (siw_qp_cm_drop clears the endpoint's QP, so siw_qp_llp_close never
  // runs for it). The responder's READ RESPONSE is such a transmit too: a
  // READ whose source fails the check (siw_qp_tx.c siw_qp_sq_proc_tx)
  // leaves the responder suspended, its receives unflushed, while the
  // requester gets the TERMINATE. While suspended so, the first WR posted to an empty ring
  // is moved into the send slot by its doorbell (siw_verbs.c siw_post_send
  // -> siw_activate_tx), freeing its ring slot, and is never sent. The
  // flush of the later move to ERR completes the outstanding READs first,
  // then the WR in the slot, then the ring (siw_qp.c siw_sq_flush): a READ
  // in the slot is an outstanding READ too (siw_activate_tx puts it there),
  // so it is completed twice, any other WR once (both seen on siw0). A WR
  // the kernel refuses to start (refuses_at_activation) is refused by that
  // doorbell and stays in the ring.
  bool transmit_errors_keep_rts = false;
  // The send engine, done with a transmission (a WR of its own, or a READ
  // RESPONSE for the peer), moves on to the next WR of the ring; one it
  // refuses (refuses_at_activation) ends the connection there (siw_qp_tx.c
  // siw_qp_sq_process: siw_activate_tx fails, siw_sq_resume calls
  // siw_qp_cm_drop). As for a transmit error, the QP stays in RTS,
  // suspended, nothing flushed, and the peer goes to ERR and is flushed; a
  // TERMINATE the peer sends meanwhile never arrives, as the socket is gone.
  // The refusing doorbell of the WR's own post (an empty ring) drops
  // nothing: that WR's EINVAL is the post's answer.
  bool drops_connection_at_refused_head = false;
};

// Where the spec leaves order and timing open (docs/ordering.md has each
// rule, its source and what each device does). Each field false is the weak
// choice, which the ibta profile takes so that code relying on an order the
// spec does not give fails on some seed; rxe and siw gave the strong outcome
// wherever they were tried.
struct MemoryModel {
  // Rule B1: a non-inline RC send or write is copied out of its buffers
  // during the post (rxe_req.c runs in the post call), or each packet's
  // bytes are read as the packet crosses the link, after the post returned
  // (an HCA's DMA; ibv_post_send(3): a buffer is the device's until the
  // completion).
  bool gathers_at_post = false;
  // Rule W2: an RDMA write's data is all in memory before the QP's next
  // request executes (rxe_resp.c, siw_qp_rx.c place in order), or it may
  // land after the data of later writes until a send, read or atomic of the
  // QP, a completion, an ACK or an overlapping write forces it out.
  bool places_messages_in_order = false;
  // Rule R3: an RDMA read's data is fetched when the request executes, or
  // later, after later sends, writes and atomics of the QP have executed
  // (read relaxed ordering; IBV_SEND_FENCE on the later WR rules it out).
  bool fetches_reads_in_order = false;
};

// Which empty regions ibv_reg_mr registers.
enum class ZeroLengthMr {
  kRefused,  // none (EINVAL)
  // Those whose address lies inside a page: the kernel's ib_umem_get counts
  // the pages a range touches, and an empty range at an address inside a
  // page touches that page, while one at a page boundary touches none
  // (EINVAL). rxe registers through it; siw_reg_user_mr refuses every empty
  // region itself.
  kIfInsideAPage,
};

// The opcode an error completion reports. ibv_poll_cq(3): when the status
// is not SUCCESS only wr_id, status, qp_num and vendor_err are valid, so
// portable code never reads the opcode of an error completion.
enum class ErrorCompletionOpcode {
  // One of the other queue: RECV for a send WR, SEND for a receive, so that
  // code that dispatches an error completion on its opcode misroutes. The
  // ibta profile's: mlx5 writes no opcode for an error CQE (providers/mlx5/
  // cq.c, MLX5_CQE_REQ_ERR / MLX5_CQE_RESP_ERR: the caller's ibv_wc keeps
  // what it held).
  kOtherQueues,
  // 0, IBV_WC_SEND, whatever the WR (kernel 6.1 rxe_comp.c make_send_cqe
  // and rxe_resp.c do_complete clear the CQE and fill the opcode only on
  // success; read_error_opcode=0 recv_error_opcode=0 on rxe0).
  kZero,
  // The WR's (siw_qp.c siw_sqe_complete and siw_rqe_complete keep it,
  // rdma-core providers/siw/siw.c copy_cqe copies it).
  kTheWrs,
};

// The errno of a create that would pass one of the device's limits on how
// many objects of a kind it holds at once (DeviceAttr max_pd, max_cq,
// max_qp, max_srq, max_mr, max_mw, max_ah; for ibv_attach_mcast
// max_mcast_grp, max_mcast_qp_attach and max_total_mcast_qp_attach). A size
// past a per-object limit (max_cqe, max_qp_wr, max_sge, max_srq_wr, ...) is
// EINVAL on every profile. The defaults are ENOMEM, the spec's
// "insufficient resources" and what siw answers (siw_verbs.c: each
// create's atomic_inc_return(&sdev->num_*) > SIW_MAX_*); rxe's pools refuse
// with EINVAL (docs/reliability.md "## Bounded memory" has each source).
// Objects are counted per device, as both drivers count them.
struct ObjectLimitErrnos {
  int pd = ENOMEM;
  int cq = ENOMEM;
  int qp = ENOMEM;
  int srq = ENOMEM;
  int mr = ENOMEM;
  int mw = ENOMEM;
  int ah = ENOMEM;
  int mcast = ENOMEM;  // any of the three multicast limits
};

struct SimProfile {
  std::string name;
  // What ibv_query_device reports; limits the sim enforces (a test may
  // lower them: a SimProvider constructed from FabricOptions whose
  // profile.device it changed counts to the lowered limits, which is how
  // sim/tests/limits_test.cc reaches them).
  DeviceAttr device;
  // errno of a create past a limit on an object count (ObjectLimitErrnos).
  ObjectLimitErrnos limit_errno;
  PortAttr port;
  // Status of a send/write/read/atomic whose local SGE has a bad lkey.
  WcStatus bad_lkey_status = WcStatus::kLocProtErr;
  // ... of an RDMA READ whose sink SGE fails (siw: LOC_PROT_ERR while a
  // failed send or write is LOC_QP_OP_ERR, siw_qp_tx.c).
  WcStatus read_sink_status = WcStatus::kLocProtErr;
  // ... when the data of a send or write is gathered and its lkey names no
  // MR of the QP's PD (rxe_req.c: copy_data's key lookup fails, and rxe
  // completes LOC_QP_OP_ERR; a range or access failure stays
  // bad_lkey_status).
  WcStatus gather_key_lookup_status = WcStatus::kLocProtErr;
  // Status of the receive whose buffer failed the local access check (bad
  // lkey, outside its MR, MR without LOCAL_WRITE). The sender sees REM_OP_ERR.
  WcStatus recv_access_status = WcStatus::kLocProtErr;
  // Status of the receive whose buffer is too small for the message. The
  // sender sees REM_INV_REQ_ERR either way.
  WcStatus recv_too_small_status = WcStatus::kLocLenErr;
  // ... and the sender's (the NAK the responder sends).
  WcStatus recv_too_small_sender_status = WcStatus::kRemInvReqErr;
  // Whether a zero-length RDMA read/write skips the rkey check (rxe: yes; the
  // spec allows either).
  bool zero_length_skips_rkey_check = true;
  // Requester status when the responder QP lacks the REMOTE_* access flag the
  // opcode needs (NAK invalid request on rxe).
  WcStatus qp_access_denied_status = WcStatus::kRemInvReqErr;
  // A UD send larger than the path MTU: LOC_LEN_ERR at the requester (what
  // rdma-unit-test expects of hardware), or kSuccess: not sent, the requester
  // completes SUCCESS (rxe_req.c, citing C10-93.1.1).
  WcStatus ud_oversize_status = WcStatus::kLocLenErr;
  // Status of a LOCAL_INV that names nothing it may invalidate.
  WcStatus local_inv_error_status = WcStatus::kLocQpOpErr;
  // IBA 10.2.5: a remote Q_Key with the high bit set means the sending QP's
  // own Q_Key (rxe uses the value as given).
  bool honours_controlled_qkey = true;
  // A UD receive too small for GRH + payload: kSuccess means the datagram is
  // dropped and the receive stays posted (rdma-unit-test; rxe since 6.12);
  // otherwise the receive completes with this status and the QP goes to ERR
  // (rxe 6.1: LOC_QP_OP_ERR).
  WcStatus ud_recv_too_small_status = WcStatus::kSuccess;
  // A UC receive too small for the message (the QP goes to ERR).
  WcStatus uc_recv_too_small_status = WcStatus::kLocLenErr;
  // ibv_rereg_mr is supported (rxe before 6.5 and siw: EOPNOTSUPP).
  bool supports_rereg = true;
  // ibv_resize_cq is supported (siw: EOPNOTSUPP, libsiw has no resize).
  bool resizes_cq = true;
  // Whether a verb passes the object's handle to the kernel, where a handle
  // that names nothing is ENOENT (docs/drop-in-handles.md). rxe and siw run
  // the receive posts and the CQ poll in user space and never pass it, so a
  // garbled handle goes unnoticed there; siw runs the CQ notify in user
  // space too. The ibta profile checks every one.
  bool recv_and_poll_check_handle = true;
  bool notify_checks_handle = true;
  // errno of ibv_dereg_mr while windows are bound to the region.
  int dereg_bound_mr_errno = EBUSY;
  // A bind checks that the QP, window and region share the PD (C10-72);
  // rxe 6.1 checks only the type 2 window's PD against the QP's.
  bool bind_checks_pd = true;
  // Invalidation (LOCAL_INV, SEND_WITH_INV) of a type 2 window bound through
  // another QP fails (rdma-unit-test CrossQpInvalidate); rxe allows it.
  bool invalidate_checks_qp = true;
  // IBV_EVENT_QP_LAST_WQE_REACHED when a QP on an SRQ enters ERR (IBA
  // 11.6.3.2); rxe raises it only since 6.12.
  bool raises_last_wqe_reached = true;
  // Kernel 6.1 rxe deviations seen in the guest (tools/guest/
  // known_differences.md has the driver source of each):
  // accesses through a window are checked against the window's bounds
  // (rxe: only the region's);
  bool mw_bounds_checked = true;
  // a type 2 bind's new rkey must keep the window's index (rxe: only its key
  // byte is taken);
  bool bind_checks_rkey_index = true;
  // a SEND_WITH_INV receive reports IBV_WC_WITH_INV and invalidated_rkey
  // (rxe 6.1 sets another bit);
  bool reports_with_inv = true;
  // a multicast datagram reaches group members on the sending device;
  bool mcast_reaches_local_members = true;
  // a multicast datagram reaches the group's members at all (rxe 6.1:
  // rxe_mcast.c joins the group at the link layer only, and the IP stack
  // drops a UDP datagram to a group the host has not joined at IP level,
  // so no member receives it);
  bool delivers_multicast = true;
  // a CQ overrun moves the QPs completing there to ERR (rxe leaves them);
  bool cq_overflow_errors_qps = true;
  // ibv_req_notify_cq never narrows a pending next-completion request to
  // solicited-only (IBA C11-31, C11-32; rxe_req_notify_cq); siw takes the
  // last request as it is (siw_verbs.c siw_req_notify_cq).
  bool cq_notify_keeps_next = true;
  // a solicited-only arming fires for a solicited message or an error
  // completion (IBA C11-31); siw never passes a receive's solicited flag or
  // status to its notification check (siw_qp.c siw_rqe_complete notifies
  // as SIW_WQE_SIGNALLED), so there it fires for neither.
  bool cq_solicited_events = true;
  // a receive posted to a QP in RESET is refused (EINVAL; IBA C10-97.2.1,
  // rxe_post_recv); libsiw writes its receive ring in any state, so on siw
  // the WR is taken (seen on siw0).
  bool refuses_recv_in_reset = true;
  // a receive posted to a QP in ERR is flushed at once. rxe: not at the
  // post, but at the QP's next move to ERR (FlushReceivesPostedInError);
  // siw: never.
  bool flushes_recv_posted_in_err = true;
  // The opcode an error completion reports (ErrorCompletionOpcode).
  ErrorCompletionOpcode error_completion_opcode =
      ErrorCompletionOpcode::kOtherQueues;
  // When a send-queue slot is free again, which is when ibv_post_send
  // stops answering ENOMEM (ibv_post_send(3) leaves it open: the queue
  // holds max_send_wr "outstanding" WRs). true: a WR holds its slot after
  // it completed on the wire until a completion of it or of a later WR of
  // the same send queue, successful or not (a flush too), is polled from
  // the CQ; RESET frees every slot. So a program that never signals, or
  // never polls, gets ENOMEM once max_send_wr WRs were posted (mlx5:
  // providers/mlx5/cq.c moves the SQ's tail past a WQE only when a CQE
  // naming it or a later WQE is polled, and providers/mlx5/qp.c
  // mlx5_post_send refuses with ENOMEM when mlx5_wq_overflow finds head -
  // tail at max_post). false: the slot is free once the WR completes,
  // polled or not (rxe: rxe_comp.c advances the send queue's consumer
  // index as it completes each WQE, signaled or not; siw frees it earlier
  // still, when the kernel takes the SQE to send it: siw_qp.c
  // siw_activate_tx_from_sq clears the SQE's VALID flag, the one libsiw's
  // siw_post_send (rdma-core providers/siw/siw.c) tests for a free slot).
  // The strict choice is the ibta profile's.
  bool sq_slots_held_until_polled = true;
  // a send posted to a QP in ERR is flushed at once (siw: accepted and
  // never completed: libsiw writes the ring, and siw_post_send for a user
  // QP in ERROR flushes only the WRs it is handed, none; seen in the guest).
  bool flushes_send_posted_in_err = true;
  // errno of ibv_create_ah naming an sgid_index with no GID (rxe: ENODATA
  // from the kernel's GID cache, its table having 1024 mostly empty slots).
  int unused_sgid_errno = EINVAL;
  // A SEND_WITH_INV whose rkey cannot be invalidated: the receive completes
  // REM_INV_REQ_ERR and the responder QP goes to ERR; the sender is NAKed
  // (remote access error), or, on rxe 6.1, acknowledged: the message was
  // taken before the invalidation failed (rdma-unit-test
  // NoNakOnSendInvalidateErrors), so its WR completes SUCCESS.
  bool naks_failed_send_invalidate = true;
  // The IPv4 TTL of a RoCEv2 packet: -1 for the AH's hop limit; rxe 6.1
  // takes the route's (rxe_net.c prepare4: ip4_dst_hoplimit, 64 by default).
  int ipv4_ttl = -1;
  // Post-time checks of ibv_post_send (PostSendChecks above).
  PostSendChecks post_send;
  // The local SGEs of a READ or an atomic are checked when the WR starts
  // (nothing is sent when they fail), or when the response arrives (rxe:
  // rxe_comp.c copy_data; siw: siw_qp_rx.c siw_proc_rresp), so an atomic
  // with a bad lkey is executed by the responder before the requester
  // fails it, and a remote error comes before a bad sink.
  bool checks_response_sges_on_arrival = false;
  // A fenced WR that is sent again (a retry after a timeout or an RNR NAK)
  // waits, like a new one, until no READ or atomic is in flight, counting
  // those posted after it (rxe_req.c rxe_wqe_is_fenced compares the free
  // initiator-depth credits with max_rd_atomic). Those cannot complete
  // before it, so the QP stalls: nothing is sent again, no retry counts
  // down and the WRs never complete until the QP moves to ERR. The spec's
  // fence (IBA 10.8.3.3) waits for earlier READs and atomics only.
  bool fence_waits_for_later_reads_on_retry = false;
  // The flush of a QP entering ERR completes every WR left in its send
  // queue WR_FLUSH_ERR, one that had already failed but waited behind an
  // earlier WR included (rxe_comp.c rxe_drain_resp_pkts sets the status of
  // each); otherwise such a WR keeps its own status.
  bool flush_overrides_failures = false;
  // A send or write sent again (after a timeout, an RNR or a sequence NAK)
  // reads its buffers again, through their keys (rxe_req.c builds every
  // packet with copy_data): if an MR it names was deregistered meanwhile,
  // the retry fails the WR with gather_key_lookup_status (or, for a range
  // no longer covered, bad_lkey_status).
  bool regathers_on_retransmit = false;
  // A send's or write's local SGEs are checked as a whole before anything
  // is sent, or packet by packet as each is built (rxe_req.c finish_packet:
  // the packets before the one that fails go out, then the WR fails).
  bool gathers_per_packet = false;
  // When a receive's or a READ response's SGE fails its check, the bytes of
  // the payload at hand that land in the SGEs before it are in memory:
  // devices copy SGE by SGE and look each key up as they reach it (rxe_mr.c
  // copy_data, for a receive and for each READ response packet; siw_qp_rx.c
  // siw_proc_send). Otherwise nothing of that payload is placed.
  bool scatters_up_to_a_failing_sge = false;
  // With gathers_per_packet, for an RDMA WRITE: the responder answers each
  // packet before the requester builds the next, so a remote error on a
  // packet sent before the one whose local check fails completes the WR
  // with that remote error. rxe on one device runs the responder and then
  // the completer at once when a packet is queued to them (rxe_resp.c
  // rxe_resp_queue_pkt, rxe_comp.c rxe_comp_queue_pkt), so the NAK is
  // handled before the requester's next packet; the requester's own
  // failure comes only when no answer has failed the WR. Not for a SEND:
  // when its receive buffer fails at the responder, rxe0 answered with the
  // requester's local error in some runs and the responder's NAK in others
  // (two programs of the differential set showed both), so the sim keeps
  // the local error there (found by the differential runs).
  bool answers_arrive_between_packets = false;
  // During an RNR wait (IBA 9.7.5.2.8) the requester sends no WR again
  // until the RNR timer fires, but it goes on with WRs not yet sent: their
  // packets go out (the responder drops them, waiting for the NAKed PSN)
  // and a WR that fails its local checks as it is built fails then. rxe's
  // requester checks for a pending retry only when no RNR wait is set
  // (rxe_req.c rxe_requester, wait_for_rnr_timer) and otherwise takes the
  // next WQE. A WR failing there stops the requester (rxe_req.c: the
  // requester's error state), so the RNR retry never goes out and, with
  // the retried WR at the head of the queue, nothing completes until the
  // QP moves to ERR (found by the differential runs). Otherwise the
  // requester does nothing until the RNR timer fires.
  bool sends_new_wrs_during_rnr_wait = false;
  // ibv_post_send before RTS (RESET, INIT, RTR): refused, nothing kept
  // (false), or, as libibverbs' rxe does, every valid WR is written into
  // the send queue and then the doorbell is refused, EINVAL in place of any
  // WR's own answer (providers/rxe/rxe.c rxe_post_send rings it after the
  // loop, always; rxe_verbs.c rxe_post_send refuses it below RTS). The WRs
  // hold their slots and wait: entering RTS does not run the requester
  // (rxe_qp.c rxe_qp_modify), the next doorbell does, on any post_send in
  // RTS, and a move to ERR flushes them.
  bool keeps_send_wrs_posted_before_rts = false;
  // A one-packet RDMA WRITE with immediate takes its receive WQE before
  // the responder checks the R_Key (rxe_resp.c: check_resource runs before
  // check_rkey for an opcode that needs a receive), so when that check
  // fails the receive completes with REM_ACCESS_ERR before the QP's flush.
  // A longer one takes its receive at the last packet, which the failure
  // at the first never reaches. Otherwise the receive is only flushed.
  bool failed_write_imm_completes_its_recv = false;
  // --- Registration (ibv_reg_mr), as kernel 6.1 ib_core, rxe and siw
  // answered it in the guest (tools/guest/known_differences.md):
  // an MR's rkey is its lkey (rxe_mr.c rxe_mr_init, siw_verbs.c
  // siw_reg_user_mr: one key names the MR both ways);
  bool one_key_for_both = false;
  // ... and an MR without REMOTE_* access has rkey 0 (rxe_mr.c);
  bool rkey_needs_remote_access = false;
  // access bits accepted and without effect (ib_core: HUGETLB; rdma-core's
  // ibv_reg_mr drops the optional range 20..29 a device does not support);
  uint32_t ignored_access_bits = 0;
  // ZERO_BASED through ibv_reg_mr: refused (EINVAL; it needs an iova) or
  // accepted and ignored (the kernel drivers pass the address as the iova);
  bool accepts_zero_based = false;
  // errno of ON_DEMAND on a device without on-demand paging (ib_core's
  // ib_check_mr_access: EINVAL; the sim's own: EOPNOTSUPP);
  int on_demand_errno = EOPNOTSUPP;
  // which zero-length MRs can be registered. The spec leaves it open, so
  // the ibta profile refuses every one, the strict choice.
  ZeroLengthMr zero_length_mr = ZeroLengthMr::kRefused;
  // ibv_query_srq and resizing an SRQ (ibv_modify_srq with IBV_SRQ_MAX_WR)
  // are the provider library's to offer: libsiw has neither, and answers
  // EOPNOTSUPP (rdma-core providers/siw/siw.c; seen on siw0).
  bool queries_srq = true;
  bool resizes_srq = true;
  // errno of a range that wraps the address space: ib_umem_get's overflow
  // check (EINVAL), or siw, which pins page by page (siw_umem_get: EFAULT).
  int wrapping_range_errno = EINVAL;
  // Modify-QP attributes whose value is not range-checked (rxe_qp.c
  // rxe_qp_chk_attr checks port, caps, AV, path MTU, max_rd_atomic and
  // timeout only): the value is taken as given.
  uint32_t modify_unchecked_attrs = 0;
  // What a queue asked for n entries holds and reports (QueueRounding).
  QueueRounding queue_rounding = QueueRounding::kExact;
  // A send WQE is sized for max(max_send_sge * 16, max_inline_data) bytes
  // and both are reported from that size (rxe_qp.c rxe_qp_init_req).
  bool send_wqe_sizes_sge_and_inline = false;
  // iWARP instead of InfiniBand transport rules (IwarpRules above).
  IwarpRules iwarp;
  // Order and visibility where the spec leaves a choice (MemoryModel above).
  MemoryModel memory;
};

// The entries a queue asked for `n` holds under `rounding`.
uint32_t RoundQueue(QueueRounding rounding, uint32_t n);
// The capacities a QP asked for `asked` holds (and ibv_query_qp reports).
QpCap GrantQpCap(const SimProfile& profile, QpCap asked);

// An sgid_index of an address vector (ibv_create_ah, the AV of
// ibv_modify_qp): EINVAL past the port's GID table, the profile's
// unused_sgid_errno for an empty entry (every entry but 0).
absl::Status CheckSgidIndex(const SimProfile& profile, int sgid_index);

// The built-in profiles by name; "" means "ibta".
absl::StatusOr<SimProfile> ProfileByName(absl::string_view name);
std::vector<std::string> ProfileNames();

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_PROFILE_H_
