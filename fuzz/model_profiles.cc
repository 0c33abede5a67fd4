// The model's completion-status sets and the rules of each profile the sim
// stands for (RulesFor).
#include <algorithm>
#include <cerrno>
#include <string>

#include "core/names.h"
#include "fuzz/model.h"

namespace verbsim::fuzz {

// --- StatusSet ---------------------------------------------------------------

StatusSet StatusSet::AnyError() {
  StatusSet s;
  s.any_error_ = true;
  return s;
}

bool StatusSet::Contains(WcStatus s) const {
  if (any_error_ && s != WcStatus::kSuccess) return true;
  return std::find(items_.begin(), items_.end(), s) != items_.end();
}

std::string StatusSet::ToString() const {
  if (any_error_) return "any error status";
  std::string out;
  for (WcStatus s : items_) {
    if (!out.empty()) out += " or ";
    out += StatusName(s);
  }
  return out.empty() ? "(nothing)" : out;
}

std::string StatusName(WcStatus s) { return std::string(WcStatusName(s)); }

// --- Profiles ----------------------------------------------------------------

ProfileRules RulesFor(const std::string& profile) {
  ProfileRules r;
  if (profile == "rxe") {
    // Kernel rxe (rxe_req.c / rxe_resp.c / rxe_comp.c), docs/semantics.md §2.
    r.name = "rxe";
    r.reads_may_see_later_writes = false;
    // Older kernels complete LOC_PROT_ERR, newer LOC_QP_OP_ERR.
    r.bad_lkey = {WcStatus::kLocProtErr, WcStatus::kLocQpOpErr};
    r.recv_access = {WcStatus::kLocQpOpErr};
    r.recv_bad_invalidate = {WcStatus::kRemInvReqErr};
    // "a zero-byte op need not carry a valid addr/rkey".
    r.zero_length_skips_rkey = true;
    r.qp_access_denied = {WcStatus::kRemInvReqErr};
    // docs/mw.md: rxe 6.1 checks C10-72 for type 2 windows only, lets any
    // QP invalidate a window, refuses dereg with windows bound with EINVAL
    // and has no ibv_rereg_mr before 6.5.
    r.bind_checks_pd = false;
    r.invalidate_checks_qp = false;
    r.dereg_bound_mr_errno = EINVAL;
    // rxe_pool.c __rxe_add_to_pool: a full pool of windows is EINVAL.
    r.mw_limit_errno = EINVAL;
    r.supports_rereg = false;
    r.local_inv_refused = {WcStatus::kLocQpOpErr};
    // tools/guest/known_differences.md (kernel 6.1): copy_data fails a
    // too-small receive with -EINVAL, so the receiver completes
    // LOC_QP_OP_ERR and the sender gets REM_OP_ERR; and the other 6.1
    // deviations listed in ProfileRules.
    r.recv_too_small = {WcStatus::kLocQpOpErr};
    r.recv_too_small_sender = {WcStatus::kRemOpErr};
    r.window_bounds_checked = false;
    r.bind_checks_rkey_index = false;
    r.reports_with_inv = false;
    r.flushes_recv_posted_in_err = false;
    r.cq_overflow_errors_qps = false;
    // Registration as the guest's rxe0 answered it.
    r.naks_failed_send_invalidate = false;
    // rdma-core 44 providers/rxe/rxe.c validate_send_wr: inline length
    // only; an atomic needs 8 bytes or more and an aligned target; type 1
    // BIND_MW work requests pass.
    r.post_send.inline_needs_send_or_write = false;
    r.post_send.atomic_needs_one_8_byte_sge = false;
    r.post_send.atomic_target_aligned_at_post = true;
    r.post_send.type1_bind_wr_refused = false;
    r.post_send.keeps_wrs_posted_before_rts = true;
    r.checks_response_sges_on_arrival = true;
    r.fence_waits_for_later_reads_on_retry = true;
    r.failed_write_imm_completes_its_recv = true;
    r.one_key_for_both = true;
    r.rkey_needs_remote_access = true;
    r.ignored_access_bits = (1u << 7) | 0x3ff00000u;
    r.accepts_zero_based = true;
    r.on_demand_errno = EINVAL;
    r.empty_mr_inside_a_page = true;
    return r;
  }
  // The spec and what rdma-unit-test expects of hardware.
  r.name = "ibta";
  r.bad_lkey = {WcStatus::kLocProtErr};
  r.recv_access = {WcStatus::kLocProtErr};
  r.recv_too_small = {WcStatus::kLocLenErr};
  // The table gives no receiver status for hardware: any error will do.
  r.recv_bad_invalidate = StatusSet::AnyError();
  // Hardware may do either; the ibta profile does the zero-byte op (the
  // project's choice, stated in docs/semantics.md).
  r.zero_length_skips_rkey = true;
  // "error (remote)": the spec's invalid request or a remote access error.
  r.qp_access_denied = {WcStatus::kRemInvReqErr, WcStatus::kRemAccessErr};
  r.bind_checks_pd = true;
  r.invalidate_checks_qp = true;
  r.dereg_bound_mr_errno = EBUSY;
  r.supports_rereg = true;
  // docs/mw.md: a LOCAL_INV that cannot invalidate completes LOC_QP_OP_ERR.
  r.local_inv_refused = {WcStatus::kLocQpOpErr};
  // IBA 9.9.3.1.1: a class C invalid request error.
  r.recv_too_small_sender = {WcStatus::kRemInvReqErr};
  return r;
}

}  // namespace verbsim::fuzz
