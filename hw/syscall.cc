// What the "hw" provider's calls into libibverbs, librdmacm and the kernel
// share: the errno of a failed call, the status that names it, waiting on a
// file descriptor, and the error of a destroyed object.
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "hw/objects.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {

int ErrnoFromReturn(int ret) {
  if (ret > 0) return ret;    // the errno value itself
  if (ret < -1) return -ret;  // a provider returning -errno
  return errno != 0 ? errno : EIO;
}

absl::Status SysError(int err, absl::string_view what) {
  // absl::ErrnoToStatus (core/errors.cc) appends strerror(err) itself.
  return ErrnoError(err, what);
}

absl::StatusOr<bool> WaitReadable(int fd, absl::Time deadline) {
  while (true) {
    int ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      absl::Duration left = deadline - absl::Now();
      if (left < absl::ZeroDuration()) left = absl::ZeroDuration();
      // Round up so that a wait never ends before the deadline.
      int64_t us = absl::ToInt64Microseconds(left);
      ms = static_cast<int>(std::min<int64_t>((us + 999) / 1000, INT_MAX));
    }
    pollfd pfd = {fd, POLLIN, 0};
    int n = poll(&pfd, 1, ms);
    if (n > 0) return true;
    if (n == 0) {
      if (ms == 0 || absl::Now() >= deadline) return false;
      continue;
    }
    if (errno == EINTR) continue;
    return SysError(errno, absl::StrFormat("poll(fd %d)", fd));
  }
}

absl::Status SetNonBlocking(int fd, absl::string_view what) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return SysError(errno, absl::StrFormat("fcntl(O_NONBLOCK) on %s", what));
  }
  return absl::OkStatus();
}

absl::Status Dead(absl::string_view what) {
  return Errno(EINVAL, "%s was destroyed", what);
}

}  // namespace hw
}  // namespace verbsim
