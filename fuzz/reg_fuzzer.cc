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
//
// The harness's state is in reg_harness.h; this file holds its driver, its
// setup and the registration steps, reg_probes.cc the probes and
// reg_windows.cc the memory-window steps.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/provider.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/reg_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::reg_harness {

void RegHarness::Run() {
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

void RegHarness::Setup() {
  const uint8_t profile_byte = in_.U8();
  profile_ = (profile_byte & 1) ? "rxe" : "ibta";
  rules_ = RulesFor(profile_);
  keys_.set_window_bounds_checked(rules_.window_bounds_checked);
  const uint64_t seed = in_.U8();
  registrations_.set_nth(in_.U8());
  EndpointAttr attr;
  attr.rnr_retry = 1;
  pair_ = MakeSimPair(profile_, seed, attr, attr.qp_access);
  const DeviceAttr& dev = pair_->client().context()->device_attr();
  limits_.max_mr_size = dev.max_mr_size;
  limits_.max_mr = static_cast<uint64_t>(dev.max_mr);
  max_mw_ = dev.max_mw;

  arena_ = std::make_unique<ShadowedBuffer>(kArena + 2 * kGuard, seed + 11);
  peer_ = std::make_unique<ShadowedBuffer>(kPeerSize, seed + 12);
  auto pmr = pair_->server().pd()->RegMr(peer_->data(), peer_->size(),
                                         kFullAccess);
  if (!pmr.ok()) Violation(pmr.status().ToString());
  peer_mr_ = *std::move(pmr);
  registrations_.Count();  // the peer's MR counts too; the rule comes later
  keys_.Add(ModelMr{kServerNode, kServerPdId, peer_->addr(), peer_->size(),
                    kFullAccess, peer_mr_->lkey(), peer_mr_->rkey(), true});
  if (registrations_.nth() != 0) {
    ExpectErrno(pair_->fabric->AddFaults(
                    absl::StrCat("regfail nth=", registrations_.nth())),
                0, "AddFaults regfail");
  }
  PdSlot first;
  first.pd = pair_->client().pd();
  first.has_qp = true;
  pds_.push_back(std::move(first));
  FUZZ_NOTE(absl::StrCat("setup: profile ", profile_, " seed ", seed,
                    " regfail nth=", registrations_.nth()));
}

// --- Registration -----------------------------------------------------------

uint64_t RegHarness::DecodeAddr() {
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

uint64_t RegHarness::DecodeLength(uint64_t addr) {
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

uint32_t RegHarness::DecodeAccess() {
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

void RegHarness::Register() {
  const size_t slot = in_.Below(static_cast<uint32_t>(pds_.size()));
  PdSlot& p = pds_[slot];
  RegCall call;
  call.pd_alive = p.alive;
  call.addr = DecodeAddr();
  call.length = DecodeLength(call.addr);
  call.access = DecodeAccess();
  int expected = RegArgumentErrno(call, limits_, rules_);
  if (expected == 0) {
    const bool injected = registrations_.Count();
    const uint64_t live = static_cast<uint64_t>(keys_.LiveOnNode(kClientNode));
    if (injected) {
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
  FUZZ_EXPECT_ERRNO(mr.status(), expected, "RegMr(0x", absl::Hex(call.addr),
                    ", 0x", absl::Hex(call.length), ", access 0x",
                    absl::Hex(call.access), ") on PD ", slot,
                    p.alive ? "" : " (destroyed)");
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
  CheckKeyCollisions(keys_);
}

void RegHarness::Deregister() {
  if (mrs_.empty()) return;
  MrSlot& s = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
  if (s.handle == nullptr) return;
  const int bound = keys_.BoundWindows(s.model);
  const int expected = DeregErrno(keys_.mr(s.model).live, bound, rules_);
  const absl::Status st = s.handle->Destroy();
  FUZZ_NOTE(absl::StrCat("dereg lkey 0x", absl::Hex(keys_.mr(s.model).lkey),
                         " (", bound, " windows bound): ", st.ToString()));
  ExpectErrno(st, expected, "Mr::Destroy");
  if (expected == 0) keys_.Kill(s.model);
  CheckKeyCollisions(keys_);
}

void RegHarness::Drop() {
  if (mrs_.empty()) return;
  MrSlot& s = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
  if (keys_.BoundWindows(s.model) > 0) return;  // see the header
  FUZZ_NOTE(absl::StrCat("drop MR handle lkey 0x", absl::Hex(keys_.mr(s.model).lkey)));
  s.handle.reset();
  keys_.Kill(s.model);
}

void RegHarness::AllocPd() {
  if (pds_.size() >= kMaxPds) return;
  auto pd = pair_->client().context()->AllocPd();
  ExpectErrno(pd.status(), 0, "AllocPd");
  PdSlot p;
  p.owned = *std::move(pd);
  p.pd = p.owned.get();
  pds_.push_back(std::move(p));
  FUZZ_NOTE(absl::StrCat("alloc pd ", pds_.size() - 1));
}

void RegHarness::DestroyPd() {
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
  FUZZ_EXPECT_ERRNO(st, expected, "Pd::Destroy of PD ", slot);
  if (st.ok()) p.alive = false;  // the handle stays, dead
}

// --- Re-registration --------------------------------------------------------

void RegHarness::Rereg() {
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

}  // namespace verbsim::fuzz::reg_harness

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return verbsim::fuzz::RunOneInput<verbsim::fuzz::reg_harness::RegHarness>(
      data, size);
}
