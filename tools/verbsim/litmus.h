// Litmus tests of RDMA ordering and visibility (docs/ordering.md): a small
// program of posts and CPU observations on two or three simulated nodes,
// run over many seeds, with the outcomes the memory model allows. The file
// format is in docs/cli.md; the library is docs/litmus/*.litmus.
#ifndef VERBSIM_TOOLS_VERBSIM_LITMUS_H_
#define VERBSIM_TOOLS_VERBSIM_LITMUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace verbsim::cli {

// An outcome the model allows: the observations ("d=1 f=1"), whether it is
// the strong outcome every device gives or a weak one the spec allows, and
// the rule of docs/ordering.md that allows it.
struct LitmusOutcome {
  std::string observed;
  bool weak = false;
  std::string rule;   // "B1", "W2", "R3", ... ("" for a strong outcome)
  std::string about;  // what it means, for the histogram
  int line = 0;
};

// One line of the program, parsed.
struct LitmusStep {
  int line = 0;
  std::vector<std::string> words;
};

struct LitmusTest {
  std::string file;
  std::string name;
  std::string about;
  int nodes = 2;
  std::vector<LitmusStep> steps;  // qp, buf and program lines, in order
  std::vector<LitmusOutcome> outcomes;
};

// Parses and checks a litmus file; errors read "file:line: ...".
absl::StatusOr<LitmusTest> ParseLitmus(absl::string_view file,
                                       absl::string_view text);

// One run on profile `profile` with seed `seed`: the outcome as text
// (observations in program order, "name=value" joined by spaces) and, when
// asked, the timeline (the sim's trace and the program's steps).
struct LitmusRun {
  std::string outcome;
  std::string timeline;
};
absl::StatusOr<LitmusRun> RunLitmus(const LitmusTest &test,
                                    const std::string &profile, uint64_t seed,
                                    bool timeline);

// Whether the MemoryModel of `profile` allows the weak outcomes of `rule`
// (B1, W2, R3); false for a rule no field governs.
absl::StatusOr<bool> ProfileAllowsRule(const std::string &profile,
                                       const std::string &rule);

// `verbsim litmus FILE...` (argv[first..]): exit 0 when every file held on
// every profile asked for, 1 when an outcome broke the model or an expected
// weak outcome was not reached, 2 for a wrong command line or file.
int Litmus(int argc, char **argv, int first);
const char *LitmusHelp();

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_LITMUS_H_
