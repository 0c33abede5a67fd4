#include "tests/expectations.h"

#include "absl/strings/match.h"

namespace verbsim {
namespace testing {
namespace {

// IBTA / hardware behaviour, as rdma-unit-test expects it of real NICs. The
// sim's default profile.
Expectations Ibta() {
  Expectations e;
  e.profile = "ibta";
  return e;
}

// Bits a real device accepts besides the ones verbsim names: HUGETLB and
// FLUSH_* (bits 7..9) and the optional range (bits 20..29, ignored when
// unsupported).
constexpr uint32_t kVendorAccessBits = 0x000003ffu | 0x3ff00000u;

// Whatever holds for every real device behind rdma-core.
Expectations Hardware(Expectations e) {
  e.lkey_differs_from_rkey = Known::kUnknown;
  e.zero_length_mr = Known::kUnknown;
  e.zero_length_mr_inside_a_page = Known::kUnknown;
  e.rejected_access_bits = ~kVendorAccessBits;
  e.supported_extra_access = kAccessMwBind;
  e.refused_extra_access = 0;  // ODP and zero-based MRs vary by device
  // mlx5 holds a slot until a completion is polled; not every device does.
  e.sq_slots_held_until_polled = Known::kUnknown;
  // Which remote error a device reports here is not pinned down
  // (docs/semantics.md section 10).
  e.remote_qp_access = {WcStatus::kRemInvReqErr, WcStatus::kRemAccessErr,
                        WcStatus::kRemOpErr};
  e.rkey_of_other_pd = {WcStatus::kRemAccessErr, WcStatus::kRemOpErr};
  e.error_completion_has_wr_opcode = Known::kUnknown;
  e.zero_length_bad_rkey = {WcStatus::kSuccess, WcStatus::kRemAccessErr};
  return e;
}

// Registration on kernel 6.1 rxe and siw, as the guest showed it: one key
// for both directions; HUGETLB and the optional range accepted, the flush
// bits and ON_DEMAND refused (ib_core ib_check_mr_access), ZERO_BASED
// accepted; no zero-length MR (ib_umem_get).
Expectations KernelSoftwareRegistration(Expectations e) {
  e.lkey_differs_from_rkey = Known::kNo;
  e.zero_length_mr = Known::kNo;
  e.ignored_access_bits = kAccessHugeTlb | kAccessOptionalRange;
  e.rejected_access_bits = ~(kAccessAllKnown | e.ignored_access_bits);
  e.supported_extra_access = kAccessMwBind | kAccessZeroBased;
  e.refused_extra_access = kAccessOnDemand;
  return e;
}

// Kernel rxe (Soft-RoCE), docs/semantics.md section 2 "rxe" column.
Expectations Rxe() {
  Expectations e = KernelSoftwareRegistration(Ibta());
  e.profile = "rxe";
  e.rkey_needs_remote_access = true;
  e.zero_length_bad_rkey = {WcStatus::kSuccess};
  // Version-dependent: LOC_PROT_ERR on older kernels, LOC_QP_OP_ERR later.
  e.bad_lkey = {WcStatus::kLocProtErr, WcStatus::kLocQpOpErr};
  e.read_into_readonly_mr = {WcStatus::kLocProtErr, WcStatus::kLocQpOpErr};
  e.recv_prot_receiver = {WcStatus::kLocQpOpErr};
  // Kernel 6.1: copy_data's -EINVAL takes the malformed-WQE path.
  e.recv_too_small_sender = {WcStatus::kRemOpErr};
  e.recv_too_small_receiver = {WcStatus::kLocQpOpErr};
  e.remote_qp_access = {WcStatus::kRemInvReqErr};
  e.rkey_of_other_pd = {WcStatus::kRemAccessErr};
  // The receiver completes REM_INV_REQ_ERR and the sender is not NAKed
  // (rdma-unit-test NoNakOnSendInvalidateErrors; seen on 6.1).
  e.send_inv_bad_rkey_sender = {WcStatus::kSuccess};
  // rdma-core providers/rxe/rxe.c validate_send_wr; rxe_comp.c.
  e.misaligned_atomic_refused_at_post = true;
  e.atomic_takes_any_sge_list_of_8_bytes = true;
  e.atomic_executes_before_local_check = true;
  e.inline_read = {WcStatus::kLocProtErr};
  // providers/rxe/rxe.c rxe_post_send; rxe_verbs.c rxe_post_send.
  e.keeps_send_wrs_posted_before_rts = true;
  e.local_error_sends_earlier_packets = true;
  // rxe_net.c prepare4: the route's TTL, not the AH's hop limit.
  e.ipv4_ttl = 64;
  e.send_inv_bad_rkey_receiver = {WcStatus::kRemInvReqErr};
  // rxe_req.c: a UD message over the MTU is not sent; the WR succeeds.
  e.ud_oversize = {WcStatus::kSuccess};
  // Kernel 6.1 (Debian 12), see sim/profile.cc for the sources.
  e.ud_recv_too_small_receiver = {WcStatus::kLocQpOpErr};
  e.uc_recv_too_small_receiver = {WcStatus::kLocQpOpErr};
  e.honours_controlled_qkey = false;
  e.raises_last_wqe_reached = false;
  e.has_rereg = false;
  e.dereg_bound_mr_errno = EINVAL;
  e.bind_checks_pd = false;
  e.invalidate_checks_qp = false;
  e.mw_bounds_checked = false;
  e.bind_checks_rkey_index = false;
  e.refuses_type1_bind_wr = false;
  e.reports_with_inv = false;
  e.checks_ud_remote_qpn = false;
  e.mcast_reaches_local_members = false;
  e.delivers_multicast = false;
  e.cq_overflow_errors_qps = false;
  e.flushes_recv_posted_in_err = false;
  e.fence_retry_stalls = true;  // rxe_req.c rxe_wqe_is_fenced
  e.transmit_failure_in_rnr_wait_stalls = true;  // rxe_req.c rxe_requester
  e.failed_write_imm_completes_its_recv = true;  // rxe_resp.c check_resource
  e.flush_overrides_failures = true;  // rxe_comp.c rxe_drain_resp_pkts
  e.regathers_on_retransmit = true;  // rxe_req.c copy_data
  e.places_read_packets_before_a_bad_one = true;  // rxe_comp.c copy_data
  e.places_sges_before_a_failing_one = true;      // rxe_mr.c copy_data
  e.remote_error_beats_a_later_local_error = true;  // rxe_resp.c, rxe_comp.c
  e.sq_slots_held_until_polled = Known::kNo;  // rxe_comp.c
  // Kernel 6.1 rxe fills the opcode only on success: an error completion
  // says 0 (IBV_WC_SEND) whatever its WR.
  e.error_completion_has_wr_opcode = Known::kNo;
  e.unused_sgid_errno = ENODATA;
  // rxe_qp.c rxe_qp_chk_attr.
  e.modify_unchecked_attrs = kQpPkeyIndex | kQpAccessFlags | kQpMinRnrTimer |
                             kQpMaxDestRdAtomic | kQpRetryCnt | kQpRnrRetry;
  e.zero_length_mr_inside_a_page = Known::kYes;
  return e;
}

// Kernel siw (soft-iWARP): RC only, no atomics (docs/semantics.md sections 6, 9).
Expectations Siw() {
  Expectations e = KernelSoftwareRegistration(Ibta());
  e.profile = "siw";
  e.has_atomics = false;
  e.supports_sqd = false;
  // iWARP has reliable connections only; siw reports max_mw 0 and no
  // multicast (docs/semantics.md section 9).
  e.has_ud = false;
  e.has_uc = false;
  e.has_mw = false;
  e.has_multicast = false;
  e.has_rereg = false;
  e.hand_connected_qps = false;
  e.checks_qp_transitions = false;
  e.resets_qps = false;
  e.refuses_recv_in_reset = false;
  e.post_send_before_rts_errno = ENOTCONN;
  e.resizes_srq = false;
  e.flushes_recv_posted_in_err = false;
  e.err_move_flushes_recv_posted_in_err = false;
  e.refuses_fenced_read = true;
  e.transmit_errors_suspend = true;
  e.raises_last_wqe_reached = false;
  e.node_type = 4;  // IBV_NODE_RNIC
  e.wrapping_range_errno = EFAULT;
  e.refuses_size_max_range = false;
  e.queries_srq = false;
  e.query_reports_qp_attrs = false;
  e.remote_errors_terminate = true;
  e.has_rnr = false;
  e.has_transport_retries = false;
  e.has_ah = false;
  e.has_immediate = false;
  e.has_local_inv = false;
  e.enforces_qp_access = false;
  e.library_sge_limit = 6;
  e.recv_may_have_no_sge = false;
  e.sq_full_at_depth = false;
  e.sq_slots_held_until_polled = Known::kNo;  // siw_activate_tx_from_sq
  e.error_completion_has_wr_opcode = Known::kYes;  // copy_cqe
  e.solicited_only_events = false;
  e.next_arming_survives_solicited = false;
  e.resizes_cq = false;
  e.min_pkey_tbl_len = 0;
  e.flushes_send_posted_in_err = false;
  // siw_qp_tx.c: a failed SQE completes LOC_QP_OP_ERR; a READ's sink fails
  // in the receive path, LOC_PROT_ERR.
  e.bad_lkey = {WcStatus::kLocQpOpErr, WcStatus::kLocProtErr};
  // The requester's view of a remote error: a WRITE or SEND has completed
  // SUCCESS, a READ is flushed by the TERMINATE; a WRITE whose transmission
  // the TERMINATE overtakes completes LOC_QP_OP_ERR (siw_qp_tx.c; seen on
  // siw0 under load: tools/fidelity/races.tsv).
  e.bad_rkey = {WcStatus::kSuccess, WcStatus::kWrFlushErr,
                WcStatus::kLocQpOpErr};
  e.zero_length_bad_rkey = {WcStatus::kSuccess, WcStatus::kWrFlushErr};
  e.remote_mr_access = {WcStatus::kSuccess, WcStatus::kWrFlushErr};
  e.rkey_of_other_pd = {WcStatus::kSuccess, WcStatus::kWrFlushErr};
  e.send_inv_bad_rkey_sender = {WcStatus::kSuccess};
  // siw_qp_rx.c: the receive fails GENERAL_ERR (protection) or LOC_LEN_ERR
  // (too small); the sender's SEND completed SUCCESS, or LOC_QP_OP_ERR when
  // the TERMINATE overtakes its transmission (the race of bad_rkey above;
  // tools/fidelity/races.tsv).
  e.recv_prot_sender = {WcStatus::kSuccess, WcStatus::kLocQpOpErr};
  e.recv_prot_receiver = {WcStatus::kGeneralErr};
  e.recv_too_small_sender = {WcStatus::kSuccess};
  e.recv_too_small_receiver = {WcStatus::kLocLenErr};
  // siw_qp_tx.c siw_prepare_fpdu: the MSS (8948 on a 9000-byte MTU with
  // TCP timestamps) rounded down to 8, less a SEND's 20-byte header and the
  // 4-byte MPA CRC.
  e.send_segment_bytes = 8920;
  e.read_uses_first_sge = true;
  e.places_sges_before_a_failing_one = true;  // siw_qp_rx.c siw_proc_send
  return e;
}

Expectations ForProfile(absl::string_view profile) {
  if (profile == "rxe") return Rxe();
  if (profile == "siw") return Siw();
  return Ibta();
}

}  // namespace

Expectations ExpectationsFor(absl::string_view spec, absl::string_view device) {
  absl::string_view provider = spec;
  absl::string_view options;
  if (size_t colon = spec.find(':'); colon != absl::string_view::npos) {
    provider = spec.substr(0, colon);
    options = spec.substr(colon + 1);
  }
  if (provider == "sim") {
    // "sim" models two devices, sim0 and sim1; "sim:<profile>" imitates a
    // real provider's deviations.
    Expectations e = ForProfile(options);
    e.min_devices = 2;
    return e;
  }
  // rxe and siw have rows of their own, pinned down in the guest; other
  // devices get what holds for every device behind rdma-core. No device
  // counts per QP.
  Expectations e = absl::StartsWith(device, "rxe")   ? Rxe()
                   : absl::StartsWith(device, "siw") ? Siw()
                                                     : Hardware(Ibta());
  e.counts_per_qp = false;
  return e;
}

}  // namespace testing
}  // namespace verbsim
