#include "sim/profile.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_join.h"
#include "core/errors.h"

namespace verbsim::sim {
namespace {

// Device limits as kernel rxe reports them (docs/semantics.md section 9).
DeviceAttr RxeLikeDevice() {
  DeviceAttr d;
  d.max_mr_size = UINT64_MAX;
  d.page_size_cap = 0xfffff000;
  d.vendor_id = 0xffffff;
  d.vendor_part_id = 0;
  d.max_qp = 1048560;
  d.max_qp_wr = 1048576;
  d.max_sge = 32;
  d.max_sge_rd = 32;
  d.max_cq = 1048576;
  d.max_cqe = 32767;
  d.max_mr = 524287;
  d.max_pd = 1048576;
  d.max_qp_rd_atom = 128;
  d.max_qp_init_rd_atom = 128;
  d.max_inline_data = 256;
  d.max_mw = 524287;
  d.max_ah = 32767;
  d.max_srq = 917503;
  d.max_srq_wr = 1048576;
  d.max_srq_sge = 27;
  d.max_pkeys = 64;
  d.atomic_cap = AtomicCap::kHca;
  d.phys_port_cnt = 1;
  // rxe_param.h: RXE_MAX_RES_RD_ATOM, the multicast limits and
  // RXE_LOCAL_CA_ACK_DELAY, as rxe0 reports them.
  d.max_res_rd_atom = 0x3f000;
  d.max_mcast_grp = 8192;
  d.max_mcast_qp_attach = 56;
  d.max_total_mcast_qp_attach = 0x70000;
  d.local_ca_ack_delay = 15;
  // The sim's own: RC_RNR_NAK_GEN, PORT_ACTIVE_EVENT, SRQ_RESIZE, the
  // memory windows of both types and the local-invalidate extensions.
  d.device_cap_flags = 0x1023400;
  return d;
}

PortAttr JumboPort() {
  PortAttr p;
  // The simulated link carries 4096-byte payloads (a jumbo-frame link), so
  // every path MTU can be exercised.
  p.max_mtu = Mtu::k4096;
  p.active_mtu = Mtu::k4096;
  p.gid_tbl_len = 1;
  p.pkey_tbl_len = 1;
  return p;
}

// Device and port limits as kernel siw reports them (siw.h SIW_MAX_*,
// siw_verbs.c siw_query_device / siw_query_port; the guest's siw0 agrees).
void SiwLimits(SimProfile& p) {
  DeviceAttr& d = p.device;
  d.vendor_id = 0x626d74;  // SIW_VENDOR_ID
  d.vendor_part_id = 1;    // siw numbers its devices from 1 as they register
  d.node_type = 4;         // IBV_NODE_RNIC: an iWARP device
  d.page_size_cap = 4096;
  d.max_qp = 1024 * 100;
  d.max_qp_wr = 1024 * 32;
  d.max_sge = 6;     // SIW_MAX_SGE
  d.max_sge_rd = 1;  // SIW_MAX_SGE_RD: "iwarp limitation"
  d.max_cq = 1024 * 100;
  d.max_cqe = 1024 * 32 * 100;
  d.max_mr = 1024 * 100 * 10;
  d.max_pd = 1024 * 100;
  d.max_qp_rd_atom = 128;
  d.max_qp_init_rd_atom = 128;
  // SIW_MAX_INLINE: five 16-byte SGEs' worth (what the hw provider's probe
  // finds on siw0).
  d.max_inline_data = 80;
  d.max_mw = 0;
  d.max_ah = 0;
  d.max_srq = 1024 * 100;
  d.max_srq_wr = 1024 * 32 * 10;
  d.max_srq_sge = 6;
  d.atomic_cap = AtomicCap::kNone;
  // No multicast, partitions or virtual lanes; one capability flag
  // (siw_query_device: MEM_MGT_EXTENSIONS); reads and atomics per QP times
  // QPs.
  d.max_mcast_grp = 0;
  d.max_mcast_qp_attach = 0;
  d.max_total_mcast_qp_attach = 0;
  d.max_pkeys = 0;
  d.local_ca_ack_delay = 0;
  d.max_res_rd_atom = uint64_t{1024 * 100} * 128;
  d.device_cap_flags = 0x200000;
  // iWARP has no partitions: siw_query_port leaves pkey_tbl_len 0.
  p.port.pkey_tbl_len = 0;
  // siw_query_port: CM_SUP and DEVICE_MGMT_SUP, messages to 4 GiB - 1, no
  // virtual lanes.
  p.port.port_cap_flags = 0x90000;
  p.port.max_msg_sz = 0xffffffffu;
  p.port.max_vl_num = 0;
  // Queues of a power of two entries (siw_verbs.c roundup_pow_of_two).
  p.queue_rounding = QueueRounding::kPowerOfTwo;
}

}  // namespace

uint32_t RoundQueue(QueueRounding rounding, uint32_t n) {
  if (n == 0) return 0;
  uint64_t slots = 1;
  switch (rounding) {
    case QueueRounding::kExact:
      return n;
    case QueueRounding::kPowerOfTwoMinusOne:
      while (slots < uint64_t{n} + 1) slots <<= 1;
      return static_cast<uint32_t>(slots - 1);
    case QueueRounding::kPowerOfTwo:
      while (slots < n) slots <<= 1;
      return static_cast<uint32_t>(std::min<uint64_t>(slots, UINT32_MAX));
  }
  return n;
}

QpCap GrantQpCap(const SimProfile& profile, QpCap asked) {
  QpCap c = asked;
  c.max_send_wr = RoundQueue(profile.queue_rounding, asked.max_send_wr);
  c.max_recv_wr = RoundQueue(profile.queue_rounding, asked.max_recv_wr);
  if (profile.send_wqe_sizes_sge_and_inline) {
    constexpr uint32_t kSgeBytes = 16;  // sizeof(struct ib_sge)
    const uint32_t wqe =
        std::max(asked.max_send_sge * kSgeBytes, asked.max_inline_data);
    c.max_send_sge = wqe / kSgeBytes;
    c.max_inline_data = wqe;
  }
  return c;
}

absl::Status CheckSgidIndex(const SimProfile& profile, int sgid_index) {
  if (sgid_index < 0 || sgid_index >= profile.port.gid_tbl_len) {
    return Errno(EINVAL, "sgid_index %d beyond the GID table of %d",
                 sgid_index, profile.port.gid_tbl_len);
  }
  if (sgid_index != 0) {
    return Errno(profile.unused_sgid_errno,
                 "sgid_index %d: an empty GID entry (the GID is at index 0)",
                 sgid_index);
  }
  return absl::OkStatus();
}

namespace {

// rxe and siw copy a WR's data in the post call when they can and place
// and fetch in request order (docs/ordering.md has the driver sources and
// what the guest showed).
void StrongMemory(SimProfile& p) {
  p.memory.gathers_at_post = true;
  p.memory.places_messages_in_order = true;
  p.memory.fetches_reads_in_order = true;
}

}  // namespace

absl::StatusOr<SimProfile> ProfileByName(absl::string_view name) {
  SimProfile p;
  p.device = RxeLikeDevice();
  p.port = JumboPort();
  if (name.empty() || name == "ibta") {
    p.name = "ibta";
    return p;
  }
  if (name == "rxe") {
    p.name = "rxe";
    // What the hw provider's probe finds on rxe0 (RXE_MAX_INLINE_DATA, 32
    // SGEs of 16 bytes; tools/guest/known_differences.md).
    p.device.max_inline_data = 512;
    p.recv_access_status = WcStatus::kLocQpOpErr;
    // Kernel 6.1 rxe_mr.c copy_data returns -EINVAL (not -ENOSPC) for a
    // message longer than the receive, so rxe_resp.c takes the "malformed
    // WQE" path: NAK remote operational error, receiver LOC_QP_OP_ERR (seen
    // in the guest; tools/guest/known_differences.md).
    p.recv_too_small_status = WcStatus::kLocQpOpErr;
    p.recv_too_small_sender_status = WcStatus::kRemOpErr;
    // rxe_req.c: a UD message over the MTU is not sent and completes OK.
    p.ud_oversize_status = WcStatus::kSuccess;
    // Kernel 6.1 (Debian 12), the rxe the guest runs:
    // rxe_resp.c copy_data fails a too-small UD or UC receive.
    p.ud_recv_too_small_status = WcStatus::kLocQpOpErr;
    p.uc_recv_too_small_status = WcStatus::kLocQpOpErr;
    // rxe_req.c uses wr.ud.remote_qkey as given.
    p.honours_controlled_qkey = false;
    // No rereg_user_mr before 6.5.
    p.supports_rereg = false;
    // rdma-core 44 providers/rxe/rxe.c: rxe_post_recv, rxe_post_srq_recv
    // and rxe_poll_cq work on the rings alone.
    p.recv_and_poll_check_handle = false;
    // rxe_mr.c rxe_dereg_mr: EINVAL while windows are bound.
    p.dereg_bound_mr_errno = EINVAL;
    // rxe_mw.c rxe_check_bind_mw (6.1) and rxe_invalidate_mw.
    p.bind_checks_pd = false;
    p.invalidate_checks_qp = false;
    p.raises_last_wqe_reached = false;
    p.mw_bounds_checked = false;
    p.bind_checks_rkey_index = false;
    p.reports_with_inv = false;
    p.mcast_reaches_local_members = false;
    p.delivers_multicast = false;
    p.cq_overflow_errors_qps = false;
    p.flushes_recv_posted_in_err = false;
    // rxe_comp.c frees a WQE's slot as it completes it.
    p.sq_slots_held_until_polled = false;
    p.error_completion_opcode = ErrorCompletionOpcode::kZero;
    p.unused_sgid_errno = ENODATA;
    // Kernel 6.1 rxe_pool.c __rxe_add_to_pool: a full pool is EINVAL for
    // the PDs, CQs, QPs, SRQs, windows and address handles rxe_verbs.c and
    // rxe_mw.c add to it; an MR comes from rxe_alloc, whose NULL
    // rxe_reg_user_mr turns into ENOMEM; the multicast limits are ENOMEM
    // (rxe_mcast.c).
    p.limit_errno.pd = EINVAL;
    p.limit_errno.cq = EINVAL;
    p.limit_errno.qp = EINVAL;
    p.limit_errno.srq = EINVAL;
    p.limit_errno.mw = EINVAL;
    p.limit_errno.ah = EINVAL;
    // rxe_param.h RXE_DEVICE_CAP_FLAGS and RXE_MAX_MSG_SIZE, as rxe0
    // reports them.
    p.device.device_cap_flags = 0x1223c76;
    p.port.max_msg_sz = 0x800000;
    // rxe_queue.c: a ring of 2^k slots holds 2^k - 1 entries; a send WQE
    // is sized for its SGEs or its inline data (rxe_qp.c rxe_qp_init_req).
    p.queue_rounding = QueueRounding::kPowerOfTwoMinusOne;
    p.send_wqe_sizes_sge_and_inline = true;
    // rxe_param.h RXE_PORT_GID_TBL_LEN: 1024 entries, all empty but the
    // node's GID here.
    p.port.gid_tbl_len = 1024;
    p.gather_key_lookup_status = WcStatus::kLocQpOpErr;
    p.naks_failed_send_invalidate = false;
    // rdma-core 44 providers/rxe/rxe.c validate_send_wr / convert_send_wr.
    p.post_send.inline_needs_send_or_write = false;
    p.post_send.atomic_needs_one_8_byte_sge = false;
    p.post_send.atomic_target_aligned_at_post = true;
    p.post_send.ud_remote_qpn_checked = false;
    p.post_send.type1_bind_wr_refused = false;
    p.checks_response_sges_on_arrival = true;
    p.fence_waits_for_later_reads_on_retry = true;
    p.flush_overrides_failures = true;
    p.regathers_on_retransmit = true;
    p.gathers_per_packet = true;
    p.scatters_up_to_a_failing_sge = true;
    p.answers_arrive_between_packets = true;
    p.sends_new_wrs_during_rnr_wait = true;
    p.keeps_send_wrs_posted_before_rts = true;
    p.failed_write_imm_completes_its_recv = true;
    StrongMemory(p);
    p.ipv4_ttl = 64;
    p.one_key_for_both = true;
    p.rkey_needs_remote_access = true;
    p.ignored_access_bits = kAccessHugeTlb | kAccessOptionalRange;
    p.accepts_zero_based = true;
    p.on_demand_errno = EINVAL;
    p.zero_length_mr = ZeroLengthMr::kIfInsideAPage;
    p.modify_unchecked_attrs = kQpPkeyIndex | kQpAccessFlags |
                               kQpMinRnrTimer | kQpMaxDestRdAtomic |
                               kQpRetryCnt | kQpRnrRetry;
    return p;
  }
  if (name == "siw") {
    p.name = "siw";
    SiwLimits(p);
    StrongMemory(p);
    // Kernel 6.1 ib_core and siw_verbs.c siw_reg_user_mr, as probed in the
    // guest (the same rules as rxe's but rkey_needs_remote_access).
    p.one_key_for_both = true;
    p.ignored_access_bits = kAccessHugeTlb | kAccessOptionalRange;
    p.accepts_zero_based = true;
    p.on_demand_errno = EINVAL;
    p.zero_length_mr = ZeroLengthMr::kRefused;
    p.supports_rereg = false;
    p.wrapping_range_errno = EFAULT;
    // rdma-core 44 providers/siw/siw.c: no resize_cq; the receive posts,
    // the poll and the notify work on the mapped rings alone.
    p.resizes_cq = false;
    p.recv_and_poll_check_handle = false;
    p.notify_checks_handle = false;
    p.queries_srq = false;
    p.refuses_recv_in_reset = false;
    p.resizes_srq = false;
    p.cq_notify_keeps_next = false;  // siw_verbs.c siw_req_notify_cq
    // siw_qp_tx.c siw_qp_sq_process: a failed SQE completes LOC_QP_OP_ERR;
    // a READ's sink is checked by the receive path (siw_qp_rx.c
    // siw_check_sge: LOC_PROT_ERR).
    p.bad_lkey_status = WcStatus::kLocQpOpErr;
    p.gather_key_lookup_status = WcStatus::kLocQpOpErr;
    p.read_sink_status = WcStatus::kLocProtErr;
    // siw_qp_tx.c siw_qp_sq_proc_tx checks the SGEs of what it transmits
    // only; a READ goes out with its sink unchecked, so a remote error
    // (a TERMINATE, which flushes the READ) comes first.
    p.checks_response_sges_on_arrival = true;
    p.iwarp.read_uses_first_sge = true;
    // libsiw checks only the inline byte count (push_send_wqe); the kernel
    // refuses the rest when it starts the WR (IwarpRules).
    p.post_send.inline_needs_send_or_write = false;
    p.iwarp.refuses_at_activation = true;
    p.iwarp.transmit_errors_keep_rts = true;
    p.iwarp.drops_connection_at_refused_head = true;
    // siw_qp_rx.c: a receive that fails its check completes GENERAL_ERR; one
    // too small LOC_LEN_ERR (siw_proc_send); the sender's SEND has
    // completed SUCCESS already and the TERMINATE ends the connection.
    p.recv_access_status = WcStatus::kGeneralErr;
    p.scatters_up_to_a_failing_sge = true;
    p.recv_too_small_status = WcStatus::kLocLenErr;
    // rdma-core 44 providers/siw/siw.c.
    p.post_send.refused_opcodes =
        (1u << static_cast<int>(WrOpcode::kRdmaWriteWithImm)) |
        (1u << static_cast<int>(WrOpcode::kSendWithImm)) |
        (1u << static_cast<int>(WrOpcode::kAtomicCmpAndSwp)) |
        (1u << static_cast<int>(WrOpcode::kAtomicFetchAndAdd)) |
        (1u << static_cast<int>(WrOpcode::kLocalInv)) |
        (1u << static_cast<int>(WrOpcode::kBindMw));
    p.post_send.library_sge_limit = 6;
    p.post_send.library_inline_limit = 80;
    p.post_send.full_queue_checked_first = true;
    p.post_send.recv_may_have_no_sge = false;
    // siw_verbs.c siw_verbs_modify_qp maps the state and the access flags
    // and ignores the IB attributes (and ib_core does not check them for an
    // iWARP device): no value is range-checked.
    p.modify_unchecked_attrs = ~static_cast<uint32_t>(kQpState);
    p.flushes_send_posted_in_err = false;
    // A receive posted in ERROR is written to the ring and never completed
    // (siw_verbs.c siw_post_receive flushes only a kernel QP's WRs).
    p.flushes_recv_posted_in_err = false;
    // siw raises no IBV_EVENT_QP_LAST_WQE_REACHED for a QP on an SRQ that
    // enters ERR (siw_qp.c has no such event).
    p.raises_last_wqe_reached = false;
    p.cq_solicited_events = false;
    // siw_qp.c siw_activate_tx_from_sq frees the SQE as it takes it.
    p.sq_slots_held_until_polled = false;
    p.error_completion_opcode = ErrorCompletionOpcode::kTheWrs;
    p.iwarp.rts_needs_cm = true;
    p.iwarp.rts_leaves_the_ring_waiting = true;
    // A netdev MTU of 9000, as the guest's siw0 has (docs/fidelity.md): an
    // MSS of 8948 with TCP timestamps, rounded down to 8944.
    p.iwarp.tcp_segment_bytes = 8944;
    p.iwarp.takes_state_only = true;
    p.iwarp.query_reports_qp_attrs = false;
    p.iwarp.completes_on_transmit = true;
    p.iwarp.remote_errors_terminate = true;
    p.iwarp.checks_qp_access = false;
    p.iwarp.read_needs_remote_read = false;
    p.iwarp.has_ah = false;
    p.iwarp.rc_only = true;
    return p;
  }
  return Errno(ENOENT, "no sim profile named '%s' (known: %s)", name,
               absl::StrJoin(ProfileNames(), ", "));
}

std::vector<std::string> ProfileNames() { return {"ibta", "rxe", "siw"}; }

}  // namespace verbsim::sim
