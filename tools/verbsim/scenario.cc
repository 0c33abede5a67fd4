#include "tools/verbsim/scenario.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/provider.h"
#include "sim/faults.h"
#include "sim/packet.h"
#include "sim/sim_provider.h"

namespace verbsim::cli {
namespace {

constexpr int kMaxNodes = 16;
constexpr uint64_t kMaxMrSize = 1 << 20;

// ---------------------------------------------------------------------------
// Lexing

bool IsFreeTextVerb(absl::string_view verb) {
  return verb == "title" || verb == "spec" || verb == "say" ||
         verb == "faults";
}

// Splits one line into words. '#' outside quotes starts a comment; "..."
// is one word with \" \\ and \n escapes.
absl::Status Lex(absl::string_view file, int line_no, absl::string_view line,
                 Command* out) {
  size_t i = 0;
  auto col = [&](size_t at) { return static_cast<int>(at) + 1; };
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') break;
    Token t;
    t.column = col(i);
    if (out->words.size() == 1 && IsFreeTextVerb(out->words[0].text)) {
      // The rest of the line is free text (a quoted string is unquoted).
      absl::string_view rest = absl::StripTrailingAsciiWhitespace(line.substr(i));
      out->rest_column = col(i);
      if (rest.size() >= 2 && rest.front() == '"' && rest.back() == '"') {
        rest = rest.substr(1, rest.size() - 2);
        ++out->rest_column;
      }
      out->rest = std::string(rest);
      return absl::OkStatus();
    }
    if (c == '"') {
      t.quoted = true;
      ++i;
      bool closed = false;
      while (i < line.size()) {
        char d = line[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < line.size()) {
          char e = line[i + 1];
          t.text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          i += 2;
          continue;
        }
        t.text += d;
        ++i;
      }
      if (!closed) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s:%d:%d: expected a closing '\"' before the end of the line",
            file, line_no, t.column));
      }
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' &&
             line[i] != '\r' && line[i] != '#') {
        t.text += line[i];
        ++i;
      }
    }
    out->words.push_back(std::move(t));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Values

bool ParseU64(absl::string_view s, uint64_t* v) {
  if (absl::ConsumePrefix(&s, "0x") || absl::ConsumePrefix(&s, "0X")) {
    if (s.empty() || s.size() > 16) return false;
    uint64_t r = 0;
    for (char c : s) {
      int d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return false;
      r = r << 4 | static_cast<uint64_t>(d);
    }
    *v = r;
    return true;
  }
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  return absl::SimpleAtoi(s, v);
}

bool ParseAccess(absl::string_view s, uint32_t* out) {
  uint32_t v = 0;
  if (s == "0" || s == "none") {
    *out = 0;
    return true;
  }
  for (absl::string_view part : absl::StrSplit(s, absl::ByAnyChar("|,"))) {
    if (part == "LOCAL_WRITE") v |= kAccessLocalWrite;
    else if (part == "REMOTE_WRITE") v |= kAccessRemoteWrite;
    else if (part == "REMOTE_READ") v |= kAccessRemoteRead;
    else if (part == "REMOTE_ATOMIC") v |= kAccessRemoteAtomic;
    else if (part == "MW_BIND") v |= kAccessMwBind;
    else return false;
  }
  *out = v;
  return true;
}

std::optional<WcStatus> StatusByName(absl::string_view s) {
  for (int i = 0; i < kNumWcStatus; ++i) {
    if (WcStatusName(static_cast<WcStatus>(i)) == s) {
      return static_cast<WcStatus>(i);
    }
  }
  return std::nullopt;
}

std::optional<QpState> StateByName(absl::string_view s) {
  for (int i = 0; i <= static_cast<int>(QpState::kErr); ++i) {
    if (QpStateName(static_cast<QpState>(i)) == s) {
      return static_cast<QpState>(i);
    }
  }
  return std::nullopt;
}

const WcOpcode kWcOpcodes[] = {
    WcOpcode::kSend,     WcOpcode::kRdmaWrite, WcOpcode::kRdmaRead,
    WcOpcode::kCompSwap, WcOpcode::kFetchAdd,  WcOpcode::kBindMw,
    WcOpcode::kLocalInv, WcOpcode::kRecv,      WcOpcode::kRecvRdmaWithImm};

std::optional<WcOpcode> WcOpcodeByName(absl::string_view s) {
  for (WcOpcode op : kWcOpcodes) {
    if (WcOpcodeName(op) == s) return op;
  }
  return std::nullopt;
}

std::string WcOpcodeChoices() {
  std::vector<std::string> v;
  for (WcOpcode op : kWcOpcodes) v.emplace_back(WcOpcodeName(op));
  return absl::StrJoin(v, ", ");
}

// Completion flags: GRH|WITH_IMM|WITH_INV, or none.
bool ParseWcFlags(absl::string_view s, uint32_t* out) {
  uint32_t v = 0;
  if (s == "none" || s == "0") {
    *out = 0;
    return true;
  }
  for (absl::string_view part : absl::StrSplit(s, absl::ByAnyChar("|,"))) {
    if (part == "GRH") v |= kWcGrh;
    else if (part == "WITH_IMM") v |= kWcWithImm;
    else if (part == "WITH_INV") v |= kWcWithInv;
    else return false;
  }
  *out = v;
  return true;
}

std::string WcFlagsText(uint32_t f) {
  std::vector<std::string> v;
  if (f & kWcGrh) v.push_back("GRH");
  if (f & kWcWithImm) v.push_back("WITH_IMM");
  if (f & kWcWithInv) v.push_back("WITH_INV");
  return v.empty() ? "none" : absl::StrJoin(v, "|");
}

bool IsName(absl::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) ||
                     s[0] == '_')) {
    return false;
  }
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// "sim1" or "1": the node index.
bool ParseDevice(absl::string_view s, int* node) {
  absl::ConsumePrefix(&s, "sim");
  uint64_t v;
  if (!ParseU64(s, &v) || v >= kMaxNodes) return false;
  *node = static_cast<int>(v);
  return true;
}

// ---------------------------------------------------------------------------
// Parsing: the grammar of each verb (docs/cli.md).

enum class ValueKind {
  kU64,     // a number, decimal or 0x hex
  kAccess,  // LOCAL_WRITE|REMOTE_READ ...
  kMtu,     // 256 .. 4096
  kEp,      // an endpoint name
  kMr,      // an MR name
  kWcOpcode,
  kFlag,    // a word without a value
  kQpType,  // rc, uc, ud
  kRkey,    // a number, or a memory window's name (its rkey then)
  kQpn,     // a number, or an endpoint's name (its QP number then)
  kAh,      // an address handle name
  kDevice,  // sim0, sim1, ...
  kWcFlags, // GRH|WITH_IMM|WITH_INV, or none
};

// The names a scenario has defined so far, and what they are.
struct Names {
  std::set<std::string> eps;
  std::map<std::string, uint64_t> mrs;         // MR: its size
  std::map<std::string, std::string> ep_type;  // endpoint: rc, uc or ud
  std::set<std::string> ahs;
  std::map<std::string, int> mws;              // window: its type
  bool Taken(const std::string& n) const {
    return eps.count(n) || mrs.count(n) || ahs.count(n) || mws.count(n);
  }
};

struct KeySpec {
  const char* key;
  ValueKind kind;
  uint64_t max = UINT64_MAX;
};

class Checker {
 public:
  Checker(absl::string_view file, const Command& c, int nodes, Names* names)
      : file_(file),
        c_(c),
        nodes_(nodes),
        names_(names),
        eps_(&names->eps),
        mrs_(&names->mrs) {}

  absl::Status Error(int column, absl::string_view expected,
                     absl::string_view got) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d:%d: expected %s, got '%s'", file_, c_.line,
                        column, expected, got));
  }
  absl::Status ErrorAt(const Token& t, absl::string_view expected) const {
    return Error(t.column, expected, t.text);
  }
  absl::Status EndError(absl::string_view expected) const {
    const Token& last = c_.words.back();
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d:%d: expected %s at the end of the line", file_, c_.line,
        last.column + static_cast<int>(last.text.size()) +
            (last.quoted ? 2 : 0),
        expected));
  }

  // The next positional word.
  absl::StatusOr<const Token*> Next(absl::string_view expected) {
    if (pos_ >= c_.words.size() || absl::StrContains(c_.words[pos_].text, '=')) {
      if (pos_ < c_.words.size()) return ErrorAt(c_.words[pos_], expected);
      return EndError(expected);
    }
    return &c_.words[pos_++];
  }
  absl::StatusOr<std::string> Ep() {
    auto t = Next("an endpoint name");
    if (!t.ok()) return t.status();
    if (!eps_->count((*t)->text)) {
      return ErrorAt(**t, EpChoices("an endpoint name"));
    }
    return (*t)->text;
  }
  absl::StatusOr<std::string> Mw() {
    auto t = Next("a window name");
    if (!t.ok()) return t.status();
    if (!names_->mws.count((*t)->text)) return ErrorAt(**t, MwChoices());
    return (*t)->text;
  }
  std::string MwChoices() const {
    if (names_->mws.empty()) {
      return "a window name (none is defined yet: use `mw`)";
    }
    std::vector<std::string> names;
    for (const auto& [n, type] : names_->mws) names.push_back(n);
    return absl::StrCat("a window name (one of ", absl::StrJoin(names, ", "),
                        ")");
  }
  absl::StatusOr<std::string> Mr() {
    auto t = Next("an MR name");
    if (!t.ok()) return t.status();
    if (!mrs_->count((*t)->text)) {
      return ErrorAt(**t, MrChoices());
    }
    return (*t)->text;
  }
  std::string EpChoices(absl::string_view what) const {
    if (eps_->empty()) {
      return absl::StrCat(what, " (none is defined yet: use `endpoint`)");
    }
    return absl::StrCat(what, " (one of ",
                        absl::StrJoin(*eps_, ", "), ")");
  }
  std::string MrChoices() const {
    if (mrs_->empty()) return "an MR name (none is defined yet: use `mr`)";
    std::vector<std::string> names;
    for (const auto& [n, size] : *mrs_) names.push_back(n);
    return absl::StrCat("an MR name (one of ", absl::StrJoin(names, ", "),
                        ")");
  }
  absl::Status Choice(const std::vector<std::string>& choices,
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

  // The remaining words: key=value pairs and flags from `keys`; `required`
  // names keys that must be there.
  absl::Status Keys(std::initializer_list<KeySpec> keys,
                    std::initializer_list<const char*> required = {}) {
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
      const int vcol = t.column + static_cast<int>(eq) + 1;
      if (spec->kind == ValueKind::kFlag) {
        if (eq != std::string::npos) {
          return Error(t.column, absl::StrCat("the flag '", key,
                                              "' without a value"),
                       t.text);
        }
        continue;
      }
      if (eq == std::string::npos) {
        return ErrorAt(t, absl::StrCat(key, "=<value>"));
      }
      const std::string value = t.text.substr(eq + 1);
      switch (spec->kind) {
        case ValueKind::kU64: {
          uint64_t v;
          if (!ParseU64(value, &v)) {
            return Error(vcol, absl::StrCat("a number for ", key), value);
          }
          if (v > spec->max) {
            return Error(vcol, absl::StrCat("a number up to ", spec->max,
                                            " for ", key),
                         value);
          }
          break;
        }
        case ValueKind::kAccess: {
          uint32_t v;
          if (!ParseAccess(value, &v)) {
            return Error(vcol,
                         "access flags such as LOCAL_WRITE|REMOTE_WRITE|"
                         "REMOTE_READ|REMOTE_ATOMIC (or none)",
                         value);
          }
          break;
        }
        case ValueKind::kMtu: {
          uint64_t v;
          if (!ParseU64(value, &v) ||
              (v != 256 && v != 512 && v != 1024 && v != 2048 && v != 4096)) {
            return Error(vcol, "an MTU (256, 512, 1024, 2048 or 4096)", value);
          }
          break;
        }
        case ValueKind::kEp:
          if (!eps_->count(value)) {
            return Error(vcol, EpChoices(absl::StrCat("an endpoint for ", key)),
                         value);
          }
          break;
        case ValueKind::kMr:
          if (!mrs_->count(value)) return Error(vcol, MrChoices(), value);
          break;
        case ValueKind::kWcOpcode:
          if (!WcOpcodeByName(value)) {
            return Error(vcol,
                         absl::StrCat("a completion opcode (",
                                      WcOpcodeChoices(), ")"),
                         value);
          }
          break;
        case ValueKind::kFlag:
          break;
        case ValueKind::kQpType:
          if (value != "rc" && value != "uc" && value != "ud") {
            return Error(vcol, "a QP type (rc, uc or ud)", value);
          }
          break;
        case ValueKind::kRkey: {
          uint64_t v;
          if (names_->mws.count(value)) break;
          if (!ParseU64(value, &v) || v > UINT32_MAX) {
            return Error(vcol,
                         absl::StrCat("an rkey for ", key,
                                      " (a 32-bit number or a window name)"),
                         value);
          }
          break;
        }
        case ValueKind::kQpn: {
          uint64_t v;
          if (eps_->count(value)) break;
          if (!ParseU64(value, &v) || v > sim::kPsnMask) {
            return Error(vcol,
                         EpChoices(absl::StrCat(
                             "a QP number or an endpoint for ", key)),
                         value);
          }
          break;
        }
        case ValueKind::kAh:
          if (!names_->ahs.count(value)) {
            std::vector<std::string> names(names_->ahs.begin(),
                                           names_->ahs.end());
            return Error(vcol,
                         names.empty()
                             ? std::string("an address handle (none is "
                                           "defined yet: use `ah`)")
                             : absl::StrCat("an address handle (one of ",
                                            absl::StrJoin(names, ", "), ")"),
                         value);
          }
          break;
        case ValueKind::kDevice: {
          int node;
          if (!ParseDevice(value, &node) || node >= nodes_) {
            return Error(vcol,
                         absl::StrFormat("a device from sim0 to sim%d for %s",
                                         nodes_ - 1, key),
                         value);
          }
          break;
        }
        case ValueKind::kWcFlags: {
          uint32_t v;
          if (!ParseWcFlags(value, &v)) {
            return Error(vcol,
                         "completion flags such as GRH|WITH_IMM|WITH_INV "
                         "(or none)",
                         value);
          }
          break;
        }
      }
    }
    for (const char* r : required) {
      if (!seen.count(r)) return EndError(absl::StrCat(r, "=<value>"));
    }
    return absl::OkStatus();
  }
  absl::Status End() { return Keys({}); }

  const Command& command() const { return c_; }
  int nodes() const { return nodes_; }
  std::set<std::string>& eps() { return *eps_; }
  std::map<std::string, uint64_t>& mrs() { return *mrs_; }
  Names& names() { return *names_; }

 private:
  absl::string_view file_;
  const Command& c_;
  int nodes_;
  Names* names_;
  std::set<std::string>* eps_;
  std::map<std::string, uint64_t>* mrs_;
  size_t pos_ = 1;
};

const std::vector<std::string> kVerbs = {
    "title",   "spec",   "say",  "nodes", "endpoint", "mr",  "fill",
    "ah",      "mw",     "bind", "connect", "modify", "post", "wait",
    "poll",    "run",    "faults", "expect"};

const std::vector<std::string> kStates = {"INIT", "RTR", "RTS", "ERR",
                                          "RESET"};

// Finds a key's value among a command's words ("" if absent).
std::string KeyValue(const Command& c, absl::string_view key) {
  for (size_t i = 1; i < c.words.size(); ++i) {
    absl::string_view w = c.words[i].text;
    if (absl::ConsumePrefix(&w, key) && absl::ConsumePrefix(&w, "=")) {
      return std::string(w);
    }
  }
  return "";
}
bool HasFlag(const Command& c, absl::string_view flag) {
  for (size_t i = 1; i < c.words.size(); ++i) {
    if (c.words[i].text == flag) return true;
  }
  return false;
}
uint64_t KeyU64(const Command& c, absl::string_view key, uint64_t def) {
  std::string v = KeyValue(c, key);
  uint64_t r;
  if (v.empty() || !ParseU64(v, &r)) return def;
  return r;
}

absl::Status CheckCommand(Checker& ck, bool* seen_endpoint, int* nodes,
                          absl::string_view file) {
  const Command& c = ck.command();
  const std::string& verb = c.words[0].text;
  if (verb == "title" || verb == "spec" || verb == "say") {
    if (c.rest.empty()) return ck.EndError("some text");
    return absl::OkStatus();
  }
  if (verb == "faults") {
    if (c.rest.empty()) return ck.EndError("fault rules (docs/faults.md)");
    absl::StatusOr<sim::FaultPlan> plan = sim::ParseFaults(c.rest);
    if (!plan.ok()) {
      // "EINVAL: column N: ..." -> file:line:column of the rule text.
      absl::string_view m = plan.status().message();
      absl::ConsumeSuffix(&m, ": Invalid argument");
      std::string msg(m);
      int column = c.rest_column;
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
          "%s:%d:%d: expected a fault rule (docs/faults.md): %s", file,
          c.line, column, msg));
    }
    return absl::OkStatus();
  }
  if (verb == "nodes") {
    auto t = ck.Next("a number of nodes");
    if (!t.ok()) return t.status();
    uint64_t n;
    if (!ParseU64((*t)->text, &n) || n < 1 || n > kMaxNodes) {
      return ck.ErrorAt(**t, absl::StrCat("a number of nodes from 1 to ",
                                          kMaxNodes));
    }
    if (*seen_endpoint) {
      return ck.ErrorAt(c.words[0], "`nodes` before the first `endpoint`");
    }
    *nodes = static_cast<int>(n);
    return ck.End();
  }
  if (verb == "endpoint") {
    auto name = ck.Next("a new endpoint name");
    if (!name.ok()) return name.status();
    if (!IsName((*name)->text) || ck.names().Taken((*name)->text)) {
      return ck.ErrorAt(**name,
                        "a new name (a letter, then letters, digits, _ or -)");
    }
    auto dev = ck.Next("a device (sim0, sim1, ...)");
    if (!dev.ok()) return dev.status();
    int node;
    if (!ParseDevice((*dev)->text, &node) || node >= *nodes) {
      return ck.ErrorAt(**dev, absl::StrFormat("a device from sim0 to sim%d",
                                               *nodes - 1));
    }
    *seen_endpoint = true;
    ck.eps().insert((*name)->text);
    absl::Status s = ck.Keys({{"type", ValueKind::kQpType},
                    {"qkey", ValueKind::kU64, UINT32_MAX},
                    {"mtu", ValueKind::kMtu},
                    {"access", ValueKind::kAccess},
                    {"timeout", ValueKind::kU64, 31},
                    {"retry_cnt", ValueKind::kU64, 7},
                    {"rnr_retry", ValueKind::kU64, 7},
                    {"min_rnr_timer", ValueKind::kU64, 31},
                    {"max_rd_atomic", ValueKind::kU64, 16},
                    {"max_dest_rd_atomic", ValueKind::kU64, 16},
                    {"sq_psn", ValueKind::kU64, sim::kPsnMask},
                    {"depth", ValueKind::kU64, 1024}});
    if (!s.ok()) return s;
    std::string type = KeyValue(c, "type");
    if (type.empty()) type = "rc";
    ck.names().ep_type[(*name)->text] = type;
    if (type != "ud" && !KeyValue(c, "qkey").empty()) {
      return ck.EndError("no qkey= but on a type=ud endpoint");
    }
    return absl::OkStatus();
  }
  if (verb == "ah") {
    auto name = ck.Next("a new address handle name");
    if (!name.ok()) return name.status();
    if (!IsName((*name)->text) || ck.names().Taken((*name)->text)) {
      return ck.ErrorAt(**name,
                        "a new name (a letter, then letters, digits, _ or -)");
    }
    auto ep = ck.Ep();
    if (!ep.ok()) return ep.status();
    auto dev = ck.Next("the destination device (sim0, sim1, ...)");
    if (!dev.ok()) return dev.status();
    int node;
    if (!ParseDevice((*dev)->text, &node) || node >= *nodes) {
      return ck.ErrorAt(**dev, absl::StrFormat("a device from sim0 to sim%d",
                                               *nodes - 1));
    }
    ck.names().ahs.insert((*name)->text);
    return ck.Keys({{"hop_limit", ValueKind::kU64, 255},
                    {"traffic_class", ValueKind::kU64, 255}});
  }
  if (verb == "mw") {
    auto name = ck.Next("a new window name");
    if (!name.ok()) return name.status();
    if (!IsName((*name)->text) || ck.names().Taken((*name)->text)) {
      return ck.ErrorAt(**name,
                        "a new name (a letter, then letters, digits, _ or -)");
    }
    auto ep = ck.Ep();
    if (!ep.ok()) return ep.status();
    if (absl::Status s = ck.Keys({{"type", ValueKind::kU64, 2}}, {"type"});
        !s.ok()) {
      return s;
    }
    const uint64_t type = KeyU64(c, "type", 0);
    if (type < 1) {
      for (const Token& t : c.words) {
        if (absl::StartsWith(t.text, "type=")) {
          return ck.Error(t.column + 5, "a window type (1 or 2)",
                          t.text.substr(5));
        }
      }
    }
    ck.names().mws[(*name)->text] = static_cast<int>(type);
    return absl::OkStatus();
  }
  if (verb == "bind") {
    auto mw = ck.Mw();
    if (!mw.ok()) return mw.status();
    auto ep = ck.Ep();
    if (!ep.ok()) return ep.status();
    absl::Status s = ck.Keys({{"wr", ValueKind::kU64},
                              {"mr", ValueKind::kMr},
                              {"offset", ValueKind::kU64, kMaxMrSize},
                              {"len", ValueKind::kU64, kMaxMrSize},
                              {"access", ValueKind::kAccess},
                              {"unsignaled", ValueKind::kFlag}},
                             {"wr", "mr", "access"});
    if (!s.ok()) return s;
    const uint64_t size = ck.mrs()[KeyValue(c, "mr")];
    const uint64_t o = KeyU64(c, "offset", 0);
    const uint64_t n = KeyU64(c, "len", size > o ? size - o : 0);
    if (o + n > size) {
      return ck.EndError(absl::StrFormat(
          "offset= and len= inside MR '%s' (%u bytes)", KeyValue(c, "mr"),
          size));
    }
    return absl::OkStatus();
  }
  if (verb == "mr") {
    auto name = ck.Next("a new MR name");
    if (!name.ok()) return name.status();
    if (!IsName((*name)->text) || ck.names().Taken((*name)->text)) {
      return ck.ErrorAt(**name,
                        "a new name (a letter, then letters, digits, _ or -)");
    }
    auto ep = ck.Ep();
    if (!ep.ok()) return ep.status();
    auto size = ck.Next("a size in bytes");
    if (!size.ok()) return size.status();
    uint64_t n;
    if (!ParseU64((*size)->text, &n) || n < 1 || n > kMaxMrSize) {
      return ck.ErrorAt(**size,
                        absl::StrCat("a size in bytes from 1 to ", kMaxMrSize));
    }
    ck.mrs()[(*name)->text] = n;
    return ck.Keys({{"access", ValueKind::kAccess}});
  }
  if (verb == "fill") {
    auto mr = ck.Mr();
    if (!mr.ok()) return mr.status();
    const uint64_t size = ck.mrs()[*mr];
    const Token* text = nullptr;
    if (c.words.size() > 2 && !absl::StrContains(c.words[2].text, '=')) {
      auto t = ck.Next("a \"text\"");
      if (!t.ok()) return t.status();
      text = *t;
    }
    absl::Status s = ck.Keys({{"offset", ValueKind::kU64, size - 1},
                              {"u64", ValueKind::kU64},
                              {"byte", ValueKind::kU64, 255}});
    if (!s.ok()) return s;
    const int given = (text != nullptr) + !KeyValue(c, "u64").empty() +
                      !KeyValue(c, "byte").empty();
    if (given != 1) {
      return ck.EndError("exactly one of \"text\", u64=<value>, byte=<value>");
    }
    const uint64_t off = KeyU64(c, "offset", 0);
    const uint64_t len = text ? text->text.size()
                              : !KeyValue(c, "u64").empty() ? 8 : size - off;
    if (off + len > size) {
      return ck.ErrorAt(text ? *text : c.words.back(),
                        absl::StrFormat("data that fits in %s (%u bytes)", *mr,
                                        size));
    }
    return absl::OkStatus();
  }
  if (verb == "connect") {
    auto a = ck.Ep();
    if (!a.ok()) return a.status();
    auto b = ck.Ep();
    if (!b.ok()) return b.status();
    if (*a == *b) return ck.ErrorAt(c.words[2], "another endpoint");
    const std::string ta = ck.names().ep_type[*a];
    const std::string tb = ck.names().ep_type[*b];
    if (ta == "ud" || tb == "ud") {
      return ck.ErrorAt(c.words[ta == "ud" ? 1 : 2],
                        "an RC or UC endpoint (UD is not connected: `modify "
                        "EP INIT`, `RTR`, `RTS` without peer=)");
    }
    if (ta != tb) {
      return ck.ErrorAt(c.words[2],
                        absl::StrCat("an endpoint of type=", ta, " like ", *a));
    }
    return ck.End();
  }
  if (verb == "modify") {
    auto ep = ck.Ep();
    if (!ep.ok()) return ep.status();
    std::string state;
    if (absl::Status s = ck.Choice(kStates, "a QP state", &state); !s.ok()) {
      return s;
    }
    const bool ud = ck.names().ep_type[*ep] == "ud";
    if (ud) {
      if (absl::Status s = ck.End(); !s.ok()) {
        return ck.ErrorAt(c.words[3],
                          "the end of the line (a UD QP has no peer)");
      }
      return absl::OkStatus();
    }
    absl::Status s = ck.Keys({{"peer", ValueKind::kEp}},
                             state == "RTR" ? std::initializer_list<const char*>{"peer"}
                                            : std::initializer_list<const char*>{});
    return s;
  }
  if (verb == "post") {
    std::string kind;
    if (absl::Status s = ck.Choice({"send", "recv", "write", "read", "cas",
                                    "fadd", "local_inv"},
                                   "an operation", &kind);
        !s.ok()) {
      return s;
    }
    auto ep = ck.Ep();
    if (!ep.ok()) return ep.status();
    absl::Status s;
    const KeySpec wr{"wr", ValueKind::kU64}, mr{"mr", ValueKind::kMr},
        len{"len", ValueKind::kU64, kMaxMrSize},
        off{"offset", ValueKind::kU64, kMaxMrSize},
        unsig{"unsignaled", ValueKind::kFlag},
        fence{"fence", ValueKind::kFlag},
        remote{"remote", ValueKind::kMr},
        roff{"roffset", ValueKind::kU64, kMaxMrSize},
        rkey{"rkey", ValueKind::kRkey},
        imm{"imm", ValueKind::kU64, UINT32_MAX};
    const bool ud = ck.names().ep_type[*ep] == "ud";
    if (kind == "recv") {
      s = ck.Keys({wr, mr, len, off}, {"wr", "mr"});
    } else if (kind == "local_inv") {
      return ck.Keys({wr, unsig, fence, rkey}, {"wr", "rkey"});
    } else if (kind == "send" && ud) {
      s = ck.Keys({wr, mr, len, off, unsig, fence, imm,
                   {"solicited", ValueKind::kFlag},
                   {"inline", ValueKind::kFlag},
                   {"ah", ValueKind::kAh},
                   {"dest", ValueKind::kQpn},
                   {"qkey", ValueKind::kU64, UINT32_MAX}},
                  {"wr", "mr", "ah", "dest"});
    } else if (kind == "send") {
      s = ck.Keys({wr, mr, len, off, unsig, fence, imm,
                   {"solicited", ValueKind::kFlag},
                   {"inline", ValueKind::kFlag},
                   {"inv", ValueKind::kRkey}},
                  {"wr", "mr"});
      if (s.ok() && !KeyValue(c, "imm").empty() &&
          !KeyValue(c, "inv").empty()) {
        return ck.EndError("imm= or inv=, not both");
      }
    } else if (kind == "write") {
      s = ck.Keys({wr, mr, len, off, unsig, fence, remote, roff, rkey, imm,
                   {"inline", ValueKind::kFlag}},
                  {"wr", "mr", "remote"});
    } else if (kind == "read") {
      s = ck.Keys({wr, mr, len, off, unsig, fence, remote, roff, rkey},
                  {"wr", "mr", "remote"});
    } else if (kind == "cas") {
      s = ck.Keys({wr, mr, off, unsig, fence, remote, roff, rkey,
                   {"compare", ValueKind::kU64},
                   {"swap", ValueKind::kU64}},
                  {"wr", "mr", "remote", "compare", "swap"});
    } else {
      s = ck.Keys({wr, mr, off, unsig, fence, remote, roff, rkey,
                   {"add", ValueKind::kU64}},
                  {"wr", "mr", "remote", "add"});
    }
    if (!s.ok()) return s;
    // The local range must lie inside the local MR's buffer (the scenario
    // cannot point outside its own memory; a bad lkey is another matter).
    const uint64_t size = ck.mrs()[KeyValue(c, "mr")];
    const uint64_t o = KeyU64(c, "offset", 0);
    const bool atomic = kind == "cas" || kind == "fadd";
    const uint64_t n = atomic ? 8 : KeyU64(c, "len", size > o ? size - o : 0);
    if (o + n > size) {
      return ck.EndError(absl::StrFormat(
          "offset= and len= inside MR '%s' (%u bytes)", KeyValue(c, "mr"),
          size));
    }
    return absl::OkStatus();
  }
  if (verb == "wait" || verb == "poll") {
    auto ep = ck.Ep();
    if (!ep.ok()) return ep.status();
    std::string q;
    if (absl::Status s = ck.Choice({"send", "recv"}, "a queue", &q); !s.ok()) {
      return s;
    }
    if (verb == "wait") return ck.Keys({{"timeout_us", ValueKind::kU64}});
    return ck.End();
  }
  if (verb == "run") {
    return ck.Keys({{"us", ValueKind::kU64}});
  }
  if (verb == "expect") {
    std::string what;
    if (absl::Status s = ck.Choice({"completion", "no", "state", "data", "u64",
                                    "grh", "error"},
                                   "what to expect", &what);
        !s.ok()) {
      return s;
    }
    if (what == "completion") {
      auto st = ck.Next("a completion status (SUCCESS, REM_ACCESS_ERR, ...)");
      if (!st.ok()) return st.status();
      if (!StatusByName((*st)->text)) {
        return ck.ErrorAt(**st,
                          "a completion status (SUCCESS, LOC_LEN_ERR, "
                          "LOC_PROT_ERR, WR_FLUSH_ERR, REM_INV_REQ_ERR, "
                          "REM_ACCESS_ERR, REM_OP_ERR, RETRY_EXC_ERR, "
                          "RNR_RETRY_EXC_ERR, ...)");
      }
      return ck.Keys({{"wr", ValueKind::kU64},
                      {"opcode", ValueKind::kWcOpcode},
                      {"len", ValueKind::kU64, UINT32_MAX},
                      {"imm", ValueKind::kU64, UINT32_MAX},
                      {"flags", ValueKind::kWcFlags},
                      {"src_qp", ValueKind::kQpn},
                      {"inv_rkey", ValueKind::kRkey}});
    }
    if (what == "grh") {
      auto mr = ck.Mr();
      if (!mr.ok()) return mr.status();
      const uint64_t size = ck.mrs()[*mr];
      absl::Status s = ck.Keys({{"offset", ValueKind::kU64, size - 1},
                                {"src", ValueKind::kDevice},
                                {"dst", ValueKind::kDevice},
                                {"ttl", ValueKind::kU64, 255},
                                {"tos", ValueKind::kU64, 255},
                                {"len", ValueKind::kU64, 65535}},
                               {"src", "dst"});
      if (!s.ok()) return s;
      if (KeyU64(c, "offset", 0) + 40 > size) {
        return ck.ErrorAt(c.words[2], absl::StrFormat(
                                          "an MR with 40 bytes at offset= "
                                          "(%s has %u)",
                                          *mr, size));
      }
      return absl::OkStatus();
    }
    if (what == "no") {
      std::string w;
      if (absl::Status s = ck.Choice({"completion"}, "a word", &w); !s.ok()) {
        return s;
      }
      return ck.End();
    }
    if (what == "state") {
      auto ep = ck.Ep();
      if (!ep.ok()) return ep.status();
      std::string st;
      if (absl::Status s = ck.Choice(kStates, "a QP state", &st); !s.ok()) {
        return s;
      }
      return ck.End();
    }
    if (what == "data" || what == "u64") {
      auto mr = ck.Mr();
      if (!mr.ok()) return mr.status();
      auto v = ck.Next(what == "data" ? "a \"text\"" : "a number");
      if (!v.ok()) return v.status();
      uint64_t n = 0;
      if (what == "u64" && !ParseU64((*v)->text, &n)) {
        return ck.ErrorAt(**v, "a number");
      }
      const uint64_t size = ck.mrs()[*mr];
      absl::Status s = ck.Keys({{"offset", ValueKind::kU64, size - 1}});
      if (!s.ok()) return s;
      const uint64_t len = what == "u64" ? 8 : (*v)->text.size();
      if (KeyU64(c, "offset", 0) + len > size) {
        return ck.ErrorAt(**v, absl::StrFormat(
                                   "data that fits in %s (%u bytes)", *mr, size));
      }
      return absl::OkStatus();
    }
    // error
    auto e = ck.Next("an errno name (EINVAL, ENOMEM, ...)");
    if (!e.ok()) return e.status();
    const std::string& t = (*e)->text;
    if (t.size() < 2 || t[0] != 'E' ||
        !std::all_of(t.begin(), t.end(), [](char ch) {
          return std::isupper(static_cast<unsigned char>(ch)) ||
                 std::isdigit(static_cast<unsigned char>(ch));
        })) {
      return ck.ErrorAt(**e, "an errno name (EINVAL, ENOMEM, ...)");
    }
    return ck.End();
  }
  return ck.ErrorAt(c.words[0], absl::StrCat("a command (",
                                             absl::StrJoin(kVerbs, ", "), ")"));
}

}  // namespace

absl::StatusOr<Scenario> ParseScenario(absl::string_view file,
                                       absl::string_view text) {
  Scenario sc;
  sc.file = std::string(file);
  int line_no = 0;
  int nodes = 2;
  bool seen_endpoint = false;
  Names names;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    Command c;
    c.line = line_no;
    if (absl::Status s = Lex(file, line_no, line, &c); !s.ok()) return s;
    if (c.words.empty()) continue;
    Checker ck(file, c, nodes, &names);
    if (absl::Status s = CheckCommand(ck, &seen_endpoint, &nodes, file);
        !s.ok()) {
      return s;
    }
    if (c.words[0].text == "title") {
      sc.title = c.rest;
      continue;
    }
    if (c.words[0].text == "spec") {
      sc.spec.push_back(c.rest);
      continue;
    }
    sc.commands.push_back(std::move(c));
  }
  return sc;
}

// ---------------------------------------------------------------------------
// Running

namespace {

struct EpState {
  std::unique_ptr<Endpoint> ep;
  EndpointAttr attr;
  int node = 0;
};

struct MwState {
  std::unique_ptr<Mw> mw;
  int type = 1;
};

absl::string_view TransportName(QpType t) {
  return t == QpType::kUd ? "UD" : t == QpType::kUc ? "UC" : "RC";
}

struct MrState {
  std::vector<uint64_t> words;  // 8-byte aligned storage
  uint64_t size = 0;
  std::unique_ptr<Mr> mr;
  std::string ep;
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words.data()); }
};

Mtu MtuOf(uint64_t bytes) {
  switch (bytes) {
    case 256: return Mtu::k256;
    case 512: return Mtu::k512;
    case 2048: return Mtu::k2048;
    case 4096: return Mtu::k4096;
    default: return Mtu::k1024;
  }
}

std::string AethTextOf(uint8_t s) {
  if (sim::IsAck(s)) return "ACK";
  if (sim::IsRnrNak(s)) return absl::StrFormat("RNR NAK timer %d", s & 0x1f);
  if (sim::IsNak(s)) {
    switch (static_cast<sim::NakCode>(s & 0x1f)) {
      case sim::NakCode::kPsnSequenceError: return "NAK PSN sequence error";
      case sim::NakCode::kInvalidRequest: return "NAK invalid request";
      case sim::NakCode::kRemoteAccessError: return "NAK remote access error";
      case sim::NakCode::kRemoteOperationalError: return "NAK remote op error";
      case sim::NakCode::kInvalidRdRequest: return "NAK invalid RD request";
    }
  }
  return absl::StrFormat("aeth 0x%02x", s);
}

// A trace record as a timeline line; packets of UC and UD QPs get their
// transport in front of the opcode ("UD SEND_ONLY").
std::string RecordText(const sim::TraceRecord& r, QpType transport) {
  std::string op(sim::RcOpName(static_cast<sim::RcOp>(r.opcode)));
  if (transport != QpType::kRc) op = absl::StrCat(TransportName(transport), " ", op);
  switch (r.kind) {
    case sim::TraceKind::kComplete:
      if (static_cast<WcStatus>(r.opcode) != WcStatus::kSuccess) {
        return absl::StrFormat("cqe wr %u %s", r.wr_id,
                               WcStatusName(static_cast<WcStatus>(r.opcode)));
      }
      return absl::StrFormat("cqe wr %u %s len %u", r.wr_id,
                             WcStatusName(static_cast<WcStatus>(r.opcode)),
                             r.length);
    case sim::TraceKind::kTimeout:
      return absl::StrFormat("ACK timeout: resend from psn %u", r.psn);
    case sim::TraceKind::kRnrWait:
      return absl::StrFormat("RNR wait, then resend psn %u", r.psn);
    default:
      break;
  }
  std::string s = absl::StrFormat(
      "%s %s psn %u", r.kind == sim::TraceKind::kTransmit ? "->" : "<-", op,
      r.psn);
  if (r.length > 0) absl::StrAppendFormat(&s, " len %u", r.length);
  if (static_cast<sim::RcOp>(r.opcode) == sim::RcOp::kAcknowledge) {
    absl::StrAppend(&s, " ", AethTextOf(r.syndrome));
  }
  if (r.kind == sim::TraceKind::kDrop) {
    absl::StrAppend(&s, " LOST (", r.note.empty() ? "dropped" : r.note, ")");
  } else if (!r.note.empty()) {
    absl::StrAppend(&s, " (", r.note, ")");
  }
  return s;
}

class Runner {
 public:
  Runner(const Scenario& sc, const RunOptions& opt) : sc_(sc), opt_(opt) {}
  ~Runner() {
    // Windows before the regions they are bound to, AHs and regions before
    // their PDs.
    mws_.clear();
    ahs_.clear();
    mrs_.clear();
    eps_.clear();
  }

  absl::StatusOr<RunResult> Run() {
    int nodes = 2;
    for (const Command& c : sc_.commands) {
      if (c.words[0].text == "nodes") {
        uint64_t n = 2;
        ParseU64(c.words[1].text, &n);
        nodes = static_cast<int>(n);
      }
    }
    std::string spec = opt_.provider;
    const bool is_sim = spec == "sim" || absl::StartsWith(spec, "sim:");
    if (is_sim) {
      std::vector<std::string> parts;
      if (absl::StartsWith(spec, "sim:")) parts.push_back(spec.substr(4));
      parts.push_back(absl::StrCat("nodes=", std::max(nodes, 2)));
      if (opt_.have_seed) parts.push_back(absl::StrCat("seed=", opt_.seed));
      spec = absl::StrCat("sim:", absl::StrJoin(parts, ","));
    }
    auto provider = OpenProvider(spec);
    if (!provider.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "provider '", opt_.provider, "': ", provider.status().message()));
    }
    provider_ = *std::move(provider);
    sim_ = sim::AsSimProvider(provider_.get());
    result_.has_fabric = sim_ != nullptr;
    if (sim_ != nullptr) {
      result_.address_base = fabric().options().address_base;
      fabric().KeepTrace(true);
      if (opt_.capture) fabric().KeepPackets(true);
      if (!opt_.faults.empty()) {
        if (absl::Status s = fabric().AddFaults(opt_.faults); !s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--faults: ", s.message()));
        }
        Row(TimelineRow::kAction, -1, 0,
            absl::StrCat("faults (--faults): ", opt_.faults));
      }
    } else {
      auto devices = provider_->ListDevices();
      if (!devices.ok() || devices->empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "provider '", opt_.provider, "' has no device"));
      }
      devices_ = *devices;
    }
    for (const Command& c : sc_.commands) {
      if (pending_error_.has_value() &&
          !(c.words[0].text == "expect" && c.words[1].text == "error")) {
        return Fail(pending_line_,
                    absl::StrCat(pending_error_->message(),
                                 " (put `expect error ",
                                 ErrnoName(ErrnoOf(*pending_error_)),
                                 "` after it if that is the point)"));
      }
      absl::Status s = Execute(c);
      FlushTrace();
      if (!s.ok()) return s;
    }
    if (pending_error_.has_value()) {
      return Fail(pending_line_, std::string(pending_error_->message()));
    }
    if (sim_ != nullptr) {
      result_.end_ns = absl::ToInt64Nanoseconds(fabric().Now());
      result_.trace = fabric().TraceRecords();
      if (opt_.capture) result_.packets = fabric().CapturedPackets();
    }
    MatchCompletions();
    return std::move(result_);
  }

 private:
  sim::Fabric& fabric() { return sim_->fabric(); }
  int64_t Now() {
    return sim_ ? absl::ToInt64Nanoseconds(fabric().Now()) : -1;
  }
  void Row(TimelineRow::Kind kind, int node, uint32_t qpn, std::string text,
           int64_t time = -2) {
    TimelineRow r;
    r.kind = kind;
    r.time_ns = time == -2 ? (kind == TimelineRow::kNarration ? -1 : Now())
                           : time;
    r.node = node;
    r.qpn = qpn;
    r.text = std::move(text);
    result_.rows.push_back(std::move(r));
  }
  void EpRow(const EpState& e, std::string text,
             TimelineRow::Kind kind = TimelineRow::kAction) {
    Row(kind, e.node, e.ep ? e.ep->qp()->qp_num() : 0, std::move(text));
  }
  absl::Status Fail(int line, absl::string_view msg) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s:%d: %s", sc_.file, line, msg));
  }
  void FlushTrace() {
    if (sim_ == nullptr) return;
    std::vector<sim::TraceRecord> recs = fabric().TraceRecords();
    for (size_t i = trace_seen_; i < recs.size(); ++i) {
      const sim::TraceRecord& r = recs[i];
      Row(r.kind == sim::TraceKind::kComplete ? TimelineRow::kCompletion
                                              : TimelineRow::kPacket,
          r.node, r.qpn, RecordText(r, TransportOf(r.node, r.qpn)),
          r.time_ns);
    }
    trace_seen_ = recs.size();
  }
  void Check(const Command& c, bool ok, const std::string& what,
             const std::string& got) {
    ++result_.expectations;
    if (ok) {
      Row(TimelineRow::kCheck, -1, 0, absl::StrCat("ok: expect ", what));
      return;
    }
    ++result_.failures;
    Row(TimelineRow::kCheck, -1, 0,
        absl::StrCat("FAILED: expect ", what, "; got ", got));
    std::fprintf(stderr, "%s:%d: expectation failed: expected %s, got %s\n",
                 sc_.file.c_str(), c.line, what.c_str(), got.c_str());
  }

  std::string Words(const Command& c, size_t from) {
    std::vector<std::string> w;
    for (size_t i = from; i < c.words.size(); ++i) {
      w.push_back(c.words[i].quoted ? absl::StrCat("\"", c.words[i].text, "\"")
                                    : c.words[i].text);
    }
    return absl::StrJoin(w, " ");
  }

  QpType TransportOf(int node, uint32_t qpn) const {
    auto it = result_.transports.find({node, qpn});
    return it == result_.transports.end() ? QpType::kRc : it->second;
  }
  // rkey=/inv=/inv_rkey= values: a window's current rkey, or a number.
  uint32_t Rkey(const std::string& v) {
    if (auto it = mws_.find(v); it != mws_.end()) return it->second.mw->rkey();
    uint64_t n = 0;
    ParseU64(v, &n);
    return static_cast<uint32_t>(n);
  }
  // dest=/src_qp= values: an endpoint's QP number, or a number.
  uint32_t Qpn(const std::string& v) {
    if (auto it = eps_.find(v); it != eps_.end()) {
      return it->second.ep->qp()->qp_num();
    }
    uint64_t n = 0;
    ParseU64(v, &n);
    return static_cast<uint32_t>(n);
  }

  absl::Status Modify(int line, EpState& e, QpState to, EpState* peer) {
    const QpState from = e.ep->qp()->state();
    absl::Status s;
    switch (to) {
      case QpState::kInit:
        s = ModifyQpToInit(e.ep->qp(), e.attr);
        break;
      case QpState::kRtr: {
        if (peer == nullptr) {  // UD: no destination
          s = ModifyQpToRtr(e.ep->qp(), e.attr, 0, Gid{}, 0);
          break;
        }
        auto gid = peer->ep->context()->QueryGid(1, 0);
        if (!gid.ok()) return Fail(line, gid.status().message());
        s = ModifyQpToRtr(e.ep->qp(), e.attr, peer->ep->qp()->qp_num(), *gid,
                          peer->attr.sq_psn);
        break;
      }
      case QpState::kRts:
        s = ModifyQpToRts(e.ep->qp(), e.attr, e.attr.sq_psn);
        break;
      default: {
        QpAttr a;
        a.qp_state = to;
        s = e.ep->qp()->Modify(a, kQpState);
        break;
      }
    }
    if (!s.ok()) {
      EpRow(e, absl::StrCat("modify ", QpStateName(from), " -> ",
                            QpStateName(to), " failed: ",
                            ErrnoName(ErrnoOf(s))));
      pending_error_ = s;
      pending_line_ = line;
      return absl::OkStatus();
    }
    std::string text = absl::StrCat("qp ", QpStateName(from), " -> ",
                                    QpStateName(to));
    if (to == QpState::kRtr && peer != nullptr) {
      absl::StrAppend(&text, " (dest qp ", peer->ep->qp()->qp_num(),
                      ", rq_psn ", peer->attr.sq_psn, ")");
    } else if (to == QpState::kInit && e.attr.qp_type == QpType::kUd) {
      absl::StrAppendFormat(&text, " (qkey 0x%x)", e.attr.qkey);
    } else if (to == QpState::kRts) {
      absl::StrAppend(&text, " (sq_psn ", e.attr.sq_psn, ")");
    }
    EpRow(e, text);
    return absl::OkStatus();
  }

  absl::Status Execute(const Command& c) {
    const std::string& verb = c.words[0].text;
    if (verb == "say") {
      Row(TimelineRow::kNarration, -1, 0, c.rest);
      return absl::OkStatus();
    }
    if (verb == "nodes") return absl::OkStatus();
    if (verb == "faults") {
      if (sim_ == nullptr) {
        return Fail(c.line, "fault rules need the sim provider");
      }
      if (absl::Status s = fabric().AddFaults(c.rest); !s.ok()) {
        return Fail(c.line, s.message());
      }
      Row(TimelineRow::kAction, -1, 0, absl::StrCat("faults: ", c.rest));
      return absl::OkStatus();
    }
    if (verb == "endpoint") {
      EpState e;
      ParseDevice(c.words[2].text, &e.node);
      EndpointAttr& a = e.attr;
      a.path_mtu = MtuOf(KeyU64(c, "mtu", 1024));
      const std::string type = KeyValue(c, "type");
      a.qp_type = type == "ud"   ? QpType::kUd
                  : type == "uc" ? QpType::kUc
                                 : QpType::kRc;
      a.qkey = static_cast<uint32_t>(KeyU64(c, "qkey", a.qkey));
      if (std::string v = KeyValue(c, "access"); !v.empty()) {
        ParseAccess(v, &a.qp_access);
      }
      a.timeout = static_cast<uint8_t>(KeyU64(c, "timeout", a.timeout));
      a.retry_cnt = static_cast<uint8_t>(KeyU64(c, "retry_cnt", a.retry_cnt));
      a.rnr_retry = static_cast<uint8_t>(KeyU64(c, "rnr_retry", a.rnr_retry));
      a.min_rnr_timer =
          static_cast<uint8_t>(KeyU64(c, "min_rnr_timer", a.min_rnr_timer));
      a.max_rd_atomic =
          static_cast<uint8_t>(KeyU64(c, "max_rd_atomic", a.max_rd_atomic));
      a.max_dest_rd_atomic = static_cast<uint8_t>(
          KeyU64(c, "max_dest_rd_atomic", a.max_dest_rd_atomic));
      a.sq_psn = static_cast<uint32_t>(KeyU64(c, "sq_psn", a.sq_psn));
      const uint32_t depth = static_cast<uint32_t>(KeyU64(c, "depth", 64));
      a.cap.max_send_wr = depth;
      a.cap.max_recv_wr = depth;
      a.cq_depth = static_cast<int>(depth * 2);
      std::string device =
          sim_ ? absl::StrCat("sim", e.node)
               : devices_[static_cast<size_t>(e.node) % devices_.size()];
      a.device = device;
      auto ctx = provider_->Open(device);
      if (!ctx.ok()) return Fail(c.line, ctx.status().message());
      auto ep = Endpoint::Create(*std::move(ctx), a);
      if (!ep.ok()) return Fail(c.line, ep.status().message());
      e.ep = *std::move(ep);
      result_.transports[{e.node, e.ep->qp()->qp_num()}] = a.qp_type;
      result_.qp_names[{e.node, e.ep->qp()->qp_num()}] = c.words[1].text;
      EpRow(e, absl::StrFormat("%s: PD, CQs, %s qp %u in %s on %s",
                               c.words[1].text, TransportName(a.qp_type),
                               e.ep->qp()->qp_num(),
                               QpStateName(e.ep->qp()->state()), device));
      eps_[c.words[1].text] = std::move(e);
      return absl::OkStatus();
    }
    if (verb == "mr") {
      EpState& e = eps_[c.words[2].text];
      MrState m;
      ParseU64(c.words[3].text, &m.size);
      m.words.assign((m.size + 7) / 8, 0);
      m.ep = c.words[2].text;
      uint32_t access = kAccessLocalWrite;
      if (std::string v = KeyValue(c, "access"); !v.empty()) {
        ParseAccess(v, &access);
      }
      auto mr = e.ep->RegMr(m.data(), m.size, access);
      if (!mr.ok()) {
        EpRow(e, absl::StrCat("reg_mr ", c.words[1].text, " failed: ",
                              mr.status().message()));
        pending_error_ = mr.status();
        pending_line_ = c.line;
        mrs_[c.words[1].text] = std::move(m);
        return absl::OkStatus();
      }
      m.mr = *std::move(mr);
      EpRow(e, absl::StrFormat("reg_mr %s %uB %s lkey 0x%x rkey 0x%x",
                               c.words[1].text, m.size,
                               AccessFlagsName(access), m.mr->lkey(),
                               m.mr->rkey()));
      mrs_[c.words[1].text] = std::move(m);
      return absl::OkStatus();
    }
    if (verb == "ah") {
      EpState& e = eps_[c.words[2].text];
      int node = 0;
      ParseDevice(c.words[3].text, &node);
      const std::string device =
          sim_ ? absl::StrCat("sim", node)
               : devices_[static_cast<size_t>(node) % devices_.size()];
      auto ctx = provider_->Open(device);
      if (!ctx.ok()) return Fail(c.line, ctx.status().message());
      auto gid = (*ctx)->QueryGid(1, 0);
      if (!gid.ok()) return Fail(c.line, gid.status().message());
      AhAttr attr;
      attr.dgid = *gid;
      attr.hop_limit = static_cast<uint8_t>(KeyU64(c, "hop_limit", 64));
      attr.traffic_class =
          static_cast<uint8_t>(KeyU64(c, "traffic_class", 0));
      auto ah = e.ep->pd()->CreateAh(attr);
      if (!ah.ok()) return Fail(c.line, ah.status().message());
      ahs_[c.words[1].text] = *std::move(ah);
      EpRow(e, absl::StrFormat("create_ah %s: to %s (GID %s), hop limit %d",
                               c.words[1].text, device, GidToString(*gid),
                               attr.hop_limit));
      return absl::OkStatus();
    }
    if (verb == "mw") {
      EpState& e = eps_[c.words[2].text];
      MwState w;
      w.type = static_cast<int>(KeyU64(c, "type", 1));
      auto mw = e.ep->pd()->AllocMw(static_cast<MwType>(w.type));
      if (!mw.ok()) {
        EpRow(e, absl::StrCat("alloc_mw ", c.words[1].text, " failed: ",
                              ErrnoName(ErrnoOf(mw.status()))));
        pending_error_ = mw.status();
        pending_line_ = c.line;
        return absl::OkStatus();
      }
      w.mw = *std::move(mw);
      EpRow(e, absl::StrFormat("alloc_mw %s: type %d, rkey 0x%x (not bound)",
                               c.words[1].text, w.type, w.mw->rkey()));
      mws_[c.words[1].text] = std::move(w);
      return absl::OkStatus();
    }
    if (verb == "bind") return Bind(c);
    if (verb == "fill") {
      MrState& m = mrs_[c.words[1].text];
      const uint64_t off = KeyU64(c, "offset", 0);
      if (c.words.size() > 2 && !absl::StrContains(c.words[2].text, '=')) {
        std::memcpy(m.data() + off, c.words[2].text.data(),
                    c.words[2].text.size());
      } else if (!KeyValue(c, "u64").empty()) {
        const uint64_t v = KeyU64(c, "u64", 0);
        std::memcpy(m.data() + off, &v, 8);
      } else {
        std::memset(m.data() + off, static_cast<int>(KeyU64(c, "byte", 0)),
                    m.size - off);
      }
      return absl::OkStatus();
    }
    if (verb == "connect") {
      EpState& a = eps_[c.words[1].text];
      EpState& b = eps_[c.words[2].text];
      struct Step {
        EpState* ep;
        EpState* peer;
        QpState to;
      };
      const Step steps[] = {{&a, &b, QpState::kInit}, {&b, &a, QpState::kInit},
                            {&a, &b, QpState::kRtr},  {&b, &a, QpState::kRtr},
                            {&a, &b, QpState::kRts},  {&b, &a, QpState::kRts}};
      for (const Step& st : steps) {
        EpState* x = st.ep;
        EpState* peer = st.peer;
        QpState to = st.to;
        if (absl::Status s = Modify(c.line, *x, to, peer); !s.ok()) return s;
        if (pending_error_.has_value()) return absl::OkStatus();
      }
      return absl::OkStatus();
    }
    if (verb == "modify") {
      EpState& e = eps_[c.words[1].text];
      const QpState to = *StateByName(c.words[2].text);
      std::string peer = KeyValue(c, "peer");
      return Modify(c.line, e, to, peer.empty() ? nullptr : &eps_[peer]);
    }
    if (verb == "post") return Post(c);
    if (verb == "wait" || verb == "poll") {
      EpState& e = eps_[c.words[1].text];
      const bool send = c.words[2].text == "send";
      last_wc_.reset();
      if (verb == "wait") {
        const absl::Duration timeout =
            absl::Microseconds(KeyU64(c, "timeout_us", 10'000'000));
        auto wc = send ? e.ep->GetSendComp(timeout) : e.ep->GetRecvComp(timeout);
        FlushTrace();
        if (!wc.ok()) {
          if (!absl::IsDeadlineExceeded(wc.status())) {
            return Fail(c.line, wc.status().message());
          }
          EpRow(e, absl::StrCat("wait ", c.words[2].text,
                                ": no completion within ",
                                absl::FormatDuration(timeout)),
                TimelineRow::kCompletion);
          return absl::OkStatus();
        }
        last_wc_ = *wc;
      } else {
        // Polling may move virtual time on: show what happened meanwhile
        // before what the poll found.
        WorkCompletion wc;
        auto n = (send ? e.ep->send_cq() : e.ep->recv_cq())->Poll({&wc, 1});
        FlushTrace();
        if (!n.ok()) return Fail(c.line, n.status().message());
        if (*n == 0) {
          EpRow(e, absl::StrCat("poll ", c.words[2].text, ": empty"),
                TimelineRow::kCompletion);
          return absl::OkStatus();
        }
        last_wc_ = wc;
      }
      const WorkCompletion& wc = *last_wc_;
      result_.polled.push_back({e.node, wc.qp_num, wc.wr_id, wc.status,
                                wc.opcode});
      std::string text = absl::StrFormat(
          "%s %s: wr %u %s", verb, c.words[2].text, wc.wr_id,
          WcStatusName(wc.status));
      if (wc.status == WcStatus::kSuccess) {
        absl::StrAppend(&text, " ", WcOpcodeName(wc.opcode));
        if (wc.opcode == WcOpcode::kRecv ||
            wc.opcode == WcOpcode::kRecvRdmaWithImm) {
          absl::StrAppend(&text, " len ", wc.byte_len);
        }
        if (wc.wc_flags & kWcWithImm) {
          absl::StrAppendFormat(&text, " imm 0x%x", wc.imm_data);
        }
        if (wc.wc_flags & kWcWithInv) {
          absl::StrAppendFormat(&text, " invalidated rkey 0x%x",
                                wc.invalidated_rkey);
        }
        if (wc.wc_flags & kWcGrh) {
          absl::StrAppendFormat(&text, " GRH, from qp %u", wc.src_qp);
        }
      }
      EpRow(e, text, TimelineRow::kCompletion);
      return absl::OkStatus();
    }
    if (verb == "run") {
      if (sim_ == nullptr) return absl::OkStatus();
      if (std::string us = KeyValue(c, "us"); !us.empty()) {
        Row(TimelineRow::kAction, -1, 0,
            absl::StrCat("run ", us, " us of virtual time"));
        fabric().RunFor(absl::Microseconds(KeyU64(c, "us", 0)));
      } else {
        fabric().RunUntilIdle(absl::Seconds(10));
      }
      return absl::OkStatus();
    }
    if (verb == "expect") return Expect(c);
    return Fail(c.line, absl::StrCat("unknown command ", verb));
  }

  absl::Status Post(const Command& c) {
    const std::string& kind = c.words[1].text;
    EpState& e = eps_[c.words[2].text];
    MrState& m = mrs_[KeyValue(c, "mr")];
    const uint64_t wr_id = KeyU64(c, "wr", 0);
    const uint64_t off = KeyU64(c, "offset", 0);
    const bool atomic = kind == "cas" || kind == "fadd";
    const uint64_t len = kind == "local_inv" ? 0
                         : atomic            ? 8
                                             : KeyU64(c, "len", m.size - off);
    Sge sge;
    sge.addr = reinterpret_cast<uint64_t>(m.data() + off);
    sge.length = static_cast<uint32_t>(len);
    sge.lkey = m.mr ? m.mr->lkey() : 0;
    PostedWr pw;
    pw.post_ns = std::max<int64_t>(Now(), 0);
    pw.trace_index = trace_seen_;
    pw.node = e.node;
    pw.qpn = e.ep->qp()->qp_num();
    pw.wr_id = wr_id;
    absl::Status s;
    std::string text;
    if (kind == "recv") {
      RecvWr wr;
      wr.wr_id = wr_id;
      wr.sg_list = {&sge, 1};
      s = e.ep->qp()->PostRecv(wr);
      pw.recv = true;
      pw.what = absl::StrFormat("RECV %u bytes", len);
      text = absl::StrFormat("post RECV wr %u, buffer %u bytes", wr_id, len);
    } else {
      SendWr wr;
      wr.wr_id = wr_id;
      wr.sg_list = {&sge, 1};
      if (!HasFlag(c, "unsignaled")) wr.send_flags |= kSendSignaled;
      if (HasFlag(c, "fence")) wr.send_flags |= kSendFence;
      if (HasFlag(c, "solicited")) wr.send_flags |= kSendSolicited;
      if (HasFlag(c, "inline")) wr.send_flags |= kSendInline;
      const bool imm = !KeyValue(c, "imm").empty();
      wr.imm_data = static_cast<uint32_t>(KeyU64(c, "imm", 0));
      uint64_t raddr = 0;
      uint32_t rkey = 0;
      std::string remote = KeyValue(c, "remote");
      const std::string rkey_name = KeyValue(c, "rkey");
      if (!remote.empty()) {
        MrState& r = mrs_[remote];
        raddr = reinterpret_cast<uint64_t>(r.data() + KeyU64(c, "roffset", 0));
        rkey = r.mr ? r.mr->rkey() : 0;
        if (!rkey_name.empty()) rkey = Rkey(rkey_name);
      }
      const std::string inv = KeyValue(c, "inv");
      const std::string ah = KeyValue(c, "ah");
      if (kind == "local_inv") {
        wr.opcode = WrOpcode::kLocalInv;
        wr.sg_list = {};
        wr.invalidate_rkey = Rkey(rkey_name);
      } else if (kind == "send" && !inv.empty()) {
        wr.opcode = WrOpcode::kSendWithInv;
        wr.invalidate_rkey = Rkey(inv);
      } else if (kind == "send") {
        wr.opcode = imm ? WrOpcode::kSendWithImm : WrOpcode::kSend;
        if (!ah.empty()) {
          wr.ud.ah = ahs_[ah].get();
          wr.ud.remote_qpn = Qpn(KeyValue(c, "dest"));
          wr.ud.remote_qkey =
              static_cast<uint32_t>(KeyU64(c, "qkey", e.attr.qkey));
        }
      } else if (kind == "write") {
        wr.opcode = imm ? WrOpcode::kRdmaWriteWithImm : WrOpcode::kRdmaWrite;
      } else if (kind == "read") {
        wr.opcode = WrOpcode::kRdmaRead;
      } else if (kind == "cas") {
        wr.opcode = WrOpcode::kAtomicCmpAndSwp;
        wr.atomic.compare_add = KeyU64(c, "compare", 0);
        wr.atomic.swap = KeyU64(c, "swap", 0);
      } else {
        wr.opcode = WrOpcode::kAtomicFetchAndAdd;
        wr.atomic.compare_add = KeyU64(c, "add", 0);
      }
      if (atomic) {
        wr.atomic.remote_addr = raddr;
        wr.atomic.rkey = rkey;
      } else {
        wr.rdma.remote_addr = raddr;
        wr.rdma.rkey = rkey;
      }
      s = e.ep->Post(wr);
      if (kind == "local_inv") {
        pw.what = "LOCAL_INV";
        text = absl::StrFormat("post LOCAL_INV wr %u, rkey 0x%x", wr_id,
                               wr.invalidate_rkey);
        if (mws_.count(rkey_name)) absl::StrAppend(&text, " (", rkey_name, ")");
      } else {
        pw.what = absl::StrFormat("%s %u bytes", WrOpcodeName(wr.opcode), len);
        text = absl::StrFormat("post %s wr %u, %u bytes",
                               WrOpcodeName(wr.opcode), wr_id, len);
      }
      if (!remote.empty()) {
        absl::StrAppendFormat(&text, ", %s rkey 0x%x", remote, rkey);
        if (mws_.count(rkey_name)) {
          absl::StrAppend(&text, " (window ", rkey_name, ")");
        }
      }
      if (!inv.empty()) {
        absl::StrAppendFormat(&text, ", invalidate rkey 0x%x",
                              wr.invalidate_rkey);
        if (mws_.count(inv)) absl::StrAppend(&text, " (", inv, ")");
      }
      if (!ah.empty()) {
        const std::string dest = KeyValue(c, "dest");
        absl::StrAppendFormat(&text, ", to qp %u", wr.ud.remote_qpn);
        if (eps_.count(dest)) absl::StrAppend(&text, " (", dest, ")");
        absl::StrAppendFormat(&text, " via %s, qkey 0x%x", ah,
                              wr.ud.remote_qkey);
      }
      if (imm) absl::StrAppendFormat(&text, ", imm 0x%x", wr.imm_data);
      if (kind == "cas") {
        absl::StrAppendFormat(&text, ", compare %u swap %u",
                              wr.atomic.compare_add, wr.atomic.swap);
      } else if (kind == "fadd") {
        absl::StrAppendFormat(&text, ", add %u", wr.atomic.compare_add);
      }
      if (!(wr.send_flags & kSendSignaled)) absl::StrAppend(&text, ", unsignaled");
    }
    if (!s.ok()) {
      EpRow(e, absl::StrCat(text, ": failed, ", ErrnoName(ErrnoOf(s))));
      pending_error_ = s;
      pending_line_ = c.line;
      return absl::OkStatus();
    }
    EpRow(e, text);
    result_.wrs.push_back(pw);
    return absl::OkStatus();
  }

  absl::Status Expect(const Command& c) {
    const std::string& what = c.words[1].text;
    const std::string desc = Words(c, 1);
    if (what == "error") {
      const std::string want = c.words[2].text;
      if (!pending_error_.has_value()) {
        Check(c, false, desc, "no error (the command before succeeded)");
        return absl::OkStatus();
      }
      const std::string got(ErrnoName(ErrnoOf(*pending_error_)));
      Check(c, got == want, desc,
            absl::StrCat(got, ": ", pending_error_->message()));
      pending_error_.reset();
      return absl::OkStatus();
    }
    if (what == "completion") {
      if (!last_wc_.has_value()) {
        Check(c, false, desc, "no completion");
        return absl::OkStatus();
      }
      const WorkCompletion& wc = *last_wc_;
      const WcStatus want = *StatusByName(c.words[2].text);
      std::string got = absl::StrFormat("wr %u %s", wc.wr_id,
                                        WcStatusName(wc.status));
      bool ok = wc.status == want;
      if (std::string v = KeyValue(c, "wr"); !v.empty()) {
        ok = ok && wc.wr_id == KeyU64(c, "wr", 0);
      }
      if (std::string v = KeyValue(c, "opcode"); !v.empty()) {
        ok = ok && wc.opcode == *WcOpcodeByName(v);
        absl::StrAppend(&got, " ", WcOpcodeName(wc.opcode));
      }
      if (std::string v = KeyValue(c, "len"); !v.empty()) {
        ok = ok && wc.byte_len == KeyU64(c, "len", 0);
        absl::StrAppend(&got, " len ", wc.byte_len);
      }
      if (std::string v = KeyValue(c, "imm"); !v.empty()) {
        ok = ok && (wc.wc_flags & kWcWithImm) &&
             wc.imm_data == KeyU64(c, "imm", 0);
        if (wc.wc_flags & kWcWithImm) {
          absl::StrAppendFormat(&got, " imm 0x%x", wc.imm_data);
        } else {
          absl::StrAppend(&got, " without imm");
        }
      }
      if (std::string v = KeyValue(c, "flags"); !v.empty()) {
        uint32_t want_flags = 0;
        ParseWcFlags(v, &want_flags);
        const uint32_t have = wc.wc_flags & (kWcGrh | kWcWithImm | kWcWithInv);
        ok = ok && have == want_flags;
        absl::StrAppend(&got, " flags ", WcFlagsText(have));
      }
      if (std::string v = KeyValue(c, "src_qp"); !v.empty()) {
        ok = ok && wc.src_qp == Qpn(v);
        absl::StrAppend(&got, " src_qp ", wc.src_qp);
      }
      if (std::string v = KeyValue(c, "inv_rkey"); !v.empty()) {
        ok = ok && (wc.wc_flags & kWcWithInv) &&
             wc.invalidated_rkey == Rkey(v);
        absl::StrAppendFormat(&got, " invalidated rkey 0x%x",
                              wc.invalidated_rkey);
      }
      Check(c, ok, desc, got);
      return absl::OkStatus();
    }
    if (what == "no") {
      Check(c, !last_wc_.has_value(), desc,
            last_wc_ ? absl::StrFormat("wr %u %s", last_wc_->wr_id,
                                       WcStatusName(last_wc_->status))
                     : "");
      return absl::OkStatus();
    }
    if (what == "state") {
      EpState& e = eps_[c.words[2].text];
      const QpState got = e.ep->qp()->state();
      Check(c, QpStateName(got) == c.words[3].text, desc,
            std::string(QpStateName(got)));
      return absl::OkStatus();
    }
    MrState& m = mrs_[c.words[2].text];
    const uint64_t off = KeyU64(c, "offset", 0);
    if (what == "grh") return ExpectGrh(c, desc, m.data() + off);
    if (what == "data") {
      const std::string& want = c.words[3].text;
      std::string got(reinterpret_cast<const char*>(m.data() + off),
                      want.size());
      std::string shown;
      for (char ch : got) {
        shown += std::isprint(static_cast<unsigned char>(ch)) ? ch : '.';
      }
      Check(c, got == want, desc, absl::StrCat("\"", shown, "\""));
      return absl::OkStatus();
    }
    uint64_t want = 0, got = 0;
    ParseU64(c.words[3].text, &want);
    std::memcpy(&got, m.data() + off, 8);
    Check(c, got == want, desc, absl::StrCat(got));
    return absl::OkStatus();
  }

  // The 40 bytes a UD receive starts with, for RoCEv2 over IPv4: 20 zero
  // bytes, then the IPv4 header of the packet (src and dst the nodes'
  // addresses, protocol UDP, a valid checksum; ttl/tos/len if given).
  absl::Status ExpectGrh(const Command& c, const std::string& desc,
                         const uint8_t* g) {
    const uint8_t* ip = g + 20;
    auto ipv4 = [](const uint8_t* a) {
      return absl::StrFormat("%d.%d.%d.%d", a[0], a[1], a[2], a[3]);
    };
    auto node_ip = [this](const std::string& dev) {
      int node = 0;
      ParseDevice(dev, &node);
      return sim::Ipv4ToString(sim::NodeIpv4(result_.address_base, node));
    };
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += ip[i] << 8 | ip[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const bool zeros = std::all_of(g, g + 20, [](uint8_t b) { return b == 0; });
    const int len = ip[2] << 8 | ip[3];
    std::string got = absl::StrFormat(
        "%s, IPv4 version/IHL 0x%02x proto %d %s -> %s ttl %d tos %d len %d "
        "checksum %s",
        zeros ? "20 zero bytes" : "nonzero bytes before the IPv4 header",
        ip[0], ip[9], ipv4(ip + 12), ipv4(ip + 16), ip[8], ip[1], len,
        sum == 0xffff ? "ok" : "bad");
    bool ok = zeros && ip[0] == 0x45 && ip[9] == 17 && sum == 0xffff &&
              ipv4(ip + 12) == node_ip(KeyValue(c, "src")) &&
              ipv4(ip + 16) == node_ip(KeyValue(c, "dst"));
    if (!KeyValue(c, "ttl").empty()) ok = ok && ip[8] == KeyU64(c, "ttl", 0);
    if (!KeyValue(c, "tos").empty()) ok = ok && ip[1] == KeyU64(c, "tos", 0);
    if (!KeyValue(c, "len").empty()) {
      ok = ok && static_cast<uint64_t>(len) == KeyU64(c, "len", 0);
    }
    Check(c, ok, desc, got);
    if (ok) {
      Row(TimelineRow::kCheck, -1, 0,
          absl::StrCat("    GRH: ", got.substr(0, got.find(" checksum"))));
    }
    return absl::OkStatus();
  }

  // bind MW EP ...: ibv_bind_mw(3) for a type 1 window, a BIND_MW work
  // request with the window's next rkey (ibv_inc_rkey) for type 2.
  absl::Status Bind(const Command& c) {
    auto it = mws_.find(c.words[1].text);
    if (it == mws_.end()) {
      return Fail(c.line, absl::StrCat("no window ", c.words[1].text));
    }
    MwState& w = it->second;
    EpState& e = eps_[c.words[2].text];
    MrState& m = mrs_[KeyValue(c, "mr")];
    const uint64_t wr_id = KeyU64(c, "wr", 0);
    const uint64_t off = KeyU64(c, "offset", 0);
    const uint64_t len = KeyU64(c, "len", m.size - off);
    MwBindInfo info;
    info.mr = m.mr.get();
    info.addr = reinterpret_cast<uint64_t>(m.data() + off);
    info.length = len;
    ParseAccess(KeyValue(c, "access"), &info.mw_access_flags);
    const uint32_t flags = HasFlag(c, "unsignaled") ? 0 : kSendSignaled;
    PostedWr pw;
    pw.post_ns = std::max<int64_t>(Now(), 0);
    pw.trace_index = trace_seen_;
    pw.node = e.node;
    pw.qpn = e.ep->qp()->qp_num();
    pw.wr_id = wr_id;
    pw.what = "BIND_MW";
    absl::Status s;
    uint32_t new_rkey = 0;
    if (w.type == 1) {
      MwBind bind;
      bind.wr_id = wr_id;
      bind.send_flags = flags;
      bind.bind_info = info;
      s = e.ep->qp()->BindMw(w.mw.get(), bind);
      new_rkey = w.mw->rkey();
    } else {
      SendWr wr;
      wr.wr_id = wr_id;
      wr.opcode = WrOpcode::kBindMw;
      wr.send_flags = flags;
      wr.bind_mw.mw = w.mw.get();
      wr.bind_mw.rkey = new_rkey = IncRkey(w.mw->rkey());
      wr.bind_mw.bind_info = info;
      s = e.ep->Post(wr);
    }
    std::string text = absl::StrFormat(
        "post BIND_MW wr %u (%s): %s = %s[%u, %u) %s, rkey 0x%x", wr_id,
        w.type == 1 ? "ibv_bind_mw, type 1" : "work request, type 2",
        c.words[1].text, KeyValue(c, "mr"), off, off + len,
        AccessFlagsName(info.mw_access_flags), new_rkey);
    if (!(flags & kSendSignaled)) absl::StrAppend(&text, ", unsignaled");
    if (!s.ok()) {
      EpRow(e, absl::StrCat(text, ": failed, ", ErrnoName(ErrnoOf(s))));
      pending_error_ = s;
      pending_line_ = c.line;
      return absl::OkStatus();
    }
    EpRow(e, text);
    result_.wrs.push_back(pw);
    return absl::OkStatus();
  }

  // Gives each posted WR the time its completion was generated: the first
  // completion record of its QP and wr_id after it was posted. A WR without
  // one (unsignaled) ends with the next completion of its queue, or the run.
  void MatchCompletions() {
    std::vector<bool> used(result_.trace.size(), false);
    for (PostedWr& w : result_.wrs) {
      for (size_t i = 0; i < result_.trace.size(); ++i) {
        const sim::TraceRecord& r = result_.trace[i];
        if (used[i] || r.kind != sim::TraceKind::kComplete ||
            r.node != w.node || r.qpn != w.qpn || r.wr_id != w.wr_id ||
            r.time_ns < w.post_ns) {
          continue;
        }
        used[i] = true;
        w.done_ns = r.time_ns;
        w.status = std::string(WcStatusName(static_cast<WcStatus>(r.opcode)));
        break;
      }
    }
  }

  const Scenario& sc_;
  const RunOptions& opt_;
  std::unique_ptr<Provider> provider_;
  sim::SimProvider* sim_ = nullptr;
  std::vector<std::string> devices_;
  std::map<std::string, EpState> eps_;
  std::map<std::string, MrState> mrs_;
  std::map<std::string, std::unique_ptr<Ah>> ahs_;
  std::map<std::string, MwState> mws_;
  std::optional<WorkCompletion> last_wc_;
  std::optional<absl::Status> pending_error_;
  int pending_line_ = 0;
  size_t trace_seen_ = 0;
  RunResult result_;
};

}  // namespace

std::string AethText(uint8_t syndrome) { return AethTextOf(syndrome); }

absl::StatusOr<RunResult> RunScenario(const Scenario& scenario,
                                      const RunOptions& options) {
  Runner runner(scenario, options);
  return runner.Run();
}

}  // namespace verbsim::cli
