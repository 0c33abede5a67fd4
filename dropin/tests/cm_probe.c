/* The rdma_cm API's details on the drop-in librdmacm, in one process with
 * two sim nodes (127.0.1.1 listens, 127.0.1.2 connects), over event channels:
 * errors for bad input with the object still usable, private data both
 * ways, a rejection, a connection with a send each way, the disconnect,
 * multicast joins, and a call that is not covered. Linked against the system's librdmacm and
 * libibverbs like any program; cm_probe_test.sh runs it on the drop-ins.
 * Prints "ok <what>" per check and exits 1 at the first failure. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define CHECK(cond, what)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "FAIL %s (line %d, errno %d %s)\n", what, __LINE__, \
              errno, strerror(errno));                                     \
      exit(1);                                                             \
    }                                                                      \
    printf("ok %s\n", what);                                               \
  } while (0)

/* The next event on `ch`, which must be `type`; waits up to 5 s. */
static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch,
                                          enum rdma_cm_event_type type) {
  struct pollfd p = {.fd = ch->fd, .events = POLLIN};
  if (poll(&p, 1, 5000) != 1) {
    fprintf(stderr, "FAIL no event within 5 s, wanted %s\n", rdma_event_str(type));
    exit(1);
  }
  struct rdma_cm_event *e;
  if (rdma_get_cm_event(ch, &e) != 0) {
    perror("FAIL rdma_get_cm_event");
    exit(1);
  }
  if (e->event != type) {
    fprintf(stderr, "FAIL got %s (status %d), wanted %s\n", rdma_event_str(e->event),
            e->status, rdma_event_str(type));
    exit(1);
  }
  return e;
}

static struct sockaddr_in addr(const char *ip, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

/* A client id on node 1, resolved toward 127.0.1.1:port, with a QP. */
static struct rdma_cm_id *client(struct rdma_event_channel *ch, int port) {
  struct rdma_cm_id *id;
  struct sockaddr_in dst = addr("127.0.1.1", port);
  struct sockaddr_in src = addr("127.0.1.2", 0);
  if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
      rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000)) {
    perror("FAIL client");
    exit(1);
  }
  rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
  if (rdma_resolve_route(id, 2000)) exit(1);
  rdma_ack_cm_event(expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
  struct ibv_qp_init_attr attr = {.cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                          .max_send_sge = 1, .max_recv_sge = 1},
                                  .qp_type = IBV_QPT_RC, .sq_sig_all = 1};
  if (rdma_create_qp(id, NULL, &attr)) {
    perror("FAIL rdma_create_qp");
    exit(1);
  }
  return id;
}

int main(void) {
  struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *res;
  CHECK(rdma_getaddrinfo("127.0.1.1", "not-a-port", &hints, &res) == EAI_SERVICE,
        "rdma_getaddrinfo: a non-numeric service is EAI_SERVICE");
  hints.ai_family = AF_INET6;
  CHECK(rdma_getaddrinfo("127.0.1.1", "7000", &hints, &res) == EAI_FAMILY,
        "rdma_getaddrinfo: IPv6 is EAI_FAMILY");

  struct rdma_event_channel *sch = rdma_create_event_channel();
  struct rdma_event_channel *cch = rdma_create_event_channel();
  CHECK(sch && cch, "two event channels");
  fcntl(sch->fd, F_SETFL, fcntl(sch->fd, F_GETFL) | O_NONBLOCK);
  struct rdma_cm_event *e;
  errno = 0;
  CHECK(rdma_get_cm_event(sch, &e) == -1 && errno == EAGAIN,
        "an empty non-blocking channel is EAGAIN");

  struct rdma_cm_id *listen_id, *other;
  rdma_create_id(sch, &listen_id, NULL, RDMA_PS_TCP);
  rdma_create_id(sch, &other, NULL, RDMA_PS_TCP);

  /* RDMA_OPTION_ID_ACK_TIMEOUT: a u8, for an RC id only (the kernel's
   * rdma_set_ack_timeout); a refusal changes nothing. */
  uint8_t ack_timeout = 20;
  int wrong_size = 20;
  errno = 0;
  CHECK(rdma_set_option(other, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &wrong_size,
                        sizeof(wrong_size)) == -1 && errno == EINVAL,
        "an ACK timeout option of the wrong size is EINVAL");
  struct rdma_cm_id *ud_id;
  CHECK(rdma_create_id(sch, &ud_id, NULL, RDMA_PS_UDP) == 0, "a UD id");
  errno = 0;
  CHECK(rdma_set_option(ud_id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack_timeout,
                        sizeof(ack_timeout)) == -1 && errno == EINVAL,
        "an ACK timeout on a UD id is EINVAL");
  rdma_destroy_id(ud_id);
  CHECK(rdma_set_option(other, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack_timeout,
                        sizeof(ack_timeout)) == 0,
        "an ACK timeout on an RC id is taken");
  struct sockaddr_in a = addr("127.0.1.9", 7300);
  errno = 0;
  CHECK(rdma_bind_addr(listen_id, (struct sockaddr *)&a) == -1 && errno == EADDRNOTAVAIL,
        "binding an address no local node has is EADDRNOTAVAIL");
  a = addr("127.0.1.1", 7300);
  CHECK(rdma_bind_addr(listen_id, (struct sockaddr *)&a) == 0, "bind 127.0.1.1:7300 (after the failure)");
  errno = 0;
  CHECK(rdma_bind_addr(other, (struct sockaddr *)&a) == -1 && errno == EADDRINUSE,
        "a second bind to the same address and port is EADDRINUSE");
  CHECK(rdma_listen(listen_id, 4) == 0, "listen");
  errno = 0;
  CHECK(rdma_accept(listen_id, NULL) == -1 && errno == EINVAL,
        "rdma_accept on a listening id is EINVAL");

  /* Too much private data is EINVAL and the id can still connect. */
  struct rdma_cm_id *c1 = client(cch, 7300);
  char big[57] = {0};
  struct rdma_conn_param p = {.private_data = big, .private_data_len = 57,
                              .responder_resources = 1, .initiator_depth = 1,
                              .retry_count = 7, .rnr_retry_count = 7};
  errno = 0;
  CHECK(rdma_connect(c1, &p) == -1 && errno == EINVAL,
        "57 bytes of REQ private data is EINVAL");
  p.private_data = "hello";
  p.private_data_len = 6;
  CHECK(rdma_connect(c1, &p) == 0, "rdma_connect with 6 bytes of private data");
  e = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
  CHECK(e->listen_id == listen_id && e->id != listen_id, "CONNECT_REQUEST names the listener and a new id");
  CHECK(e->param.conn.private_data_len == 56 &&
            memcmp(e->param.conn.private_data, "hello", 6) == 0 &&
            ((const char *)e->param.conn.private_data)[55] == 0,
        "the REQ's private data, zero-padded to the field's 56 bytes");
  CHECK(e->param.conn.initiator_depth == 1 && e->param.conn.responder_resources == 1,
        "the peer's resources from the receiver's view");
  struct rdma_cm_id *s1 = e->id;
  rdma_ack_cm_event(e);
  CHECK(rdma_reject(s1, "no", 3) == 0, "rdma_reject with private data");
  e = expect_event(cch, RDMA_CM_EVENT_REJECTED);
  CHECK(e->status == 28 && e->param.conn.private_data_len == 148 &&
            strcmp(e->param.conn.private_data, "no") == 0,
        "REJECTED, status 28 (consumer), the REJ's private data");
  rdma_ack_cm_event(e);
  rdma_destroy_id(s1);
  rdma_destroy_qp(c1);
  rdma_destroy_id(c1);

  /* A connection: private data both ways, a send each way, disconnect. */
  struct rdma_cm_id *c2 = client(cch, 7300);
  p.private_data = "again";
  CHECK(rdma_connect(c2, &p) == 0, "rdma_connect again");
  e = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
  struct rdma_cm_id *s2 = e->id;
  rdma_ack_cm_event(e);
  struct ibv_qp_init_attr attr = {.cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                          .max_send_sge = 1, .max_recv_sge = 1},
                                  .qp_type = IBV_QPT_RC, .sq_sig_all = 1};
  CHECK(rdma_create_qp(s2, NULL, &attr) == 0 && s2->qp && s2->send_cq && s2->recv_cq &&
            s2->pd,
        "rdma_create_qp on the new id makes its CQs and uses a default PD");
  char rbuf[16] = {0}, sbuf[16] = "ping";
  struct ibv_mr *rmr = rdma_reg_msgs(s2, rbuf, sizeof rbuf);
  CHECK(rmr && rdma_post_recv(s2, NULL, rbuf, sizeof rbuf, rmr) == 0, "server posts a receive");
  struct rdma_conn_param ap = {.private_data = "welcome", .private_data_len = 8,
                               .responder_resources = 1, .initiator_depth = 1,
                               .rnr_retry_count = 7};
  CHECK(rdma_accept(s2, &ap) == 0, "rdma_accept with private data");
  e = expect_event(cch, RDMA_CM_EVENT_ESTABLISHED);
  CHECK(e->param.conn.private_data_len == 196 &&
            strcmp(e->param.conn.private_data, "welcome") == 0,
        "the client's ESTABLISHED carries the REP's private data (196-byte field)");
  rdma_ack_cm_event(e);
  rdma_ack_cm_event(expect_event(sch, RDMA_CM_EVENT_ESTABLISHED));
  struct ibv_mr *smr = rdma_reg_msgs(c2, sbuf, sizeof sbuf);
  CHECK(smr && rdma_post_send(c2, NULL, sbuf, sizeof sbuf, smr, 0) == 0, "client sends");
  struct ibv_wc wc;
  CHECK(rdma_get_send_comp(c2, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "client's send completes");
  CHECK(rdma_get_recv_comp(s2, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
            wc.byte_len == sizeof sbuf && strcmp(rbuf, "ping") == 0,
        "server receives the 16 bytes");
  CHECK(rdma_disconnect(c2) == 0, "client disconnects");
  rdma_ack_cm_event(expect_event(sch, RDMA_CM_EVENT_DISCONNECTED));
  /* The client's DISCONNECTED comes with the DREP, which the server's CM
   * sends when the server calls rdma_disconnect (cm.c cm_dreq_handler,
   * cma.c rdma_disconnect). */
  struct pollfd none = {.fd = cch->fd, .events = POLLIN};
  CHECK(poll(&none, 1, 200) == 0, "no DISCONNECTED for the client before the server disconnects");
  CHECK(rdma_disconnect(s2) == 0, "server disconnects");
  rdma_ack_cm_event(expect_event(cch, RDMA_CM_EVENT_DISCONNECTED));
  CHECK(1, "DISCONNECTED on both sides");
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  CHECK(ibv_query_qp(c2->qp, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR,
        "the disconnecting side's QP is in ERR");
  rdma_dereg_mr(rmr);
  rdma_dereg_mr(smr);
  rdma_destroy_ep(s2);
  rdma_destroy_ep(c2);

  /* Multicast through rdma_cm (a UD id bound to 127.0.1.1): the event
   * addresses the group, errors name what is wrong, the id stays usable. */
  struct rdma_cm_id *u = NULL;
  CHECK(rdma_create_id(sch, &u, NULL, RDMA_PS_UDP) == 0, "a UD id");
  struct sockaddr_in ub = {.sin_family = AF_INET};
  inet_pton(AF_INET, "127.0.1.1", &ub.sin_addr);
  CHECK(rdma_bind_addr(u, (struct sockaddr *)&ub) == 0, "the UD id binds 127.0.1.1");
  errno = 0;
  CHECK(rdma_join_multicast(u, (struct sockaddr *)&ub, NULL) == -1 && errno == EINVAL,
        "joining a unicast address: -1, EINVAL");
  struct sockaddr_in g = {.sin_family = AF_INET};
  inet_pton(AF_INET, "239.9.9.9", &g.sin_addr);
  int tag = 7;
  CHECK(rdma_join_multicast(u, (struct sockaddr *)&g, &tag) == 0, "joins 239.9.9.9");
  struct rdma_cm_event *je = expect_event(sch, RDMA_CM_EVENT_MULTICAST_JOIN);
  const uint8_t mgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 9, 9, 9};
  CHECK(je->status == 0 && je->param.ud.qp_num == 0xffffff &&
            je->param.ud.qkey == RDMA_UDP_QKEY &&
            je->param.ud.private_data == &tag && je->param.ud.ah_attr.is_global &&
            memcmp(je->param.ud.ah_attr.grh.dgid.raw, mgid, 16) == 0,
        "MULTICAST_JOIN: QPN 0xFFFFFF, RDMA_UDP_QKEY, the context, dgid ::ffff:239.9.9.9");
  rdma_ack_cm_event(je);
  errno = 0;
  CHECK(rdma_join_multicast(u, (struct sockaddr *)&g, NULL) == -1 && errno == EADDRINUSE,
        "the same group again: -1, EADDRINUSE");
  struct sockaddr_in g2 = g;
  inet_pton(AF_INET, "239.9.9.10", &g2.sin_addr);
  errno = 0;
  CHECK(rdma_leave_multicast(u, (struct sockaddr *)&g2) == -1 && errno == EADDRNOTAVAIL,
        "leaving a group not joined: -1, EADDRNOTAVAIL");
  CHECK(rdma_leave_multicast(u, (struct sockaddr *)&g) == 0, "leaves 239.9.9.9");
  CHECK(rdma_destroy_id(u) == 0, "the UD id is destroyed");

  errno = 0;
  CHECK(rdma_notify(listen_id, IBV_EVENT_COMM_EST) == -1 && errno == EOPNOTSUPP,
        "rdma_notify is not covered: -1, EOPNOTSUPP");
  rdma_destroy_id(other);
  rdma_destroy_id(listen_id);
  rdma_destroy_event_channel(sch);
  rdma_destroy_event_channel(cch);
  printf("PASS\n");
  return 0;
}
