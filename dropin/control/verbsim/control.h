/* verbsim/control.h: steering the simulated fabric from a C program that
 * runs on verbsim's drop-in libibverbs (`verbsim exec PROGRAM`): fault rules
 * between two calls, the seed, counters, virtual time, the trace and a
 * packet capture (docs/control.md).
 *
 * The functions live in the drop-in libibverbs.so.1 (version node
 * VERBSIM_CONTROL_1), not in a library of their own, so that the same
 * binary also runs on a real libibverbs: call verbsim_control_open(), which
 * finds them with dlsym in the libibverbs.so.1 the program has loaded and
 * says whether that is the sim's (link with -ldl before glibc 2.34).
 *
 * Every function returns 0 or an errno value (EINVAL for bad arguments,
 * with nothing changed; EOPNOTSUPP where the fabric's mode does not allow
 * it). */
#ifndef VERBSIM_CONTROL_H_
#define VERBSIM_CONTROL_H_

#include <dlfcn.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_qp;

/* What a QP's transport did (the sim's counters of it). */
struct verbsim_qp_counters {
  uint64_t packets_sent;
  uint64_t packets_received;
  uint64_t packets_dropped;
  uint64_t retransmissions;  /* WQEs sent again after a go-back */
  uint64_t timeouts;         /* local ACK timer expiries */
  uint64_t rnr_naks;         /* RNR NAKs received */
  uint64_t naks_received;    /* other NAKs received */
  uint64_t naks_sent;
};

/* What a device (node) of the fabric sent and received. */
struct verbsim_node_counters {
  uint64_t packets_sent;
  uint64_t packets_received;
  uint64_t packets_dropped;
  uint64_t icrc_errors;
};

/* The functions, as verbsim_control_open() finds them. */
struct verbsim_control {
  /* Adds fault rules in the text form of docs/faults.md, e.g.
   * "drop op=SEND nth=1"; EINVAL (nothing added) for a bad rule. */
  int (*add_faults)(const char *rules);
  /* Forgets the packet rules and nth-failure rules added so far. */
  int (*clear_faults)(void);
  /* Restarts the fabric's random source from `seed`. */
  int (*set_seed)(uint64_t seed);
  /* A QP's counters; ENOENT for a QP that is not one of this library's. */
  int (*query_qp_counters)(struct ibv_qp *qp,
                           struct verbsim_qp_counters *out);
  /* Device `node`'s counters (sim0 is node 0); EINVAL for no such node. */
  int (*query_node_counters)(int node, struct verbsim_node_counters *out);
  /* Runs the fabric's events for `ns` nanoseconds of virtual time and moves
   * its clock on (EOPNOTSUPP in real time, under VERBSIM_UDP). */
  int (*advance_time)(uint64_t ns);
  /* Freezes virtual time (1) or lets it run (0): while frozen, polls run
   * only what is due now, so nothing that takes time happens until
   * advance_time (EOPNOTSUPP in real time). */
  int (*freeze_time)(int frozen);
  /* The fabric's virtual time in nanoseconds. */
  uint64_t (*now_ns)(void);
  /* Starts (or stops) keeping trace records and packets, so that the two
   * writers below have something from here on. VERBSIM_KEEP=1 keeps them
   * from the start. */
  int (*keep_records)(int keep);
  /* Writes the trace kept so far as text, one record per line. */
  int (*write_trace)(const char *path);
  /* Writes the packets kept so far as a RoCEv2 pcap file. */
  int (*write_pcap)(const char *path);
};

int verbsim_add_faults(const char *rules);
int verbsim_clear_faults(void);
int verbsim_set_seed(uint64_t seed);
int verbsim_query_qp_counters(struct ibv_qp *qp,
                              struct verbsim_qp_counters *out);
int verbsim_query_node_counters(int node, struct verbsim_node_counters *out);
int verbsim_advance_time(uint64_t ns);
int verbsim_freeze_time(int frozen);
uint64_t verbsim_now_ns(void);
int verbsim_keep_records(int keep);
int verbsim_write_trace(const char *path);
int verbsim_write_pcap(const char *path);

/* Fills `c` from the libibverbs the program runs on: 1 when that is
 * verbsim's drop-in (every member set), 0 on a real libibverbs (every
 * member NULL). Calls nothing that needs linking with the drop-in. */
static inline int verbsim_control_open(struct verbsim_control *c) {
  /* The libibverbs the program already has (nothing is loaded here). */
  void *lib = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
#define VERBSIM_FIND_(member, name) \
  *(void **)(&c->member) = lib ? dlsym(lib, name) : (void *)0
  VERBSIM_FIND_(add_faults, "verbsim_add_faults");
  VERBSIM_FIND_(clear_faults, "verbsim_clear_faults");
  VERBSIM_FIND_(set_seed, "verbsim_set_seed");
  VERBSIM_FIND_(query_qp_counters, "verbsim_query_qp_counters");
  VERBSIM_FIND_(query_node_counters, "verbsim_query_node_counters");
  VERBSIM_FIND_(advance_time, "verbsim_advance_time");
  VERBSIM_FIND_(freeze_time, "verbsim_freeze_time");
  VERBSIM_FIND_(now_ns, "verbsim_now_ns");
  VERBSIM_FIND_(keep_records, "verbsim_keep_records");
  VERBSIM_FIND_(write_trace, "verbsim_write_trace");
  VERBSIM_FIND_(write_pcap, "verbsim_write_pcap");
#undef VERBSIM_FIND_
  if (lib) dlclose(lib);  /* the program's own reference keeps it loaded */
  if (c->add_faults && c->clear_faults && c->set_seed &&
      c->query_qp_counters && c->query_node_counters && c->advance_time &&
      c->freeze_time && c->now_ns && c->keep_records && c->write_trace && c->write_pcap)
    return 1;
  *c = (struct verbsim_control){0};
  return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* VERBSIM_CONTROL_H_ */
