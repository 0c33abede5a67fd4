/* Shared by the examples: moves an RC QP through INIT, RTR and RTS toward a
 * peer QP, with the attributes a RoCE program gives (the peer's GID in the
 * address vector, path MTU 1024, PSNs 0, 7 retries, one read or atomic in
 * flight each way). `access` is the QP's remote access (IBV_QP_ACCESS_FLAGS).
 * Returns NULL, or the name of the transition that failed (errno is set). */
#ifndef VERBSIM_EXAMPLES_RC_CONNECT_H_
#define VERBSIM_EXAMPLES_RC_CONNECT_H_

#include <infiniband/verbs.h>
#include <stdint.h>
#include <string.h>

static inline const char *rc_connect(struct ibv_qp *qp, uint32_t dest_qpn,
                                     const union ibv_gid *dgid, int access) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = access;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                IBV_QP_ACCESS_FLAGS))
    return "to INIT";
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest_qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = *dgid;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC |
                                IBV_QP_MIN_RNR_TIMER))
    return "to RTR";
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                IBV_QP_MAX_QP_RD_ATOMIC))
    return "to RTS";
  return NULL;
}

#endif /* VERBSIM_EXAMPLES_RC_CONNECT_H_ */
