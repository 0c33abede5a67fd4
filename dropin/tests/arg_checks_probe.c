/* Argument checks of the drop-in libibverbs that the kernel and rxe make,
 * from a program built against the system's libibverbs and run on the
 * drop-in through LD_LIBRARY_PATH. Each answer is the one rxe gives
 * (kernel uverbs and rdma-core providers/rxe):
 *   - ibv_create_cq with comp_vector -1 or == num_comp_vectors: NULL, EINVAL
 *     (uverbs create_cq takes the vector unsigned and refuses any past the
 *     device's count);
 *   - a cyclic work-request list to ibv_post_send, ibv_post_recv and
 *     ibv_post_srq_recv returns (never loops): ENOMEM once the queue is
 *     full, bad_wr set to a WR of the list;
 *   - num_sge above the queue's max_sge: EINVAL with bad_wr at that WR
 *     (a receive's sg_list is not read then; rxe reads a send's, so the
 *     send check passes an array as long as num_sge says); a full queue
 *     is checked before the count (ENOMEM);
 *   - ibv_req_notify_cq(cq, 0) then ibv_req_notify_cq(cq, 1): the pending
 *     next-completion request is not narrowed, an unsolicited completion
 *     makes the channel readable (IBA C11-31, C11-32; rxe_req_notify_cq
 *     keeps IB_CQ_NEXT_COMP); and 1 then 0 asks for the next completion.
 * After each refusal the queue still works: a normal post succeeds.
 *
 *   arg_checks_probe [DEVICE [GID_INDEX]]   (default: the first device, 0)
 * Prints "ok: ..." per check and "FAIL: ..." for a failed one; exit 1 then. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin/tests/probe_qp.h"

static int gid_index;



enum { kDepth = 4 };

struct side {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_comp_channel *ch;
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct ibv_mr *mr;
  char buf[4096];
  union ibv_gid gid;
};

static void open_side(struct ibv_context *ctx, struct side *s) {
  s->ctx = ctx;
  if (!(s->pd = ibv_alloc_pd(ctx))) probe_die("ibv_alloc_pd");
  if (!(s->ch = ibv_create_comp_channel(ctx))) probe_die("ibv_create_comp_channel");
  if (!(s->cq = ibv_create_cq(ctx, 64, s, s->ch, 0))) probe_die("ibv_create_cq");
  s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf),
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!s->mr) probe_die("ibv_reg_mr");
  struct ibv_qp_init_attr ia = {
      .send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = kDepth, .max_recv_wr = kDepth,
              .max_send_sge = 1, .max_recv_sge = 1}};
  if (!(s->qp = ibv_create_qp(s->pd, &ia))) probe_die("ibv_create_qp");
  if (ibv_query_gid(ctx, 1, gid_index, &s->gid)) probe_die("ibv_query_gid");
}

static void connect_side(struct side *s, struct side *peer) {
  const char *failed = probe_connect_rc(s->qp, peer->qp->qp_num, &peer->gid,
                                        gid_index,
                                        IBV_ACCESS_REMOTE_WRITE);
  if (failed) probe_die(failed);
}

/* Polls `cq` until `n` completions came, at most ~5 s; how many came. */
static int drain(struct ibv_cq *cq, int n) {
  struct ibv_wc wc;
  int got = 0;
  for (long spins = 0; got < n && spins < 5000000; spins++) {
    int r = ibv_poll_cq(cq, 1, &wc);
    if (r < 0) return got;
    if (r == 1) {
      if (wc.status != IBV_WC_SUCCESS)
        printf("  completion wr %llu status %s\n", (unsigned long long)wc.wr_id,
               ibv_wc_status_str(wc.status));
      got++;
    }
  }
  return got;
}

static int readable(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void comp_vectors(struct ibv_context *ctx) {
  struct ibv_cq *cq;
  errno = 0;
  cq = ibv_create_cq(ctx, 10, NULL, NULL, -1);
  probe_check(cq == NULL && errno == EINVAL, "ibv_create_cq comp_vector -1: EINVAL");
  errno = 0;
  cq = ibv_create_cq(ctx, 10, NULL, NULL, ctx->num_comp_vectors);
  probe_check(cq == NULL && errno == EINVAL,
        "ibv_create_cq comp_vector == num_comp_vectors: EINVAL");
  cq = ibv_create_cq(ctx, 10, NULL, NULL, ctx->num_comp_vectors - 1);
  probe_check(cq != NULL, "ibv_create_cq comp_vector num_comp_vectors - 1: made");
  if (cq) ibv_destroy_cq(cq);
}

static void cyclic_lists(struct side *a, struct side *b) {
  struct ibv_sge sge = {(uintptr_t)a->buf, 8, a->mr->lkey};
  /* Sends: two 8-byte writes pointing at each other, the second signaled:
   * a completed unsignaled WR keeps its send-queue slot until a completion
   * of a later WR of the queue is polled (mlx5, and the sim's ibta
   * profile), so a queue filled with unsignaled WRs alone never empties. */
  struct ibv_send_wr s1 = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
                           .opcode = IBV_WR_RDMA_WRITE};
  s1.wr.rdma.remote_addr = (uintptr_t)b->buf;
  s1.wr.rdma.rkey = b->mr->rkey;
  struct ibv_send_wr s2 = s1, *sbad = NULL;
  s2.wr_id = 2;
  s2.send_flags = IBV_SEND_SIGNALED;
  s1.next = &s2;
  s2.next = &s1;
  int rc = ibv_post_send(a->qp, &s1, &sbad);
  probe_check(rc == ENOMEM && (sbad == &s1 || sbad == &s2),
        "ibv_post_send of a cyclic list: ENOMEM, bad_wr set");
  /* The queue took its kDepth WRs; polling their completions frees their
   * slots, and a signaled one after them completes. */
  s1.next = NULL;
  s1.send_flags = IBV_SEND_SIGNALED;
  s1.wr_id = 99;
  int posted = 0, done = 0;
  for (long spins = 0; spins < 5000000 && !done; spins++) {
    struct ibv_wc wc;
    if (ibv_poll_cq(a->cq, 1, &wc) == 1 && wc.wr_id == 99)
      done = wc.status == IBV_WC_SUCCESS ? 1 : -1;
    if (!posted) posted = ibv_post_send(a->qp, &s1, &sbad) == 0;
  }
  probe_check(posted && done == 1,
        "the send queue works after the cyclic list");

  struct ibv_sge rsge = {(uintptr_t)a->buf, 64, a->mr->lkey};
  struct ibv_recv_wr r1 = {.wr_id = 11, .sg_list = &rsge, .num_sge = 1};
  struct ibv_recv_wr r2 = r1, *rbad = NULL;
  r2.wr_id = 12;
  r1.next = &r2;
  r2.next = &r1;
  rc = ibv_post_recv(b->qp, &r1, &rbad);
  probe_check(rc == ENOMEM && (rbad == &r1 || rbad == &r2),
        "ibv_post_recv of a cyclic list: ENOMEM, bad_wr set");

  struct ibv_srq_init_attr sa = {.attr = {.max_wr = kDepth, .max_sge = 1}};
  struct ibv_srq *srq = ibv_create_srq(a->pd, &sa);
  if (!srq) probe_die("ibv_create_srq");
  rbad = NULL;
  rc = ibv_post_srq_recv(srq, &r1, &rbad);
  probe_check(rc == ENOMEM && (rbad == &r1 || rbad == &r2),
        "ibv_post_srq_recv of a cyclic list: ENOMEM, bad_wr set");

  /* num_sge far above max_sge, with a one-entry sg_list: refused by the
   * count, the array not read past its one entry. A full queue is checked
   * first (rxe_post_one_recv): ENOMEM on the SRQ the cyclic list filled. */
  struct ibv_sge one = {(uintptr_t)a->buf, 8, a->mr->lkey};
  struct ibv_recv_wr big = {.wr_id = 21, .sg_list = &one, .num_sge = 1 << 20};
  rbad = NULL;
  rc = ibv_post_srq_recv(srq, &big, &rbad);
  probe_check(rc == ENOMEM && rbad == &big,
        "ibv_post_srq_recv num_sge 2^20 to a full SRQ: ENOMEM, bad_wr set");
  ibv_destroy_srq(srq);
  if (!(srq = ibv_create_srq(a->pd, &sa))) probe_die("ibv_create_srq");
  rbad = NULL;
  rc = ibv_post_srq_recv(srq, &big, &rbad);
  probe_check(rc == EINVAL && rbad == &big,
        "ibv_post_srq_recv num_sge 2^20 > max_sge: EINVAL, bad_wr set");
  ibv_destroy_srq(srq);
  /* A send with one SGE more than max_send_sge, the array that long: rxe's
   * library adds up the lengths of all num_sge entries before it checks
   * the count (rxe.c post_one_send), so a shorter array than num_sge says
   * is read past its end there; the drop-in never reads it. */
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  if (ibv_query_qp(a->qp, &qa, IBV_QP_CAP, &qi)) probe_die("ibv_query_qp");
  int over = (int)qi.cap.max_send_sge + 1;
  struct ibv_sge *many = calloc((size_t)over, sizeof(*many));
  if (!many) probe_die("calloc");
  for (int i = 0; i < over; i++) many[i] = one;
  struct ibv_send_wr sbig = s1;
  sbig.sg_list = many;
  sbig.num_sge = over;
  sbad = NULL;
  rc = ibv_post_send(a->qp, &sbig, &sbad);
  probe_check(rc == EINVAL && sbad == &sbig,
        "ibv_post_send num_sge max_send_sge + 1: EINVAL, bad_wr set");
  free(many);
  drain(a->cq, 0);
}

static void notify_widens(struct side *a, struct side *b) {
  struct ibv_cq *ev_cq;
  void *ev_ctx;
  for (int order = 0; order < 2; order++) {
  /* Take any event left over, then arm next then solicited-only (order 0),
   * or solicited-only then next (order 1). */
  while (readable(a->ch->fd, 0) && ibv_get_cq_event(a->ch, &ev_cq, &ev_ctx) == 0)
    ibv_ack_cq_events(ev_cq, 1);
  probe_check(ibv_req_notify_cq(a->cq, order) == 0, "ibv_req_notify_cq first");
  probe_check(ibv_req_notify_cq(a->cq, !order) == 0, "ibv_req_notify_cq second");
  struct ibv_sge sge = {(uintptr_t)a->buf, 8, a->mr->lkey};
  struct ibv_send_wr w = {.wr_id = 31, .sg_list = &sge, .num_sge = 1,
                          .opcode = IBV_WR_RDMA_WRITE,
                          .send_flags = IBV_SEND_SIGNALED}, *bad;
  w.wr.rdma.remote_addr = (uintptr_t)b->buf;
  w.wr.rdma.rkey = b->mr->rkey;
  if (ibv_post_send(a->qp, &w, &bad)) probe_die("ibv_post_send");
  int ready = readable(a->ch->fd, 5000);
  probe_check(ready, order == 0 ? "next then solicited-only: an unsolicited "
                            "completion raises the event"
                          : "solicited-only then next: an unsolicited "
                            "completion raises the event");
  if (ready && ibv_get_cq_event(a->ch, &ev_cq, &ev_ctx) == 0) {
    probe_check(ev_cq == a->cq, "the event names the CQ");
    ibv_ack_cq_events(ev_cq, 1);
  }
  probe_check(drain(a->cq, 1) == 1, "the write completes");
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct ibv_context *ctx = probe_open(argc > 1 ? argv[1] : NULL);
  gid_index = argc > 2 ? atoi(argv[2]) : 0;
  comp_vectors(ctx);
  if (ctx->device->transport_type == IBV_TRANSPORT_IWARP) {
    /* The list and notify checks need two connected RC QPs. */
    printf("skip: work-request lists and notification: iWARP QPs connect "
           "through the CM, not by hand\n");
    printf("arg_checks_probe: %d failed\n", probe_failures());
    return probe_failures() ? 1 : 0;
  }
  static struct side a, b;
  open_side(ctx, &a);
  open_side(ctx, &b);
  connect_side(&a, &b);
  connect_side(&b, &a);
  cyclic_lists(&a, &b);
  notify_widens(&a, &b);
  printf("arg_checks_probe: %d failed\n", probe_failures());
  return probe_failures() ? 1 : 0;
}
