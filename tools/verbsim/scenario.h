// Scenario files for the verbsim CLI: a small line-oriented language a
// learner can read and edit (docs/cli.md describes it), its parser and the
// runner that plays a scenario on a provider and records what happened.
#ifndef VERBSIM_TOOLS_VERBSIM_SCENARIO_H_
#define VERBSIM_TOOLS_VERBSIM_SCENARIO_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"
#include "sim/fabric.h"
#include "sim/trace.h"

namespace verbsim::cli {

// One word of a line: its text (quotes removed) and 1-based column.
struct Token {
  std::string text;
  int column = 0;
  bool quoted = false;
};

// One command of a scenario: the verb, its words, and for the verbs that
// take free text (title, spec, say, faults) the rest of the line.
struct Command {
  int line = 0;
  std::vector<Token> words;  // words[0] is the verb
  std::string rest;          // free text after the verb
  int rest_column = 0;
};

struct Scenario {
  std::string file;  // as named on the command line, for messages
  std::string title;
  std::vector<std::string> spec;  // what the spec guarantees, with the rule
  std::vector<Command> commands;
};

// Parses `text` (named `file` in messages). Everything is checked before
// anything runs: verbs, keys, values and names. An error reads
// "file:line:column: expected ..., got '...'".
absl::StatusOr<Scenario> ParseScenario(absl::string_view file,
                                       absl::string_view text);

// What a run produced, for the timeline, the pcap and the JSON trace.
struct TimelineRow {
  int64_t time_ns = -1;  // -1: not tied to a moment (narration)
  int node = -1;
  uint32_t qpn = 0;
  std::string text;
  enum Kind { kNarration, kAction, kPacket, kCompletion, kCheck } kind =
      kAction;
};

// A work request as posted, for the JSON trace's slices.
struct PostedWr {
  int64_t post_ns = 0;
  int64_t done_ns = -1;  // when its completion was generated, if it was
  size_t trace_index = 0;  // how many trace records came before the post
  int node = 0;
  uint32_t qpn = 0;
  uint64_t wr_id = 0;
  bool recv = false;
  std::string what;      // "RDMA_WRITE 16 bytes"
  std::string status;    // the completion status, if any
};

struct RunOptions {
  std::string provider = "sim";
  bool have_seed = false;
  uint64_t seed = 1;
  std::string faults;  // --faults, applied before the scenario's own
  bool capture = false;  // keep packets for --pcap and --svg
};

// A completion a `wait` or `poll` took from a CQ (the trace records only the
// status; the opcode is in the work completion).
struct PolledWc {
  int node = 0;
  uint32_t qpn = 0;
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
};

struct RunResult {
  std::vector<TimelineRow> rows;
  std::vector<PostedWr> wrs;
  std::vector<sim::TraceRecord> trace;  // the sim's own records
  std::vector<sim::Fabric::CapturedPacket> packets;
  // The transport of each (node, QP number) the scenario created, for the
  // BTH opcode byte of its packets (RC when not listed).
  std::map<std::pair<int, uint32_t>, QpType> transports;
  // The scenario's name for each (node, QP number) it created.
  std::map<std::pair<int, uint32_t>, std::string> qp_names;
  std::vector<PolledWc> polled;  // in the order they were polled
  int64_t end_ns = 0;
  int expectations = 0;
  int failures = 0;  // failed expectations
  bool has_fabric = false;
  // The fabric's node addresses: node i is address_base + i.
  uint32_t address_base = sim::kDefaultAddressBase;
};

// An AETH syndrome as text: "ACK", "RNR NAK timer 14", "NAK PSN sequence
// error", ...
std::string AethText(uint8_t syndrome);

// Runs a parsed scenario. A command that cannot be carried out (a provider
// that does not open, a post that fails without `expect error` after it)
// stops the run with a status "file:line: ..."; failed expectations are
// counted in the result and the run goes on.
absl::StatusOr<RunResult> RunScenario(const Scenario& scenario,
                                      const RunOptions& options);

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_SCENARIO_H_
