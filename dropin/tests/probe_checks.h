/* The checks of the probes that run with an answer set (verb_checks_probe,
 * handle_checks_probe, mw_probe): each check expects rxe's answer unless the
 * probe's table gives the set another one (or kNotMade: the check is not
 * made with that set, and why is printed as "skip: ID: why"). Each check
 * prints "ok: ID" or "FAIL: ID: ...". */
#ifndef VERBSIM_DROPIN_TESTS_PROBE_CHECKS_H_
#define VERBSIM_DROPIN_TESTS_PROBE_CHECKS_H_

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { kNotMade = -1000 };

/* A set's answer where it is not rxe's. */
struct probe_answer {
  const char *set;
  const char *id;
  int answer;
  const char *why; /* for kNotMade */
};

/* The set ("rxe", "ibta" or "siw"; exits 1 for another) and the probe's
 * table of other answers. */
void probe_use_answers(const char *set, const struct probe_answer *table,
                       size_t n);
const char *probe_answer_set(void);
/* The answer check `id` expects: the table's for the set, else `rxe`. */
long probe_answer(const char *id, long rxe);
/* Counts a check; prints ok or FAIL with fmt (two longs, or a long and a
 * string where fmt has %s). */
void probe_pass(const char *id, int ok, const char *fmt, long a, long b);
void probe_skip(const char *id, const char *why);
/* The command line the three probes share, DEVICE [GID_INDEX [ANSWERS]]:
 * makes stdout line-buffered, opens DEVICE (the first device when absent),
 * sets *gid_index (0 when absent) and the answer set ("rxe" when absent)
 * with the probe's table. */
struct ibv_context;
struct ibv_context *probe_start(int argc, char **argv,
                                const struct probe_answer *table, size_t n,
                                int *gid_index);
/* Prints "<probe>: N checks, F failed"; the exit status (1 if one failed). */
int probe_summary(const char *probe);

/* A call returning an errno value: `want` (0 for success). */
#define EXPECT_RC(id, rxe_want, expr)                                       \
  do {                                                                      \
    long want_ = probe_answer(id, rxe_want);                                \
    if (want_ == kNotMade) break;                                           \
    errno = 0;                                                              \
    int rc_ = (expr);                                                       \
    probe_pass(id, rc_ == want_, "want %ld, got %ld", want_, (long)rc_);    \
  } while (0)

/* A call returning an object: NULL with errno `want`, or an object when
 * `want` is 0. Frees what came with `destroy`. */
#define EXPECT_NULL(id, rxe_want, expr, destroy)                            \
  do {                                                                      \
    long want_ = probe_answer(id, rxe_want);                                \
    if (want_ == kNotMade) break;                                           \
    errno = 0;                                                              \
    void *got_ = (void *)(expr);                                            \
    int err_ = errno;                                                       \
    probe_pass(id, want_ ? (got_ == NULL && err_ == want_) : got_ != NULL,  \
               "want errno %ld (0: an object), got %s", want_,              \
               got_ ? (long)"an object" : (long)"NULL");                    \
    if (got_ == NULL && err_ != want_)                                      \
      printf("  (errno %d: %s)\n", err_, strerror(err_));                   \
    if (got_) destroy(got_);                                                \
  } while (0)

#endif /* VERBSIM_DROPIN_TESTS_PROBE_CHECKS_H_ */
