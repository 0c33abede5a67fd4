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
  EXPECT_EQ(t->bytes[0].size(), kArenaBytes);
  EXPECT_EQ(t->bytes[1].size(), kArenaBytes);
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

TEST(LocalOrRemoteErrorRace, OneWrsErrorClassAndNothingElse) {
  Trace sim;
  sim.calls = {"0 post_send qp0 -> qp0 ok"};
  sim.completions["qp0 send"] = {"wr 7 SUCCESS RDMA_WRITE",
                                 "wr 8 REM_ACCESS_ERR", "wr 9 WR_FLUSH_ERR"};
  sim.completions["qp1 recv"] = {"wr 3 WR_FLUSH_ERR"};
  Trace dev = sim;
  dev.completions["qp0 send"][1] = "wr 8 LOC_PROT_ERR";
  EXPECT_TRUE(LocalOrRemoteErrorRace(sim, dev));
  EXPECT_TRUE(LocalOrRemoteErrorRace(dev, sim));
  Trace same_class = sim;
  same_class.completions["qp0 send"][1] = "wr 8 REM_OP_ERR";
  EXPECT_FALSE(LocalOrRemoteErrorRace(sim, same_class));
  Trace flushed = sim;
  flushed.completions["qp0 send"][1] = "wr 8 WR_FLUSH_ERR";
  EXPECT_FALSE(LocalOrRemoteErrorRace(sim, flushed));
  Trace more = dev;
  more.completions["qp1 recv"].clear();
  EXPECT_FALSE(LocalOrRemoteErrorRace(sim, more));
  Trace bytes = dev;
  bytes.bytes[1] = {1};
  EXPECT_FALSE(LocalOrRemoteErrorRace(sim, bytes));
  Trace two = dev;
  two.completions["qp0 send"][2] = "wr 9 LOC_QP_OP_ERR";
  sim.completions["qp0 send"][2] = "wr 9 REM_OP_ERR";
  EXPECT_FALSE(LocalOrRemoteErrorRace(sim, two));
  EXPECT_FALSE(LocalOrRemoteErrorRace(sim, sim));
}

}  // namespace
}  // namespace verbsim::difftest
