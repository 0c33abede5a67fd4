#include "sim/keys.h"

namespace verbsim::sim {
namespace {

// key = slot << 12 | (generation mod 2^11) << 1 | remote bit. Slot 0 is never
// used, so no key is 0.
constexpr int kGenBits = 11;
uint32_t MakeKey(uint32_t slot, uint32_t generation, KeyKind kind) {
  return (slot << 12) | ((generation & ((1u << kGenBits) - 1)) << 1) |
         (kind == KeyKind::kRemote ? 1u : 0u);
}

}  // namespace

absl::string_view AccessResultName(AccessResult r) {
  switch (r) {
    case AccessResult::kOk: return "ok";
    case AccessResult::kBadKey: return "no live MR has this key";
    case AccessResult::kPdMismatch: return "MR of another PD";
    case AccessResult::kOutOfBounds: return "range outside the MR";
    case AccessResult::kAccessDenied: return "MR lacks the access flag";
    case AccessResult::kWrongQp: return "type 2 window of another QP";
  }
  return "?";
}

void KeyTable::Insert(const std::shared_ptr<MrState>& mr) {
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.front();
    free_.pop_front();
  } else {
    if (slots_.empty()) slots_.emplace_back();  // slot 0 unused
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
    slots_.back().generation = first_generation_;
  }
  Slot& s = slots_[slot];
  s.mr = mr;
  mr->slot = slot;
  mr->lkey = MakeKey(slot ^ mr_space_, s.generation, KeyKind::kLocal);
  mr->rkey = MakeKey(slot ^ mr_space_, s.generation,
                     one_key_ ? KeyKind::kLocal : KeyKind::kRemote);
  constexpr uint32_t kRemoteAccess =
      kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  // Key 0 names no MR (slot 0 is never used).
  if (rkey_needs_remote_ && (mr->access & kRemoteAccess) == 0) mr->rkey = 0;
  ++live_;
}

void KeyTable::Remove(const MrState& mr) {
  if (mr.slot == 0 || mr.slot >= slots_.size()) return;
  Slot& s = slots_[mr.slot];
  if (s.mr.get() != &mr) return;
  s.mr.reset();
  ++s.generation;
  ++changes_;
  free_.push_back(mr.slot);
  --live_;
}

MrState* KeyTable::Lookup(uint32_t key, KeyKind kind) const {
  uint32_t slot = (key >> 12) ^ mr_space_;
  if (slot == 0 || slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  if (one_key_) kind = KeyKind::kLocal;
  if (s.mr == nullptr || MakeKey(slot ^ mr_space_, s.generation, kind) != key) {
    return nullptr;
  }
  return s.mr.get();
}

void KeyTable::InsertMw(const std::shared_ptr<MwState>& mw) {
  uint32_t index;
  if (!mw_free_.empty()) {
    index = mw_free_.front();
    mw_free_.pop_front();
  } else {
    index = static_cast<uint32_t>(mw_slots_.size());
    mw_slots_.emplace_back();
  }
  MwSlot& s = mw_slots_[index];
  s.mw = mw;
  mw->index = index;
  mw->rkey = 0x80000000u | ((index ^ mw_space_) << 8) | s.next_key;
  s.next_key = static_cast<uint8_t>(s.next_key + 0x35);
  ++live_mws_;
}

void KeyTable::RemoveMw(const MwState& mw) {
  if (mw.index >= mw_slots_.size()) return;
  MwSlot& s = mw_slots_[mw.index];
  if (s.mw.get() != &mw) return;
  s.mw.reset();
  mw_free_.push_back(mw.index);
  --live_mws_;
}

MwState* KeyTable::LookupMw(uint32_t key) const {
  if (!IsMwKey(key)) return nullptr;
  const uint32_t index = ((key & 0x7fffffffu) >> 8) ^ mw_space_;
  if (index >= mw_slots_.size()) return nullptr;
  return mw_slots_[index].mw.get();
}

namespace {

// [addr, addr + length) inside [base, base + size), without overflow.
bool InRange(uint64_t addr, uint64_t length, uint64_t base, uint64_t size) {
  return addr >= base && length <= size && addr - base <= size - length;
}

}  // namespace

AccessResult CheckAccess(const KeyTable& keys, uint32_t key, KeyKind kind,
                         const PdState* pd, uint64_t addr, uint64_t length,
                         uint32_t required, MrState** mr_out, uint32_t qpn) {
  if (IsMwKey(key)) {
    // Windows have rkeys only; a stale rkey (rebound, invalidated,
    // deallocated) no longer matches.
    const MwState* mw = kind == KeyKind::kRemote ? keys.LookupMw(key) : nullptr;
    if (mw == nullptr || mw->dead || !mw->bound || mw->rkey != key ||
        mw->mr == nullptr || mw->mr->dead) {
      return AccessResult::kBadKey;
    }
    if (mw->pd.get() != pd) return AccessResult::kPdMismatch;
    if (mw->type == MwType::kType2 && mw->qpn != qpn) {
      return AccessResult::kWrongQp;
    }
    const bool in_bounds =
        keys.window_bounds_checked()
            ? InRange(addr, length, mw->addr, mw->length)
            : InRange(addr, length, mw->mr->addr, mw->mr->length);
    if (!in_bounds) return AccessResult::kOutOfBounds;
    if ((mw->access & required) != required) {
      return AccessResult::kAccessDenied;
    }
    if (mr_out != nullptr) *mr_out = mw->mr.get();
    return AccessResult::kOk;
  }
  MrState* mr = keys.Lookup(key, kind);
  if (mr == nullptr || mr->dead) return AccessResult::kBadKey;
  if (mr->pd.get() != pd) return AccessResult::kPdMismatch;
  // [addr, addr + length) inside [mr->addr, mr->addr + mr->length), computed
  // without overflow.
  if (!InRange(addr, length, mr->addr, mr->length)) {
    return AccessResult::kOutOfBounds;
  }
  if ((mr->access & required) != required) return AccessResult::kAccessDenied;
  if (mr_out != nullptr) *mr_out = mr;
  return AccessResult::kOk;
}

}  // namespace verbsim::sim
