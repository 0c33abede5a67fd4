#include "core/environment.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace verbsim::env {
namespace {

constexpr char kVar[] = "VERBSIM_ENVIRONMENT_TEST";

TEST(Environment, UnsetAndEmptyAreNotGiven) {
  unsetenv(kVar);
  EXPECT_FALSE(Get(kVar).has_value());
  EXPECT_FALSE(IsOn(kVar));
  setenv(kVar, "", 1);
  EXPECT_FALSE(Get(kVar).has_value());
  EXPECT_FALSE(IsOn(kVar));
  const Number<int> n = GetNumber(kVar, 1, 64);
  EXPECT_TRUE(n.ok());
  EXPECT_FALSE(n.value.has_value());
}

TEST(Environment, ASwitchIsOnUnlessZero) {
  setenv(kVar, "0", 1);
  EXPECT_FALSE(IsOn(kVar));
  setenv(kVar, "1", 1);
  EXPECT_TRUE(IsOn(kVar));
  setenv(kVar, "yes", 1);
  EXPECT_TRUE(IsOn(kVar));
  unsetenv(kVar);
}

TEST(Environment, ANumberInRangeIsRead) {
  setenv(kVar, "64", 1);
  const Number<int> n = GetNumber(kVar, 1, 64);
  ASSERT_TRUE(n.ok()) << n.error;
  EXPECT_EQ(n.value, 64);
  setenv(kVar, "18446744073709551615", 1);
  const Number<uint64_t> seed = GetNumber<uint64_t>(kVar, 0, UINT64_MAX);
  ASSERT_TRUE(seed.ok()) << seed.error;
  EXPECT_EQ(seed.value, UINT64_MAX);
  unsetenv(kVar);
}

TEST(Environment, ABadNumberIsAnErrorNamingTheVariableAndValue) {
  for (const char* bad : {"abc", "2x", "65", "0", "-1", " 3"}) {
    setenv(kVar, bad, 1);
    const Number<int> n = GetNumber(kVar, 1, 64);
    EXPECT_FALSE(n.ok()) << bad;
    EXPECT_FALSE(n.value.has_value()) << bad;
    EXPECT_EQ(n.error, std::string(kVar) + "='" + bad +
                           "' is not a number in 1..64");
  }
  setenv(kVar, "-1", 1);
  EXPECT_FALSE((GetNumber<uint64_t>(kVar, 0, UINT64_MAX).ok()));
  unsetenv(kVar);
}

}  // namespace
}  // namespace verbsim::env
