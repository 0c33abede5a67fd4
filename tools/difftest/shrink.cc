#include "tools/difftest/shrink.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace verbsim::difftest {

Outcome RunBoth(const Program& program, const std::string& spec_a,
                const std::string& spec_b, const RunOptions& options) {
  Outcome out;
  absl::StatusOr<Trace> a = RunProgram(program, spec_a, options);
  absl::StatusOr<Trace> b = RunProgram(program, spec_b, options);
  if (!a.ok() || !b.ok()) {
    out.broken = true;
    out.differences.push_back(absl::StrCat(
        spec_a, ": ", a.status().ToString(), " | ", spec_b, ": ",
        b.status().ToString()));
    return out;
  }
  out.a = *std::move(a);
  out.b = *std::move(b);
  out.differences = Compare(out.a, out.b, spec_a, spec_b);
  return out;
}

Program Shrink(const Program& program, const std::string& spec_a,
               const std::string& spec_b, const RunOptions& options) {
  Program best = program;
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t i = best.ops.size(); i-- > 0;) {
      if (best.ops.size() <= 1) break;
      Program smaller = best;
      smaller.ops.erase(smaller.ops.begin() + static_cast<long>(i));
      const Outcome o = RunBoth(smaller, spec_a, spec_b, options);
      if (!o.broken && !o.differences.empty()) {
        best = smaller;
        progress = true;
      }
    }
  }
  return best;
}

}  // namespace verbsim::difftest
