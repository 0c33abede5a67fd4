// A scenario's run as an SVG sequence diagram (`verbsim run FILE --svg=OUT`):
// a lifeline per QP, virtual time going down, an arrow per packet from the
// sending QP to the receiving one (a lost packet ends in an X), and the
// completions as marks on their QP's lifeline. The output depends only on
// the run (no real clock, fixed number formats), so the same scenario and
// seed give the same bytes.
#ifndef VERBSIM_TOOLS_VERBSIM_SVG_H_
#define VERBSIM_TOOLS_VERBSIM_SVG_H_

#include <string>
#include <vector>

#include "tools/verbsim/scenario.h"

namespace verbsim::cli {

// At most this many packet arrows per diagram; the rest are counted in a
// line "... N more packets".
constexpr int kSvgMaxPackets = 48;

struct SvgStep {
  std::string title;  // the scenario's title
  std::string file;   // as named on the command line
  const RunResult* result = nullptr;  // run with RunOptions::capture set
};

// One SVG 1.1 document; several steps (the tour) are drawn one under the
// other.
std::string SequenceSvg(const std::vector<SvgStep>& steps,
                        int max_packets = kSvgMaxPackets);

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_SVG_H_
