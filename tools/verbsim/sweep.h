// verbsim exec --seeds: runs a program once per seed of the simulated
// fabric and groups the seeds by how the program ended (docs/cli.md).
#ifndef VERBSIM_TOOLS_VERBSIM_SWEEP_H_
#define VERBSIM_TOOLS_VERBSIM_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace verbsim::cli {

struct SweepOptions {
  uint64_t first_seed = 1;
  uint64_t last_seed = 1;
  int timeout_s = 60;  // per run; the run's process group is killed after
  int lines = 1;       // how many last lines of output make the ending
  // How to replay one seed: the options that were given (without the
  // sweep's own) and the command.
  std::vector<std::string> replay_options;
  std::vector<std::string> command;
};

// "1-100" or "100" (meaning 1-100).
absl::Status ParseSeedRange(absl::string_view text, SweepOptions* options);

// Runs options.command once per seed with VERBSIM_SEED set (the rest of
// the environment is the caller's), prints the histogram and the replay
// command of the first seed that ends unlike the most common ending.
// Returns 0 when every seed ended the same way, 1 when they did not, 127
// when the command cannot be run.
int Sweep(const SweepOptions& options);

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_SWEEP_H_
