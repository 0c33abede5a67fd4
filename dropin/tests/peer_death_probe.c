/* One side of an rdma_cm connection whose peer process is killed (SIGKILL)
 * mid-transfer. Two processes, one sim fabric (VERBSIM_UDP): the server on
 * node 0 (127.0.1.1) listens and receives, the client on node 1 connects and
 * sends a stream of messages. peer_death_test.sh starts both, waits for the
 * victim's "streaming" line and kills it.
 *
 *   peer_death_probe server|client PORT victim|survivor
 *
 * A victim streams until it is killed. A survivor checks what the kernel's
 * CM gives when the peer's process dies (its cm_id is destroyed with the
 * process, which sends a DREQ): an RDMA_CM_EVENT_DISCONNECTED; then, as
 * rping does, it calls rdma_disconnect, which moves its QP to ERR, and every
 * WR still queued completes: the client's sends as SUCCESS, then at most one
 * RETRY_EXC_ERR, then WR_FLUSH_ERR; the server's receives as WR_FLUSH_ERR.
 * Then it destroys everything. Prints "ok <what>" per check, exits 1 at the
 * first failure and never waits more than 20 s for anything. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define CHECK(cond, ...)                                             \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "FAIL (line %d, errno %d): ", __LINE__, errno); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fprintf(stderr, "\n");                                         \
      exit(1);                                                       \
    }                                                                \
  } while (0)

enum { kDepth = 8, kMsg = 4096, kStreamingAfter = 16, kWaitMs = 20000 };

static char bufs[kDepth][kMsg];

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The next event on `ch` within kWaitMs, which must be `type`. */
static void expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
                         struct rdma_cm_id **id_out) {
  struct pollfd p = {.fd = ch->fd, .events = POLLIN};
  CHECK(poll(&p, 1, kWaitMs) == 1, "no event within %d ms, wanted %s", kWaitMs,
        rdma_event_str(type));
  struct rdma_cm_event *e;
  CHECK(rdma_get_cm_event(ch, &e) == 0, "rdma_get_cm_event");
  CHECK(e->event == type, "got %s (status %d), wanted %s", rdma_event_str(e->event),
        e->status, rdma_event_str(type));
  if (id_out != NULL) *id_out = e->id;
  rdma_ack_cm_event(e);
}

static struct sockaddr_in addr(const char *ip, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

static void make_qp(struct rdma_cm_id *id) {
  struct ibv_qp_init_attr attr = {.cap = {.max_send_wr = kDepth, .max_recv_wr = kDepth,
                                          .max_send_sge = 1, .max_recv_sge = 1},
                                  .qp_type = IBV_QPT_RC, .sq_sig_all = 1};
  CHECK(rdma_create_qp(id, NULL, &attr) == 0, "rdma_create_qp");
}

/* Whether the channel has an event ready now. */
static int event_ready(struct rdma_event_channel *ch) {
  struct pollfd p = {.fd = ch->fd, .events = POLLIN};
  return poll(&p, 1, 0) == 1;
}

static void announce_streaming(void) {
  printf("streaming\n");
  fflush(stdout);
}

/* The client: sends kMsg-byte messages, kDepth outstanding, re-posting each
 * completed one. A victim never stops; a survivor stops at DISCONNECTED. */
static void run_client(struct rdma_event_channel *ch, struct rdma_cm_id *id,
                       struct ibv_mr *mr, int victim) {
  uint64_t posted = 0, completed = 0;
  for (; posted < kDepth; ++posted) {
    CHECK(rdma_post_send(id, (void *)posted, bufs[posted % kDepth], kMsg, mr, 0) == 0,
          "rdma_post_send %lu", (unsigned long)posted);
  }
  int announced = 0, retry_errors = 0, flushed = 0;
  const double start = now_ms();
  for (;;) {
    struct ibv_wc wc;
    int n = ibv_poll_cq(id->send_cq, 1, &wc);
    CHECK(n >= 0, "ibv_poll_cq");
    if (n == 1) {
      CHECK(wc.wr_id == completed, "completion of wr %lu, expected %lu",
            (unsigned long)wc.wr_id, (unsigned long)completed);
      ++completed;
      if (wc.status != IBV_WC_SUCCESS) {
        CHECK(!victim, "victim: send %lu ended %s", (unsigned long)wc.wr_id,
              ibv_wc_status_str(wc.status));
        CHECK(wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_WR_FLUSH_ERR,
              "send %lu ended %s", (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status));
        if (wc.status == IBV_WC_RETRY_EXC_ERR) ++retry_errors; else ++flushed;
        break;  /* the peer is gone; the rest is checked below */
      }
      if (!announced && completed >= kStreamingAfter) {
        announce_streaming();
        announced = 1;
      }
      CHECK(rdma_post_send(id, (void *)posted, bufs[posted % kDepth], kMsg, mr, 0) == 0,
            "rdma_post_send %lu", (unsigned long)posted);
      ++posted;
      continue;
    }
    if (!victim && event_ready(ch)) break;
    CHECK(now_ms() - start < 60000, "no end after 60 s: %lu sent", (unsigned long)completed);
  }
  /* The survivor: DISCONNECTED comes (now or already), then everything
   * queued completes. A RETRY_EXC_ERR, when the ACK timer gave up before the
   * disconnect, comes first and once. */
  expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
  printf("ok DISCONNECTED after %lu sends completed\n", (unsigned long)completed);
  CHECK(rdma_disconnect(id) == 0, "rdma_disconnect");
  const double until = now_ms() + kWaitMs;
  while (completed < posted) {
    struct ibv_wc wc;
    int n = ibv_poll_cq(id->send_cq, 1, &wc);
    CHECK(n >= 0, "ibv_poll_cq");
    CHECK(now_ms() < until, "%lu of %lu sends never completed", (unsigned long)(posted - completed),
          (unsigned long)posted);
    if (n == 0) continue;
    CHECK(wc.wr_id == completed, "completion of wr %lu, expected %lu",
          (unsigned long)wc.wr_id, (unsigned long)completed);
    ++completed;
    if (wc.status == IBV_WC_RETRY_EXC_ERR) {
      CHECK(retry_errors == 0 && flushed == 0, "RETRY_EXC_ERR after a flush or twice");
      ++retry_errors;
    } else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
      ++flushed;
    } else {
      CHECK(wc.status == IBV_WC_SUCCESS && retry_errors == 0 && flushed == 0,
            "send %lu ended %s after an error", (unsigned long)wc.wr_id,
            ibv_wc_status_str(wc.status));
    }
  }
  printf("ok every send completed: %d retry-exceeded, %d flushed\n", retry_errors, flushed);
}

/* The server: keeps kDepth receives posted. A victim never stops; a
 * survivor stops at DISCONNECTED and checks its receives flush. */
static void run_server(struct rdma_event_channel *ch, struct rdma_cm_id *id,
                       struct ibv_mr *mr, int victim, uint64_t posted) {
  uint64_t completed = 0;
  const double start = now_ms();
  int announced = 0;
  for (;;) {
    struct ibv_wc wc;
    int n = ibv_poll_cq(id->recv_cq, 1, &wc);
    CHECK(n >= 0, "ibv_poll_cq");
    if (n == 1) {
      CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == kMsg,
            "receive %lu: %s, %u bytes", (unsigned long)wc.wr_id,
            ibv_wc_status_str(wc.status), wc.byte_len);
      CHECK(wc.wr_id == completed, "receive %lu, expected %lu", (unsigned long)wc.wr_id,
            (unsigned long)completed);
      ++completed;
      if (!announced && completed >= kStreamingAfter) {
        announce_streaming();
        announced = 1;
      }
      CHECK(rdma_post_recv(id, (void *)posted, bufs[posted % kDepth], kMsg, mr) == 0,
            "rdma_post_recv");
      ++posted;
      continue;
    }
    if (!victim && event_ready(ch)) break;
    CHECK(now_ms() - start < 60000, "no end after 60 s: %lu received", (unsigned long)completed);
  }
  expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
  printf("ok DISCONNECTED after %lu receives\n", (unsigned long)completed);
  /* A message the dead client was sending may still complete before the
   * disconnect stops the QP; every one after it is flushed. */
  CHECK(rdma_disconnect(id) == 0, "rdma_disconnect");
  const double until = now_ms() + kWaitMs;
  int flushed = 0;
  while (completed < posted) {
    struct ibv_wc wc;
    int n = ibv_poll_cq(id->recv_cq, 1, &wc);
    CHECK(n >= 0, "ibv_poll_cq");
    CHECK(now_ms() < until, "%lu receives never completed", (unsigned long)(posted - completed));
    if (n == 0) continue;
    CHECK(wc.wr_id == completed, "receive %lu, expected %lu", (unsigned long)wc.wr_id,
          (unsigned long)completed);
    ++completed;
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
      ++flushed;
    } else {
      CHECK(wc.status == IBV_WC_SUCCESS && flushed == 0, "receive %lu ended %s",
            (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status));
    }
  }
  printf("ok every receive completed: %d flushed\n", flushed);
}

int main(int argc, char **argv) {
  CHECK(argc == 4, "usage: %s server|client PORT victim|survivor", argv[0]);
  const int server = strcmp(argv[1], "server") == 0;
  const int port = atoi(argv[2]);
  const int victim = strcmp(argv[3], "victim") == 0;
  struct rdma_event_channel *ch = rdma_create_event_channel();
  CHECK(ch != NULL, "rdma_create_event_channel");
  struct rdma_cm_id *id = NULL, *listen_id = NULL;
  struct ibv_mr *mr = NULL;
  uint64_t posted = 0;
  if (server) {
    struct sockaddr_in a = addr("127.0.1.1", port);
    CHECK(rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
    CHECK(rdma_bind_addr(listen_id, (struct sockaddr *)&a) == 0, "rdma_bind_addr");
    CHECK(rdma_listen(listen_id, 1) == 0, "rdma_listen");
    printf("listening\n");
    fflush(stdout);
    expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &id);
    make_qp(id);
    mr = rdma_reg_msgs(id, bufs, sizeof(bufs));
    CHECK(mr != NULL, "rdma_reg_msgs");
    for (; posted < kDepth; ++posted) {
      CHECK(rdma_post_recv(id, (void *)posted, bufs[posted], kMsg, mr) == 0, "rdma_post_recv");
    }
    struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
                                .retry_count = 7, .rnr_retry_count = 7};
    CHECK(rdma_accept(id, &p) == 0, "rdma_accept");
    expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, NULL);
    printf("ok ESTABLISHED\n");
    run_server(ch, id, mr, victim, posted);
  } else {
    struct sockaddr_in dst = addr("127.0.1.1", port), src = addr("127.0.1.2", 0);
    CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
    CHECK(rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000) == 0,
          "rdma_resolve_addr");
    expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
    CHECK(rdma_resolve_route(id, 2000) == 0, "rdma_resolve_route");
    expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
    make_qp(id);
    mr = rdma_reg_msgs(id, bufs, sizeof(bufs));
    CHECK(mr != NULL, "rdma_reg_msgs");
    struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
                                .retry_count = 7, .rnr_retry_count = 7};
    CHECK(rdma_connect(id, &p) == 0, "rdma_connect");
    expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, NULL);
    printf("ok ESTABLISHED\n");
    run_client(ch, id, mr, victim);
  }
  /* The survivor's objects are destroyed without error. */
  CHECK(rdma_dereg_mr(mr) == 0, "rdma_dereg_mr");
  rdma_destroy_qp(id);
  CHECK(rdma_destroy_id(id) == 0, "rdma_destroy_id");
  if (listen_id != NULL) CHECK(rdma_destroy_id(listen_id) == 0, "rdma_destroy_id (listener)");
  rdma_destroy_event_channel(ch);
  printf("ok destroyed\n");
  return 0;
}
