// What the CLI prints and writes from a scenario's run: the annotated text
// timeline (80 columns) and the Chrome / Perfetto trace-event JSON.
#ifndef VERBSIM_TOOLS_VERBSIM_OUTPUT_H_
#define VERBSIM_TOOLS_VERBSIM_OUTPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/verbsim/scenario.h"

namespace verbsim::cli {

constexpr int kWidth = 80;

// The step's header: its number and title, then what the spec guarantees.
std::string FormatHeader(int step, const Scenario& scenario);

// The timeline: one row per line ("    time(us) node  qp  event"), long
// events wrapped under the event column, narration as indented paragraphs.
std::string FormatTimeline(const RunResult& result);

// Wraps `text` to `width` columns, each line starting with `indent`.
std::string Wrap(const std::string& text, int width, const std::string& indent,
                 const std::string& first_indent);

// Trace-event JSON: a process per node, a thread (track) per QP; each WR an
// async slice from its post to its completion on its QP's track; packets
// and faults instant events on the QP that sent or received them.
// `offset_ns` shifts a step's times so that tour steps follow each other;
// `pid_base` keeps the steps apart.
struct JsonStep {
  std::string title;
  const RunResult* result = nullptr;
  int64_t offset_ns = 0;
};
std::string TraceJson(const std::vector<JsonStep>& steps);

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_OUTPUT_H_
