// Running a test body under many seeds, FoundationDB-style: a failure names
// its seed and the command that replays that one seed.
#ifndef VERBSIM_SIM_TESTING_SEEDS_H_
#define VERBSIM_SIM_TESTING_SEEDS_H_

#include <cstdint>
#include <functional>
#include <string>

namespace verbsim::sim::testing {

// Runs body(seed) for seeds first .. first + count - 1, or for the one seed in
// VERBSIM_SEED when that is set. Each failure is reported with its seed and
// the replay command; the loop stops at the first failing seed.
void ForEachSeed(int count, const std::function<void(uint64_t seed)>& body,
                 uint64_t first = 1);

// "VERBSIM_SEED=<seed> bazel test <target> --test_env=VERBSIM_SEED=<seed>
//  --test_filter=<Suite.Test>" for the running test.
std::string ReplayCommand(uint64_t seed);

}  // namespace verbsim::sim::testing

#endif  // VERBSIM_SIM_TESTING_SEEDS_H_
