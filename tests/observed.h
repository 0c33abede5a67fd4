// What a conformance case saw, for the fidelity table (docs/fidelity.md).
// The suite's helpers note every completion status they poll (Await, AwaitN,
// Drain) and every errno a HasErrno matcher looks at; at the end of each
// case the notes become two properties of the case in the gtest XML
// (<property name=... value=.../> inside its <testcase>):
//   completions="REM_ACCESS_ERR WR_FLUSH_ERR"   (distinct, in first-seen order)
//   errnos="EINVAL"
// tools/fidelity/fidelity.py reads them to show, per case and provider,
// what the provider did, and to find cases where a sim profile and the
// device it models disagree.
#ifndef VERBSIM_TESTS_OBSERVED_H_
#define VERBSIM_TESTS_OBSERVED_H_

#include "core/types.h"

namespace verbsim {
namespace testing {

void NoteCompletionStatus(WcStatus status);
void NoteErrno(int err);

}  // namespace testing
}  // namespace verbsim

#endif  // VERBSIM_TESTS_OBSERVED_H_
