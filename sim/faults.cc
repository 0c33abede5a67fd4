#include "sim/faults.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "sim/packet.h"

namespace verbsim::sim {
namespace {

// A word of the text with the column (1-based) where it starts.
struct Token {
  std::string text;
  size_t column = 0;
};

std::vector<Token> Words(absl::string_view rule, size_t offset) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < rule.size()) {
    while (i < rule.size() && absl::ascii_isspace(rule[i])) ++i;
    size_t start = i;
    while (i < rule.size() && !absl::ascii_isspace(rule[i])) ++i;
    if (i > start) {
      out.push_back({std::string(rule.substr(start, i - start)),
                     offset + start + 1});
    }
  }
  return out;
}

absl::Status At(size_t column, absl::string_view what) {
  return Errno(EINVAL, "fault text, column %zu: %s", column, what);
}

bool ParseOpcode(absl::string_view name, int* out) {
  for (int op = 0; op < 0x20; ++op) {
    absl::string_view known = RcOpName(static_cast<RcOp>(op));
    if (known != "UNKNOWN_OPCODE" && absl::EqualsIgnoreCase(known, name)) {
      *out = op;
      return true;
    }
  }
  if (absl::EqualsIgnoreCase(name, "ACK")) {
    *out = static_cast<int>(RcOp::kAcknowledge);
    return true;
  }
  return false;
}

// "3" or "sim3".
bool ParseNode(absl::string_view v, int* out) {
  if (absl::StartsWith(v, "sim")) v.remove_prefix(3);
  return absl::SimpleAtoi(v, out) && *out >= 0;
}

// Microseconds, 0 to 10^15 (31 years of virtual time): a larger one, NaN or
// infinity has no nanosecond count in an int64.
bool ParseMicros(absl::string_view v, int64_t* ns) {
  double us = 0;
  if (!absl::SimpleAtod(v, &us) || !(us >= 0 && us <= 1e15)) return false;
  *ns = static_cast<int64_t>(us * 1000.0);
  return true;
}

}  // namespace

absl::string_view FaultActionName(FaultAction action) {
  switch (action) {
    case FaultAction::kDrop: return "drop";
    case FaultAction::kDuplicate: return "dup";
    case FaultAction::kDelay: return "delay";
    case FaultAction::kReorder: return "reorder";
    case FaultAction::kCorrupt: return "corrupt";
  }
  return "?";
}

absl::StatusOr<FaultPlan> ParseFaults(absl::string_view text) {
  FaultPlan plan;
  size_t offset = 0;
  while (offset <= text.size()) {
    size_t end = text.find(';', offset);
    if (end == absl::string_view::npos) end = text.size();
    std::vector<Token> words = Words(text.substr(offset, end - offset), offset);
    offset = end + 1;
    if (words.empty()) continue;
    const Token& verb = words[0];
    // Values by key, checked against what the verb accepts.
    PacketRule rule;
    LinkDown link;
    NodeCrash crash;
    QpError qp_error;
    uint64_t nth = 0;
    bool is_packet = true;
    std::vector<std::string> allowed;
    if (verb.text == "drop") {
      rule.action = FaultAction::kDrop;
    } else if (verb.text == "dup") {
      rule.action = FaultAction::kDuplicate;
    } else if (verb.text == "delay") {
      rule.action = FaultAction::kDelay;
    } else if (verb.text == "reorder") {
      rule.action = FaultAction::kReorder;
    } else if (verb.text == "corrupt") {
      rule.action = FaultAction::kCorrupt;
    } else if (verb.text == "linkdown" || verb.text == "crash" ||
               verb.text == "qperr" || verb.text == "cqoverflow" ||
               verb.text == "regfail" || verb.text == "postfail") {
      is_packet = false;
    } else {
      return At(verb.column,
                absl::StrCat("unknown action '", verb.text,
                             "' (want drop, dup, delay, reorder, corrupt, "
                             "linkdown, crash, qperr, cqoverflow, regfail, "
                             "postfail)"));
    }
    if (is_packet) {
      allowed = {"src", "dst", "qp", "op", "psn", "nth", "prob"};
      if (rule.action == FaultAction::kDelay ||
          rule.action == FaultAction::kReorder) {
        allowed.push_back("us");
      }
    } else if (verb.text == "linkdown") {
      allowed = {"a", "b", "from_us", "until_us"};
    } else if (verb.text == "crash") {
      allowed = {"node", "at_us"};
    } else if (verb.text == "qperr") {
      allowed = {"node", "qp", "at_us"};
    } else if (verb.text == "cqoverflow") {
      allowed = {"node", "qp", "cq", "at_us"};
    } else {
      allowed = {"nth"};
    }
    bool have_until = false, have_node = false, have_qp = false,
         have_a = false, have_b = false;
    CqOverflow overflow;
    for (size_t i = 1; i < words.size(); ++i) {
      const Token& w = words[i];
      size_t eq = w.text.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == w.text.size()) {
        return At(w.column, absl::StrCat("expected key=value, got '", w.text,
                                         "'"));
      }
      const std::string key = w.text.substr(0, eq);
      const std::string value = w.text.substr(eq + 1);
      const size_t vcol = w.column + eq + 1;
      bool known = false;
      for (const std::string& a : allowed) known = known || a == key;
      if (!known) {
        std::string list;
        for (const std::string& a : allowed) absl::StrAppend(&list, " ", a);
        return At(w.column, absl::StrCat("'", verb.text, "' takes no key '",
                                         key, "' (keys:", list, ")"));
      }
      bool ok = true;
      int64_t n64 = 0;
      if (key == "src") {
        ok = ParseNode(value, &rule.src_node);
      } else if (key == "dst") {
        ok = ParseNode(value, &rule.dst_node);
      } else if (key == "qp") {
        ok = absl::SimpleAtoi(value, &n64) && n64 >= 0;
        rule.qpn = n64;
        qp_error.qpn = static_cast<uint32_t>(n64);
        have_qp = true;
      } else if (key == "op") {
        ok = ParseOpcode(value, &rule.opcode);
        if (!ok) {
          return At(vcol, absl::StrCat("unknown opcode '", value,
                                       "' (e.g. SEND_ONLY, RDMA_WRITE_MIDDLE, "
                                       "RDMA_READ_RESPONSE_LAST, ACK)"));
        }
      } else if (key == "psn") {
        ok = absl::SimpleAtoi(value, &rule.psn) && rule.psn >= 0 &&
             rule.psn <= kPsnMask;
      } else if (key == "nth") {
        ok = absl::SimpleAtoi(value, &nth) && nth >= 1;
      } else if (key == "prob") {
        ok = absl::SimpleAtod(value, &rule.probability) &&
             rule.probability >= 0 && rule.probability <= 1;
      } else if (key == "us") {
        ok = ParseMicros(value, &rule.delay_ns);
      } else if (key == "a") {
        ok = ParseNode(value, &link.a);
        have_a = true;
      } else if (key == "b") {
        ok = ParseNode(value, &link.b);
        have_b = true;
      } else if (key == "from_us") {
        ok = ParseMicros(value, &link.from_ns);
      } else if (key == "until_us") {
        ok = ParseMicros(value, &link.until_ns);
        have_until = true;
      } else if (key == "node") {
        ok = ParseNode(value, &crash.node);
        qp_error.node = crash.node;
        have_node = true;
      } else if (key == "at_us") {
        ok = ParseMicros(value, &crash.at_ns);
        qp_error.at_ns = crash.at_ns;
      } else if (key == "cq") {
        ok = value == "send" || value == "recv";
        overflow.recv_cq = value == "recv";
      }
      if (!ok) {
        return At(vcol, absl::StrCat("bad value '", value, "' for ", key));
      }
    }
    if (is_packet) {
      rule.nth = nth;
      if (rule.action == FaultAction::kDelay && rule.delay_ns == 0) {
        return At(verb.column, "delay needs us=<microseconds>");
      }
      plan.packets.push_back(rule);
    } else if (verb.text == "linkdown") {
      if (!have_a || !have_b || !have_until) {
        return At(verb.column, "linkdown needs a=, b= and until_us=");
      }
      if (link.until_ns <= link.from_ns) {
        return At(verb.column, "linkdown needs from_us < until_us");
      }
      plan.links.push_back(link);
    } else if (verb.text == "crash") {
      if (!have_node) return At(verb.column, "crash needs node=");
      plan.crashes.push_back(crash);
    } else if (verb.text == "qperr") {
      if (!have_node || !have_qp) return At(verb.column, "qperr needs node= and qp=");
      plan.qp_errors.push_back(qp_error);
    } else if (verb.text == "cqoverflow") {
      if (!have_node || !have_qp) {
        return At(verb.column, "cqoverflow needs node= and qp=");
      }
      overflow.node = qp_error.node;
      overflow.qpn = qp_error.qpn;
      overflow.at_ns = qp_error.at_ns;
      plan.cq_overflows.push_back(overflow);
    } else if (nth == 0) {
      return At(verb.column, absl::StrCat(verb.text, " needs nth="));
    } else if (verb.text == "regfail") {
      plan.regfail_nth = nth;
    } else {
      plan.postfail_nth = nth;
    }
  }
  return plan;
}

void MergeFaults(FaultPlan& plan, FaultPlan more) {
  for (auto& r : more.packets) plan.packets.push_back(std::move(r));
  for (auto& l : more.links) plan.links.push_back(l);
  for (auto& c : more.crashes) plan.crashes.push_back(c);
  for (auto& q : more.qp_errors) plan.qp_errors.push_back(q);
  for (auto& o : more.cq_overflows) plan.cq_overflows.push_back(o);
  if (more.regfail_nth != 0) plan.regfail_nth = more.regfail_nth;
  if (more.postfail_nth != 0) plan.postfail_nth = more.postfail_nth;
}

}  // namespace verbsim::sim
