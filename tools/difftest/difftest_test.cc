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

// What no race classifier takes for a race: `dev`, which it takes for
// one against `sim`, with the bytes of one arena changed too; and two
// equal traces.
template <typename Classifier>
void ExpectNoRaceInBytesOrEqualTraces(Classifier race, const Trace& sim,
                                      const Trace& dev, int arena) {
  Trace bytes = dev;
  bytes.bytes[arena] = {1};
  EXPECT_FALSE(race(sim, bytes));
  EXPECT_FALSE(race(sim, sim));
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
  ExpectNoRaceInBytesOrEqualTraces(LocalOrRemoteErrorRace, sim, dev, 1);
  Trace two = dev;
  two.completions["qp0 send"][2] = "wr 9 LOC_QP_OP_ERR";
  sim.completions["qp0 send"][2] = "wr 9 REM_OP_ERR";
  EXPECT_FALSE(LocalOrRemoteErrorRace(sim, two));
}

TEST(TransmitCutByTerminateRace, OneWrsLocQpOpErrAgainstItsSuccess) {
  Trace sim;
  sim.calls = {"0 post_send qp0 -> qp0 ok"};
  sim.completions["qp0 send"] = {"wr 7 SUCCESS RDMA_WRITE",
                                 "wr 9 WR_FLUSH_ERR"};
  sim.completions["qp1 recv"] = {"wr 3 GENERAL_ERR"};
  // In place of a signaled WR's success.
  Trace dev = sim;
  dev.completions["qp0 send"][0] = "wr 7 LOC_QP_OP_ERR";
  EXPECT_TRUE(TransmitCutByTerminateRace(sim, dev));
  EXPECT_TRUE(TransmitCutByTerminateRace(dev, sim));
  // Where an unsignaled WR's success said nothing.
  Trace unsignaled = sim;
  unsignaled.completions["qp0 send"].insert(
      unsignaled.completions["qp0 send"].begin() + 1, "wr 8 LOC_QP_OP_ERR");
  EXPECT_TRUE(TransmitCutByTerminateRace(sim, unsignaled));
  // Another status, another WR's success, or anything else different.
  Trace other = sim;
  other.completions["qp0 send"][0] = "wr 7 LOC_PROT_ERR";
  EXPECT_FALSE(TransmitCutByTerminateRace(sim, other));
  Trace wrong_wr = sim;
  wrong_wr.completions["qp0 send"][0] = "wr 8 LOC_QP_OP_ERR";
  EXPECT_FALSE(TransmitCutByTerminateRace(sim, wrong_wr));
  Trace flushed = sim;
  flushed.completions["qp0 send"][1] = "wr 9 LOC_QP_OP_ERR";
  EXPECT_FALSE(TransmitCutByTerminateRace(sim, flushed));
  Trace recv = dev;
  recv.completions["qp1 recv"].clear();
  EXPECT_FALSE(TransmitCutByTerminateRace(sim, recv));
  ExpectNoRaceInBytesOrEqualTraces(TransmitCutByTerminateRace, sim, dev, 0);
  Trace calls = dev;
  calls.calls[0] = "0 post_send qp0 -> qp0 EINVAL";
  EXPECT_FALSE(TransmitCutByTerminateRace(sim, calls));
  Trace two_queues = dev;
  two_queues.completions["qp1 send"] = {"wr 4 LOC_QP_OP_ERR"};
  EXPECT_FALSE(TransmitCutByTerminateRace(sim, two_queues));
}

TEST(WedgedRequesterRace, OneQpSilentAgainstItsErrorAndFlushes) {
  Trace sim;
  sim.calls = {"0 post_send qp3 -> qp3 ok"};
  sim.completions["qp1 send"] = {"wr 7 REM_ACCESS_ERR", "wr 17 WR_FLUSH_ERR"};
  sim.completions["qp3 send"] = {"wr 24 REM_ACCESS_ERR", "wr 28 WR_FLUSH_ERR"};
  sim.completions["qp3 recv"] = {"wr 29 WR_FLUSH_ERR"};
  Trace dev = sim;
  dev.completions.erase("qp3 send");
  dev.completions.erase("qp3 recv");
  EXPECT_TRUE(WedgedRequesterRace(sim, dev));
  EXPECT_TRUE(WedgedRequesterRace(dev, sim));
  // The receive queue may have had nothing to flush.
  Trace no_recv = sim;
  no_recv.completions.erase("qp3 recv");
  EXPECT_TRUE(WedgedRequesterRace(no_recv, dev));
  // Not when the silent QP completed anything, when the other one's send
  // queue is not one error and flushes, or when anything else differs.
  Trace some = dev;
  some.completions["qp3 recv"] = {"wr 29 WR_FLUSH_ERR"};
  EXPECT_FALSE(WedgedRequesterRace(sim, some));
  Trace success = sim;
  success.completions["qp3 send"][0] = "wr 24 SUCCESS RDMA_READ";
  EXPECT_FALSE(WedgedRequesterRace(success, dev));
  Trace two_errors = sim;
  two_errors.completions["qp3 send"][1] = "wr 28 LOC_PROT_ERR";
  EXPECT_FALSE(WedgedRequesterRace(two_errors, dev));
  Trace other_qp = dev;
  other_qp.completions["qp1 send"].pop_back();
  EXPECT_FALSE(WedgedRequesterRace(sim, other_qp));
  ExpectNoRaceInBytesOrEqualTraces(WedgedRequesterRace, sim, dev, 1);
}

// A WRITE that starts in its region and runs past its end: on siw the
// part in the region is left out of the comparison (how much of it siw
// places depends on the TCP segments), on rxe it is compared. A READ
// without SGEs is not posted on siw.
TEST(RunProgram, OnSiwWhatSiwCannotMatchIsLeftOut) {
  Program p;
  Op reg;
  reg.kind = OpKind::kRegMr;
  reg.length = 8192;
  reg.a = 0xf;
  p.ops.push_back(reg);  // side0 mr0: 8 KiB
  reg.side = 1;
  reg.length = 4096;
  p.ops.push_back(reg);  // side1 mr0: 4 KiB
  Op qp;
  qp.kind = OpKind::kCreateQp;
  qp.a = qp.b = 16;
  qp.c = qp.d = 2;
  qp.e = 64;
  p.ops.push_back(qp);
  qp.side = 1;
  p.ops.push_back(qp);
  Op connect;
  connect.kind = OpKind::kConnect;
  p.ops.push_back(connect);
  Op write;
  write.kind = OpKind::kPostSend;
  write.b = 0;  // RDMA WRITE, side0's QP to side1's mr0 at 1 KiB
  write.c = 2;
  write.sges = {SgeSpec{0, 0, 6000}};
  write.offset = 1024;
  p.ops.push_back(write);
  p.ops.push_back(Op{});  // poll
  absl::StatusOr<Trace> siw = RunProgram(p, "sim:siw", Fast());
  ASSERT_TRUE(siw.ok()) << siw.status();
  EXPECT_NE(siw->calls[5].find("not compared"), std::string::npos)
      << siw->calls[5];
  EXPECT_EQ(std::vector<uint8_t>(siw->bytes[1].begin() + 1024,
                                 siw->bytes[1].begin() + 4096),
            std::vector<uint8_t>(4096 - 1024, 0));
  // Past the region nothing is written on any device: still compared.
  EXPECT_NE(siw->bytes[1][4096], 0);
  absl::StatusOr<Trace> rxe = RunProgram(p, "sim:rxe", Fast());
  ASSERT_TRUE(rxe.ok()) << rxe.status();
  EXPECT_EQ(rxe->calls[5].find("not compared"), std::string::npos)
      << rxe->calls[5];
  // A READ without SGEs: siw would read through its ring slot's last SGE,
  // so it is not posted there; rxe reads nothing and completes it.
  Op read = write;
  read.b = 4;  // RDMA READ
  read.sges.clear();
  p.ops[5] = read;
  siw = RunProgram(p, "sim:siw", Fast());
  ASSERT_TRUE(siw.ok()) << siw.status();
  EXPECT_NE(siw->calls[5].find("not posted"), std::string::npos)
      << siw->calls[5];
  rxe = RunProgram(p, "sim:rxe", Fast());
  ASSERT_TRUE(rxe.ok()) << rxe.status();
  EXPECT_NE(rxe->calls[5].find("-> qp0 ok"), std::string::npos)
      << rxe->calls[5];
}

}  // namespace
}  // namespace verbsim::difftest
