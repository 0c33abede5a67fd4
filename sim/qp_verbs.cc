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
  // Any state may go to RESET, and any but RESET to ERR: a QP in RESET has
  // nothing to flush, and the kernel's qp_state_table (which every Linux
  // device, rxe and siw included, goes through) has no RESET -> ERR.
  if (to == S::kReset || (to == S::kErr && from != S::kReset)) {
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
  // The attributes the profile takes as given are not range-checked.
  mask &= ~profile.modify_unchecked_attrs;
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
  if (mask & kQpAv) {
    // RoCE addresses by GID: an AV without a GRH names no destination
    // (the kernel's rdma_check_ah_attr).
    if (!a.ah_attr.is_global) {
      return Errno(EINVAL, "ah_attr without a GRH (is_global 0): RoCE "
                   "addresses need one");
    }
    if (absl::Status s = CheckSgidIndex(profile, a.ah_attr.sgid_index);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

void ApplyQpAttrs(QpCore& qp, const QpAttr& a, uint32_t mask) {
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

void StartReceiving(QpCore& qp) {
  qp.epsn = qp.attr.rq_psn;
  qp.msn = 0;
  qp.nak_sent = false;
}

void StartSending(QpCore& qp) {
  qp.req_psn = qp.attr.sq_psn;
  qp.max_acked_psn = PsnAdd(qp.attr.sq_psn, kPsnMask);
  qp.implicit_nak_pending = false;
  qp.retry_left = qp.attr.retry_cnt;
  qp.rnr_left = qp.attr.rnr_retry;
}

absl::Status ModifyQp(QpCore& qp, const QpAttr& a, uint32_t mask) {
  if (qp.dead) return Errno(EINVAL, "qp %u is destroyed", qp.qpn);
  // Bits past IBV_QP_DEST_QPN: EOPNOTSUPP (rdma-core ibv_cmd_modify_qp;
  // the kernel's uverbs modify_qp for the extended command).
  constexpr uint32_t kAllKnown = (1u << 21) - 1;
  if (mask & ~kAllKnown) {
    return Errno(EOPNOTSUPP, "attr_mask 0x%x has bits past IBV_QP_DEST_QPN",
                 mask);
  }
  const S from = qp.state;
  const S to = (mask & kQpState) ? a.qp_state : from;
  if (static_cast<int>(to) < 0 || to > S::kErr) {
    return Errno(EINVAL, "qp_state %d is not a QP state",
                 static_cast<int>(to));
  }
  if (qp.node->fabric->profile().iwarp.takes_state_only) {
    return ModifyIwarpQp(qp, a, mask);
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
  if (to == S::kRts && from != S::kRts && from != S::kSqd &&
      qp.node->fabric->profile().iwarp.rts_needs_cm && !qp.cm_connected) {
    // siw_qp.c siw_qp_modify: RTS needs the TCP socket the iWARP connection
    // manager hands over ("no socket").
    return Errno(EINVAL,
                 "qp %u: RTS needs a connection through the CM on profile %s "
                 "(iWARP)",
                 qp.qpn, qp.node->fabric->profile().name);
  }

  ApplyQpAttrs(qp, a, mask);
  if (to == S::kReset) {
    ResetQueues(qp);
    qp.state = S::kReset;
    return absl::OkStatus();
  }
  if (to == S::kErr) {
    if (from != S::kErr) {
      EnterError(qp);
    } else {
      FlushReceivesPostedInError(qp);
    }
    return absl::OkStatus();
  }
  if (from == S::kInit && to == S::kRtr) StartReceiving(qp);
  if (from == S::kRtr && to == S::kRts) StartSending(qp);
  qp.state = to;
  if (to == S::kRts && from == S::kRtr && !qp.sq.empty() &&
      qp.node->fabric->profile().keeps_send_wrs_posted_before_rts) {
    // WRs kept from before RTS wait for the next doorbell (SimProfile).
    qp.send_engine_idle = true;
    return absl::OkStatus();
  }
  if (to == S::kRts) RequesterRun(qp);
  return absl::OkStatus();
}

namespace {

// Checks a BIND_MW work request's arguments (ibv_post_send(3),
// ibv_bind_mw(3)); what depends on the window's state at execution time is
// checked then (mw.cc) and fails the WR with MW_BIND_ERR.
absl::Status CheckBindWr(const QpCore& qp, const SendWr& wr,
                         const ResolvedWr& r) {
  if (r.mw == nullptr) {
    return Errno(EINVAL, "wr_id %u: BIND_MW without a memory window",
                 wr.wr_id);
  }
  if (r.mw->dead) {
    return Errno(EINVAL, "wr_id %u: the memory window is deallocated",
                 wr.wr_id);
  }
  // IBA 10.6.7.2: type 1 windows are bound by the Bind Memory Window verb
  // (ibv_bind_mw), type 2 windows by the work request.
  if (r.mw->type == MwType::kType1 && !r.bind_verb &&
      qp.node->fabric->profile().post_send.type1_bind_wr_refused) {
    return Errno(EINVAL,
                 "wr_id %u: BIND_MW work request for a type 1 window "
                 "(use ibv_bind_mw)",
                 wr.wr_id);
  }
  const MwBindInfo& b = wr.bind_mw.bind_info;
  if (b.length > 0 && r.bind_mr == nullptr) {
    return Errno(EINVAL, "wr_id %u: bind of %u bytes without a region",
                 wr.wr_id, b.length);
  }
  // A window grants remote rights; LOCAL_WRITE is accepted and means
  // nothing for it (rxe0 binds with it, and rdma-core's own test suite asks
  // for REMOTE_WRITE | LOCAL_WRITE).
  if (b.mw_access_flags &
      ~(kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic |
        kAccessZeroBased | kAccessLocalWrite)) {
    return Errno(EINVAL, "wr_id %u: mw_access_flags 0x%x has bits a window "
                 "cannot grant", wr.wr_id, b.mw_access_flags);
  }
  if (b.mw_access_flags & kAccessZeroBased) {
    return Errno(EINVAL, "wr_id %u: zero-based windows are not supported",
                 wr.wr_id);
  }
  return absl::OkStatus();
}

// Checks one send WR against the QP (ibv_post_send(3)); OK or EINVAL naming
// what is wrong. Where provider libraries differ, the profile's
// PostSendChecks decide (sim/profile.h).
absl::Status CheckSendWr(const QpCore& qp, const SendWr& wr,
                         const ResolvedWr& r) {
  const PostSendChecks& rules = qp.node->fabric->profile().post_send;
  const int op = static_cast<int>(wr.opcode);
  if (op < 0 || op > static_cast<int>(WrOpcode::kSendWithInv)) {
    return Errno(EINVAL, "wr_id %u: opcode %d is not a work request opcode",
                 wr.wr_id, op);
  }
  // An opcode the transport does not carry is accepted here and fails as it
  // executes (LOC_QP_OP_ERR, rxe_req.c next_opcode); BIND_MW on UD is
  // refused at once (rxe provider validate_send_wr).
  if (qp.type == QpType::kUd && wr.opcode == WrOpcode::kBindMw) {
    return Errno(EINVAL, "wr_id %u: BIND_MW on a UD QP", wr.wr_id);
  }
  if (wr.opcode == WrOpcode::kBindMw) {
    if (absl::Status s = CheckBindWr(qp, wr, r); !s.ok()) return s;
  }
  if (wr.send_flags & ~kSendAllKnown) {
    return Errno(EINVAL, "wr_id %u: send_flags 0x%x has unknown bits",
                 wr.wr_id, wr.send_flags);
  }
  if (rules.refused_opcodes & (1u << op)) {
    return Errno(EINVAL, "wr_id %u: profile %s's library does not post %s",
                 wr.wr_id, qp.node->fabric->profile().name,
                 WrOpcodeName(wr.opcode));
  }
  if (rules.library_sge_limit != 0) {
    if (wr.sg_list.size() > rules.library_sge_limit) {
      return Errno(EINVAL, "wr_id %u: %zu SGEs exceed the library's %u",
                   wr.wr_id, wr.sg_list.size(), rules.library_sge_limit);
    }
  } else if (wr.sg_list.size() > qp.cap.max_send_sge) {
    return Errno(EINVAL, "wr_id %u: %zu SGEs exceed max_send_sge %u",
                 wr.wr_id, wr.sg_list.size(), qp.cap.max_send_sge);
  }
  // (A library with its own limit checks nothing else: libsiw takes a READ
  // with more SGEs than max_sge_rd.)
  if (wr.opcode == WrOpcode::kRdmaRead && rules.library_sge_limit == 0 &&
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
    if (rules.inline_needs_send_or_write && wr.opcode != WrOpcode::kSend &&
        wr.opcode != WrOpcode::kSendWithImm &&
        wr.opcode != WrOpcode::kSendWithInv &&
        wr.opcode != WrOpcode::kRdmaWrite &&
        wr.opcode != WrOpcode::kRdmaWriteWithImm) {
      return Errno(EINVAL, "wr_id %u: INLINE is not allowed with %s",
                   wr.wr_id, WrOpcodeName(wr.opcode));
    }
    const uint32_t inline_limit = rules.library_inline_limit != 0
                                      ? rules.library_inline_limit
                                      : qp.cap.max_inline_data;
    if (length > inline_limit) {
      return Errno(EINVAL,
                   "wr_id %u: %u inline bytes exceed max_inline_data %u",
                   wr.wr_id, length, inline_limit);
    }
    for (const Sge& s : wr.sg_list) {
      if (s.length > 0 && s.addr == 0) {
        return Errno(EINVAL, "wr_id %u: inline SGE with a null address",
                     wr.wr_id);
      }
    }
  }
  if (IsAtomicWr(wr.opcode)) {
    if (rules.atomic_needs_one_8_byte_sge &&
        (wr.sg_list.size() != 1 || wr.sg_list[0].length != 8)) {
      return Errno(EINVAL,
                   "wr_id %u: an atomic needs exactly one 8-byte SGE",
                   wr.wr_id);
    }
    if (!rules.atomic_needs_one_8_byte_sge && length < 8) {
      return Errno(EINVAL, "wr_id %u: an atomic needs 8 bytes of SGE, not %u",
                   wr.wr_id, length);
    }
    if (rules.atomic_target_aligned_at_post && (wr.atomic.remote_addr & 7)) {
      return Errno(EINVAL, "wr_id %u: atomic target 0x%x is not 8-byte aligned",
                   wr.wr_id, wr.atomic.remote_addr);
    }
  }
  if (qp.type != QpType::kUd && wr.ud.ah != nullptr) {
    return Errno(EINVAL, "wr_id %u: an address handle on a %s QP", wr.wr_id,
                 QpTypeName(qp.type));
  }
  // On UD only the sends read wr.ud: any other opcode is accepted without an
  // address handle and completes LOC_QP_OP_ERR as it executes (above).
  if (qp.type == QpType::kUd && OpcodeValidOn(QpType::kUd, wr.opcode)) {
    if (r.ah == nullptr) {
      return Errno(EINVAL, "wr_id %u: a UD send needs an address handle",
                   wr.wr_id);
    }
    if (r.ah->dead) {
      return Errno(EINVAL, "wr_id %u: the address handle is destroyed",
                   wr.wr_id);
    }
    const bool check_qpn = rules.ud_remote_qpn_checked;
    if (check_qpn && wr.ud.remote_qpn > kPsnMask) {
      return Errno(EINVAL, "wr_id %u: remote_qpn 0x%x exceeds 24 bits",
                   wr.wr_id, wr.ud.remote_qpn);
    }
    // A multicast group is addressed with QPN 0xFFFFFF, and only a group is.
    if (check_qpn &&
        (r.ah->dest_node < 0) != (wr.ud.remote_qpn == kMulticastQpn)) {
      return Errno(EINVAL,
                   "wr_id %u: remote_qpn 0x%x does not match the address "
                   "handle (a multicast group needs 0xffffff)",
                   wr.wr_id, wr.ud.remote_qpn);
    }
  }
  return absl::OkStatus();
}

// Fills `w`, a WQE as constructed (SendWqe{}), from `wr`.
void FillWqe(const QpCore& qp, const SendWr& wr, const ResolvedWr& r,
             SendWqe& w) {
  w.wr_id = wr.wr_id;
  w.opcode = wr.opcode;
  w.flags = wr.send_flags;
  w.signaled = qp.sq_sig_all || (wr.send_flags & kSendSignaled) != 0;
  w.sges.assign(wr.sg_list.begin(), wr.sg_list.end());
  if (wr.opcode == WrOpcode::kRdmaRead && w.sges.size() > 1 &&
      (wr.send_flags & kSendInline) == 0 &&
      qp.node->fabric->profile().iwarp.read_uses_first_sge) {
    w.sges.resize(1);  // after the post-time checks, which saw them all
  }
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
  w.ah = r.ah;
  w.remote_qpn = wr.ud.remote_qpn;
  w.remote_qkey = wr.ud.remote_qkey;
  if (wr.opcode == WrOpcode::kBindMw) {
    w.mw = r.mw;
    w.bind_mr = r.bind_mr;
    w.bind_rkey = wr.bind_mw.rkey;
    w.bind_addr = wr.bind_mw.bind_info.addr;
    w.bind_length = wr.bind_mw.bind_info.length;
    w.bind_access = wr.bind_mw.bind_info.mw_access_flags;
    w.bind_named_rkey = wr.bind_mw.current_rkey;
    w.bind_verb = r.bind_verb;
  }
}

SendWqe MakeWqe(const QpCore& qp, const SendWr& wr, const ResolvedWr& r) {
  SendWqe w;
  FillWqe(qp, wr, r, w);
  return w;
}

}  // namespace

namespace {

// WRs the kernel's siw refuses to start (IwarpRules::refuses_at_activation):
// INLINE on anything but a SEND or WRITE, and a fenced READ.
bool RefusedAtActivation(const SendWr& wr) {
  if ((wr.send_flags & kSendInline) && wr.opcode != WrOpcode::kSend &&
      wr.opcode != WrOpcode::kRdmaWrite) {
    return true;
  }
  return (wr.send_flags & kSendFence) && wr.opcode == WrOpcode::kRdmaRead;
}

// libsiw's siw_post_send on a QP whose send ring nobody consumes (IDLE
// before the CM connected it, or ERROR): each WR takes a ring slot (ENOMEM
// once none is free, checked before the WR itself), and the doorbell rings
// only when the slot before the first new WR was free or the whole ring was
// written. The kernel answers a doorbell out of RTS with ENOTCONN and one
// in ERROR with 0 (siw_verbs.c siw_post_send), and that answer replaces a
// WR's own error. The WRs stay in the ring, holding their slots, until the
// QP reaches RTS or is flushed.
absl::Status PostToIdleRing(QpCore& qp, absl::Span<const SendWr> wrs,
                            absl::Span<const ResolvedWr> resolved,
                            size_t* bad_index) {
  static const ResolvedWr kNone;
  const bool was_empty = qp.sq.empty();
  size_t pushed = 0;
  absl::Status failed;
  for (size_t i = 0; i < wrs.size(); ++i) {
    if (bad_index != nullptr) *bad_index = i;
    if (qp.sq.size() >= qp.cap.max_send_wr) {
      failed = Errno(ENOMEM, "qp %u: send ring full (%u WRs)", qp.qpn,
                     qp.cap.max_send_wr);
      break;
    }
    const ResolvedWr& r = i < resolved.size() ? resolved[i] : kNone;
    failed = CheckSendWr(qp, wrs[i], r);
    if (!failed.ok()) break;
    SendWqe w = MakeWqe(qp, wrs[i], r);
    w.seq = qp.next_wqe_seq++;
    w.refused_at_activation =
        qp.node->fabric->profile().iwarp.refuses_at_activation &&
        RefusedAtActivation(wrs[i]);
    qp.sq.push_back(std::move(w));
    ++pushed;
  }
  if (failed.ok() && bad_index != nullptr) *bad_index = wrs.size();
  const bool doorbell =
      pushed > 0 && (was_empty || pushed >= qp.cap.max_send_wr);
  if (!doorbell) return failed;
  if (qp.state == S::kErr) return absl::OkStatus();
  return Errno(ENOTCONN,
               "qp %u is in %s: the doorbell needs RTS (the WRs stay in the "
               "send ring)",
               qp.qpn, QpStateName(qp.state));
}

// libibverbs' rxe before RTS (SimProfile::keeps_send_wrs_posted_before_rts):
// each WR is checked and, when valid and a slot is free, written into the
// send queue; then the doorbell is refused, and its EINVAL is the answer
// whatever a WR's own was. The WRs written wait for a doorbell in RTS.
absl::Status PostKeptUntilRts(QpCore& qp, absl::Span<const SendWr> wrs,
                              absl::Span<const ResolvedWr> resolved,
                              size_t* bad_index) {
  static const ResolvedWr kNone;
  const SimProfile& profile = qp.node->fabric->profile();
  size_t i = 0;
  for (; i < wrs.size(); ++i) {
    const ResolvedWr& r = i < resolved.size() ? resolved[i] : kNone;
    const bool full = SqSlotsHeld(qp) >= qp.cap.max_send_wr;
    if (full && profile.post_send.full_queue_checked_first) break;
    if (!CheckSendWr(qp, wrs[i], r).ok() || full) break;
    SendWqe w = MakeWqe(qp, wrs[i], r);
    w.seq = qp.next_wqe_seq++;
    qp.sq.push_back(std::move(w));
  }
  if (bad_index != nullptr) *bad_index = i;
  return Errno(EINVAL,
               "qp %u is in %s: the doorbell needs RTS (%zu WRs written stay "
               "in the send queue until a post_send in RTS)",
               qp.qpn, QpStateName(qp.state), i);
}

}  // namespace

absl::Status PostSend(QpCore& qp, absl::Span<const SendWr> wrs,
                      absl::Span<const ResolvedWr> resolved,
                      size_t* bad_index) {
  static const ResolvedWr kNone;
  if (bad_index != nullptr) *bad_index = 0;
  if (qp.dead) return Errno(EINVAL, "qp %u is destroyed", qp.qpn);
  const SimProfile& profile = qp.node->fabric->profile();
  const bool before_rts =
      qp.state == S::kReset || qp.state == S::kInit || qp.state == S::kRtr;
  // Posting to the send queue before RTS fails (rxe; the spec leaves RESET,
  // INIT and RTR to the implementation).
  if (before_rts && !profile.iwarp.takes_state_only) {
    if (profile.keeps_send_wrs_posted_before_rts) {
      return PostKeptUntilRts(qp, wrs, resolved, bad_index);
    }
    return Errno(EINVAL, "qp %u is in %s: post_send needs RTS", qp.qpn,
                 QpStateName(qp.state));
  }
  // libsiw writes every valid WR into its send ring before it rings the
  // doorbell, which a QP out of RTS refuses (siw_verbs.c siw_post_send:
  // ENOTCONN) and one in ERROR ignores: the WRs stay in the ring, holding
  // their slots, until the QP reaches RTS or is flushed.
  if (profile.iwarp.takes_state_only &&
      (before_rts ||
       (qp.state == S::kErr && !profile.flushes_send_posted_in_err))) {
    return PostToIdleRing(qp, wrs, resolved, bad_index);
  }
  // rxe rings the doorbell after every post, and it runs the requester over
  // WRs kept from before RTS too (RequesterRun below).
  if (profile.keeps_send_wrs_posted_before_rts) qp.send_engine_idle = false;
  for (size_t i = 0; i < wrs.size(); ++i) {
    if (bad_index != nullptr) *bad_index = i;
    const SendWr& wr = wrs[i];
    const ResolvedWr& r = i < resolved.size() ? resolved[i] : kNone;
    const bool full = SqSlotsHeld(qp) >= qp.cap.max_send_wr;
    absl::Status s = full && profile.post_send.full_queue_checked_first
                         ? absl::OkStatus()
                         : CheckSendWr(qp, wr, r);
    if (s.ok() && full) {
      // Where a completed WR keeps its slot until a completion of its send
      // queue is polled (SimProfile::sq_slots_held_until_polled; mlx5
      // providers/mlx5/qp.c mlx5_wq_overflow), say how many are waiting.
      const uint64_t waiting = SqSlotsHeld(qp) - qp.sq.size();
      s = waiting == 0
              ? Errno(ENOMEM, "qp %u: send queue full (%u WRs)", qp.qpn,
                      qp.cap.max_send_wr)
              : Errno(ENOMEM,
                      "qp %u: send queue full (%u WRs; %u of them completed "
                      "but hold their slots until a completion of this "
                      "send queue is polled)",
                      qp.qpn, qp.cap.max_send_wr, waiting);
    }
    if (!s.ok()) {
      // The WRs before the bad one are posted and go out (ibv_post_send(3):
      // bad_wr is the first one not posted).
      RequesterRun(qp);
      return s;
    }
    // Built in the send ring's next slot, which most WRs keep.
    SendWqe& w = qp.sq.PrepareBack();
    FillWqe(qp, wr, r, w);
    // Every WR takes a post number, the one posted in ERR too: its slot
    // is held until its flush completion is polled where the profile holds
    // slots so.
    w.seq = qp.next_wqe_seq++;
    if (qp.state == S::kErr && !profile.flushes_send_posted_in_err) {
      qp.sq.AbandonBack();
      continue;  // taken, never completed (SimProfile)
    }
    if (qp.state == S::kErr) {
      // Posted in ERR: completes at once, flushed.
      PushSendCompletion(qp, w, WcStatus::kWrFlushErr);
      qp.sq.AbandonBack();
      continue;
    }
    if (profile.iwarp.refuses_at_activation && RefusedAtActivation(wr)) {
      // Refused before anything else, on a suspended QP too: the doorbell
      // tries to start it and siw_activate_tx refuses it, so it stays in
      // the ring and never reaches the send slot (seen on siw0).
      // The doorbell starts the first WR of the post only when nothing is
      // waiting to be sent (an earlier refused WR included).
      const bool starts_now = i == 0 && qp.req_next >= qp.sq.size();
      w.refused_at_activation = true;
      qp.sq.CommitBack();
      if (starts_now) {
        return Errno(EINVAL,
                     "wr_id %u: the device does not start %s%s (it stays in "
                     "the send ring until the QP is flushed)",
                     wr.wr_id, WrOpcodeName(wr.opcode),
                     (wr.send_flags & kSendInline) ? " with INLINE"
                                                   : " with FENCE");
      }
      continue;
    }
    if (qp.tx_suspended && qp.sq_outside_ring == 0 &&
        qp.req_next >= qp.sq.size()) {
      // Suspended, with nothing waiting in the ring: the doorbell moves
      // this WR into the send slot, where it stays (IwarpRules).
      w.in_send_slot = true;
      ++qp.sq_outside_ring;
      qp.sq.CommitBack();
      continue;
    }
    qp.sq.CommitBack();
  }
  if (bad_index != nullptr) *bad_index = wrs.size();
  RequesterRun(qp);
  return absl::OkStatus();
}

absl::Status PostRecv(QpCore& qp, absl::Span<const RecvWr> wrs,
                      size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (qp.dead) return Errno(EINVAL, "qp %u is destroyed", qp.qpn);
  if (qp.state == S::kReset &&
      qp.node->fabric->profile().refuses_recv_in_reset) {
    return Errno(EINVAL, "qp %u is in RESET: post_recv needs INIT or later",
                 qp.qpn);
  }
  if (qp.srq != nullptr) {
    return Errno(EINVAL,
                 "qp %u receives from SRQ %u: post to the SRQ "
                 "(ibv_post_srq_recv)",
                 qp.qpn, qp.srq->id);
  }
  for (size_t i = 0; i < wrs.size(); ++i) {
    if (bad_index != nullptr) *bad_index = i;
    const RecvWr& wr = wrs[i];
    const PostSendChecks& rules = qp.node->fabric->profile().post_send;
    // A full queue first, then the WR itself (rxe_post_one_recv,
    // siw_post_receive).
    if (qp.rq.size() >= qp.cap.max_recv_wr) {
      return Errno(ENOMEM, "qp %u: receive queue full (%u WRs)", qp.qpn,
                   qp.cap.max_recv_wr);
    }
    if (rules.library_sge_limit != 0) {
      if (wr.sg_list.size() > rules.library_sge_limit) {
        return Errno(EINVAL, "wr_id %u: %zu SGEs exceed the library's %u",
                     wr.wr_id, wr.sg_list.size(), rules.library_sge_limit);
      }
    } else if (wr.sg_list.size() > qp.cap.max_recv_sge) {
      return Errno(EINVAL, "wr_id %u: %zu SGEs exceed max_recv_sge %u",
                   wr.wr_id, wr.sg_list.size(), qp.cap.max_recv_sge);
    }
    if (wr.sg_list.empty() && !rules.recv_may_have_no_sge) {
      return Errno(EINVAL, "wr_id %u: profile %s's library needs an SGE in "
                   "a receive", wr.wr_id, qp.node->fabric->profile().name);
    }
    RecvWqe r;
    r.wr_id = wr.wr_id;
    r.sges.assign(wr.sg_list.begin(), wr.sg_list.end());
    r.capacity = SgeTotal(r.sges);
    if (qp.state == S::kErr &&
        qp.node->fabric->profile().flushes_recv_posted_in_err) {
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
