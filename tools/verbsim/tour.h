// The tour's scenarios: the files of docs/scenarios/, built into the binary
// (tools/BUILD.bazel generates their definition), in file-name order.
#ifndef VERBSIM_TOOLS_VERBSIM_TOUR_H_
#define VERBSIM_TOOLS_VERBSIM_TOUR_H_

namespace verbsim::cli {

struct TourFile {
  const char* name;  // the file name, e.g. "01-connect.scenario"
  const char* text;
};
extern const TourFile kTourFiles[];
extern const int kNumTourFiles;

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_TOUR_H_
