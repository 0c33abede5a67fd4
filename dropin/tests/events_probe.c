/* A program built against the system's libibverbs (as any RDMA program is)
 * and run on the drop-in through LD_LIBRARY_PATH. It checks what the header's
 * inlines and the event fds do there:
 *   - a completion channel fd set O_NONBLOCK: ibv_get_cq_event fails with
 *     EAGAIN while nothing happened, poll(2) sees it readable once an armed
 *     CQ got a completion, and the event names that CQ and its cq_context;
 *   - a second event needs a new ibv_req_notify_cq (ibv_req_notify_cq(3));
 *   - context->async_fd stays quiet while nothing happened;
 *   - ibv_post_send with a bad opcode fails with EINVAL and bad_wr set.
 * With the argument "ex" the client uses ibv_create_cq_ex and a QP made by
 * ibv_create_qp_ex with send_ops_flags, posts an RDMA write and an inline
 * send with ibv_wr_*, and reads the completions with ibv_start_poll.
 * With the argument "async" the server's QP takes its receives from an SRQ
 * whose limit is armed, and it checks instead that the limit event
 * (ibv_modify_srq(3)) reaches context->async_fd and ibv_get_async_event.
 * Prints "ok: ..." per check and "FAIL: ..." for a failed one; exit 1 then. */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin/tests/probe_qp.h"




struct side {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_comp_channel *ch;
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct ibv_mr *mr;
  struct ibv_srq *srq;
  char buf[4096];
  union ibv_gid gid;
};

static struct ibv_cq_ex *cqx;  /* the client's CQ in "ex" mode */

static void open_side(struct ibv_device *dev, struct side *s, int use_srq,
                      int ex) {
  if (!(s->ctx = ibv_open_device(dev))) probe_die("ibv_open_device");
  if (!(s->pd = ibv_alloc_pd(s->ctx))) probe_die("ibv_alloc_pd");
  if (!(s->ch = ibv_create_comp_channel(s->ctx))) probe_die("ibv_create_comp_channel");
  if (ex) {
    struct ibv_cq_init_attr_ex ca = {.cqe = 16, .cq_context = s,
                                     .channel = s->ch,
                                     .wc_flags = IBV_WC_STANDARD_FLAGS};
    if (!(cqx = ibv_create_cq_ex(s->ctx, &ca))) probe_die("ibv_create_cq_ex");
    s->cq = ibv_cq_ex_to_cq(cqx);
  } else if (!(s->cq = ibv_create_cq(s->ctx, 16, s, s->ch, 0))) {
    probe_die("ibv_create_cq");
  }
  s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf),
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!s->mr) probe_die("ibv_reg_mr");
  struct ibv_qp_init_attr ia = {
      .send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
              .max_recv_sge = 1}};
  if (use_srq) {
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    if (!(s->srq = ibv_create_srq(s->pd, &sa))) probe_die("ibv_create_srq");
    ia.srq = s->srq;
  }
  if (ex) {
    struct ibv_qp_init_attr_ex xa = {
        .send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
        .cap = ia.cap, .pd = s->pd,
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE};
    xa.cap.max_inline_data = 64;
    if (!(s->qp = ibv_create_qp_ex(s->ctx, &xa))) probe_die("ibv_create_qp_ex");
  } else if (!(s->qp = ibv_create_qp(s->pd, &ia))) {
    probe_die("ibv_create_qp");
  }
  if (ibv_query_gid(s->ctx, 1, 0, &s->gid)) probe_die("ibv_query_gid");
}

static void connect_side(struct side *s, struct side *peer) {
  const char *failed = probe_connect_rc(s->qp, peer->qp->qp_num, &peer->gid, 0,
                                        IBV_ACCESS_REMOTE_WRITE);
  if (failed) probe_die(failed);
}

static void post_recv(struct side *s, uint64_t id) {
  struct ibv_sge sge = {(uintptr_t)s->buf, 64, s->mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad;
  if (s->srq ? ibv_post_srq_recv(s->srq, &wr, &bad)
             : ibv_post_recv(s->qp, &wr, &bad))
    probe_die("ibv_post_recv");
}

static void post_send(struct side *s, uint64_t id) {
  struct ibv_sge sge = {(uintptr_t)s->buf, 64, s->mr->lkey};
  struct ibv_send_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1,
                           .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED}, *bad;
  if (ibv_post_send(s->qp, &wr, &bad)) probe_die("ibv_post_send");
}

/* Whether fd is readable within ms milliseconds. */
static int readable(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The "async" mode: two receives on the server's SRQ, its limit armed at 2,
 * one send consumes one, fewer than 2 remain: IBV_EVENT_SRQ_LIMIT_REACHED. */
static int async_mode(struct side *c, struct side *s) {
  post_recv(s, 1);
  post_recv(s, 2);
  struct ibv_srq_attr limit = {.srq_limit = 2};
  if (ibv_modify_srq(s->srq, &limit, IBV_SRQ_LIMIT)) probe_die("ibv_modify_srq");
  probe_check(!readable(s->ctx->async_fd, 100), "no async event before the send");
  post_send(c, 3);
  probe_check(readable(s->ctx->async_fd, 20000), "async_fd becomes readable");
  struct ibv_async_event ev;
  int fl = fcntl(s->ctx->async_fd, F_GETFL);
  if (fcntl(s->ctx->async_fd, F_SETFL, fl | O_NONBLOCK)) probe_die("O_NONBLOCK");
  probe_check(ibv_get_async_event(s->ctx, &ev) == 0 &&
            ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
            ev.element.srq == s->srq,
        "ibv_get_async_event: IBV_EVENT_SRQ_LIMIT_REACHED on the server SRQ");
  ibv_ack_async_event(&ev);
  printf("events_probe: %d failed\n", probe_failures());
  return probe_failures() ? 1 : 0;
}

/* The "ex" mode: ibv_wr_* on the client, ibv_start_poll on its CQ. */
static int ex_mode(struct side *c, struct side *s) {
  probe_check(ibv_qp_to_qp_ex(s->qp) == NULL,
        "ibv_qp_to_qp_ex of a QP made without send_ops_flags is NULL");
  struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(c->qp);
  probe_check(qx != NULL, "ibv_qp_to_qp_ex of the client QP");
  if (!qx) return 1;
  static const char text[] = "inline through ibv_wr_set_inline_data";
  memset(c->buf, 0x5c, 256);
  post_recv(s, 21);
  ibv_wr_start(qx);
  qx->wr_id = 11;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qx, s->mr->rkey, (uintptr_t)s->buf + 1024);
  ibv_wr_set_sge(qx, c->mr->lkey, (uintptr_t)c->buf, 256);
  qx->wr_id = 12;
  ibv_wr_send(qx);
  ibv_wr_set_inline_data(qx, (void *)text, sizeof(text));
  probe_check(ibv_wr_complete(qx) == 0, "ibv_wr_complete posts both WRs");

  struct ibv_poll_cq_attr pa = {0};
  int rc;
  for (int i = 0; i < 1000000 && (rc = ibv_start_poll(cqx, &pa)) == ENOENT; i++)
    ;
  probe_check(rc == 0 && cqx->wr_id == 11 && cqx->status == IBV_WC_SUCCESS &&
            ibv_wc_read_opcode(cqx) == IBV_WC_RDMA_WRITE &&
            ibv_wc_read_qp_num(cqx) == c->qp->qp_num,
        "ibv_start_poll: the write completed SUCCESS");
  if (rc == 0) {
    for (int i = 0; i < 1000000 && (rc = ibv_next_poll(cqx)) == ENOENT; i++)
      ;
    probe_check(rc == 0 && cqx->wr_id == 12 && cqx->status == IBV_WC_SUCCESS &&
              ibv_wc_read_opcode(cqx) == IBV_WC_SEND,
          "ibv_next_poll: the inline send completed SUCCESS");
    ibv_end_poll(cqx);
  }
  unsigned char want[256];
  memset(want, 0x5c, sizeof(want));
  probe_check(memcmp(s->buf + 1024, want, sizeof(want)) == 0,
        "the written bytes are in the server's buffer");
  struct ibv_wc wc;
  int got = 0;
  for (int i = 0; i < 1000000 && !got; i++) got = ibv_poll_cq(s->cq, 1, &wc);
  probe_check(got == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 21 &&
            wc.byte_len == sizeof(text) &&
            memcmp(s->buf, text, sizeof(text)) == 0,
        "the inline send's bytes arrived");
  printf("events_probe: %d failed\n", probe_failures());
  return probe_failures() ? 1 : 0;
}

int main(int argc, char **argv) {
  int n;
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 2) probe_die("want two devices");
  struct side *c = calloc(1, sizeof(*c)), *s = calloc(1, sizeof(*s));
  int async = argc > 1 && strcmp(argv[1], "async") == 0;
  int ex = argc > 1 && strcmp(argv[1], "ex") == 0;
  open_side(list[0], c, 0, ex);
  open_side(list[1], s, async, 0);
  connect_side(c, s);
  connect_side(s, c);
  if (async) return async_mode(c, s);
  if (ex) return ex_mode(c, s);

  int fl = fcntl(s->ch->fd, F_GETFL);
  if (fcntl(s->ch->fd, F_SETFL, fl | O_NONBLOCK)) probe_die("O_NONBLOCK");
  struct ibv_cq *ev_cq;
  void *ev_ctx;
  errno = 0;
  probe_check(ibv_get_cq_event(s->ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN,
        "no event yet: ibv_get_cq_event fails with EAGAIN");

  if (ibv_req_notify_cq(s->cq, 0)) probe_die("ibv_req_notify_cq");
  post_recv(s, 1);
  post_send(c, 2);
  probe_check(readable(s->ch->fd, 10000), "the channel fd becomes readable");
  probe_check(ibv_get_cq_event(s->ch, &ev_cq, &ev_ctx) == 0 && ev_cq == s->cq &&
            ev_ctx == s,
        "the event names the server CQ and its cq_context");
  ibv_ack_cq_events(ev_cq, 1);
  struct ibv_wc wc;
  probe_check(ibv_poll_cq(s->cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
            wc.opcode == IBV_WC_RECV && wc.wr_id == 1 && wc.byte_len == 64,
        "the recv is on the CQ");

  /* Not re-armed: the next completion makes no event. */
  post_recv(s, 3);
  post_send(c, 4);
  int got = 0;
  for (int i = 0; i < 100000 && !got; i++) got = ibv_poll_cq(s->cq, 1, &wc);
  probe_check(got == 1 && wc.wr_id == 3, "the second recv completes");
  probe_check(!readable(s->ch->fd, 200), "without re-arming, no second event");

  probe_check(!readable(c->ctx->async_fd, 100), "no async event while all is well");

  struct ibv_sge sge = {(uintptr_t)c->buf, 8, c->mr->lkey};
  struct ibv_send_wr bad_op = {.wr_id = 9, .sg_list = &sge, .num_sge = 1,
                               .opcode = (enum ibv_wr_opcode)77};
  struct ibv_send_wr *bad = NULL;
  int rc = ibv_post_send(c->qp, &bad_op, &bad);
  probe_check(rc == EINVAL && bad == &bad_op,
        "a bad opcode fails with EINVAL and bad_wr set");

  ibv_destroy_qp(c->qp);
  ibv_destroy_qp(s->qp);
  probe_check(ibv_destroy_cq(s->cq) == 0, "the CQ is destroyed");
  probe_check(ibv_destroy_comp_channel(s->ch) == 0, "the channel is destroyed");
  int closed = ibv_destroy_cq(c->cq) == 0 &&
               ibv_destroy_comp_channel(c->ch) == 0;
  struct side *sides[2] = {c, s};
  for (int i = 0; i < 2; i++) {
    closed = closed && ibv_dereg_mr(sides[i]->mr) == 0 &&
             ibv_dealloc_pd(sides[i]->pd) == 0 &&
             ibv_close_device(sides[i]->ctx) == 0;
  }
  probe_check(closed, "every object is released and both devices close");
  ibv_free_device_list(list);
  printf("events_probe: %d failed\n", probe_failures());
  return probe_failures() ? 1 : 0;
}
