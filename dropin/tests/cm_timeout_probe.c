/* The CM's timeouts on the drop-in librdmacm, one side per process
 * (cm_timeout_test.sh runs two of them on one fabric over VERBSIM_UDP).
 * Linked against the system's librdmacm and libibverbs like any program.
 *
 *   hold                      owns its node and waits for stdin to close
 *   listen PORT rc|ud never   listens on 127.0.1.1:PORT; takes the request
 *                             and never answers it; exits when stdin closes
 *   listen PORT rc accept     accepts once stdin gives a line; the REP must
 *                             end in UNREACHABLE -ETIMEDOUT
 *   connect ADDR PORT rc|ud MIN_MS
 *                             must end in UNREACHABLE -ETIMEDOUT after at
 *                             least MIN_MS, then see nothing more for 2 s
 *                             (a REP arriving then is ignored)
 *   sync_connect ADDR PORT MIN_MS
 *                             a synchronous id: rdma_connect fails ETIMEDOUT
 *   resolve ADDR TIMEOUT_MS   must end in ADDR_ERROR -ETIMEDOUT after at least
 *                             TIMEOUT_MS, on a channel and synchronously
 *
 * Prints "ok <what>" per check and exits 1 at the first failure; every wait
 * is bounded. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#define CHECK(cond, what)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "FAIL %s (line %d, errno %d %s)\n", what, __LINE__, \
              errno, strerror(errno));                                     \
      exit(1);                                                             \
    }                                                                      \
    printf("ok %s\n", what);                                               \
    fflush(stdout);                                                        \
  } while (0)

/* Every wait for an event gives up after this long. */
#define EVENT_BOUND_MS 60000

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The next event on `ch` within `ms`, or NULL. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms) {
  struct pollfd p = {.fd = ch->fd, .events = POLLIN};
  if (poll(&p, 1, ms) != 1) return NULL;
  struct rdma_cm_event *e;
  if (rdma_get_cm_event(ch, &e) != 0) return NULL;
  printf("event %s status %d\n", rdma_event_str(e->event), e->status);
  fflush(stdout);
  return e;
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch,
                                    enum rdma_cm_event_type type) {
  struct rdma_cm_event *e = next_event(ch, EVENT_BOUND_MS);
  if (e == NULL || e->event != type) {
    fprintf(stderr, "FAIL wanted %s\n", rdma_event_str(type));
    exit(1);
  }
  return e;
}

static struct sockaddr_in addr_of(const char *ip, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

/* Waits (bounded) for a line on stdin, or for its end. */
static void wait_stdin(void) {
  struct pollfd p = {.fd = 0, .events = POLLIN};
  if (poll(&p, 1, EVENT_BOUND_MS) == 1) {
    char line[64];
    if (read(0, line, sizeof line) < 0) perror("read stdin");
  }
}

static struct ibv_qp_init_attr qp_attr(int ud) {
  struct ibv_qp_init_attr a = {.cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                       .max_send_sge = 1, .max_recv_sge = 1},
                               .qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC,
                               .sq_sig_all = 1};
  return a;
}

static int hold(void) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  CHECK(ch != NULL, "hold: the node is this process's");
  wait_stdin();
  rdma_destroy_event_channel(ch);
  return 0;
}

static int listen_side(int port, int ud, int accept) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *lid;
  CHECK(ch && rdma_create_id(ch, &lid, NULL, ud ? RDMA_PS_UDP : RDMA_PS_TCP) == 0,
        "listener id");
  struct sockaddr_in a = addr_of("127.0.1.1", port);
  CHECK(rdma_bind_addr(lid, (struct sockaddr *)&a) == 0 && rdma_listen(lid, 4) == 0,
        "listening");
  struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
  struct rdma_cm_id *id = e->id;
  rdma_ack_cm_event(e);
  CHECK(1, "request");
  if (!accept) {
    /* Never answered: the peer's CM gives up on its own. */
    wait_stdin();
    CHECK(rdma_destroy_id(id) == 0, "the unanswered id is destroyed");
  } else {
    wait_stdin();
    struct ibv_qp_init_attr qa = qp_attr(0);
    CHECK(rdma_create_qp(id, NULL, &qa) == 0, "passive QP");
    struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
                                .rnr_retry_count = 7};
    const long long start = now_ms();
    CHECK(rdma_accept(id, &p) == 0, "rdma_accept");
    e = expect(ch, RDMA_CM_EVENT_UNREACHABLE);
    CHECK(e->status == -ETIMEDOUT, "the REP nobody answers: UNREACHABLE -ETIMEDOUT");
    printf("passive gave up after %lld ms\n", now_ms() - start);
    rdma_ack_cm_event(e);
    rdma_destroy_qp(id);
    CHECK(rdma_destroy_id(id) == 0, "the timed-out id is destroyed");
  }
  rdma_destroy_id(lid);
  rdma_destroy_event_channel(ch);
  printf("PASS\n");
  return 0;
}

/* A resolved id toward ADDR:PORT with a QP, on `ch` (NULL: synchronous). */
static struct rdma_cm_id *active_id(struct rdma_event_channel *ch, const char *ip,
                                    int port, int ud) {
  struct rdma_cm_id *id;
  struct sockaddr_in dst = addr_of(ip, port);
  CHECK(rdma_create_id(ch, &id, NULL, ud ? RDMA_PS_UDP : RDMA_PS_TCP) == 0, "id");
  CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0, "resolve");
  if (ch) rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
  CHECK(rdma_resolve_route(id, 2000) == 0, "route");
  if (ch) rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
  struct ibv_qp_init_attr qa = qp_attr(ud);
  CHECK(rdma_create_qp(id, NULL, &qa) == 0, "QP");
  return id;
}

static int connect_side(const char *ip, int port, int ud, long long min_ms) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *id = active_id(ch, ip, port, ud);
  struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
                              .retry_count = 7, .rnr_retry_count = 7};
  const long long start = now_ms();
  CHECK(rdma_connect(id, &p) == 0, "rdma_connect");
  struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_UNREACHABLE);
  const long long took = now_ms() - start;
  printf("active gave up after %lld ms (at least %lld)\n", took, min_ms);
  CHECK(e->status == -ETIMEDOUT, "no answer: UNREACHABLE -ETIMEDOUT");
  CHECK(took >= min_ms, "not before the tries ran out");
  rdma_ack_cm_event(e);
  /* The kernel leaves the QP alone on this event (cma.c cma_ib_handler). */
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  CHECK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qi) == 0 &&
            qa.qp_state == (ud ? IBV_QPS_RTS : IBV_QPS_INIT),
        "the QP is where rdma_create_qp left it");
  /* A late answer (or none) gives no further event. */
  e = next_event(ch, 2000);
  CHECK(e == NULL, "nothing after the timeout");
  errno = 0;
  CHECK(rdma_connect(id, &p) == -1 && errno == EINVAL,
        "rdma_connect again on the timed-out id is EINVAL");
  rdma_destroy_qp(id);
  CHECK(rdma_destroy_id(id) == 0, "the timed-out id is destroyed");
  rdma_destroy_event_channel(ch);
  printf("PASS\n");
  return 0;
}

static int sync_connect(const char *ip, int port, long long min_ms) {
  struct rdma_cm_id *id = active_id(NULL, ip, port, 0);
  struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
                              .retry_count = 7, .rnr_retry_count = 7};
  const long long start = now_ms();
  errno = 0;
  const int ret = rdma_connect(id, &p);
  const long long took = now_ms() - start;
  printf("sync rdma_connect returned %d after %lld ms\n", ret, took);
  CHECK(ret == -1 && errno == ETIMEDOUT, "sync rdma_connect: -1, ETIMEDOUT");
  CHECK(id->event && id->event->event == RDMA_CM_EVENT_UNREACHABLE,
        "its event is UNREACHABLE");
  CHECK(took >= min_ms, "not before the tries ran out");
  rdma_destroy_qp(id);
  CHECK(rdma_destroy_id(id) == 0, "the timed-out id is destroyed");
  printf("PASS\n");
  return 0;
}

static int resolve_side(const char *ip, int timeout_ms) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *id;
  struct sockaddr_in dst = addr_of(ip, 7000);
  CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "id");
  for (int round = 0; round < 2; round++) {
    const long long start = now_ms();
    CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, timeout_ms) == 0,
          "rdma_resolve_addr starts (again on the same id)");
    errno = 0;
    CHECK(rdma_resolve_route(id, 100) == -1 && errno == EINVAL,
          "rdma_resolve_route while resolving is EINVAL");
    struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_ADDR_ERROR);
    const long long took = now_ms() - start;
    printf("ADDR_ERROR after %lld ms\n", took);
    CHECK(e->status == -ETIMEDOUT, "owner absent: ADDR_ERROR -ETIMEDOUT");
    CHECK(took >= timeout_ms, "not before timeout_ms");
    rdma_ack_cm_event(e);
  }
  CHECK(rdma_destroy_id(id) == 0, "destroyed");
  struct rdma_cm_id *sid;
  CHECK(rdma_create_id(NULL, &sid, NULL, RDMA_PS_TCP) == 0, "sync id");
  errno = 0;
  CHECK(rdma_resolve_addr(sid, NULL, (struct sockaddr *)&dst, timeout_ms) == -1 &&
            errno == ETIMEDOUT,
        "sync rdma_resolve_addr: -1, ETIMEDOUT");
  CHECK(rdma_destroy_id(sid) == 0, "sync id destroyed");
  rdma_destroy_event_channel(ch);
  printf("PASS\n");
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("pid %d\n", (int)getpid());  /* for the test's SIGSTOP */
  if (argc == 2 && strcmp(argv[1], "hold") == 0) return hold();
  if (argc == 5 && strcmp(argv[1], "listen") == 0) {
    return listen_side(atoi(argv[2]), strcmp(argv[3], "ud") == 0,
                       strcmp(argv[4], "accept") == 0);
  }
  if (argc == 6 && strcmp(argv[1], "connect") == 0) {
    return connect_side(argv[2], atoi(argv[3]), strcmp(argv[4], "ud") == 0,
                        atoll(argv[5]));
  }
  if (argc == 5 && strcmp(argv[1], "sync_connect") == 0) {
    return sync_connect(argv[2], atoi(argv[3]), atoll(argv[4]));
  }
  if (argc == 4 && strcmp(argv[1], "resolve") == 0) {
    return resolve_side(argv[2], atoi(argv[3]));
  }
  fprintf(stderr, "usage: see the comment at the top of cm_timeout_probe.c\n");
  return 2;
}
