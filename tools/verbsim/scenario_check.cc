#include "tools/verbsim/scenario_check.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "sim/faults.h"
#include "sim/packet.h"
#include "tools/verbsim/scenario_values.h"

namespace verbsim::cli::scenario_internal {
namespace {

const std::vector<std::string> kStates = {"INIT", "RTR", "RTS", "ERR",
                                          "RESET"};

std::vector<std::string> NameList(const std::set<std::string>& names) {
  return {names.begin(), names.end()};
}
std::vector<std::string> NameList(const std::map<std::string, uint64_t>& m) {
  std::vector<std::string> names;
  for (const auto& [n, size] : m) names.push_back(n);
  return names;
}

// "WHAT (one of a, b)", or how to define the first one while there is none.
std::string Choices(absl::string_view what,
                    const std::vector<std::string>& names,
                    absl::string_view verb) {
  if (names.empty()) {
    return absl::StrCat(what, " (none is defined yet: use `", verb, "`)");
  }
  return absl::StrCat(what, " (one of ", absl::StrJoin(names, ", "), ")");
}

bool Contains(const std::vector<std::string>& v, absl::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

const char* NewNameWhat(Arg a) {
  switch (a) {
    case Arg::kNewEp: return "a new endpoint name";
    case Arg::kNewAh: return "a new address handle name";
    case Arg::kNewMw: return "a new window name";
    default: return "a new MR name";
  }
}

bool IsErrnoName(const std::string& t) {
  return t.size() >= 2 && t[0] == 'E' &&
         std::all_of(t.begin(), t.end(), [](char ch) {
           return std::isupper(static_cast<unsigned char>(ch)) ||
                  std::isdigit(static_cast<unsigned char>(ch));
         });
}

}  // namespace

absl::Status CheckCommand(absl::string_view file, const Command& c,
                          Defined* defined) {
  Checker ck(file, c, defined);
  return ck.Check();
}

absl::Status Checker::Check() {
  const std::string& verb = c_.words[0].text;
  std::vector<std::string> verbs;
  std::vector<const Form*> forms;
  for (const Form& f : Forms()) {
    if (!Contains(verbs, f.verb)) verbs.emplace_back(f.verb);
    if (verb == f.verb) forms.push_back(&f);
  }
  if (forms.empty()) {
    return ErrorAt(c_.words[0], absl::StrCat("a command (",
                                             absl::StrJoin(verbs, ", "), ")"));
  }
  if (*forms.front()->sub != '\0') {
    std::vector<std::string> subs;
    for (const Form* f : forms) {
      if (!Contains(subs, f->sub)) subs.emplace_back(f->sub);
    }
    if (absl::Status s = Choice(subs, SubWhat(verb), &sub_); !s.ok()) {
      return s;
    }
    forms.erase(std::remove_if(forms.begin(), forms.end(),
                               [&](const Form* f) { return f->sub != sub_; }),
                forms.end());
  }
  for (Arg a : forms.front()->args) {
    absl::StatusOr<const Token*> t = TakeArg(a);
    if (!t.ok()) return t.status();
    args_.push_back(*t);
  }
  const Form& form = *PickForm(forms);
  if (form.before_keys != nullptr) {
    if (absl::Status s = form.before_keys(*this); !s.ok()) return s;
  }
  if (absl::Status s = Keys(form.keys, form.required); !s.ok()) return s;
  if (form.after_keys != nullptr) return form.after_keys(*this);
  return absl::OkStatus();
}

// The forms of one verb and sub share their args; the first endpoint they
// name picks between a form for UD endpoints and one for the others.
const Form* Checker::PickForm(const std::vector<const Form*>& forms) const {
  const std::vector<Arg>& args = forms.front()->args;
  bool ud = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != Arg::kEp) continue;
    auto it = defined_->ep_type.find(args_[i]->text);
    ud = it != defined_->ep_type.end() && it->second == "ud";
    break;
  }
  for (const Form* f : forms) {
    if (f->ud == Ud::kAny || (f->ud == Ud::kYes) == ud) return f;
  }
  return forms.front();
}

absl::Status Checker::Error(int column, absl::string_view expected,
                            absl::string_view got) const {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s:%d:%d: expected %s, got '%s'", file_, c_.line,
                      column, expected, got));
}

absl::Status Checker::ErrorAt(const Token& t,
                              absl::string_view expected) const {
  return Error(t.column, expected, t.text);
}

absl::Status Checker::EndError(absl::string_view expected) const {
  const Token& last = c_.words.back();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s:%d:%d: expected %s at the end of the line", file_, c_.line,
      last.column + static_cast<int>(last.text.size()) + (last.quoted ? 2 : 0),
      expected));
}

absl::Status Checker::NoMoreWords(absl::string_view expected) const {
  if (pos_ < c_.words.size()) return ErrorAt(c_.words[pos_], expected);
  return absl::OkStatus();
}

std::string Checker::Mr() const {
  return mr_.empty() ? KeyValue(c_, "mr") : mr_;
}

uint64_t Checker::MrSize() const {
  auto it = defined_->mrs.find(Mr());
  return it == defined_->mrs.end() ? 0 : it->second;
}

absl::Status Checker::FitsInMr(uint64_t len, const Token& at) const {
  const uint64_t size = MrSize();
  if (KeyU64(c_, "offset", 0) + len > size) {
    return ErrorAt(at, absl::StrFormat("data that fits in %s (%u bytes)", Mr(),
                                       size));
  }
  return absl::OkStatus();
}

// The next positional word.
absl::StatusOr<const Token*> Checker::Next(absl::string_view expected) {
  if (pos_ >= c_.words.size() || absl::StrContains(c_.words[pos_].text, '=')) {
    if (pos_ < c_.words.size()) return ErrorAt(c_.words[pos_], expected);
    return EndError(expected);
  }
  return &c_.words[pos_++];
}

absl::Status Checker::Choice(const std::vector<std::string>& choices,
                             absl::string_view what, std::string* out) {
  auto t = Next(what);
  if (!t.ok()) return t.status();
  for (const auto& c : choices) {
    if ((*t)->text == c) {
      *out = c;
      return absl::OkStatus();
    }
  }
  return ErrorAt(**t, absl::StrCat(what, " (", absl::StrJoin(choices, ", "),
                                   ")"));
}

absl::StatusOr<const Token*> Checker::TakeChoice(
    const std::vector<std::string>& choices, absl::string_view what) {
  std::string chosen;
  if (absl::Status s = Choice(choices, what, &chosen); !s.ok()) return s;
  return &c_.words[pos_ - 1];
}

absl::StatusOr<const Token*> Checker::TakeName(
    absl::string_view what, const std::vector<std::string>& names,
    absl::string_view verb) {
  auto t = Next(what);
  if (!t.ok()) return t;
  if (!Contains(names, (*t)->text)) {
    return ErrorAt(**t, Choices(what, names, verb));
  }
  return t;
}

absl::StatusOr<const Token*> Checker::TakeDevice(absl::string_view what) {
  auto t = Next(what);
  if (!t.ok()) return t;
  int node;
  if (!ParseDevice((*t)->text, &node) || node >= defined_->nodes) {
    return ErrorAt(**t, absl::StrFormat("a device from sim0 to sim%d",
                                        defined_->nodes - 1));
  }
  return t;
}

// The rules of a `faults` line; an error of sim::ParseFaults, "EINVAL:
// column N: ...", becomes file:line:column of the rule text.
absl::Status Checker::CheckFaultRules() const {
  absl::StatusOr<sim::FaultPlan> plan = sim::ParseFaults(c_.rest);
  if (plan.ok()) return absl::OkStatus();
  absl::string_view m = plan.status().message();
  absl::ConsumeSuffix(&m, ": Invalid argument");
  std::string msg(m);
  int column = c_.rest_column;
  if (size_t at = m.find("column "); at != absl::string_view::npos) {
    absl::string_view rest = m.substr(at + 7);
    size_t colon = rest.find(':');
    int n;
    if (colon != absl::string_view::npos &&
        absl::SimpleAtoi(rest.substr(0, colon), &n)) {
      column += n - 1;
      msg = std::string(
          absl::StripLeadingAsciiWhitespace(rest.substr(colon + 1)));
    }
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s:%d:%d: expected a fault rule (docs/faults.md): %s", file_, c_.line,
      column, msg));
}

absl::StatusOr<const Token*> Checker::TakeArg(Arg a) {
  Defined& d = *defined_;
  switch (a) {
    case Arg::kText:
      if (c_.rest.empty()) return EndError("some text");
      return nullptr;
    case Arg::kFaultRules:
      if (c_.rest.empty()) return EndError("fault rules (docs/faults.md)");
      if (absl::Status s = CheckFaultRules(); !s.ok()) return s;
      return nullptr;
    case Arg::kNodeCount: {
      auto t = Next("a number of nodes");
      if (!t.ok()) return t;
      uint64_t n;
      if (!ParseU64((*t)->text, &n) || n < 1 || n > kMaxNodes) {
        return ErrorAt(**t, absl::StrCat("a number of nodes from 1 to ",
                                         kMaxNodes));
      }
      return t;
    }
    case Arg::kNewEp:
    case Arg::kNewAh:
    case Arg::kNewMw:
    case Arg::kNewMr: {
      auto t = Next(NewNameWhat(a));
      if (!t.ok()) return t;
      const std::string& name = (*t)->text;
      if (!IsName(name) || d.Taken(name)) {
        return ErrorAt(**t,
                       "a new name (a letter, then letters, digits, _ or -)");
      }
      if (a == Arg::kNewEp) d.eps.insert(name);
      if (a == Arg::kNewAh) d.ahs.insert(name);
      if (a == Arg::kNewMw) d.mws.insert(name);
      if (a == Arg::kNewMr) d.mrs[name] = 0;  // its size comes next
      return t;
    }
    case Arg::kEp:
      return TakeName("an endpoint name", NameList(d.eps), "endpoint");
    case Arg::kMw:
      return TakeName("a window name", NameList(d.mws), "mw");
    case Arg::kMr: {
      auto t = TakeName("an MR name", NameList(d.mrs), "mr");
      if (t.ok()) mr_ = (*t)->text;
      return t;
    }
    case Arg::kDevice:
      return TakeDevice("a device (sim0, sim1, ...)");
    case Arg::kDestDevice:
      return TakeDevice("the destination device (sim0, sim1, ...)");
    case Arg::kMrSize: {
      auto t = Next("a size in bytes");
      if (!t.ok()) return t;
      uint64_t n;
      if (!ParseU64((*t)->text, &n) || n < 1 || n > kMaxMrSize) {
        return ErrorAt(**t,
                       absl::StrCat("a size in bytes from 1 to ", kMaxMrSize));
      }
      d.mrs[args_.front()->text] = n;  // the MR this command defines
      return t;
    }
    case Arg::kState:
      return TakeChoice(kStates, "a QP state");
    case Arg::kQueue:
      return TakeChoice({"send", "recv"}, "a queue");
    case Arg::kCompletion:
      return TakeChoice({"completion"}, "a word");
    case Arg::kWcStatus: {
      auto t = Next("a completion status (SUCCESS, REM_ACCESS_ERR, ...)");
      if (!t.ok()) return t;
      if (!StatusByName((*t)->text)) {
        return ErrorAt(**t,
                       "a completion status (SUCCESS, LOC_LEN_ERR, "
                       "LOC_PROT_ERR, WR_FLUSH_ERR, REM_INV_REQ_ERR, "
                       "REM_ACCESS_ERR, REM_OP_ERR, RETRY_EXC_ERR, "
                       "RNR_RETRY_EXC_ERR, ...)");
      }
      return t;
    }
    case Arg::kQuoted:
      return Next("a \"text\"");
    case Arg::kMaybeQuoted:
      if (pos_ < c_.words.size() &&
          !absl::StrContains(c_.words[pos_].text, '=')) {
        return Next("a \"text\"");
      }
      return nullptr;
    case Arg::kNumber: {
      auto t = Next("a number");
      if (!t.ok()) return t;
      uint64_t n;
      if (!ParseU64((*t)->text, &n)) return ErrorAt(**t, "a number");
      return t;
    }
    case Arg::kErrno: {
      auto t = Next("an errno name (EINVAL, ENOMEM, ...)");
      if (!t.ok()) return t;
      if (!IsErrnoName((*t)->text)) {
        return ErrorAt(**t, "an errno name (EINVAL, ENOMEM, ...)");
      }
      return t;
    }
  }
  return absl::InternalError("an argument the checker does not know");
}

// The remaining words: key=value pairs and flags from `keys`; `required`
// names keys that must be there.
absl::Status Checker::Keys(const std::vector<KeySpec>& keys,
                           const std::vector<const char*>& required) {
  std::set<std::string> seen;
  for (; pos_ < c_.words.size(); ++pos_) {
    const Token& t = c_.words[pos_];
    const size_t eq = t.text.find('=');
    const std::string key =
        eq == std::string::npos ? t.text : t.text.substr(0, eq);
    const KeySpec* spec = nullptr;
    for (const KeySpec& k : keys) {
      if (key == k.key) spec = &k;
    }
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const KeySpec& k : keys) {
        names.push_back(k.kind == ValueKind::kFlag ? k.key
                                                   : absl::StrCat(k.key, "="));
      }
      if (names.empty()) return ErrorAt(t, "the end of the line");
      return ErrorAt(t, absl::StrCat("one of ", absl::StrJoin(names, " ")));
    }
    if (!seen.insert(key).second) {
      return ErrorAt(t, absl::StrCat("'", key, "' only once"));
    }
    if (spec->kind == ValueKind::kFlag) {
      if (eq != std::string::npos) {
        return Error(t.column,
                     absl::StrCat("the flag '", key, "' without a value"),
                     t.text);
      }
      continue;
    }
    if (eq == std::string::npos) {
      return ErrorAt(t, absl::StrCat(key, "=<value>"));
    }
    const int column = t.column + static_cast<int>(eq) + 1;
    if (absl::Status s = CheckValue(*spec, key, t.text.substr(eq + 1), column);
        !s.ok()) {
      return s;
    }
  }
  for (const char* r : required) {
    if (!seen.count(r)) return EndError(absl::StrCat(r, "=<value>"));
  }
  return absl::OkStatus();
}

absl::Status Checker::CheckValue(const KeySpec& spec, const std::string& key,
                                 const std::string& value, int column) const {
  const Defined& d = *defined_;
  uint64_t v = 0;
  if (spec.kind == ValueKind::kU64 || spec.kind == ValueKind::kMrOffset) {
    const uint64_t max =
        spec.kind == ValueKind::kMrOffset ? MrSize() - 1 : spec.max;
    if (!ParseU64(value, &v)) {
      return Error(column, absl::StrCat("a number for ", key), value);
    }
    if (v > max) {
      return Error(column, absl::StrCat("a number up to ", max, " for ", key),
                   value);
    }
    return absl::OkStatus();
  }
  // Whether the value is one the key takes, and what it takes.
  bool ok = true;
  std::string expected;
  uint32_t flags;
  int node;
  switch (spec.kind) {
    case ValueKind::kU64:
    case ValueKind::kMrOffset:
    case ValueKind::kFlag:
      break;
    case ValueKind::kAccess:
      ok = ParseAccess(value, &flags);
      expected =
          "access flags such as LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ|"
          "REMOTE_ATOMIC (or none)";
      break;
    case ValueKind::kMtu:
      ok = ParseU64(value, &v) &&
           (v == 256 || v == 512 || v == 1024 || v == 2048 || v == 4096);
      expected = "an MTU (256, 512, 1024, 2048 or 4096)";
      break;
    case ValueKind::kEp:
      ok = d.eps.count(value);
      expected = Choices(absl::StrCat("an endpoint for ", key),
                         NameList(d.eps), "endpoint");
      break;
    case ValueKind::kMr:
      ok = d.mrs.count(value);
      expected = Choices("an MR name", NameList(d.mrs), "mr");
      break;
    case ValueKind::kWcOpcode:
      ok = WcOpcodeByName(value).has_value();
      expected = absl::StrCat("a completion opcode (", WcOpcodeChoices(), ")");
      break;
    case ValueKind::kQpType:
      ok = value == "rc" || value == "uc" || value == "ud";
      expected = "a QP type (rc, uc or ud)";
      break;
    case ValueKind::kRkey:
      ok = d.mws.count(value) || (ParseU64(value, &v) && v <= UINT32_MAX);
      expected = absl::StrCat("an rkey for ", key,
                              " (a 32-bit number or a window name)");
      break;
    case ValueKind::kQpn:
      ok = d.eps.count(value) || (ParseU64(value, &v) && v <= sim::kPsnMask);
      expected = Choices(absl::StrCat("a QP number or an endpoint for ", key),
                         NameList(d.eps), "endpoint");
      break;
    case ValueKind::kAh:
      ok = d.ahs.count(value);
      expected = Choices("an address handle", NameList(d.ahs), "ah");
      break;
    case ValueKind::kDevice:
      ok = ParseDevice(value, &node) && node < d.nodes;
      expected = absl::StrFormat("a device from sim0 to sim%d for %s",
                                 d.nodes - 1, key);
      break;
    case ValueKind::kWcFlags:
      ok = ParseWcFlags(value, &flags);
      expected = "completion flags such as GRH|WITH_IMM|WITH_INV (or none)";
      break;
  }
  if (ok) return absl::OkStatus();
  return Error(column, expected, value);
}

}  // namespace verbsim::cli::scenario_internal
