/* Memory windows through the ABI, from a program built against the
 * system's libibverbs: ibv_alloc_mw, ibv_bind_mw, ibv_dealloc_mw, the
 * IBV_WR_BIND_MW, IBV_WR_LOCAL_INV and IBV_WR_SEND_WITH_INV work requests
 * and ibv_wr_bind_mw, between two RC QPs of one device connected to each
 * other. Each check expects what the sim's conformance cases
 * (tests/conformance/mw_test.cc) expect; it runs on the drop-in (ibta, rxe
 * and siw profiles) and on rxe0 and siw0 in the guest.
 *
 *   mw_probe [DEVICE [GID_INDEX [ANSWERS]]]
 *
 * ANSWERS is "rxe" (the default), "ibta" or "siw". On a device without
 * windows (max_mw 0: siw) only the refusal of ibv_alloc_mw is checked.
 * Prints "ok: ID" / "FAIL: ID: ..." / "skip: ID: why" and
 * "mw_probe: N checks, F failed"; exits 1 when one failed. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dropin/tests/probe_checks.h"
#include "dropin/tests/probe_qp.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static int gid_index;
static union ibv_gid gid;

/* Where a set's answer is not rxe's: the ibta profile refuses a BIND_MW
 * work request for a type 1 window (IBA 10.6.7.2: type 1 windows are bound
 * by the verb), which rdma-core's rxe posts itself. */
static const struct probe_answer other_answers[] = {
    {"ibta", "post_send.bind_mw_wr_of_a_type1_window", EINVAL},
};

/* Two RC QPs of one device connected to each other, on one CQ each. */
struct pair {
  struct ibv_cq *cq[2];
  struct ibv_qp *qp[2];
};

static const int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

static struct pair make_pair(struct ibv_pd *on, uint64_t send_ops) {
  struct pair p;
  for (int i = 0; i < 2; i++) {
    p.cq[i] = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    if (!p.cq[i]) probe_die("ibv_create_cq");
    struct ibv_qp_init_attr_ex a = {
        .send_cq = p.cq[i], .recv_cq = p.cq[i], .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
                .max_recv_sge = 1},
        .comp_mask = IBV_QP_INIT_ATTR_PD, .pd = on};
    if (send_ops) {
      a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
      a.send_ops_flags = send_ops;
    }
    p.qp[i] = ibv_create_qp_ex(ctx, &a);
    if (!p.qp[i]) probe_die("ibv_create_qp_ex");
  }
  for (int i = 0; i < 2; i++) {
    const char *failed =
        probe_connect_rc(p.qp[i], p.qp[1 - i]->qp_num, &gid, gid_index,
                         kAccess | IBV_ACCESS_REMOTE_ATOMIC);
    if (failed) probe_die(failed);
  }
  return p;
}

static void free_pair(struct pair *p) {
  for (int i = 0; i < 2; i++) {
    ibv_destroy_qp(p->qp[i]);
    ibv_destroy_cq(p->cq[i]);
  }
}

/* The next completion on `cq`, waiting two seconds at most: 1 and *wc, or
 * 0 (with wc->status -1). */
static int next_wc(struct ibv_cq *cq, struct ibv_wc *wc) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n == 1) return 1;
    if (n < 0) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec - start.tv_sec < 8);
  wc->status = -1;
  return 0;
}

/* The status of a signaled RDMA read of 8 bytes at `addr` through `rkey`,
 * from pair QP 0 into `into` (lkey `lkey`); -1 when none came. */
static int read_through(struct pair *p, uint32_t rkey, uint64_t addr,
                        void *into, uint32_t lkey) {
  struct ibv_sge sge = {.addr = (uintptr_t)into, .length = 8, .lkey = lkey};
  struct ibv_send_wr wr = {.wr_id = 77, .sg_list = &sge, .num_sge = 1,
                           .opcode = IBV_WR_RDMA_READ,
                           .send_flags = IBV_SEND_SIGNALED};
  wr.wr.rdma.remote_addr = addr;
  wr.wr.rdma.rkey = rkey;
  struct ibv_send_wr *bad;
  if (ibv_post_send(p->qp[0], &wr, &bad)) return -2;
  struct ibv_wc wc;
  return next_wc(p->cq[0], &wc) ? (int)wc.status : -1;
}

/* Binds type 1 window `mw` over [addr, addr + len) of `mr` through pair QP
 * 1 with ibv_bind_mw: the verb's return, and the completion's status in
 * *status (-1 when none). */
static int bind1_with(struct pair *p, struct ibv_mw *mw, struct ibv_mr *mr,
                      uint64_t addr, uint64_t len, unsigned int access,
                      int *status) {
  struct ibv_mw_bind b = {.wr_id = 5, .send_flags = IBV_SEND_SIGNALED};
  b.bind_info.mr = mr;
  b.bind_info.addr = addr;
  b.bind_info.length = len;
  b.bind_info.mw_access_flags = access;
  int rc = ibv_bind_mw(p->qp[1], mw, &b);
  struct ibv_wc wc;
  *status = -1;
  if (rc == 0 && next_wc(p->cq[1], &wc)) *status = wc.status;
  return rc;
}

static int bind1(struct pair *p, struct ibv_mw *mw, struct ibv_mr *mr,
                 uint64_t addr, uint64_t len, int *status) {
  return bind1_with(p, mw, mr, addr, len, IBV_ACCESS_REMOTE_READ, status);
}

/* A type 2 bind as a work request through pair QP 1. */
static int bind2_wr(struct pair *p, struct ibv_mw *mw, uint32_t rkey,
                    struct ibv_mr *mr, uint64_t addr, uint64_t len,
                    int *status) {
  struct ibv_send_wr wr = {.wr_id = 6, .opcode = IBV_WR_BIND_MW,
                           .send_flags = IBV_SEND_SIGNALED};
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = rkey;
  wr.bind_mw.bind_info.mr = mr;
  wr.bind_mw.bind_info.addr = addr;
  wr.bind_mw.bind_info.length = len;
  wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
  struct ibv_send_wr *bad;
  int rc = ibv_post_send(p->qp[1], &wr, &bad);
  struct ibv_wc wc;
  *status = -1;
  if (rc == 0 && next_wc(p->cq[1], &wc)) *status = wc.status;
  return rc;
}

static void type1(struct ibv_mr *target, struct ibv_mr *local, char *buf) {
  struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  probe_pass("alloc_mw.type1", mw && mw->type == IBV_MW_TYPE_1 && mw->pd == pd,
       "errno %ld%.0ld", mw ? 0 : errno, 0);
  if (!mw) return;
  EXPECT_RC("dealloc_pd.with_a_window", EBUSY, ibv_dealloc_pd(pd));

  struct pair p = make_pair(pd, 0);
  const uint32_t old_rkey = mw->rkey;
  int status = -1;
  EXPECT_RC("bind_mw.type1", 0,
            bind1(&p, mw, target, (uintptr_t)target->addr, 64, &status));
  probe_pass("bind_mw.type1_completes", status == IBV_WC_SUCCESS,
       "status %ld%.0ld", status, 0);
  probe_pass("bind_mw.type1_next_rkey", mw->rkey == ibv_inc_rkey(old_rkey),
       "rkey 0x%lx after 0x%lx", mw->rkey, old_rkey);
  memcpy(buf, "windowed", 8);
  int st = read_through(&p, mw->rkey, (uintptr_t)target->addr,
                        (char *)local->addr, local->lkey);
  probe_pass("rdma_read.through_a_type1_window",
       st == IBV_WC_SUCCESS && memcmp(local->addr, "windowed", 8) == 0,
       "status %ld%.0ld", st, 0);
  free_pair(&p);

  p = make_pair(pd, 0);
  const uint32_t before = mw->rkey;
  EXPECT_RC("bind_mw.type1_past_the_region", 0,
            bind1(&p, mw, target, (uintptr_t)target->addr + 4000, 4096,
                  &status));
  probe_pass("bind_mw.type1_past_the_region_completes_mw_bind_err",
       status == IBV_WC_MW_BIND_ERR, "status %ld%.0ld", status, 0);
  /* The verb moved ibv_mw::rkey on; the window kept its key, and a bind
   * naming the moved one fails: the program puts the old one back
   * (ibv_bind_mw(3)). */
  probe_pass("bind_mw.type1_refused_still_moves_the_struct_rkey",
       mw->rkey == ibv_inc_rkey(before), "rkey 0x%lx, was 0x%lx", mw->rkey,
       before);
  free_pair(&p);
  p = make_pair(pd, 0);
  EXPECT_RC("bind_mw.type1_after_a_refused_one", 0,
            bind1(&p, mw, target, (uintptr_t)target->addr, 64, &status));
  probe_pass("bind_mw.type1_after_a_refused_one_completes_mw_bind_err",
       status == IBV_WC_MW_BIND_ERR, "status %ld%.0ld", status, 0);
  mw->rkey = before;
  free_pair(&p);

  /* A BIND_MW work request for a type 1 window. */
  p = make_pair(pd, 0);
  const uint32_t wr_rkey = ibv_inc_rkey(mw->rkey);
  EXPECT_RC("post_send.bind_mw_wr_of_a_type1_window", 0,
            bind2_wr(&p, mw, wr_rkey, target, (uintptr_t)target->addr, 64,
                     &status));
  if (status == IBV_WC_SUCCESS) mw->rkey = wr_rkey;
  free_pair(&p);

  /* LOCAL_WRITE in a window's access is accepted and means nothing
   * (rdma-core's own suite binds with it). */
  p = make_pair(pd, 0);
  EXPECT_RC("bind_mw.type1_with_local_write", 0,
            bind1_with(&p, mw, target, (uintptr_t)target->addr, 64,
                       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE,
                       &status));
  probe_pass("bind_mw.type1_with_local_write_completes",
             status == IBV_WC_SUCCESS, "status %ld%.0ld", status, 0);
  free_pair(&p);

  p = make_pair(pd, 0);
  EXPECT_RC("bind_mw.type1_again", 0,
            bind1(&p, mw, target, (uintptr_t)target->addr, 64, &status));
  probe_pass("bind_mw.type1_again_completes", status == IBV_WC_SUCCESS,
       "status %ld%.0ld", status, 0);
  const uint32_t bound = mw->rkey;
  EXPECT_RC("dealloc_mw.bound_type1", 0, ibv_dealloc_mw(mw));
  st = read_through(&p, bound, (uintptr_t)target->addr, (char *)local->addr,
                    local->lkey);
  probe_pass("rdma_read.through_a_deallocated_window_rem_access_err",
       st == IBV_WC_REM_ACCESS_ERR, "status %ld%.0ld", st, 0);
  free_pair(&p);
}

static void type2(struct ibv_mr *target, struct ibv_mr *local, char *buf) {
  struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  probe_pass("alloc_mw.type2", mw && mw->type == IBV_MW_TYPE_2,
       "errno %ld%.0ld", mw ? 0 : errno, 0);
  if (!mw) return;
  struct ibv_mw_bind b = {.wr_id = 1};
  struct pair p = make_pair(pd, 0);
  EXPECT_RC("bind_mw.type2_verb_refused", EINVAL, ibv_bind_mw(p.qp[1], mw, &b));

  int status = -1;
  const uint32_t first = mw->rkey;
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  EXPECT_RC("post_send.bind_mw_type2", 0,
            bind2_wr(&p, mw, rkey, target, (uintptr_t)target->addr, 64,
                     &status));
  probe_pass("post_send.bind_mw_type2_completes", status == IBV_WC_SUCCESS,
       "status %ld%.0ld", status, 0);
  /* ibv_post_send(3) leaves ibv_mw::rkey as it was: the program keeps it
   * current, since the next bind names the window by it. */
  probe_pass("post_send.bind_mw_leaves_the_struct_rkey", mw->rkey == first,
       "rkey 0x%lx, was 0x%lx", mw->rkey, first);
  mw->rkey = rkey;
  memcpy(buf + 8, "secondwn", 8);
  int st = read_through(&p, rkey, (uintptr_t)target->addr + 8, (char *)local->addr,
                        local->lkey);
  probe_pass("rdma_read.through_a_type2_window",
       st == IBV_WC_SUCCESS && memcmp(local->addr, "secondwn", 8) == 0,
       "status %ld%.0ld", st, 0);

  struct ibv_send_wr inv = {.wr_id = 8, .opcode = IBV_WR_LOCAL_INV,
                            .send_flags = IBV_SEND_SIGNALED,
                            .invalidate_rkey = rkey};
  struct ibv_send_wr *bad;
  struct ibv_wc wc;
  EXPECT_RC("post_send.local_inv_of_a_type2_window", 0,
            ibv_post_send(p.qp[1], &inv, &bad));
  next_wc(p.cq[1], &wc);
  probe_pass("post_send.local_inv_completes",
       wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV,
       "status %ld, opcode %ld", wc.status, wc.opcode);
  st = read_through(&p, rkey, (uintptr_t)target->addr + 8, (char *)local->addr,
                    local->lkey);
  probe_pass("rdma_read.through_an_invalidated_window_rem_access_err",
       st == IBV_WC_REM_ACCESS_ERR, "status %ld%.0ld", st, 0);
  free_pair(&p);

  /* A bind naming the window by the rkey it had before its last bind. */
  p = make_pair(pd, 0);
  mw->rkey = first;
  EXPECT_RC("post_send.bind_mw_named_by_a_stale_rkey", 0,
            bind2_wr(&p, mw, ibv_inc_rkey(rkey), target,
                     (uintptr_t)target->addr, 64, &status));
  probe_pass("post_send.bind_mw_named_by_a_stale_rkey_completes_mw_bind_err",
       status == IBV_WC_MW_BIND_ERR, "status %ld%.0ld", status, 0);
  mw->rkey = rkey;
  free_pair(&p);

  /* SEND_WITH_INV: the receiver's window is invalidated as the send lands. */
  p = make_pair(pd, 0);
  const uint32_t rkey2 = ibv_inc_rkey(rkey);
  EXPECT_RC("post_send.bind_mw_type2_again", 0,
            bind2_wr(&p, mw, rkey2, target, (uintptr_t)target->addr, 64,
                     &status));
  probe_pass("post_send.bind_mw_type2_again_completes", status == IBV_WC_SUCCESS,
       "status %ld%.0ld", status, 0);
  mw->rkey = rkey2;
  struct ibv_sge rsge = {.addr = (uintptr_t)local->addr + 1024, .length = 64,
                         .lkey = local->lkey};
  struct ibv_recv_wr rwr = {.wr_id = 9, .sg_list = &rsge, .num_sge = 1};
  struct ibv_recv_wr *rbad;
  if (ibv_post_recv(p.qp[1], &rwr, &rbad)) probe_die("ibv_post_recv");
  struct ibv_sge ssge = {.addr = (uintptr_t)local->addr + 512, .length = 8,
                         .lkey = local->lkey};
  struct ibv_send_wr swi = {.wr_id = 10, .sg_list = &ssge, .num_sge = 1,
                            .opcode = IBV_WR_SEND_WITH_INV,
                            .send_flags = IBV_SEND_SIGNALED,
                            .invalidate_rkey = rkey2};
  EXPECT_RC("post_send.send_with_inv", 0, ibv_post_send(p.qp[0], &swi, &bad));
  next_wc(p.cq[0], &wc);
  probe_pass("post_send.send_with_inv_completes", wc.status == IBV_WC_SUCCESS,
       "status %ld%.0ld", wc.status, 0);
  next_wc(p.cq[1], &wc);
  probe_pass("post_send.send_with_inv_received",
       wc.status == IBV_WC_SUCCESS && wc.wr_id == 9, "status %ld, wr_id %ld",
       wc.status, (long)wc.wr_id);
  st = read_through(&p, rkey2, (uintptr_t)target->addr, (char *)local->addr,
                    local->lkey);
  probe_pass("rdma_read.after_send_with_inv_rem_access_err",
       st == IBV_WC_REM_ACCESS_ERR, "status %ld%.0ld", st, 0);
  free_pair(&p);

  /* ibv_wr_bind_mw on a QP made with IBV_QP_EX_WITH_BIND_MW. */
  p = make_pair(pd, IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND);
  struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(p.qp[1]);
  probe_pass("create_qp_ex.with_bind_mw", qpx != NULL, "no ibv_qp_ex%.0ld%.0ld", 0,
       0);
  if (qpx) {
    const uint32_t rkey3 = ibv_inc_rkey(rkey2);
    struct ibv_mw_bind_info info = {.mr = target,
                                    .addr = (uintptr_t)target->addr,
                                    .length = 64,
                                    .mw_access_flags = IBV_ACCESS_REMOTE_READ};
    ibv_wr_start(qpx);
    qpx->wr_id = 11;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_bind_mw(qpx, mw, rkey3, &info);
    EXPECT_RC("wr_bind_mw.type2", 0, ibv_wr_complete(qpx));
    mw->rkey = rkey3;
    next_wc(p.cq[1], &wc);
    probe_pass("wr_bind_mw.type2_completes",
         wc.status == IBV_WC_SUCCESS && wc.wr_id == 11,
         "status %ld, wr_id %ld", wc.status, (long)wc.wr_id);
    st = read_through(&p, rkey3, (uintptr_t)target->addr, (char *)local->addr,
                      local->lkey);
    probe_pass("rdma_read.through_a_wr_bound_window", st == IBV_WC_SUCCESS,
         "status %ld%.0ld", st, 0);
  }
  free_pair(&p);
  EXPECT_RC("dealloc_mw.type2", 0, ibv_dealloc_mw(mw));
}

int main(int argc, char **argv) {
  ctx = probe_start(argc, argv, other_answers,
                    sizeof(other_answers) / sizeof(other_answers[0]),
                    &gid_index);
  if (ibv_query_gid(ctx, 1, gid_index, &gid)) probe_die("ibv_query_gid");
  struct ibv_device_attr dev;
  if (ibv_query_device(ctx, &dev)) probe_die("ibv_query_device");
  pd = ibv_alloc_pd(ctx);
  if (!pd) probe_die("ibv_alloc_pd");

  const int windows = dev.max_mw > 0;
  probe_pass("query_device.mem_window_flag_matches_max_mw",
       !!(dev.device_cap_flags & IBV_DEVICE_MEM_WINDOW) == windows,
       "device_cap_flags 0x%lx, max_mw %ld", (long)dev.device_cap_flags,
       dev.max_mw);
  if (!windows) {
    errno = 0;
    struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
    probe_pass("alloc_mw.without_windows_eopnotsupp",
         mw == NULL && errno == EOPNOTSUPP, "errno %ld%.0ld", errno, 0);
    printf("skip: windows: the device has none (max_mw 0)\n");
  } else if (ctx->device->transport_type == IBV_TRANSPORT_IWARP) {
    printf("skip: windows: iWARP QPs reach RTS through the CM\n");
  } else {
    static char buf[1 << 13] __attribute__((aligned(4096)));
    struct ibv_mr *target =
        ibv_reg_mr(pd, buf, 4096, kAccess | IBV_ACCESS_MW_BIND);
    struct ibv_mr *local = ibv_reg_mr(pd, buf + 4096, 4096, kAccess);
    if (!target || !local) probe_die("ibv_reg_mr");
    /* The windows are over `target`; reads land in `local`. */
    type1(target, local, buf);
    type2(target, local, buf);
    ibv_dereg_mr(target);
    ibv_dereg_mr(local);
  }
  EXPECT_RC("dealloc_pd.at_the_end", 0, ibv_dealloc_pd(pd));
  return probe_summary("mw_probe");
}
