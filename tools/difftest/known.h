// The seeds of a fixed set that are known to diverge (docs/fidelity.md,
// "Differential runs", lists their classes): a file of lines "SEED note",
// '#' comments and blank lines ignored.
#ifndef VERBSIM_TOOLS_DIFFTEST_KNOWN_H_
#define VERBSIM_TOOLS_DIFFTEST_KNOWN_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace verbsim::difftest {

// The seeds `text` lists; EINVAL naming the line that does not start with
// one.
absl::StatusOr<std::set<uint64_t>> ParseKnown(absl::string_view text);

// The same for the file at `path` (ENOENT and the like as read errors).
absl::StatusOr<std::set<uint64_t>> ReadKnown(const std::string& path);

}  // namespace verbsim::difftest

#endif  // VERBSIM_TOOLS_DIFFTEST_KNOWN_H_
