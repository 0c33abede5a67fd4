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
  // built in one string: an error Status is on every refused call's path
  // (and on most steps of a fuzzer's input), so the intermediate strings
  // were a good share of those calls' allocations.
  char buf[128];
  const char* text = strerror_r(err, buf, sizeof(buf));  // GNU: may be buf
  absl::Status status(
      absl::ErrnoToStatusCode(err),
      absl::StrCat(ErrnoName(err), ": ", message, ": ", text));
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
