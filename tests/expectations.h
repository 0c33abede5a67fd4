// The one table of provider differences the conformance suite knows about.
// Tests never branch on a provider's name: they ask this table what the
// provider under test is allowed to do (docs: docs/semantics.md sections 2, 5, 6
// and 9). Each completion-status entry is the set of statuses a conforming
// provider may report; most sets have one member.
#ifndef VERBSIM_TESTS_EXPECTATIONS_H_
#define VERBSIM_TESTS_EXPECTATIONS_H_

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/types.h"

namespace verbsim {
namespace testing {

using StatusSet = std::vector<WcStatus>;

// Whether a behaviour is known to hold, known not to hold, or not pinned down
// for the provider (the test is then skipped with that reason).
enum class Known { kYes, kNo, kUnknown };

struct Expectations {
  // Which row of the table: "ibta", "rxe", "siw".
  std::string profile;

  // --- Devices --------------------------------------------------------------
  // How many devices ListDevices() lists at least.
  int min_devices = 1;
  // Remote atomics supported (DeviceAttr::atomic_cap != NONE).
  bool has_atomics = true;
  // The modify-QP transitions RTS -> SQD -> RTS are supported.
  bool supports_sqd = true;

  // --- Memory registration --------------------------------------------------
  // Every MR has an lkey different from its rkey (the sim keys them
  // separately); kNo: one key names an MR both ways (rxe, siw, mlx5).
  Known lkey_differs_from_rkey = Known::kYes;
  // An MR without REMOTE_* access gets rkey 0 (rxe_mr.c).
  bool rkey_needs_remote_access = false;
  // A zero-length MR can be registered (rdma-unit-test SupportsZeroLengthMr);
  // the ibta profile refuses it, as the kernel does for a page-aligned one.
  Known zero_length_mr = Known::kNo;
  // The same at an address inside a page (64 bytes in): the kernel's
  // ib_umem_get counts the pages a range touches, and such an empty range
  // touches one, so rxe registers it; siw refuses every empty region.
  Known zero_length_mr_inside_a_page = Known::kNo;
  // Access bits RegMr() must reject as unknown (EINVAL). Real devices accept
  // some vendor bits (HUGETLB, FLUSH_*, the optional range 20..29).
  uint32_t rejected_access_bits = ~kAccessAllKnown;
  // Bits outside the known flags that RegMr() accepts without effect
  // (HUGETLB; the optional range, which libibverbs drops). A bit in neither
  // set is not tried.
  uint32_t ignored_access_bits = 0;
  // Extra access bits (beyond LOCAL_WRITE and the three REMOTE_*): those a
  // registration with LOCAL_WRITE must accept, and those it must refuse
  // (EINVAL or EOPNOTSUPP). A bit in neither set is not tried. The sim has
  // no on-demand paging, and ZERO_BASED needs an iova (ibv_reg_mr_iova).
  uint32_t supported_extra_access = kAccessMwBind;
  uint32_t refused_extra_access = kAccessZeroBased | kAccessOnDemand;

  // --- Completion statuses (docs/semantics.md section 2) -------------------------
  // Requester of a write/read/atomic with a bad rkey.
  StatusSet bad_rkey = {WcStatus::kRemAccessErr};
  // Requester of a zero-length read/write with a bad rkey: SUCCESS, a
  // zero-byte access needs no valid rkey (IBA C9-88), on the sim and rxe;
  // other hardware: not pinned down (rdma-unit-test allows either).
  StatusSet zero_length_bad_rkey = {WcStatus::kSuccess};
  // Requester whose local SGE has a bad lkey, lies outside its MR or uses an
  // MR of another PD.
  StatusSet bad_lkey = {WcStatus::kLocProtErr};
  // Receive lkey bad / address outside its MR / MR deregistered / MR without
  // LOCAL_WRITE: the sender's and the receiver's status.
  StatusSet recv_prot_sender = {WcStatus::kRemOpErr};
  StatusSet recv_prot_receiver = {WcStatus::kLocProtErr};
  // Receive buffer too small for the message.
  StatusSet recv_too_small_sender = {WcStatus::kRemInvReqErr};
  StatusSet recv_too_small_receiver = {WcStatus::kLocLenErr};
  // Payload bytes of a SEND's first packet: 0 for the path MTU; siw fills a
  // TCP segment per FPDU (with the guest's 9000-byte netdev MTU, 8920).
  // A receive's length and region are checked per packet, the length first.
  uint32_t send_segment_bytes = 0;
  // No receive posted, rnr_retry exhausted.
  StatusSet rnr_exceeded = {WcStatus::kRnrRetryExcErr};
  // Peer silent (reset or destroyed), retry_cnt exhausted.
  StatusSet retry_exceeded = {WcStatus::kRetryExcErr};
  // Atomic target not 8-byte aligned.
  StatusSet misaligned_atomic = {WcStatus::kRemInvReqErr};
  // ... or refused at post (EINVAL, nothing sent: rdma-core's rxe.c
  // validate_send_wr, which also takes any SGE list of 8 bytes or more).
  bool misaligned_atomic_refused_at_post = false;
  bool atomic_takes_any_sge_list_of_8_bytes = false;
  // An atomic whose local SGE fails its check is executed by the responder
  // first (rxe checks the SGE when the response arrives).
  bool atomic_executes_before_local_check = false;
  // A multi-packet send or write whose local SGE leaves its MR: nothing is
  // sent, or (rxe_req.c checks per packet) the packets before the one that
  // crosses the end are.
  bool local_error_sends_earlier_packets = false;
  // An IBV_SEND_INLINE RDMA READ: refused at post (empty), or posted and
  // completed with this status (rxe: LOC_PROT_ERR).
  StatusSet inline_read = {};
  // Remote QP lacks the REMOTE_* access flag of the opcode: the sim's ibta
  // profile answers REM_INV_REQ_ERR on every seed (the QP does not support
  // the operation: an invalid request, as rxe); other hardware answers "a
  // remote error", which one not pinned down (docs/semantics.md section 10).
  StatusSet remote_qp_access = {WcStatus::kRemInvReqErr};
  // Remote MR lacks REMOTE_WRITE / REMOTE_READ / REMOTE_ATOMIC.
  StatusSet remote_mr_access = {WcStatus::kRemAccessErr};
  // RDMA read into a local MR without LOCAL_WRITE.
  StatusSet read_into_readonly_mr = {WcStatus::kLocProtErr};
  // An rkey of an MR registered in another PD than the responder QP's: an
  // R_Key violation, REM_ACCESS_ERR, on the sim and rxe on every seed;
  // other hardware may answer REM_OP_ERR (rdma-unit-test expects it for an
  // MR moved to another PD by rereg).
  StatusSet rkey_of_other_pd = {WcStatus::kRemAccessErr};
  // An error completion's opcode is its WR's (siw); kNo: it is not, as
  // ibv_poll_cq(3) allows (mlx5 leaves it unwritten, rxe 6.1 says 0, the
  // ibta profile says the other queue's opcode).
  Known error_completion_has_wr_opcode = Known::kNo;
  // Send with invalidate naming a bad rkey: the sender's status, and the
  // receiver's (an empty set: not specified, not checked).
  StatusSet send_inv_bad_rkey_sender = {WcStatus::kRemAccessErr};
  StatusSet send_inv_bad_rkey_receiver = {};

  // --- Transports and queues (docs/semantics.md sections 5, 6) -------------------
  bool has_ud = true;
  bool has_uc = true;
  bool has_srq = true;
  bool has_mw = true;
  bool has_multicast = true;
  // Qp::QueryCounters answers (a device counts per port, not per QP).
  bool counts_per_qp = true;
  // A UD send larger than the path MTU: the requester's status (SUCCESS:
  // not sent, rxe_req.c citing C10-93.1.1; LOC_LEN_ERR: rdma-unit-test's
  // expectation of hardware). The receiver sees nothing either way.
  StatusSet ud_oversize = {WcStatus::kLocLenErr};
  // A UD receive too small for GRH + payload: the receiver's status, or
  // empty: the datagram is dropped and the receive stays posted.
  StatusSet ud_recv_too_small_receiver = {};
  // A UC receive too small for the message: the receiver's status.
  StatusSet uc_recv_too_small_receiver = {WcStatus::kLocLenErr};
  // The IPv4 TTL a RoCEv2 datagram arrives with: -1 for the AH's hop limit
  // (rxe: the route's, 64).
  int ipv4_ttl = -1;
  // A remote Q_Key with the high bit set means the sending QP's Q_Key.
  bool honours_controlled_qkey = true;
  // An SRQ QP entering ERR raises IBV_EVENT_QP_LAST_WQE_REACHED.
  bool raises_last_wqe_reached = true;

  // --- Memory windows and re-registration -----------------------------------
  // A LOCAL_INV that names nothing invalidatable (a type 1 window, an unbound
  // window, a region from reg_mr, a stale key).
  StatusSet local_inv_refused = {WcStatus::kLocQpOpErr};
  // ibv_rereg_mr is supported (it keeps the keys; what they grant changes).
  bool has_rereg = true;
  // errno of DeregMr while windows are bound to the region.
  int dereg_bound_mr_errno = EBUSY;
  // Bind checks that the QP, window and region share a PD (C10-72), and
  // invalidation checks the window was bound through the invalidating QP.
  bool bind_checks_pd = true;
  bool invalidate_checks_qp = true;
  // Deviations of kernel 6.1 rxe (sim/profile.h has the same fields):
  // accesses through a window are held to the window's bounds;
  bool mw_bounds_checked = true;
  // a type 2 bind's rkey must keep the window's index;
  bool bind_checks_rkey_index = true;
  // a BIND_MW work request for a type 1 window is EINVAL;
  bool refuses_type1_bind_wr = true;
  // a SEND_WITH_INV receive reports WITH_INV and invalidated_rkey;
  bool reports_with_inv = true;
  // UD posts check remote_qpn;
  bool checks_ud_remote_qpn = true;
  // multicast reaches group members on the sending device;
  bool mcast_reaches_local_members = true;
  // multicast reaches any member (rxe 6.1 without an IP-level join: no);
  bool delivers_multicast = true;
  // a CQ overrun moves its QPs to ERR;
  bool cq_overflow_errors_qps = true;
  // a receive posted in ERR is flushed at once.
  bool flushes_recv_posted_in_err = true;
  // a WR that failed behind an outstanding one is completed WR_FLUSH_ERR by
  // the flush of a move to ERR (rxe_comp.c rxe_drain_resp_pkts), not with
  // its own status;
  bool flush_overrides_failures = false;
  // a READ whose sink runs out of its MR partway places the response
  // packets before the first that does not fit (rxe_comp.c copy_data per
  // packet); elsewhere the sink is checked whole and nothing is placed;
  bool places_read_packets_before_a_bad_one = false;
  // a receive, or a READ response, whose SGE list fails at a later SGE has
  // the bytes that land in the SGEs before it in memory (rxe_mr.c copy_data,
  // siw_qp_rx.c siw_proc_send: SGE by SGE); elsewhere nothing of it;
  bool places_sges_before_a_failing_one = false;
  // A READ reads into its first SGE only: the request asks for that SGE's
  // length, the other SGEs are neither checked nor filled (siw: siw_qp.c
  // siw_activate_tx_from_sq).
  bool read_uses_first_sge = false;
  // an RDMA WRITE whose local SGE fails partway sends the packets before
  // the one that fails, and the responder's answer to them comes first: a
  // remote error there completes the WR (rxe on one device runs the
  // responder and the completer as each packet is queued);
  bool remote_error_beats_a_later_local_error = false;
  // a send retried after its MR was deregistered reads the MR again and
  // fails with gather_key_lookup (rxe_req.c copy_data on every packet);
  bool regathers_on_retransmit = false;
  // a fenced READ is refused when the device starts it: post_send says
  // EINVAL, the WR stays in the send ring, blocks what follows and is
  // flushed by a move to ERR (siw_activate_tx: "cannot fence read");
  bool refuses_fenced_read = false;
  // a fenced WR sent again after an RNR NAK or a timeout waits for READs
  // posted after it, which wait for it: the QP stalls until ERR (rxe,
  // sim/profile.h fence_waits_for_later_reads_on_retry);
  bool fence_retry_stalls = false;
  // a WR posted during an RNR wait is started then, and one that fails its
  // local checks stops the requester: the RNR retry never goes out and
  // nothing completes until ERR (rxe, sim/profile.h
  // sends_new_wrs_during_rnr_wait); elsewhere it waits for the retry;
  bool transmit_failure_in_rnr_wait_stalls = false;
  // a one-packet WRITE with immediate whose R_Key fails at the responder
  // completes the receive it took with REM_ACCESS_ERR before the flush
  // (rxe, sim/profile.h failed_write_imm_completes_its_recv);
  bool failed_write_imm_completes_its_recv = false;
  // where it is not: a later move to ERR flushes it (rxe: each move to ERR
  // runs the responder, which drains the receive queue; siw: ERROR is
  // final and a move to it does nothing).
  bool err_move_flushes_recv_posted_in_err = true;
  // a send posted in ERR is flushed at once (siw: taken, never completed).
  bool flushes_send_posted_in_err = true;
  // errno of CreateAh with an sgid_index that has no GID.
  int unused_sgid_errno = EINVAL;
  // errno of ibv_reg_mr for a range that wraps the address space
  // (ib_umem_get: EINVAL; siw pins page by page: EFAULT).
  int wrapping_range_errno = EINVAL;
  // ibv_query_srq works (libsiw has none: EOPNOTSUPP).
  bool queries_srq = true;
  // ... and one of length SIZE_MAX is refused too (siw 6.1 registers it).
  bool refuses_size_max_range = true;
  // Modify-QP attributes (QpAttrMask bits) whose out-of-range values are
  // accepted as given.
  uint32_t modify_unchecked_attrs = 0;

  // --- iWARP (siw): InfiniBand rules an iWARP device does not follow --------
  // (tools/guest/known_differences.md "## siw" has the kernel sources.)
  // A QP made by hand follows the IB state machine to RTS. An iWARP QP
  // reaches RTS only through rdma_cm, and siw_verbs_modify_qp takes only
  // the state and the access flags.
  bool hand_connected_qps = true;
  // ibv_modify_qp follows the transition table of IBA 11.2.4.2 (required,
  // forbidden and range-checked attributes). false: the driver takes only
  // the state and the access flags (siw_verbs_modify_qp); what a modify by
  // hand then returns is StateOnlyModifyErrno (tests/fixture.h).
  bool checks_qp_transitions = true;
  // RESET empties a QP's queues and makes it reusable; false: siw_qp_modify
  // ignores RESET (IDLE stays IDLE, RTS stays RTS, ERROR is final).
  bool resets_qps = true;
  // ibv_post_recv in RESET is refused (EINVAL); false: taken (libsiw).
  bool refuses_recv_in_reset = true;
  // The errno of ibv_post_send on an RC QP before RTS: EINVAL, or siw's
  // ENOTCONN (siw_verbs.c siw_post_send: "QP out of state").
  int post_send_before_rts_errno = EINVAL;
  // A valid WR posted before RTS is written into the send queue although
  // the post fails, and goes out with the first post_send in RTS (rxe:
  // libibverbs writes it before the kernel refuses the doorbell).
  bool keeps_send_wrs_posted_before_rts = false;
  // ibv_modify_srq resizes (IBV_SRQ_MAX_WR); false: EOPNOTSUPP (libsiw).
  bool resizes_srq = true;
  // struct ibv_device's node_type: 1 (CA) for InfiniBand and RoCE, 4 (RNIC)
  // for an iWARP device.
  int node_type = 1;
  // ibv_query_qp reports the state, path MTU, PSNs and access flags as set
  // (siw_query_qp: state 0, i.e. RESET, the netdev's MTU, no PSN, fixed
  // access flags).
  bool query_reports_qp_attrs = true;
  // A remote error fails the requester's WR with a remote status (the NAK).
  // iWARP: a SEND or WRITE completed SUCCESS once sent, the responder sends
  // a TERMINATE, both QPs go to ERR and the requester's outstanding WRs are
  // flushed; WRs posted after the error race the TERMINATE.
  bool remote_errors_terminate = false;
  // A WR that fails as it is sent (a bad lkey) leaves the QP in RTS with
  // its transmission suspended, not in ERR: the WRs posted after it wait,
  // the first in the send slot, until a move to ERR flushes them, a READ in
  // the slot twice (siw: siw_qp_sq_process, siw_sq_flush).
  bool transmit_errors_suspend = false;
  // Receiver-not-ready flow control and transport retries (retry_cnt and
  // the local ACK timeout): iWARP has neither, TCP carries the data.
  bool has_rnr = true;
  bool has_transport_retries = true;
  bool has_ah = true;
  // Immediate data and LOCAL_INV can be posted (libsiw: EINVAL).
  bool has_immediate = true;
  bool has_local_inv = true;
  // The responder enforces the QP's REMOTE_* access flags.
  bool enforces_qp_access = true;
  // The SGE count a post is checked against: the QP's caps (0) or the
  // provider library's fixed limit (libsiw: SIW_MAX_SGE, 6).
  uint32_t library_sge_limit = 0;
  // A receive with no SGE is postable (libsiw: EINVAL).
  bool recv_may_have_no_sge = true;
  // Posting past the QP's send queue depth is ENOMEM (libsiw: only when the
  // kernel has not taken the ring's slots yet, a race).
  bool sq_full_at_depth = true;
  // A send WR that completed on the wire keeps its send-queue slot until a
  // completion of it or of a later WR of its send queue is polled, so
  // unsignaled WRs never followed by a polled completion fill the queue
  // (mlx5 and the ibta profile: sim/profile.h sq_slots_held_until_polled);
  // kNo: the slot is free once the WR completed (rxe) or was taken by the
  // kernel (siw). Other hardware: not pinned down.
  Known sq_slots_held_until_polled = Known::kYes;
  // A CQ armed for solicited completions fires for a solicited message
  // (siw_qp.c siw_rqe_complete passes no solicited flag: never).
  bool solicited_only_events = true;
  // A solicited-only request after a next-completion one leaves the CQ armed
  // for the next completion (IBA C11-31, C11-32; siw_req_notify_cq takes the
  // last request: the CQ then waits for a solicited one).
  bool next_arming_survives_solicited = true;
  // ibv_resize_cq is supported (libsiw has none: EOPNOTSUPP).
  bool resizes_cq = true;
  // Port attributes: the P_Key table's least length (iWARP: 0).
  int min_pkey_tbl_len = 1;
};

// The entry for a provider spec ("sim", "sim:<profile>", "hw", "hw:<dev>")
// opened on `device` (e.g. "sim0", "rxe0", "siw0", "mlx5_0").
//   sim            -> ibta defaults (sim:rxe, sim:siw -> those rows)
//   hw on rxe*     -> rxe
//   hw on siw*     -> siw
//   hw on others   -> ibta (what rdma-unit-test expects of hardware)
Expectations ExpectationsFor(absl::string_view spec, absl::string_view device);

}  // namespace testing
}  // namespace verbsim

#endif  // VERBSIM_TESTS_EXPECTATIONS_H_
