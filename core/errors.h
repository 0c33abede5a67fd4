// Errors of the verbsim API. Every failing call returns an absl::Status whose
// message starts with the errno name libibverbs would have set (EINVAL,
// ENOMEM, EBUSY, ...) and names the bad value; ErrnoOf() recovers that errno
// for C-style front ends.
#ifndef VERBSIM_CORE_ERRORS_H_
#define VERBSIM_CORE_ERRORS_H_

#include <cerrno>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace verbsim {

// A status for `err` (an errno value) whose message is "<ENAME>: message".
absl::Status ErrnoError(int err, absl::string_view message);

// The same, with the message formatted as by absl::StrFormat. A message
// that fits in kErrnoMessageRoom bytes is formatted on the stack: a refused
// call's Status then costs the Status's own allocations only.
inline constexpr size_t kErrnoMessageRoom = 256;
template <typename... Args>
absl::Status Errno(int err, const absl::FormatSpec<Args...>& format,
                   const Args&... args) {
  char buf[kErrnoMessageRoom];
  const int n = absl::SNPrintF(buf, sizeof(buf), format, args...);
  if (n >= 0 && static_cast<size_t>(n) < sizeof(buf)) {
    return ErrnoError(err, absl::string_view(buf, static_cast<size_t>(n)));
  }
  return ErrnoError(err, absl::StrFormat(format, args...));
}

// The errno carried by `status`: 0 for OK; the errno given to ErrnoError; a
// best match from the status code otherwise.
int ErrnoOf(const absl::Status& status);

// "EINVAL", "ENOMEM", ... or "E<n>".
absl::string_view ErrnoName(int err);

}  // namespace verbsim

#endif  // VERBSIM_CORE_ERRORS_H_
