#include "dropin/tests/probe_qp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

void probe_check(int cond, const char *what) {
  printf("%s: %s\n", cond ? "ok" : "FAIL", what);
  if (!cond) failures++;
}

int probe_failures(void) { return failures; }

void probe_die(const char *what) {
  printf("FAIL: %s (errno %d: %s)\n", what, errno, strerror(errno));
  exit(1);
}

struct ibv_context *probe_open(const char *name) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) probe_die("no devices");
  struct ibv_context *ctx = NULL;
  for (int i = 0; i < n && !ctx; i++) {
    if (!name || strcmp(name, ibv_get_device_name(list[i])) == 0)
      ctx = ibv_open_device(list[i]);
  }
  ibv_free_device_list(list);
  if (!ctx) probe_die("ibv_open_device");
  return ctx;
}

const char *probe_connect_rc(struct ibv_qp *qp, uint32_t dest_qpn,
                             const union ibv_gid *dgid, int sgid_index,
                             int access) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                          .qp_access_flags = access};
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
  a.ah_attr.grh.sgid_index = sgid_index;
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
  return 0;
}
