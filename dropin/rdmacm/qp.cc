// QPs on rdma_cm ids (rdma_create_qp(3), rdma_destroy_qp(3),
// rdma_init_qp_attr(3)): made through the ibverbs API, so on the drop-in
// libibverbs they are sim QPs, and moved through the states with the
// attributes the kernel's CM would give (drivers/infiniband/core/cma.c and
// cm.c: cma_ib_init_qp_attr, cm_init_qp_{init,rtr,rts}_attr).
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {

namespace {

// Tells the drop-in libibverbs that a QP is connected through the CM, which
// its iWARP profile requires before RTS (dropin/verbs/cm_hook.cc); absent
// from any other libibverbs, where there is nothing to tell.
void MarkCmConnected(ibv_context* verbs, uint32_t qp_num) {
  using Hook = int (*)(ibv_context*, uint32_t);
  static const Hook hook = reinterpret_cast<Hook>(
      dlsym(RTLD_DEFAULT, "verbsim_dropin_qp_cm_connected"));
  if (hook != nullptr) hook(verbs, qp_num);
}

}  // namespace

int InitQpAttr(Id* id, ibv_qp_attr* attr, int* mask) {
  const ibv_qp_state state = attr->qp_state;
  std::memset(attr, 0, sizeof(*attr));
  attr->qp_state = state;
  *mask = IBV_QP_STATE;
  if (id->node == nullptr) return Fail(EINVAL);
  const bool ud = IsUd(id);
  switch (state) {
    case IBV_QPS_INIT:
      attr->pkey_index = 0;
      attr->port_num = id->id.port_num;
      *mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
      if (ud) {
        attr->qkey = RDMA_UDP_QKEY;
        *mask |= IBV_QP_QKEY;
      } else {
        // Before a connection exists the CM grants no remote access; once it
        // does, remote writes, and reads and atomics when this side accepts
        // RDMA reads (responder resources), as cm_init_qp_init_attr.
        attr->qp_access_flags = 0;
        if (id->has_peer) {
          attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
          if (id->responder_resources > 0) {
            attr->qp_access_flags |=
                IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
          }
        }
        *mask |= IBV_QP_ACCESS_FLAGS;
      }
      return 0;
    case IBV_QPS_RTR:
      if (ud) return 0;
      if (!id->has_peer) return Fail(EINVAL);  // no REQ or REP yet
      attr->ah_attr = AhToPeer(id);
      attr->path_mtu = id->node->active_mtu;
      attr->dest_qp_num = id->peer.qpn;
      attr->rq_psn = id->peer.psn;
      attr->max_dest_rd_atomic = id->responder_resources;
      attr->min_rnr_timer = 12;  // 0.64 ms
      *mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      return 0;
    case IBV_QPS_RTS:
      attr->sq_psn = id->psn;
      *mask |= IBV_QP_SQ_PSN;
      if (ud) return 0;
      if (!id->has_peer) return Fail(EINVAL);
      MarkCmConnected(id->id.verbs, id->qp_num);
      // The kernel's CM gives the QP the path's packet life time + 1 (cm.c
      // cm_ack_timeout; 16 on RoCE, so 17: 537 ms), unless the program set
      // one with RDMA_OPTION_ID_ACK_TIMEOUT (cma.c rdma_set_ack_timeout).
      attr->timeout = id->ack_timeout_set
                          ? id->ack_timeout
                          : static_cast<uint8_t>(
                                std::min(31, Timing().packet_life_time + 1));
      attr->retry_cnt = id->retry_count;
      attr->rnr_retry = id->rnr_retry_count;
      attr->max_rd_atomic = id->initiator_depth;
      *mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
               IBV_QP_MAX_QP_RD_ATOMIC;
      return 0;
    default:
      return Fail(EINVAL);
  }
}

int MoveQp(Id* id, std::initializer_list<ibv_qp_state> states) {
  for (ibv_qp_state s : states) {
    ibv_qp_attr attr{};
    attr.qp_state = s;
    int mask = 0;
    if (InitQpAttr(id, &attr, &mask) != 0) return -1;
    if (int err = ibv_modify_qp(id->id.qp, &attr, mask); err != 0) {
      if (Debug()) {
        Warn(std::string("ibv_modify_qp to state ") + std::to_string(s) +
             " failed: " + std::strerror(err));
      }
      return Fail(err);
    }
  }
  return 0;
}

namespace {

void DestroyCqs(Id* id) {
  if (!id->made_cqs) return;
  if (id->id.send_cq != nullptr) ibv_destroy_cq(id->id.send_cq);
  if (id->id.recv_cq != nullptr) ibv_destroy_cq(id->id.recv_cq);
  if (id->id.send_cq_channel != nullptr) {
    ibv_destroy_comp_channel(id->id.send_cq_channel);
  }
  if (id->id.recv_cq_channel != nullptr) {
    ibv_destroy_comp_channel(id->id.recv_cq_channel);
  }
  id->id.send_cq = id->id.recv_cq = nullptr;
  id->id.send_cq_channel = id->id.recv_cq_channel = nullptr;
  id->made_cqs = false;
}

// A CQ and its completion channel, with the id as the CQ's context (the
// header's rdma_get_send_comp/rdma_get_recv_comp expect both).
bool MakeCq(Id* id, int cqe, ibv_comp_channel** channel, ibv_cq** cq) {
  *channel = ibv_create_comp_channel(id->id.verbs);
  if (*channel == nullptr) return false;
  *cq = ibv_create_cq(id->id.verbs, cqe > 0 ? cqe : 1, &id->id, *channel, 0);
  return *cq != nullptr;
}

}  // namespace

}  // namespace verbsim::rdmacm

using namespace verbsim::rdmacm;  // NOLINT: the C entry points below

extern "C" {

int rdma_create_qp(rdma_cm_id* cm_id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  if (cm_id == nullptr || qp_init_attr == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  if (id->id.verbs == nullptr || id->node == nullptr) {
    Warn("rdma_create_qp: the id has no device yet (bind to a node's address "
         "or resolve one first)");
    return Fail(EINVAL);
  }
  if (id->id.qp != nullptr) return Fail(EINVAL);
  if (pd == nullptr) pd = DefaultPd(id->node);
  if (pd == nullptr) return -1;
  if (pd->context != id->id.verbs) {
    Warn("rdma_create_qp: the PD belongs to another device than the id");
    return Fail(EINVAL);
  }
  ibv_qp_init_attr attr = *qp_init_attr;
  if (attr.qp_type == 0) attr.qp_type = id->id.qp_type;
  if (attr.qp_type != id->id.qp_type) {
    Warn("rdma_create_qp: QP type " + std::to_string(attr.qp_type) +
         " does not match the id's port space (QP type " +
         std::to_string(id->id.qp_type) + ")");
    return Fail(EINVAL);
  }
  if (attr.send_cq == nullptr || attr.recv_cq == nullptr) {
    id->made_cqs = true;
    if (!MakeCq(id, attr.cap.max_send_wr, &id->id.send_cq_channel,
                &id->id.send_cq) ||
        !MakeCq(id, attr.cap.max_recv_wr, &id->id.recv_cq_channel,
                &id->id.recv_cq)) {
      const int err = errno;
      DestroyCqs(id);
      return Fail(err);
    }
    if (attr.send_cq == nullptr) attr.send_cq = id->id.send_cq;
    if (attr.recv_cq == nullptr) attr.recv_cq = id->id.recv_cq;
  } else {
    id->id.send_cq = attr.send_cq;
    id->id.recv_cq = attr.recv_cq;
  }
  if (attr.srq == nullptr) attr.srq = id->id.srq;
  ibv_qp* qp = ibv_create_qp(pd, &attr);
  if (qp == nullptr) {
    const int err = errno;
    DestroyCqs(id);
    return Fail(err);
  }
  {
    std::lock_guard<std::mutex> lock(CmMutex());
    id->id.qp = qp;
    id->id.pd = pd;
    id->qp_num = qp->qp_num;
    // A connected QP waits in INIT for the peer; a UD QP is ready at once
    // (librdmacm's ucma_init_conn_qp and ucma_init_ud_qp).
    const int moved = IsUd(id) ? MoveQp(id, {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS})
                               : MoveQp(id, {IBV_QPS_INIT});
    if (moved != 0) {
      const int err = errno;
      ibv_destroy_qp(qp);
      id->id.qp = nullptr;
      id->qp_num = 0;
      DestroyCqs(id);
      return Fail(err);
    }
  }
  *qp_init_attr = attr;  // the caps the device granted, and the CQs
  return 0;
}

// The extended form for what ibv_qp_init_attr can say (a PD and the basic
// fields); other comp_mask bits are not covered.
int rdma_create_qp_ex(rdma_cm_id* cm_id, ibv_qp_init_attr_ex* attr) {
  if (cm_id == nullptr || attr == nullptr) return Fail(EINVAL);
  if ((attr->comp_mask & ~static_cast<uint32_t>(IBV_QP_INIT_ATTR_PD)) != 0) {
    Warn("rdma_create_qp_ex: comp_mask " + std::to_string(attr->comp_mask) +
         " is not covered by the verbsim drop-in library (only "
         "IBV_QP_INIT_ATTR_PD)");
    return Fail(EOPNOTSUPP);
  }
  ibv_qp_init_attr basic{};
  basic.qp_context = attr->qp_context;
  basic.send_cq = attr->send_cq;
  basic.recv_cq = attr->recv_cq;
  basic.srq = attr->srq;
  basic.cap = attr->cap;
  basic.qp_type = attr->qp_type;
  basic.sq_sig_all = attr->sq_sig_all;
  ibv_pd* pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : nullptr;
  if (rdma_create_qp(cm_id, pd, &basic) != 0) return -1;
  attr->cap = basic.cap;
  attr->send_cq = basic.send_cq;
  attr->recv_cq = basic.recv_cq;
  return 0;
}

void rdma_destroy_qp(rdma_cm_id* cm_id) {
  if (cm_id == nullptr) return;
  Id* id = IdOf(cm_id);
  if (id->id.qp != nullptr) ibv_destroy_qp(id->id.qp);
  id->id.qp = nullptr;
  DestroyCqs(id);
}

int rdma_init_qp_attr(rdma_cm_id* cm_id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
  if (cm_id == nullptr || qp_attr == nullptr || qp_attr_mask == nullptr) {
    return Fail(EINVAL);
  }
  std::lock_guard<std::mutex> lock(CmMutex());
  return InitQpAttr(IdOf(cm_id), qp_attr, qp_attr_mask);
}

int rdma_create_srq(rdma_cm_id* cm_id, ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (cm_id == nullptr || attr == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  if (id->node == nullptr) return Fail(EINVAL);
  if (pd == nullptr) pd = DefaultPd(id->node);
  if (pd == nullptr) return -1;
  ibv_srq* srq = ibv_create_srq(pd, attr);
  if (srq == nullptr) return -1;
  id->id.srq = srq;
  id->id.pd = pd;
  return 0;
}

void rdma_destroy_srq(rdma_cm_id* cm_id) {
  if (cm_id == nullptr || cm_id->srq == nullptr) return;
  ibv_destroy_srq(cm_id->srq);
  cm_id->srq = nullptr;
}

}  // extern "C"
