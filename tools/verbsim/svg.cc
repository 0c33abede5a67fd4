#include "tools/verbsim/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/names.h"
#include "sim/packet.h"

namespace verbsim::cli {
namespace {

// Geometry, in SVG user units (pixels). Text is 12 px monospace; a glyph is
// about 0.6 em wide.
constexpr double kCharW = 7.3;
constexpr int kRowH = 18;
constexpr int kTimeColumn = 76;  // right edge of the time labels
constexpr int kMaxRows = 400;    // a diagram stays a picture, not a log

const char kRequestColor[] = "#1f4e9c";
const char kResponseColor[] = "#6a3d9a";
const char kLostColor[] = "#c62828";
const char kOkColor[] = "#2e7d32";
const char kRetryColor[] = "#e65100";
const char kGray[] = "#666666";

std::string Esc(absl::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // Control characters are not allowed in XML 1.0.
        out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  }
  return out;
}

// A coordinate: one decimal at most, the same bytes on every machine.
std::string N(double v) {
  std::string s = absl::StrFormat("%.1f", v);
  if (absl::EndsWith(s, ".0")) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

double TextW(absl::string_view s) { return kCharW * static_cast<double>(s.size()); }

// A label on a white box, so that lines under it do not hide it.
std::string Label(double x, double y, absl::string_view text,
                  absl::string_view anchor, absl::string_view color) {
  const double w = TextW(text) + 4;
  const double left = anchor == "end"      ? x - w + 2
                      : anchor == "middle" ? x - w / 2
                                           : x - 2;
  return absl::StrCat(
      "<rect x=\"", N(left), "\" y=\"", N(y - 10), "\" width=\"", N(w),
      "\" height=\"13\" fill=\"#ffffff\" fill-opacity=\"0.85\"/>\n",
      "<text x=\"", N(x), "\" y=\"", N(y), "\" text-anchor=\"", anchor,
      "\" fill=\"", color, "\">", Esc(text), "</text>\n");
}

// "fault: duplicate (rule 2)" -> "duplicate".
std::string ShortNote(absl::string_view note) {
  if (absl::StartsWith(note, "fault: ")) note.remove_prefix(7);
  if (size_t p = note.find(" (rule "); p != absl::string_view::npos) {
    note = note.substr(0, p);
  }
  return std::string(note);
}

struct Arrow {
  int from = 0, to = 0;  // lanes
  size_t send_event = 0;  // the event whose row the arrow starts on
  bool lost = false;
  bool response = false;
  int copy_of = -1;  // a duplicate's original arrow
  std::string label;
};

struct Event {
  size_t key = 0;  // trace index * 2, + 1 for trace records (posts first)
  enum Kind { kSend, kEnd, kMark } kind = kMark;
  int arrow = -1;
  bool copy_end = false;  // the end of a duplicate: keep with its arrow
  int lane = 0;
  std::string text;
  enum Style { kPost, kCqeOk, kCqeError, kRetry, kFault } style = kPost;
  int64_t time_ns = 0;
};

class StepDrawer {
 public:
  StepDrawer(const SvgStep& step, int max_packets)
      : step_(step), r_(*step.result), max_packets_(max_packets) {}

  // Draws the step with its top at `top`; returns its height and sets
  // `width` to the width it needs.
  int Draw(int top, std::string* out, double* width) {
    Collect();
    Cut();
    Layout();
    *width = width_;
    const int height = Emit(top, out);
    return height;
  }

 private:
  static bool SameFlow(const sim::TraceRecord& at_dst,
                       const sim::TraceRecord& sent) {
    return at_dst.node == sent.peer_node && at_dst.qpn == sent.peer_qpn &&
           at_dst.peer_node == sent.node && at_dst.peer_qpn == sent.qpn &&
           at_dst.opcode == sent.opcode && at_dst.psn == sent.psn;
  }

  std::string PacketLabel(const sim::TraceRecord& t, QpType transport) {
    std::string op(sim::RcOpName(static_cast<sim::RcOp>(t.opcode)));
    if (transport == QpType::kUc) op = absl::StrCat("UC ", op);
    if (transport == QpType::kUd) op = absl::StrCat("UD ", op);
    std::string s = absl::StrFormat("%s psn %u", op, t.psn);
    if (static_cast<sim::RcOp>(t.opcode) == sim::RcOp::kAcknowledge) {
      const std::string aeth = AethText(t.syndrome);
      if (aeth != "ACK") absl::StrAppend(&s, " ", aeth);
    }
    return s;
  }

  // The opcode of a completion: the polled work completion's when it was
  // polled successfully, else the opcode the work request was posted with.
  std::string CompletionOp(const sim::TraceRecord& t, size_t index) {
    const WcStatus status = static_cast<WcStatus>(t.opcode);
    for (size_t i = 0; i < r_.polled.size(); ++i) {
      const PolledWc& p = r_.polled[i];
      if (polled_used_.count(i) || p.node != t.node || p.qpn != t.qpn ||
          p.wr_id != t.wr_id || p.status != status) {
        continue;
      }
      polled_used_.insert(i);
      if (status == WcStatus::kSuccess) {
        return std::string(WcOpcodeName(p.opcode));
      }
      break;
    }
    std::string op;
    for (const PostedWr& w : r_.wrs) {
      if (w.node == t.node && w.qpn == t.qpn && w.wr_id == t.wr_id &&
          w.trace_index <= index) {
        op = std::vector<std::string>(absl::StrSplit(w.what, ' '))[0];
      }
    }
    return op;
  }

  // One end of arrow `arrow` (kSend or kEnd), at trace record `index`.
  void AddArrowEvent(Event::Kind kind, size_t index, int arrow, int lane,
                     int64_t time_ns, bool copy_end = false) {
    Event e;
    e.key = index * 2 + 1;
    e.kind = kind;
    e.arrow = arrow;
    e.copy_end = copy_end;
    e.lane = lane;
    e.time_ns = time_ns;
    events_.push_back(std::move(e));
  }

  void Collect() {
    const std::vector<sim::TraceRecord>& tr = r_.trace;
    // The lanes: every QP the scenario created, then any other QP a packet
    // names, in (node, QP number) order.
    std::set<std::pair<int, uint32_t>> qps;
    for (const auto& [k, v] : r_.transports) qps.insert(k);
    for (const sim::TraceRecord& t : tr) {
      if (t.qpn != 0) qps.insert({t.node, t.qpn});
      if (t.peer_node >= 0 && t.kind != sim::TraceKind::kComplete) {
        qps.insert({t.peer_node, t.peer_qpn});
      }
    }
    for (const auto& q : qps) {
      lane_index_[q] = static_cast<int>(lanes_.size());
      lanes_.push_back(q);
    }
    auto lane = [&](int node, uint32_t qpn) {
      return lane_index_.at({node, qpn});
    };
    for (const PostedWr& w : r_.wrs) {
      Event e;
      e.key = w.trace_index * 2;
      e.lane = lane(w.node, w.qpn);
      e.text = absl::StrFormat("post wr %u %s", w.wr_id, w.what);
      e.style = Event::kPost;
      e.time_ns = w.post_ns;
      events_.push_back(e);
    }
    // Packets: the k-th plain transmit record is the k-th captured packet.
    std::vector<bool> used(tr.size(), false);
    size_t captured = 0;
    for (size_t i = 0; i < tr.size(); ++i) {
      const sim::TraceRecord& t = tr[i];
      if (t.kind != sim::TraceKind::kTransmit || !t.note.empty()) continue;
      used[i] = true;
      const sim::Fabric::CapturedPacket* cp =
          captured < r_.packets.size() ? &r_.packets[captured] : nullptr;
      ++captured;
      QpType transport = QpType::kRc;
      if (cp != nullptr) {
        transport = cp->packet.transport;
      } else if (auto it = r_.transports.find({t.node, t.qpn});
                 it != r_.transports.end()) {
        transport = it->second;
      }
      Arrow a;
      a.from = lane(t.node, t.qpn);
      a.to = lane(t.peer_node, t.peer_qpn);
      a.lost = cp != nullptr && cp->lost;
      a.response = !sim::IsRequest(static_cast<sim::RcOp>(t.opcode));
      a.label = PacketLabel(t, transport);
      const int id = static_cast<int>(arrows_.size());
      a.send_event = events_.size();
      AddArrowEvent(Event::kSend, i, id, a.from, t.time_ns);
      // Its end: where it arrived or was lost; fault notes on the way.
      std::vector<std::string> notes;
      for (size_t j = i + 1; j < tr.size(); ++j) {
        const sim::TraceRecord& u = tr[j];
        if (used[j]) continue;
        if (u.kind == sim::TraceKind::kTransmit && !u.note.empty() &&
            u.node == t.node && u.qpn == t.qpn && u.peer_node == t.peer_node &&
            u.peer_qpn == t.peer_qpn && u.opcode == t.opcode &&
            u.psn == t.psn && u.time_ns == t.time_ns) {
          used[j] = true;
          notes.push_back(ShortNote(u.note));
          continue;
        }
        if ((u.kind != sim::TraceKind::kDeliver &&
             u.kind != sim::TraceKind::kDrop) ||
            !SameFlow(u, t)) {
          continue;
        }
        used[j] = true;
        if (u.kind == sim::TraceKind::kDrop) {
          a.lost = true;
          notes.push_back(absl::StrCat("lost: ", ShortNote(u.note)));
        } else {
          // Delivered, then perhaps discarded by the QP at once.
          for (size_t k = j + 1; k < tr.size() && tr[k].time_ns == u.time_ns;
               ++k) {
            if (!used[k] && tr[k].kind == sim::TraceKind::kDrop &&
                SameFlow(tr[k], t)) {
              used[k] = true;
              notes.push_back(absl::StrCat("discarded: ", tr[k].note));
              break;
            }
          }
        }
        AddArrowEvent(Event::kEnd, j, id, a.to, u.time_ns);
        break;
      }
      if (a.lost && notes.empty()) notes.push_back("lost");
      if (!notes.empty()) {
        absl::StrAppend(&a.label, " (", absl::StrJoin(notes, ", "), ")");
      }
      arrows_.push_back(a);
    }
    // Copies (a duplicated packet arrives twice): an arrow from the same
    // send as the original.
    for (size_t j = 0; j < tr.size(); ++j) {
      const sim::TraceRecord& u = tr[j];
      if (used[j] || u.kind != sim::TraceKind::kDeliver) continue;
      for (size_t i = j; i-- > 0;) {
        const sim::TraceRecord& t = tr[i];
        if (t.kind != sim::TraceKind::kTransmit || !t.note.empty() ||
            !SameFlow(u, t)) {
          continue;
        }
        // The arrow of record i: count the plain transmits before it.
        int id = -1;
        for (size_t k = 0; k <= i; ++k) {
          if (tr[k].kind == sim::TraceKind::kTransmit && tr[k].note.empty()) {
            ++id;
          }
        }
        used[j] = true;
        Arrow a = arrows_[id];
        a.lost = false;
        a.copy_of = id;
        a.label.clear();  // the original's label says "duplicate"
        const int copy = static_cast<int>(arrows_.size());
        arrows_.push_back(a);
        AddArrowEvent(Event::kEnd, j, copy, a.to, u.time_ns, /*copy_end=*/true);
        break;
      }
    }
    // Marks: completions, retry timers, local faults.
    for (size_t i = 0; i < tr.size(); ++i) {
      const sim::TraceRecord& t = tr[i];
      if (used[i]) continue;
      Event e;
      e.key = i * 2 + 1;
      e.time_ns = t.time_ns;
      switch (t.kind) {
        case sim::TraceKind::kComplete: {
          const WcStatus status = static_cast<WcStatus>(t.opcode);
          e.text = absl::StrFormat("cqe wr %u %s %s", t.wr_id,
                                   WcStatusName(status), CompletionOp(t, i));
          e.style = status == WcStatus::kSuccess ? Event::kCqeOk
                                                 : Event::kCqeError;
          break;
        }
        case sim::TraceKind::kTimeout:
          e.text = absl::StrFormat("ACK timeout: resend psn %u", t.psn);
          e.style = Event::kRetry;
          break;
        case sim::TraceKind::kRnrWait:
          e.text = absl::StrFormat("RNR wait: resend psn %u", t.psn);
          e.style = Event::kRetry;
          break;
        case sim::TraceKind::kDrop:
          if (t.peer_node >= 0 || t.note.empty()) continue;
          e.text = ShortNote(t.note);
          e.style = Event::kFault;
          break;
        default:
          continue;
      }
      if (t.qpn == 0 && t.kind != sim::TraceKind::kComplete) continue;
      auto it = lane_index_.find({t.node, t.qpn});
      if (it == lane_index_.end()) continue;
      e.lane = it->second;
      events_.push_back(e);
    }
    std::stable_sort(events_.begin(), events_.end(),
                     [](const Event& a, const Event& b) { return a.key < b.key; });
    // Sorting moved the send events: find them again.
    for (size_t i = 0; i < events_.size(); ++i) {
      if (events_[i].kind == Event::kSend) arrows_[events_[i].arrow].send_event = i;
    }
    for (Arrow& a : arrows_) {
      if (a.copy_of >= 0) a.send_event = arrows_[a.copy_of].send_event;
    }
  }

  // Keeps the first max_packets_ packets (and kMaxRows rows): everything
  // from the first packet left out on, except the ends of drawn arrows.
  void Cut() {
    int sends = 0;
    size_t cut = events_.size();
    for (size_t i = 0; i < events_.size(); ++i) {
      if (events_[i].kind == Event::kSend && ++sends > max_packets_) {
        cut = i;
        break;
      }
      if (static_cast<int>(i) >= kMaxRows) {
        cut = i;
        break;
      }
    }
    keep_.assign(events_.size(), false);
    for (size_t i = 0; i < events_.size(); ++i) {
      const Event& e = events_[i];
      if (i < cut && !e.copy_end) {
        keep_[i] = true;
      } else if (e.kind == Event::kEnd && arrows_[e.arrow].send_event < cut) {
        keep_[i] = true;
      }
      if (!keep_[i]) {
        if (e.kind == Event::kSend) {
          ++omitted_packets_;
        } else if (e.kind == Event::kMark) {
          ++omitted_marks_;
        }
      }
    }
  }

  void Layout() {
    // Mark labels go on the outside: left of the first lane, right of the
    // others.
    const size_t n = std::max<size_t>(lanes_.size(), 1);
    std::vector<double> mark_w(n, 0), box_w(n, 0);
    double arrow_w = 0;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (!keep_[i]) continue;
      const Event& e = events_[i];
      if (e.kind == Event::kMark) {
        mark_w[e.lane] = std::max(mark_w[e.lane], TextW(e.text));
      } else if (e.kind == Event::kSend) {
        arrow_w = std::max(arrow_w, TextW(arrows_[e.arrow].label));
      }
    }
    for (size_t l = 0; l < lanes_.size(); ++l) {
      box_w[l] = std::max(TextW(LaneName(l)), TextW(LaneQp(l))) + 16;
    }
    const double left_w = std::max(mark_w[0] + 16, box_w[0] / 2);
    double x = kTimeColumn + 12 + left_w;
    lane_x_.clear();
    for (size_t l = 0; l < n; ++l) {
      lane_x_.push_back(x);
      if (l + 1 < n) {
        const double gap = std::max(
            {200.0, arrow_w + 40, l > 0 ? mark_w[l] + 40 : 0.0,
             (box_w[l] + box_w[l + 1]) / 2 + 20});
        x += gap;
      }
    }
    const double right_w =
        std::max(n > 1 ? mark_w[n - 1] + 16 : 0.0, box_w[n - 1] / 2) + 12;
    width_ = x + right_w;
  }

  std::string LaneName(size_t l) const {
    auto it = r_.qp_names.find(lanes_[l]);
    return it == r_.qp_names.end() ? "" : it->second;
  }
  std::string LaneQp(size_t l) const {
    return absl::StrFormat("sim%d qp%u", lanes_[l].first, lanes_[l].second);
  }

  int Emit(int top, std::string* out) {
    std::string& o = *out;
    const std::string title =
        step_.title.empty() ? step_.file : step_.title;
    absl::StrAppend(&o, "<g>\n<text x=\"10\" y=\"", top + 18,
                    "\" font-size=\"14\" font-weight=\"bold\">", Esc(title),
                    "</text>\n<text x=\"10\" y=\"", top + 34, "\" fill=\"",
                    kGray, "\">", Esc(step_.file),
                    ": virtual time goes down</text>\n");
    const int box_top = top + 44;
    const int rows_top = box_top + 50;
    int rows = 0;
    for (size_t i = 0; i < events_.size(); ++i) rows += keep_[i] ? 1 : 0;
    const int rows_bottom = rows_top + std::max(rows, 1) * kRowH;
    absl::StrAppend(&o, "<text x=\"", kTimeColumn, "\" y=\"", box_top + 26,
                    "\" text-anchor=\"end\" fill=\"", kGray,
                    "\">time (us)</text>\n");
    for (size_t l = 0; l < lanes_.size(); ++l) {
      const double x = lane_x_[l];
      const double w = std::max(TextW(LaneName(l)), TextW(LaneQp(l))) + 16;
      absl::StrAppend(
          &o, "<line x1=\"", N(x), "\" y1=\"", box_top + 36, "\" x2=\"", N(x),
          "\" y2=\"", rows_bottom, "\" stroke=\"#999999\" stroke-dasharray=\"4 3\"/>\n",
          "<rect x=\"", N(x - w / 2), "\" y=\"", box_top, "\" width=\"", N(w),
          "\" height=\"36\" rx=\"4\" fill=\"#eef2f8\" stroke=\"#1f4e9c\"/>\n",
          "<text x=\"", N(x), "\" y=\"", box_top + 15,
          "\" text-anchor=\"middle\" font-weight=\"bold\">", Esc(LaneName(l)),
          "</text>\n<text x=\"", N(x), "\" y=\"", box_top + 29,
          "\" text-anchor=\"middle\">", Esc(LaneQp(l)), "</text>\n");
    }
    // Rows: one per kept event, in the order things happened.
    std::vector<int> row_y(events_.size(), 0);
    int row = 0;
    int64_t last_time = -1;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (!keep_[i]) continue;
      const int y = rows_top + row * kRowH + kRowH / 2;
      row_y[i] = y;
      ++row;
      if (events_[i].time_ns != last_time) {
        last_time = events_[i].time_ns;
        absl::StrAppend(&o, "<text x=\"", kTimeColumn, "\" y=\"", y + 4,
                        "\" text-anchor=\"end\" fill=\"", kGray, "\">",
                        absl::StrFormat("%.3f", last_time / 1000.0),
                        "</text>\n");
      }
    }
    // Arrows first, marks and labels over them.
    std::string labels, crosses;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (!keep_[i] || events_[i].kind != Event::kEnd) continue;
      const Arrow& a = arrows_[events_[i].arrow];
      const double x1 = lane_x_[a.from], x2 = lane_x_[a.to];
      const double y1 = row_y[a.send_event], y2 = row_y[i];
      DrawArrow(a, x1, y1, x2, y2, &o, &labels, &crosses);
    }
    // Packets that never arrived and have no end record.
    for (size_t i = 0; i < events_.size(); ++i) {
      if (!keep_[i] || events_[i].kind != Event::kSend) continue;
      bool ended = false;
      for (size_t j = i + 1; j < events_.size(); ++j) {
        ended = ended || (events_[j].kind == Event::kEnd &&
                          events_[j].arrow == events_[i].arrow);
      }
      if (ended) continue;
      Arrow a = arrows_[events_[i].arrow];
      a.lost = true;
      DrawArrow(a, lane_x_[a.from], row_y[i], lane_x_[a.to], row_y[i] + 8, &o,
                &labels, &crosses);
    }
    o += labels;
    o += crosses;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (!keep_[i] || events_[i].kind != Event::kMark) continue;
      const Event& e = events_[i];
      const double x = lane_x_[e.lane];
      const double y = row_y[i];
      switch (e.style) {
        case Event::kPost:
          absl::StrAppend(&o, "<circle cx=\"", N(x), "\" cy=\"", N(y),
                          "\" r=\"4\" fill=\"", kRequestColor, "\"/>\n");
          break;
        case Event::kCqeOk:
        case Event::kCqeError:
          absl::StrAppend(&o, "<rect x=\"", N(x - 5), "\" y=\"", N(y - 5),
                          "\" width=\"10\" height=\"10\" fill=\"",
                          e.style == Event::kCqeOk ? kOkColor : kLostColor,
                          "\"/>\n");
          break;
        case Event::kRetry:
        case Event::kFault:
          absl::StrAppend(&o, "<path d=\"M", N(x), ",", N(y - 6), " L",
                          N(x + 6), ",", N(y), " L", N(x), ",", N(y + 6), " L",
                          N(x - 6), ",", N(y), " Z\" fill=\"", kRetryColor,
                          "\"/>\n");
          break;
      }
      const char* color = e.style == Event::kCqeOk      ? kOkColor
                          : e.style == Event::kCqeError ? kLostColor
                          : e.style == Event::kPost     ? kRequestColor
                                                        : kRetryColor;
      if (e.lane == 0) {
        o += Label(x - 10, y + 4, e.text, "end", color);
      } else {
        o += Label(x + 10, y + 4, e.text, "start", color);
      }
    }
    int bottom = rows_bottom + 8;
    if (omitted_packets_ > 0 || omitted_marks_ > 0) {
      std::string more = absl::StrFormat("... %d more packets",
                                         omitted_packets_);
      if (omitted_marks_ > 0) {
        absl::StrAppendFormat(&more, " and %d more events", omitted_marks_);
      }
      absl::StrAppend(&more, " (see the text timeline)");
      width_ = std::max(width_, 10 + TextW(more) + 10);
      absl::StrAppend(&o, "<text x=\"10\" y=\"", bottom + 12, "\" fill=\"",
                      kLostColor, "\">", Esc(more), "</text>\n");
      bottom += 18;
    }
    o += "</g>\n";
    return bottom - top;
  }

  void DrawArrow(const Arrow& a, double x1, double y1, double x2, double y2,
                 std::string* o, std::string* labels, std::string* crosses) {
    const char* color = a.lost       ? kLostColor
                        : a.response ? kResponseColor
                                     : kRequestColor;
    if (a.from == a.to) {  // to itself (loopback): a small loop
      x2 = x1;
    }
    double ex = x2, ey = y2;
    if (a.lost) {
      // The X sits two thirds of the way across.
      ex = x1 + (x2 - x1) * 0.66;
      ey = y1 + (y2 - y1) * 0.66;
    }
    if (a.from == a.to) {
      absl::StrAppend(o, "<path d=\"M", N(x1), ",", N(y1), " C", N(x1 + 40),
                      ",", N(y1), " ", N(x1 + 40), ",", N(y2), " ", N(x2), ",",
                      N(y2), "\" fill=\"none\" stroke=\"", color, "\"",
                      a.lost ? "" : " marker-end=\"url(#",
                      a.lost ? "" : (a.response ? "resp" : "req"),
                      a.lost ? "" : ")\"", "/>\n");
    } else {
      absl::StrAppend(o, "<line x1=\"", N(x1), "\" y1=\"", N(y1), "\" x2=\"",
                      N(ex), "\" y2=\"", N(ey), "\" stroke=\"", color,
                      "\" stroke-width=\"1.5\"");
      if (!a.lost) {
        absl::StrAppend(o, " marker-end=\"url(#",
                        a.response ? "resp" : "req", ")\"");
      }
      *o += "/>\n";
    }
    if (a.lost) {
      absl::StrAppend(crosses, "<path d=\"M", N(ex - 5), ",", N(ey - 5), " L",
                      N(ex + 5), ",", N(ey + 5), " M", N(ex - 5), ",",
                      N(ey + 5), " L", N(ex + 5), ",", N(ey - 5),
                      "\" stroke=\"", kLostColor, "\" stroke-width=\"2.5\"/>\n");
    }
    if (a.label.empty()) return;
    // The label just above the arrow's start, away from the lifeline: the
    // sends of consecutive rows do not overlap there.
    if (a.from == a.to) {
      *labels += Label(x1 + 44, (y1 + y2) / 2 + 4, a.label, "start", color);
    } else if (x2 > x1) {
      *labels += Label(x1 + 10, y1 - 4, a.label, "start", color);
    } else {
      *labels += Label(x1 - 10, y1 - 4, a.label, "end", color);
    }
  }

  const SvgStep& step_;
  const RunResult& r_;
  const int max_packets_;
  std::vector<std::pair<int, uint32_t>> lanes_;
  std::map<std::pair<int, uint32_t>, int> lane_index_;
  std::vector<Arrow> arrows_;
  std::vector<Event> events_;
  std::vector<bool> keep_;
  std::set<size_t> polled_used_;
  std::vector<double> lane_x_;
  double width_ = 0;
  int omitted_packets_ = 0;
  int omitted_marks_ = 0;
};

}  // namespace

std::string SequenceSvg(const std::vector<SvgStep>& steps, int max_packets) {
  std::string body;
  double width = 0;
  int top = 0;
  for (const SvgStep& s : steps) {
    StepDrawer d(s, max_packets);
    double w = 0;
    top += d.Draw(top, &body, &w) + 16;
    width = std::max(width, w);
  }
  const std::string legend =
      "circle: post; square: completion; diamond: retry timer or fault; "
      "X: packet lost";
  width = std::max(width, 10 + TextW(legend) + 10);
  const int height = top + 14;
  const std::string w = N(std::ceil(width)), h = absl::StrCat(height);
  std::string out = absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n",
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"", w,
      "\" height=\"", h, "\" viewBox=\"0 0 ", w, " ", h,
      "\" font-family=\"monospace\" font-size=\"12\">\n");
  absl::StrAppend(&out, "<title>verbsim: ",
                  Esc(steps.size() == 1 ? steps[0].title : "the tour"),
                  "</title>\n");
  absl::StrAppend(
      &out, "<defs>\n",
      "<marker id=\"req\" markerWidth=\"10\" markerHeight=\"8\" refX=\"9\" "
      "refY=\"4\" orient=\"auto\" markerUnits=\"userSpaceOnUse\"><path "
      "d=\"M0,0 L10,4 L0,8 Z\" fill=\"",
      kRequestColor, "\"/></marker>\n",
      "<marker id=\"resp\" markerWidth=\"10\" markerHeight=\"8\" refX=\"9\" "
      "refY=\"4\" orient=\"auto\" markerUnits=\"userSpaceOnUse\"><path "
      "d=\"M0,0 L10,4 L0,8 Z\" fill=\"",
      kResponseColor, "\"/></marker>\n</defs>\n",
      "<rect x=\"0\" y=\"0\" width=\"", w, "\" height=\"", h,
      "\" fill=\"#ffffff\"/>\n");
  out += body;
  absl::StrAppend(&out, "<text x=\"10\" y=\"", height - 6, "\" fill=\"", kGray,
                  "\">", Esc(legend), "</text>\n</svg>\n");
  return out;
}

}  // namespace verbsim::cli
