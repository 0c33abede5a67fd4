// The registration harness's probes (reg_harness.h): work requests that
// use a key, the client's as an lkey (an RDMA write or read) and the
// server's as an rkey (a write, read or atomic in the client's buffer), and
// the checks after each one: its completion, the other CQs, both QP states
// and both buffers against their shadows.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/names.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/reg_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::reg_harness {

uint32_t RegHarness::DecodeKey() {
  const uint8_t mode = in_.U8();
  const int n = keys_.size();
  if (mode % 12 >= 8 && keys_.mw_count() > 0) {
    const ModelMw& w = keys_.mw(in_.Below(keys_.mw_count()));
    switch (mode % 12) {
      case 8: return w.rkey;
      case 9: return w.handle_rkey;
      case 10: return StaleRkey(w.rkey);
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
      // One read, then the other (the operands of ^ are unsequenced).
      const uint32_t key = in_.Bool() ? m.lkey : m.rkey;
      return key ^ (1u << (in_.U8() % 32));
    }
    case 5: return in_.U32();
    case 6: return in_.Bool() ? peer_mr_->lkey() : peer_mr_->rkey();
    default: return in_.Bool() ? keys_.mr(n - 1).lkey : keys_.mr(n - 1).rkey;
  }
}

// A place in the client's buffer (guards included) for `len` bytes.
uint64_t RegHarness::DecodeProbeAddr(uint64_t len) {
  return arena_->addr() + in_.U16() % (arena_->size() - len + 1);
}

void RegHarness::Finish(Endpoint& requester, uint64_t wr_id,
                        const StatusSet& want, bool responder_error,
                        bool completes, const WcOpcode* opcode) {
  pair_->fabric->RunUntilIdle();
  const Completions got = DrainCq(requester.send_cq());
  if (completes && &requester == &pair_->client()) unsignaled_run_ = 0;
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
    const Completions extra = DrainCq(cq);
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
  if (failed) {
    pair_->Reconnect();
    unsignaled_run_ = 0;  // a new QP
  }
}

// The client posts a write (its SGE is read) or a read (its SGE is
// written) whose local SGE carries the probed key.
void RegHarness::ProbeLocal() {
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
void RegHarness::ProbeRemote() {
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
  wr.opcode = WrOpcodeFor(req.kind);
  SetRemoteTarget(wr, addr, key);
  uint64_t orig = 0;
  if (atomic) {
    std::memcpy(&orig, arena_->shadow().data() + arena_->Offset(addr), 8);
    // Compare with the current value half the time, so swaps happen.
    wr.atomic.compare_add = (operand & 1) ? orig : operand;
    wr.atomic.swap = ~operand;
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
        const uint64_t now = AtomicResult(req.kind, orig,
                                          wr.atomic.compare_add,
                                          wr.atomic.swap);
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

}  // namespace verbsim::fuzz::reg_harness
