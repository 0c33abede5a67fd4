// Harness for the fault-rule text (sim/faults.h ParseFaults, docs/faults.md),
// which comes from VERBSIM_FAULTS, --faults, a scenario's `faults` lines and
// verbsim_add_faults: the input is the text.
//
// Invariants:
//  - parsing never crashes or reads out of bounds, whatever the bytes;
//  - it is a function of the text: a second parse gives the same verdict
//    and the same number of rules of each kind;
//  - a refusal names a column inside the text (or just past its end).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "sim/faults.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto a = verbsim::sim::ParseFaults(text);
  auto b = verbsim::sim::ParseFaults(text);
  if (a.ok() != b.ok()) std::abort();
  if (a.ok()) {
    if (a->packets.size() != b->packets.size() ||
        a->links.size() != b->links.size() ||
        a->crashes.size() != b->crashes.size() ||
        a->qp_errors.size() != b->qp_errors.size() ||
        a->cq_overflows.size() != b->cq_overflows.size() ||
        a->regfail_nth != b->regfail_nth ||
        a->postfail_nth != b->postfail_nth) {
      std::abort();
    }
    return 0;
  }
  if (a.status().message() != b.status().message()) std::abort();
  const absl::string_view message = a.status().message();
  const size_t at = message.find("column ");
  if (at == absl::string_view::npos) return 0;
  absl::string_view digits = message.substr(at + 7);
  digits = digits.substr(0, digits.find_first_not_of("0123456789"));
  uint64_t column = 0;
  if (!absl::SimpleAtoi(digits, &column) || column < 1 || column > size + 1) {
    std::abort();
  }
  return 0;
}
