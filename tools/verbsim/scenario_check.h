// Checking a scenario's commands before anything runs: the grammar of each
// command as a table of forms (scenario_grammar.cc) and the checker that
// holds a command to its form (scenario_check.cc). An error reads
// "file:line:column: expected ..., got '...'".
#ifndef VERBSIM_TOOLS_VERBSIM_SCENARIO_CHECK_H_
#define VERBSIM_TOOLS_VERBSIM_SCENARIO_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/verbsim/scenario.h"

namespace verbsim::cli::scenario_internal {

// What the commands so far have defined.
struct Defined {
  int nodes = 2;
  std::set<std::string> eps;
  std::map<std::string, uint64_t> mrs;         // MR: its size
  std::map<std::string, std::string> ep_type;  // endpoint: rc, uc or ud
  std::set<std::string> ahs;
  std::set<std::string> mws;
  bool Taken(const std::string& n) const {
    return eps.count(n) || mrs.count(n) || ahs.count(n) || mws.count(n);
  }
};

// Checks one command (not empty) against its form and what the commands
// before it defined, and records what it defines.
absl::Status CheckCommand(absl::string_view file, const Command& c,
                          Defined* defined);

// What a positional word (or the free text) of a command must be.
enum class Arg {
  kText,        // free text to the end of the line
  kFaultRules,  // free text: fault rules (docs/faults.md)
  kNodeCount,   // 1 .. kMaxNodes
  kNewEp,       // a new name: an endpoint, an address handle, a window or
  kNewAh,       // an MR this command defines
  kNewMw,
  kNewMr,
  kEp,          // an endpoint, a window or an MR defined before
  kMw,
  kMr,
  kDevice,      // sim0, sim1, ... (a node of the scenario)
  kDestDevice,  // the same, as the destination of an address handle
  kMrSize,      // 1 .. kMaxMrSize bytes
  kState,       // a QP state
  kQueue,       // send or recv
  kCompletion,  // the word "completion" (expect no completion)
  kWcStatus,    // a completion status
  kQuoted,      // a "text"
  kMaybeQuoted, // a "text", if the next word is not a key=value
  kNumber,
  kErrno,       // EINVAL, ENOMEM, ...
};

// What the value of a key=value word must be.
enum class ValueKind {
  kU64,       // a number, decimal or 0x hex, up to KeySpec::max
  kMrOffset,  // a number inside the MR the command names
  kAccess,    // LOCAL_WRITE|REMOTE_READ ...
  kMtu,       // 256 .. 4096
  kEp,        // an endpoint name
  kMr,        // an MR name
  kWcOpcode,
  kFlag,      // a word without a value
  kQpType,    // rc, uc, ud
  kRkey,      // a number, or a memory window's name (its rkey then)
  kQpn,       // a number, or an endpoint's name (its QP number then)
  kAh,        // an address handle name
  kDevice,    // sim0, sim1, ...
  kWcFlags,   // GRH|WITH_IMM|WITH_INV, or none
};

struct KeySpec {
  const char* key;
  ValueKind kind;
  uint64_t max = UINT64_MAX;
};

class Checker;
// A check the words alone cannot make (two names that must differ, a range
// inside an MR, ...).
using Rule = absl::Status (*)(Checker& ck);

// For the forms whose keys differ on a UD endpoint: which endpoints (the
// first one the command names) the form is for.
enum class Ud { kAny, kYes, kNo };

// The grammar of one command: verb, [sub,] args, then keys in any order.
// `sub` is the word after the verb that picks the form (post's operation,
// what expect expects); `before_keys` runs when the args are read,
// `after_keys` when the keys are.
struct Form {
  const char* verb;
  const char* sub;
  Ud ud;
  std::vector<Arg> args;
  std::vector<KeySpec> keys;
  std::vector<const char*> required;
  Rule before_keys;
  Rule after_keys;
};

// Every form, in the order the messages list the verbs and subs.
const std::vector<Form>& Forms();
// What the word after `verb` is, for a verb with subs ("an operation").
const char* SubWhat(absl::string_view verb);

// One command held to its form. The rules read the command's words and what
// is defined through it.
class Checker {
 public:
  Checker(absl::string_view file, const Command& c, Defined* defined)
      : file_(file), c_(c), defined_(defined) {}

  absl::Status Check();

  absl::Status Error(int column, absl::string_view expected,
                     absl::string_view got) const;
  absl::Status ErrorAt(const Token& t, absl::string_view expected) const;
  // An error just after the last word of the line.
  absl::Status EndError(absl::string_view expected) const;
  // An error at the first word not read yet, if there is one.
  absl::Status NoMoreWords(absl::string_view expected) const;

  const Command& command() const { return c_; }
  Defined& defined() { return *defined_; }
  const std::string& sub() const { return sub_; }
  // The i-th positional word after the verb and sub (nullptr: an optional
  // word that was not there).
  const Token* arg(size_t i) const { return args_[i]; }
  // The MR the command names: its MR word, or its mr= key.
  std::string Mr() const;
  uint64_t MrSize() const;
  // offset= and `len` bytes inside the command's MR, or an error at `at`.
  absl::Status FitsInMr(uint64_t len, const Token& at) const;

 private:
  absl::StatusOr<const Token*> Next(absl::string_view expected);
  absl::Status Choice(const std::vector<std::string>& choices,
                      absl::string_view what, std::string* out);
  absl::StatusOr<const Token*> TakeArg(Arg a);
  absl::StatusOr<const Token*> TakeChoice(
      const std::vector<std::string>& choices, absl::string_view what);
  // A name defined before (`names`), or an error saying which there are.
  absl::StatusOr<const Token*> TakeName(absl::string_view what,
                                        const std::vector<std::string>& names,
                                        absl::string_view verb);
  absl::StatusOr<const Token*> TakeDevice(absl::string_view what);
  absl::Status CheckFaultRules() const;
  absl::Status Keys(const std::vector<KeySpec>& keys,
                    const std::vector<const char*>& required);
  absl::Status CheckValue(const KeySpec& spec, const std::string& key,
                          const std::string& value, int column) const;
  const Form* PickForm(const std::vector<const Form*>& forms) const;

  absl::string_view file_;
  const Command& c_;
  Defined* defined_;
  size_t pos_ = 1;
  std::string sub_;
  std::vector<const Token*> args_;
  std::string mr_;  // the MR word, for the commands that have one
};

}  // namespace verbsim::cli::scenario_internal

#endif  // VERBSIM_TOOLS_VERBSIM_SCENARIO_CHECK_H_
