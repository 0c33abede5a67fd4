/* ordering_probe: the three classic ordering bugs of docs/ordering.md as a
 * verbs program would write them, on one device with two RC QPs connected
 * to each other (a loopback, as rxe0 in the guest has one device). One run
 * makes each observation once and prints one line per check:
 *
 *   reuse: original|overwritten|mixed         rule B1, source reused early
 *   reuse_after_completion: ...               the same, reused after
 *   flag: fresh|stale|partial                 rule W2, a polled flag
 *   flag_then_send: ...                       the data behind a receive
 *   flag_then_imm: ...                        ... a write with immediate
 *   read_then_write: old|new                  rule R3, an unfenced read
 *   read_then_write_fenced: old|new           ... with IBV_SEND_FENCE
 *
 * Which outcome shows depends on the device and, on the sim, on the seed
 * (VERBSIM_SEED); ordering_probe_test.sh runs it over many seeds.
 *
 * usage: ordering_probe [DEVICE [GID_INDEX]]
 *        ordering_probe --cm TARGET_IP SOURCE_IP
 *
 * With --cm the two QPs are on the devices of the two addresses, connected
 * through rdma_cm, as an iWARP device (siw) needs; on iWARP, which has no
 * immediate data, flag_then_imm prints "n/a". */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin/tests/probe_qp.h"

enum { kBig = 65536, kData = 4096, kSpins = 1000000 };

struct side {
  struct ibv_cq *cq;
  struct ibv_qp *qp;
};

static struct ibv_pd *apd, *bpd; /* one PD with a loopback */
static struct side a, b;          /* a posts, b is the target */
static int has_imm = 1;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;
static uint64_t next_id = 1;

/* A CQ and an RC QP on `pd`'s device; with `id`, the QP is the cm_id's. */
static struct side make_side(struct ibv_pd *pd, struct rdma_cm_id *id) {
  struct side s;
  s.cq = ibv_create_cq(pd->context, 64, NULL, NULL, 0);
  if (!s.cq) probe_die("ibv_create_cq");
  struct ibv_qp_init_attr init;
  memset(&init, 0, sizeof(init));
  init.send_cq = s.cq;
  init.recv_cq = s.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  if (id) {
    if (rdma_create_qp(id, pd, &init)) probe_die("rdma_create_qp");
    s.qp = id->qp;
  } else {
    s.qp = ibv_create_qp(pd, &init);
  }
  if (!s.qp) probe_die("ibv_create_qp");
  return s;
}

/* The next event on `ch`, which must be `type`. */
static struct rdma_cm_event *cm_event(struct rdma_event_channel *ch,
                                      enum rdma_cm_event_type type) {
  struct pollfd p = {.fd = ch->fd, .events = POLLIN};
  struct rdma_cm_event *e;
  if (poll(&p, 1, 10000) != 1) probe_die(rdma_event_str(type));
  if (rdma_get_cm_event(ch, &e)) probe_die("rdma_get_cm_event");
  if (e->event != type) {
    fprintf(stderr, "got %s, wanted %s\n", rdma_event_str(e->event),
            rdma_event_str(type));
    probe_die("an rdma_cm event");
  }
  return e;
}

static struct sockaddr_in ipv4(const char *ip, uint16_t port) {
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) probe_die(ip);
  return sa;
}

/* a on SOURCE_IP's device, b on TARGET_IP's, connected through rdma_cm. */
static void connect_cm(const char *target_ip, const char *source_ip) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *listener = NULL, *cid = NULL;
  if (!ch || rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) ||
      rdma_create_id(ch, &cid, NULL, RDMA_PS_TCP)) {
    probe_die("rdma_create_id");
  }
  struct sockaddr_in target = ipv4(target_ip, 0);
  if (rdma_bind_addr(listener, (struct sockaddr *)&target) ||
      rdma_listen(listener, 1)) {
    probe_die("rdma_listen");
  }
  target.sin_port = rdma_get_src_port(listener);
  struct sockaddr_in source = ipv4(source_ip, 0);
  if (rdma_resolve_addr(cid, (struct sockaddr *)&source,
                        (struct sockaddr *)&target, 2000)) {
    probe_die("rdma_resolve_addr");
  }
  rdma_ack_cm_event(cm_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
  if (rdma_resolve_route(cid, 2000)) probe_die("rdma_resolve_route");
  rdma_ack_cm_event(cm_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
  apd = ibv_alloc_pd(cid->verbs);
  if (!apd) probe_die("ibv_alloc_pd");
  a = make_side(apd, cid);
  struct rdma_conn_param param;
  memset(&param, 0, sizeof(param));
  param.initiator_depth = 1;
  param.responder_resources = 1;
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (rdma_connect(cid, &param)) probe_die("rdma_connect");
  struct rdma_cm_event *req = cm_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
  struct rdma_cm_id *sid = req->id;
  rdma_ack_cm_event(req);
  bpd = ibv_alloc_pd(sid->verbs);
  if (!bpd) probe_die("ibv_alloc_pd");
  b = make_side(bpd, sid);
  if (rdma_accept(sid, &param)) probe_die("rdma_accept");
  /* Both sides' ESTABLISHED, in either order. */
  for (int i = 0; i < 2; ++i) {
    rdma_ack_cm_event(cm_event(ch, RDMA_CM_EVENT_ESTABLISHED));
  }
  has_imm = cid->verbs->device->transport_type != IBV_TRANSPORT_IWARP;
}

/* Posts one WR from a; dies if the post fails. */
static void post(enum ibv_wr_opcode op, void *local, uint32_t len,
                 uint64_t remote, int flags, uint32_t imm) {
  struct ibv_sge sge = {(uintptr_t)local, len, amr->lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = next_id++;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED | flags;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = bmr->rkey;
  if (ibv_post_send(a.qp, &wr, &bad)) probe_die("ibv_post_send");
}

/* A receive on b for a send (or a write with immediate) from a. */
static void post_recv(void *at, uint32_t len) {
  struct ibv_sge sge = {(uintptr_t)at, len, bmr->lkey};
  struct ibv_recv_wr wr, *bad;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = next_id++;
  wr.sg_list = &sge;
  wr.num_sge = len ? 1 : 0;
  if (ibv_post_recv(b.qp, &wr, &bad)) probe_die("ibv_post_recv");
}

/* Polls `cq` until `n` completions came, each SUCCESS; dies otherwise. */
static void reap(struct ibv_cq *cq, int n) {
  struct ibv_wc wc;
  for (long spins = 0; n > 0; ++spins) {
    if (spins == kSpins) probe_die("no completion");
    int got = ibv_poll_cq(cq, 1, &wc);
    if (got < 0) probe_die("ibv_poll_cq");
    if (got == 1) {
      if (wc.status != IBV_WC_SUCCESS) {
        fprintf(stderr, "wr %llu: %s\n", (unsigned long long)wc.wr_id,
                ibv_wc_status_str(wc.status));
        probe_die("a completion failed");
      }
      --n;
    }
  }
}

/* "fresh" when every byte is `want`, "stale" when none is, else
 * "partial". */
static const char *seen(const uint8_t *p, size_t n, uint8_t want) {
  size_t hits = 0;
  for (size_t i = 0; i < n; ++i) hits += p[i] == want;
  return hits == n ? "fresh" : hits == 0 ? "stale" : "partial";
}

static const char *reuse_word(const uint8_t *p, size_t n) {
  const char *w = seen(p, n, 'o');
  return w[0] == 'f' ? "original" : w[0] == 's' ? "overwritten" : "mixed";
}

/* B1: the source overwritten right after the post (or after the
 * completion). */
static void reuse(int after_completion) {
  memset(abuf, 'o', kBig);
  memset(bbuf, 0, kBig);
  post(IBV_WR_RDMA_WRITE, abuf, kBig, (uintptr_t)bbuf, 0, 0);
  if (after_completion) reap(a.cq, 1);
  memset(abuf, 'n', kBig);
  if (!after_completion) reap(a.cq, 1);
  printf("%s: %s\n", after_completion ? "reuse_after_completion" : "reuse",
         reuse_word(bbuf, kBig));
}

/* W2: data, then a flag (a plain write, a send, or a write with
 * immediate); b's CPU waits for the flag, then reads the data. */
static void flag(const char *name, enum ibv_wr_opcode flag_op) {
  if (flag_op == IBV_WR_RDMA_WRITE_WITH_IMM && !has_imm) {
    printf("%s: n/a\n", name);
    return;
  }
  uint8_t *data = bbuf, *flag_at = bbuf + kData;
  memset(abuf, 'd', kData);
  abuf[kData] = 1;
  memset(bbuf, 0, kData + 8);
  if (flag_op != IBV_WR_RDMA_WRITE) {
    post_recv(flag_op == IBV_WR_SEND ? flag_at : NULL,
              flag_op == IBV_WR_SEND ? 8 : 0);
  }
  post(IBV_WR_RDMA_WRITE, abuf, kData, (uintptr_t)data, 0, 0);
  post(flag_op, abuf + kData, 1, (uintptr_t)flag_at, 0, 1);
  const char *result = NULL;
  struct ibv_wc wc;
  int a_done = 0;
  for (long spins = 0; !result; ++spins) {
    if (spins == kSpins) probe_die("the flag never came");
    if (flag_op == IBV_WR_RDMA_WRITE) {
      /* b's CPU polls memory; a's CQ is polled too, as a program waiting
       * for its completions would (on the sim, that moves time on). */
      if (ibv_poll_cq(a.cq, 1, &wc) == 1) ++a_done;
      if (*(volatile uint8_t *)flag_at == 1) result = seen(data, kData, 'd');
    } else if (ibv_poll_cq(b.cq, 1, &wc) == 1) {
      result = seen(data, kData, 'd');
    }
  }
  printf("%s: %s\n", name, result);
  reap(a.cq, 2 - a_done);
}

/* R3: a read of x, then a write to x, on the same QP. */
static void read_then_write(int fenced) {
  uint64_t *x = (uint64_t *)bbuf, *got = (uint64_t *)abuf,
           *one = (uint64_t *)(abuf + 64);
  *x = 0;
  *got = 7;
  *one = 1;
  post(IBV_WR_RDMA_READ, got, 8, (uintptr_t)x, 0, 0);
  post(IBV_WR_RDMA_WRITE, one, 8, (uintptr_t)x, fenced ? IBV_SEND_FENCE : 0,
       0);
  reap(a.cq, 2);
  printf("%s: %s\n", fenced ? "read_then_write_fenced" : "read_then_write",
         *got == 0 ? "old" : *got == 1 ? "new" : "garbage");
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int cm = argc > 1 && strcmp(argv[1], "--cm") == 0;
  if (cm && argc != 4) probe_die("usage: ordering_probe --cm TARGET_IP SOURCE_IP");
  abuf = aligned_alloc(4096, kBig);
  bbuf = aligned_alloc(4096, kBig);
  if (!abuf || !bbuf) probe_die("aligned_alloc");
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                     IBV_ACCESS_REMOTE_READ;
  struct ibv_context *ctx = NULL;
  if (cm) {
    connect_cm(argv[2], argv[3]);
  } else {
    const char *dev = argc > 1 ? argv[1] : NULL;
    const int gid_index = argc > 2 ? atoi(argv[2]) : 0;
    ctx = probe_open(dev);
    apd = bpd = ibv_alloc_pd(ctx);
    if (!apd) probe_die("ibv_alloc_pd");
    a = make_side(apd, NULL);
    b = make_side(bpd, NULL);
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, gid_index, &gid)) probe_die("ibv_query_gid");
    const char *failed = probe_connect_rc(a.qp, b.qp->qp_num, &gid, gid_index,
                                          access);
    if (!failed) {
      failed = probe_connect_rc(b.qp, a.qp->qp_num, &gid, gid_index, access);
    }
    if (failed) probe_die(failed);
  }
  amr = ibv_reg_mr(apd, abuf, kBig, access);
  bmr = ibv_reg_mr(bpd, bbuf, kBig, access);
  if (!amr || !bmr) probe_die("ibv_reg_mr");
  reuse(0);
  reuse(1);
  flag("flag", IBV_WR_RDMA_WRITE);
  flag("flag_then_send", IBV_WR_SEND);
  flag("flag_then_imm", IBV_WR_RDMA_WRITE_WITH_IMM);
  read_then_write(0);
  read_then_write(1);
  /* The process exits: the devices take the QPs and the connection down. */
  return 0;
}
