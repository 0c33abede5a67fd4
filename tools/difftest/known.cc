#include "tools/difftest/known.h"

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/errors.h"

namespace verbsim::difftest {

absl::StatusOr<std::set<uint64_t>> ParseKnown(absl::string_view text) {
  std::set<uint64_t> seeds;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(words[0], &seed)) {
      return Errno(EINVAL, "line %d: '%s' does not start with a seed", number,
                   std::string(line));
    }
    seeds.insert(seed);
  }
  return seeds;
}

absl::StatusOr<std::set<uint64_t>> ReadKnown(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Errno(errno != 0 ? errno : EIO, "cannot read %s", path);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::set<uint64_t>> seeds = ParseKnown(text.str());
  if (!seeds.ok()) return Errno(EINVAL, "%s: %s", path, seeds.status().message());
  return seeds;
}

}  // namespace verbsim::difftest
