#include "core/errors.h"

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace verbsim {
namespace {

TEST(ErrnoNameTest, NamesTheCommonErrnos) {
  EXPECT_EQ(ErrnoName(EINVAL), "EINVAL");
  EXPECT_EQ(ErrnoName(EOPNOTSUPP), "EOPNOTSUPP");
}

TEST(ErrnoNameTest, NamesAnyErrnoADeviceMayReturn) {
  // rxe's GID cache answers ENODATA for an empty GID entry.
  EXPECT_EQ(ErrnoName(ENODATA), "ENODATA");
  EXPECT_EQ(ErrnoName(ENOSPC), "ENOSPC");
}

TEST(ErrnoNameTest, AnUnknownNumberIsMarked) {
  EXPECT_EQ(ErrnoName(99999), "E?");
}

TEST(ErrnoErrorTest, CarriesTheErrnoAndItsNameFirst) {
  absl::Status status = ErrnoError(ENODATA, "no GID at index 7");
  EXPECT_EQ(ErrnoOf(status), ENODATA);
  EXPECT_TRUE(absl::StartsWith(status.message(), "ENODATA: no GID at index 7"))
      << status;
}

TEST(ErrnoErrorTest, ReadsAsAbslErrnoToStatusWithTheNameFirst) {
  for (int err = 0; err < 140; ++err) {
    SCOPED_TRACE(err);
    const absl::Status ours = ErrnoError(err, "qp 7 is in RESET");
    const absl::Status absl_form = absl::ErrnoToStatus(
        err, absl::StrCat(ErrnoName(err), ": qp 7 is in RESET"));
    EXPECT_EQ(ours.code(), absl_form.code());
    EXPECT_EQ(ours.message(), absl_form.message());
    EXPECT_EQ(ErrnoOf(ours), err);
  }
  EXPECT_TRUE(ErrnoError(0, "nothing").ok());
}

}  // namespace
}  // namespace verbsim
