/* Shared by the C probes (events_probe.c, arg_checks_probe.c): moves an RC
 * QP through INIT, RTR and RTS toward a peer QP, with the attributes a
 * RoCE program gives (the GID index given, path MTU 1024, PSN 0, retries 7). */
#ifndef VERBSIM_DROPIN_TESTS_PROBE_QP_H_
#define VERBSIM_DROPIN_TESTS_PROBE_QP_H_

#include <infiniband/verbs.h>
#include <stdint.h>

/* 0, or the name of the transition that failed (errno is set). */
const char *probe_connect_rc(struct ibv_qp *qp, uint32_t dest_qpn,
                             const union ibv_gid *dgid, int sgid_index,
                             int access);

#endif /* VERBSIM_DROPIN_TESTS_PROBE_QP_H_ */
