#include "core/errors.h"

#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace verbsim {
namespace {
constexpr absl::string_view kErrnoPayload = "verbsim/errno";
}  // namespace

absl::string_view ErrnoName(int err) {
  switch (err) {
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EBUSY: return "EBUSY";
    case ENOENT: return "ENOENT";
    case ENODEV: return "ENODEV";
    case ENOSYS: return "ENOSYS";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EADDRINUSE: return "EADDRINUSE";
    case EAGAIN: return "EAGAIN";
    case EFAULT: return "EFAULT";
    case ENOTCONN: return "ENOTCONN";
    case EEXIST: return "EEXIST";
    case EIO: return "EIO";
  }
  // Any other errno a device may return (ENODATA from rxe's GID cache, ...):
  // glibc's name for it (strerrorname_np, glibc 2.32).
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "E?";
}

absl::Status ErrnoError(int err, absl::string_view message) {
  // The text absl::ErrnoToStatus would give ("<message>: <strerror>"),
  // put together on the stack when it fits: an error Status is on every
  // refused call's path (and on most steps of a fuzzer's input), so its
  // allocations are the Status's own only (its representation, message
  // and payload), not strings on the way.
  char buf[128];
  const char* text = strerror_r(err, buf, sizeof(buf));  // GNU: may be buf
  const absl::string_view parts[] = {ErrnoName(err), ": ", message, ": ",
                                     text};
  char room[2 * kErrnoMessageRoom];
  size_t len = 0;
  for (absl::string_view part : parts) len += part.size();
  const absl::StatusCode code = absl::ErrnoToStatusCode(err);
  absl::Status status;
  if (len <= sizeof(room)) {
    char* out = room;
    for (absl::string_view part : parts) {
      std::memcpy(out, part.data(), part.size());
      out += part.size();
    }
    status = absl::Status(code, absl::string_view(room, len));
  } else {
    status = absl::Status(code, absl::StrCat(parts[0], parts[1], parts[2],
                                             parts[3], parts[4]));
  }
  status.SetPayload(kErrnoPayload, absl::Cord(absl::StrCat(err)));
  return status;
}

int ErrnoOf(const absl::Status& status) {
  if (status.ok()) return 0;
  if (auto payload = status.GetPayload(kErrnoPayload)) {
    int err = 0;
    if (absl::SimpleAtoi(std::string(*payload), &err)) return err;
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument: return EINVAL;
    case absl::StatusCode::kResourceExhausted: return ENOMEM;
    case absl::StatusCode::kFailedPrecondition: return EBUSY;
    case absl::StatusCode::kNotFound: return ENOENT;
    case absl::StatusCode::kUnimplemented: return EOPNOTSUPP;
    case absl::StatusCode::kDeadlineExceeded: return ETIMEDOUT;
    case absl::StatusCode::kPermissionDenied: return EACCES;
    case absl::StatusCode::kUnavailable: return EAGAIN;
    default: return EIO;
  }
}

}  // namespace verbsim
