// How the soak processes meet: each writes small text files into a shared
// directory (atomically: written under another name, then renamed) and
// waits, bounded in time, for the others' files.
#ifndef VERBSIM_TOOLS_SOAK_RENDEZVOUS_H_
#define VERBSIM_TOOLS_SOAK_RENDEZVOUS_H_

#include <string>

#include "absl/time/time.h"

namespace verbsim::soak {

// Writes `text` to `dir`/`name`; false on an I/O error.
bool PublishFile(const std::string& dir, const std::string& name,
                 const std::string& text);

// Waits until `dir`/`name` exists and returns its text; false after
// `timeout`.
bool AwaitFile(const std::string& dir, const std::string& name,
               absl::Duration timeout, std::string* text);

}  // namespace verbsim::soak

#endif  // VERBSIM_TOOLS_SOAK_RENDEZVOUS_H_
