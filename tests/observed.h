// What a conformance case saw, for the fidelity table (docs/fidelity.md).
// The suite's helpers note every completion status they poll (Await, AwaitN,
// Drain) and every errno a HasErrno matcher looks at; at the end of each
// case the notes become two properties of the case in the gtest XML
// (<property name=... value=.../> inside its <testcase>):
//   completions="REM_ACCESS_ERR WR_FLUSH_ERR"   (distinct, in first-seen order)
//   errnos="EINVAL"
//   values="cqe=127"   (name=value figures a device reports, NoteValue)
// tools/fidelity/fidelity.py reads them to show, per case and provider,
// what the provider did, and to find cases where a sim profile and the
// device it models disagree.
#ifndef VERBSIM_TESTS_OBSERVED_H_
#define VERBSIM_TESTS_OBSERVED_H_

#include <string>

#include "core/types.h"

namespace verbsim {
namespace testing {

void NoteCompletionStatus(WcStatus status);
void NoteErrno(int err);
// A figure the device reported (an attribute, a granted capacity), compared
// between a sim profile and its device like the statuses are.
void NoteValue(const std::string& name, long long value);

}  // namespace testing
}  // namespace verbsim

#endif  // VERBSIM_TESTS_OBSERVED_H_
