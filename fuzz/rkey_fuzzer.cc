// Harness for remote access. The input decodes to remote
// operations (RDMA write, write with immediate, read, compare-and-swap,
// fetch-and-add, send with invalidate) with arbitrary rkeys, remote
// addresses and lengths, posted in small batches from a client to a server
// whose memory holds regions covered by live MRs, deregistered MRs, MRs of
// another PD and MRs with every mix of access flags; between batches MRs come
// and go and the server QP's access flags change.
//
// Invariants, each checked after every batch:
//  - every post returns the Status of the reference model (fuzz/model.h);
//  - the completion status on both sides equals the model's, in order:
//    the client's send completions, the server's receive completions
//    (write with immediate, send with invalidate, and the flushes after a
//    responder error); nothing else completes;
//  - the target memory equals its shadow copy: the regions are separated by
//    guard bytes, and the shadow changes only where a successful operation
//    may write, so nothing outside what an rkey grants is written and a
//    failed operation changes no target byte;
//  - what a read or atomic returns equals the shadow's bytes at the time it
//    executed, so nothing outside what the rkey grants is read;
//  - the client's buffers and the server's receive buffers change only
//    inside the SGEs of the operations that may write them;
//  - both QPs are in the state the model says (ERR after an error).
//
// Window-covered regions: between batches, windows of type 1 and 2 (of the
// server QP's PD or another) are allocated, bound through the server QP to
// any target MR with any range and rights (ibv_bind_mw or a BIND_MW work
// request), invalidated by a LOCAL_INV of the server (current, stale or
// forged keys) and deallocated; the batches use their current, stale and
// forged rkeys and addresses around them, and send with invalidate names
// them. Further invariants:
//  - every bind and LOCAL_INV completes on the server's send CQ as the model
//    says (the server QP to ERR on an error, its receives flushed);
//  - an access through a window is checked against the window's range and
//    rights, and a stale, invalidated, deallocated or forged window key
//    grants nothing;
//  - a successful send with invalidate delivers its payload and completes
//    the receive with IBV_WC_WITH_INV and the key; the window is dead from
//    the next WR on;
//  - deregistering an MR with windows bound fails as the model says.
//
// The harness's state is in rkey_harness.h; this file holds its driver, its
// setup and the steps on target MRs and the server QP's access,
// rkey_windows.cc the window steps, rkey_batches.cc the decoding and posting
// of a batch and rkey_batch_checks.cc what the model says it does and the
// checks after it.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/names.h"
#include "core/provider.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/rkey_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::rkey_harness {

void RkeyHarness::Run() {
  Setup();
  int steps = 0;
  while (!in_.empty() && steps++ < kMaxSteps) {
    switch (in_.Below(kNumOps)) {
      case kOpRegister: Register(); break;
      case kOpDeregister: Deregister(); break;
      case kOpSetQpAccess: SetQpAccess(); break;
      case kOpBatchThenDeregister: {
        const uint8_t mr = in_.U8();
        Batch(mr);
        break;
      }
      case kOpAllocWindow: AllocWindow(); break;
      case kOpBindWindow:
      case kOpBindWindow2: BindWindow(); break;
      case kOpInvalidateWindow: InvalidateWindow(); break;
      case kOpDeallocWindow: DeallocWindow(); break;
      default: Batch(-1); break;
    }
  }
}

void RkeyHarness::Setup() {
  const uint8_t profile_byte = in_.U8();
  profile_ = (profile_byte & 1) ? "rxe" : "ibta";
  rules_ = RulesFor(profile_);
  keys_.set_window_bounds_checked(rules_.window_bounds_checked);
  const uint64_t seed = in_.U8();
  const uint8_t access_byte = in_.U8();
  server_access_ = (access_byte & 0x80) ? (access_byte & 0x0f) : kFullAccess;
  EndpointAttr attr;
  static const Mtu kMtus[] = {Mtu::k256, Mtu::k512, Mtu::k1024, Mtu::k2048,
                              Mtu::k4096};
  attr.path_mtu = kMtus[in_.Below(5)];
  path_mtu_ = MtuBytes(attr.path_mtu);
  attr.rnr_retry = 1;  // the harness always posts the receives it needs
  region_len_.resize(kRegions);
  for (size_t& len : region_len_) len = in_.U8() % 200 + 1;
  const uint64_t fill = in_.U8();

  pair_ = MakeSimPair(profile_, seed, attr, server_access_);
  caps_.max_send_wr = attr.cap.max_send_wr;
  caps_.max_recv_wr = attr.cap.max_recv_wr;
  caps_.max_send_sge = attr.cap.max_send_sge;
  caps_.max_recv_sge = attr.cap.max_recv_sge;
  caps_.max_inline_data = attr.cap.max_inline_data;

  target_ = std::make_unique<ShadowedBuffer>(kTargetSize, fill + 1);
  local_ = std::make_unique<ShadowedBuffer>(kSliceSize * kMaxBatch, fill + 2);
  recv_ = std::make_unique<ShadowedBuffer>(kSliceSize * kRecvSlices, fill + 3);
  size_t at = kGuard;
  for (size_t len : region_len_) {
    region_off_.push_back(at);
    at += len + kGuard;
  }

  auto other = pair_->server().context()->AllocPd();
  if (!other.ok()) Violation(other.status().ToString());
  other_pd_ = *std::move(other);

  // The client's MR over all its slices, and the server's receive MR.
  auto lmr = pair_->client().pd()->RegMr(local_->data(), local_->size(),
                                         kFullAccess);
  if (!lmr.ok()) Violation(lmr.status().ToString());
  local_mr_ = *std::move(lmr);
  keys_.Add(ModelMr{0, kClientPd, local_->addr(), local_->size(),
                    kFullAccess, local_mr_->lkey(), local_mr_->rkey(), true});
  auto rmr = pair_->server().pd()->RegMr(recv_->data(), recv_->size(),
                                         kAccessLocalWrite);
  if (!rmr.ok()) Violation(rmr.status().ToString());
  recv_mr_ = *std::move(rmr);
  keys_.Add(ModelMr{1, kServerPd, recv_->addr(), recv_->size(),
                    kAccessLocalWrite, recv_mr_->lkey(), recv_mr_->rkey(),
                    true});
  for (size_t i = 0; i < kRecvSlices; ++i) free_slices_.push_back(i);
  FUZZ_NOTE(absl::StrCat("setup: profile ", profile_, " seed ", seed,
                    " server access ", AccessFlagsName(server_access_),
                    " mtu ", MtuBytes(attr.path_mtu)));
}

// --- MRs and access ---------------------------------------------------------

void RkeyHarness::Register() {
  const size_t region = in_.Below(kRegions);
  const int pd = in_.Bool() ? kOtherPd : kServerPd;
  // MW_BIND too. REMOTE_WRITE / REMOTE_ATOMIC without LOCAL_WRITE would be
  // refused: that rule is the registration harness's; here every MR is
  // valid.
  const uint32_t access = WithLocalWriteForRemote(in_.U8() & 0x1f);
  const uint8_t shape = in_.U8();
  uint64_t begin = region_off_[region];
  uint64_t len = region_len_[region];
  switch (shape % 4) {
    case 0:  // the region exactly
      break;
    case 1: {  // a part of it
      const uint64_t off = in_.U8() % len;
      begin += off;
      len = std::min<uint64_t>(len - off, in_.U8());
      break;
    }
    case 2:  // the region and its guards: they are covered then
      begin -= kGuard / 2;
      len += kGuard;
      break;
    default:  // an empty MR at the region's start
      len = 0;
      break;
  }
  Pd* pd_handle = pd == kServerPd ? pair_->server().pd() : other_pd_.get();
  auto mr = pd_handle->RegMr(target_->data() + begin, len, access);
  // An empty region is refused where the profile registers none there.
  const int want =
      len == 0 && !EmptyMrRegisters(rules_, target_->addr() + begin) ? EINVAL
                                                                       : 0;
  ExpectErrno(mr.status(), want, "RegMr of a valid target region");
  if (want != 0) return;
  TargetMr t;
  t.handle = *std::move(mr);
  t.model = keys_.Add(ModelMr{1, pd, target_->addr() + begin, len, access,
                              t.handle->lkey(), t.handle->rkey(), true});
  FUZZ_NOTE(absl::StrCat("register region ", region, " [", begin, ", +", len,
                    ") pd ", pd, " access ", AccessFlagsName(access),
                    " -> rkey 0x", absl::Hex(t.handle->rkey())));
  mrs_.push_back(std::move(t));
  CheckKeyCollisions(keys_);
}

void RkeyHarness::Deregister() {
  if (mrs_.empty()) return;
  TargetMr& t = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
  DeregisterTarget(t, "Mr::Destroy");
  CheckKeyCollisions(keys_);
}

void RkeyHarness::DeregisterTarget(TargetMr& t, const char* what) {
  const int bound = keys_.BoundWindows(t.model);
  const int expected = DeregErrno(keys_.mr(t.model).live, bound, rules_);
  ExpectErrno(t.handle->Destroy(), expected, what);
  if (expected == 0) keys_.Kill(t.model);
  FUZZ_NOTE(absl::StrCat("deregister rkey 0x",
                         absl::Hex(keys_.mr(t.model).rkey), " (", bound,
                         " windows bound)"));
}

void RkeyHarness::SetQpAccess() {
  const uint32_t access = in_.U8() & 0x0f;
  QpAttr a;
  a.qp_access_flags = access;
  // RTS -> RTS with ACCESS_FLAGS (the server is in RTS between batches).
  const int expected = ModifyErrno(QpState::kRts, QpState::kRts,
                                   kQpAccessFlags);
  ExpectErrno(pair_->server().qp()->Modify(a, kQpAccessFlags), expected,
              "server QP access flags RTS -> RTS");
  if (expected == 0) server_access_ = access;
  pair_->server_attr.qp_access = server_access_;
  FUZZ_NOTE(absl::StrCat("server QP access ", AccessFlagsName(access)));
}

}  // namespace verbsim::fuzz::rkey_harness

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return verbsim::fuzz::RunOneInput<
      verbsim::fuzz::rkey_harness::RkeyHarness>(data, size);
}
