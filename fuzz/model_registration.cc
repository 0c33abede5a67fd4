// The model of registration: ibv_reg_mr's argument rules, the MRs and their
// keys (KeyModel: lookups, bounds and access of each key), ibv_dereg_mr's
// errno and ibv_rereg_mr(3).
#include <algorithm>
#include <cerrno>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/model.h"

namespace verbsim::fuzz {

// --- Registration ------------------------------------------------------------

namespace {

constexpr uint32_t kKnownAccess =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
    kAccessRemoteAtomic | kAccessMwBind | kAccessZeroBased | kAccessOnDemand;

}  // namespace

bool EmptyMrRegisters(const ProfileRules& rules, uint64_t addr) {
  return rules.empty_mr_inside_a_page && addr % 4096 != 0;
}

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
  if (c.length == 0 && !EmptyMrRegisters(rules, c.addr)) return EINVAL;
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

int DeregErrno(bool live, int bound_windows, const ProfileRules& rules) {
  return !live ? EINVAL : bound_windows > 0 ? rules.dereg_bound_mr_errno : 0;
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

}  // namespace verbsim::fuzz
