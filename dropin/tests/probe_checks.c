#include "dropin/tests/probe_checks.h"

#include <stdlib.h>

#include "dropin/tests/probe_qp.h"

static int checks, failures;
static const char *answer_set = "rxe";
static const struct probe_answer *answers;
static size_t answer_count;

void probe_use_answers(const char *set, const struct probe_answer *table,
                       size_t n) {
  if (strcmp(set, "rxe") && strcmp(set, "ibta") && strcmp(set, "siw")) {
    printf("FAIL: the answer set is rxe, ibta or siw, not '%s'\n", set);
    exit(1);
  }
  answer_set = set;
  answers = table;
  answer_count = n;
}

const char *probe_answer_set(void) { return answer_set; }

long probe_answer(const char *id, long rxe) {
  for (size_t i = 0; i < answer_count; i++) {
    if (strcmp(answers[i].set, answer_set) == 0 &&
        strcmp(answers[i].id, id) == 0) {
      if (answers[i].answer == kNotMade)
        printf("skip: %s: %s\n", id, answers[i].why);
      return answers[i].answer;
    }
  }
  return rxe;
}

void probe_pass(const char *id, int ok, const char *fmt, long a, long b) {
  checks++;
  if (ok) {
    printf("ok: %s\n", id);
    return;
  }
  failures++;
  printf("FAIL: %s: ", id);
  if (strstr(fmt, "%s"))
    printf(fmt, a, (const char *)b);
  else
    printf(fmt, a, b);
  printf("\n");
}

void probe_skip(const char *id, const char *why) {
  printf("skip: %s: %s\n", id, why);
}

struct ibv_context *probe_start(int argc, char **argv,
                                const struct probe_answer *table, size_t n,
                                int *gid_index) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct ibv_context *ctx = probe_open(argc > 1 ? argv[1] : NULL);
  *gid_index = argc > 2 ? atoi(argv[2]) : 0;
  probe_use_answers(argc > 3 ? argv[3] : "rxe", table, n);
  return ctx;
}

int probe_summary(const char *probe) {
  printf("%s: %d checks, %d failed\n", probe, checks, failures);
  return failures ? 1 : 0;
}
