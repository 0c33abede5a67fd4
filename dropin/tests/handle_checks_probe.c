/* Object handles, from a program built against the system's libibverbs:
 * every verb that names an object, called with a struct whose `handle`
 * names no object (garbled), the object of another type, or an object of
 * another context, and (on the drop-in only) with an object already
 * destroyed. Each refusal is checked to leave the object working. It runs
 * on the drop-in (profiles ibta, rxe and siw) and on rxe0 and siw0 in the
 * guest; docs/drop-in-handles.md lists each check by the id printed here.
 *
 *   handle_checks_probe [DEVICE [GID_INDEX [ANSWERS [sim]]]]
 *
 * ANSWERS is "rxe" (the default), "ibta" or "siw": the answer set, where
 * it is not rxe's (the table below). "sim" adds the checks with destroyed
 * objects: a real libibverbs frees the struct, so there they would read
 * freed memory.
 *
 * Prints "ok: ID" per passed check, "FAIL: ID: ..." per failed one and
 * "skip: ID: why" per check the set does not make, then
 * "handle_checks_probe: N checks, F failed"; exits 1 when one failed. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin/tests/probe_checks.h"
#include "dropin/tests/probe_qp.h"

static struct ibv_context *ctx;
static int gid_index;
static union ibv_gid gid;
static int iwarp;

/* Where a set's answer is not rxe's. rxe and siw run the posts, the polls
 * and (siw) the CQ notify in user space: the handle never reaches the
 * kernel there, so a garbled one goes unnoticed; the ibta profile refuses
 * it, as a device that checks would. */
static const struct probe_answer other_answers[] = {
    {"ibta", "post_recv.garbled_handle", ENOENT, NULL},
    {"ibta", "post_srq_recv.garbled_handle", ENOENT, NULL},
    {"ibta", "poll_cq.garbled_handle", -1, NULL},
    {"ibta", "post_recv.handle_of_another_context", ENOENT, NULL},
    {"siw", "post_recv.handle_of_another_context", kNotMade,
     "the QP had an ibv_destroy_qp refused: libsiw unmaps its rings before "
     "the kernel refuses, so a post to it crashes (seen on siw0)"},
    {"siw", "req_notify_cq.garbled_handle", 0, NULL},
    {"siw", "resize_cq.garbled_handle", EOPNOTSUPP, NULL},
    {"siw", "query_srq.garbled_handle", EOPNOTSUPP, NULL},
    {"ibta", "rereg_mr.garbled_handle", ENOENT, NULL},
    {"siw", "rereg_mr.garbled_handle", kNotMade,
     "libsiw cannot re-register a region"},
    {"siw", "alloc_mw.garbled_pd", EOPNOTSUPP, NULL},
    {"siw", "query_srq.destroyed", EOPNOTSUPP, NULL},
};

/* Runs `stmt` with obj->handle set to `value`, then puts the handle back. */
#define WITH_HANDLE(obj, value, stmt)                                       \
  do {                                                                      \
    uint32_t saved_ = (obj)->handle;                                        \
    (obj)->handle = (value);                                                \
    stmt;                                                                   \
    (obj)->handle = saved_;                                                 \
  } while (0)

static const uint32_t kGarbled = 0xdead0000u;

static void free_mr(void *p) { ibv_dereg_mr(p); }
static void free_qp(void *p) { ibv_destroy_qp(p); }
static void free_srq(void *p) { ibv_destroy_srq(p); }
static void free_ah(void *p) { ibv_destroy_ah(p); }
static void free_mw(void *p) { ibv_dealloc_mw(p); }

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq,
                              enum ibv_qp_type type, struct ibv_srq *srq) {
  struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .srq = srq,
                               .qp_type = type,
                               .cap = {.max_send_wr = 8, .max_recv_wr = 8,
                                       .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp *qp = ibv_create_qp(pd, &a);
  if (!qp) probe_die("ibv_create_qp");
  return qp;
}

static int qp_state(struct ibv_qp *qp) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr i;
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i)) return -1;
  return a.qp_state;
}

static int to_init(struct ibv_qp *qp) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (qp->qp_type == IBV_QPT_UD) {
    a.qkey = 0x11111111;
    mask |= IBV_QP_QKEY;
  } else {
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  return ibv_modify_qp(qp, &a, mask);
}

static int ud_to_rts(struct ibv_qp *qp) {
  if (to_init(qp)) return errno;
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) return errno;
  a.qp_state = IBV_QPS_RTS;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int post_one_recv(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t id) {
  struct ibv_sge sge = {.addr = (uintptr_t)mr->addr, .length = 64,
                        .lkey = mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
  struct ibv_recv_wr *bad;
  return ibv_post_recv(qp, &wr, &bad);
}

static int post_one_srq_recv(struct ibv_srq *srq, struct ibv_mr *mr,
                             uint64_t id) {
  struct ibv_sge sge = {.addr = (uintptr_t)mr->addr, .length = 64,
                        .lkey = mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
  struct ibv_recv_wr *bad;
  return ibv_post_srq_recv(srq, &wr, &bad);
}

/* A UD send to this QP's own number through `ah`, signaled. */
static int post_one_ud_send(struct ibv_qp *qp, struct ibv_ah *ah,
                            struct ibv_mr *mr, uint64_t id) {
  struct ibv_sge sge = {.addr = (uintptr_t)mr->addr + 1024, .length = 8,
                        .lkey = mr->lkey};
  struct ibv_send_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1,
                           .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED};
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = qp->qp_num;
  wr.wr.ud.remote_qkey = 0x11111111;
  struct ibv_send_wr *bad;
  return ibv_post_send(qp, &wr, &bad);
}

/* Polls `cq` until a completion with `wr_id` comes (others are passed
 * over) or about a second goes by: 1 when it came with success. */
static int await(struct ibv_cq *cq, uint64_t wr_id) {
  for (int spins = 0; spins < 1000000; spins++) {
    struct ibv_wc wc;
    int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0) return 0;
    if (n == 1 && wc.wr_id == wr_id) return wc.status == IBV_WC_SUCCESS;
  }
  return 0;
}

static void drain(struct ibv_cq *cq) {
  struct ibv_wc wc;
  while (ibv_poll_cq(cq, 1, &wc) > 0) {
  }
}

static struct ibv_ah *make_ah(struct ibv_pd *pd) {
  struct ibv_ah_attr a = {.is_global = 1, .port_num = 1};
  a.grh.dgid = gid;
  a.grh.sgid_index = gid_index;
  a.grh.hop_limit = 64;
  return ibv_create_ah(pd, &a);
}

/* Each verb with the handle of its object (or of the object it names)
 * garbled: ENOENT, the kernel's answer to a handle that names nothing
 * (for the ioctl methods and the write commands alike), or the call goes
 * through where the provider never passes the handle to the kernel; then
 * the object, its handle put back, still works. */
static void garbled(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_mr *mr) {
  struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
  struct ibv_srq *srq = ibv_create_srq(pd, &sa);
  if (!srq) probe_die("ibv_create_srq");
  struct ibv_qp *qp = make_qp(pd, cq, IBV_QPT_RC, NULL);

  struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  const int init_mask =
      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  WITH_HANDLE(qp, kGarbled,
              EXPECT_RC("modify_qp.garbled_handle", ENOENT,
                        ibv_modify_qp(qp, &init, init_mask) ? errno : 0));
  probe_pass("modify_qp.garbled_handle_keeps_the_qp",
       qp_state(qp) == IBV_QPS_RESET, "state %ld%.0ld", qp_state(qp), 0);
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  WITH_HANDLE(qp, kGarbled,
              EXPECT_RC("query_qp.garbled_handle", ENOENT,
                        ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi)));
  EXPECT_RC("modify_qp.after_a_garbled_handle", 0,
            ibv_modify_qp(qp, &init, init_mask) ? errno : 0);

  WITH_HANDLE(qp, kGarbled,
              EXPECT_RC("post_recv.garbled_handle", 0,
                        post_one_recv(qp, mr, 1)));
  EXPECT_RC("post_recv.after_a_garbled_handle", 0, post_one_recv(qp, mr, 2));

  struct ibv_srq_attr s = {.srq_limit = 1};
  WITH_HANDLE(srq, kGarbled,
              EXPECT_RC("modify_srq.garbled_handle", ENOENT,
                        ibv_modify_srq(srq, &s, IBV_SRQ_LIMIT)));
  WITH_HANDLE(srq, kGarbled,
              EXPECT_RC("query_srq.garbled_handle", ENOENT,
                        ibv_query_srq(srq, &s)));
  WITH_HANDLE(srq, kGarbled,
              EXPECT_RC("post_srq_recv.garbled_handle", 0,
                        post_one_srq_recv(srq, mr, 3)));
  EXPECT_RC("post_srq_recv.after_a_garbled_handle", 0,
            post_one_srq_recv(srq, mr, 4));

  struct ibv_wc wc;
  WITH_HANDLE(cq, kGarbled,
              EXPECT_RC("poll_cq.garbled_handle", 0, ibv_poll_cq(cq, 1, &wc)));
  WITH_HANDLE(cq, kGarbled,
              EXPECT_RC("req_notify_cq.garbled_handle", ENOENT,
                        ibv_req_notify_cq(cq, 0)));
  EXPECT_RC("req_notify_cq.after_a_garbled_handle", 0,
            ibv_req_notify_cq(cq, 0));
  struct ibv_cq *rcq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  if (!rcq) probe_die("ibv_create_cq");
  WITH_HANDLE(rcq, kGarbled,
              EXPECT_RC("resize_cq.garbled_handle", ENOENT,
                        ibv_resize_cq(rcq, 32)));
  ibv_destroy_cq(rcq);

  static char buf[4096];
  WITH_HANDLE(pd, kGarbled,
              EXPECT_NULL("reg_mr.garbled_pd", ENOENT,
                          ibv_reg_mr(pd, buf, sizeof(buf),
                                     IBV_ACCESS_LOCAL_WRITE),
                          free_mr));
  struct ibv_qp_init_attr qpa = {.send_cq = cq, .recv_cq = cq,
                                 .qp_type = IBV_QPT_RC,
                                 .cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                         .max_send_sge = 1,
                                         .max_recv_sge = 1}};
  WITH_HANDLE(pd, kGarbled,
              EXPECT_NULL("create_qp.garbled_pd", ENOENT,
                          ibv_create_qp(pd, &qpa), free_qp));
  WITH_HANDLE(cq, kGarbled,
              EXPECT_NULL("create_qp.garbled_cq", ENOENT,
                          ibv_create_qp(pd, &qpa), free_qp));
  qpa.srq = srq;
  WITH_HANDLE(srq, kGarbled,
              EXPECT_NULL("create_qp.garbled_srq", ENOENT,
                          ibv_create_qp(pd, &qpa), free_qp));
  WITH_HANDLE(pd, kGarbled,
              EXPECT_NULL("create_srq.garbled_pd", ENOENT,
                          ibv_create_srq(pd, &sa), free_srq));
  WITH_HANDLE(pd, kGarbled,
              EXPECT_NULL("alloc_mw.garbled_pd", ENOENT,
                          ibv_alloc_mw(pd, IBV_MW_TYPE_2), free_mw));

  /* rxe 6.1 re-registers nothing: EOPNOTSUPP comes before the lookup. */
  const long rereg_errno = probe_answer("rereg_mr.garbled_handle", EOPNOTSUPP);
  if (rereg_errno != kNotMade) {
    int rc = 0, err = 0;
    WITH_HANDLE(mr, kGarbled, {
      errno = 0;
      rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
      err = errno;
    });
    probe_pass("rereg_mr.garbled_handle",
         rc == IBV_REREG_MR_ERR_CMD && err == rereg_errno,
         "want IBV_REREG_MR_ERR_CMD with the set's errno, got %ld with errno "
         "%ld", rc, err);
  }

  struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  if (mw == NULL) {
    probe_skip("dealloc_mw.garbled_handle", "the device has no memory windows");
  } else {
    WITH_HANDLE(mw, kGarbled,
                EXPECT_RC("dealloc_mw.garbled_handle", ENOENT,
                          ibv_dealloc_mw(mw)));
    EXPECT_RC("dealloc_mw.after_a_garbled_handle", 0, ibv_dealloc_mw(mw));
  }

  if (iwarp) {
    probe_skip("create_ah.garbled_pd", "iWARP has no address handles");
    probe_skip("post_send.garbled_handle", "iWARP QPs reach RTS through the CM");
    probe_skip("attach_mcast.garbled_handle", "iWARP has no UD QPs");
  } else {
    struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
    aa.grh.dgid = gid;
    aa.grh.sgid_index = gid_index;
    aa.grh.hop_limit = 64;
    WITH_HANDLE(pd, kGarbled,
                EXPECT_NULL("create_ah.garbled_pd", ENOENT,
                            ibv_create_ah(pd, &aa), free_ah));
    struct ibv_ah *ah = make_ah(pd);
    struct ibv_qp *ud = make_qp(pd, cq, IBV_QPT_UD, NULL);
    if (!ah || ud_to_rts(ud)) probe_die("a UD QP in RTS");
    drain(cq);
    WITH_HANDLE(ud, kGarbled,
                EXPECT_RC("post_send.garbled_handle", ENOENT,
                          post_one_ud_send(ud, ah, mr, 5)));
    if (post_one_recv(ud, mr, 6)) probe_die("ibv_post_recv (UD)");
    EXPECT_RC("post_send.after_a_garbled_handle", 0,
              post_one_ud_send(ud, ah, mr, 7));
    probe_pass("post_send.after_a_garbled_handle_completes", await(cq, 7),
         "no successful completion of the next send%.0ld%.0ld", 0, 0);
    union ibv_gid mgid = {.raw = {0xff, 0x12, 0x40, 0x1b}};
    mgid.raw[15] = 7;
    WITH_HANDLE(ud, kGarbled,
                EXPECT_RC("attach_mcast.garbled_handle", ENOENT,
                          ibv_attach_mcast(ud, &mgid, 0)));
    EXPECT_RC("attach_mcast.after_a_garbled_handle", 0,
              ibv_attach_mcast(ud, &mgid, 0));
    ibv_detach_mcast(ud, &mgid, 0);
    drain(cq);
    ibv_destroy_qp(ud);
    WITH_HANDLE(ah, kGarbled,
                EXPECT_RC("destroy_ah.garbled_handle", ENOENT,
                          ibv_destroy_ah(ah)));
    EXPECT_RC("destroy_ah.after_a_garbled_handle", 0, ibv_destroy_ah(ah));
  }
  drain(cq);
  ibv_destroy_qp(qp);
  ibv_destroy_srq(srq);
}

/* A handle that names an object of another type: the kernel's type check
 * answers EINVAL, for the ioctl methods and the write commands alike. */
static void wrong_type(struct ibv_pd *pd, struct ibv_cq *cq) {
  struct ibv_qp *qp = make_qp(pd, cq, IBV_QPT_RC, NULL);
  struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  const int init_mask =
      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  WITH_HANDLE(qp, pd->handle,
              EXPECT_RC("destroy_qp.handle_of_a_pd", EINVAL,
                        ibv_destroy_qp(qp)));
  WITH_HANDLE(qp, cq->handle,
              EXPECT_RC("modify_qp.handle_of_a_cq", EINVAL,
                        ibv_modify_qp(qp, &init, init_mask) ? errno : 0));
  WITH_HANDLE(cq, qp->handle,
              EXPECT_RC("destroy_cq.handle_of_a_qp", EINVAL,
                        ibv_destroy_cq(cq)));
  EXPECT_RC("destroy_qp.after_a_handle_of_a_pd", 0, ibv_destroy_qp(qp));
}

/* The handles of another context's objects. Its handles are numbered past
 * this context's (it makes 32 PDs first), so in this context they name
 * nothing, on a kernel that numbers each context's objects from 0. */
static void other_context(struct ibv_pd *pd, struct ibv_cq *cq) {
  struct ibv_context *other = ibv_open_device(ctx->device);
  if (!other) probe_die("a second ibv_open_device");
  struct ibv_pd *filler[32];
  for (int i = 0; i < 32; i++)
    if (!(filler[i] = ibv_alloc_pd(other))) probe_die("ibv_alloc_pd");
  struct ibv_pd *opd = ibv_alloc_pd(other);
  struct ibv_cq *ocq = ibv_create_cq(other, 8, NULL, NULL, 0);
  if (!opd || !ocq) probe_die("objects of the second context");
  struct ibv_qp *oqp = make_qp(opd, ocq, IBV_QPT_RC, NULL);
  struct ibv_qp *qp = make_qp(pd, cq, IBV_QPT_RC, NULL);

  struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  const int init_mask =
      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  WITH_HANDLE(qp, oqp->handle,
              EXPECT_RC("destroy_qp.handle_of_another_context", ENOENT,
                        ibv_destroy_qp(qp)));
  WITH_HANDLE(qp, oqp->handle,
              EXPECT_RC("modify_qp.handle_of_another_context", ENOENT,
                        ibv_modify_qp(qp, &init, init_mask) ? errno : 0));
  probe_pass("modify_qp.handle_of_another_context_keeps_both",
       qp_state(qp) == IBV_QPS_RESET && qp_state(oqp) == IBV_QPS_RESET,
       "states %ld and %ld", qp_state(qp), qp_state(oqp));
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  WITH_HANDLE(qp, oqp->handle,
              EXPECT_RC("query_qp.handle_of_another_context", ENOENT,
                        ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi)));
  static char obuf[4096];
  struct ibv_mr *omr =
      ibv_reg_mr(opd, obuf, sizeof(obuf), IBV_ACCESS_LOCAL_WRITE);
  struct ibv_cq *cq2 = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
  struct ibv_mr *mr2 =
      pd2 ? ibv_reg_mr(pd2, obuf, sizeof(obuf), IBV_ACCESS_LOCAL_WRITE) : NULL;
  if (!omr || !cq2 || !pd2 || !mr2) probe_die("more objects");
  WITH_HANDLE(mr2, omr->handle,
              EXPECT_RC("dereg_mr.handle_of_another_context", ENOENT,
                        ibv_dereg_mr(mr2)));
  WITH_HANDLE(cq2, ocq->handle,
              EXPECT_RC("destroy_cq.handle_of_another_context", ENOENT,
                        ibv_destroy_cq(cq2)));
  EXPECT_RC("dereg_mr.after_a_handle_of_another_context", 0,
            ibv_dereg_mr(mr2));
  WITH_HANDLE(pd2, opd->handle,
              EXPECT_RC("dealloc_pd.handle_of_another_context", ENOENT,
                        ibv_dealloc_pd(pd2)));
  EXPECT_RC("destroy_cq.after_a_handle_of_another_context", 0,
            ibv_destroy_cq(cq2));
  struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
  struct ibv_srq *srq2 = ibv_create_srq(pd, &sa);
  struct ibv_srq *osrq = ibv_create_srq(opd, &sa);
  if (!srq2 || !osrq) probe_die("two SRQs");
  WITH_HANDLE(srq2, osrq->handle,
              EXPECT_RC("destroy_srq.handle_of_another_context", ENOENT,
                        ibv_destroy_srq(srq2)));
  EXPECT_RC("destroy_srq.after_a_handle_of_another_context", 0,
            ibv_destroy_srq(srq2));
  ibv_destroy_srq(osrq);
  struct ibv_qp_attr init2 = {.qp_state = IBV_QPS_INIT, .port_num = 1};
  if (ibv_modify_qp(qp, &init2, init_mask)) probe_die("to INIT");
  if (probe_answer("post_recv.handle_of_another_context", 0) != kNotMade) {
    WITH_HANDLE(qp, oqp->handle,
                EXPECT_RC("post_recv.handle_of_another_context", 0,
                          post_one_recv(qp, omr, 9)));
  }
  EXPECT_RC("dealloc_pd.after_a_handle_of_another_context", 0,
            ibv_dealloc_pd(pd2));
  ibv_dereg_mr(omr);
  struct ibv_qp_init_attr qpa = {.send_cq = ocq, .recv_cq = ocq,
                                 .qp_type = IBV_QPT_RC,
                                 .cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                         .max_send_sge = 1,
                                         .max_recv_sge = 1}};
  EXPECT_NULL("create_qp.cq_of_another_context", ENOENT,
              ibv_create_qp(pd, &qpa), free_qp);
  EXPECT_RC("destroy_qp.after_a_handle_of_another_context", 0,
            ibv_destroy_qp(qp));
  ibv_destroy_qp(oqp);
  ibv_destroy_cq(ocq);
  ibv_dealloc_pd(opd);
  for (int i = 0; i < 32; i++) ibv_dealloc_pd(filler[i]);
  EXPECT_RC("close_device.second_context", 0, ibv_close_device(other));
}

/* Objects already destroyed: the drop-in keeps a destroyed object's struct
 * readable for a while, so a verb given it refuses it with ENOENT (as for a
 * handle that names nothing) instead of reading freed memory. */
static void destroyed(struct ibv_pd *pd, struct ibv_cq *cq) {
  static char buf[4096];
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
  struct ibv_srq *srq = ibv_create_srq(pd, &sa);
  struct ibv_qp *qp = make_qp(pd, cq, IBV_QPT_RC, NULL);
  struct ibv_cq *dcq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  struct ibv_pd *dpd = ibv_alloc_pd(ctx);
  if (!mr || !srq || !dcq || !dpd) probe_die("set-up");
  if (to_init(qp)) probe_die("to INIT");
  struct ibv_mr keep = *mr;
  if (ibv_destroy_qp(qp) || ibv_destroy_srq(srq) || ibv_dereg_mr(mr) ||
      ibv_destroy_cq(dcq) || ibv_dealloc_pd(dpd))
    probe_die("the destroys");

  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};
  struct ibv_qp_init_attr qi;
  EXPECT_RC("modify_qp.destroyed", ENOENT,
            ibv_modify_qp(qp, &a, IBV_QP_STATE) ? errno : 0);
  EXPECT_RC("query_qp.destroyed", ENOENT,
            ibv_query_qp(qp, &a, IBV_QP_STATE, &qi));
  EXPECT_RC("post_recv.destroyed", ENOENT, post_one_recv(qp, &keep, 1));
  struct ibv_send_wr swr = {.wr_id = 2, .opcode = IBV_WR_SEND};
  struct ibv_send_wr *sbad;
  EXPECT_RC("post_send.destroyed", ENOENT, ibv_post_send(qp, &swr, &sbad));
  EXPECT_RC("destroy_qp.destroyed", ENOENT, ibv_destroy_qp(qp));
  struct ibv_srq_attr s;
  EXPECT_RC("query_srq.destroyed", ENOENT, ibv_query_srq(srq, &s));
  EXPECT_RC("post_srq_recv.destroyed", ENOENT,
            post_one_srq_recv(srq, &keep, 3));
  EXPECT_RC("destroy_srq.destroyed", ENOENT, ibv_destroy_srq(srq));
  EXPECT_RC("dereg_mr.destroyed", ENOENT, ibv_dereg_mr(mr));
  struct ibv_wc wc;
  EXPECT_RC("poll_cq.destroyed", -1, ibv_poll_cq(dcq, 1, &wc));
  EXPECT_RC("req_notify_cq.destroyed", ENOENT, ibv_req_notify_cq(dcq, 0));
  EXPECT_RC("destroy_cq.destroyed", ENOENT, ibv_destroy_cq(dcq));
  struct ibv_qp_init_attr qpa = {.send_cq = dcq, .recv_cq = dcq,
                                 .qp_type = IBV_QPT_RC,
                                 .cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                         .max_send_sge = 1,
                                         .max_recv_sge = 1}};
  EXPECT_NULL("create_qp.destroyed_cq", ENOENT, ibv_create_qp(pd, &qpa),
              free_qp);
  EXPECT_NULL("reg_mr.destroyed_pd", ENOENT,
              ibv_reg_mr(dpd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE),
              free_mr);
  EXPECT_RC("dealloc_pd.destroyed", ENOENT, ibv_dealloc_pd(dpd));
  struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  if (mw == NULL) {
    probe_skip("dealloc_mw.destroyed", "the device has no memory windows");
  } else {
    if (ibv_dealloc_mw(mw)) probe_die("ibv_dealloc_mw");
    EXPECT_RC("dealloc_mw.destroyed", ENOENT, ibv_dealloc_mw(mw));
  }
}

int main(int argc, char **argv) {
  ctx = probe_start(argc, argv, other_answers,
                    sizeof(other_answers) / sizeof(other_answers[0]),
                    &gid_index);
  const int sim = argc > 4 && strcmp(argv[4], "sim") == 0;
  iwarp = ctx->device->transport_type == IBV_TRANSPORT_IWARP;
  if (ibv_query_gid(ctx, 1, gid_index, &gid)) probe_die("ibv_query_gid");

  static char buf[1 << 14] __attribute__((aligned(4096)));
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  if (!pd || !cq) probe_die("a PD and a CQ");
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  if (!mr) probe_die("ibv_reg_mr");

  garbled(pd, cq, mr);
  wrong_type(pd, cq);
  other_context(pd, cq);
  if (sim)
    destroyed(pd, cq);
  else
    probe_skip("destroyed", "a real libibverbs frees a destroyed object's struct");

  EXPECT_RC("dereg_mr.at_the_end", 0, ibv_dereg_mr(mr));
  EXPECT_RC("destroy_cq.at_the_end", 0, ibv_destroy_cq(cq));
  EXPECT_RC("dealloc_pd.at_the_end", 0, ibv_dealloc_pd(pd));
  return probe_summary("handle_checks_probe");
}
