/* A plain C program on libibverbs with a classic ordering bug, to find with
 * `verbsim exec --seeds` (docs/ordering.md rule W2): it RDMA-writes 256 bytes
 * of data, then a one-byte flag, on one RC QP, and the target's CPU spins
 * on the flag and then reads the data, as if the flag's arrival meant the
 * data was there. Nothing promises that; on the ibta profile some seeds
 * show the data stale.
 *
 *   flag_poll [--fixed] [DEVICE]   (default: the first device)
 *
 * --fixed sends the flag as an RDMA write with immediate and waits for its
 * receive completion instead, which does order the data before it.
 * Both QPs are on one device, connected to each other. Exits 0 when the
 * data was complete when the flag was seen, 1 when it was not. */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_connect.h"

enum { kData = 256 };

static void die(const char *what) {
  perror(what);
  exit(2);
}

int main(int argc, char **argv) {
  int fixed = argc > 1 && strcmp(argv[1], "--fixed") == 0;
  const char *name = argc > 1 + fixed ? argv[1 + fixed] : NULL;
  struct ibv_device **list = ibv_get_device_list(NULL);
  struct ibv_device *dev = list ? list[0] : NULL;
  for (int i = 0; name && list && list[i]; ++i) {
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) dev = list[i];
  }
  if (!dev) die("no RDMA device");
  struct ibv_context *ctx = ibv_open_device(dev);
  if (!ctx) die("ibv_open_device");
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  struct ibv_cq *tcq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  if (!pd || !scq || !tcq) die("set-up");
  struct ibv_qp_init_attr init = {.send_cq = scq, .recv_cq = scq,
                                  .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                          .max_send_sge = 1,
                                          .max_recv_sge = 1}};
  struct ibv_qp *src = ibv_create_qp(pd, &init);
  init.send_cq = tcq;
  init.recv_cq = tcq;
  struct ibv_qp *dst = ibv_create_qp(pd, &init);
  static uint8_t from[kData + 1], to[kData + 1];
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  struct ibv_mr *from_mr = ibv_reg_mr(pd, from, sizeof(from), access);
  struct ibv_mr *to_mr = ibv_reg_mr(pd, to, sizeof(to), access);
  union ibv_gid gid;
  if (!src || !dst || !from_mr || !to_mr || ibv_query_gid(ctx, 1, 0, &gid))
    die("set-up");
  const char *failed = rc_connect(src, dst->qp_num, &gid, access);
  if (!failed) failed = rc_connect(dst, src->qp_num, &gid, access);
  if (failed) die(failed);

  memset(from, 'd', kData);
  from[kData] = 1;
  uint8_t *flag = &to[kData];
  struct ibv_recv_wr rwr = {.wr_id = 9}, *bad_rwr;
  if (fixed && ibv_post_recv(dst, &rwr, &bad_rwr)) die("ibv_post_recv");
  struct ibv_sge data = {(uintptr_t)from, kData, from_mr->lkey};
  struct ibv_sge last = {(uintptr_t)&from[kData], 1, from_mr->lkey};
  struct ibv_send_wr w2 = {.wr_id = 2, .sg_list = &last, .num_sge = 1,
                           .opcode = fixed ? IBV_WR_RDMA_WRITE_WITH_IMM
                                           : IBV_WR_RDMA_WRITE,
                           .send_flags = IBV_SEND_SIGNALED,
                           .imm_data = htonl(1)};
  w2.wr.rdma.remote_addr = (uintptr_t)flag;
  w2.wr.rdma.rkey = to_mr->rkey;
  struct ibv_send_wr w1 = {.wr_id = 1, .next = &w2, .sg_list = &data,
                           .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                           .send_flags = IBV_SEND_SIGNALED};
  w1.wr.rdma.remote_addr = (uintptr_t)to;
  w1.wr.rdma.rkey = to_mr->rkey;
  struct ibv_send_wr *bad;
  if (ibv_post_send(src, &w1, &bad)) die("ibv_post_send");

  /* The target's CPU waits for the flag (or, fixed, the completion); the
   * source's CQ is polled too, as a program reaping its completions would. */
  struct ibv_wc wc;
  int reaped = 0;
  for (long spins = 0;; ++spins) {
    if (spins == 10000000) die("the flag never came");
    if (ibv_poll_cq(scq, 1, &wc) == 1) ++reaped;
    if (fixed ? ibv_poll_cq(tcq, 1, &wc) == 1
              : *(volatile uint8_t *)flag == 1) {
      break;
    }
  }
  size_t stale = 0;
  for (size_t i = 0; i < kData; ++i) stale += to[i] != 'd';
  while (reaped < 2) reaped += ibv_poll_cq(scq, 1, &wc) == 1;
  if (stale) {
    printf("stale data behind the flag\n");
  } else {
    printf("data complete when the flag was seen\n");
  }
  ibv_destroy_qp(src);
  ibv_destroy_qp(dst);
  ibv_dereg_mr(from_mr);
  ibv_dereg_mr(to_mr);
  ibv_destroy_cq(scq);
  ibv_destroy_cq(tcq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return stale ? 1 : 0;
}
