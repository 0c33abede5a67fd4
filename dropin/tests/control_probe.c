/* The C control API (verbsim/control.h) from a program built against the
 * system's libibverbs: found on the drop-in, absent on a real libibverbs
 * ("absent" mode), and each call's answers.
 *
 *   control_probe           on the drop-in: every check
 *   control_probe absent    on a real libibverbs: verbsim_control_open is 0
 *
 * Prints "ok: ..." / "FAIL: ..." and "control_probe: N checks, F failed". */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <verbsim/control.h>

#include "dropin/tests/probe_qp.h"

static int checks;

static void check(int ok, const char *what) {
  checks++;
  probe_check(ok, what);
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Frozen virtual time: a send between two QPs of sim0 does not complete
 * however often the CQ is polled, and the clock stays; advance_time moves
 * it on and the send completes. */
static void frozen_time(struct verbsim_control *vc, struct ibv_context *ctx) {
  union ibv_gid gid;
  static char buf[4096];
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  struct ibv_mr *mr =
      pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
  struct ibv_qp_init_attr a = {.send_cq = cq, .recv_cq = cq,
                               .qp_type = IBV_QPT_RC,
                               .cap = {.max_send_wr = 4, .max_recv_wr = 4,
                                       .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp *q0 = mr ? ibv_create_qp(pd, &a) : NULL;
  struct ibv_qp *q1 = mr ? ibv_create_qp(pd, &a) : NULL;
  if (!q0 || !q1 || ibv_query_gid(ctx, 1, 0, &gid) ||
      probe_connect_rc(q0, q1->qp_num, &gid, 0, IBV_ACCESS_LOCAL_WRITE) ||
      probe_connect_rc(q1, q0->qp_num, &gid, 0, IBV_ACCESS_LOCAL_WRITE))
    probe_die("a connected pair on sim0");
  struct ibv_sge rs = {.addr = (uintptr_t)buf + 64, .length = 64,
                       .lkey = mr->lkey};
  struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rs, .num_sge = 1};
  struct ibv_recv_wr *rbad;
  struct ibv_sge ss = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
  struct ibv_send_wr swr = {.wr_id = 2, .sg_list = &ss, .num_sge = 1,
                            .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED};
  struct ibv_send_wr *sbad;
  check(vc->freeze_time(1) == 0, "freeze_time");
  const uint64_t t0 = vc->now_ns();
  if (ibv_post_recv(q1, &rwr, &rbad) || ibv_post_send(q0, &swr, &sbad))
    probe_die("the posts");
  struct ibv_wc wc[2];
  int got = 0;
  for (int i = 0; i < 1000; i++) got += ibv_poll_cq(cq, 2, wc);
  check(got == 0 && vc->now_ns() == t0,
        "freeze_time.polls_complete_nothing_and_the_clock_stays");
  check(vc->advance_time(1000000) == 0, "freeze_time.advance_time_runs");
  got = ibv_poll_cq(cq, 2, wc);
  check(got == 2 && wc[0].status == IBV_WC_SUCCESS &&
            wc[1].status == IBV_WC_SUCCESS,
        "freeze_time.the_send_completes_once_time_moves");
  check(vc->freeze_time(0) == 0, "freeze_time.thawed");
  ibv_destroy_qp(q0);
  ibv_destroy_qp(q1);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct verbsim_control vc;
  if (argc > 1 && strcmp(argv[1], "absent") == 0) {
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n); /* loads libibverbs */
    if (list) ibv_free_device_list(list);
    check(verbsim_control_open(&vc) == 0 && vc.add_faults == NULL,
          "control_open.absent_on_a_real_libibverbs");
  } else {
    struct ibv_context *ctx = probe_open("sim0");
    check(verbsim_control_open(&vc) == 1, "control_open.found");
    if (!vc.add_faults) return 1;
    check(vc.add_faults("drop op=NOPE") == EINVAL, "add_faults.bad_rule_einval");
    check(vc.add_faults(NULL) == EINVAL, "add_faults.null_einval");
    check(vc.add_faults("drop op=ACK nth=3") == 0, "add_faults.good_rule");
    check(vc.clear_faults() == 0, "clear_faults");
    check(vc.set_seed(42) == 0, "set_seed");
    struct verbsim_node_counters nc;
    check(vc.query_node_counters(0, &nc) == 0, "query_node_counters.node0");
    check(vc.query_node_counters(99, &nc) == EINVAL,
          "query_node_counters.no_such_node_einval");
    struct verbsim_qp_counters qc;
    check(vc.query_qp_counters((struct ibv_qp *)&nc, &qc) == ENOENT,
          "query_qp_counters.not_a_qp_enoent");
    const uint64_t before = vc.now_ns();
    check(vc.advance_time(1000000) == 0, "advance_time");
    check(vc.now_ns() >= before + 1000000, "advance_time.moves_now");
    check(vc.keep_records(1) == 0, "keep_records");
    /* Something to record: a PD and a QP moved to INIT make trace records
     * only with traffic, so the files may be short, but they are written. */
    const char *dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    char trace[512], pcap[512];
    snprintf(trace, sizeof(trace), "%s/control_probe.trace", dir);
    snprintf(pcap, sizeof(pcap), "%s/control_probe.pcap", dir);
    check(vc.write_trace(trace) == 0 && file_size(trace) >= 0, "write_trace");
    check(vc.write_pcap(pcap) == 0 && file_size(pcap) >= 24,
          "write_pcap.has_the_pcap_header");
    check(vc.write_trace("/nonexistent/dir/x") != 0, "write_trace.bad_path");
    frozen_time(&vc, ctx);
    ibv_close_device(ctx);
  }
  printf("control_probe: %d checks, %d failed\n", checks, probe_failures());
  return probe_failures() ? 1 : 0;
}
