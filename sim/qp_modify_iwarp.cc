// ibv_modify_qp on an iWARP profile whose driver takes only the state and the
// access flags, as kernel siw does. The call passes, in order:
//   1. the kernel's core checks (uverbs_cmd.c modify_qp): states past ERR,
//      port numbers, and on INIT -> RTR an AV port that must be the QP's
//      own, set earlier with IBV_QP_PORT;
//   2. siw_verbs.c siw_verbs_modify_qp, which keeps the access flags and the
//      state and drops every other attribute;
//   3. siw_qp.c siw_qp_modify, whose states are IDLE (RESET, INIT and RTR
//      all map to it), RTS, CLOSING (SQD), TERMINATE (SQE) and ERROR. From
//      IDLE only RTS (with the CM's socket: EINVAL without) and ERROR (the
//      receive queue is flushed) lead anywhere; from RTS, SQD, SQE and ERR
//      end the connection; ERROR is never left. Any other request succeeds
//      and changes nothing.
// The sim still stores every attribute: its own connection manager hands a
// QP its peer through them, as siw's gets a socket.
#include <cstdint>
#include <deque>
#include <utility>

#include "absl/status/status.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/types.h"
#include "sim/fabric.h"
#include "sim/qp_verbs.h"
#include "sim/state.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

using S = verbsim::QpState;

// uverbs_cmd.c modify_qp, before any driver.
absl::Status CheckCorePorts(const QpCore& qp, const QpAttr& a,
                            uint32_t mask) {
  if ((mask & kQpCurState) &&
      (static_cast<int>(a.cur_qp_state) < 0 || a.cur_qp_state > S::kErr)) {
    return Errno(EINVAL, "cur_qp_state %d is not a QP state",
                 static_cast<int>(a.cur_qp_state));
  }
  if ((mask & kQpPort) && a.port_num != 1) {
    return Errno(EINVAL, "port_num %d: the device has port 1 only",
                 a.port_num);
  }
  if (mask & kQpAv) {
    if (a.ah_attr.port_num != 1) {
      return Errno(EINVAL, "ah_attr.port_num %d: the device has port 1 only",
                   a.ah_attr.port_num);
    }
    // INIT -> RTR: the AV's port must be the one the QP took with
    // IBV_QP_PORT (RESET -> INIT); a QP never given one has port 0.
    if ((mask & kQpState) && a.qp_state == S::kRtr &&
        a.ah_attr.port_num != qp.core_port) {
      return Errno(EINVAL,
                   "ah_attr.port_num %d is not the QP's port %d (set with "
                   "IBV_QP_PORT on RESET -> INIT)",
                   a.ah_attr.port_num, qp.core_port);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ModifyIwarpQp(QpCore& qp, const QpAttr& a, uint32_t mask) {
  if (absl::Status s = CheckCorePorts(qp, a, mask); !s.ok()) return s;
  const S from = qp.state;
  const bool to_state = (mask & kQpState) != 0;
  const S to = to_state ? a.qp_state : from;
  if (to_state && to == S::kRts && from != S::kRts && from != S::kErr &&
      !qp.cm_connected) {
    // siw_qp.c siw_qp_nextstate_from_idle: "no socket".
    return Errno(EINVAL,
                 "qp %u: RTS needs a connection through the CM on profile %s "
                 "(iWARP)",
                 qp.qpn, qp.node->fabric->profile().name);
  }
  ApplyQpAttrs(qp, a, mask & ~kQpState);
  if (mask & kQpPort) qp.core_port = a.port_num;
  if ((mask & kQpAv) && !(to_state && to == S::kRtr)) {
    qp.core_port = a.ah_attr.port_num;
  }
  if (!to_state || from == S::kErr) return absl::OkStatus();
  if (from == S::kRts) {
    // siw_qp_nextstate_from_rts: CLOSING, TERMINATE and ERROR all drop the
    // connection, and a CLOSING QP whose socket closed is in ERROR
    // (siw_qp_llp_close); RESET, INIT and RTR are ignored.
    if (to == S::kSqd || to == S::kSqe || to == S::kErr) {
      // The peer sees the socket close (siw_cm_llp_state_change), goes to
      // ERROR and flushes (siw_qp_llp_close); a QP whose connection already
      // ended tells nobody.
      if (qp.cm_connected) TerminateConnection(qp);
      EnterError(qp);
    }
    return absl::OkStatus();
  }
  // IDLE.
  if (to == S::kErr) {
    // siw_qp_nextstate_from_idle flushes the receive queue only: WRs
    // posted to the send ring in IDLE stay there, never completed.
    Ring<SendWqe> ring = std::move(qp.sq);
    qp.sq.clear();
    EnterError(qp);
    qp.sq = std::move(ring);
  } else if (to == S::kRts) {
    StartReceiving(qp);
    StartSending(qp);
    qp.state = S::kRts;
    if (!qp.sq.empty() &&
        qp.node->fabric->profile().iwarp.rts_leaves_the_ring_waiting) {
      qp.send_engine_idle = true;  // see IwarpRules
      return absl::OkStatus();
    }
    RequesterRun(qp);
  }
  return absl::OkStatus();
}

}  // namespace verbsim::sim
