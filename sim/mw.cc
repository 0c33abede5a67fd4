// Memory windows and invalidation (IBA 10.6.7, 10.6.5; docs/semantics.md section
// 5; kernel rxe rxe_mw.c is the model). A bind and a local invalidate run in
// the requester when their WQE's turn comes: a later WR of the QP sees the
// window as bound (or invalidated).
#include "sim/fabric.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

bool InMr(const MrState& mr, uint64_t addr, uint64_t length) {
  return addr >= mr.addr && length <= mr.length &&
         addr - mr.addr <= mr.length - length;
}

}  // namespace

void UnbindMw(MwState& mw) {
  if (mw.bound && mw.mr != nullptr) --mw.mr->mws_bound;
  mw.bound = false;
  mw.mr.reset();
  mw.addr = 0;
  mw.length = 0;
  mw.access = 0;
  mw.qpn = 0;
}

WcStatus ExecuteBind(QpCore& qp, SendWqe& w) {
  constexpr WcStatus kRefused = WcStatus::kMwBindErr;
  MwState& mw = *w.mw;
  if (mw.dead) return kRefused;
  // A bind that names the window by a stale rkey (kernel rxe_bind_mw:
  // mw->rkey != mw_rkey).
  if (w.bind_named_rkey.has_value() && *w.bind_named_rkey != mw.rkey) {
    return kRefused;
  }
  // C10-72: the QP, the window and the region share one PD (rxe 6.1 checks
  // the window's PD for type 2 only and never the region's).
  const bool checks_pd = qp.node->fabric->profile().bind_checks_pd;
  if (mw.pd != qp.pd && (checks_pd || mw.type == MwType::kType2)) {
    return kRefused;
  }
  if (mw.type == MwType::kType2) {
    // o10-37.2.30: a type 2 window is bound only when free; o10-37.2.40: it
    // is invalidated, never unbound by a zero-length bind.
    if (mw.bound || w.bind_length == 0) return kRefused;
    // The new rkey keeps the window's index; only the key byte is chosen.
    if ((w.bind_rkey & ~0xffu) != (mw.rkey & ~0xffu) &&
        qp.node->fabric->profile().bind_checks_rkey_index) {
      return kRefused;
    }
  }
  if (w.bind_length > 0) {
    const MrState* mr = w.bind_mr.get();
    if (mr == nullptr || mr->dead) return kRefused;
    if (checks_pd && mr->pd != qp.pd) return kRefused;
    // C10-73: the region allows binding.
    if ((mr->access & kAccessMwBind) == 0) return kRefused;
    // C10-74: remote write or atomic through the window needs the region's
    // local write.
    if ((w.bind_access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
        (mr->access & kAccessLocalWrite) == 0) {
      return kRefused;
    }
    // C10-75: the window lies inside the region.
    if (!InMr(*mr, w.bind_addr, w.bind_length)) return kRefused;
  }
  UnbindMw(mw);
  mw.rkey = (mw.rkey & ~0xffu) | (w.bind_rkey & 0xffu);
  if (w.bind_length > 0) {
    mw.bound = true;
    mw.mr = w.bind_mr;
    ++mw.mr->mws_bound;
    mw.addr = w.bind_addr;
    mw.length = w.bind_length;
    mw.access = w.bind_access;
    if (mw.type == MwType::kType2) mw.qpn = qp.qpn;
  }
  return WcStatus::kSuccess;
}

namespace {

// Whether type 2 window `rkey` may be invalidated through `qp`: kSuccess,
// kMwBindErr for a window bound through another QP (where the profile
// checks that), kLocQpOpErr for anything else.
WcStatus CheckInvalidate(QpCore& qp, uint32_t rkey, MwState** out) {
  MwState* mw = qp.node->keys.LookupMw(rkey);
  if (mw == nullptr || mw->dead || !mw->bound || mw->rkey != rkey) {
    return WcStatus::kLocQpOpErr;
  }
  // Type 1 windows are invalidated by a zero-length bind only (IBA
  // 10.6.7.2.4); the window must be of the QP's PD.
  if (mw->type != MwType::kType2 || mw->pd != qp.pd) {
    return WcStatus::kLocQpOpErr;
  }
  if (mw->qpn != qp.qpn && qp.node->fabric->profile().invalidate_checks_qp) {
    return WcStatus::kMwBindErr;
  }
  *out = mw;
  return WcStatus::kSuccess;
}

}  // namespace

WcStatus ExecuteLocalInvalidate(QpCore& qp, uint32_t rkey) {
  // Regions from ibv_reg_mr are not invalidatable (only fast-registration
  // regions are, which user space cannot create): such an rkey, like a stale
  // or unknown one, fails the WR.
  MwState* mw = nullptr;
  const WcStatus status = CheckInvalidate(qp, rkey, &mw);
  if (status == WcStatus::kLocQpOpErr) {
    return qp.node->fabric->profile().local_inv_error_status;
  }
  if (status != WcStatus::kSuccess) return status;
  UnbindMw(*mw);
  return WcStatus::kSuccess;
}

bool InvalidateRemote(QpCore& qp, uint32_t rkey) {
  MwState* mw = nullptr;
  if (CheckInvalidate(qp, rkey, &mw) != WcStatus::kSuccess) return false;
  UnbindMw(*mw);
  return true;
}

}  // namespace verbsim::sim
