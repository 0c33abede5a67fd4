/* What a device says about itself: every field of ibv_query_device and
 * ibv_query_port, and the capacities ibv_create_cq, ibv_create_qp and
 * ibv_create_srq grant for a spread of requests (with what ibv_query_qp and
 * ibv_query_srq say afterwards), one "name value" line each. Built against
 * the system's libibverbs; run on the drop-in and on rxe0 and siw0 in the
 * guest, whose output is kept in dropin/tests/attrs/<device kind>.txt.
 *
 *   attrs_probe [DEVICE]     (default: the first device)
 *
 * ibv_query_device_ex's extension is printed field by field too. Fields
 * that depend on the host rather than the device kind (GUIDs, the
 * firmware string, the netdev's MTU and link speed) are printed by shape:
 * "set" or "0". */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin/tests/probe_qp.h"

static void put(const char *name, long long value) {
  printf("%s %lld\n", name, value);
}

static void shape(const char *name, unsigned long long value) {
  printf("%s %s\n", name, value ? "set" : "0");
}

static void device(struct ibv_context *ctx, struct ibv_device_attr *d) {
  if (ibv_query_device(ctx, d)) probe_die("ibv_query_device");
  printf("node_type %d\n", ctx->device->node_type);
  printf("transport_type %d\n", ctx->device->transport_type);
  shape("device.fw_ver", d->fw_ver[0] != 0);
  shape("device.node_guid", d->node_guid);
  shape("device.sys_image_guid", d->sys_image_guid);
  put("device.max_mr_size", (long long)d->max_mr_size);
  put("device.page_size_cap", (long long)d->page_size_cap);
  put("device.vendor_id", d->vendor_id);
  put("device.vendor_part_id", d->vendor_part_id);
  put("device.hw_ver", d->hw_ver);
  put("device.max_qp", d->max_qp);
  put("device.max_qp_wr", d->max_qp_wr);
  printf("device.device_cap_flags 0x%x\n", d->device_cap_flags);
  put("device.max_sge", d->max_sge);
  put("device.max_sge_rd", d->max_sge_rd);
  put("device.max_cq", d->max_cq);
  put("device.max_cqe", d->max_cqe);
  put("device.max_mr", d->max_mr);
  put("device.max_pd", d->max_pd);
  put("device.max_qp_rd_atom", d->max_qp_rd_atom);
  put("device.max_ee_rd_atom", d->max_ee_rd_atom);
  put("device.max_res_rd_atom", d->max_res_rd_atom);
  put("device.max_qp_init_rd_atom", d->max_qp_init_rd_atom);
  put("device.max_ee_init_rd_atom", d->max_ee_init_rd_atom);
  put("device.atomic_cap", d->atomic_cap);
  put("device.max_ee", d->max_ee);
  put("device.max_rdd", d->max_rdd);
  put("device.max_mw", d->max_mw);
  put("device.max_raw_ipv6_qp", d->max_raw_ipv6_qp);
  put("device.max_raw_ethy_qp", d->max_raw_ethy_qp);
  put("device.max_mcast_grp", d->max_mcast_grp);
  put("device.max_mcast_qp_attach", d->max_mcast_qp_attach);
  put("device.max_total_mcast_qp_attach", d->max_total_mcast_qp_attach);
  put("device.max_ah", d->max_ah);
  put("device.max_fmr", d->max_fmr);
  put("device.max_map_per_fmr", d->max_map_per_fmr);
  put("device.max_srq", d->max_srq);
  put("device.max_srq_wr", d->max_srq_wr);
  put("device.max_srq_sge", d->max_srq_sge);
  put("device.max_pkeys", d->max_pkeys);
  put("device.local_ca_ack_delay", d->local_ca_ack_delay);
  put("device.phys_port_cnt", d->phys_port_cnt);
}

/* The extension of ibv_query_device_ex, a field (or a field's first
 * member) per line. */
static void device_ex(struct ibv_context *ctx) {
  struct ibv_device_attr_ex x;
  memset(&x, 0, sizeof(x));
  int rc = ibv_query_device_ex(ctx, NULL, &x);
  put("device_ex.rc", rc);
  if (rc) return;
  put("device_ex.comp_mask", x.comp_mask);
  put("device_ex.odp_caps.general_caps", (long long)x.odp_caps.general_caps);
  put("device_ex.odp_caps.rc", x.odp_caps.per_transport_caps.rc_odp_caps);
  put("device_ex.odp_caps.uc", x.odp_caps.per_transport_caps.uc_odp_caps);
  put("device_ex.odp_caps.ud", x.odp_caps.per_transport_caps.ud_odp_caps);
  put("device_ex.completion_timestamp_mask",
      (long long)x.completion_timestamp_mask);
  put("device_ex.hca_core_clock", (long long)x.hca_core_clock);
  printf("device_ex.device_cap_flags_ex 0x%llx\n",
         (unsigned long long)x.device_cap_flags_ex);
  put("device_ex.tso_caps.max_tso", x.tso_caps.max_tso);
  put("device_ex.rss_caps.max_rwq_indirection_tables",
      x.rss_caps.max_rwq_indirection_tables);
  put("device_ex.max_wq_type_rq", x.max_wq_type_rq);
  put("device_ex.packet_pacing_caps.qp_rate_limit_max",
      x.packet_pacing_caps.qp_rate_limit_max);
  put("device_ex.raw_packet_caps", x.raw_packet_caps);
  put("device_ex.tm_caps.max_num_tags", x.tm_caps.max_num_tags);
  put("device_ex.cq_mod_caps.max_cq_count", x.cq_mod_caps.max_cq_count);
  put("device_ex.max_dm_size", (long long)x.max_dm_size);
  put("device_ex.pci_atomic_caps.fetch_add", x.pci_atomic_caps.fetch_add);
  put("device_ex.xrc_odp_caps", x.xrc_odp_caps);
  put("device_ex.phys_port_cnt_ex", x.phys_port_cnt_ex);
}

static void port(struct ibv_context *ctx) {
  struct ibv_port_attr p;
  if (ibv_query_port(ctx, 1, &p)) probe_die("ibv_query_port");
  put("port.state", p.state);
  put("port.max_mtu", p.max_mtu);
  shape("port.active_mtu", p.active_mtu);  /* the netdev's MTU */
  put("port.gid_tbl_len", p.gid_tbl_len);
  printf("port.port_cap_flags 0x%x\n", p.port_cap_flags);
  put("port.max_msg_sz", p.max_msg_sz);
  put("port.bad_pkey_cntr", p.bad_pkey_cntr);
  put("port.qkey_viol_cntr", p.qkey_viol_cntr);
  put("port.pkey_tbl_len", p.pkey_tbl_len);
  put("port.lid", p.lid);
  put("port.sm_lid", p.sm_lid);
  put("port.lmc", p.lmc);
  put("port.max_vl_num", p.max_vl_num);
  put("port.sm_sl", p.sm_sl);
  put("port.subnet_timeout", p.subnet_timeout);
  put("port.init_type_reply", p.init_type_reply);
  shape("port.active_width", p.active_width);  /* the link's */
  shape("port.active_speed", p.active_speed);
  put("port.phys_state", p.phys_state);
  put("port.link_layer", p.link_layer);
  printf("port.port_cap_flags2 0x%x\n", p.port_cap_flags2);
}

static void cqs(struct ibv_context *ctx, const struct ibv_device_attr *d) {
  const int asked[] = {1, 2, 3, 4, 7, 8, 100, 1000, d->max_cqe};
  for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
    char name[64];
    if (asked[i] == d->max_cqe)
      snprintf(name, sizeof(name), "cq.cqe_for_max_cqe");
    else
      snprintf(name, sizeof(name), "cq.cqe_for_%d", asked[i]);
    struct ibv_cq *cq = ibv_create_cq(ctx, asked[i], NULL, NULL, 0);
    put(name, cq ? cq->cqe : -errno);
    if (cq) ibv_destroy_cq(cq);
  }
}

static void qps(struct ibv_pd *pd, struct ibv_cq *cq, int iwarp) {
  const struct ibv_qp_cap asked[] = {
      {1, 1, 1, 1, 0},  {4, 4, 1, 1, 0},    {5, 5, 3, 3, 0},
      {5, 5, 5, 5, 0},  {16, 16, 2, 2, 16}, {100, 100, 1, 1, 64},
      {1, 1, 1, 1, 100}, {1, 1, 1, 1, 256},
  };
  for (int type = 0; type < 2; type++) {
    enum ibv_qp_type t = type == 0 ? IBV_QPT_RC : IBV_QPT_UD;
    if (t == IBV_QPT_UD && iwarp) continue;
    for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
      struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq,
                                    .qp_type = t, .cap = asked[i]};
      char name[96];
      snprintf(name, sizeof(name), "qp.%s.asked_%u_%u_%u_%u_%u",
               t == IBV_QPT_RC ? "rc" : "ud", asked[i].max_send_wr,
               asked[i].max_recv_wr, asked[i].max_send_sge,
               asked[i].max_recv_sge, asked[i].max_inline_data);
      struct ibv_qp *qp = ibv_create_qp(pd, &ia);
      if (!qp) {
        printf("%s refused %d\n", name, errno);
        continue;
      }
      printf("%s granted %u %u %u %u %u", name, ia.cap.max_send_wr,
             ia.cap.max_recv_wr, ia.cap.max_send_sge, ia.cap.max_recv_sge,
             ia.cap.max_inline_data);
      struct ibv_qp_attr a;
      struct ibv_qp_init_attr qi;
      if (ibv_query_qp(qp, &a, IBV_QP_CAP, &qi) == 0)
        printf(" queried %u %u %u %u %u\n", qi.cap.max_send_wr,
               qi.cap.max_recv_wr, qi.cap.max_send_sge, qi.cap.max_recv_sge,
               qi.cap.max_inline_data);
      else
        printf(" query %d\n", errno);
      ibv_destroy_qp(qp);
    }
  }
}

static void srqs(struct ibv_pd *pd) {
  const struct ibv_srq_attr asked[] = {{1, 1, 0}, {3, 1, 0}, {100, 2, 0},
                                       {1000, 3, 0}};
  for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
    struct ibv_srq_init_attr sa = {.attr = asked[i]};
    char name[64];
    snprintf(name, sizeof(name), "srq.asked_%u_%u", asked[i].max_wr,
             asked[i].max_sge);
    struct ibv_srq *srq = ibv_create_srq(pd, &sa);
    if (!srq) {
      printf("%s refused %d\n", name, errno);
      continue;
    }
    printf("%s granted %u %u", name, sa.attr.max_wr, sa.attr.max_sge);
    struct ibv_srq_attr q;
    int rc = ibv_query_srq(srq, &q);
    if (rc == 0)
      printf(" queried %u %u\n", q.max_wr, q.max_sge);
    else
      printf(" query %d\n", rc);
    ibv_destroy_srq(srq);
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct ibv_context *ctx = probe_open(argc > 1 ? argv[1] : NULL);
  struct ibv_device_attr d;
  device(ctx, &d);
  device_ex(ctx);
  port(ctx);
  cqs(ctx, &d);
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
  if (!pd || !cq) probe_die("set-up");
  qps(pd, cq, ctx->device->transport_type == IBV_TRANSPORT_IWARP);
  srqs(pd);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  return 0;
}
