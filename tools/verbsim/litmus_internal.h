// What the parts of `verbsim litmus` share: the litmus language's names
// of nodes and MTUs, and the rules of docs/ordering.md a weak outcome names.
#ifndef VERBSIM_TOOLS_VERBSIM_LITMUS_INTERNAL_H_
#define VERBSIM_TOOLS_VERBSIM_LITMUS_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"
#include "sim/profile.h"

namespace verbsim::cli::litmus_internal {

// A node's letter, A to C, as an index; -1 for anything else.
int NodeIndex(absl::string_view name);

// The MTU enum of `bytes` (256 .. 4096), or nothing.
std::optional<Mtu> MtuFromBytes(uint64_t bytes);

// Whether profile `p` takes the weak choice of `rule` (B1, W2, R3): the
// MemoryModel field that makes the rule's weak outcomes reachable; an error
// for a rule no field governs.
absl::StatusOr<bool> RuleIsWeak(const sim::SimProfile &p,
                                const std::string &rule);

}  // namespace verbsim::cli::litmus_internal

#endif  // VERBSIM_TOOLS_VERBSIM_LITMUS_INTERNAL_H_
