// Runs the examples of docs/faults.md: every rule in a ```faults block parses,
// every line of a ```faults-errors block fails with the message shown, and
// the worked example's trace is exactly the ```trace block.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/faults.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

std::string ReadDoc() {
  std::ifstream in("docs/faults.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The bodies of the fenced blocks tagged `tag`.
std::vector<std::string> Blocks(const std::string& doc, const std::string& tag) {
  std::vector<std::string> out;
  const std::string open = "```" + tag + "\n";
  size_t at = 0;
  while ((at = doc.find(open, at)) != std::string::npos) {
    at += open.size();
    size_t end = doc.find("```", at);
    out.push_back(doc.substr(at, end - at));
    at = end;
  }
  return out;
}

// The worked example: a three-packet write whose middle packet is lost.
std::string WorkedExampleTrace() {
  auto provider = *OpenProvider("sim:seed=1");
  Fabric& fabric = AsSimProvider(provider.get())->fabric();
  auto pair = *CreateConnectedPair(*provider);
  EXPECT_TRUE(fabric.AddFaults("drop op=RDMA_WRITE_MIDDLE nth=1").ok());
  fabric.KeepTrace(true);
  std::vector<char> src(2500, 'x'), dst(2500);
  auto smr = *pair.client->RegMsgs(src.data(), src.size());
  auto dmr = *pair.server->RegWrite(dst.data(), dst.size());
  EXPECT_TRUE(pair.client
                  ->PostWrite(1, src.data(), src.size(), smr.get(),
                              kSendSignaled,
                              reinterpret_cast<uint64_t>(dst.data()),
                              dmr->rkey())
                  .ok());
  auto wc = pair.client->GetSendComp();
  EXPECT_TRUE(wc.ok() && wc->status == WcStatus::kSuccess);
  EXPECT_EQ(src, dst);
  return fabric.TraceText();
}

TEST(FaultsDoc, EveryRuleParses) {
  const std::vector<std::string> blocks = Blocks(ReadDoc(), "faults");
  ASSERT_GE(blocks.size(), 1u);
  int parsed = 0;
  for (const std::string& block : blocks) {
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      if (absl::StripAsciiWhitespace(line).empty()) continue;
      auto plan = ParseFaults(line);
      EXPECT_TRUE(plan.ok()) << line << ": " << plan.status();
      ++parsed;
    }
  }
  EXPECT_GE(parsed, 8);
}

TEST(FaultsDoc, EveryErrorIsAsShown) {
  const std::vector<std::string> blocks = Blocks(ReadDoc(), "faults-errors");
  ASSERT_EQ(blocks.size(), 1u);
  int checked = 0;
  for (absl::string_view line : absl::StrSplit(blocks[0], '\n')) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<std::string> parts = absl::StrSplit(line, " -> ");
    ASSERT_EQ(parts.size(), 2u) << line;
    auto plan = ParseFaults(parts[0]);
    ASSERT_FALSE(plan.ok()) << parts[0];
    EXPECT_NE(std::string(plan.status().message()).find(parts[1]),
              std::string::npos)
        << parts[0] << " said: " << plan.status().message();
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(FaultsDoc, WorkedExampleTraceIsAsShown) {
  const std::vector<std::string> blocks = Blocks(ReadDoc(), "trace");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(WorkedExampleTrace(), blocks[0]);
}

}  // namespace
}  // namespace verbsim::sim
