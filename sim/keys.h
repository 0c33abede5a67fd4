// Memory keys and the one access check every caller uses.
//
// A key names a slot in the node's key table and carries the slot's
// generation, so a key of a deregistered MR is rejected even once the slot is
// reused. lkey and rkey differ in their low bit: an rkey presented as an lkey
// (or the reverse) does not match. Profiles of devices with one key per MR
// (rxe, siw) give both the same key, and rxe gives rkey 0 to an MR that has
// no remote access.
#ifndef VERBSIM_SIM_KEYS_H_
#define VERBSIM_SIM_KEYS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "sim/ring.h"
#include "sim/state.h"

namespace verbsim::sim {

enum class KeyKind { kLocal, kRemote };

enum class AccessResult {
  kOk,
  kBadKey,        // no live MR or bound window has this key
  kPdMismatch,    // the MR belongs to another PD than the QP's
  kOutOfBounds,   // the range leaves the MR (or wraps)
  kAccessDenied,  // the MR lacks an access flag the operation needs
  kWrongQp,       // a type 2 window used through another QP than its own
};

// Whether `key` is a memory window's (see MwState).
inline bool IsMwKey(uint32_t key) { return (key & 0x80000000u) != 0; }
absl::string_view AccessResultName(AccessResult r);

class KeyTable {
 public:
  // Allocates a slot for `mr` and sets its lkey and rkey.
  void Insert(const std::shared_ptr<MrState>& mr);
  // Frees the slot; its keys are dead from now on.
  void Remove(const MrState& mr);
  // The live MR a key names, or null.
  MrState* Lookup(uint32_t key, KeyKind kind) const;
  size_t live() const { return live_; }
  // Counts the changes that can make a key checked earlier fail now: a
  // region removed, or reregistered (NoteChange).
  uint64_t changes() const { return changes_; }
  void NoteChange() { ++changes_; }

  // Memory windows: a slot and a first rkey for `mw`; freeing the slot.
  void InsertMw(const std::shared_ptr<MwState>& mw);
  void RemoveMw(const MwState& mw);
  // The live window whose index `key` names (whatever its low 8 bits), or
  // null.
  MwState* LookupMw(uint32_t key) const;
  size_t live_mws() const { return live_mws_; }
  // Whether accesses through a window are held to the window's bounds (the
  // profile's mw_bounds_checked) or only to its region's.
  void set_window_bounds_checked(bool on) { window_bounds_checked_ = on; }
  // Keys of process slot `slot` (sim/udp_transport.h), so that the
  // processes sharing a node make different keys, as one HCA does: the
  // slot is XORed into the top bits of the key's index (bits 27 to 30 of an
  // MR's keys, 26 to 29 of a window's rkey). A process with more than 32767
  // regions or 262143 windows alive reaches the next slot's keys. Slot 0
  // (every in-process fabric) leaves the keys as they are.
  void set_process_slot(int slot) {
    mr_space_ = static_cast<uint32_t>(slot) << 15;
    mw_space_ = static_cast<uint32_t>(slot) << 18;
  }
  // MR keys of node `node`: a slot's first generation differs from node
  // to node, so that an MR key of one node names nothing on another, as an
  // HCA refuses another's key (rxe and siw draw a key's low byte at
  // random). Node 0 keeps the keys it always had.
  void set_node(int node) {
    first_generation_ = static_cast<uint32_t>(node) * 0x35u;
  }
  // One key for both directions (SimProfile::one_key_for_both), and rkey 0
  // for an MR without remote access (rkey_needs_remote_access).
  void set_key_scheme(bool one_key_for_both, bool rkey_needs_remote_access) {
    one_key_ = one_key_for_both;
    rkey_needs_remote_ = rkey_needs_remote_access;
  }
  bool window_bounds_checked() const { return window_bounds_checked_; }

 private:
  struct Slot {
    uint32_t generation = 0;
    std::shared_ptr<MrState> mr;
  };
  std::vector<Slot> slots_;
  Ring<uint32_t> free_;  // FIFO reuse keeps generations apart
  size_t live_ = 0;
  uint64_t changes_ = 0;
  struct MwSlot {
    uint8_t next_key = 0;  // a reused slot starts with another key
    std::shared_ptr<MwState> mw;
  };
  std::vector<MwSlot> mw_slots_;
  Ring<uint32_t> mw_free_;
  size_t live_mws_ = 0;
  bool window_bounds_checked_ = true;
  uint32_t first_generation_ = 0;  // set_node
  uint32_t mr_space_ = 0;  // set_process_slot
  uint32_t mw_space_ = 0;
  bool one_key_ = false;
  bool rkey_needs_remote_ = false;
};

// The access check (IBA 10.6.3 / C10-xx protection rules): `key` must name a
// live MR of `pd` whose range holds [addr, addr + length) and whose access
// flags include every bit of `required`. A remote key may instead name a
// bound memory window (IBA 10.6.7.3): the window's current rkey exactly, of
// `pd`, for type 2 bound through QP `qpn`, the range inside the window and
// `required` within the window's access.
AccessResult CheckAccess(const KeyTable& keys, uint32_t key, KeyKind kind,
                         const PdState* pd, uint64_t addr, uint64_t length,
                         uint32_t required, MrState** mr_out = nullptr,
                         uint32_t qpn = 0);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_KEYS_H_
