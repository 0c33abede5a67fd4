/* The verbs that <infiniband/verbs.h> implements inline over a
 * verbs_context entry the drop-in leaves empty: each one, called on a sim
 * device, fails in the header with EOPNOTSUPP. Built against the system's
 * headers like any program; coverage_table_test.sh runs it on the drop-in
 * and holds docs/drop-in-coverage.md's "header EOPNOTSUPP" rows to what it
 * prints, one line per verb:
 *
 *   header NAME EOPNOTSUPP     the call failed with EOPNOTSUPP
 *   header NAME other ...      anything else (the test fails)
 *
 * Objects that no call of the drop-in can make (flows, WQs, counters, device
 * memory, thread domains) are stand-ins holding only their context: the
 * header reads nothing else before it gives up. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

#include "dropin/tests/probe_qp.h"

static int failed;

/* A verb that returns a status (0 or an errno value). */
static void status(const char *name, int rc) {
  if (rc == EOPNOTSUPP) {
    printf("header %s EOPNOTSUPP\n", name);
  } else {
    printf("header %s other: returned %d\n", name, rc);
    failed++;
  }
}

/* A verb that returns an object, NULL and errno on failure. */
static void object(const char *name, const void *obj, int err) {
  if (obj == NULL && err == EOPNOTSUPP) {
    printf("header %s EOPNOTSUPP\n", name);
  } else {
    printf("header %s other: %s, errno %d\n", name, obj ? "made" : "NULL",
           err);
    failed++;
  }
}

#define OBJECT(name, call)       \
  do {                           \
    errno = 0;                   \
    const void *obj_ = (call);   \
    object(name, obj_, errno);   \
  } while (0)

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct ibv_context *ctx = probe_open("sim0");
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
  struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
  struct ibv_srq *srq = cq ? ibv_create_srq(pd, &sa) : NULL;
  struct ibv_qp_init_attr qa = {.send_cq = cq, .recv_cq = cq,
                                .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = 1, .max_recv_wr = 1,
                                        .max_send_sge = 1,
                                        .max_recv_sge = 1}};
  struct ibv_qp *qp = srq ? ibv_create_qp(pd, &qa) : NULL;
  if (qp == NULL) probe_die("a PD, CQ, SRQ and QP on sim0");

  /* Stand-ins for objects the drop-in cannot make. */
  struct ibv_flow flow = {.context = ctx};
  struct ibv_flow_action action = {.context = ctx};
  struct ibv_td td = {.context = ctx};
  struct ibv_wq wq = {.context = ctx};
  struct ibv_rwq_ind_table table = {.context = ctx};
  struct ibv_counters counters = {.context = ctx};
  struct ibv_dm dm = {.context = ctx};

  /* XRC domains and shareable QPs. */
  struct ibv_xrcd_init_attr xa = {0};
  OBJECT("ibv_open_xrcd", ibv_open_xrcd(ctx, &xa));
  struct ibv_qp_open_attr oa = {0};
  OBJECT("ibv_open_qp", ibv_open_qp(ctx, &oa));

  /* Flows and flow actions. */
  struct ibv_flow_attr fa = {.size = sizeof(fa)};
  OBJECT("ibv_create_flow", ibv_create_flow(qp, &fa));
  status("ibv_destroy_flow", ibv_destroy_flow(&flow));
  struct ibv_flow_action_esp_attr esp = {0};
  OBJECT("ibv_create_flow_action_esp", ibv_create_flow_action_esp(ctx, &esp));
  status("ibv_modify_flow_action_esp",
         ibv_modify_flow_action_esp(&action, &esp));
  status("ibv_destroy_flow_action", ibv_destroy_flow_action(&action));

  /* Memory: advice, device memory, the null MR. */
  char buf[64];
  struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = sizeof(buf)};
  status("ibv_advise_mr",
         ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1));
  struct ibv_alloc_dm_attr dma = {.length = 64};
  OBJECT("ibv_alloc_dm", ibv_alloc_dm(ctx, &dma));
  status("ibv_free_dm", ibv_free_dm(&dm));
  OBJECT("ibv_reg_dm_mr", ibv_reg_dm_mr(pd, &dm, 0, 64, 0));
  OBJECT("ibv_alloc_null_mr", ibv_alloc_null_mr(pd));

  /* CQ moderation, SRQ numbers and tag-matching operations. */
  struct ibv_modify_cq_attr ma = {.attr_mask = IBV_CQ_ATTR_MODERATE};
  status("ibv_modify_cq", ibv_modify_cq(cq, &ma));
  uint32_t srq_num = 0;
  status("ibv_get_srq_num", ibv_get_srq_num(srq, &srq_num));
  struct ibv_ops_wr op = {.opcode = IBV_WR_TAG_SYNC};
  struct ibv_ops_wr *bad_op = NULL;
  status("ibv_post_srq_ops", ibv_post_srq_ops(srq, &op, &bad_op));

  /* Thread and parent domains, rate limits, real-time values. */
  struct ibv_td_init_attr ta = {0};
  OBJECT("ibv_alloc_td", ibv_alloc_td(ctx, &ta));
  status("ibv_dealloc_td", ibv_dealloc_td(&td));
  struct ibv_parent_domain_init_attr pda = {.pd = pd};
  OBJECT("ibv_alloc_parent_domain", ibv_alloc_parent_domain(ctx, &pda));
  struct ibv_qp_rate_limit_attr rl = {.rate_limit = 1000};
  status("ibv_modify_qp_rate_limit", ibv_modify_qp_rate_limit(qp, &rl));
  struct ibv_values_ex values = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
  status("ibv_query_rt_values_ex", ibv_query_rt_values_ex(ctx, &values));

  /* Work queues and their indirection tables (RSS). */
  struct ibv_wq_init_attr wa = {.wq_type = IBV_WQT_RQ, .max_wr = 1,
                                .max_sge = 1, .pd = pd, .cq = cq};
  OBJECT("ibv_create_wq", ibv_create_wq(ctx, &wa));
  struct ibv_wq_attr wqa = {.attr_mask = IBV_WQ_ATTR_STATE,
                            .wq_state = IBV_WQS_RDY};
  status("ibv_modify_wq", ibv_modify_wq(&wq, &wqa));
  status("ibv_destroy_wq", ibv_destroy_wq(&wq));
  struct ibv_rwq_ind_table_init_attr ra = {0};
  OBJECT("ibv_create_rwq_ind_table", ibv_create_rwq_ind_table(ctx, &ra));
  status("ibv_destroy_rwq_ind_table", ibv_destroy_rwq_ind_table(&table));

  /* Counters. */
  struct ibv_counters_init_attr ca = {0};
  OBJECT("ibv_create_counters", ibv_create_counters(ctx, &ca));
  status("ibv_destroy_counters", ibv_destroy_counters(&counters));
  struct ibv_counter_attach_attr caa = {0};
  status("ibv_attach_counters_point_flow",
         ibv_attach_counters_point_flow(&counters, &caa, &flow));
  uint64_t value = 0;
  status("ibv_read_counters", ibv_read_counters(&counters, &value, 1, 0));

  ibv_destroy_qp(qp);
  ibv_destroy_srq(srq);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  printf("coverage_probe: %d other\n", failed);
  return failed == 0 ? 0 : 1;
}
