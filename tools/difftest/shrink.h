// Running one program on two providers, and shrinking a program whose
// traces differ to a smaller one that still differs.
#ifndef VERBSIM_TOOLS_DIFFTEST_SHRINK_H_
#define VERBSIM_TOOLS_DIFFTEST_SHRINK_H_

#include <string>
#include <vector>

#include "tools/difftest/program.h"
#include "tools/difftest/runner.h"

namespace verbsim::difftest {

struct Outcome {
  std::vector<std::string> differences;  // empty: the traces agree
  bool broken = false;  // a provider could not run the program at all
  Trace a, b;
};

Outcome RunBoth(const Program& program, const std::string& spec_a,
                const std::string& spec_b, const RunOptions& options);

// Drops operations one at a time, last first, while the program still
// differs, until no single operation can go.
Program Shrink(const Program& program, const std::string& spec_a,
               const std::string& spec_b, const RunOptions& options);

}  // namespace verbsim::difftest

#endif  // VERBSIM_TOOLS_DIFFTEST_SHRINK_H_
