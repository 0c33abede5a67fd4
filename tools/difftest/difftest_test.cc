#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tools/difftest/known.h"
#include "tools/difftest/program.h"
#include "tools/difftest/runner.h"
#include "tools/difftest/shrink.h"

namespace verbsim::difftest {
namespace {

// On a sim the runner waits in virtual time only, so the defaults cost no
// wall time.
RunOptions Fast() { return RunOptions(); }

TEST(Generate, ASeedAlwaysGivesTheSameProgram) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(Describe(Generate(seed, 24)), Describe(Generate(seed, 24)));
  }
  EXPECT_NE(Describe(Generate(1, 24)), Describe(Generate(2, 24)));
  EXPECT_EQ(Generate(3, 10).ops.size(), 7u + 10u + 1u);  // set-up, ops, poll
}

TEST(RunBoth, AProfileAgreesWithItself) {
  for (const char* spec : {"sim:rxe", "sim:siw"}) {
    for (uint64_t seed = 0; seed < 8; ++seed) {
      const Outcome o = RunBoth(Generate(seed, 24), spec, spec, Fast());
      ASSERT_FALSE(o.broken) << o.differences[0];
      EXPECT_TRUE(o.differences.empty())
          << spec << " seed " << seed << ": " << o.differences[0];
      EXPECT_EQ(o.a.calls.size(), Generate(seed, 24).ops.size());
    }
  }
}

TEST(RunBoth, TheTraceNamesObjectsByTheProgramsIndices) {
  const Program p = Generate(0, 0);
  absl::StatusOr<Trace> t = RunProgram(p, "sim:rxe", Fast());
  ASSERT_TRUE(t.ok()) << t.status();
  for (const std::string& call : t->calls) {
    // No key, QP number or address: only mrN / qpN and errno names.
    EXPECT_EQ(call.find("0x5a5a"), std::string::npos) << call;
  }
  EXPECT_EQ(t->bytes[0].size(), kBufferBytes);
  EXPECT_EQ(t->bytes[1].size(), kBufferBytes);
}

TEST(Shrink, KeepsADifferenceInASmallerProgram) {
  // The ibta profile grants what a QP asks for; rxe rounds its send SGEs
  // and inline size up (rxe_qp.c rxe_qp_init_req): the create_qp lines of
  // some program differ.
  Program diverging;
  bool found = false;
  for (uint64_t seed = 0; seed < 20 && !found; ++seed) {
    const Program p = Generate(seed, 8);
    const Outcome o = RunBoth(p, "sim", "sim:rxe", Fast());
    ASSERT_FALSE(o.broken) << o.differences[0];
    if (!o.differences.empty()) {
      diverging = p;
      found = true;
    }
  }
  ASSERT_TRUE(found) << "sim and sim:rxe agreed on every program";
  const Program small = Shrink(diverging, "sim", "sim:rxe", Fast());
  EXPECT_LT(small.ops.size(), diverging.ops.size());
  EXPECT_LE(small.ops.size(), 3u) << Describe(small);
  EXPECT_FALSE(RunBoth(small, "sim", "sim:rxe", Fast()).differences.empty());
}

TEST(Known, ListsTheSeedsAndNamesABadLine) {
  absl::StatusOr<std::set<uint64_t>> seeds =
      ParseKnown("# header\n\n4 rxe: RNR retries\n  12\tnote\n4 again\n");
  ASSERT_TRUE(seeds.ok()) << seeds.status();
  EXPECT_EQ(*seeds, (std::set<uint64_t>{4, 12}));
  absl::StatusOr<std::set<uint64_t>> bad = ParseKnown("4\nseed 5\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos)
      << bad.status();
  EXPECT_FALSE(ReadKnown("/nonexistent/known.txt").ok());
}

}  // namespace
}  // namespace verbsim::difftest
