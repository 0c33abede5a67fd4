// RC over a lossy, duplicating, reordering fabric: exactly once, in order,
// intact. Determinism: the same seed gives the same trace hash.
#include <cstdlib>
#include <set>

#include "absl/strings/numbers.h"
#include "core/environment.h"
#include "gtest/gtest.h"
#include "sim/testing/seeds.h"
#include "sim/testing/rc_property.h"

namespace verbsim::sim::testing {
namespace {

// One million messages (VERBSIM_PROPERTY_MESSAGES overrides).
TEST(RcProperty, MillionMessagesUnderTenPercentLossExactlyOnceInOrder) {
  const env::Number<uint64_t> count =
      env::GetNumber<uint64_t>(env::kPropertyMessages, 1, UINT64_MAX);
  ASSERT_TRUE(count.ok()) << count.error;
  const uint64_t messages = count.value.value_or(1000000);
  ForEachSeed(1, [&](uint64_t seed) {
    PropertyOptions options;
    options.seed = seed;
    options.messages = messages;
    options.keep_trace = env::IsOn(env::kPropertyTrace);
    PropertyResult result;
    absl::Status s = RunRcProperty(options, &result);
    ASSERT_TRUE(s.ok()) << s << "\n" << result.trace_tail;
    EXPECT_EQ(result.messages, messages);
    // Loss and go-back-N cost extra packets: more than request + response.
    EXPECT_GT(result.packets, 2 * messages);
    std::cout << messages << " messages, " << result.packets << " packets, "
              << result.virtual_seconds << " s virtual\n";
  });
}

TEST(RcProperty, SameSeedSameTraceOverAHundredSeeds) {
  std::set<uint64_t> hashes;
  ForEachSeed(100, [&](uint64_t seed) {
    PropertyOptions options;
    options.seed = seed;
    options.messages = 300;
    PropertyResult first, second;
    absl::Status s = RunRcProperty(options, &first);
    ASSERT_TRUE(s.ok()) << s;
    s = RunRcProperty(options, &second);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(first.trace_hash, second.trace_hash);
    EXPECT_EQ(first.packets, second.packets);
    hashes.insert(first.trace_hash);
  });
  // Different seeds take different paths (loss, duplication, jitter).
  EXPECT_GT(hashes.size(), 90u);
}

}  // namespace
}  // namespace verbsim::sim::testing
