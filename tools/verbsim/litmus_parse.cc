// Reading a litmus file (the format is in docs/cli.md): its header lines,
// the outcomes, and every step of the program checked before it runs.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/names.h"
#include "tools/verbsim/litmus.h"
#include "tools/verbsim/litmus_internal.h"

namespace verbsim::cli {
namespace litmus_internal {

int NodeIndex(absl::string_view name) {
  if (name.size() != 1 || name[0] < 'A' || name[0] > 'C') return -1;
  return name[0] - 'A';
}

std::optional<Mtu> MtuFromBytes(uint64_t bytes) {
  for (Mtu m : {Mtu::k256, Mtu::k512, Mtu::k1024, Mtu::k2048, Mtu::k4096}) {
    if (static_cast<uint64_t>(MtuBytes(m)) == bytes) return m;
  }
  return std::nullopt;
}

absl::StatusOr<bool> RuleIsWeak(const sim::SimProfile &p,
                                const std::string &rule) {
  if (rule == "B1") return !p.memory.gathers_at_post;
  if (rule == "W2") return !p.memory.places_messages_in_order;
  if (rule == "R3") return !p.memory.fetches_reads_in_order;
  return absl::InvalidArgumentError(
      absl::StrCat("no weak behaviour is governed by rule '", rule,
                   "' (weak outcomes name B1, W2 or R3 of docs/ordering.md)"));
}

}  // namespace litmus_internal

namespace {

using litmus_internal::MtuFromBytes;
using litmus_internal::NodeIndex;
using litmus_internal::RuleIsWeak;

// Splits a line into words: '#' starts a comment, "..." is one word.
absl::StatusOr<std::vector<std::string>> Words(absl::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#') {
      break;
    } else if (c == '"') {
      const size_t end = line.find('"', i + 1);
      if (end == absl::string_view::npos) {
        return absl::InvalidArgumentError("a quote is not closed");
      }
      words.emplace_back(line.substr(i + 1, end - i - 1));
      i = end + 1;
    } else {
      size_t end = i;
      while (end < line.size() && line[end] != ' ' && line[end] != '\t' &&
             line[end] != '\r') {
        ++end;
      }
      words.emplace_back(line.substr(i, end - i));
      i = end;
    }
  }
  return words;
}

// What the parser knows while it checks a file.
struct Checker {
  const LitmusTest &test;
  std::map<std::string, int> bufs;  // "B.data" -> node
  std::map<std::string, uint64_t> buf_sizes;
  std::map<std::string, std::pair<int, int>> qps;  // name -> (from, to)
  std::vector<std::string> observed;               // names, in order

  absl::Status Error(int line, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(test.file, ":", line, ": ", what));
  }
  absl::Status Buf(int line, const std::string &name, int node) const {
    auto it = bufs.find(name);
    if (it == bufs.end()) {
      return Error(line, absl::StrCat("no buffer '", name,
                                      "' (declare it with buf first)"));
    }
    if (node >= 0 && it->second != node) {
      return Error(line, absl::StrCat("buffer '", name, "' is on node ",
                                      std::string(1, 'A' + it->second),
                                      ", not ", std::string(1, 'A' + node)));
    }
    return absl::OkStatus();
  }
};

bool ParseU64(absl::string_view s, uint64_t *v) {
  return absl::SimpleAtoi(s, v);
}

absl::Status CheckStep(Checker &c, const LitmusStep &s) {
  const auto &w = s.words;
  const std::string &verb = w[0];
  auto need = [&](size_t n, absl::string_view form) -> absl::Status {
    if (w.size() < n) {
      return c.Error(s.line, absl::StrCat("expected: ", form));
    }
    return absl::OkStatus();
  };
  if (verb == "qp") {
    if (auto st = need(4, "qp NAME FROM TO [mtu=N]"); !st.ok()) return st;
    const int from = NodeIndex(w[2]), to = NodeIndex(w[3]);
    if (from < 0 || to < 0 || from >= c.test.nodes || to >= c.test.nodes ||
        from == to) {
      return c.Error(
          s.line,
          absl::StrCat("qp '", w[1], "': nodes '", w[2], "' and '", w[3],
                       "' must be two different nodes of "
                       "A..",
                       std::string(1, 'A' + c.test.nodes - 1)));
    }
    if (!c.qps.emplace(w[1], std::make_pair(from, to)).second) {
      return c.Error(s.line, absl::StrCat("qp '", w[1], "' declared twice"));
    }
    for (size_t i = 4; i < w.size(); ++i) {
      uint64_t mtu = 0;
      if (!absl::StartsWith(w[i], "mtu=") || !ParseU64(w[i].substr(4), &mtu) ||
          !MtuFromBytes(mtu).has_value()) {
        return c.Error(s.line, absl::StrCat("unexpected '", w[i],
                                            "' (mtu=256|512|1024|2048|4096)"));
      }
    }
    return absl::OkStatus();
  }
  if (verb == "buf") {
    uint64_t size = 0, value = 0;
    if (w.size() != 5 || w[3] != "=" || !ParseU64(w[2], &size) || size == 0 ||
        size > (1u << 24) || !ParseU64(w[4], &value) || value > 255) {
      return c.Error(s.line,
                     "expected: buf NODE.NAME SIZE = BYTE (SIZE 1..16M, BYTE "
                     "0..255)");
    }
    std::vector<std::string> parts = absl::StrSplit(w[1], '.');
    const int node = parts.size() == 2 ? NodeIndex(parts[0]) : -1;
    if (node < 0 || node >= c.test.nodes || parts[1].empty()) {
      return c.Error(s.line, absl::StrCat("buffer '", w[1],
                                          "' must be NODE.NAME, e.g. B.data"));
    }
    if (!c.bufs.emplace(w[1], node).second) {
      return c.Error(s.line,
                     absl::StrCat("buffer '", w[1], "' declared twice"));
    }
    c.buf_sizes[w[1]] = size;
    return absl::OkStatus();
  }
  if (verb == "post") {
    if (auto st = need(4, "post QP OP ..."); !st.ok()) return st;
    auto q = c.qps.find(w[1]);
    if (q == c.qps.end()) {
      return c.Error(s.line, absl::StrCat("no qp '", w[1], "'"));
    }
    const int from = q->second.first, to = q->second.second;
    const std::string &op = w[2];
    size_t flags_at = 0;
    if (op == "write" || op == "send") {
      if (auto st = need(6, absl::StrCat("post QP ", op, " SRC -> DST"));
          !st.ok() || w[4] != "->") {
        return c.Error(s.line, absl::StrCat("expected: post QP ", op,
                                            " SRC -> DST [flags]"));
      }
      if (auto st = c.Buf(s.line, w[3], from); !st.ok()) return st;
      if (auto st = c.Buf(s.line, w[5], to); !st.ok()) return st;
      if (c.buf_sizes[w[5]] < c.buf_sizes[w[3]]) {
        return c.Error(
            s.line, absl::StrCat("'", w[5], "' is smaller than '", w[3], "'"));
      }
      flags_at = 6;
    } else if (op == "read" || op == "fadd") {
      if (w.size() < 6 || w[4] != "<-") {
        return c.Error(s.line,
                       absl::StrCat("expected: post QP ", op, " DST <- SRC",
                                    op == "fadd" ? " ADD" : "", " [flags]"));
      }
      if (auto st = c.Buf(s.line, w[3], from); !st.ok()) return st;
      if (auto st = c.Buf(s.line, w[5], to); !st.ok()) return st;
      if (c.buf_sizes[w[3]] < c.buf_sizes[w[5]] && op == "read") {
        return c.Error(
            s.line, absl::StrCat("'", w[3], "' is smaller than '", w[5], "'"));
      }
      flags_at = 6;
      if (op == "fadd") {
        uint64_t add = 0;
        if (w.size() < 7 || !ParseU64(w[6], &add)) {
          return c.Error(s.line, "expected: post QP fadd DST <- SRC ADD");
        }
        if (c.buf_sizes[w[3]] < 8 || c.buf_sizes[w[5]] < 8) {
          return c.Error(s.line, "fadd needs 8-byte buffers");
        }
        flags_at = 7;
      }
    } else {
      return c.Error(s.line, absl::StrCat("unknown operation '", op,
                                          "' (write, send, read, fadd)"));
    }
    for (size_t i = flags_at; i < w.size(); ++i) {
      uint64_t imm = 0;
      if (w[i] == "fence" || w[i] == "inline" ||
          (absl::StartsWith(w[i], "imm=") && op == "write" &&
           ParseU64(w[i].substr(4), &imm))) {
        continue;
      }
      return c.Error(s.line, absl::StrCat("unexpected '", w[i],
                                          "' (flags: fence, inline, imm=N)"));
    }
    return absl::OkStatus();
  }
  if (verb == "store") {
    uint64_t v = 0;
    if (w.size() != 4 || w[2] != "=" || !ParseU64(w[3], &v) || v > 255) {
      return c.Error(s.line, "expected: store BUF = BYTE");
    }
    return c.Buf(s.line, w[1], -1);
  }
  if (verb == "await") {
    uint64_t v = 0;
    const bool u64 = w.size() == 5 && w[2] == "u64";
    if (!(w.size() == 4 || u64) || w[w.size() - 2] != "==" ||
        !ParseU64(w.back(), &v) || (!u64 && v > 255)) {
      return c.Error(s.line,
                     "expected: await BUF == BYTE or await BUF u64 == N");
    }
    return c.Buf(s.line, w[1], -1);
  }
  if (verb == "wait" || verb == "awaitrecv") {
    if (w.size() != 2 || c.qps.count(w[1]) == 0) {
      return c.Error(s.line, absl::StrCat("expected: ", verb, " QP"));
    }
    return absl::OkStatus();
  }
  if (verb == "run") {
    if (w.size() != 1) return c.Error(s.line, "expected: run");
    return absl::OkStatus();
  }
  if (verb == "observe") {
    if (w.size() < 4 || w[2] != "=") {
      return c.Error(s.line,
                     "expected: observe NAME = BUF [u64] or observe NAME = "
                     "order QP");
    }
    for (const std::string &o : c.observed) {
      if (o == w[1]) {
        return c.Error(s.line, absl::StrCat("'", w[1], "' observed twice"));
      }
    }
    c.observed.push_back(w[1]);
    if (w[3] == "order") {
      if (w.size() != 5 || c.qps.count(w[4]) == 0) {
        return c.Error(s.line, "expected: observe NAME = order QP");
      }
      return absl::OkStatus();
    }
    if (w.size() == 5 && w[4] != "u64") {
      return c.Error(s.line, absl::StrCat("unexpected '", w[4], "'"));
    }
    if (w.size() > 5) return c.Error(s.line, "too many words");
    return c.Buf(s.line, w[3], -1);
  }
  return c.Error(s.line, absl::StrCat("unknown command '", verb, "'"));
}

}  // namespace

absl::StatusOr<LitmusTest> ParseLitmus(absl::string_view file,
                                       absl::string_view text) {
  LitmusTest t;
  t.file = std::string(file);
  Checker c{t, {}, {}, {}, {}};
  int line_no = 0;
  std::vector<LitmusStep> program;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::StatusOr<std::vector<std::string>> words = Words(line);
    if (!words.ok()) return c.Error(line_no, words.status().message());
    if (words->empty()) continue;
    const std::vector<std::string> &w = *words;
    if (w[0] == "litmus") {
      if (w.size() != 2) return c.Error(line_no, "expected: litmus NAME");
      t.name = w[1];
    } else if (w[0] == "about") {
      t.about = absl::StrJoin(w.begin() + 1, w.end(), " ");
    } else if (w[0] == "nodes") {
      if (w.size() != 2 || (w[1] != "2" && w[1] != "3") || !program.empty()) {
        return c.Error(line_no, "expected: nodes 2|3, before the program");
      }
      t.nodes = std::stoi(w[1]);
    } else if (w[0] == "outcome") {
      LitmusOutcome o;
      o.line = line_no;
      size_t i = 1;
      std::vector<std::string> obs;
      while (i < w.size() && absl::StrContains(w[i], '='))
        obs.push_back(w[i++]);
      if (obs.empty() || i >= w.size() ||
          (w[i] != "strong" && w[i] != "weak")) {
        return c.Error(line_no,
                       "expected: outcome NAME=VALUE... strong|weak [RULE] "
                       "\"what it means\"");
      }
      o.observed = absl::StrJoin(obs, " ");
      o.weak = w[i++] == "weak";
      if (o.weak) {
        if (i >= w.size())
          return c.Error(line_no, "a weak outcome names its rule");
        o.rule = w[i++];
      }
      if (i < w.size()) o.about = w[i++];
      if (i < w.size()) {
        return c.Error(line_no, absl::StrCat("unexpected '", w[i], "'"));
      }
      t.outcomes.push_back(std::move(o));
    } else {
      LitmusStep s;
      s.line = line_no;
      s.words = w;
      program.push_back(std::move(s));
    }
  }
  if (t.name.empty()) return c.Error(1, "the file starts with: litmus NAME");
  for (const LitmusStep &s : program) {
    if (absl::Status st = CheckStep(c, s); !st.ok()) return st;
  }
  if (c.observed.empty()) return c.Error(line_no, "nothing is observed");
  if (t.outcomes.empty()) return c.Error(line_no, "no outcome is listed");
  std::set<std::string> listed;
  for (const LitmusOutcome &o : t.outcomes) {
    std::vector<std::string> names;
    for (absl::string_view kv : absl::StrSplit(o.observed, ' ')) {
      names.emplace_back(kv.substr(0, kv.find('=')));
    }
    if (names != c.observed) {
      return c.Error(o.line, absl::StrCat("an outcome names every observation "
                                          "in program order: ",
                                          absl::StrJoin(c.observed, " ")));
    }
    if (!listed.insert(o.observed).second) {
      return c.Error(o.line,
                     absl::StrCat("outcome '", o.observed, "' listed twice"));
    }
    if (o.weak) {
      sim::SimProfile p;
      if (absl::StatusOr<bool> r = RuleIsWeak(p, o.rule); !r.ok()) {
        return c.Error(o.line, r.status().message());
      }
    }
  }
  t.steps = std::move(program);
  return t;
}

}  // namespace verbsim::cli
