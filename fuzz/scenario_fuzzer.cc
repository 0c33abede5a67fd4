// Harness for the scenario language of the CLI (tools/verbsim/scenario.h
// ParseScenario, docs/cli.md): the input is a scenario file.
//
// Invariants:
//  - parsing never crashes or reads out of bounds, whatever the bytes;
//  - a second parse gives the same verdict, message and command count;
//  - a refusal reads "fuzz.scenario:LINE:COLUMN: ..." with LINE inside the
//    file.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "tools/verbsim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto a = verbsim::cli::ParseScenario("fuzz.scenario", text);
  auto b = verbsim::cli::ParseScenario("fuzz.scenario", text);
  if (a.ok() != b.ok()) std::abort();
  if (a.ok()) {
    if (a->commands.size() != b->commands.size()) std::abort();
    return 0;
  }
  if (a.status().message() != b.status().message()) std::abort();
  const std::string message(a.status().message());
  if (!absl::StartsWith(message, "fuzz.scenario:")) return 0;
  std::vector<std::string> parts =
      absl::StrSplit(message.substr(14), absl::MaxSplits(':', 1));
  uint64_t line = 0;
  const uint64_t lines = std::count(text.begin(), text.end(), '\n') + 1;
  if (parts.empty() || !absl::SimpleAtoi(parts[0], &line) || line < 1 ||
      line > lines + 1) {
    std::abort();
  }
  return 0;
}
