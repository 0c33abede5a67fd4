// The rkey harness's memory windows (rkey_harness.h): between batches,
// windows of type 1 and 2 (of the server QP's PD or another) are
// allocated, bound through the server QP to any target MR with any range
// and rights (ibv_bind_mw or a BIND_MW work request), invalidated by a
// LOCAL_INV of the server (current, stale or forged keys) and deallocated.
// Each bind and LOCAL_INV is checked as it completes.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/names.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/rkey_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::rkey_harness {

void RkeyHarness::AllocWindow() {
  const uint8_t b = in_.U8();
  if (windows_.size() >= kMaxWindows) return;
  const MwType type = (b & 1) ? MwType::kType2 : MwType::kType1;
  const int pd = (b & 2) ? kOtherPd : kServerPd;
  Pd* pd_handle = pd == kServerPd ? pair_->server().pd() : other_pd_.get();
  auto mw = pd_handle->AllocMw(type);
  ExpectErrno(mw.status(), 0, "AllocMw");
  const uint32_t rkey = (*mw)->rkey();
  Window w;
  w.model = keys_.AddMw(NewModelMw(1, pd, type, rkey));
  w.handle = *std::move(mw);
  FUZZ_NOTE(absl::StrCat("alloc window ", windows_.size(), " type ",
                         static_cast<int>(type), " pd ", pd, " rkey 0x",
                         absl::Hex(rkey)));
  windows_.push_back(std::move(w));
  CheckKeyCollisions(keys_);
}

void RkeyHarness::DeallocWindow() {
  const size_t i = in_.Below(static_cast<uint32_t>(windows_.size()));
  if (windows_.empty()) return;
  Window& w = windows_[i];
  ExpectErrno(w.handle->Destroy(), keys_.mw(w.model).live ? 0 : EINVAL,
              "Mw::Destroy");
  keys_.KillMw(w.model);
  FUZZ_NOTE(absl::StrCat("dealloc window ", i));
}

void RkeyHarness::FinishServerOp(uint64_t wr_id, const StatusSet& want,
                                 bool completes, WcOpcode opcode) {
  pair_->fabric->RunUntilIdle();
  std::vector<ExpectedWc> send;
  if (completes) send.push_back({wr_id, want, opcode, 0, false, 0});
  const bool failed = !want.IsSuccessOnly();
  std::vector<ExpectedWc> recv;
  if (failed) FlushPostedRecvs(&recv);
  CompareCq(pair_->server().send_cq(), send, "server send CQ");
  CompareCq(pair_->server().recv_cq(), recv, "server recv CQ");
  CompareCq(pair_->client().send_cq(), {}, "client send CQ");
  CompareCq(pair_->client().recv_cq(), {}, "client recv CQ");
  const QpState ss = pair_->server().qp()->state();
  const QpState cs = pair_->client().qp()->state();
  const QpState want_ss = failed ? QpState::kErr : QpState::kRts;
  if (ss != want_ss || cs != QpState::kRts) {
    Violation(absl::StrCat("after a server bind/invalidate wr_id ", wr_id,
                           ": server QP ", QpStateName(ss), ", client QP ",
                           QpStateName(cs), "; expected ",
                           QpStateName(want_ss), " and RTS"));
  }
  target_->Check("target memory after a bind or invalidate");
  if (failed) {
    pair_->Reconnect();
    FUZZ_NOTE("reconnected");
  }
}

void RkeyHarness::BindWindow() {
  const size_t i = in_.Below(static_cast<uint32_t>(windows_.size()));
  const size_t m = in_.Below(static_cast<uint32_t>(mrs_.size()));
  const uint8_t shape = in_.U8();
  uint8_t off = 0, len = 0;
  if (shape % 4 == 1) {
    off = in_.U8();
    len = in_.U8();
  } else if (shape % 4 == 2) {
    off = in_.U8();
  }
  const uint32_t access = (in_.U8() & 7u) << 1;
  const bool signaled = (in_.U8() & 1) == 0;
  if (windows_.empty() || mrs_.empty()) return;
  Window& w = windows_[i];
  const TargetMr& t = mrs_[m];
  const ModelMr& mr = keys_.mr(t.model);
  BindCall call;
  call.mw = w.model;
  call.verb = keys_.mw(w.model).type == MwType::kType1;
  call.qp = kServerQp;
  call.qp_pd = kServerPd;
  call.mr = t.model;
  call.access = access;
  call.wr_rkey = IncRkey(keys_.mw(w.model).rkey);
  switch (shape % 4) {
    case 0:  // the whole MR
      call.addr = mr.addr;
      call.length = mr.length;
      break;
    case 1:  // a part of it
      call.addr = mr.addr + (mr.length ? off % mr.length : 0);
      call.length = std::min<uint64_t>(len, mr.addr + mr.length - call.addr);
      if (call.length == 0) call.length = 1;  // maybe past the end
      break;
    case 2:  // past its end
      call.addr = mr.addr + off % 16;
      call.length = mr.length + 1;
      break;
    default:  // length 0: unbinds type 1, refused for type 2
      call.addr = mr.addr;
      call.length = 0;
      break;
  }
  const BindOutcome out = keys_.PredictBind(call, rules_);
  const uint64_t wr_id = next_wr_id_++;
  const absl::Status st = PostBind(*pair_->server().qp(), w.handle.get(),
                                   t.handle.get(), call, wr_id, signaled);
  FUZZ_NOTE(absl::StrCat(
      "bind window ", i, " to MR rkey 0x", absl::Hex(mr.rkey), " [0x",
      absl::Hex(call.addr), ", +", call.length, ") rights ",
      AccessFlagsName(access), signaled ? "" : " unsignaled", ": ",
      st.ToString(), "; model ",
      out.post_errno ? ErrnoName(out.post_errno) : StatusName(out.status)));
  ExpectErrno(st, out.post_errno, "bind of a window");
  if (out.post_errno != 0) return;
  keys_.ApplyBind(call, out.status);
  FinishServerOp(wr_id, {out.status},
                 signaled || out.status != WcStatus::kSuccess,
                 WcOpcode::kBindMw);
  CheckWindowRkey(*w.handle, keys_, w.model, i);
  CheckKeyCollisions(keys_);
}

void RkeyHarness::InvalidateWindow() {
  const size_t i = in_.Below(static_cast<uint32_t>(windows_.size()));
  const uint8_t mode = in_.U8();
  if (windows_.empty()) return;
  const ModelMw& w = keys_.mw(windows_[i].model);
  uint32_t key = w.rkey;
  if (mode % 4 == 2) key = StaleRkey(w.rkey);
  if (mode % 4 == 3) key = w.rkey ^ 0x100;
  int window = -1;
  const InvVerdict v =
      keys_.CheckInvalidate(1, key, kServerPd, kServerQp, rules_, &window);
  const StatusSet want = LocalInvStatus(v, rules_);
  const uint64_t wr_id = next_wr_id_++;
  FUZZ_NOTE(absl::StrCat("server LOCAL_INV 0x", absl::Hex(key), ": model ",
                         want.ToString()));
  PostLocalInv(*pair_->server().qp(), wr_id, key, /*signaled=*/true);
  if (v == InvVerdict::kOk) keys_.Invalidate(window);
  FinishServerOp(wr_id, want, true, WcOpcode::kLocalInv);
}

}  // namespace verbsim::fuzz::rkey_harness
