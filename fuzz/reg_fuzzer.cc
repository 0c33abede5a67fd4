// Harness for registration. The input decodes to a sequence of
// register / re-register / deregister / drop / alloc-PD / destroy-PD calls
// over a few PDs of one node, with arbitrary addresses, lengths (0, 1, huge,
// wrapping, ending exactly at 2^64) and access flags (known, unknown,
// ZERO_BASED, ON_DEMAND), optionally with a forced registration failure
// (`regfail`); of memory-window calls interleaved with them (alloc type 1,
// type 2 or a bad type on any PD, dealloc or drop, binds by ibv_bind_mw and
// by BIND_MW work requests with any window, region, range, rights and new
// rkey, LOCAL_INV of any key); and of probes that use a key: a local probe
// posts an RDMA write or read whose local SGE carries the key, a remote
// probe has the peer write, read or do an atomic with the key as rkey (an
// MR's, a window's current, stale or forged one).
//
// Invariants:
//  - every call returns the Status of the reference model (fuzz/model.h),
//    a separate implementation of the flag, bounds, window and
//    re-registration rules; every bind and LOCAL_INV completes as the model
//    says (MW_BIND_ERR even unsignaled, the QP to ERR on an error);
//  - a registered or re-registered MR reports the address, length, access
//    and PD the model holds, and keeps its keys; a window reports its type,
//    PD and the rkey the model holds;
//  - keys never collide among live MRs and windows of a node;
//  - a key is accepted exactly when the model finds a live MR for it (of the
//    QP's PD, covering the range, granting the access) or a bound window
//    (its PD, its QP for type 2, its range and rights): a dead, stale or
//    invalidated key is never accepted; each probe's completion status is
//    the model's, and the memory it may touch changes exactly as the model
//    says (a shadow copy of the whole buffer, guards included);
//  - deregistering or re-registering a region with windows bound, and
//    destroying a PD with windows, fail as the model says (EBUSY).
//
// Windows live on the client's node and are bound through the client's QP,
// which also serves the remote probes. A dropped MR handle releases the
// region; the harness drops only regions without bound windows.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/provider.h"
#include "fuzz/bytes.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/programs.h"

namespace verbsim::fuzz {
namespace {

using namespace reg_program;  // NOLINT: the op and field encodings

constexpr size_t kGuard = 64;
constexpr int kClientNode = 0;
constexpr int kServerNode = 1;
constexpr int kServerPdId = 1000;  // the server's PD, in the model's ids

struct PdSlot {
  Pd* pd = nullptr;             // not owned for the endpoint's PD
  std::unique_ptr<Pd> owned;
  bool alive = true;
  bool has_qp = false;
};

struct MrSlot {
  std::unique_ptr<Mr> handle;  // null once dropped
  int model = -1;
};

struct MwSlot {
  std::unique_ptr<Mw> handle;  // null once dropped
  int model = -1;
};

constexpr int kClientQp = 0;  // the model's id of the client QP

class RegHarness {
 public:
  explicit RegHarness(ByteReader& in) : in_(in) {}

  void Run() {
    Setup();
    int steps = 0;
    while (!in_.empty() && steps++ < kMaxSteps) {
      switch (in_.Below(kNumOps)) {
        case kOpReg:
        case kOpReg2: Register(); break;
        case kOpDereg: Deregister(); break;
        case kOpDrop: Drop(); break;
        case kOpAllocPd: AllocPd(); break;
        case kOpDestroyPd: DestroyPd(); break;
        case kOpProbeLocal: ProbeLocal(); break;
        case kOpProbeRemote: ProbeRemote(); break;
        case kOpRereg: Rereg(); break;
        case kOpAllocMw: AllocMw(); break;
        case kOpDeallocMw: DeallocMw(); break;
        case kOpBindMw:
        case kOpBindMw2: BindMw(); break;
        default: LocalInv(); break;
      }
    }
  }

 private:
  void Setup() {
    const uint8_t profile_byte = in_.U8();
    profile_ = (profile_byte & 1) ? "rxe" : "ibta";
    rules_ = RulesFor(profile_);
    keys_.set_window_bounds_checked(rules_.window_bounds_checked);
    const uint64_t seed = in_.U8();
    regfail_nth_ = in_.U8();
    EndpointAttr attr;
    attr.rnr_retry = 1;
    pair_ = MakeSimPair(profile_, seed, attr, attr.qp_access);
    const DeviceAttr& dev = pair_->client().context()->device_attr();
    limits_.max_mr_size = dev.max_mr_size;
    limits_.max_mr = static_cast<uint64_t>(dev.max_mr);
    max_mw_ = dev.max_mw;

    arena_ = std::make_unique<ShadowedBuffer>(kArena + 2 * kGuard, seed + 11);
    peer_ = std::make_unique<ShadowedBuffer>(kPeerSize, seed + 12);
    const uint32_t all = kAccessLocalWrite | kAccessRemoteWrite |
                         kAccessRemoteRead | kAccessRemoteAtomic;
    auto pmr = pair_->server().pd()->RegMr(peer_->data(), peer_->size(), all);
    if (!pmr.ok()) Violation(pmr.status().ToString());
    peer_mr_ = *std::move(pmr);
    ++registrations_;
    keys_.Add(ModelMr{kServerNode, kServerPdId, peer_->addr(), peer_->size(),
                      all, peer_mr_->lkey(), peer_mr_->rkey(), true});
    if (regfail_nth_ != 0) {
      ExpectErrno(pair_->fabric->AddFaults(
                      absl::StrCat("regfail nth=", regfail_nth_)),
                  0, "AddFaults regfail");
    }
    PdSlot first;
    first.pd = pair_->client().pd();
    first.has_qp = true;
    pds_.push_back(std::move(first));
    FUZZ_NOTE(absl::StrCat("setup: profile ", profile_, " seed ", seed,
                      " regfail nth=", regfail_nth_));
  }

  // --- Registration -----------------------------------------------------------

  uint64_t DecodeAddr() {
    const uint8_t mode = in_.U8();
    switch (mode % 8) {
      case 0:
      case 1:
      case 2: return arena_->addr() + kGuard + in_.U16() % (kArena + 1);
      case 3: return arena_->addr() + kGuard - in_.U8();
      case 4: return 0;
      case 5: return in_.U64();
      case 6: return UINT64_MAX - in_.U16();
      default: return in_.U16();
    }
  }

  uint64_t DecodeLength(uint64_t addr) {
    const uint8_t mode = in_.U8();
    switch (mode % 8) {
      case 0: return 0;
      case 1: return 1;
      case 2:
      case 3: return in_.U16() % (kArena + 1);
      case 4: return in_.U64();
      case 5: return UINT64_MAX - in_.U16();            // wraps
      case 6: return uint64_t{1} << (30 + in_.U8() % 34);  // huge
      default: return 0 - addr;  // ends exactly at 2^64 (or 0 for null)
    }
  }

  uint32_t DecodeAccess() {
    const uint8_t a = in_.U8();
    if (a < 0xc0) return a & 0x1f;  // the five everyday bits
    if (a < 0xf0) {
      // Four everyday bits with ZERO_BASED (0xc_), ON_DEMAND (0xd_) or both
      // (0xe_).
      static const uint32_t kOdd[] = {kAccessZeroBased, kAccessOnDemand,
                                      kAccessZeroBased | kAccessOnDemand};
      return (a & 0x0f) | kOdd[(a >> 4) - 0xc];
    }
    return in_.U32();  // anything
  }

  void Register() {
    const size_t slot = in_.Below(static_cast<uint32_t>(pds_.size()));
    PdSlot& p = pds_[slot];
    RegCall call;
    call.pd_alive = p.alive;
    call.addr = DecodeAddr();
    call.length = DecodeLength(call.addr);
    call.access = DecodeAccess();
    int expected = RegArgumentErrno(call, limits_, rules_);
    if (expected == 0) {
      ++registrations_;
      const uint64_t live = static_cast<uint64_t>(keys_.LiveOnNode(kClientNode));
      if (registrations_ == regfail_nth_) {
        expected = ENOMEM;  // the injected failure
      } else if (live >= limits_.max_mr) {
        expected = ENOMEM;
      }
    }
    auto mr = p.pd->RegMr(reinterpret_cast<void*>(call.addr),
                          static_cast<size_t>(call.length), call.access);
    FUZZ_NOTE(absl::StrCat("reg pd ", slot, " addr 0x", absl::Hex(call.addr),
                      " len 0x", absl::Hex(call.length), " access 0x",
                      absl::Hex(call.access), ": ",
                      mr.ok() ? absl::StrCat("lkey 0x", absl::Hex((*mr)->lkey()),
                                             " rkey 0x", absl::Hex((*mr)->rkey()))
                              : mr.status().ToString()));
    ExpectErrno(mr.status(), expected,
                absl::StrCat("RegMr(0x", absl::Hex(call.addr), ", 0x",
                             absl::Hex(call.length), ", access 0x",
                             absl::Hex(call.access), ") on PD ", slot,
                             p.alive ? "" : " (destroyed)"));
    if (!mr.ok()) return;
    Mr& m = **mr;
    if (reinterpret_cast<uint64_t>(m.addr()) != call.addr ||
        m.length() != call.length || m.access() != call.access ||
        m.pd() != p.pd) {
      Violation(absl::StrCat("MR reports addr 0x",
                             absl::Hex(reinterpret_cast<uint64_t>(m.addr())),
                             " length 0x", absl::Hex(m.length()), " access 0x",
                             absl::Hex(m.access()),
                             ", registered with addr 0x", absl::Hex(call.addr),
                             " length 0x", absl::Hex(call.length),
                             " access 0x", absl::Hex(call.access)));
    }
    // The keys the profile gives: one for both directions, and on rxe no
    // rkey (0) without remote access.
    constexpr uint32_t kRemote =
        kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    const uint32_t want_rkey =
        rules_.rkey_needs_remote_access && (call.access & kRemote) == 0
            ? 0
            : m.lkey();
    if (rules_.one_key_for_both ? m.rkey() != want_rkey
                                : m.rkey() == m.lkey()) {
      Violation(absl::StrCat("MR lkey 0x", absl::Hex(m.lkey()), " rkey 0x",
                             absl::Hex(m.rkey()), " (access 0x",
                             absl::Hex(call.access), "): profile ",
                             rules_.name,
                             rules_.one_key_for_both
                                 ? " gives one key for both"
                                 : " keys each direction apart"));
    }
    MrSlot s;
    s.model = keys_.Add(ModelMr{kClientNode, static_cast<int>(slot), call.addr,
                                call.length, call.access, m.lkey(), m.rkey(),
                                true});
    s.handle = *std::move(mr);
    mrs_.push_back(std::move(s));
    CheckKeys();
  }

  void Deregister() {
    if (mrs_.empty()) return;
    MrSlot& s = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
    if (s.handle == nullptr) return;
    const bool live = keys_.mr(s.model).live;
    const int bound = keys_.BoundWindows(s.model);
    const int expected =
        !live ? EINVAL : bound > 0 ? rules_.dereg_bound_mr_errno : 0;
    const absl::Status st = s.handle->Destroy();
    FUZZ_NOTE(absl::StrCat("dereg lkey 0x", absl::Hex(keys_.mr(s.model).lkey),
                           " (", bound, " windows bound): ", st.ToString()));
    ExpectErrno(st, expected, "Mr::Destroy");
    if (expected == 0) keys_.Kill(s.model);
    CheckKeys();
  }

  void Drop() {
    if (mrs_.empty()) return;
    MrSlot& s = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
    if (keys_.BoundWindows(s.model) > 0) return;  // see the header
    FUZZ_NOTE(absl::StrCat("drop MR handle lkey 0x", absl::Hex(keys_.mr(s.model).lkey)));
    s.handle.reset();
    keys_.Kill(s.model);
  }

  void AllocPd() {
    if (pds_.size() >= kMaxPds) return;
    auto pd = pair_->client().context()->AllocPd();
    ExpectErrno(pd.status(), 0, "AllocPd");
    PdSlot p;
    p.owned = *std::move(pd);
    p.pd = p.owned.get();
    pds_.push_back(std::move(p));
    FUZZ_NOTE(absl::StrCat("alloc pd ", pds_.size() - 1));
  }

  void DestroyPd() {
    const size_t slot = in_.Below(static_cast<uint32_t>(pds_.size()));
    PdSlot& p = pds_[slot];
    int expected = 0;
    if (!p.alive) {
      expected = EINVAL;
    } else if (p.has_qp || keys_.LiveInPd(static_cast<int>(slot)) > 0 ||
               keys_.LiveMwsInPd(static_cast<int>(slot)) > 0) {
      // ibv_dealloc_pd(3): EBUSY while MRs, QPs or windows use it.
      expected = EBUSY;
    }
    const absl::Status st = p.pd->Destroy();
    FUZZ_NOTE(absl::StrCat("destroy pd ", slot, ": ", st.ToString()));
    ExpectErrno(st, expected, absl::StrCat("Pd::Destroy of PD ", slot));
    if (st.ok()) p.alive = false;  // the handle stays, dead
  }

  void CheckKeys() {
    const std::string c = keys_.FindCollision();
    if (!c.empty()) Violation(c);
  }

  // --- Probes -----------------------------------------------------------------

  uint32_t DecodeKey() {
    const uint8_t mode = in_.U8();
    const int n = keys_.size();
    if (mode % 12 >= 8 && keys_.mw_count() > 0) {
      const ModelMw& w = keys_.mw(in_.Below(keys_.mw_count()));
      switch (mode % 12) {
        case 8: return w.rkey;
        case 9: return w.handle_rkey;
        case 10: return (w.rkey & ~0xffu) | ((w.rkey - 1) & 0xffu);  // stale
        default: return w.rkey ^ (1u << (8 + in_.U8() % 24));  // forged
      }
    }
    switch (mode % 12) {
      case 0:
      case 1: return keys_.mr(in_.Below(n)).lkey;
      case 2:
      case 3: return keys_.mr(in_.Below(n)).rkey;
      case 4: {
        const ModelMr& m = keys_.mr(in_.Below(n));
        return (in_.Bool() ? m.lkey : m.rkey) ^ (1u << (in_.U8() % 32));
      }
      case 5: return in_.U32();
      case 6: return in_.Bool() ? peer_mr_->lkey() : peer_mr_->rkey();
      default: return in_.Bool() ? keys_.mr(n - 1).lkey : keys_.mr(n - 1).rkey;
    }
  }

  // A place in the client's buffer (guards included) for `len` bytes.
  uint64_t DecodeProbeAddr(uint64_t len) {
    return arena_->addr() + in_.U16() % (arena_->size() - len + 1);
  }

  // Runs the fabric and checks the requester's single completion, the other
  // CQs and the QP states.
  // With `completes` false (an unsignaled WR that succeeds), nothing may
  // complete; with `opcode`, a successful completion must have it.
  void Finish(Endpoint& requester, uint64_t wr_id, const StatusSet& want,
              bool responder_error, bool completes = true,
              const WcOpcode* opcode = nullptr) {
    pair_->fabric->RunUntilIdle();
    const std::vector<WorkCompletion> got = DrainCq(requester.send_cq());
    const bool ok =
        completes ? got.size() == 1 && got[0].wr_id == wr_id &&
                        want.Contains(got[0].status) &&
                        (opcode == nullptr ||
                         got[0].status != WcStatus::kSuccess ||
                         got[0].opcode == *opcode)
                  : got.empty();
    if (!ok) {
      std::string list;
      for (const WorkCompletion& wc : got) {
        absl::StrAppend(&list, " [", WcString(wc), "]");
      }
      Violation(absl::StrCat("wr_id ", wr_id, ": expected ",
                             completes ? "one completion " : "no completion",
                             completes ? want.ToString() : "", ", got",
                             list.empty() ? " none" : list));
    }
    for (Cq* cq : {pair_->client().recv_cq(), pair_->server().recv_cq(),
                   &requester == &pair_->client() ? pair_->server().send_cq()
                                                  : pair_->client().send_cq()}) {
      const std::vector<WorkCompletion> extra = DrainCq(cq);
      if (!extra.empty()) {
        Violation(absl::StrCat("unexpected completion ", WcString(extra[0])));
      }
    }
    const bool failed = !want.IsSuccessOnly();
    Endpoint& responder =
        &requester == &pair_->client() ? pair_->server() : pair_->client();
    const QpState rq = requester.qp()->state();
    const QpState rs = responder.qp()->state();
    const QpState want_rq = failed ? QpState::kErr : QpState::kRts;
    const QpState want_rs = responder_error ? QpState::kErr : QpState::kRts;
    if (rq != want_rq || rs != want_rs) {
      Violation(absl::StrCat("after probe wr_id ", wr_id, ": requester QP ",
                             QpStateName(rq), ", responder QP ",
                             QpStateName(rs), "; expected ",
                             QpStateName(want_rq), " and ",
                             QpStateName(want_rs)));
    }
    arena_->Check("client buffer after a probe");
    peer_->Check("server buffer after a probe");
    if (failed) pair_->Reconnect();
  }

  // The client posts a write (its SGE is read) or a read (its SGE is
  // written) whose local SGE carries the probed key.
  void ProbeLocal() {
    const bool read = in_.Bool();
    const uint32_t key = DecodeKey();
    const uint64_t len = in_.U8() % 65;
    const uint64_t addr = DecodeProbeAddr(len);
    const bool extra_empty_sge = in_.Bool();
    Sge sges[2] = {{addr, static_cast<uint32_t>(len), key},
                   {arena_->addr(), 0, in_.U32()}};
    SendWr wr;
    wr.wr_id = next_wr_id_++;
    wr.opcode = read ? WrOpcode::kRdmaRead : WrOpcode::kRdmaWrite;
    wr.send_flags = kSendSignaled;
    wr.sg_list = absl::MakeConstSpan(sges, extra_empty_sge ? 2 : 1);
    const uint64_t remote = peer_->addr() + kPeerReadAt;
    wr.rdma.remote_addr = remote;
    wr.rdma.rkey = peer_mr_->rkey();
    // A zero-length SGE is not looked at; a nonzero one must pass.
    const KeyVerdict v =
        len == 0 ? KeyVerdict::kOk
                 : keys_.Check(kClientNode, key, /*remote=*/false, 0, addr, len,
                               read ? kAccessLocalWrite : 0);
    FUZZ_NOTE(absl::StrCat("probe local ", read ? "read into" : "write from",
                      " 0x", absl::Hex(addr), " len ", len, " lkey 0x",
                      absl::Hex(key), extra_empty_sge ? " (+empty sge)" : "",
                      ": model ", KeyVerdictName(v)));
    ExpectErrno(pair_->client().qp()->PostSend(wr), 0, "PostSend (probe)");
    StatusSet want = {WcStatus::kSuccess};
    if (v != KeyVerdict::kOk) {
      want = rules_.bad_lkey;
    } else if (len > 0) {
      uint8_t* a = arena_->shadow().data() + arena_->Offset(addr);
      uint8_t* p = peer_->shadow().data() + kPeerReadAt;
      if (read) {
        std::memcpy(a, p, len);
      } else {
        std::memcpy(p, a, len);
      }
    }
    Finish(pair_->client(), wr.wr_id, want, /*responder_error=*/false);
  }

  // The server writes, reads or does an atomic in the client's buffer with
  // the probed key as rkey.
  void ProbeRemote() {
    const uint8_t kind = in_.U8() % 4;
    const uint32_t key = DecodeKey();
    const bool atomic = kind >= 2;
    const uint64_t len = atomic ? 8 : in_.U8() % 65;
    const uint64_t addr = DecodeProbeAddr(len);
    const uint64_t operand = in_.U64();
    RemoteRequest req;
    req.kind = kind == 0   ? RemoteKind::kWrite
               : kind == 1 ? RemoteKind::kRead
               : kind == 2 ? RemoteKind::kCmpSwap
                           : RemoteKind::kFetchAdd;
    req.addr = addr;
    req.rkey = key;
    req.length = len;
    const ResponderView rv{kClientNode, 0, pair_->client_attr.qp_access,
                           kClientQp};
    const RemoteOutcome out = PredictRemote(req, rv, keys_, rules_);

    const uint64_t local_off = kind == 0 ? kPeerWriteFrom
                               : atomic  ? kPeerAtomicAt
                                         : kPeerReadAt;
    Sge sge{peer_->addr() + local_off, static_cast<uint32_t>(len),
            peer_mr_->lkey()};
    SendWr wr;
    wr.wr_id = next_wr_id_++;
    wr.send_flags = kSendSignaled;
    wr.sg_list = absl::MakeConstSpan(&sge, 1);
    switch (req.kind) {
      case RemoteKind::kWrite: wr.opcode = WrOpcode::kRdmaWrite; break;
      case RemoteKind::kRead: wr.opcode = WrOpcode::kRdmaRead; break;
      case RemoteKind::kCmpSwap: wr.opcode = WrOpcode::kAtomicCmpAndSwp; break;
      default: wr.opcode = WrOpcode::kAtomicFetchAndAdd; break;
    }
    uint64_t orig = 0;
    if (atomic) {
      wr.atomic.remote_addr = addr;
      wr.atomic.rkey = key;
      std::memcpy(&orig, arena_->shadow().data() + arena_->Offset(addr), 8);
      // Compare with the current value half the time, so swaps happen.
      wr.atomic.compare_add = (operand & 1) ? orig : operand;
      wr.atomic.swap = ~operand;
    } else {
      wr.rdma.remote_addr = addr;
      wr.rdma.rkey = key;
    }
    FUZZ_NOTE(absl::StrCat("probe remote ", WrOpcodeName(wr.opcode), " 0x",
                      absl::Hex(addr), " len ", len, " rkey 0x",
                      absl::Hex(key), ": model ", out.requester.ToString()));
    // rxe refuses a misaligned atomic at post (validate_send_wr).
    const int post_errno =
        atomic && rules_.post_send.atomic_target_aligned_at_post &&
                (addr & 7) != 0
            ? EINVAL
            : 0;
    ExpectErrno(pair_->server().qp()->PostSend(wr), post_errno,
                "PostSend (probe)");
    if (post_errno != 0) return;
    if (out.executes && len > 0) {
      uint8_t* a = arena_->shadow().data() + arena_->Offset(addr);
      uint8_t* p = peer_->shadow().data() + local_off;
      switch (req.kind) {
        case RemoteKind::kWrite: std::memcpy(a, p, len); break;
        case RemoteKind::kRead: std::memcpy(p, a, len); break;
        default: {
          const uint64_t now =
              req.kind == RemoteKind::kCmpSwap
                  ? (orig == wr.atomic.compare_add ? wr.atomic.swap : orig)
                  : orig + wr.atomic.compare_add;
          std::memcpy(a, &now, 8);
          std::memcpy(p, &orig, 8);
          break;
        }
      }
    } else if (!out.executes && (req.kind != RemoteKind::kWrite)) {
      // The local buffer of a failed read or atomic is undefined.
      peer_->AcceptActual(local_off, len);
    }
    Finish(pair_->server(), wr.wr_id, out.requester, out.responder_error);
  }

  // --- Re-registration --------------------------------------------------------

  void Rereg() {
    if (mrs_.empty()) return;
    MrSlot& s = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
    const uint8_t f = in_.U8();
    const uint32_t flags = f < 0xf0 ? (f & 7u) : in_.U32();
    const size_t pd_slot = in_.Below(static_cast<uint32_t>(pds_.size() + 1));
    Pd* pd = pd_slot < pds_.size() ? pds_[pd_slot].pd : nullptr;
    const uint64_t addr = DecodeAddr();
    const uint64_t length = DecodeLength(addr);
    uint32_t access = DecodeAccess();
    if (!(flags & kReregChangeAccess) && !(in_.U8() & 1)) access = 0;
    if (s.handle == nullptr) return;
    ReregCall call;
    call.mr_alive = keys_.mr(s.model).live;
    call.flags = flags;
    call.pd_valid = pd != nullptr && pds_[pd_slot].alive;
    call.addr = addr;
    call.length = length;
    call.access = access;
    call.bound_windows = keys_.BoundWindows(s.model);
    const std::vector<int> allowed = ReregErrnos(call, limits_, rules_);
    const uint32_t lkey = s.handle->lkey(), rkey = s.handle->rkey();
    const absl::Status st = s.handle->Rereg(
        flags, pd, reinterpret_cast<void*>(addr), static_cast<size_t>(length),
        access);
    const int got = ErrnoOf(st);
    FUZZ_NOTE(absl::StrCat("rereg lkey 0x", absl::Hex(lkey), " flags 0x",
                           absl::Hex(flags), " pd ", pd_slot, " addr 0x",
                           absl::Hex(addr), " len 0x", absl::Hex(length),
                           " access 0x", absl::Hex(access), ": ",
                           st.ToString()));
    const bool expected =
        allowed.empty() ? got == 0
                        : std::find(allowed.begin(), allowed.end(), got) !=
                              allowed.end();
    if (!expected) {
      std::string want;
      for (int e : allowed) absl::StrAppend(&want, want.empty() ? "" : " or ",
                                            ErrnoName(e));
      Violation(absl::StrCat("Mr::Rereg(flags 0x", absl::Hex(flags), ", pd ",
                             pd_slot, ", 0x", absl::Hex(addr), ", 0x",
                             absl::Hex(length), ", access 0x",
                             absl::Hex(access), "): expected ",
                             want.empty() ? "OK" : want, ", got ",
                             st.ToString()));
    }
    if (st.ok()) {
      keys_.Rereg(s.model, flags, static_cast<int>(pd_slot), addr, length,
                  access);
    }
    if (!call.mr_alive) return;
    // Changed or not, the MR reports what the model holds, with its keys.
    const ModelMr& m = keys_.mr(s.model);
    Mr& h = *s.handle;
    if (reinterpret_cast<uint64_t>(h.addr()) != m.addr ||
        h.length() != m.length || h.access() != m.access ||
        h.pd() != pds_[m.pd].pd || h.lkey() != lkey || h.rkey() != rkey) {
      Violation(absl::StrCat(
          "after Rereg (", st.ToString(), ") the MR reports addr 0x",
          absl::Hex(reinterpret_cast<uint64_t>(h.addr())), " length 0x",
          absl::Hex(h.length()), " access 0x", absl::Hex(h.access()),
          " lkey 0x", absl::Hex(h.lkey()), " rkey 0x", absl::Hex(h.rkey()),
          "; the model holds addr 0x", absl::Hex(m.addr), " length 0x",
          absl::Hex(m.length), " access 0x", absl::Hex(m.access), " pd ", m.pd,
          " lkey 0x", absl::Hex(lkey), " rkey 0x", absl::Hex(rkey)));
    }
  }

  // --- Memory windows ---------------------------------------------------------

  void AllocMw() {
    const size_t slot = in_.Below(static_cast<uint32_t>(pds_.size()));
    const uint8_t t = in_.U8();
    const int type = t % 8 < 4 ? 1 : t % 8 < 7 ? 2 : t;
    if (mws_.size() >= kMaxMws) return;
    PdSlot& p = pds_[slot];
    const int expected = AllocMwErrno(p.alive, type, max_mw_,
                                      keys_.LiveMwsOnNode(kClientNode));
    auto mw = p.pd->AllocMw(static_cast<MwType>(type));
    FUZZ_NOTE(absl::StrCat("alloc mw type ", type, " pd ", slot, ": ",
                           mw.ok() ? absl::StrCat("rkey 0x",
                                                  absl::Hex((*mw)->rkey()))
                                   : mw.status().ToString()));
    ExpectErrno(mw.status(), expected,
                absl::StrCat("AllocMw(type ", type, ") on PD ", slot));
    if (!mw.ok()) return;
    Mw& h = **mw;
    if (static_cast<int>(h.type()) != type || h.pd() != p.pd) {
      Violation(absl::StrCat("a window of type ", type, " on PD ", slot,
                             " reports type ", static_cast<int>(h.type())));
    }
    ModelMw m;
    m.node = kClientNode;
    m.pd = static_cast<int>(slot);
    m.type = static_cast<MwType>(type);
    m.rkey = m.handle_rkey = h.rkey();
    MwSlot s;
    s.model = keys_.AddMw(m);
    s.handle = *std::move(mw);
    mws_.push_back(std::move(s));
    CheckKeys();
  }

  void DeallocMw() {
    const size_t i = in_.Below(static_cast<uint32_t>(mws_.size()));
    const bool drop = in_.Bool();
    if (mws_.empty()) return;
    MwSlot& s = mws_[i];
    if (s.handle == nullptr) return;
    if (drop) {
      FUZZ_NOTE(absl::StrCat("drop mw ", i));
      s.handle.reset();
    } else {
      const absl::Status st = s.handle->Destroy();
      FUZZ_NOTE(absl::StrCat("dealloc mw ", i, ": ", st.ToString()));
      ExpectErrno(st, keys_.mw(s.model).live ? 0 : EINVAL, "Mw::Destroy");
    }
    // A bound window is invalidated with it (ibv_dealloc_mw(3)).
    keys_.KillMw(s.model);
    CheckKeys();
  }

  uint64_t DecodeWindowAddr(const ModelMr* mr) {
    const uint8_t mode = in_.U8();
    const uint64_t base = mr != nullptr ? mr->addr : arena_->addr() + kGuard;
    const uint64_t len = mr != nullptr ? mr->length : kArena;
    switch (mode % 8) {
      case 0:
      case 1:
      case 2:
      case 3: return base + in_.U8();
      case 4: return base + len - in_.U8();
      case 5: return in_.U64();
      case 6: return 0;
      default: return arena_->addr() + in_.U16() % arena_->size();
    }
  }

  uint64_t DecodeWindowLength(const ModelMr* mr, uint64_t addr) {
    const uint8_t mode = in_.U8();
    switch (mode % 8) {
      case 0: return 0;
      case 1:
      case 2: return in_.U8();
      case 3: return in_.U16() % (kArena + 1);
      case 4: return mr != nullptr ? mr->addr + mr->length - addr : 64;
      case 5: return in_.U64();
      default: return in_.U8() % 64 + 1;
    }
  }

  void BindMw() {
    const size_t i = in_.Below(static_cast<uint32_t>(mws_.size()));
    const uint8_t how = in_.U8();
    const size_t mr_pick = in_.Below(static_cast<uint32_t>(mrs_.size() + 1));
    const ModelMr* mr = nullptr;
    Mr* mr_handle = nullptr;
    int mr_model = -1;
    if (mr_pick < mrs_.size() && mrs_[mr_pick].handle != nullptr) {
      mr_model = mrs_[mr_pick].model;
      mr = &keys_.mr(mr_model);
      mr_handle = mrs_[mr_pick].handle.get();
    }
    const uint64_t addr = DecodeWindowAddr(mr);
    const uint64_t length = DecodeWindowLength(mr, addr);
    const uint8_t a = in_.U8();
    const uint32_t access = a < 0xf0 ? (a & 7u) << 1 : in_.U32();
    const uint8_t rkey_mode = (how & 1) ? in_.U8() : 0;
    if (mws_.empty()) return;
    MwSlot& s = mws_[i];
    if (s.handle == nullptr) return;
    const ModelMw& w = keys_.mw(s.model);
    BindCall call;
    call.mw = s.model;
    call.verb = (how & 1) == 0;
    call.qp = kClientQp;
    call.qp_pd = 0;
    call.mr = mr_model;
    call.addr = addr;
    call.length = length;
    call.access = access;
    switch (rkey_mode % 8) {
      case 5: call.wr_rkey = w.rkey; break;                   // the same key
      case 6: call.wr_rkey = IncRkey(w.rkey) ^ 0x100; break;  // another index
      case 7: call.wr_rkey = in_.U32(); break;
      default: call.wr_rkey = IncRkey(w.rkey); break;
    }
    const bool signaled = (how & 2) == 0;
    const BindOutcome out = keys_.PredictBind(call, rules_);
    MwBindInfo info;
    info.mr = mr_handle;
    info.addr = addr;
    info.length = length;
    info.mw_access_flags = access;
    const uint64_t wr_id = next_wr_id_++;
    absl::Status st;
    if (call.verb) {
      MwBind bind;
      bind.wr_id = wr_id;
      bind.send_flags = signaled ? kSendSignaled : 0;
      bind.bind_info = info;
      st = pair_->client().qp()->BindMw(s.handle.get(), bind);
    } else {
      SendWr wr;
      wr.wr_id = wr_id;
      wr.opcode = WrOpcode::kBindMw;
      wr.send_flags = signaled ? kSendSignaled : 0;
      wr.bind_mw.mw = s.handle.get();
      wr.bind_mw.rkey = call.wr_rkey;
      wr.bind_mw.bind_info = info;
      st = pair_->client().qp()->PostSend(wr);
    }
    FUZZ_NOTE(absl::StrCat(
        "bind mw ", i, call.verb ? " (verb)" : " (work request)", " mr ",
        mr_model, " addr 0x", absl::Hex(addr), " len 0x", absl::Hex(length),
        " access 0x", absl::Hex(access), " rkey 0x",
        absl::Hex(call.verb ? keys_.NextRkey(s.model) : call.wr_rkey),
        signaled ? "" : " unsignaled", ": ", st.ToString(), "; model ",
        out.post_errno != 0 ? ErrnoName(out.post_errno)
                            : StatusName(out.status)));
    ExpectErrno(st, out.post_errno, "bind of a memory window");
    if (out.post_errno == 0) {
      keys_.ApplyBind(call, out.status);
      const WcOpcode op = WcOpcode::kBindMw;
      Finish(pair_->client(), wr_id, {out.status}, false,
             signaled || out.status != WcStatus::kSuccess, &op);
    } else {
      // Nothing was posted: nothing completes and the QP stays up.
      Finish(pair_->client(), wr_id, {WcStatus::kSuccess}, false,
             /*completes=*/false);
    }
    if (s.handle->rkey() != keys_.mw(s.model).handle_rkey) {
      Violation(absl::StrCat("window ", i, " reports rkey 0x",
                             absl::Hex(s.handle->rkey()), ", the model 0x",
                             absl::Hex(keys_.mw(s.model).handle_rkey)));
    }
    CheckKeys();
  }

  void LocalInv() {
    const uint32_t key = DecodeKey();
    const bool signaled = (in_.U8() & 1) == 0;
    int window = -1;
    const InvVerdict v = keys_.CheckInvalidate(kClientNode, key, 0, kClientQp,
                                               rules_, &window);
    StatusSet want = {WcStatus::kSuccess};
    if (v == InvVerdict::kWrongQp) want = {WcStatus::kMwBindErr};
    if (v == InvVerdict::kNotInvalidatable) want = rules_.local_inv_refused;
    SendWr wr;
    wr.wr_id = next_wr_id_++;
    wr.opcode = WrOpcode::kLocalInv;
    wr.send_flags = signaled ? kSendSignaled : 0;
    wr.invalidate_rkey = key;
    FUZZ_NOTE(absl::StrCat("local inv 0x", absl::Hex(key),
                           signaled ? "" : " unsignaled", ": model ",
                           want.ToString()));
    ExpectErrno(pair_->client().qp()->PostSend(wr), 0, "PostSend (LOCAL_INV)");
    if (v == InvVerdict::kOk) keys_.Invalidate(window);
    const WcOpcode op = WcOpcode::kLocalInv;
    Finish(pair_->client(), wr.wr_id, want, false,
           signaled || !want.IsSuccessOnly(), &op);
  }

  ByteReader& in_;
  std::string profile_;
  ProfileRules rules_;
  RegLimits limits_;
  int max_mw_ = 0;
  uint64_t regfail_nth_ = 0;
  uint64_t registrations_ = 0;
  uint64_t next_wr_id_ = 1;
  // Declared before the fabric's objects, so they outlive them.
  std::unique_ptr<ShadowedBuffer> arena_;
  std::unique_ptr<ShadowedBuffer> peer_;
  std::unique_ptr<SimPair> pair_;
  std::unique_ptr<Mr> peer_mr_;
  std::vector<PdSlot> pds_;
  std::vector<MrSlot> mrs_;
  KeyModel keys_;
  std::vector<MwSlot> mws_;
};

}  // namespace
}  // namespace verbsim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  verbsim::fuzz::ResetNotes();
  verbsim::fuzz::ByteReader in(data, size);
  {
    verbsim::fuzz::RegHarness harness(in);
    harness.Run();
  }
  return 0;
}
