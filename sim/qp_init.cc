// ibv_create_qp(3)'s checks of a QP's init attributes (type, CQs, SRQ,
// capabilities against the device's limits) and the QP state they build;
// the handle is qp_handle.cc's.
#include <memory>
#include <utility>

#include "core/errors.h"
#include "core/names.h"
#include "sim/handle_factories.h"
#include "sim/qp_verbs.h"
#include "sim/udp_transport.h"

namespace verbsim::sim {

namespace {

// A new QPN of `node`. In-process QPNs are never reused within the
// fabric's life. Across processes (sim/udp_transport.h) a process's QPNs
// carry its slot in their top bits; after the last QPN of the slot's range
// they start again at its first, skipping the ones still in use, as an
// HCA reuses the QPNs of destroyed QPs.
uint32_t NextQpn(Node& node) {
  Fabric& fabric = *node.fabric;
  if (!fabric.real_time()) return node.next_qpn++;
  const uint32_t slot = static_cast<uint32_t>(fabric.process_slot());
  const uint32_t first = (slot << kQpnSlotShift) | 17;
  const uint32_t end = (slot + 1) << kQpnSlotShift;
  while (true) {
    if (node.next_qpn < first || node.next_qpn >= end) node.next_qpn = first;
    const uint32_t qpn = node.next_qpn++;
    if (node.qps.find(qpn) == node.qps.end()) return qpn;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Qp>> CreateSimQp(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, const QpInitAttr& init) {
  if (pd->dead) return Errno(EINVAL, "pd %u is destroyed", pd->id);
  const DeviceAttr& dev = fabric->profile().device;
  if (init.qp_type != QpType::kRc && init.qp_type != QpType::kUc &&
      init.qp_type != QpType::kUd) {
    return Errno(EINVAL, "qp_type %d is not RC, UC or UD",
                 static_cast<int>(init.qp_type));
  }
  if (fabric->profile().iwarp.rc_only && init.qp_type != QpType::kRc) {
    // siw_verbs.c siw_create_qp: "only RC QP's supported".
    return Errno(EOPNOTSUPP, "%s QPs: profile %s has RC QPs only",
                 QpTypeName(init.qp_type), fabric->profile().name);
  }
  std::shared_ptr<CqState> scq = CqStateOf(init.send_cq);
  std::shared_ptr<CqState> rcq = CqStateOf(init.recv_cq);
  if (scq == nullptr || rcq == nullptr) {
    return Errno(EINVAL, "send_cq and recv_cq must be CQs of this provider");
  }
  if (scq->dead || rcq->dead) {
    return Errno(EINVAL, "a CQ of the QP is destroyed");
  }
  if (scq->context != pd->context || rcq->context != pd->context) {
    return Errno(EINVAL, "the CQs belong to another context than the PD");
  }
  std::shared_ptr<SrqState> srq;
  if (init.srq != nullptr) {
    srq = SrqStateOf(init.srq);
    if (srq == nullptr) {
      return Errno(EINVAL, "srq of another provider");
    }
    if (srq->dead) return Errno(EINVAL, "srq %u is destroyed", srq->id);
    if (srq->pd->context != pd->context) {
      return Errno(EINVAL, "srq %u belongs to another context", srq->id);
    }
  }
  QpCap c = init.cap;
  if (srq != nullptr) {
    // ibv_create_qp(3): with an SRQ the receive queue attributes are
    // ignored.
    c.max_recv_wr = 0;
    c.max_recv_sge = 0;
  }
  if (c.max_send_wr > static_cast<uint32_t>(dev.max_qp_wr) ||
      c.max_recv_wr > static_cast<uint32_t>(dev.max_qp_wr)) {
    return Errno(EINVAL, "max_send_wr %u / max_recv_wr %u exceed max_qp_wr %d",
                 c.max_send_wr, c.max_recv_wr, dev.max_qp_wr);
  }
  if (c.max_send_sge > static_cast<uint32_t>(dev.max_sge) ||
      c.max_recv_sge > static_cast<uint32_t>(dev.max_sge)) {
    return Errno(EINVAL, "max_send_sge %u / max_recv_sge %u exceed max_sge %d",
                 c.max_send_sge, c.max_recv_sge, dev.max_sge);
  }
  if (c.max_inline_data > static_cast<uint32_t>(dev.max_inline_data)) {
    return Errno(EINVAL, "max_inline_data %u exceeds the device's %d",
                 c.max_inline_data, dev.max_inline_data);
  }
  Node* node = pd->context->node;
  if (node->live_qps >= dev.max_qp) {
    return Errno(fabric->profile().limit_errno.qp, "max_qp %d reached",
                 dev.max_qp);
  }
  auto qp = std::make_unique<QpCore>();
  qp->node = node;
  qp->qpn = NextQpn(*node);
  qp->type = init.qp_type;
  qp->pd = pd;
  qp->send_cq = scq;
  qp->recv_cq = rcq;
  qp->srq = srq;
  if (srq != nullptr) ++srq->qps;
  // What the QP holds and ibv_query_qp reports; ibv_create_qp reports
  // the work-request counts as asked (the kernels' create paths leave
  // them), the rest as held.
  qp->cap = GrantQpCap(fabric->profile(), c);
  QpInitAttr reported = init;
  reported.cap = qp->cap;
  reported.cap.max_send_wr = c.max_send_wr;
  reported.cap.max_recv_wr = c.max_recv_wr;
  qp->sq_sig_all = init.sq_sig_all;
  qp->attr.port_num = 1;
  node->qps[qp->qpn] = qp.get();
  ++node->live_qps;
  qp->send_cq->qps.insert(qp.get());
  qp->recv_cq->qps.insert(qp.get());
  ++pd->qps;
  return NewSimQp(fabric, std::move(qp), pd_handle, init.send_cq,
                  init.recv_cq, reported);
}

}  // namespace verbsim::sim
