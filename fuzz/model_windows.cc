// The model of memory windows: ibv_alloc_mw(3), the windows' keys in
// KeyModel (collisions included), binds by ibv_bind_mw(3) and BIND_MW work
// requests, and invalidation by LOCAL_INV and SEND_WITH_INV.
#include <cerrno>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/model.h"

namespace verbsim::fuzz {

// --- Memory windows ----------------------------------------------------------

int AllocMwErrno(bool pd_alive, int type, int max_mw, int live_mws,
                 const ProfileRules& rules) {
  if (!pd_alive) return EINVAL;
  if (type != static_cast<int>(MwType::kType1) &&
      type != static_cast<int>(MwType::kType2)) {
    return EINVAL;
  }
  if (max_mw <= 0) return EOPNOTSUPP;
  if (live_mws >= max_mw) return rules.mw_limit_errno;
  return 0;
}

void KeyModel::NoteKey(int node, uint32_t key, int self_mr, int self_mw,
                       const std::string& what) {
  if (!collision_.empty()) return;
  const Where w{node, key};
  for (const std::map<Where, int>* table : {&by_lkey_, &by_rkey_}) {
    auto it = table->find(w);
    if (it != table->end() && it->second != self_mr) {
      collision_ = absl::StrCat(what, " and live MR #", it->second,
                                " on node ", node, " share key 0x",
                                absl::Hex(key));
      return;
    }
  }
  auto it = by_mw_rkey_.find(w);
  if (it != by_mw_rkey_.end() && it->second != self_mw) {
    collision_ = absl::StrCat(what, " and live window #", it->second,
                              " on node ", node, " share key 0x",
                              absl::Hex(key));
  }
}

void KeyModel::SetMwKey(int index, uint32_t rkey) {
  ModelMw& mw = mws_[index];
  auto it = by_mw_rkey_.find({mw.node, mw.rkey});
  if (it != by_mw_rkey_.end() && it->second == index) by_mw_rkey_.erase(it);
  mw.rkey = rkey;
  if (!mw.live) return;
  NoteKey(mw.node, rkey, -1, index, absl::StrCat("window #", index));
  by_mw_rkey_[{mw.node, rkey}] = index;
}

int KeyModel::AddMw(const ModelMw& mw) {
  const int index = static_cast<int>(mws_.size());
  mws_.push_back(mw);
  mws_.back().rkey = ~mw.rkey;  // so SetMwKey finds nothing to erase
  SetMwKey(index, mw.rkey);
  return index;
}

void KeyModel::Unbind(ModelMw& mw) {
  mw.bound = false;
  mw.mr = -1;
  mw.addr = mw.length = 0;
  mw.access = 0;
  mw.qp = -1;
}

void KeyModel::KillMw(int index) {
  ModelMw& mw = mws_[index];
  if (!mw.live) return;
  Unbind(mw);
  auto it = by_mw_rkey_.find({mw.node, mw.rkey});
  if (it != by_mw_rkey_.end() && it->second == index) by_mw_rkey_.erase(it);
  mw.live = false;
}

int KeyModel::LiveMwsInPd(int pd) const {
  int n = 0;
  for (const ModelMw& m : mws_) n += m.live && m.pd == pd;
  return n;
}

int KeyModel::LiveMwsOnNode(int node) const {
  int n = 0;
  for (const ModelMw& m : mws_) n += m.live && m.node == node;
  return n;
}

int KeyModel::BoundWindows(int mr_index) const {
  int n = 0;
  for (const ModelMw& m : mws_) n += m.live && m.bound && m.mr == mr_index;
  return n;
}

BindOutcome KeyModel::PredictBind(const BindCall& c,
                                  const ProfileRules& rules) const {
  BindOutcome out;
  const ModelMw& mw = mws_[c.mw];
  const ModelMr* mr = c.mr >= 0 ? &mrs_[c.mr] : nullptr;
  // --- At the post (ibv_bind_mw(3), ibv_post_send(3)) ---
  if (!mw.live) {
    out.post_errno = EINVAL;
    return out;
  }
  if (c.verb) {
    // libibverbs ibv_bind_mw, in its order: type 1 only; no region means
    // no range; the region and the window share a PD (EPERM).
    if (mw.type != MwType::kType1 ||
        (mr == nullptr && (c.addr != 0 || c.length != 0))) {
      out.post_errno = EINVAL;
      return out;
    }
    if (mr != nullptr && mr->pd != mw.pd) {
      out.post_errno = EPERM;
      return out;
    }
  } else {
    // IBA 10.6.7.2: type 1 windows are bound by the verb only (rxe 6.1
    // accepts the work request: its ibv_bind_mw posts one).
    if ((mw.type != MwType::kType2 && rules.post_send.type1_bind_wr_refused) ||
        (mr == nullptr && c.length > 0)) {
      out.post_errno = EINVAL;
      return out;
    }
  }
  // A window grants remote rights (LOCAL_WRITE is accepted and means
  // nothing for it); zero-based windows are not supported.
  constexpr uint32_t kWindowRights = kAccessRemoteWrite | kAccessRemoteRead |
                                     kAccessRemoteAtomic | kAccessLocalWrite;
  if ((c.access & ~kWindowRights) != 0) {
    out.post_errno = EINVAL;
    return out;
  }
  // --- As it executes: MW_BIND_ERR ---
  const WcStatus refused = WcStatus::kMwBindErr;
  out.status = refused;
  // ibv_bind_mw names the window by the key the verb last gave it, which
  // a bind that then failed moved on while the window kept its own: such a
  // bind fails (the kernel's rxe_bind_mw; core/types.h MwBind).
  if (c.verb && mw.handle_rkey != mw.rkey) return out;
  // C10-72 for the window (rxe checks it for type 2 only).
  if (mw.pd != c.qp_pd &&
      (rules.bind_checks_pd || mw.type == MwType::kType2)) {
    return out;
  }
  if (mw.type == MwType::kType2) {
    // o10-37.2.30: bound only when free; o10-37.2.40: no zero length.
    if (mw.bound || c.length == 0) return out;
    // The consumer owns the low 8 bits only (rxe 6.1 takes them and
    // ignores the rest).
    if ((c.wr_rkey & ~0xffu) != (mw.rkey & ~0xffu) &&
        rules.bind_checks_rkey_index) {
      return out;
    }
  }
  if (c.length > 0) {
    if (mr == nullptr || !mr->live) return out;
    // C10-72 for the region.
    if (rules.bind_checks_pd && mr->pd != c.qp_pd) return out;
    // C10-73.
    if ((mr->access & kAccessMwBind) == 0) return out;
    // C10-74.
    if ((c.access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
        (mr->access & kAccessLocalWrite) == 0) {
      return out;
    }
    // C10-75.
    using U = unsigned __int128;
    if (c.addr < mr->addr || U{c.addr} + c.length > U{mr->addr} + mr->length) {
      return out;
    }
  }
  out.status = WcStatus::kSuccess;
  return out;
}

void KeyModel::ApplyBind(const BindCall& c, WcStatus status) {
  ModelMw& mw = mws_[c.mw];
  // The window keeps its index; the bind chooses the key byte.
  const uint32_t given = c.verb ? IncRkey(mw.handle_rkey) : c.wr_rkey;
  const uint32_t new_rkey = (mw.rkey & ~0xffu) | (given & 0xffu);
  if (c.verb) mw.handle_rkey = given;
  if (status != WcStatus::kSuccess) return;
  Unbind(mw);
  SetMwKey(c.mw, new_rkey);
  // A type 2 window's handle reports its key; a type 1 handle only learns
  // of binds through ibv_bind_mw.
  if (mw.type == MwType::kType2) mw.handle_rkey = new_rkey;
  if (c.length > 0) {
    mw.bound = true;
    mw.mr = c.mr;
    mw.addr = c.addr;
    mw.length = c.length;
    mw.access = c.access;
    if (mw.type == MwType::kType2) mw.qp = c.qp;
  }
}

InvVerdict KeyModel::CheckInvalidate(int node, uint32_t rkey, int pd, int qp,
                                     const ProfileRules& rules,
                                     int* window) const {
  // IBA 10.6.5: only a bound type 2 window of the QP's PD (or a
  // fast-registered region, which user space cannot make) is invalidated;
  // type 1 windows are unbound by a zero-length bind.
  auto it = by_mw_rkey_.find({node, rkey});
  if (it == by_mw_rkey_.end()) return InvVerdict::kNotInvalidatable;
  const ModelMw& mw = mws_[it->second];
  if (!mw.bound || mw.type != MwType::kType2 || mw.pd != pd) {
    return InvVerdict::kNotInvalidatable;
  }
  if (mw.qp != qp && rules.invalidate_checks_qp) return InvVerdict::kWrongQp;
  *window = it->second;
  return InvVerdict::kOk;
}

void KeyModel::Invalidate(int window) { Unbind(mws_[window]); }

StatusSet LocalInvStatus(InvVerdict v, const ProfileRules& rules) {
  StatusSet want = {WcStatus::kSuccess};
  if (v == InvVerdict::kWrongQp) want = {WcStatus::kMwBindErr};
  if (v == InvVerdict::kNotInvalidatable) want = rules.local_inv_refused;
  return want;
}

}  // namespace verbsim::fuzz
