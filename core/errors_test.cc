#include "core/errors.h"

#include <cerrno>

#include "absl/strings/match.h"
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

}  // namespace
}  // namespace verbsim
