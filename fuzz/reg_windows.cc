// The registration harness's memory-window steps (reg_harness.h): alloc
// on any PD (type 1, 2 or a bad type), dealloc or drop, binds by
// ibv_bind_mw and by BIND_MW work requests through the client's QP with any
// window, region, range, rights and new rkey, and LOCAL_INV of any key.
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/names.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/reg_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::reg_harness {

void RegHarness::AllocMw() {
  const size_t slot = in_.Below(static_cast<uint32_t>(pds_.size()));
  const uint8_t t = in_.U8();
  const int type = t % 8 < 4 ? 1 : t % 8 < 7 ? 2 : t;
  if (mws_.size() >= kMaxMws) return;
  PdSlot& p = pds_[slot];
  const int expected = AllocMwErrno(p.alive, type, max_mw_,
                                    keys_.LiveMwsOnNode(kClientNode), rules_);
  auto mw = p.pd->AllocMw(static_cast<MwType>(type));
  FUZZ_NOTE(absl::StrCat("alloc mw type ", type, " pd ", slot, ": ",
                         mw.ok() ? absl::StrCat("rkey 0x",
                                                absl::Hex((*mw)->rkey()))
                                 : mw.status().ToString()));
  FUZZ_EXPECT_ERRNO(mw.status(), expected, "AllocMw(type ", type, ") on PD ",
                    slot);
  if (!mw.ok()) return;
  Mw& h = **mw;
  if (static_cast<int>(h.type()) != type || h.pd() != p.pd) {
    Violation(absl::StrCat("a window of type ", type, " on PD ", slot,
                           " reports type ", static_cast<int>(h.type())));
  }
  MwSlot s;
  s.model = keys_.AddMw(NewModelMw(kClientNode, static_cast<int>(slot),
                                   static_cast<MwType>(type), h.rkey()));
  s.handle = *std::move(mw);
  mws_.push_back(std::move(s));
  CheckKeyCollisions(keys_);
}

void RegHarness::DeallocMw() {
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
  CheckKeyCollisions(keys_);
}

uint64_t RegHarness::DecodeWindowAddr(const ModelMr* mr) {
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

uint64_t RegHarness::DecodeWindowLength(const ModelMr* mr, uint64_t addr) {
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

void RegHarness::BindMw() {
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
  const bool signaled = Signaled((how & 2) == 0);
  const BindOutcome out = keys_.PredictBind(call, rules_);
  const uint64_t wr_id = next_wr_id_++;
  const absl::Status st = PostBind(*pair_->client().qp(), s.handle.get(),
                                   mr_handle, call, wr_id, signaled);
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
    CountPosted(signaled || out.status != WcStatus::kSuccess);
    const WcOpcode op = WcOpcode::kBindMw;
    Finish(pair_->client(), wr_id, {out.status}, false,
           signaled || out.status != WcStatus::kSuccess, &op);
  } else {
    // Nothing was posted: nothing completes and the QP stays up.
    Finish(pair_->client(), wr_id, {WcStatus::kSuccess}, false,
           /*completes=*/false);
  }
  CheckWindowRkey(*s.handle, keys_, s.model, i);
  CheckKeyCollisions(keys_);
}

void RegHarness::LocalInv() {
  const uint32_t key = DecodeKey();
  const bool signaled = Signaled((in_.U8() & 1) == 0);
  int window = -1;
  const InvVerdict v = keys_.CheckInvalidate(kClientNode, key, 0, kClientQp,
                                             rules_, &window);
  const StatusSet want = LocalInvStatus(v, rules_);
  const uint64_t wr_id = next_wr_id_++;
  FUZZ_NOTE(absl::StrCat("local inv 0x", absl::Hex(key),
                         signaled ? "" : " unsignaled", ": model ",
                         want.ToString()));
  PostLocalInv(*pair_->client().qp(), wr_id, key, signaled);
  if (v == InvVerdict::kOk) keys_.Invalidate(window);
  CountPosted(signaled || !want.IsSuccessOnly());
  const WcOpcode op = WcOpcode::kLocalInv;
  Finish(pair_->client(), wr_id, want, false,
         signaled || !want.IsSuccessOnly(), &op);
}

}  // namespace verbsim::fuzz::reg_harness
