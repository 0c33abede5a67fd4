// Running a scenario: the provider, the command loop, virtual time (run,
// wait, poll) and the timeline of what happened.
#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/errors.h"
#include "core/names.h"
#include "sim/packet.h"
#include "tools/verbsim/scenario.h"
#include "tools/verbsim/scenario_runner.h"
#include "tools/verbsim/scenario_values.h"

namespace verbsim::cli {
namespace scenario_internal {
namespace {

// A trace record as a timeline line; packets of UC and UD QPs get their
// transport in front of the opcode ("UD SEND_ONLY").
std::string RecordText(const sim::TraceRecord& r, QpType transport) {
  std::string op(sim::RcOpName(static_cast<sim::RcOp>(r.opcode)));
  if (transport != QpType::kRc) {
    op = absl::StrCat(TransportName(transport), " ", op);
  }
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
    absl::StrAppend(&s, " ", AethText(r.syndrome));
  }
  if (r.kind == sim::TraceKind::kDrop) {
    absl::StrAppend(&s, " LOST (", r.note.empty() ? "dropped" : r.note, ")");
  } else if (!r.note.empty()) {
    absl::StrAppend(&s, " (", r.note, ")");
  }
  return s;
}

}  // namespace

absl::string_view TransportName(QpType t) {
  return t == QpType::kUd ? "UD" : t == QpType::kUc ? "UC" : "RC";
}

Runner::~Runner() {
  // Windows before the regions they are bound to, AHs and regions before
  // their PDs.
  mws_.clear();
  ahs_.clear();
  mrs_.clear();
  eps_.clear();
}

absl::StatusOr<RunResult> Runner::Run() {
  if (absl::Status s = OpenProvider(); !s.ok()) return s;
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

// The provider of --provider; on the sim, with as many nodes as the
// scenario wants (two at least), the seed and the faults of the command
// line.
absl::Status Runner::OpenProvider() {
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
  auto provider = verbsim::OpenProvider(spec);
  if (!provider.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "provider '", opt_.provider, "': ", provider.status().message()));
  }
  provider_ = *std::move(provider);
  sim_ = sim::AsSimProvider(provider_.get());
  result_.has_fabric = sim_ != nullptr;
  if (sim_ == nullptr) {
    auto devices = provider_->ListDevices();
    if (!devices.ok() || devices->empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("provider '", opt_.provider, "' has no device"));
    }
    devices_ = *devices;
    return absl::OkStatus();
  }
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
  return absl::OkStatus();
}

absl::Status Runner::Execute(const Command& c) {
  using Verb = absl::Status (Runner::*)(const Command&);
  static const struct {
    const char* verb;
    Verb run;
  } kVerbs[] = {
      {"say", &Runner::Say},           {"nodes", &Runner::Nodes},
      {"faults", &Runner::Faults},     {"endpoint", &Runner::CreateEndpoint},
      {"mr", &Runner::RegisterMr},     {"ah", &Runner::CreateAh},
      {"mw", &Runner::AllocMw},        {"bind", &Runner::Bind},
      {"fill", &Runner::Fill},         {"connect", &Runner::Connect},
      {"modify", &Runner::ModifyQp},   {"post", &Runner::Post},
      {"wait", &Runner::WaitOrPoll},   {"poll", &Runner::WaitOrPoll},
      {"run", &Runner::RunFabric},     {"expect", &Runner::Expect},
  };
  const std::string& verb = c.words[0].text;
  for (const auto& v : kVerbs) {
    if (verb == v.verb) return (this->*v.run)(c);
  }
  return Fail(c.line, absl::StrCat("unknown command ", verb));
}

absl::Status Runner::Say(const Command& c) {
  Row(TimelineRow::kNarration, -1, 0, c.rest);
  return absl::OkStatus();
}

// The sim was opened with the scenario's number of nodes.
absl::Status Runner::Nodes(const Command&) { return absl::OkStatus(); }

absl::Status Runner::RunFabric(const Command& c) {
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

absl::Status Runner::WaitOrPoll(const Command& c) {
  const std::string& verb = c.words[0].text;
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
  std::string text = absl::StrFormat("%s %s: wr %u %s", verb, c.words[2].text,
                                     wc.wr_id, WcStatusName(wc.status));
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

int64_t Runner::Now() {
  return sim_ ? absl::ToInt64Nanoseconds(fabric().Now()) : -1;
}

void Runner::Row(TimelineRow::Kind kind, int node, uint32_t qpn,
                 std::string text, int64_t time) {
  TimelineRow r;
  r.kind = kind;
  r.time_ns = time == -2 ? (kind == TimelineRow::kNarration ? -1 : Now())
                         : time;
  r.node = node;
  r.qpn = qpn;
  r.text = std::move(text);
  result_.rows.push_back(std::move(r));
}

void Runner::EpRow(const EpState& e, std::string text,
                   TimelineRow::Kind kind) {
  Row(kind, e.node, e.ep ? e.ep->qp()->qp_num() : 0, std::move(text));
}

absl::Status Runner::Fail(int line, absl::string_view msg) {
  return absl::FailedPreconditionError(
      absl::StrFormat("%s:%d: %s", sc_.file, line, msg));
}

absl::Status Runner::Defer(int line, absl::Status s) {
  pending_error_ = std::move(s);
  pending_line_ = line;
  return absl::OkStatus();
}

void Runner::FlushTrace() {
  if (sim_ == nullptr) return;
  std::vector<sim::TraceRecord> recs = fabric().TraceRecords();
  for (size_t i = trace_seen_; i < recs.size(); ++i) {
    const sim::TraceRecord& r = recs[i];
    Row(r.kind == sim::TraceKind::kComplete ? TimelineRow::kCompletion
                                            : TimelineRow::kPacket,
        r.node, r.qpn, RecordText(r, TransportOf(r.node, r.qpn)), r.time_ns);
  }
  trace_seen_ = recs.size();
}

QpType Runner::TransportOf(int node, uint32_t qpn) const {
  auto it = result_.transports.find({node, qpn});
  return it == result_.transports.end() ? QpType::kRc : it->second;
}

// Gives each posted WR the time its completion was generated: the first
// completion record of its QP and wr_id after it was posted. A WR without
// one (unsignaled) ends with the next completion of its queue, or the run.
void Runner::MatchCompletions() {
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

}  // namespace scenario_internal

std::string AethText(uint8_t s) {
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

absl::StatusOr<RunResult> RunScenario(const Scenario& scenario,
                                      const RunOptions& options) {
  scenario_internal::Runner runner(scenario, options);
  return runner.Run();
}

}  // namespace verbsim::cli
