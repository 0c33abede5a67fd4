// Harness 1 of issue 6: registration. The input decodes to a sequence of
// register / deregister / drop / alloc-PD / destroy-PD calls over a few PDs
// of one node, with arbitrary addresses, lengths (0, 1, huge, wrapping,
// ending exactly at 2^64) and access flags (known, unknown, ZERO_BASED,
// ON_DEMAND), optionally with a forced registration failure (`regfail`), and
// of probes that use a key: a local probe posts an RDMA write or read whose
// local SGE carries the key, a remote probe has the peer write, read or do an
// atomic with the key as rkey.
//
// Invariants:
//  - every call returns the Status of the reference model (fuzz/model.h),
//    a separate implementation of the flag and bounds rules;
//  - a registered MR reports the address, length, access and PD it was
//    registered with;
//  - keys never collide among live MRs of a node;
//  - a key is accepted exactly when the model finds a live MR for it (of the
//    QP's PD, covering the range, granting the access): a dead key is never
//    accepted; each probe's completion status is the model's, and the
//    memory it may touch changes exactly as the model says (a shadow copy
//    of the whole buffer, guards included).
//
// Not covered because the API lacks them (issue 3): re-registration
// (ibv_rereg_mr) and memory windows (ibv_alloc_mw, ibv_bind_mw and the
// BIND_MW work request). When they arrive, add them as ops here and their
// rules to fuzz/model.cc.
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
        default: ProbeRemote(); break;
      }
    }
  }

 private:
  void Setup() {
    const uint8_t profile_byte = in_.U8();
    profile_ = (profile_byte & 1) ? "rxe" : "ibta";
    rules_ = RulesFor(profile_);
    const uint64_t seed = in_.U8();
    regfail_nth_ = in_.U8();
    EndpointAttr attr;
    attr.rnr_retry = 1;
    pair_ = MakeSimPair(profile_, seed, attr, attr.qp_access);
    const DeviceAttr& dev = pair_->client().context()->device_attr();
    limits_.max_mr_size = dev.max_mr_size;
    limits_.max_mr = static_cast<uint64_t>(dev.max_mr);

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
    int expected = RegArgumentErrno(call, limits_);
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
    const absl::Status st = s.handle->Destroy();
    FUZZ_NOTE(absl::StrCat("dereg lkey 0x", absl::Hex(keys_.mr(s.model).lkey), ": ",
                      st.ToString()));
    ExpectErrno(st, live ? 0 : EINVAL, "Mr::Destroy");
    keys_.Kill(s.model);
    CheckKeys();
  }

  void Drop() {
    if (mrs_.empty()) return;
    MrSlot& s = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
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
    } else if (p.has_qp || keys_.LiveInPd(static_cast<int>(slot)) > 0) {
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
    switch (mode % 8) {
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
  void Finish(Endpoint& requester, uint64_t wr_id, const StatusSet& want,
              bool responder_error) {
    pair_->fabric->RunUntilIdle();
    const std::vector<WorkCompletion> got = DrainCq(requester.send_cq());
    if (got.size() != 1 || got[0].wr_id != wr_id ||
        !want.Contains(got[0].status)) {
      std::string list;
      for (const WorkCompletion& wc : got) {
        absl::StrAppend(&list, " [", WcString(wc), "]");
      }
      Violation(absl::StrCat("probe wr_id ", wr_id, ": expected one completion ",
                             want.ToString(), ", got", list.empty() ? " none" : list));
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
    const ResponderView rv{kClientNode, 0, pair_->client_attr.qp_access};
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
    ExpectErrno(pair_->server().qp()->PostSend(wr), 0, "PostSend (probe)");
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

  ByteReader& in_;
  std::string profile_;
  ProfileRules rules_;
  RegLimits limits_;
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
