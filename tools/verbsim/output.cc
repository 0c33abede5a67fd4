#include "tools/verbsim/output.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sim/packet.h"

namespace verbsim::cli {
namespace {

// "    12.345  sim0  17  " : 24 columns before the event.
constexpr int kEventColumn = 24;

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += c;
        }
    }
  }
  out += "\"";
  return out;
}

std::string Us(int64_t ns) {
  return absl::StrFormat("%.3f", static_cast<double>(ns) / 1000.0);
}

}  // namespace

std::string Wrap(const std::string& text, int width, const std::string& indent,
                 const std::string& first_indent) {
  std::string out;
  std::string line = first_indent;
  bool empty = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!empty && static_cast<int>(line.size() + 1 + word.size()) > width) {
      absl::StrAppend(&out, line, "\n");
      line = indent;
      empty = true;
    }
    if (!empty) line += ' ';
    absl::StrAppend(&line, word);
    empty = false;
  }
  if (!empty) absl::StrAppend(&out, line, "\n");
  return out;
}

std::string FormatHeader(int step, const Scenario& scenario) {
  std::string title = step > 0 ? absl::StrCat(step, ". ", scenario.title)
                               : scenario.title;
  if (title.empty()) title = scenario.file;
  std::string out = absl::StrCat("== ", title, " ");
  if (static_cast<int>(out.size()) < kWidth) out.append(kWidth - out.size(), '=');
  out += "\n";
  if (!scenario.spec.empty()) {
    out += "What the spec guarantees:\n";
    for (const std::string& s : scenario.spec) {
      out += Wrap(s, kWidth, "    ", "  * ");
    }
  }
  out += "\n";
  return out;
}

std::string FormatTimeline(const RunResult& result) {
  std::string out = absl::StrFormat("%10s  %-5s %-4s  %s\n", "time (us)",
                                    "node", "qp", "event");
  const std::string pad(kEventColumn, ' ');
  for (const TimelineRow& r : result.rows) {
    if (r.kind == TimelineRow::kNarration) {
      out += Wrap(r.text, kWidth, "  | ", "  | ");
      continue;
    }
    std::string when = r.time_ns >= 0 ? Us(r.time_ns) : "";
    std::string node = r.node >= 0 ? absl::StrCat("sim", r.node) : "";
    std::string qp = r.node >= 0 && r.qpn != 0 ? absl::StrCat(r.qpn) : "";
    std::string text = r.text;
    if (r.kind == TimelineRow::kCheck) text = absl::StrCat("  ", text);
    std::string first = absl::StrFormat("%10s  %-5s %-4s  ", when, node, qp);
    out += Wrap(text, kWidth, pad + "  ", first);
  }
  return out;
}

std::string TraceJson(const std::vector<JsonStep>& steps) {
  std::vector<std::string> ev;
  int id = 1;
  for (size_t s = 0; s < steps.size(); ++s) {
    const RunResult& r = *steps[s].result;
    const int64_t off = steps[s].offset_ns;
    // pid: step * 100 + node; tid: the QP number.
    auto pid = [&](int node) { return static_cast<int>(s) * 100 + node + 1; };
    std::set<std::pair<int, uint32_t>> tracks;
    std::set<int> procs;
    for (const PostedWr& w : r.wrs) tracks.insert({w.node, w.qpn});
    for (const sim::TraceRecord& t : r.trace) {
      if (t.qpn != 0) tracks.insert({t.node, t.qpn});
    }
    for (const auto& [node, qpn] : tracks) {
      if (procs.insert(node).second) {
        std::string name = steps.size() > 1
                               ? absl::StrCat(steps[s].title, ": sim", node)
                               : absl::StrCat("sim", node);
        ev.push_back(absl::StrFormat(
            R"({"ph":"M","name":"process_name","pid":%d,"args":{"name":%s}})",
            pid(node), JsonString(name)));
        ev.push_back(absl::StrFormat(
            R"({"ph":"M","name":"process_sort_index","pid":%d,"args":{"sort_index":%d}})",
            pid(node), pid(node)));
      }
      ev.push_back(absl::StrFormat(
          R"({"ph":"M","name":"thread_name","pid":%d,"tid":%u,"args":{"name":"qp%u"}})",
          pid(node), qpn, qpn));
    }
    for (const PostedWr& w : r.wrs) {
      const int64_t end = w.done_ns >= 0 ? w.done_ns : r.end_ns;
      const std::string name = absl::StrFormat("%s wr %u", w.what, w.wr_id);
      const std::string args = absl::StrFormat(
          R"({"wr_id":%u,"queue":"%s","status":%s})", w.wr_id,
          w.recv ? "recv" : "send",
          JsonString(w.status.empty() ? "no completion (unsignaled or pending)"
                                      : w.status));
      // An async slice: WRs of one QP may overlap without nesting.
      ev.push_back(absl::StrFormat(
          R"({"ph":"b","cat":"wr","name":%s,"id":%d,"pid":%d,"tid":%u,"ts":%s,"args":%s})",
          JsonString(name), id, pid(w.node), w.qpn, Us(w.post_ns + off), args));
      ev.push_back(absl::StrFormat(
          R"({"ph":"e","cat":"wr","name":%s,"id":%d,"pid":%d,"tid":%u,"ts":%s})",
          JsonString(name), id, pid(w.node), w.qpn, Us(end + off)));
      ++id;
    }
    for (const sim::TraceRecord& t : r.trace) {
      if (t.kind == sim::TraceKind::kComplete) continue;
      std::string name;
      std::string cat = "packet";
      const std::string op(sim::RcOpName(static_cast<sim::RcOp>(t.opcode)));
      switch (t.kind) {
        case sim::TraceKind::kTransmit:
          name = absl::StrFormat("-> %s psn %u", op, t.psn);
          break;
        case sim::TraceKind::kDeliver:
          name = absl::StrFormat("<- %s psn %u", op, t.psn);
          break;
        case sim::TraceKind::kDrop:
          name = absl::StrFormat("lost %s psn %u", op, t.psn);
          break;
        case sim::TraceKind::kTimeout:
          name = absl::StrFormat("ACK timeout psn %u", t.psn);
          cat = "retry";
          break;
        case sim::TraceKind::kRnrWait:
          name = absl::StrFormat("RNR wait psn %u", t.psn);
          cat = "retry";
          break;
        default:
          break;
      }
      if (!t.note.empty()) {
        if (absl::StartsWith(t.note, "fault")) cat = "fault";
        absl::StrAppend(&name, " (", t.note, ")");
      }
      ev.push_back(absl::StrFormat(
          R"({"ph":"i","s":"t","cat":"%s","name":%s,"pid":%d,"tid":%u,"ts":%s,"args":{"peer":"sim%d qp%u","len":%u}})",
          cat, JsonString(name), pid(t.node), t.qpn, Us(t.time_ns + off),
          t.peer_node, t.peer_qpn, t.length));
    }
  }
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  for (size_t i = 0; i < ev.size(); ++i) {
    absl::StrAppend(&out, ev[i], i + 1 < ev.size() ? ",\n" : "\n");
  }
  out += "]}\n";
  return out;
}

}  // namespace verbsim::cli
