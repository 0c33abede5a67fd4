/* Many threads on one context, from a program built against the system's
 * libibverbs (run on the drop-in; under TSan in the test command too):
 *
 *   lifecycle  each thread, ITERS times: a CQ and two RC QPs connected to
 *              each other, an RDMA read between them, then all destroyed;
 *   srq        half the threads post receives to one SRQ while the others
 *              send on QPs whose receives come from it; every receive
 *              completes exactly once;
 *   poll       one thread polls a CQ that the send queues of the others
 *              complete on, while they post RDMA writes; every write
 *              completes once, in order per QP;
 *   destroy    a QP destroyed while two threads post receives to it:
 *              the destroy gets EBUSY while a post is inside the library,
 *              and every post after it ENOENT (ITERS / 10 rounds).
 *
 *   threads_probe [DEVICE [GID_INDEX [THREADS [ITERS]]]]   (8 and 1000)
 *
 * Prints "ok: SHAPE ..." or "FAIL: SHAPE: ..." per shape and
 * "threads_probe: N checks, F failed"; exits 1 when one failed, and 2 from
 * its own alarm when a shape hangs (a whole run has 300 s). */
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dropin/tests/probe_qp.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index;
static int nthreads = 8;
static int iters = 1000;
static int checks, failures;

static const int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_REMOTE_WRITE;

static void report(const char *shape, const char *error) {
  checks++;
  if (error == NULL) {
    printf("ok: %s\n", shape);
  } else {
    failures++;
    printf("FAIL: %s: %s\n", shape, error);
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "FAIL: threads_probe: a shape hung (300 s)\n";
  if (write(1, msg, sizeof(msg) - 1) < 0) _exit(3);
  _exit(2);
}

static struct ibv_qp *rc_qp(struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
                            struct ibv_srq *srq, int depth) {
  struct ibv_qp_init_attr a = {.send_cq = send_cq, .recv_cq = recv_cq,
                               .srq = srq, .qp_type = IBV_QPT_RC,
                               .cap = {.max_send_wr = depth,
                                       .max_recv_wr = srq ? 0 : depth,
                                       .max_send_sge = 1,
                                       .max_recv_sge = 1}};
  return ibv_create_qp(pd, &a);
}

/* Connects a and b to each other: NULL, or what failed. */
static const char *connect_pair(struct ibv_qp *a, struct ibv_qp *b) {
  const char *failed =
      probe_connect_rc(a, b->qp_num, &gid, gid_index, kAccess);
  if (failed) return failed;
  return probe_connect_rc(b, a->qp_num, &gid, gid_index, kAccess);
}

/* Polls `cq` for one completion, up to 20 s: 1 with *wc, or 0. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc) {
  const double deadline = now_s() + 20;
  for (;;) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n == 1) return 1;
    if (n < 0 || now_s() > deadline) return 0;
    sched_yield();
  }
}

/* --- lifecycle -------------------------------------------------------- */

struct lifecycle_arg {
  int index;
  char error[160];
};

static void *lifecycle(void *p) {
  struct lifecycle_arg *arg = p;
  char *buf = aligned_alloc(4096, 8192);
  struct ibv_mr *mr = buf ? ibv_reg_mr(pd, buf, 8192, kAccess) : NULL;
  if (!mr) {
    snprintf(arg->error, sizeof(arg->error), "thread %d: ibv_reg_mr errno %d",
             arg->index, errno);
    free(buf);
    return NULL;
  }
  for (int i = 0; i < iters && !arg->error[0]; i++) {
    struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
    struct ibv_qp *a = cq ? rc_qp(cq, cq, NULL, 4) : NULL;
    struct ibv_qp *b = cq ? rc_qp(cq, cq, NULL, 4) : NULL;
    const char *failed = (!cq || !a || !b) ? "create" : connect_pair(a, b);
    if (!failed) {
      uint64_t value = ((uint64_t)arg->index << 32) | (uint64_t)i;
      memcpy(buf + 4096, &value, 8);
      memset(buf, 0, 8);
      struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 8,
                            .lkey = mr->lkey};
      struct ibv_send_wr wr = {.wr_id = value, .sg_list = &sge, .num_sge = 1,
                               .opcode = IBV_WR_RDMA_READ,
                               .send_flags = IBV_SEND_SIGNALED};
      wr.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
      wr.wr.rdma.rkey = mr->rkey;
      struct ibv_send_wr *bad;
      struct ibv_wc wc;
      if (ibv_post_send(a, &wr, &bad)) {
        failed = "post";
      } else if (!poll_one(cq, &wc)) {
        failed = "no completion in 20 s";
      } else if (wc.status != IBV_WC_SUCCESS || wc.wr_id != value ||
                 memcmp(buf, &value, 8) != 0) {
        failed = "a wrong completion or wrong data";
      }
    }
    if (failed) {
      snprintf(arg->error, sizeof(arg->error),
               "thread %d iteration %d: %s (errno %d)", arg->index, i, failed,
               errno);
    }
    if (a && ibv_destroy_qp(a)) failed = "destroy";
    if (b && ibv_destroy_qp(b)) failed = "destroy";
    if (cq && ibv_destroy_cq(cq)) failed = "destroy";
    if (failed && !arg->error[0]) {
      snprintf(arg->error, sizeof(arg->error), "thread %d iteration %d: %s",
               arg->index, i, failed);
    }
  }
  ibv_dereg_mr(mr);
  free(buf);
  return NULL;
}

static void run_lifecycle(void) {
  struct lifecycle_arg args[64];
  pthread_t t[64];
  const double start = now_s();
  for (int i = 0; i < nthreads; i++) {
    memset(&args[i], 0, sizeof(args[i]));
    args[i].index = i;
    pthread_create(&t[i], NULL, lifecycle, &args[i]);
  }
  const char *error = NULL;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(t[i], NULL);
    if (args[i].error[0] && !error) error = args[i].error;
  }
  char what[96];
  snprintf(what, sizeof(what), "lifecycle: %d threads x %d in %.1f s",
           nthreads, iters, now_s() - start);
  report(what, error);
}

/* --- srq ---------------------------------------------------------------- */

enum { kSrqDepth = 64, kSendDepth = 16 };

static struct {
  struct ibv_srq *srq;
  struct ibv_cq *recv_cq;
  struct ibv_mr *mr;
  char *buf;
  _Atomic int received;      /* receive completions polled */
  _Atomic int recv_errors;
  _Atomic int senders_done;
  _Atomic unsigned char *seen;  /* per receive wr_id: completions seen */
  int total;
} srq_shape;

struct srq_arg {
  int index;
  int count;  /* receives to post, or messages to send */
  struct ibv_qp *sender, *receiver;
  struct ibv_cq *send_cq;
  char error[160];
};

/* Takes what the shared receive CQ has; counts each receive. */
static void drain_recv_cq(void) {
  struct ibv_wc wc[16];
  int n = ibv_poll_cq(srq_shape.recv_cq, 16, wc);
  for (int i = 0; i < n; i++) {
    if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id >= (uint64_t)srq_shape.total)
      atomic_fetch_add(&srq_shape.recv_errors, 1);
    else
      atomic_fetch_add(&srq_shape.seen[wc[i].wr_id], 1);
  }
  if (n > 0) atomic_fetch_add(&srq_shape.received, n);
}

static void *srq_poster(void *p) {
  struct srq_arg *arg = p;
  const double deadline = now_s() + 120;
  for (int i = 0; i < arg->count; i++) {
    const uint64_t id = (uint64_t)arg->index * arg->count + i;
    struct ibv_sge sge = {.addr = (uintptr_t)srq_shape.buf + (id % 64) * 64,
                          .length = 64, .lkey = srq_shape.mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad;
    int rc;
    while ((rc = ibv_post_srq_recv(srq_shape.srq, &wr, &bad)) == ENOMEM) {
      drain_recv_cq();  /* full: take completions, which the sends free */
      if (now_s() > deadline) break;
      sched_yield();
    }
    if (rc) {
      snprintf(arg->error, sizeof(arg->error),
               "poster %d: ibv_post_srq_recv %d at %d", arg->index, rc, i);
      return NULL;
    }
    drain_recv_cq();
  }
  return NULL;
}

static void *srq_sender(void *p) {
  struct srq_arg *arg = p;
  int outstanding = 0, completed = 0;
  struct ibv_sge sge = {.addr = (uintptr_t)srq_shape.buf + 4096 + arg->index * 64,
                        .length = 16, .lkey = srq_shape.mr->lkey};
  for (int i = 0; i < arg->count || outstanding > 0;) {
    if (i < arg->count && outstanding < kSendDepth) {
      struct ibv_send_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge,
                               .num_sge = 1, .opcode = IBV_WR_SEND,
                               .send_flags = IBV_SEND_SIGNALED};
      struct ibv_send_wr *bad;
      if (ibv_post_send(arg->sender, &wr, &bad)) {
        snprintf(arg->error, sizeof(arg->error), "sender %d: post at %d",
                 arg->index, i);
        break;
      }
      i++;
      outstanding++;
      continue;
    }
    struct ibv_wc wc;
    if (!poll_one(arg->send_cq, &wc)) {
      snprintf(arg->error, sizeof(arg->error),
               "sender %d: no send completion in 20 s after %d", arg->index,
               completed);
      break;
    }
    if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)completed) {
      snprintf(arg->error, sizeof(arg->error),
               "sender %d: completion %d has status %d, wr_id %llu",
               arg->index, completed, wc.status,
               (unsigned long long)wc.wr_id);
      break;
    }
    completed++;
    outstanding--;
  }
  atomic_fetch_add(&srq_shape.senders_done, 1);
  return NULL;
}

static void run_srq(void) {
  const int posters = nthreads / 2, senders = nthreads - posters;
  if (posters < 1) {
    report("srq", "needs 2 threads at least");
    return;
  }
  /* Every receive a poster posts is consumed by a send: the senders send
   * as many messages in all as the posters post. */
  const int per_sender = posters * iters / senders;
  const int total = posters * iters;
  struct ibv_srq_init_attr sa = {.attr = {.max_wr = kSrqDepth, .max_sge = 1}};
  srq_shape.srq = ibv_create_srq(pd, &sa);
  srq_shape.recv_cq = ibv_create_cq(ctx, total + 16, NULL, NULL, 0);
  srq_shape.buf = aligned_alloc(4096, 8192);
  srq_shape.mr = ibv_reg_mr(pd, srq_shape.buf, 8192, kAccess);
  srq_shape.seen = calloc(total, 1);
  srq_shape.total = total;
  if (!srq_shape.srq || !srq_shape.recv_cq || !srq_shape.mr || !srq_shape.seen)
    probe_die("srq set-up");
  struct srq_arg args[64];
  pthread_t t[64];
  memset(args, 0, sizeof(args));
  for (int i = 0; i < senders; i++) {
    struct srq_arg *s = &args[posters + i];
    s->index = i;
    s->send_cq = ibv_create_cq(ctx, 2 * kSendDepth, NULL, NULL, 0);
    s->sender = rc_qp(s->send_cq, s->send_cq, NULL, kSendDepth);
    s->receiver = rc_qp(s->send_cq, srq_shape.recv_cq, srq_shape.srq,
                        kSendDepth);
    if (!s->send_cq || !s->sender || !s->receiver ||
        connect_pair(s->sender, s->receiver))
      probe_die("srq pairs");
  }
  const double start = now_s();
  for (int i = 0; i < senders; i++) {
    args[posters + i].count = per_sender;
    pthread_create(&t[posters + i], NULL, srq_sender, &args[posters + i]);
  }
  for (int i = 0; i < posters; i++) {
    args[i].index = i;
    args[i].count = iters;
    pthread_create(&t[i], NULL, srq_poster, &args[i]);
  }
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  const double deadline = now_s() + 20;
  while (atomic_load(&srq_shape.received) < total && now_s() < deadline) {
    drain_recv_cq();
    sched_yield();
  }
  const char *error = NULL;
  static char why[200];
  for (int i = 0; i < nthreads && !error; i++)
    if (args[i].error[0]) error = args[i].error;
  int missing = 0, doubled = 0;
  for (int i = 0; i < total; i++) {
    if (srq_shape.seen[i] == 0) missing++;
    if (srq_shape.seen[i] > 1) doubled++;
  }
  if (!error && (missing || doubled || atomic_load(&srq_shape.recv_errors))) {
    snprintf(why, sizeof(why),
             "of %d receives %d never completed, %d completed twice, %d "
             "completed in error",
             total, missing, doubled, atomic_load(&srq_shape.recv_errors));
    error = why;
  }
  char what[128];
  snprintf(what, sizeof(what),
           "srq: %d posters x %d receives, %d senders in %.1f s", posters,
           iters, senders, now_s() - start);
  report(what, error);
  for (int i = 0; i < senders; i++) {
    ibv_destroy_qp(args[posters + i].sender);
    ibv_destroy_qp(args[posters + i].receiver);
    ibv_destroy_cq(args[posters + i].send_cq);
  }
  ibv_destroy_srq(srq_shape.srq);
  ibv_destroy_cq(srq_shape.recv_cq);
  ibv_dereg_mr(srq_shape.mr);
  free(srq_shape.buf);
  free(srq_shape.seen);
}

/* --- poll --------------------------------------------------------------- */

enum { kPollDepth = 32 };

static struct {
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  char *buf;
  struct ibv_qp *qp[64], *peer[64];
  _Atomic int outstanding[64];
  int next_expected[64];  /* the poller's alone */
  _Atomic int stop;
} poll_shape;

struct poll_arg {
  int index;
  char error[160];
};

static void *poll_poster(void *p) {
  struct poll_arg *arg = p;
  const int q = arg->index;
  struct ibv_sge sge = {.addr = (uintptr_t)poll_shape.buf + q * 64,
                        .length = 8, .lkey = poll_shape.mr->lkey};
  const double deadline = now_s() + 120;
  for (int i = 0; i < iters; i++) {
    while (atomic_load(&poll_shape.outstanding[q]) >= kPollDepth) {
      if (now_s() > deadline || atomic_load(&poll_shape.stop)) {
        snprintf(arg->error, sizeof(arg->error),
                 "poster %d: the queue never drained (at %d)", q, i);
        return NULL;
      }
      sched_yield();
    }
    struct ibv_send_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge,
                             .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = (uintptr_t)poll_shape.buf + 4096 + q * 64;
    wr.wr.rdma.rkey = poll_shape.mr->rkey;
    struct ibv_send_wr *bad;
    atomic_fetch_add(&poll_shape.outstanding[q], 1);
    int rc = ibv_post_send(poll_shape.qp[q], &wr, &bad);
    if (rc) {
      snprintf(arg->error, sizeof(arg->error), "poster %d: post %d at %d", q,
               rc, i);
      return NULL;
    }
  }
  return NULL;
}

static void run_poll(void) {
  const int posters = nthreads - 1;
  if (posters < 1) {
    report("poll", "needs 2 threads at least");
    return;
  }
  const int total = posters * iters;
  poll_shape.cq = ibv_create_cq(ctx, posters * kPollDepth + 16, NULL, NULL, 0);
  struct ibv_cq *peer_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  poll_shape.buf = aligned_alloc(4096, 8192);
  poll_shape.mr = ibv_reg_mr(pd, poll_shape.buf, 8192, kAccess);
  if (!poll_shape.cq || !peer_cq || !poll_shape.mr) probe_die("poll set-up");
  for (int q = 0; q < posters; q++) {
    poll_shape.qp[q] = rc_qp(poll_shape.cq, poll_shape.cq, NULL, kPollDepth);
    poll_shape.peer[q] = rc_qp(peer_cq, peer_cq, NULL, 4);
    if (!poll_shape.qp[q] || !poll_shape.peer[q] ||
        connect_pair(poll_shape.qp[q], poll_shape.peer[q]))
      probe_die("poll pairs");
  }
  struct poll_arg args[64];
  pthread_t t[64];
  memset(args, 0, sizeof(args));
  const double start = now_s();
  for (int q = 0; q < posters; q++) {
    args[q].index = q;
    pthread_create(&t[q], NULL, poll_poster, &args[q]);
  }
  /* This thread is the poller. */
  int polled = 0;
  static char why[200];
  const char *error = NULL;
  const double deadline = now_s() + 120;
  while (polled < total && !error) {
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(poll_shape.cq, 16, wc);
    if (n < 0) {
      error = "ibv_poll_cq failed";
      break;
    }
    for (int i = 0; i < n && !error; i++) {
      int q = -1;
      for (int k = 0; k < posters; k++)
        if (poll_shape.qp[k]->qp_num == wc[i].qp_num) q = k;
      if (q < 0 || wc[i].status != IBV_WC_SUCCESS ||
          wc[i].wr_id != (uint64_t)poll_shape.next_expected[q]) {
        snprintf(why, sizeof(why),
                 "completion of qp %u: status %d, wr_id %llu, want %d",
                 wc[i].qp_num, wc[i].status, (unsigned long long)wc[i].wr_id,
                 q < 0 ? -1 : poll_shape.next_expected[q]);
        error = why;
        break;
      }
      poll_shape.next_expected[q]++;
      atomic_fetch_sub(&poll_shape.outstanding[q], 1);
    }
    polled += n;
    if (n == 0 && now_s() > deadline) {
      snprintf(why, sizeof(why), "%d of %d completions in 120 s", polled,
               total);
      error = why;
    }
  }
  atomic_store(&poll_shape.stop, 1);
  for (int q = 0; q < posters; q++) {
    pthread_join(t[q], NULL);
    if (args[q].error[0] && !error) error = args[q].error;
  }
  char what[128];
  snprintf(what, sizeof(what), "poll: 1 poller, %d posters x %d in %.1f s",
           posters, iters, now_s() - start);
  report(what, error);
  for (int q = 0; q < posters; q++) {
    ibv_destroy_qp(poll_shape.qp[q]);
    ibv_destroy_qp(poll_shape.peer[q]);
  }
  ibv_destroy_cq(poll_shape.cq);
  ibv_destroy_cq(peer_cq);
  ibv_dereg_mr(poll_shape.mr);
  free(poll_shape.buf);
}

/* --- destroy ------------------------------------------------------------ */

static struct {
  struct ibv_qp *qp;
  struct ibv_mr *mr;
  _Atomic int destroyed;
} race;

struct race_arg {
  int after_destroy;  /* posts after the destroy returned: all ENOENT */
  int unexpected;     /* an answer outside {0, ENOMEM, EBUSY, ENOENT} */
};

static void *race_poster(void *p) {
  struct race_arg *arg = p;
  struct ibv_sge sge = {.addr = (uintptr_t)race.mr->addr, .length = 8,
                        .lkey = race.mr->lkey};
  for (;;) {
    const int destroyed = atomic_load(&race.destroyed);
    struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad;
    int rc = ibv_post_recv(race.qp, &wr, &bad);
    if (rc != 0 && rc != ENOMEM && rc != EBUSY && rc != ENOENT)
      arg->unexpected = rc;
    if (destroyed) {
      if (rc != ENOENT) arg->unexpected = rc;
      if (++arg->after_destroy >= 3) return NULL;
    }
    sched_yield();
  }
}

static void run_destroy(void) {
  const int rounds = iters / 10 > 0 ? iters / 10 : 1;
  /* Two posters: a destroy is refused while any post is inside, so more
   * threads spinning on the QP could keep it refused indefinitely (as the
   * kernel would). */
  const int posters = 2;
  char *buf = aligned_alloc(4096, 4096);
  race.mr = ibv_reg_mr(pd, buf, 4096, kAccess);
  struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  if (!race.mr || !cq) probe_die("destroy set-up");
  const double start = now_s();
  const char *error = NULL;
  static char why[160];
  int busy = 0;
  for (int r = 0; r < rounds && !error; r++) {
    race.qp = rc_qp(cq, cq, NULL, 16);
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
    if (!race.qp || ibv_modify_qp(race.qp, &a, IBV_QP_STATE |
                                                   IBV_QP_PKEY_INDEX |
                                                   IBV_QP_PORT |
                                                   IBV_QP_ACCESS_FLAGS))
      probe_die("a QP in INIT");
    atomic_store(&race.destroyed, 0);
    struct race_arg args[64];
    pthread_t t[64];
    memset(args, 0, sizeof(args));
    for (int i = 0; i < posters; i++)
      pthread_create(&t[i], NULL, race_poster, &args[i]);
    sched_yield();
    int rc;
    while ((rc = ibv_destroy_qp(race.qp)) == EBUSY) {
      busy++;
      sched_yield();
    }
    if (rc) {
      snprintf(why, sizeof(why), "round %d: ibv_destroy_qp %d", r, rc);
      error = why;
    }
    atomic_store(&race.destroyed, 1);
    for (int i = 0; i < posters; i++) {
      pthread_join(t[i], NULL);
      if (args[i].unexpected && !error) {
        snprintf(why, sizeof(why), "round %d: a post answered %d", r,
                 args[i].unexpected);
        error = why;
      }
    }
  }
  char what[128];
  snprintf(what, sizeof(what),
           "destroy: %d rounds, %d posters, %d EBUSY in %.1f s", rounds,
           posters, busy, now_s() - start);
  report(what, error);
  ibv_destroy_cq(cq);
  ibv_dereg_mr(race.mr);
  free(buf);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, on_alarm);
  alarm(300);
  ctx = probe_open(argc > 1 ? argv[1] : NULL);
  gid_index = argc > 2 ? atoi(argv[2]) : 0;
  if (argc > 3) nthreads = atoi(argv[3]);
  if (argc > 4) iters = atoi(argv[4]);
  if (nthreads < 2 || nthreads > 64 || iters < 1) probe_die("THREADS 2..64, ITERS >= 1");
  if (ibv_query_gid(ctx, 1, gid_index, &gid)) probe_die("ibv_query_gid");
  pd = ibv_alloc_pd(ctx);
  if (!pd) probe_die("ibv_alloc_pd");
  run_lifecycle();
  run_srq();
  run_poll();
  run_destroy();
  if (ibv_dealloc_pd(pd)) report("teardown", "ibv_dealloc_pd failed");
  printf("threads_probe: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
