// Errors of the verbsim API. Every failing call returns an absl::Status whose
// message starts with the errno name libibverbs would have set (EINVAL,
// ENOMEM, EBUSY, ...) and names the bad value; ErrnoOf() recovers that errno
// for C-style front ends.
#ifndef VERBSIM_CORE_ERRORS_H_
#define VERBSIM_CORE_ERRORS_H_

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace verbsim {

// A status for `err` (an errno value) whose message is "<ENAME>: message".
absl::Status ErrnoError(int err, absl::string_view message);

template <typename... Args>
absl::Status Errno(int err, const absl::FormatSpec<Args...>& format,
                   const Args&... args) {
  return ErrnoError(err, absl::StrFormat(format, args...));
}

// The errno carried by `status`: 0 for OK; the errno given to ErrnoError; a
// best match from the status code otherwise.
int ErrnoOf(const absl::Status& status);

// "EINVAL", "ENOMEM", ... or "E<n>".
absl::string_view ErrnoName(int err);

}  // namespace verbsim

#endif  // VERBSIM_CORE_ERRORS_H_
