// One process of the soak run (tools/soak.sh starts them; docs/reliability.md
// "Soak"). Exit status: 0 when every check held, 1 on a finding, 2 when it
// could not start (bad options, setup).
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/environment.h"
#include "tools/soak/options.h"
#include "tools/soak/worker.h"

int main(int argc, char** argv) {
  verbsim::soak::Options options;
  const std::string error = verbsim::soak::ParseOptions(argc, argv, &options);
  if (!error.empty()) {
    std::fprintf(stderr, "soak_worker: %s\n", error.c_str());
    return 2;
  }
  // The worker gives the fabric its own options and fault rules.
  for (const char* name : {verbsim::env::kUdp, verbsim::env::kFaults}) {
    if (verbsim::env::Get(name)) {
      std::fprintf(stderr, "soak_worker: %s is set; the soak sets the "
                           "fabric's options itself\n", name);
      return 2;
    }
  }
  // A last resort should every other bound fail: the run, the meetings and
  // the watchdog all fit well inside it.
  alarm(static_cast<unsigned>(options.seconds + 4 * options.watchdog + 240));
  verbsim::soak::Worker worker(options);
  if (absl::Status st = worker.Setup(); !st.ok()) {
    std::printf("setup-failed %s\n", st.ToString().c_str());
    std::fflush(stdout);
    return 2;
  }
  return worker.Run() ? 0 : 1;
}
