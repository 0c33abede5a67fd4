// The reference model the fuzz harnesses check the sim against: a small,
// separate implementation of the registration, access-flag, bounds,
// key-liveness, post and QP-transition rules, written from the ibverbs man
// pages, the IBTA rules and the project's semantics notes (docs/semantics.md,
// sections 2, 3 and 5), NOT from the sim's code. It deliberately does not include or call
// anything under sim/ (keys.h, qp_verbs.h, profile.h): it depends on the
// public value types of core/types.h only.
//
// Where the sources allow more than one outcome (docs/semantics.md marks those),
// the model predicts a set of statuses instead of one.
//
// Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3), BIND_MW work requests,
// LOCAL_INV and SEND_WITH_INV) follow IBA 10.6.7 and 10.6.5 (C10-72..75,
// o10-37.2.30/40) as docs/mw.md states them; MR re-registration follows
// ibv_rereg_mr(3). A window's rkey is an index part the device owns and an
// 8-bit key the consumer owns (ibv_inc_rkey(3)); the model never decodes a
// key: it looks keys up by value among the live objects it was told about.
#ifndef VERBSIM_FUZZ_MODEL_H_
#define VERBSIM_FUZZ_MODEL_H_

#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
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
  // Inline: the model builds a set for every completion it expects.
  absl::InlinedVector<WcStatus, 4> items_;
  bool any_error_ = false;
};

// The per-WR checks ibv_post_send makes before anything is sent, as each
// provider library makes them: one field per rule, true where the spec's
// rule (docs/semantics.md section 5) applies. The model's own statement of these
// rules, written from rdma-core's sources and the IBTA rules (the sim keeps
// its copy in sim/profile.h PostSendChecks; the two are compared only by
// running both). A new provider's rule is a new field, its default the
// spec's.
struct PostSendRules {
  // IBV_SEND_INLINE with anything but a send or an RDMA write is EINVAL
  // (rxe.c validate_send_wr checks only the inline length).
  bool inline_needs_send_or_write = true;
  // An atomic needs exactly one 8-byte SGE; otherwise 8 bytes or more in
  // any SGE list (rxe.c validate_send_wr: length < 8 is EINVAL).
  bool atomic_needs_one_8_byte_sge = true;
  // A target not 8-byte aligned is EINVAL at post (rxe.c validate_send_wr)
  // instead of the responder's REM_INV_REQ_ERR.
  bool atomic_target_aligned_at_post = false;
  // A BIND_MW work request for a type 1 window is EINVAL (IBA 10.6.7.2;
  // rxe 6.1 accepts it: its ibv_bind_mw posts one).
  bool type1_bind_wr_refused = true;
  // Before RTS a post fails EINVAL, yet the WRs that pass these checks and
  // find a free slot are written into the send queue and go out with the
  // first post in RTS (providers/rxe/rxe.c rxe_post_send rings the doorbell
  // after writing them; the kernel refuses it below RTS).
  bool keeps_wrs_posted_before_rts = false;
};

// What differs between the implementations the sim's profiles stand for
// (docs/semantics.md sections 2 and 6), as this model reads the sources.
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
  // Whether an RDMA read may fetch its data after later writes and atomics
  // of its QP ran (read relaxed ordering, docs/ordering.md rule R3: the
  // spec allows it unless a later WR carries IBV_SEND_FENCE; rxe fetches
  // in order).
  bool reads_may_see_later_writes = true;
  // Requester status when the responder QP lacks the REMOTE_* flag.
  StatusSet qp_access_denied;
  // C10-72 checked for type 1 windows too (rxe 6.1 checks only a type 2
  // window's PD against the QP's, and never the region's).
  bool bind_checks_pd = true;
  // Invalidating a type 2 window through another QP than the one it was
  // bound through fails with MW_BIND_ERR (rdma-unit-test); rxe allows it.
  bool invalidate_checks_qp = true;
  // ibv_dereg_mr of a region with windows bound: EBUSY (rxe: EINVAL).
  int dereg_bound_mr_errno = 0;
  // ibv_alloc_mw past the device's max_mw: ENOMEM (rxe: EINVAL).
  int mw_limit_errno = ENOMEM;
  // ibv_rereg_mr exists (rxe before 6.5: EOPNOTSUPP).
  bool supports_rereg = true;
  // Status of a LOCAL_INV that names nothing it may invalidate.
  StatusSet local_inv_refused;
  // Sender status when the receive is too small (the responder's NAK).
  StatusSet recv_too_small_sender;
  // Kernel 6.1 rxe as the guest showed it (tools/guest/
  // known_differences.md): an access through a window is checked against
  // the region's bounds only; a type 2 bind takes only the key byte of the
  // new rkey (the index is not checked); a BIND_MW work request for a type
  // 1 window is accepted (post_send); a SEND_WITH_INV receive does not report
  // IBV_WC_WITH_INV; a receive posted in ERR is never flushed; a CQ overrun
  // leaves the QPs in RTS.
  bool window_bounds_checked = true;
  bool bind_checks_rkey_index = true;
  bool reports_with_inv = true;
  bool flushes_recv_posted_in_err = true;
  bool cq_overflow_errors_qps = true;
  // Registration on kernel 6.1 rxe (ib_core, ib_umem_get, rxe_mr.c): one
  // key for both directions, rkey 0 without remote access, HUGETLB and the
  // optional range ignored, ZERO_BASED accepted, ON_DEMAND EINVAL, a
  // zero-length region only at an address inside a page
  // (EmptyMrRegisters).
  // A SEND_WITH_INV whose rkey cannot be invalidated: the sender is NAKed
  // (REM_ACCESS_ERR), or on rxe acknowledged (SUCCESS) while the responder
  // alone goes to ERR.
  bool naks_failed_send_invalidate = true;
  // ibv_post_send's checks in the provider library.
  PostSendRules post_send;
  // A READ's or atomic's local SGEs are checked when the response arrives
  // (rxe_comp.c): an atomic with a bad lkey is executed remotely first.
  bool checks_response_sges_on_arrival = false;
  // A fenced WR sent again after a timeout waits until no READ or atomic
  // is in flight, its own credit and those of later WRs included
  // (sim/profile.h fence_waits_for_later_reads_on_retry): the requester
  // stalls and its WRs stay uncompleted.
  bool fence_waits_for_later_reads_on_retry = false;
  // A one-packet RDMA WRITE with immediate that fails its R_Key check
  // completes the receive it took with REM_ACCESS_ERR (sim/profile.h
  // failed_write_imm_completes_its_recv); otherwise the receive is flushed.
  bool failed_write_imm_completes_its_recv = false;
  bool one_key_for_both = false;
  bool rkey_needs_remote_access = false;
  uint32_t ignored_access_bits = 0;
  bool accepts_zero_based = false;
  int on_demand_errno = EOPNOTSUPP;
  // An empty region registers when its address lies inside a 4 KiB page
  // (ib_umem_get counts the pages a range touches: one there, none at a
  // page boundary); otherwise no empty region registers.
  bool empty_mr_inside_a_page = false;
};
// "ibta" (also for "") or "rxe".
ProfileRules RulesFor(const std::string& profile);

// Whether ibv_reg_mr registers an empty region at `addr` under `rules`.
bool EmptyMrRegisters(const ProfileRules& rules, uint64_t addr);

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
// `rules` are the profile's registration rules (ibta when not given).
int RegArgumentErrno(const RegCall& call, const RegLimits& limits,
                     const ProfileRules& rules = ProfileRules());

// --- Keys, bounds and access -------------------------------------------------

enum class KeyVerdict {
  kOk,
  kNoSuchKey,   // no live MR on this node has this key (of this kind)
  kOtherPd,     // the MR belongs to another PD
  kOutOfRange,  // the range is not inside the MR
  kNoAccess,    // the MR lacks a flag the access needs
  kWrongQp,     // a type 2 window bound through another QP
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

// A memory window. `rkey` is what the window answers to (the key of its
// last successful bind); `handle_rkey` is what Mw::rkey() reports: for type
// 1 the key of the last bind the verb accepted (ibv_bind_mw(3): "on
// success, the window's rkey is the new one"), even before it executes.
struct ModelMw {
  int node = 0;
  int pd = 0;
  MwType type = MwType::kType1;
  uint32_t rkey = 0;
  uint32_t handle_rkey = 0;
  bool live = true;
  bool bound = false;
  int mr = -1;  // the region it is bound to (a KeyModel MR index)
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  int qp = -1;  // type 2: the QP it was bound through
};

// One bind: ibv_bind_mw (`verb`, type 1) or a BIND_MW work request (type 2)
// posted on QP `qp` of PD `qp_pd`.
struct BindCall {
  int mw = 0;
  bool verb = true;
  int qp = 0;
  int qp_pd = 0;
  int mr = -1;  // -1: no region given
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t wr_rkey = 0;  // the work request's new rkey (type 2)
};

struct BindOutcome {
  // The errno of the post (ibv_bind_mw / ibv_post_send); 0: posted.
  int post_errno = 0;
  // The completion when posted: SUCCESS or MW_BIND_ERR (then the QP goes
  // to ERR). A failed bind completes even if unsignaled.
  WcStatus status = WcStatus::kSuccess;
};

// What invalidating `rkey` through QP `qp` of PD `pd` does.
enum class InvVerdict {
  kOk,
  kNotInvalidatable,  // no bound type 2 window of this PD has this key now
  kWrongQp,           // the window was bound through another QP
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
  //
  // A remote key may also be a window's: then it must be the current rkey
  // of a live, bound window on `node`, of PD `pd`, bound through QP `qp`
  // when it is type 2, and the range and access are the window's.
  KeyVerdict Check(int node, uint32_t key, bool remote, int pd, uint64_t addr,
                   uint64_t len, uint32_t required, int qp = -1) const;

  // --- Re-registration: ibv_rereg_mr(3) ---
  // Applies a successful re-registration: the keys stay.
  void Rereg(int index, uint32_t flags, int pd, uint64_t addr,
             uint64_t length, uint32_t access);

  // --- Memory windows ---
  // Whether window accesses are checked against the window's bounds (else
  // the region's: ProfileRules::window_bounds_checked).
  void set_window_bounds_checked(bool v) { window_bounds_checked_ = v; }
  int AddMw(const ModelMw& mw);
  const ModelMw& mw(int index) const { return mws_[index]; }
  int mw_count() const { return static_cast<int>(mws_.size()); }
  // ibv_dealloc_mw: the window is unbound and dead.
  void KillMw(int index);
  int LiveMwsInPd(int pd) const;
  int LiveMwsOnNode(int node) const;
  // Windows bound to MR `index` now.
  int BoundWindows(int mr_index) const;
  // The post and the execution of a bind, as the rules say.
  BindOutcome PredictBind(const BindCall& call, const ProfileRules& rules) const;
  // Records that `call` was posted (the handle's rkey of a type 1 window
  // moves on) and, when `status` is SUCCESS, executed.
  void ApplyBind(const BindCall& call, WcStatus status);
  // LOCAL_INV / SEND_WITH_INV of `rkey` on `node` through QP `qp` of PD
  // `pd`; *window gets the window for kOk.
  InvVerdict CheckInvalidate(int node, uint32_t rkey, int pd, int qp,
                             const ProfileRules& rules, int* window) const;
  void Invalidate(int window);
  // The new rkey a bind of window `index` gets: ibv_inc_rkey of the
  // handle's.
  uint32_t NextRkey(int index) const { return IncRkey(mws_[index].handle_rkey); }

  // Empty when no two distinct live MRs of one node have shared a key value
  // (an MR's own lkey and rkey may be equal, as on mlx5); else a description
  // of the first such pair.
  // Windows count too: a window's current rkey is a key of a live object.
  std::string FindCollision() const { return collision_; }

 private:
  using Where = std::pair<int, uint32_t>;  // node, key
  // Records the first collision of `key` (of `what`) with a live object
  // other than itself.
  void NoteKey(int node, uint32_t key, int self_mr, int self_mw,
               const std::string& what);
  void SetMwKey(int index, uint32_t rkey);
  void Unbind(ModelMw& mw);
  std::vector<ModelMr> mrs_;
  std::vector<ModelMw> mws_;
  std::map<Where, int> by_mw_rkey_;  // live windows by current rkey
  bool window_bounds_checked_ = true;
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
int SendWrErrno(const SendWr& wr, const QpCaps& caps,
                const PostSendRules& rules = PostSendRules());
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

// The masks the harnesses use for each step (docs/semantics.md section 3).
uint32_t InitMask();  // RESET -> INIT (RC)
uint32_t RtrMask();   // INIT -> RTR (RC)
uint32_t RtsMask();   // RTR -> RTS (RC)

// --- Remote operations (docs/semantics.md section 2) ------------------------------

enum class RemoteKind { kWrite, kWriteImm, kRead, kCmpSwap, kFetchAdd, kSendInv };

struct RemoteRequest {
  RemoteKind kind = RemoteKind::kWrite;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint64_t length = 0;  // 8 for atomics
  // Send with invalidate: the capacity of the receive it lands in.
  uint64_t recv_capacity = 0;
  // The path MTU in bytes (how many packets a write is).
  uint64_t path_mtu = 4096;
};

struct ResponderView {
  int node = 0;
  int pd = 0;
  uint32_t qp_access = 0;  // the responder QP's REMOTE_* flags
  int qp = -1;             // the responder QP (type 2 windows check it)
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
  // A successful send with invalidate: the window it invalidates (the
  // receive completes with IBV_WC_WITH_INV), else -1.
  int invalidates = -1;
};

// The errnos ibv_rereg_mr may fail with (empty: it succeeds). Where more
// than one rule is broken the sources do not order the checks, so each
// broken rule's errno is allowed: a dead region (EINVAL) and an absent verb
// (EOPNOTSUPP) come first; then unknown flags, access without
// CHANGE_ACCESS, a bad PD, a bad translation (an address and a nonzero
// length needed, then ibv_reg_mr's range rules) and bad access (ibv_reg_mr's
// flag rules) are EINVAL or EOPNOTSUPP; windows bound: EBUSY.
struct ReregCall {
  bool mr_alive = true;
  uint32_t flags = 0;
  bool pd_valid = true;  // CHANGE_PD: a live PD of the region's context
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  int bound_windows = 0;
};
std::vector<int> ReregErrnos(const ReregCall& call, const RegLimits& limits,
                             const ProfileRules& rules);

// Whether ibv_alloc_mw with `type` (as an int) fails: EINVAL for a dead PD
// or a type that is neither 1 nor 2, EOPNOTSUPP without windows, the
// profile's mw_limit_errno at max_mw live windows.
int AllocMwErrno(bool pd_alive, int type, int max_mw, int live_mws,
                 const ProfileRules& rules = ProfileRules());

// The errno of ibv_dereg_mr(3) of a region: EINVAL once it is dead, the
// profile's errno while `bound_windows` windows are bound to it, else 0.
int DeregErrno(bool live, int bound_windows, const ProfileRules& rules);

// The completion of a LOCAL_INV that KeyModel::CheckInvalidate judged `v`:
// SUCCESS, MW_BIND_ERR for a window of another QP, the profile's status
// when there is nothing it may invalidate.
StatusSet LocalInvStatus(InvVerdict v, const ProfileRules& rules);

RemoteOutcome PredictRemote(const RemoteRequest& req, const ResponderView& rv,
                            const KeyModel& keys, const ProfileRules& rules);

// Names for messages.
std::string StatusName(WcStatus s);

}  // namespace verbsim::fuzz

#endif  // VERBSIM_FUZZ_MODEL_H_
