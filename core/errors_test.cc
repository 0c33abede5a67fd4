#include "core/errors.h"

#include <cerrno>
#include <cstddef>
#include <string>

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

TEST(ErrnoTest, FormatsMessagesOfEveryLengthWhole) {
  // Messages shorter than the stack room, filling it, and longer: the same
  // text as StrFormat and ErrnoError give, whichever way it was built.
  for (size_t n = 0; n <= 5 * kErrnoMessageRoom; ++n) {
    SCOPED_TRACE(n);
    const std::string name(n, 'q');
    const absl::Status got = Errno(EBUSY, "qp %s has %d WRs", name, 3);
    const absl::Status want =
        ErrnoError(EBUSY, absl::StrCat("qp ", name, " has 3 WRs"));
    EXPECT_EQ(got, want);
    EXPECT_EQ(got.message(),
              absl::StrCat("EBUSY: qp ", name, " has 3 WRs: ",
                           absl::ErrnoToStatus(EBUSY, "").message()
                               .substr(2)));
    EXPECT_EQ(ErrnoOf(got), EBUSY);
  }
}

}  // namespace
}  // namespace verbsim
