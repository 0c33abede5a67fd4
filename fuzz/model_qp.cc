// The model of a QP's verbs: ibv_post_send's per-WR checks and the queues
// that refuse posts, the RC state transitions of ibv_modify_qp(3), and what
// a remote operation does at the responder.
#include <cerrno>

#include "fuzz/model.h"

namespace verbsim::fuzz {

// --- Posting -----------------------------------------------------------------

namespace {

bool IsAtomicOp(WrOpcode op) {
  return op == WrOpcode::kAtomicCmpAndSwp || op == WrOpcode::kAtomicFetchAndAdd;
}

constexpr uint32_t kKnownSendFlags =
    kSendFence | kSendSignaled | kSendSolicited | kSendInline;

}  // namespace

int SendWrErrno(const SendWr& wr, const QpCaps& caps,
                const PostSendRules& rules) {
  const int op = static_cast<int>(wr.opcode);
  if (op < static_cast<int>(WrOpcode::kRdmaWrite) ||
      op > static_cast<int>(WrOpcode::kSendWithInv)) {
    return EINVAL;
  }
  // BIND_MW: these checks see only binds that name no window (EINVAL);
  // binds of windows are KeyModel::PredictBind's.
  if (wr.opcode == WrOpcode::kBindMw) return EINVAL;
  if ((wr.send_flags & ~kKnownSendFlags) != 0) return EINVAL;
  if (wr.sg_list.size() > caps.max_send_sge) return EINVAL;
  uint64_t total = 0;
  for (const Sge& s : wr.sg_list) total += s.length;
  // The largest IBA message is 2^31 bytes.
  if (total > (uint64_t{1} << 31)) return EINVAL;
  if (wr.send_flags & kSendInline) {
    // docs/semantics.md §5: inline only for send and RDMA write, bounded by
    // max_inline_data.
    const bool inline_ok =
        wr.opcode == WrOpcode::kSend || wr.opcode == WrOpcode::kSendWithImm ||
        wr.opcode == WrOpcode::kSendWithInv ||
        wr.opcode == WrOpcode::kRdmaWrite ||
        wr.opcode == WrOpcode::kRdmaWriteWithImm;
    if ((!inline_ok && rules.inline_needs_send_or_write) ||
        total > caps.max_inline_data) {
      return EINVAL;
    }
    for (const Sge& s : wr.sg_list) {
      if (s.length > 0 && s.addr == 0) return EINVAL;
    }
  }
  if (IsAtomicOp(wr.opcode)) {
    // An atomic returns the original 8 bytes: into exactly one 8-byte SGE,
    // or (rxe) into the first 8 of any list holding 8 or more.
    const bool sges_ok = rules.atomic_needs_one_8_byte_sge
                             ? wr.sg_list.size() == 1 &&
                                   wr.sg_list[0].length == 8
                             : total >= 8;
    if (!sges_ok) return EINVAL;
    if (rules.atomic_target_aligned_at_post &&
        (wr.atomic.remote_addr & 7) != 0) {
      return EINVAL;
    }
  }
  return 0;
}

bool SendQueueClosed(QpState s) {
  return s == QpState::kReset || s == QpState::kInit || s == QpState::kRtr;
}

bool RecvQueueClosed(QpState s) { return s == QpState::kReset; }

WcOpcode WcOpcodeOf(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm: return WcOpcode::kRdmaWrite;
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
    case WrOpcode::kSendWithInv: return WcOpcode::kSend;
    case WrOpcode::kRdmaRead: return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCmpAndSwp: return WcOpcode::kCompSwap;
    case WrOpcode::kAtomicFetchAndAdd: return WcOpcode::kFetchAdd;
    case WrOpcode::kLocalInv: return WcOpcode::kLocalInv;
    case WrOpcode::kBindMw: return WcOpcode::kBindMw;
  }
  return WcOpcode::kSend;
}

// --- Transitions -------------------------------------------------------------

namespace {

struct Step {
  bool valid = false;
  uint32_t required = 0;
  uint32_t optional = 0;
};

// The RC column of the transition table (ibv_modify_qp(3), IBA 10.3.1,
// the kernel's qp_state_table).
Step RcStep(QpState from, QpState to) {
  using S = QpState;
  Step t;
  // To RESET from anywhere, to ERR from anywhere but RESET (the kernel's
  // qp_state_table has no RESET -> ERR), with no other attribute.
  if (to == S::kReset || (to == S::kErr && from != S::kReset)) {
    t.valid = true;
    return t;
  }
  if (from == S::kReset && to == S::kInit) {
    t.valid = true;
    t.required = kQpPkeyIndex | kQpPort | kQpAccessFlags;
  } else if (from == S::kInit && to == S::kInit) {
    t.valid = true;
    t.optional = kQpPkeyIndex | kQpPort | kQpAccessFlags;
  } else if (from == S::kInit && to == S::kRtr) {
    t.valid = true;
    t.required = kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                 kQpMaxDestRdAtomic | kQpMinRnrTimer;
    t.optional = kQpAltPath | kQpAccessFlags | kQpPkeyIndex;
  } else if (from == S::kRtr && to == S::kRts) {
    t.valid = true;
    t.required = kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                 kQpMaxQpRdAtomic;
    t.optional = kQpCurState | kQpAltPath | kQpAccessFlags | kQpMinRnrTimer |
                 kQpPathMigState;
  } else if ((from == S::kRts || from == S::kSqd) && to == S::kRts) {
    t.valid = true;
    t.optional = kQpCurState | kQpAccessFlags | kQpAltPath | kQpMinRnrTimer |
                 kQpPathMigState;
  } else if (from == S::kRts && to == S::kSqd) {
    t.valid = true;
    t.optional = kQpEnSqdAsyncNotify;
  } else if (from == S::kSqd && to == S::kSqd) {
    t.valid = true;
    t.optional = kQpAv | kQpAltPath | kQpAccessFlags | kQpPkeyIndex |
                 kQpMinRnrTimer | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                 kQpMaxQpRdAtomic | kQpMaxDestRdAtomic | kQpPathMigState;
  }
  return t;
}

}  // namespace

int ModifyErrno(QpState from, QpState to, uint32_t mask) {
  if ((mask & ~((1u << 21) - 1)) != 0) return EINVAL;
  const QpState target = (mask & kQpState) ? to : from;
  const Step t = RcStep(from, target);
  if (!t.valid) return EINVAL;
  const uint32_t given = mask & ~kQpState;
  if ((t.required & ~given) != 0) return EINVAL;
  if ((given & ~(t.required | t.optional)) != 0) return EINVAL;
  return 0;
}

uint32_t InitMask() {
  return kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags;
}
uint32_t RtrMask() {
  return kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
         kQpMaxDestRdAtomic | kQpMinRnrTimer;
}
uint32_t RtsMask() {
  return kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
         kQpMaxQpRdAtomic;
}

// --- Remote operations -------------------------------------------------------

RemoteOutcome PredictRemote(const RemoteRequest& req, const ResponderView& rv,
                            const KeyModel& keys, const ProfileRules& rules) {
  RemoteOutcome out;
  auto fail = [&](StatusSet requester) {
    out.requester = requester;
    out.executes = false;
    out.responder_error = true;
  };
  auto succeed = [&]() {
    out.requester = {WcStatus::kSuccess};
    out.executes = true;
  };
  switch (req.kind) {
    case RemoteKind::kWrite:
    case RemoteKind::kWriteImm:
    case RemoteKind::kRead: {
      const bool read = req.kind == RemoteKind::kRead;
      const uint32_t need = read ? kAccessRemoteRead : kAccessRemoteWrite;
      // The responder QP must allow the operation at all.
      if ((rv.qp_access & need) == 0) {
        fail(rules.qp_access_denied);
        return out;
      }
      if (req.length == 0 && rules.zero_length_skips_rkey) {
        succeed();
      } else if (keys.Check(rv.node, req.rkey, /*remote=*/true, rv.pd,
                            req.addr, req.length, need,
                            rv.qp) == KeyVerdict::kOk) {
        succeed();
      } else {
        fail({WcStatus::kRemAccessErr});
        if (req.kind == RemoteKind::kWriteImm && req.length <= req.path_mtu &&
            rules.failed_write_imm_completes_its_recv) {
          out.consumes_recv = true;
          out.receiver = {WcStatus::kRemAccessErr};
        }
        return out;
      }
      if (req.kind == RemoteKind::kWriteImm) {
        // The immediate completes a receive on the responder.
        out.consumes_recv = true;
        out.receiver = {WcStatus::kSuccess};
      }
      return out;
    }
    case RemoteKind::kCmpSwap:
    case RemoteKind::kFetchAdd: {
      if ((rv.qp_access & kAccessRemoteAtomic) == 0) {
        fail(rules.qp_access_denied);
        return out;
      }
      const bool misaligned = req.addr % 8 != 0;
      const bool key_ok =
          keys.Check(rv.node, req.rkey, true, rv.pd, req.addr, 8,
                     kAccessRemoteAtomic, rv.qp) == KeyVerdict::kOk;
      if (misaligned && key_ok) {
        fail({WcStatus::kRemInvReqErr});
      } else if (misaligned) {
        // Both checks fail; the sources do not order them (rxe checks the
        // rkey first), so either error is right.
        fail({WcStatus::kRemInvReqErr, WcStatus::kRemAccessErr});
      } else if (!key_ok) {
        fail({WcStatus::kRemAccessErr});
      } else {
        succeed();
      }
      return out;
    }
    case RemoteKind::kSendInv: {
      out.consumes_recv = true;
      if (req.length > req.recv_capacity) {
        fail(rules.recv_too_small_sender);
        out.receiver = rules.recv_too_small;
        return out;
      }
      // Only a bound type 2 window of the responder's PD (bound through its
      // QP, where the profile says so) can be invalidated; anything else
      // is a bad rkey (docs/semantics.md §2: REM_ACCESS_ERR at the requester).
      int window = -1;
      if (keys.CheckInvalidate(rv.node, req.rkey, rv.pd, rv.qp, rules,
                               &window) == InvVerdict::kOk) {
        succeed();
        out.receiver = {WcStatus::kSuccess};
        out.invalidates = window;
        return out;
      }
      if (rules.naks_failed_send_invalidate) {
        fail({WcStatus::kRemAccessErr});
      } else {
        succeed();
        out.executes = false;
        out.responder_error = true;
      }
      out.receiver = rules.recv_bad_invalidate;
      return out;
    }
  }
  return out;
}

}  // namespace verbsim::fuzz
