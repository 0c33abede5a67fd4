#include "fuzz/model.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "core/names.h"

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
    r.checks_response_sges_on_arrival = true;
    r.one_key_for_both = true;
    r.rkey_needs_remote_access = true;
    r.ignored_access_bits = (1u << 7) | 0x3ff00000u;
    r.accepts_zero_based = true;
    r.on_demand_errno = EINVAL;
    r.zero_length_mr = false;
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

// --- Registration ------------------------------------------------------------

namespace {

constexpr uint32_t kKnownAccess =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
    kAccessRemoteAtomic | kAccessMwBind | kAccessZeroBased | kAccessOnDemand;

}  // namespace

int RegArgumentErrno(const RegCall& c, const RegLimits& limits,
                     const ProfileRules& rules) {
  // A destroyed PD is not a PD.
  if (!c.pd_alive) return EINVAL;
  // Flags first: bits nobody knows (some the device ignores).
  if ((c.access & ~(kKnownAccess | rules.ignored_access_bits)) != 0) {
    return EINVAL;
  }
  // ibv_reg_mr(3): remote write or remote atomic needs local write.
  const bool wants_remote_modify =
      (c.access & kAccessRemoteWrite) || (c.access & kAccessRemoteAtomic);
  if (wants_remote_modify && !(c.access & kAccessLocalWrite)) return EINVAL;
  // Zero-based addressing needs an iova, which ibv_reg_mr does not take
  // (the kernel drivers ignore the bit).
  if ((c.access & kAccessZeroBased) && !rules.accepts_zero_based) {
    return EINVAL;
  }
  // On-demand paging is a device capability the simulated HCA lacks.
  if (c.access & kAccessOnDemand) return rules.on_demand_errno;
  // The kernel's ib_umem_get takes no empty range.
  if (c.length == 0 && !rules.zero_length_mr) return EINVAL;
  // The range: a null buffer of nonzero length, one that wraps around the
  // address space, or one longer than the device allows.
  if (c.addr == 0 && c.length > 0) return EINVAL;
  // The end address must be representable (the kernel's
  // check_add_overflow(addr, size, &end) in ib_umem_get): a range ending at
  // exactly 2^64 counts as wrapping.
  const unsigned __int128 end =
      static_cast<unsigned __int128>(c.addr) + c.length;
  if (end > static_cast<unsigned __int128>(UINT64_MAX)) return EINVAL;
  if (c.length > limits.max_mr_size) return EINVAL;
  return 0;
}

// --- Keys --------------------------------------------------------------------

const char* KeyVerdictName(KeyVerdict v) {
  switch (v) {
    case KeyVerdict::kOk: return "ok";
    case KeyVerdict::kNoSuchKey: return "no live MR has the key";
    case KeyVerdict::kOtherPd: return "MR of another PD";
    case KeyVerdict::kOutOfRange: return "range not inside the MR";
    case KeyVerdict::kNoAccess: return "MR lacks the access";
    case KeyVerdict::kWrongQp: return "type 2 window of another QP";
  }
  return "?";
}

int KeyModel::Add(const ModelMr& mr) {
  const int index = static_cast<int>(mrs_.size());
  mrs_.push_back(mr);
  if (!mr.live) return index;
  // A new live MR's keys must not be a key of another live MR on its node.
  for (uint32_t key : {mr.lkey, mr.rkey}) {
    if (key == 0) continue;  // rkey 0: the MR has no rkey (rxe)
    const Where w{mr.node, key};
    for (const std::map<Where, int>* table : {&by_lkey_, &by_rkey_}) {
      auto it = table->find(w);
      if (it != table->end() && collision_.empty()) {
        const ModelMr& other = mrs_[it->second];
        collision_ = absl::StrCat(
            "live MRs #", it->second, " (lkey 0x", absl::Hex(other.lkey),
            " rkey 0x", absl::Hex(other.rkey), ") and #", index, " (lkey 0x",
            absl::Hex(mr.lkey), " rkey 0x", absl::Hex(mr.rkey), ") on node ",
            mr.node, " share key 0x", absl::Hex(key));
      }
    }
  }
  for (uint32_t key : {mr.lkey, mr.rkey}) {
    if (key != 0) NoteKey(mr.node, key, index, -1, absl::StrCat("MR #", index));
  }
  by_lkey_[{mr.node, mr.lkey}] = index;
  if (mr.rkey != 0) by_rkey_[{mr.node, mr.rkey}] = index;
  return index;
}

void KeyModel::Kill(int index) {
  ModelMr& m = mrs_[index];
  if (!m.live) return;
  m.live = false;
  auto drop = [&](std::map<Where, int>& table, uint32_t key) {
    auto it = table.find({m.node, key});
    if (it != table.end() && it->second == index) table.erase(it);
  };
  drop(by_lkey_, m.lkey);
  drop(by_rkey_, m.rkey);
}

int KeyModel::LiveInPd(int pd) const {
  int n = 0;
  for (const ModelMr& m : mrs_) n += m.live && m.pd == pd;
  return n;
}

int KeyModel::LiveOnNode(int node) const {
  int n = 0;
  for (const auto& [where, index] : by_lkey_) n += where.first == node;
  return n;
}

KeyVerdict KeyModel::Check(int node, uint32_t key, bool remote, int pd,
                           uint64_t addr, uint64_t len,
                           uint32_t required, int qp) const {
  // In 128 bits, so nothing wraps.
  using U = unsigned __int128;
  auto inside = [&](uint64_t base, uint64_t size) {
    const U a = addr;
    return a >= base && a + len <= U{base} + size;
  };
  const std::map<Where, int>& table = remote ? by_rkey_ : by_lkey_;
  auto it = table.find({node, key});
  if (it == table.end()) {
    // Windows have rkeys only, and answer only while bound.
    if (!remote) return KeyVerdict::kNoSuchKey;
    auto w = by_mw_rkey_.find({node, key});
    if (w == by_mw_rkey_.end()) return KeyVerdict::kNoSuchKey;
    const ModelMw& mw = mws_[w->second];
    if (!mw.bound) return KeyVerdict::kNoSuchKey;
    // IBA 10.6.7.3 (o10-39..): the window's PD, for type 2 its QP, its
    // bounds and its rights.
    if (mw.pd != pd) return KeyVerdict::kOtherPd;
    if (mw.type == MwType::kType2 && mw.qp != qp) return KeyVerdict::kWrongQp;
    const ModelMr& under = mrs_[mw.mr];
    if (window_bounds_checked_ ? !inside(mw.addr, mw.length)
                               : !inside(under.addr, under.length)) {
      return KeyVerdict::kOutOfRange;
    }
    if ((mw.access & required) != required) return KeyVerdict::kNoAccess;
    return KeyVerdict::kOk;
  }
  const ModelMr* found = &mrs_[it->second];
  if (found->pd != pd) return KeyVerdict::kOtherPd;
  if (!inside(found->addr, found->length)) return KeyVerdict::kOutOfRange;
  if ((found->access & required) != required) return KeyVerdict::kNoAccess;
  return KeyVerdict::kOk;
}

// --- Re-registration ---------------------------------------------------------

void KeyModel::Rereg(int index, uint32_t flags, int pd, uint64_t addr,
                     uint64_t length, uint32_t access) {
  ModelMr& m = mrs_[index];
  if (flags & kReregChangePd) m.pd = pd;
  if (flags & kReregChangeTranslation) {
    m.addr = addr;
    m.length = length;
  }
  if (flags & kReregChangeAccess) m.access = access;
}

std::vector<int> ReregErrnos(const ReregCall& c, const RegLimits& limits,
                             const ProfileRules& rules) {
  if (!c.mr_alive) return {EINVAL};
  std::vector<int> out;
  auto allow = [&](int e) {
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  };
  if (!rules.supports_rereg) {
    // The verb is absent; libibverbs may still refuse bad flags first.
    allow(EOPNOTSUPP);
    if ((c.flags & ~kReregAllKnown) != 0) allow(EINVAL);
    return out;
  }
  if ((c.flags & ~kReregAllKnown) != 0) allow(EINVAL);
  // libibverbs: an access is given only with CHANGE_ACCESS.
  if (c.access != 0 && !(c.flags & kReregChangeAccess)) allow(EINVAL);
  if ((c.flags & kReregChangePd) && !c.pd_valid) allow(EINVAL);
  if (c.flags & kReregChangeTranslation) {
    // ibv_rereg_mr(3): a new translation needs an address and a length.
    if (c.addr == 0 || c.length == 0) {
      allow(EINVAL);
    } else {
      const int e = RegArgumentErrno(RegCall{true, c.addr, c.length, 0},
                                     limits, rules);
      if (e != 0) allow(e);
    }
  }
  if (c.flags & kReregChangeAccess) {
    // ibv_reg_mr's flag rules; the range is fine here (1 byte at 4 KiB).
    const int e =
        RegArgumentErrno(RegCall{true, 0x1000, 1, c.access}, limits, rules);
    if (e != 0) allow(e);
  }
  if (c.bound_windows > 0) allow(EBUSY);
  return out;
}

// --- Memory windows ----------------------------------------------------------

int AllocMwErrno(bool pd_alive, int type, int max_mw, int live_mws) {
  if (!pd_alive) return EINVAL;
  if (type != static_cast<int>(MwType::kType1) &&
      type != static_cast<int>(MwType::kType2)) {
    return EINVAL;
  }
  if (max_mw <= 0) return EOPNOTSUPP;
  if (live_mws >= max_mw) return ENOMEM;
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

// --- Posting -----------------------------------------------------------------

namespace {

bool IsAtomicOp(WrOpcode op) {
  return op == WrOpcode::kAtomicCmpAndSwp || op == WrOpcode::kAtomicFetchAndAdd;
}

constexpr uint32_t kKnownSendFlags =
    kSendFence | kSendSignaled | kSendSolicited | kSendInline;

}  // namespace

int SendWrErrno(const SendWr& wr, const QpCaps& caps,
                const PostSendRules& rules) {
  const int op = static_cast<int>(wr.opcode);
  if (op < static_cast<int>(WrOpcode::kRdmaWrite) ||
      op > static_cast<int>(WrOpcode::kSendWithInv)) {
    return EINVAL;
  }
  // BIND_MW: these checks see only binds that name no window (EINVAL);
  // binds of windows are KeyModel::PredictBind's.
  if (wr.opcode == WrOpcode::kBindMw) return EINVAL;
  if ((wr.send_flags & ~kKnownSendFlags) != 0) return EINVAL;
  if (wr.sg_list.size() > caps.max_send_sge) return EINVAL;
  uint64_t total = 0;
  for (const Sge& s : wr.sg_list) total += s.length;
  // The largest IBA message is 2^31 bytes.
  if (total > (uint64_t{1} << 31)) return EINVAL;
  if (wr.send_flags & kSendInline) {
    // docs/semantics.md §5: inline only for send and RDMA write, bounded by
    // max_inline_data.
    const bool inline_ok =
        wr.opcode == WrOpcode::kSend || wr.opcode == WrOpcode::kSendWithImm ||
        wr.opcode == WrOpcode::kSendWithInv ||
        wr.opcode == WrOpcode::kRdmaWrite ||
        wr.opcode == WrOpcode::kRdmaWriteWithImm;
    if ((!inline_ok && rules.inline_needs_send_or_write) ||
        total > caps.max_inline_data) {
      return EINVAL;
    }
    for (const Sge& s : wr.sg_list) {
      if (s.length > 0 && s.addr == 0) return EINVAL;
    }
  }
  if (IsAtomicOp(wr.opcode)) {
    // An atomic returns the original 8 bytes: into exactly one 8-byte SGE,
    // or (rxe) into the first 8 of any list holding 8 or more.
    const bool sges_ok = rules.atomic_needs_one_8_byte_sge
                             ? wr.sg_list.size() == 1 &&
                                   wr.sg_list[0].length == 8
                             : total >= 8;
    if (!sges_ok) return EINVAL;
    if (rules.atomic_target_aligned_at_post &&
        (wr.atomic.remote_addr & 7) != 0) {
      return EINVAL;
    }
  }
  return 0;
}

bool SendQueueClosed(QpState s) {
  return s == QpState::kReset || s == QpState::kInit || s == QpState::kRtr;
}

bool RecvQueueClosed(QpState s) { return s == QpState::kReset; }

WcOpcode WcOpcodeOf(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm: return WcOpcode::kRdmaWrite;
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
    case WrOpcode::kSendWithInv: return WcOpcode::kSend;
    case WrOpcode::kRdmaRead: return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCmpAndSwp: return WcOpcode::kCompSwap;
    case WrOpcode::kAtomicFetchAndAdd: return WcOpcode::kFetchAdd;
    case WrOpcode::kLocalInv: return WcOpcode::kLocalInv;
    case WrOpcode::kBindMw: return WcOpcode::kBindMw;
  }
  return WcOpcode::kSend;
}

// --- Transitions -------------------------------------------------------------

namespace {

struct Step {
  bool valid = false;
  uint32_t required = 0;
  uint32_t optional = 0;
};

// The RC column of the transition table (ibv_modify_qp(3), IBA 10.3.1,
// the kernel's qp_state_table).
Step RcStep(QpState from, QpState to) {
  using S = QpState;
  Step t;
  // To RESET from anywhere, to ERR from anywhere but RESET (the kernel's
  // qp_state_table has no RESET -> ERR), with no other attribute.
  if (to == S::kReset || (to == S::kErr && from != S::kReset)) {
    t.valid = true;
    return t;
  }
  if (from == S::kReset && to == S::kInit) {
    t.valid = true;
    t.required = kQpPkeyIndex | kQpPort | kQpAccessFlags;
  } else if (from == S::kInit && to == S::kInit) {
    t.valid = true;
    t.optional = kQpPkeyIndex | kQpPort | kQpAccessFlags;
  } else if (from == S::kInit && to == S::kRtr) {
    t.valid = true;
    t.required = kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                 kQpMaxDestRdAtomic | kQpMinRnrTimer;
    t.optional = kQpAltPath | kQpAccessFlags | kQpPkeyIndex;
  } else if (from == S::kRtr && to == S::kRts) {
    t.valid = true;
    t.required = kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                 kQpMaxQpRdAtomic;
    t.optional = kQpCurState | kQpAltPath | kQpAccessFlags | kQpMinRnrTimer |
                 kQpPathMigState;
  } else if ((from == S::kRts || from == S::kSqd) && to == S::kRts) {
    t.valid = true;
    t.optional = kQpCurState | kQpAccessFlags | kQpAltPath | kQpMinRnrTimer |
                 kQpPathMigState;
  } else if (from == S::kRts && to == S::kSqd) {
    t.valid = true;
    t.optional = kQpEnSqdAsyncNotify;
  } else if (from == S::kSqd && to == S::kSqd) {
    t.valid = true;
    t.optional = kQpAv | kQpAltPath | kQpAccessFlags | kQpPkeyIndex |
                 kQpMinRnrTimer | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                 kQpMaxQpRdAtomic | kQpMaxDestRdAtomic | kQpPathMigState;
  }
  return t;
}

}  // namespace

int ModifyErrno(QpState from, QpState to, uint32_t mask) {
  if ((mask & ~((1u << 21) - 1)) != 0) return EINVAL;
  const QpState target = (mask & kQpState) ? to : from;
  const Step t = RcStep(from, target);
  if (!t.valid) return EINVAL;
  const uint32_t given = mask & ~kQpState;
  if ((t.required & ~given) != 0) return EINVAL;
  if ((given & ~(t.required | t.optional)) != 0) return EINVAL;
  return 0;
}

uint32_t InitMask() {
  return kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags;
}
uint32_t RtrMask() {
  return kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
         kQpMaxDestRdAtomic | kQpMinRnrTimer;
}
uint32_t RtsMask() {
  return kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
         kQpMaxQpRdAtomic;
}

// --- Remote operations -------------------------------------------------------

RemoteOutcome PredictRemote(const RemoteRequest& req, const ResponderView& rv,
                            const KeyModel& keys, const ProfileRules& rules) {
  RemoteOutcome out;
  auto fail = [&](StatusSet requester) {
    out.requester = requester;
    out.executes = false;
    out.responder_error = true;
  };
  auto succeed = [&]() {
    out.requester = {WcStatus::kSuccess};
    out.executes = true;
  };
  switch (req.kind) {
    case RemoteKind::kWrite:
    case RemoteKind::kWriteImm:
    case RemoteKind::kRead: {
      const bool read = req.kind == RemoteKind::kRead;
      const uint32_t need = read ? kAccessRemoteRead : kAccessRemoteWrite;
      // The responder QP must allow the operation at all.
      if ((rv.qp_access & need) == 0) {
        fail(rules.qp_access_denied);
        return out;
      }
      if (req.length == 0 && rules.zero_length_skips_rkey) {
        succeed();
      } else if (keys.Check(rv.node, req.rkey, /*remote=*/true, rv.pd,
                            req.addr, req.length, need,
                            rv.qp) == KeyVerdict::kOk) {
        succeed();
      } else {
        fail({WcStatus::kRemAccessErr});
        return out;
      }
      if (req.kind == RemoteKind::kWriteImm) {
        // The immediate completes a receive on the responder.
        out.consumes_recv = true;
        out.receiver = {WcStatus::kSuccess};
      }
      return out;
    }
    case RemoteKind::kCmpSwap:
    case RemoteKind::kFetchAdd: {
      if ((rv.qp_access & kAccessRemoteAtomic) == 0) {
        fail(rules.qp_access_denied);
        return out;
      }
      const bool misaligned = req.addr % 8 != 0;
      const bool key_ok =
          keys.Check(rv.node, req.rkey, true, rv.pd, req.addr, 8,
                     kAccessRemoteAtomic, rv.qp) == KeyVerdict::kOk;
      if (misaligned && key_ok) {
        fail({WcStatus::kRemInvReqErr});
      } else if (misaligned) {
        // Both checks fail; the sources do not order them (rxe checks the
        // rkey first), so either error is right.
        fail({WcStatus::kRemInvReqErr, WcStatus::kRemAccessErr});
      } else if (!key_ok) {
        fail({WcStatus::kRemAccessErr});
      } else {
        succeed();
      }
      return out;
    }
    case RemoteKind::kSendInv: {
      out.consumes_recv = true;
      if (req.length > req.recv_capacity) {
        fail(rules.recv_too_small_sender);
        out.receiver = rules.recv_too_small;
        return out;
      }
      // Only a bound type 2 window of the responder's PD (bound through its
      // QP, where the profile says so) can be invalidated; anything else
      // is a bad rkey (docs/semantics.md §2: REM_ACCESS_ERR at the requester).
      int window = -1;
      if (keys.CheckInvalidate(rv.node, req.rkey, rv.pd, rv.qp, rules,
                               &window) == InvVerdict::kOk) {
        succeed();
        out.receiver = {WcStatus::kSuccess};
        out.invalidates = window;
        return out;
      }
      if (rules.naks_failed_send_invalidate) {
        fail({WcStatus::kRemAccessErr});
      } else {
        succeed();
        out.executes = false;
        out.responder_error = true;
      }
      out.receiver = rules.recv_bad_invalidate;
      return out;
    }
  }
  return out;
}

}  // namespace verbsim::fuzz
