/* Shared by the C probes (events_probe.c, arg_checks_probe.c,
 * verb_checks_probe.c): their reporting, opening a device, and moving an RC
 * QP through INIT, RTR and RTS toward a peer QP. */
#ifndef VERBSIM_DROPIN_TESTS_PROBE_QP_H_
#define VERBSIM_DROPIN_TESTS_PROBE_QP_H_

#include <infiniband/verbs.h>
#include <stdint.h>

/* Prints "ok: WHAT" or "FAIL: WHAT" and counts the failures. */
void probe_check(int cond, const char *what);
/* How many probe_check calls failed. */
int probe_failures(void);
/* A set-up step failed: prints "FAIL: WHAT (errno ...)" and exits 1. */
void probe_die(const char *what);
/* Opens the device named NAME, or the first one when NAME is NULL; dies
 * when there is none. */
struct ibv_context *probe_open(const char *name);

/* Moves `qp` to RTS with the attributes a RoCE program gives (the GID index
 * given, path MTU 1024, PSN 0, retries 7): 0, or the name of the
 * transition that failed (errno is set). */
const char *probe_connect_rc(struct ibv_qp *qp, uint32_t dest_qpn,
                             const union ibv_gid *dgid, int sgid_index,
                             int access);

#endif /* VERBSIM_DROPIN_TESTS_PROBE_QP_H_ */
