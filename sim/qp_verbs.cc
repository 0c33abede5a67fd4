#include "sim/qp_verbs.h"

#include <cstring>

#include "core/errors.h"
#include "core/names.h"
#include "sim/fabric.h"
#include "sim/packet.h"
#include "sim/sg.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

using S = verbsim::QpState;

constexpr uint32_t kRcInitOpt = kQpPkeyIndex | kQpPort | kQpAccessFlags;
constexpr uint32_t kUdInitOpt = kQpPkeyIndex | kQpPort | kQpQkey;

}  // namespace

TransitionRule RuleFor(QpType type, S from, S to) {
  const bool ud = type == QpType::kUd;
  const bool rc = type == QpType::kRc;
  TransitionRule r;
  // Any state may go to RESET or ERR.
  if (to == S::kReset || to == S::kErr) {
    r.valid = true;
    return r;
  }
  switch (from) {
    case S::kReset:
      if (to == S::kInit) {
        r.valid = true;
        r.required = ud ? kUdInitOpt : kRcInitOpt;
      }
      break;
    case S::kInit:
      if (to == S::kInit) {
        r.valid = true;
        r.optional = ud ? kUdInitOpt : kRcInitOpt;
      } else if (to == S::kRtr) {
        r.valid = true;
        if (ud) {
          r.optional = kQpPkeyIndex | kQpQkey;
        } else {
          r.required = kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
          if (rc) r.required |= kQpMaxDestRdAtomic | kQpMinRnrTimer;
          r.optional = kQpAltPath | kQpAccessFlags | kQpPkeyIndex;
        }
      }
      break;
    case S::kRtr:
      if (to == S::kRts) {
        r.valid = true;
        r.required = kQpSqPsn;
        if (rc) {
          r.required |= kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                        kQpMaxQpRdAtomic;
        }
        r.optional = ud ? (kQpCurState | kQpQkey)
                        : (kQpCurState | kQpAltPath | kQpAccessFlags |
                           kQpPathMigState | (rc ? kQpMinRnrTimer : 0));
      }
      break;
    case S::kRts:
      if (to == S::kRts) {
        r.valid = true;
        r.optional = ud ? (kQpCurState | kQpQkey)
                        : (kQpCurState | kQpAccessFlags | kQpAltPath |
                           kQpPathMigState | (rc ? kQpMinRnrTimer : 0));
      } else if (to == S::kSqd) {
        r.valid = true;
        r.optional = kQpEnSqdAsyncNotify;
      }
      break;
    case S::kSqd:
      if (to == S::kRts) {
        r.valid = true;
        r.optional = ud ? (kQpCurState | kQpQkey)
                        : (kQpCurState | kQpAltPath | kQpAccessFlags |
                           kQpPathMigState | (rc ? kQpMinRnrTimer : 0));
      } else if (to == S::kSqd) {
        r.valid = true;
        if (ud) {
          r.optional = kQpPkeyIndex | kQpQkey;
        } else {
          r.optional = kQpAv | kQpAltPath | kQpAccessFlags | kQpPkeyIndex |
                       kQpPathMigState;
          if (rc) {
            r.optional |= kQpMinRnrTimer | kQpTimeout | kQpRetryCnt |
                          kQpRnrRetry | kQpMaxQpRdAtomic | kQpMaxDestRdAtomic;
          }
        }
      }
      break;
    case S::kSqe:
      if (to == S::kRts && !rc) {
        r.valid = true;
        r.optional = ud ? (kQpCurState | kQpQkey)
                        : (kQpCurState | kQpAccessFlags);
      }
      break;
    case S::kErr:
    case S::kUnknown:
      break;
  }
  return r;
}

namespace {

// Checks each attribute the mask names against its range and the device.
absl::Status CheckValues(const QpCore& qp, const QpAttr& a, uint32_t mask) {
  const SimProfile& profile = qp.node->fabric->profile();
  const DeviceAttr& dev = profile.device;
  if ((mask & kQpCurState) && a.cur_qp_state != qp.state) {
    return Errno(EINVAL, "cur_qp_state %s is not the QP's state %s",
                 QpStateName(a.cur_qp_state), QpStateName(qp.state));
  }
  if ((mask & kQpPort) && a.port_num != 1) {
    return Errno(EINVAL, "port_num %d: the device has port 1 only",
                 a.port_num);
  }
  if ((mask & kQpPkeyIndex) && a.pkey_index >= profile.port.pkey_tbl_len) {
    return Errno(EINVAL, "pkey_index %d beyond the P_Key table of %d",
                 a.pkey_index, profile.port.pkey_tbl_len);
  }
  if ((mask & kQpAccessFlags) &&
      (a.qp_access_flags & ~(kAccessLocalWrite | kAccessRemoteWrite |
                             kAccessRemoteRead | kAccessRemoteAtomic |
                             kAccessMwBind)) != 0) {
    return Errno(EINVAL, "qp_access_flags 0x%x has unknown bits",
                 a.qp_access_flags);
  }
  if (mask & kQpPathMtu) {
    const int bytes = MtuBytes(a.path_mtu);
    if (bytes == 0 || bytes > MtuBytes(profile.port.max_mtu)) {
      return Errno(EINVAL, "path_mtu %d is not a valid MTU of this port",
                   static_cast<int>(a.path_mtu));
    }
  }
  if ((mask & kQpTimeout) && a.timeout > 31) {
    return Errno(EINVAL, "timeout %d exceeds 31", a.timeout);
  }
  if ((mask & kQpRetryCnt) && a.retry_cnt > 7) {
    return Errno(EINVAL, "retry_cnt %d exceeds 7", a.retry_cnt);
  }
  if ((mask & kQpRnrRetry) && a.rnr_retry > 7) {
    return Errno(EINVAL, "rnr_retry %d exceeds 7", a.rnr_retry);
  }
  if ((mask & kQpMinRnrTimer) && a.min_rnr_timer > 31) {
    return Errno(EINVAL, "min_rnr_timer %d exceeds 31", a.min_rnr_timer);
  }
  if ((mask & kQpMaxQpRdAtomic) && a.max_rd_atomic > dev.max_qp_init_rd_atom) {
    return Errno(EINVAL, "max_rd_atomic %d exceeds the device's %d",
                 a.max_rd_atomic, dev.max_qp_init_rd_atom);
  }
  if ((mask & kQpMaxDestRdAtomic) &&
      a.max_dest_rd_atomic > dev.max_qp_rd_atom) {
    return Errno(EINVAL, "max_dest_rd_atomic %d exceeds the device's %d",
                 a.max_dest_rd_atomic, dev.max_qp_rd_atom);
  }
  if ((mask & kQpDestQpn) && a.dest_qp_num > kPsnMask) {
    return Errno(EINVAL, "dest_qp_num 0x%x exceeds 24 bits", a.dest_qp_num);
  }
  if ((mask & kQpRqPsn) && a.rq_psn > kPsnMask) {
    return Errno(EINVAL, "rq_psn 0x%x exceeds 24 bits", a.rq_psn);
  }
  if ((mask & kQpSqPsn) && a.sq_psn > kPsnMask) {
    return Errno(EINVAL, "sq_psn 0x%x exceeds 24 bits", a.sq_psn);
  }
  if ((mask & kQpAv) && a.ah_attr.port_num != 1) {
    return Errno(EINVAL, "ah_attr.port_num %d: the device has port 1 only",
                 a.ah_attr.port_num);
  }
  return absl::OkStatus();
}

void Apply(QpCore& qp, const QpAttr& a, uint32_t mask) {
  QpAttr& s = qp.attr;
  if (mask & kQpPkeyIndex) s.pkey_index = a.pkey_index;
  if (mask & kQpPort) s.port_num = a.port_num;
  if (mask & kQpQkey) s.qkey = a.qkey;
  if (mask & kQpAccessFlags) s.qp_access_flags = a.qp_access_flags;
  if (mask & kQpAv) {
    s.ah_attr = a.ah_attr;
    qp.dest_node = qp.node->fabric->NodeByGid(a.ah_attr.dgid);
  }
  if (mask & kQpPathMtu) s.path_mtu = a.path_mtu;
  if (mask & kQpTimeout) s.timeout = a.timeout;
  if (mask & kQpRetryCnt) s.retry_cnt = a.retry_cnt;
  if (mask & kQpRnrRetry) s.rnr_retry = a.rnr_retry;
  if (mask & kQpRqPsn) s.rq_psn = a.rq_psn;
  if (mask & kQpSqPsn) s.sq_psn = a.sq_psn;
  if (mask & kQpMaxQpRdAtomic) s.max_rd_atomic = a.max_rd_atomic;
  if (mask & kQpMaxDestRdAtomic) s.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & kQpMinRnrTimer) s.min_rnr_timer = a.min_rnr_timer;
  if (mask & kQpDestQpn) s.dest_qp_num = a.dest_qp_num;
  if (mask & kQpEnSqdAsyncNotify) s.en_sqd_async_notify = a.en_sqd_async_notify;
}

}  // namespace

absl::Status ModifyQp(QpCore& qp, const QpAttr& a, uint32_t mask) {
  if (qp.dead) return Errno(EINVAL, "qp %u is destroyed", qp.qpn);
  constexpr uint32_t kAllKnown = (1u << 21) - 1;
  if (mask & ~kAllKnown) {
    return Errno(EINVAL, "attr_mask 0x%x has unknown bits", mask);
  }
  const S from = qp.state;
  const S to = (mask & kQpState) ? a.qp_state : from;
  if (static_cast<int>(to) < 0 || to > S::kErr) {
    return Errno(EINVAL, "qp_state %d is not a QP state",
                 static_cast<int>(to));
  }
  const TransitionRule rule = RuleFor(qp.type, from, to);
  if (!rule.valid) {
    return Errno(EINVAL, "qp %u: %s -> %s is not a valid transition",
                 qp.qpn, QpStateName(from), QpStateName(to));
  }
  const uint32_t given = mask & ~kQpState;
  const uint32_t missing = rule.required & ~given;
  if (missing != 0) {
    return Errno(EINVAL, "qp %u: %s -> %s requires %s", qp.qpn,
                 QpStateName(from), QpStateName(to), QpAttrMaskName(missing));
  }
  const uint32_t forbidden = given & ~(rule.required | rule.optional);
  if (forbidden != 0) {
    return Errno(EINVAL, "qp %u: %s -> %s does not accept %s", qp.qpn,
                 QpStateName(from), QpStateName(to),
                 QpAttrMaskName(forbidden));
  }
  if (absl::Status s = CheckValues(qp, a, mask); !s.ok()) return s;

  Apply(qp, a, mask);
  if (to == S::kReset) {
    ResetQueues(qp);
    qp.state = S::kReset;
    return absl::OkStatus();
  }
  if (to == S::kErr) {
    if (from != S::kErr) EnterError(qp);
    return absl::OkStatus();
  }
  if (from == S::kInit && to == S::kRtr) {
    qp.epsn = qp.attr.rq_psn;
    qp.msn = 0;
    qp.nak_sent = false;
  }
  if (from == S::kRtr && to == S::kRts) {
    qp.req_psn = qp.attr.sq_psn;
    qp.max_acked_psn = PsnAdd(qp.attr.sq_psn, kPsnMask);
    qp.implicit_nak_pending = false;
    qp.retry_left = qp.attr.retry_cnt;
    qp.rnr_left = qp.attr.rnr_retry;
  }
  qp.state = to;
  if (to == S::kRts) RequesterRun(qp);
  return absl::OkStatus();
}

namespace {

// Checks one send WR against the QP (ibv_post_send(3)); OK or EINVAL naming
// what is wrong.
absl::Status CheckSendWr(const QpCore& qp, const SendWr& wr) {
  const int op = static_cast<int>(wr.opcode);
  if (op < 0 || op > static_cast<int>(WrOpcode::kSendWithInv)) {
    return Errno(EINVAL, "wr_id %u: opcode %d is not a work request opcode",
                 wr.wr_id, op);
  }
  if (wr.opcode == WrOpcode::kBindMw) {
    return Errno(EINVAL, "wr_id %u: BIND_MW needs a memory window",
                 wr.wr_id);
  }
  if (wr.send_flags & ~kSendAllKnown) {
    return Errno(EINVAL, "wr_id %u: send_flags 0x%x has unknown bits",
                 wr.wr_id, wr.send_flags);
  }
  if (wr.sg_list.size() > qp.cap.max_send_sge) {
    return Errno(EINVAL, "wr_id %u: %zu SGEs exceed max_send_sge %u",
                 wr.wr_id, wr.sg_list.size(), qp.cap.max_send_sge);
  }
  if (wr.opcode == WrOpcode::kRdmaRead &&
      wr.sg_list.size() >
          static_cast<size_t>(qp.node->fabric->profile().device.max_sge_rd)) {
    return Errno(EINVAL, "wr_id %u: %zu SGEs exceed max_sge_rd", wr.wr_id,
                 wr.sg_list.size());
  }
  uint64_t length = 0;
  for (const Sge& s : wr.sg_list) length += s.length;
  if (length > (uint64_t{1} << 31)) {
    return Errno(EINVAL, "wr_id %u: message of %u bytes exceeds 2 GiB",
                 wr.wr_id, length);
  }
  if (wr.send_flags & kSendInline) {
    // Inline: only for sends and RDMA writes, bounded by max_inline_data.
    if (wr.opcode != WrOpcode::kSend && wr.opcode != WrOpcode::kSendWithImm &&
        wr.opcode != WrOpcode::kSendWithInv &&
        wr.opcode != WrOpcode::kRdmaWrite &&
        wr.opcode != WrOpcode::kRdmaWriteWithImm) {
      return Errno(EINVAL, "wr_id %u: INLINE is not allowed with %s",
                   wr.wr_id, WrOpcodeName(wr.opcode));
    }
    if (length > qp.cap.max_inline_data) {
      return Errno(EINVAL,
                   "wr_id %u: %u inline bytes exceed max_inline_data %u",
                   wr.wr_id, length, qp.cap.max_inline_data);
    }
    for (const Sge& s : wr.sg_list) {
      if (s.length > 0 && s.addr == 0) {
        return Errno(EINVAL, "wr_id %u: inline SGE with a null address",
                     wr.wr_id);
      }
    }
  }
  if (IsAtomicWr(wr.opcode)) {
    if (wr.sg_list.size() != 1 || wr.sg_list[0].length != 8) {
      return Errno(EINVAL,
                   "wr_id %u: an atomic needs exactly one 8-byte SGE",
                   wr.wr_id);
    }
  }
  if (qp.type == QpType::kRc && wr.ud.ah != nullptr) {
    return Errno(EINVAL, "wr_id %u: an address handle on an RC QP", wr.wr_id);
  }
  if (qp.type != QpType::kRc) {
    return Errno(EOPNOTSUPP, "wr_id %u: %s QPs arrive with the UD/UC work",
                 wr.wr_id, QpTypeName(qp.type));
  }
  return absl::OkStatus();
}

SendWqe MakeWqe(const QpCore& qp, const SendWr& wr) {
  SendWqe w;
  w.wr_id = wr.wr_id;
  w.opcode = wr.opcode;
  w.flags = wr.send_flags;
  w.signaled = qp.sq_sig_all || (wr.send_flags & kSendSignaled) != 0;
  w.sges.assign(wr.sg_list.begin(), wr.sg_list.end());
  w.length = SgeTotal(w.sges);
  w.imm = wr.imm_data;
  w.invalidate_rkey = wr.invalidate_rkey;
  if (IsAtomicWr(wr.opcode)) {
    w.remote_addr = wr.atomic.remote_addr;
    w.rkey = wr.atomic.rkey;
    w.compare_add = wr.atomic.compare_add;
    w.swap = wr.atomic.swap;
  } else {
    w.remote_addr = wr.rdma.remote_addr;
    w.rkey = wr.rdma.rkey;
  }
  if (wr.send_flags & kSendInline) {
    // The buffer may be reused as soon as the post returns.
    w.is_inline = true;
    w.data = GatherFrom(w.sges);
  }
  return w;
}

}  // namespace

absl::Status PostSend(QpCore& qp, absl::Span<const SendWr> wrs,
                      size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (qp.dead) return Errno(EINVAL, "qp %u is destroyed", qp.qpn);
  // Posting to the send queue before RTS fails (rxe; the spec leaves RESET,
  // INIT and RTR to the implementation).
  if (qp.state == S::kReset || qp.state == S::kInit || qp.state == S::kRtr) {
    return Errno(EINVAL, "qp %u is in %s: post_send needs RTS", qp.qpn,
                 QpStateName(qp.state));
  }
  for (size_t i = 0; i < wrs.size(); ++i) {
    if (bad_index != nullptr) *bad_index = i;
    const SendWr& wr = wrs[i];
    absl::Status s = CheckSendWr(qp, wr);
    if (s.ok() && qp.sq.size() >= qp.cap.max_send_wr) {
      s = Errno(ENOMEM, "qp %u: send queue full (%u WRs)", qp.qpn,
                qp.cap.max_send_wr);
    }
    if (!s.ok()) {
      // The WRs before the bad one are posted and go out (ibv_post_send(3):
      // bad_wr is the first one not posted).
      RequesterRun(qp);
      return s;
    }
    SendWqe w = MakeWqe(qp, wr);
    if (qp.state == S::kErr) {
      // Posted in ERR: completes at once, flushed.
      WorkCompletion wc;
      wc.wr_id = w.wr_id;
      wc.status = WcStatus::kWrFlushErr;
      wc.opcode = WcOpcodeFor(w.opcode);
      wc.qp_num = qp.qpn;
      PushCompletion(*qp.send_cq, wc, false);
      continue;
    }
    qp.sq.push_back(std::move(w));
  }
  if (bad_index != nullptr) *bad_index = wrs.size();
  RequesterRun(qp);
  return absl::OkStatus();
}

absl::Status PostRecv(QpCore& qp, absl::Span<const RecvWr> wrs,
                      size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (qp.dead) return Errno(EINVAL, "qp %u is destroyed", qp.qpn);
  if (qp.state == S::kReset) {
    return Errno(EINVAL, "qp %u is in RESET: post_recv needs INIT or later",
                 qp.qpn);
  }
  for (size_t i = 0; i < wrs.size(); ++i) {
    if (bad_index != nullptr) *bad_index = i;
    const RecvWr& wr = wrs[i];
    if (wr.sg_list.size() > qp.cap.max_recv_sge) {
      return Errno(EINVAL, "wr_id %u: %zu SGEs exceed max_recv_sge %u",
                   wr.wr_id, wr.sg_list.size(), qp.cap.max_recv_sge);
    }
    if (qp.rq.size() >= qp.cap.max_recv_wr) {
      return Errno(ENOMEM, "qp %u: receive queue full (%u WRs)", qp.qpn,
                   qp.cap.max_recv_wr);
    }
    RecvWqe r;
    r.wr_id = wr.wr_id;
    r.sges.assign(wr.sg_list.begin(), wr.sg_list.end());
    r.capacity = SgeTotal(r.sges);
    if (qp.state == S::kErr) {
      WorkCompletion wc;
      wc.wr_id = r.wr_id;
      wc.status = WcStatus::kWrFlushErr;
      wc.opcode = WcOpcode::kRecv;
      wc.qp_num = qp.qpn;
      PushCompletion(*qp.recv_cq, wc, false);
      continue;
    }
    qp.rq.push_back(std::move(r));
  }
  if (bad_index != nullptr) *bad_index = wrs.size();
  return absl::OkStatus();
}

}  // namespace verbsim::sim
