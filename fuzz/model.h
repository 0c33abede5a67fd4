// The reference model the fuzz harnesses check the sim against: a small,
// separate implementation of the registration, access-flag, bounds,
// key-liveness, post and QP-transition rules, written from the ibverbs man
// pages, the IBTA rules and the project's semantics notes (semantics.md,
// sections 2, 3 and 5), NOT from the sim's code. It deliberately does not include or call
// anything under sim/ (keys.h, qp_verbs.h, profile.h): it depends on the
// public value types of core/types.h only.
//
// Where the sources allow more than one outcome (semantics.md marks those),
// the model predicts a set of statuses instead of one.
//
// Not modelled because the API does not have them yet (issue 3): memory
// windows (ibv_alloc_mw / ibv_bind_mw / BIND_MW work requests) and MR
// re-registration (ibv_rereg_mr). The rules that concern them are reduced to
// what follows from their absence: nothing can be bound, and no rkey can be
// invalidated (an MR from ibv_reg_mr is neither a window nor fast-registered).
#ifndef VERBSIM_FUZZ_MODEL_H_
#define VERBSIM_FUZZ_MODEL_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"

namespace verbsim::fuzz {

// A set of allowed completion statuses.
class StatusSet {
 public:
  StatusSet() = default;
  StatusSet(std::initializer_list<WcStatus> s) : items_(s) {}
  static StatusSet AnyError();  // every status but SUCCESS
  bool Contains(WcStatus s) const;
  bool IsSuccessOnly() const {
    return items_.size() == 1 && items_[0] == WcStatus::kSuccess;
  }
  bool AllowsSuccess() const { return Contains(WcStatus::kSuccess); }
  std::string ToString() const;

 private:
  std::vector<WcStatus> items_;
  bool any_error_ = false;
};

// What differs between the implementations the sim's profiles stand for
// (semantics.md sections 2 and 6), as this model reads the sources.
struct ProfileRules {
  std::string name;
  // Requester status of a WR whose local SGE fails its check.
  StatusSet bad_lkey;
  // Receiver status when the receive buffer fails its local check.
  StatusSet recv_access;
  // Receiver status when the receive buffer is too small.
  StatusSet recv_too_small;
  // Receiver status of a send-with-invalidate whose rkey cannot be
  // invalidated.
  StatusSet recv_bad_invalidate;
  // Whether a zero-length RDMA read/write is done without an rkey check.
  bool zero_length_skips_rkey = true;
  // Requester status when the responder QP lacks the REMOTE_* flag.
  StatusSet qp_access_denied;
};
// "ibta" (also for "") or "rxe".
ProfileRules RulesFor(const std::string& profile);

// --- Registration: ibv_reg_mr(3) ---------------------------------------------

struct RegLimits {
  uint64_t max_mr_size = 0;
  uint64_t max_mr = 0;
};

struct RegCall {
  bool pd_alive = true;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
};

// The errno a registration fails with because of its arguments (0: the
// arguments are fine): argument and flag errors first (EINVAL), an
// unsupported feature next (EOPNOTSUPP), as the kernel's access check runs
// before the memory is looked at.
int RegArgumentErrno(const RegCall& call, const RegLimits& limits);

// --- Keys, bounds and access -------------------------------------------------

enum class KeyVerdict {
  kOk,
  kNoSuchKey,   // no live MR on this node has this key (of this kind)
  kOtherPd,     // the MR belongs to another PD
  kOutOfRange,  // the range is not inside the MR
  kNoAccess,    // the MR lacks a flag the access needs
};
const char* KeyVerdictName(KeyVerdict v);

struct ModelMr {
  int node = 0;
  int pd = 0;  // harness-wide PD id
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  bool live = true;
};

class KeyModel {
 public:
  // Returns the MR's index.
  int Add(const ModelMr& mr);
  void Kill(int index);
  const ModelMr& mr(int index) const { return mrs_[index]; }
  int size() const { return static_cast<int>(mrs_.size()); }
  int LiveInPd(int pd) const;
  int LiveOnNode(int node) const;

  // The check of one access with `key` on `node`: a live MR whose lkey (or
  // rkey when `remote`) is `key`, of PD `pd`, holding [addr, addr + len) and
  // granting every bit of `required`. Length-0 accesses are not exempt here;
  // the callers decide where the rules exempt them.
  KeyVerdict Check(int node, uint32_t key, bool remote, int pd, uint64_t addr,
                   uint64_t len, uint32_t required) const;

  // Empty when no two distinct live MRs of one node have shared a key value
  // (an MR's own lkey and rkey may be equal, as on mlx5); else a description
  // of the first such pair.
  std::string FindCollision() const { return collision_; }

 private:
  using Where = std::pair<int, uint32_t>;  // node, key
  std::vector<ModelMr> mrs_;
  // The live MRs by key value, for lookups and the collision check.
  std::map<Where, int> by_lkey_;
  std::map<Where, int> by_rkey_;
  std::string collision_;
};

// --- Posting: ibv_post_send(3) / ibv_post_recv(3) ----------------------------

struct QpCaps {
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline_data = 0;
};

// The per-WR checks of ibv_post_send that do not depend on the queue's
// occupancy: 0 or EINVAL.
int SendWrErrno(const SendWr& wr, const QpCaps& caps);
// Whether post_send is refused in this state (RESET, INIT, RTR: EINVAL).
bool SendQueueClosed(QpState state);
// Whether post_recv is refused in this state (RESET: EINVAL).
bool RecvQueueClosed(QpState state);

// The completion opcode of a successful send WR.
WcOpcode WcOpcodeOf(WrOpcode op);

// --- QP state transitions: ibv_modify_qp(3), IBA 10.3 ------------------------

// 0 when an RC QP may go from `from` to `to` with exactly the attributes in
// `mask` (kQpState included or not), else EINVAL.
int ModifyErrno(QpState from, QpState to, uint32_t mask);

// The masks the harnesses use for each step (semantics.md section 3).
uint32_t InitMask();  // RESET -> INIT (RC)
uint32_t RtrMask();   // INIT -> RTR (RC)
uint32_t RtsMask();   // RTR -> RTS (RC)

// --- Remote operations (semantics.md section 2) ------------------------------

enum class RemoteKind { kWrite, kWriteImm, kRead, kCmpSwap, kFetchAdd, kSendInv };

struct RemoteRequest {
  RemoteKind kind = RemoteKind::kWrite;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint64_t length = 0;  // 8 for atomics
  // Send with invalidate: the capacity of the receive it lands in.
  uint64_t recv_capacity = 0;
};

struct ResponderView {
  int node = 0;
  int pd = 0;
  uint32_t qp_access = 0;  // the responder QP's REMOTE_* flags
};

struct RemoteOutcome {
  StatusSet requester;  // the requester's completion
  // Whether the target memory is read or changed (the op succeeded).
  bool executes = false;
  // Whether a receive WQE is consumed and completes with `receiver`.
  bool consumes_recv = false;
  StatusSet receiver;
  // Whether the responder QP goes to ERR (then its posted receives flush).
  bool responder_error = false;
};

RemoteOutcome PredictRemote(const RemoteRequest& req, const ResponderView& rv,
                            const KeyModel& keys, const ProfileRules& rules);

// Names for messages.
std::string StatusName(WcStatus s);

}  // namespace verbsim::fuzz

#endif  // VERBSIM_FUZZ_MODEL_H_
