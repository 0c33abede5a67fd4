// The verbs the registration, rkey and sequence harnesses all drive, each
// written once: the access they register with, the target of a remote work
// request and what an atomic leaves there, posting a memory-window bind or
// a LOCAL_INV, the checks on keys and window rkeys after such a call, and
// the count a `regfail` or `postfail` fault rule keeps.
#ifndef VERBSIM_FUZZ_VERBS_OPS_H_
#define VERBSIM_FUZZ_VERBS_OPS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "core/types.h"
#include "core/verbs.h"
#include "fuzz/model.h"

namespace verbsim::fuzz {

// --- Registration ------------------------------------------------------------

// LOCAL_WRITE and every REMOTE_* flag.
constexpr uint32_t kFullAccess = kAccessLocalWrite | kAccessRemoteWrite |
                                 kAccessRemoteRead | kAccessRemoteAtomic;

// `access` with LOCAL_WRITE added where REMOTE_WRITE or REMOTE_ATOMIC needs
// it (ibv_reg_mr(3) refuses them without): for registrations meant to
// succeed, where that rule is not what is being fuzzed.
inline uint32_t WithLocalWriteForRemote(uint32_t access) {
  if (access & (kAccessRemoteWrite | kAccessRemoteAtomic)) {
    access |= kAccessLocalWrite;
  }
  return access;
}

// Calls of one kind counted as a fault rule with `nth=N` counts them
// (`regfail`: registrations, `postfail`: post calls): the Nth call fails.
// N is 0 while no such rule is in force.
class NthCallFault {
 public:
  // Counts one call; whether it is the one the rule fails.
  bool Count() {
    ++calls_;
    return nth_ != 0 && calls_ == nth_;
  }
  uint64_t calls() const { return calls_; }
  uint64_t nth() const { return nth_; }
  void set_nth(uint64_t nth) { nth_ = nth; }

 private:
  uint64_t calls_ = 0;
  uint64_t nth_ = 0;
};

// --- Remote operations -------------------------------------------------------

inline bool IsAtomic(RemoteKind kind) {
  return kind == RemoteKind::kCmpSwap || kind == RemoteKind::kFetchAdd;
}

// The work request opcode of a remote operation.
WrOpcode WrOpcodeFor(RemoteKind kind);

// Sets where `wr` reaches the peer, in the fields its opcode reads: the
// atomic ones for compare-and-swap and fetch-and-add, else the RDMA ones.
void SetRemoteTarget(SendWr& wr, uint64_t addr, uint32_t rkey);

// The value an atomic of `kind` leaves at a target that held `orig`.
uint64_t AtomicResult(RemoteKind kind, uint64_t orig, uint64_t compare_add,
                      uint64_t swap);

// --- Memory windows ----------------------------------------------------------

// A window's rkey with its key byte one back: the key it answered to before
// its last bind, which no longer grants anything.
inline uint32_t StaleRkey(uint32_t rkey) {
  return (rkey & ~0xffu) | ((rkey - 1) & 0xffu);
}

// What the model holds of a window just allocated with rkey `rkey`.
ModelMw NewModelMw(int node, int pd, MwType type, uint32_t rkey);

// Posts the bind `call` describes of window `mw` on `qp`: by ibv_bind_mw
// when `call.verb`, else as a BIND_MW work request giving the window
// `call.wr_rkey`. `region` is the handle of `call.mr` (null: none).
absl::Status PostBind(Qp& qp, Mw* mw, Mr* region, const BindCall& call,
                      uint64_t wr_id, bool signaled);

// Posts a LOCAL_INV of `rkey` on `qp`; the post itself must succeed (what
// the invalidation does shows in its completion).
void PostLocalInv(Qp& qp, uint64_t wr_id, uint32_t rkey, bool signaled);

// A violation unless the handle of window `index` (`model` in `keys`)
// reports the rkey the model holds for it.
void CheckWindowRkey(const Mw& mw, const KeyModel& keys, int model,
                     size_t index);

// A violation when two live objects of a node share a key.
void CheckKeyCollisions(const KeyModel& keys);

}  // namespace verbsim::fuzz

#endif  // VERBSIM_FUZZ_VERBS_OPS_H_
