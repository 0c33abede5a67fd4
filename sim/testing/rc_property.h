// A mixed RC workload over a lossy fabric, checked end to end: every send is
// received exactly once, in order, its bytes intact (checksummed); every
// fetch-and-add is applied exactly once, in order; every read sees the last
// write to its slot before it on the same QP.
#ifndef VERBSIM_SIM_TESTING_RC_PROPERTY_H_
#define VERBSIM_SIM_TESTING_RC_PROPERTY_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace verbsim::sim::testing {

struct PropertyOptions {
  uint64_t seed = 1;
  uint64_t messages = 10000;
  std::string faults = "drop prob=0.1; dup prob=0.05; reorder prob=0.05";
  int window = 32;  // WRs in flight at most
  bool keep_trace = false;
};

struct PropertyResult {
  uint64_t messages = 0;
  uint64_t packets = 0;
  uint64_t trace_hash = 0;
  double virtual_seconds = 0;
  std::string trace_tail;  // the end of the trace, when a WR failed
};

// Runs the workload; an error names the first property that failed.
absl::Status RunRcProperty(const PropertyOptions& options,
                           PropertyResult* result);

}  // namespace verbsim::sim::testing

#endif  // VERBSIM_SIM_TESTING_RC_PROPERTY_H_
