#include "sim/testing/seeds.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/environment.h"
#include "gtest/gtest.h"

namespace verbsim::sim::testing {

std::string ReplayCommand(uint64_t seed) {
  const char* target = std::getenv("TEST_TARGET");  // set by bazel test
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string filter =
      info == nullptr
          ? std::string("*")
          : absl::StrCat(info->test_suite_name(), ".", info->name());
  return absl::StrCat("bazel test ", target ? target : "<target>",
                      " --test_env=VERBSIM_SEED=", seed,
                      " --test_filter=", filter);
}

void ForEachSeed(int count, const std::function<void(uint64_t seed)>& body,
                 uint64_t first) {
  const env::Number<uint64_t> seed =
      env::GetNumber<uint64_t>(env::kSeed, 0, UINT64_MAX);
  if (!seed.ok()) {
    ADD_FAILURE() << seed.error;
    return;
  }
  const uint64_t only = seed.value.value_or(0);
  const uint64_t begin = only != 0 ? only : first;
  const uint64_t end = only != 0 ? only + 1 : first + count;
  for (uint64_t seed = begin; seed < end; ++seed) {
    const bool failed_before = ::testing::Test::HasFailure();
    {
      SCOPED_TRACE(absl::StrCat("seed ", seed, "; replay it with: ",
                                ReplayCommand(seed)));
      body(seed);
    }
    if (!failed_before && ::testing::Test::HasFailure()) {
      std::cerr << "FAILED with seed " << seed << "; replay with:\n  "
                << ReplayCommand(seed) << "\n";
      return;
    }
  }
}

}  // namespace verbsim::sim::testing
