/* A plain C program on libibverbs that checks its own recovery from a lost
 * packet: an RC send from device 0 to device 1, with the first SEND packet
 * dropped on the wire. On verbsim (`verbsim exec ./retransmit`) the fault
 * comes from the control API and the QP's counters show the retransmission;
 * on real devices the program finds no control API and just sends.
 *
 *   retransmit [DEVICE_A DEVICE_B]   (default: the first two devices)
 *
 * Exits 0 when the message arrived intact (and, on verbsim, was sent
 * twice), 1 otherwise. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <verbsim/control.h>

#include "rc_connect.h"

struct side {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct ibv_mr *mr;
  union ibv_gid gid;
  char buf[256];
};

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void open_side(struct side *s, struct ibv_device *dev) {
  s->ctx = ibv_open_device(dev);
  if (!s->ctx) die("ibv_open_device");
  s->pd = ibv_alloc_pd(s->ctx);
  s->cq = ibv_create_cq(s->ctx, 8, NULL, NULL, 0);
  s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf), IBV_ACCESS_LOCAL_WRITE);
  struct ibv_qp_init_attr a = {.send_cq = s->cq, .recv_cq = s->cq,
                               .qp_type = IBV_QPT_RC,
                               .cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                       .max_send_sge = 1, .max_recv_sge = 1}};
  s->qp = s->pd && s->cq ? ibv_create_qp(s->pd, &a) : NULL;
  if (!s->mr || !s->qp) die("set-up");
  if (ibv_query_gid(s->ctx, 1, 0, &s->gid)) die("ibv_query_gid");
}

/* RESET -> INIT -> RTR -> RTS toward `peer`. */
static void connect_to(struct side *s, const struct side *peer) {
  const char *failed = rc_connect(s->qp, peer->qp->qp_num, &peer->gid, 0);
  if (failed) die(failed);
}

/* One completion from `cq` within 10 seconds. */
static int wait_one(struct ibv_cq *cq, struct ibv_wc *wc) {
  time_t end = time(NULL) + 10;
  while (time(NULL) < end) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n != 0) return n == 1;
  }
  return 0;
}

static struct ibv_device *find(struct ibv_device **list, int n,
                               const char *name, int index) {
  for (int i = 0; i < n; i++)
    if (name ? !strcmp(ibv_get_device_name(list[i]), name) : i == index)
      return list[i];
  fprintf(stderr, "no device %s\n", name ? name : "(by index)");
  exit(1);
}

int main(int argc, char **argv) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < (argc > 2 ? 1 : 2)) die("two RDMA devices");
  static struct side a, b;
  open_side(&a, find(list, n, argc > 2 ? argv[1] : NULL, 0));
  open_side(&b, find(list, n, argc > 2 ? argv[2] : NULL, 1));
  connect_to(&a, &b);
  connect_to(&b, &a);

  struct verbsim_control vc;
  const int on_verbsim = verbsim_control_open(&vc);
  if (on_verbsim) {
    /* The first SEND packet on the wire is lost: the sender's ACK timer
     * must fire and the message go again. */
    int err = vc.add_faults("drop op=SEND_ONLY nth=1");
    if (err) {
      fprintf(stderr, "verbsim_add_faults: %s\n", strerror(err));
      return 1;
    }
  } else {
    printf("not on verbsim: no fault is injected\n");
  }

  struct ibv_sge rsge = {.addr = (uintptr_t)b.buf, .length = 64,
                         .lkey = b.mr->lkey};
  struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rsge, .num_sge = 1};
  struct ibv_recv_wr *rbad;
  if (ibv_post_recv(b.qp, &rwr, &rbad)) die("ibv_post_recv");
  strcpy(a.buf, "across a lossy link");
  struct ibv_sge ssge = {.addr = (uintptr_t)a.buf, .length = 20,
                         .lkey = a.mr->lkey};
  struct ibv_send_wr swr = {.wr_id = 2, .sg_list = &ssge, .num_sge = 1,
                            .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED};
  struct ibv_send_wr *sbad;
  if (ibv_post_send(a.qp, &swr, &sbad)) die("ibv_post_send");

  struct ibv_wc wc;
  if (!wait_one(a.cq, &wc) || wc.status != IBV_WC_SUCCESS) {
    fprintf(stderr, "send: %s\n", ibv_wc_status_str(wc.status));
    return 1;
  }
  if (!wait_one(b.cq, &wc) || wc.status != IBV_WC_SUCCESS ||
      strcmp(b.buf, "across a lossy link") != 0) {
    fprintf(stderr, "receive: no intact message\n");
    return 1;
  }
  printf("received: %s\n", b.buf);
  if (on_verbsim) {
    struct verbsim_qp_counters c;
    if (vc.query_qp_counters(a.qp, &c)) die("verbsim_query_qp_counters");
    printf("retransmissions: %llu, timeouts: %llu\n",
           (unsigned long long)c.retransmissions,
           (unsigned long long)c.timeouts);
    if (c.retransmissions < 1 || c.timeouts < 1) {
      fprintf(stderr, "the lost packet was not sent again\n");
      return 1;
    }
  }
  ibv_destroy_qp(a.qp);
  ibv_destroy_qp(b.qp);
  ibv_free_device_list(list);
  return 0;
}
