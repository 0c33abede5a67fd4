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
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
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

using namespace rkey_program;  // NOLINT: the op and field encodings

constexpr int kServerPd = 0;  // the server QP's PD
constexpr int kOtherPd = 1;   // another PD on the server
constexpr int kClientPd = 2;  // the client's PD (its MR lives on node 0)

constexpr size_t kTargetSize = 4096;
constexpr size_t kGuard = 64;
constexpr size_t kSliceSize = 4096 + 64;  // one client slice per WR of a batch
constexpr size_t kRecvSlices = 8;

struct TargetMr {
  std::unique_ptr<Mr> handle;
  int model = -1;  // index in the KeyModel
};

struct Window {
  std::unique_ptr<Mw> handle;
  int model = -1;
};

constexpr int kServerQp = 1;  // the model's id of the server QP

struct PostedRecv {
  uint64_t wr_id = 0;
  size_t slice = 0;
  uint64_t capacity = 0;
};

// A completion the model expects.
struct ExpectedWc {
  uint64_t wr_id;
  StatusSet status;
  WcOpcode opcode;
  uint32_t byte_len;
  bool with_imm;
  uint32_t imm;
  bool with_inv = false;
  uint32_t inv_rkey = 0;
};

// One decoded work request of a batch and what the model says of it.
struct BatchWr {
  RemoteKind kind = RemoteKind::kWrite;
  SendWr wr;
  std::vector<Sge> sges;
  uint64_t length = 0;
  size_t slice = 0;
  bool signaled = true;
  uint16_t recv_capacity = 0;
};

class RkeyHarness {
 public:
  explicit RkeyHarness(ByteReader& in) : in_(in) {}

  void Run() {
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

 private:
  void Setup() {
    const uint8_t profile_byte = in_.U8();
    profile_ = (profile_byte & 1) ? "rxe" : "ibta";
    rules_ = RulesFor(profile_);
    keys_.set_window_bounds_checked(rules_.window_bounds_checked);
    const uint64_t seed = in_.U8();
    const uint8_t access_byte = in_.U8();
    server_access_ = (access_byte & 0x80) ? (access_byte & 0x0f)
                                          : (kAccessLocalWrite |
                                             kAccessRemoteWrite |
                                             kAccessRemoteRead |
                                             kAccessRemoteAtomic);
    EndpointAttr attr;
    static const Mtu kMtus[] = {Mtu::k256, Mtu::k512, Mtu::k1024, Mtu::k2048,
                                Mtu::k4096};
    attr.path_mtu = kMtus[in_.Below(5)];
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
    const uint32_t all = kAccessLocalWrite | kAccessRemoteWrite |
                         kAccessRemoteRead | kAccessRemoteAtomic;
    auto lmr = pair_->client().pd()->RegMr(local_->data(), local_->size(), all);
    if (!lmr.ok()) Violation(lmr.status().ToString());
    local_mr_ = *std::move(lmr);
    keys_.Add(ModelMr{0, kClientPd, local_->addr(), local_->size(), all,
                      local_mr_->lkey(), local_mr_->rkey(), true});
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

  void Register() {
    const size_t region = in_.Below(kRegions);
    const int pd = in_.Bool() ? kOtherPd : kServerPd;
    uint32_t access = in_.U8() & 0x1f;  // MW_BIND too
    // REMOTE_WRITE / REMOTE_ATOMIC without LOCAL_WRITE would be refused:
    // that rule is the registration harness's; here every MR is valid.
    if (access & (kAccessRemoteWrite | kAccessRemoteAtomic)) {
      access |= kAccessLocalWrite;
    }
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
    // An empty region is refused where the profile registers none (rxe).
    const int want = len == 0 && !rules_.zero_length_mr ? EINVAL : 0;
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
    CheckKeys();
  }

  void Deregister() {
    if (mrs_.empty()) return;
    TargetMr& t = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
    DeregisterTarget(t, "Mr::Destroy");
    CheckKeys();
  }

  // ibv_dereg_mr: EINVAL when dead, the profile's errno while windows are
  // bound to it.
  void DeregisterTarget(TargetMr& t, const char* what) {
    const bool live = keys_.mr(t.model).live;
    const int bound = keys_.BoundWindows(t.model);
    const int expected =
        !live ? EINVAL : bound > 0 ? rules_.dereg_bound_mr_errno : 0;
    ExpectErrno(t.handle->Destroy(), expected, what);
    if (expected == 0) keys_.Kill(t.model);
    FUZZ_NOTE(absl::StrCat("deregister rkey 0x",
                           absl::Hex(keys_.mr(t.model).rkey), " (", bound,
                           " windows bound)"));
  }

  // --- Windows ----------------------------------------------------------------

  void AllocWindow() {
    const uint8_t b = in_.U8();
    if (windows_.size() >= kMaxWindows) return;
    const MwType type = (b & 1) ? MwType::kType2 : MwType::kType1;
    const int pd = (b & 2) ? kOtherPd : kServerPd;
    Pd* pd_handle = pd == kServerPd ? pair_->server().pd() : other_pd_.get();
    auto mw = pd_handle->AllocMw(type);
    ExpectErrno(mw.status(), 0, "AllocMw");
    ModelMw m;
    m.node = 1;
    m.pd = pd;
    m.type = type;
    m.rkey = m.handle_rkey = (*mw)->rkey();
    Window w;
    w.model = keys_.AddMw(m);
    w.handle = *std::move(mw);
    FUZZ_NOTE(absl::StrCat("alloc window ", windows_.size(), " type ",
                           static_cast<int>(type), " pd ", pd, " rkey 0x",
                           absl::Hex(m.rkey)));
    windows_.push_back(std::move(w));
    CheckKeys();
  }

  void DeallocWindow() {
    const size_t i = in_.Below(static_cast<uint32_t>(windows_.size()));
    if (windows_.empty()) return;
    Window& w = windows_[i];
    ExpectErrno(w.handle->Destroy(), keys_.mw(w.model).live ? 0 : EINVAL,
                "Mw::Destroy");
    keys_.KillMw(w.model);
    FUZZ_NOTE(absl::StrCat("dealloc window ", i));
  }

  // Runs the fabric after a bind or LOCAL_INV of the server and checks its
  // one completion (none for an unsignaled success); on an error the server
  // QP is in ERR, its receives flush, and the pair is reconnected.
  void FinishServerOp(uint64_t wr_id, const StatusSet& want, bool completes,
                      WcOpcode opcode) {
    pair_->fabric->RunUntilIdle();
    std::vector<ExpectedWc> send;
    if (completes) send.push_back({wr_id, want, opcode, 0, false, 0});
    const bool failed = !want.IsSuccessOnly();
    std::vector<ExpectedWc> recv;
    if (failed) {
      for (const PostedRecv& r : rq_) {
        recv.push_back(
            {r.wr_id, {WcStatus::kWrFlushErr}, WcOpcode::kRecv, 0, false, 0});
        free_slices_.push_back(r.slice);
      }
      rq_.clear();
    }
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

  void BindWindow() {
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
    MwBindInfo info;
    info.mr = t.handle.get();
    info.addr = call.addr;
    info.length = call.length;
    info.mw_access_flags = access;
    const uint64_t wr_id = next_wr_id_++;
    absl::Status st;
    if (call.verb) {
      MwBind bind;
      bind.wr_id = wr_id;
      bind.send_flags = signaled ? kSendSignaled : 0;
      bind.bind_info = info;
      st = pair_->server().qp()->BindMw(w.handle.get(), bind);
    } else {
      SendWr wr;
      wr.wr_id = wr_id;
      wr.opcode = WrOpcode::kBindMw;
      wr.send_flags = signaled ? kSendSignaled : 0;
      wr.bind_mw.mw = w.handle.get();
      wr.bind_mw.rkey = call.wr_rkey;
      wr.bind_mw.bind_info = info;
      st = pair_->server().qp()->PostSend(wr);
    }
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
    if (w.handle->rkey() != keys_.mw(w.model).handle_rkey) {
      Violation(absl::StrCat("window ", i, " reports rkey 0x",
                             absl::Hex(w.handle->rkey()), ", the model 0x",
                             absl::Hex(keys_.mw(w.model).handle_rkey)));
    }
    CheckKeys();
  }

  void InvalidateWindow() {
    const size_t i = in_.Below(static_cast<uint32_t>(windows_.size()));
    const uint8_t mode = in_.U8();
    if (windows_.empty()) return;
    const ModelMw& w = keys_.mw(windows_[i].model);
    uint32_t key = w.rkey;
    if (mode % 4 == 2) key = (w.rkey & ~0xffu) | ((w.rkey - 1) & 0xffu);
    if (mode % 4 == 3) key = w.rkey ^ 0x100;
    int window = -1;
    const InvVerdict v =
        keys_.CheckInvalidate(1, key, kServerPd, kServerQp, rules_, &window);
    StatusSet want = {WcStatus::kSuccess};
    if (v == InvVerdict::kWrongQp) want = {WcStatus::kMwBindErr};
    if (v == InvVerdict::kNotInvalidatable) want = rules_.local_inv_refused;
    SendWr wr;
    wr.wr_id = next_wr_id_++;
    wr.opcode = WrOpcode::kLocalInv;
    wr.send_flags = kSendSignaled;
    wr.invalidate_rkey = key;
    FUZZ_NOTE(absl::StrCat("server LOCAL_INV 0x", absl::Hex(key), ": model ",
                           want.ToString()));
    ExpectErrno(pair_->server().qp()->PostSend(wr), 0, "PostSend (LOCAL_INV)");
    if (v == InvVerdict::kOk) keys_.Invalidate(window);
    FinishServerOp(wr.wr_id, want, true, WcOpcode::kLocalInv);
  }

  void SetQpAccess() {
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

  void CheckKeys() {
    const std::string collision = keys_.FindCollision();
    if (!collision.empty()) Violation(collision);
  }

  // --- Remote operations ------------------------------------------------------

  uint32_t DecodeRkey() {
    const uint8_t mode = in_.U8();
    const int n = keys_.size();
    if (mode % 9 >= 6 && keys_.mw_count() > 0) {
      const ModelMw& w = keys_.mw(in_.Below(keys_.mw_count()));
      switch (mode % 9) {
        case 6: return w.rkey;
        case 7: return (w.rkey & ~0xffu) | ((w.rkey - 1) & 0xffu);  // stale
        default: return w.rkey ^ (1u << in_.U8() % 32);              // forged
      }
    }
    switch (mode % 9) {
      case 0:
      case 1:  // the rkey of some MR, live or dead
        return keys_.mr(in_.Below(n)).rkey;
      case 2:  // an lkey: the wrong kind of key
        return keys_.mr(in_.Below(n)).lkey;
      case 3:  // an rkey with one bit flipped
        return keys_.mr(in_.Below(n)).rkey ^ (1u << (in_.U8() % 32));
      case 4:
        return in_.U32();
      default:  // the newest MR's rkey
        return keys_.mr(n - 1).rkey;
    }
  }

  uint64_t DecodeRemoteAddr() {
    const uint8_t mode = in_.U8();
    if (mode % 8 >= 6 && keys_.mw_count() > 0) {
      // Around a window's last binding (the model keeps it until rebound).
      const ModelMw& w = keys_.mw(in_.Below(keys_.mw_count()));
      const uint64_t base = w.bound ? w.addr : target_->addr();
      const uint64_t len = w.bound ? w.length : 0;
      return mode % 8 == 6 ? base + static_cast<int8_t>(in_.U8())
                           : base + len - in_.U8() % 16;
    }
    switch (mode % 8) {
      case 0: {  // inside or around an MR
        const ModelMr& m = keys_.mr(in_.Below(keys_.size()));
        return m.addr + static_cast<int16_t>(in_.U16());
      }
      case 1: {  // near the end of an MR
        const ModelMr& m = keys_.mr(in_.Below(keys_.size()));
        return m.addr + m.length - in_.U8();
      }
      case 2: {  // a region's start plus a little
        const size_t r = in_.Below(kRegions);
        return target_->addr() + region_off_[r] + in_.U8() % 64;
      }
      case 3:
        return in_.U64();
      case 4:  // wrapping
        return UINT64_MAX - in_.U16();
      default:  // anywhere in the target buffer
        return target_->addr() + in_.U16() % kTargetSize;
    }
  }

  uint64_t DecodeLength() {
    static const uint16_t kLengths[] = {0,   1,    7,    8,    63,   64,
                                        65,  200,  255,  256,  257,  1023,
                                        1024, 1025, 2048, 4096};
    const uint8_t mode = in_.U8();
    if (mode < 0xc0) return kLengths[mode % 16];
    return in_.U16() % 4097;
  }

  // A batch of WRs in one post. With `dereg_after_post` >= 0, that target MR
  // (an index, modulo their number) is deregistered right after the post,
  // before anything reaches the server: its rkey is dead when checked.
  void Batch(int dereg_after_post) {
    const size_t n = in_.Below(kMaxBatch) + 1;
    std::vector<BatchWr> wrs(n);
    size_t consuming = 0;
    for (size_t i = 0; i < n; ++i) {
      BatchWr& b = wrs[i];
      b.slice = i;
      const uint8_t kind = in_.U8() % 6;
      b.kind = static_cast<RemoteKind>(kind);
      const uint32_t rkey = DecodeRkey();
      const uint64_t raddr = DecodeRemoteAddr();
      const uint8_t flags = in_.U8();
      const bool atomic =
          b.kind == RemoteKind::kCmpSwap || b.kind == RemoteKind::kFetchAdd;
      b.length = atomic ? ((flags & kFlagBadAtomicLen) ? in_.U8() % 17 : 8)
                        : DecodeLength();
      b.signaled = (flags & kFlagUnsignaled) == 0;
      // Fresh source bytes for this WR.
      const size_t base = i * kSliceSize;
      const uint64_t fill = in_.U16() + 7919 * batches_;
      const size_t off = in_.U16() % (kSliceSize - b.length + 1);
      local_->Refill(base + off, std::min<size_t>(b.length + 16, kSliceSize - off),
                     fill);
      const uint64_t laddr = local_->addr() + base + off;
      if ((flags & kFlagTwoSges) && !atomic && b.length >= 2 &&
          off + b.length + 16 <= kSliceSize) {
        const uint32_t first = static_cast<uint32_t>(b.length / 2);
        b.sges.push_back(Sge{laddr, first, local_mr_->lkey()});
        b.sges.push_back(Sge{laddr + first + 16,
                             static_cast<uint32_t>(b.length - first),
                             local_mr_->lkey()});
      } else {
        b.sges.push_back(
            Sge{laddr, static_cast<uint32_t>(b.length), local_mr_->lkey()});
      }
      SendWr& w = b.wr;
      w.wr_id = next_wr_id_++;
      w.send_flags = b.signaled ? kSendSignaled : 0;
      // On rxe an inline READ or atomic fails only when its response
      // arrives, after the WRs behind it have reached the responder (whose
      // effects this oracle does not follow): there it is the batch's last.
      const bool fails_on_arrival =
          (b.kind == RemoteKind::kRead || atomic) &&
          !rules_.post_send.inline_needs_send_or_write;
      if ((flags & kFlagInline) && (!fails_on_arrival || i + 1 == n)) {
        w.send_flags |= kSendInline;
      }
      if (flags & kFlagFence) w.send_flags |= kSendFence;
      switch (b.kind) {
        case RemoteKind::kWrite: w.opcode = WrOpcode::kRdmaWrite; break;
        case RemoteKind::kWriteImm:
          w.opcode = WrOpcode::kRdmaWriteWithImm;
          w.imm_data = in_.U32();
          break;
        case RemoteKind::kRead: w.opcode = WrOpcode::kRdmaRead; break;
        case RemoteKind::kCmpSwap: w.opcode = WrOpcode::kAtomicCmpAndSwp; break;
        case RemoteKind::kFetchAdd:
          w.opcode = WrOpcode::kAtomicFetchAndAdd;
          break;
        case RemoteKind::kSendInv:
          w.opcode = WrOpcode::kSendWithInv;
          w.invalidate_rkey = rkey;
          b.recv_capacity = in_.U16() % 4097;
          break;
      }
      if (atomic) {
        w.atomic.remote_addr = raddr;
        w.atomic.rkey = rkey;
        w.atomic.compare_add = in_.Bool() ? in_.U64() : ReadTarget(raddr);
        w.atomic.swap = in_.U64();
      } else {
        w.rdma.remote_addr = raddr;
        w.rdma.rkey = rkey;
      }
      if (b.kind == RemoteKind::kWriteImm || b.kind == RemoteKind::kSendInv) {
        ++consuming;
      }
    }
    for (BatchWr& b : wrs) b.wr.sg_list = absl::MakeConstSpan(b.sges);
    ++batches_;

    // Receives for the WRs that consume one (only as many as are missing,
    // so the queue stays short).
    while (rq_.size() < consuming) PostOneRecv(wrs, rq_.size());

    // The model: which WRs the post accepts.
    size_t bad = n;
    int post_errno = 0;
    for (size_t i = 0; i < n; ++i) {
      post_errno = SendWrErrno(wrs[i].wr, caps_, rules_.post_send);
      if (post_errno != 0) {
        bad = i;
        break;
      }
    }
    std::vector<SendWr> list;
    for (const BatchWr& b : wrs) list.push_back(b.wr);
    size_t bad_index = 0;
    for (const BatchWr& b : wrs) {
      FUZZ_NOTE(absl::StrCat("  wr ", b.wr.wr_id, " ", WrOpcodeName(b.wr.opcode),
                        " len ", b.length, " sges ", b.sges.size(), " flags 0x",
                        absl::Hex(b.wr.send_flags), " raddr 0x",
                        absl::Hex(b.kind == RemoteKind::kCmpSwap ||
                                          b.kind == RemoteKind::kFetchAdd
                                      ? b.wr.atomic.remote_addr
                                      : b.wr.rdma.remote_addr),
                        " rkey 0x",
                        absl::Hex(b.kind == RemoteKind::kCmpSwap ||
                                          b.kind == RemoteKind::kFetchAdd
                                      ? b.wr.atomic.rkey
                                      : b.wr.rdma.rkey),
                        b.kind == RemoteKind::kSendInv
                            ? absl::StrCat(" recv cap ", b.recv_capacity)
                            : ""));
    }
    absl::Status posted = pair_->client().qp()->PostSend(list, &bad_index);
    FUZZ_NOTE(absl::StrCat("post ", n, " WRs: ", posted.ok() ? "OK" : posted.ToString()));
    ExpectErrno(posted, post_errno, "PostSend of a batch");
    if (!posted.ok() && bad_index != bad) {
      Violation(absl::StrCat("PostSend: bad_index ", bad_index, ", expected ",
                             bad));
    }
    if (dereg_after_post >= 0 && !mrs_.empty()) {
      TargetMr& t = mrs_[dereg_after_post % mrs_.size()];
      DeregisterTarget(t, "Mr::Destroy with WRs in flight");
    }

    // The model runs the accepted WRs in order.
    std::vector<ExpectedWc> want_send;
    std::vector<ExpectedWc> want_recv;
    std::vector<std::pair<size_t, size_t>> undefined_recv;  // offset, len
    // What each WR did to the target, for read relaxed ordering below.
    struct Touch {
      bool read = false, writes = false, fenced = false;
      uint64_t addr = 0, length = 0;
    };
    std::vector<Touch> touches(bad);
    bool requester_error = false;
    bool responder_error = false;
    for (size_t i = 0; i < bad; ++i) {
      BatchWr& b = wrs[i];
      const WcOpcode op = WcOpcodeOf(b.wr.opcode);
      if (requester_error) {
        want_send.push_back({b.wr.wr_id, {WcStatus::kWrFlushErr}, op, 0, false, 0});
        continue;
      }
      if (responder_error) {
        // The responder went to ERR without NAKing the requester (rxe's
        // failed SEND_WITH_INV): it drops what arrives, so this WR's
        // retries run out and the rest are flushed.
        want_send.push_back(
            {b.wr.wr_id, {WcStatus::kRetryExcErr}, op, 0, false, 0});
        requester_error = true;
        continue;
      }
      RemoteRequest req;
      req.kind = b.kind;
      const bool atomic =
          b.kind == RemoteKind::kCmpSwap || b.kind == RemoteKind::kFetchAdd;
      req.addr = atomic ? b.wr.atomic.remote_addr : b.wr.rdma.remote_addr;
      req.rkey = atomic ? b.wr.atomic.rkey : b.wr.rdma.rkey;
      req.length = b.length;
      PostedRecv recv;
      const bool have_recv = !rq_.empty();
      if (have_recv) recv = rq_.front();
      req.recv_capacity = recv.capacity;
      ResponderView rv{1, kServerPd, server_access_, kServerQp};
      RemoteOutcome out = PredictRemote(req, rv, keys_, rules_);
      if ((b.wr.send_flags & kSendInline) &&
          (b.kind == RemoteKind::kRead || atomic) &&
          !rules_.post_send.inline_needs_send_or_write &&
          out.requester.IsSuccessOnly()) {
        // rxe: an inline READ or atomic is posted with its SGE list replaced
        // by the inline bytes, so the response has nowhere to land
        // (rxe_comp.c): the responder executed it, the requester fails it.
        out.requester = rules_.bad_lkey;
      }
      if (out.consumes_recv) {
        if (!have_recv) Violation("harness: no receive for a consuming WR");
        rq_.pop_front();
        free_slices_.push_back(recv.slice);
        want_recv.push_back({recv.wr_id, out.receiver,
                             b.kind == RemoteKind::kWriteImm
                                 ? WcOpcode::kRecvRdmaWithImm
                                 : WcOpcode::kRecv,
                             static_cast<uint32_t>(b.length),
                             b.kind == RemoteKind::kWriteImm, b.wr.imm_data,
                             out.invalidates >= 0 && rules_.reports_with_inv,
                             req.rkey});
        if (out.invalidates >= 0) {
          // Delivered: the payload is in the receive buffer, and the
          // window is dead from here on.
          std::vector<uint8_t> msg;
          for (const Sge& sg : b.sges) {
            const uint8_t* p = local_->shadow().data() + local_->Offset(sg.addr);
            msg.insert(msg.end(), p, p + sg.length);
          }
          if (!msg.empty()) {
            std::memcpy(recv_->shadow().data() + recv.slice * kSliceSize,
                        msg.data(), msg.size());
          }
          keys_.Invalidate(out.invalidates);
        } else if (b.kind == RemoteKind::kSendInv) {
          // The payload may land before the invalidation fails: the
          // receive buffer's content is undefined after an error.
          undefined_recv.push_back({recv.slice * kSliceSize, recv.capacity});
        }
      }
      FUZZ_NOTE(absl::StrCat("  model: wr ", b.wr.wr_id, " -> ",
                        out.requester.ToString(),
                        out.consumes_recv
                            ? absl::StrCat(", recv ", recv.wr_id, " -> ",
                                           out.receiver.ToString())
                            : "",
                        out.responder_error ? ", responder to ERR" : ""));
      if (out.executes) Apply(b, req);
      touches[i] = Touch{out.executes && b.kind == RemoteKind::kRead,
                         out.executes && b.kind != RemoteKind::kRead &&
                             b.kind != RemoteKind::kSendInv,
                         (b.wr.send_flags & kSendFence) != 0, req.addr,
                         req.length};
      if (!out.requester.IsSuccessOnly() || b.signaled) {
        want_send.push_back({b.wr.wr_id, out.requester, op,
                             static_cast<uint32_t>(b.length), false, 0});
      }
      if (!out.requester.IsSuccessOnly()) {
        requester_error = true;
        // The local buffer of a failed read or atomic is undefined.
        if (b.kind == RemoteKind::kRead || atomic) {
          for (const Sge& s : b.sges) {
            local_->AcceptActual(local_->Offset(s.addr), s.length);
          }
        }
      }
      if (out.responder_error) {
        responder_error = true;
        for (const PostedRecv& r : rq_) {
          want_recv.push_back(
              {r.wr_id, {WcStatus::kWrFlushErr}, WcOpcode::kRecv, 0, false, 0});
          free_slices_.push_back(r.slice);
        }
        rq_.clear();
      }
    }

    pair_->fabric->RunUntilIdle();

    // Read relaxed ordering (docs/ordering.md rule R3): a read may return
    // the bytes of a later write or atomic of the batch to the same place,
    // unless a fence stands between them; its sink is then one of several
    // values, taken as it is.
    if (rules_.reads_may_see_later_writes) {
      for (size_t i = 0; i < touches.size(); ++i) {
        if (!touches[i].read) continue;
        for (size_t j = i + 1; j < touches.size(); ++j) {
          if (touches[j].fenced) break;
          const bool overlaps =
              touches[j].addr < touches[i].addr + touches[i].length &&
              touches[i].addr < touches[j].addr + touches[j].length;
          if (touches[j].writes && overlaps) {
            for (const Sge& s : wrs[i].sges) {
              local_->AcceptActual(local_->Offset(s.addr), s.length);
            }
            break;
          }
        }
      }
    }

    CompareCq(pair_->client().send_cq(), want_send, "client send CQ");
    CompareCq(pair_->server().recv_cq(), want_recv, "server recv CQ");
    CompareCq(pair_->client().recv_cq(), {}, "client recv CQ");
    CompareCq(pair_->server().send_cq(), {}, "server send CQ");

    for (const auto& [offset, len] : undefined_recv) {
      recv_->AcceptActual(offset, len);
    }
    target_->Check("target memory after a batch");
    local_->Check("client memory after a batch");
    recv_->Check("server receive buffers after a batch");

    const QpState cs = pair_->client().qp()->state();
    const QpState ss = pair_->server().qp()->state();
    const QpState want_cs = requester_error ? QpState::kErr : QpState::kRts;
    const QpState want_ss = responder_error ? QpState::kErr : QpState::kRts;
    if (cs != want_cs || ss != want_ss) {
      Violation(absl::StrCat("QP states after the batch: client ",
                             QpStateName(cs), " server ", QpStateName(ss),
                             ", expected ", QpStateName(want_cs), " and ",
                             QpStateName(want_ss)));
    }
    if (requester_error || responder_error) {
      // RESET discards posted receives without completions.
      for (const PostedRecv& r : rq_) free_slices_.push_back(r.slice);
      rq_.clear();
      pair_->Reconnect();
      FUZZ_NOTE("reconnected");
    }
  }

  void CompareCq(Cq* cq, const std::vector<ExpectedWc>& want,
                 const char* what) {
    const std::vector<WorkCompletion> got = DrainCq(cq);
    for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
      if (i >= got.size()) {
        Violation(absl::StrCat(what, ": completion ", i, " (wr_id ",
                               want[i].wr_id, ", ", want[i].status.ToString(),
                               ") missing; got ", got.size(), " completions"));
      }
      const WorkCompletion& wc = got[i];
      if (i >= want.size()) {
        Violation(absl::StrCat(what, ": unexpected completion ", WcString(wc)));
      }
      const ExpectedWc& w = want[i];
      if (wc.wr_id != w.wr_id || !w.status.Contains(wc.status)) {
        Violation(absl::StrCat(what, ": completion ", i, " is ", WcString(wc),
                               ", expected wr_id ", w.wr_id, " with ",
                               w.status.ToString()));
      }
      if (wc.status == WcStatus::kSuccess) {
        // byte_len is defined for receives, reads and atomics only
        // (ibv_poll_cq(3)).
        const bool has_len =
            w.opcode == WcOpcode::kRecv ||
            w.opcode == WcOpcode::kRecvRdmaWithImm ||
            w.opcode == WcOpcode::kRdmaRead ||
            w.opcode == WcOpcode::kCompSwap || w.opcode == WcOpcode::kFetchAdd;
        if (wc.opcode != w.opcode || (has_len && wc.byte_len != w.byte_len)) {
          Violation(absl::StrCat(what, ": completion ", WcString(wc),
                                 ", expected opcode ", WcOpcodeName(w.opcode),
                                 " len ", w.byte_len));
        }
        if (w.with_inv &&
            (!(wc.wc_flags & kWcWithInv) || wc.invalidated_rkey != w.inv_rkey)) {
          Violation(absl::StrCat(what, ": completion ", WcString(wc),
                                 " lacks IBV_WC_WITH_INV of rkey 0x",
                                 absl::Hex(w.inv_rkey)));
        }
        if (w.with_imm &&
            (!(wc.wc_flags & kWcWithImm) || wc.imm_data != w.imm)) {
          Violation(absl::StrCat(what, ": completion ", WcString(wc),
                                 " lacks the immediate 0x", absl::Hex(w.imm)));
        }
      }
    }
  }

  void PostOneRecv(const std::vector<BatchWr>& wrs, size_t nth_consumer) {
    // The capacity the nth consuming WR of the batch asked for.
    uint64_t capacity = 4096;
    size_t seen = 0;
    for (const BatchWr& b : wrs) {
      if (b.kind != RemoteKind::kWriteImm && b.kind != RemoteKind::kSendInv) {
        continue;
      }
      if (seen++ == nth_consumer) {
        if (b.kind == RemoteKind::kSendInv) capacity = b.recv_capacity;
        break;
      }
    }
    if (free_slices_.empty()) Violation("harness: out of receive slices");
    PostedRecv r;
    r.wr_id = next_wr_id_++;
    r.slice = free_slices_.front();
    free_slices_.pop_front();
    r.capacity = capacity;
    Sge sge{recv_->addr() + r.slice * kSliceSize,
            static_cast<uint32_t>(capacity), recv_mr_->lkey()};
    RecvWr wr;
    wr.wr_id = r.wr_id;
    wr.sg_list = absl::MakeConstSpan(&sge, 1);
    ExpectErrno(pair_->server().qp()->PostRecv(wr), 0, "PostRecv");
    rq_.push_back(r);
    FUZZ_NOTE(absl::StrCat("post recv ", r.wr_id, " capacity ", capacity));
  }

  uint64_t ReadTarget(uint64_t addr) {
    uint64_t v = 0;
    if (target_->Holds(addr, 8)) {
      std::memcpy(&v, target_->shadow().data() + target_->Offset(addr), 8);
    }
    return v;
  }

  // The effect of a successful operation on the shadows.
  void Apply(const BatchWr& b, const RemoteRequest& req) {
    // A send touches the receive buffer only (the caller's business).
    if (b.kind == RemoteKind::kSendInv) return;
    if (b.length == 0 && b.kind != RemoteKind::kCmpSwap &&
        b.kind != RemoteKind::kFetchAdd) {
      return;  // nothing moves (and addr/rkey may be anything)
    }
    if (!target_->Holds(req.addr, b.kind == RemoteKind::kCmpSwap ||
                                          b.kind == RemoteKind::kFetchAdd
                                      ? 8
                                      : b.length)) {
      Violation(absl::StrCat("model: a successful access at 0x",
                             absl::Hex(req.addr), " outside the target buffer"));
    }
    uint8_t* t = target_->shadow().data() + target_->Offset(req.addr);
    // The message as the local SGEs hold it (shadow = current content).
    auto gather = [&]() {
      std::vector<uint8_t> msg;
      for (const Sge& s : b.sges) {
        const uint8_t* p = local_->shadow().data() + local_->Offset(s.addr);
        msg.insert(msg.end(), p, p + s.length);
      }
      return msg;
    };
    // The first `len` bytes of the message into the local SGEs.
    auto scatter = [&](const uint8_t* data, size_t len) {
      size_t at = 0;
      for (const Sge& s : b.sges) {
        const size_t n = std::min<size_t>(s.length, len - at);
        std::memcpy(local_->shadow().data() + local_->Offset(s.addr),
                    data + at, n);
        at += n;
        if (at == len) break;
      }
    };
    switch (b.kind) {
      case RemoteKind::kWrite:
      case RemoteKind::kWriteImm: {
        const std::vector<uint8_t> msg = gather();
        std::memcpy(t, msg.data(), msg.size());
        break;
      }
      case RemoteKind::kRead:
        scatter(t, b.length);
        break;
      case RemoteKind::kCmpSwap:
      case RemoteKind::kFetchAdd: {
        uint64_t orig;
        std::memcpy(&orig, t, 8);
        uint64_t now;
        if (b.kind == RemoteKind::kCmpSwap) {
          now = orig == b.wr.atomic.compare_add ? b.wr.atomic.swap : orig;
        } else {
          now = orig + b.wr.atomic.compare_add;
        }
        std::memcpy(t, &now, 8);
        // The original value lands in the first 8 bytes of the SGE list
        // (rxe takes any list of 8 bytes or more: rxe_comp.c copy_data).
        uint8_t bytes[8];
        std::memcpy(bytes, &orig, 8);
        scatter(bytes, 8);
        break;
      }
      case RemoteKind::kSendInv:
        break;
    }
  }

  ByteReader& in_;
  std::string profile_;
  ProfileRules rules_;
  uint32_t server_access_ = 0;
  QpCaps caps_;
  // Declared before the fabric's objects, so they outlive them.
  std::unique_ptr<ShadowedBuffer> target_;
  std::unique_ptr<ShadowedBuffer> local_;
  std::unique_ptr<ShadowedBuffer> recv_;
  std::unique_ptr<SimPair> pair_;
  std::unique_ptr<Pd> other_pd_;
  std::vector<size_t> region_len_;
  std::vector<size_t> region_off_;
  KeyModel keys_;
  std::unique_ptr<Mr> local_mr_;
  std::unique_ptr<Mr> recv_mr_;
  std::vector<TargetMr> mrs_;
  std::vector<Window> windows_;
  std::deque<PostedRecv> rq_;
  std::deque<size_t> free_slices_;
  uint64_t next_wr_id_ = 1;
  uint64_t batches_ = 0;
};

}  // namespace
}  // namespace verbsim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  verbsim::fuzz::ResetNotes();
  verbsim::fuzz::ByteReader in(data, size);
  {
    verbsim::fuzz::RkeyHarness harness(in);
    harness.Run();
  }
  return 0;
}
