#include "tools/verbsim/scenario_values.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/names.h"

namespace verbsim::cli::scenario_internal {
namespace {

const WcOpcode kWcOpcodes[] = {
    WcOpcode::kSend,     WcOpcode::kRdmaWrite, WcOpcode::kRdmaRead,
    WcOpcode::kCompSwap, WcOpcode::kFetchAdd,  WcOpcode::kBindMw,
    WcOpcode::kLocalInv, WcOpcode::kRecv,      WcOpcode::kRecvRdmaWithImm};

// The words of a set of flags, in the order they are printed.
struct FlagWord {
  const char* name;
  uint32_t bit;
};
const FlagWord kAccessFlags[] = {{"LOCAL_WRITE", kAccessLocalWrite},
                                 {"REMOTE_WRITE", kAccessRemoteWrite},
                                 {"REMOTE_READ", kAccessRemoteRead},
                                 {"REMOTE_ATOMIC", kAccessRemoteAtomic},
                                 {"MW_BIND", kAccessMwBind}};
const FlagWord kWcFlags[] = {{"GRH", kWcGrh},
                             {"WITH_IMM", kWcWithImm},
                             {"WITH_INV", kWcWithInv}};

// Flags joined by '|' or ',', or "none" or "0" for no flag.
template <size_t N>
bool ParseFlagWords(absl::string_view s, const FlagWord (&words)[N],
                    uint32_t* out) {
  if (s == "0" || s == "none") {
    *out = 0;
    return true;
  }
  uint32_t v = 0;
  for (absl::string_view part : absl::StrSplit(s, absl::ByAnyChar("|,"))) {
    const FlagWord* w = std::find_if(
        words, words + N, [&](const FlagWord& f) { return part == f.name; });
    if (w == words + N) return false;
    v |= w->bit;
  }
  *out = v;
  return true;
}

}  // namespace

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
  return ParseFlagWords(s, kAccessFlags, out);
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

bool ParseWcFlags(absl::string_view s, uint32_t* out) {
  return ParseFlagWords(s, kWcFlags, out);
}

std::string WcFlagsText(uint32_t f) {
  std::vector<std::string> v;
  for (const FlagWord& w : kWcFlags) {
    if (f & w.bit) v.push_back(w.name);
  }
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

bool ParseDevice(absl::string_view s, int* node) {
  absl::ConsumePrefix(&s, "sim");
  uint64_t v;
  if (!ParseU64(s, &v) || v >= kMaxNodes) return false;
  *node = static_cast<int>(v);
  return true;
}

std::string KeyValue(const Command& c, absl::string_view key) {
  for (size_t i = 1; i < c.words.size(); ++i) {
    absl::string_view w = c.words[i].text;
    if (absl::ConsumePrefix(&w, key) && absl::ConsumePrefix(&w, "=")) {
      return std::string(w);
    }
  }
  return "";
}

uint64_t KeyU64(const Command& c, absl::string_view key, uint64_t def) {
  std::string v = KeyValue(c, key);
  uint64_t r;
  if (v.empty() || !ParseU64(v, &r)) return def;
  return r;
}

bool HasFlag(const Command& c, absl::string_view flag) {
  for (size_t i = 1; i < c.words.size(); ++i) {
    if (c.words[i].text == flag) return true;
  }
  return false;
}

}  // namespace verbsim::cli::scenario_internal
