// Runs a generated program (program.h) on one provider and writes what it
// saw as a normalized trace: every call's errno, every completion, and the
// bytes of both buffers at the end. Keys, QP numbers and addresses appear
// only as the program's own indices, so two providers' traces compare
// field by field.
#ifndef VERBSIM_TOOLS_DIFFTEST_RUNNER_H_
#define VERBSIM_TOOLS_DIFFTEST_RUNNER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/provider.h"
#include "tools/difftest/program.h"

namespace verbsim::difftest {

struct Trace {
  // One line per operation: what it was and what the call returned.
  std::vector<std::string> calls;
  // Completions in arrival order per queue ("qp2 send", "qp0 recv").
  std::map<std::string, std::vector<std::string>> completions;
  // Both buffers at the end.
  std::vector<uint8_t> bytes[2];
};

struct RunOptions {
  // A poll waits this long without a new completion before it ends.
  absl::Duration quiet = absl::Milliseconds(10);
  // The last poll's quiet time.
  // Long enough for a device's retries to run out (timeout 12, retry_cnt
  // 2 as the runner connects: about 70 ms on rxe).
  absl::Duration final_quiet = absl::Milliseconds(300);
};

// Runs `program` on `spec`'s provider (its first two devices, or one twice).
absl::StatusOr<Trace> RunProgram(const Program& program,
                                 const std::string& spec,
                                 const RunOptions& options = RunOptions());

// Where two traces differ, one line each; empty when they agree.
std::vector<std::string> Compare(const Trace& a, const Trace& b,
                                 const std::string& name_a,
                                 const std::string& name_b);

// The whole trace, for printing.
std::string Format(const Trace& trace);

}  // namespace verbsim::difftest

#endif  // VERBSIM_TOOLS_DIFFTEST_RUNNER_H_
