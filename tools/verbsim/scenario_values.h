// The values of the scenario language (docs/cli.md), shared by its checker
// and its runner: numbers, access and completion flags, names of statuses,
// states, opcodes and devices, and the key=value words of a command.
#ifndef VERBSIM_TOOLS_VERBSIM_SCENARIO_VALUES_H_
#define VERBSIM_TOOLS_VERBSIM_SCENARIO_VALUES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/types.h"
#include "tools/verbsim/scenario.h"

namespace verbsim::cli::scenario_internal {

constexpr int kMaxNodes = 16;
constexpr uint64_t kMaxMrSize = 1 << 20;

// A number, decimal or 0x hex.
bool ParseU64(absl::string_view s, uint64_t* v);

// Access flags: LOCAL_WRITE|REMOTE_READ|..., or none (or 0).
bool ParseAccess(absl::string_view s, uint32_t* out);

// Completion flags: GRH|WITH_IMM|WITH_INV, or none (or 0); and back.
bool ParseWcFlags(absl::string_view s, uint32_t* out);
std::string WcFlagsText(uint32_t flags);

std::optional<WcStatus> StatusByName(absl::string_view s);
std::optional<QpState> StateByName(absl::string_view s);
std::optional<WcOpcode> WcOpcodeByName(absl::string_view s);
// The completion opcodes a scenario may name, for messages.
std::string WcOpcodeChoices();

// A name a scenario may define: a letter or _, then letters, digits, _, -.
bool IsName(absl::string_view s);

// "sim1" or "1": the node index, below kMaxNodes.
bool ParseDevice(absl::string_view s, int* node);

// A key's value among a command's words ("" if absent).
std::string KeyValue(const Command& c, absl::string_view key);
// A key's value as a number, `def` if absent.
uint64_t KeyU64(const Command& c, absl::string_view key, uint64_t def);
// Whether a flag (a word without a value) is among a command's words.
bool HasFlag(const Command& c, absl::string_view flag);

}  // namespace verbsim::cli::scenario_internal

#endif  // VERBSIM_TOOLS_VERBSIM_SCENARIO_VALUES_H_
