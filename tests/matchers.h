// Small gmock matchers for absl::Status / absl::StatusOr and for work
// completions (gmock 1.12 ships none for absl).
//
//   EXPECT_THAT(pd->RegMr(nullptr, 8, 0), HasErrno(EINVAL));
//   EXPECT_THAT(cq->Poll(wcs), IsOkAndHolds(0));
//   EXPECT_THAT(wc, WcStatusIs(WcStatus::kRemAccessErr));
#ifndef VERBSIM_TESTS_MATCHERS_H_
#define VERBSIM_TESTS_MATCHERS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/observed.h"

namespace verbsim {
namespace testing {

inline const absl::Status& StatusOf(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// The status is OK (Status or StatusOr).
MATCHER(IsOk, "is OK") {
  const absl::Status& status = ::verbsim::testing::StatusOf(arg);
  if (!status.ok()) *result_listener << "status is " << status;
  return status.ok();
}

// A StatusOr that is OK and whose value matches `matcher`.
MATCHER_P(IsOkAndHolds, matcher,
          negation ? "is not OK or holds a non-matching value"
                   : "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(matcher, *arg, result_listener);
}

// The status has canonical code `code`.
MATCHER_P(StatusIs, code,
          absl::StrCat(negation ? "does not have" : "has", " code ",
                       absl::StatusCodeToString(code))) {
  const absl::Status& status = ::verbsim::testing::StatusOf(arg);
  *result_listener << "status is " << status;
  return status.code() == code;
}

// The status carries errno `err` (ErrnoOf) and, as core/errors.h promises,
// its message starts with that errno's name.
MATCHER_P(HasErrno, err,
          absl::StrCat(negation ? "does not fail" : "fails", " with ",
                       ::verbsim::ErrnoName(err))) {
  const absl::Status& status = ::verbsim::testing::StatusOf(arg);
  *result_listener << "status is " << status;
  ::verbsim::testing::NoteErrno(status.ok() ? 0 : ::verbsim::ErrnoOf(status));
  if (status.ok()) return false;
  if (::verbsim::ErrnoOf(status) != err) return false;
  const std::string prefix = absl::StrCat(::verbsim::ErrnoName(err), ":");
  if (!absl::StartsWith(status.message(), prefix)) {
    *result_listener << " (message does not start with \"" << prefix
                     << "\")";
    return false;
  }
  return true;
}

// The status fails and its message contains `text`.
MATCHER_P(FailsMentioning, text,
          absl::StrCat("fails with a message mentioning \"", text, "\"")) {
  const absl::Status& status = ::verbsim::testing::StatusOf(arg);
  *result_listener << "status is " << status;
  return !status.ok() && absl::StrContains(status.message(), text);
}

// A WorkCompletion with this status.
MATCHER_P(WcStatusIs, status,
          absl::StrCat(negation ? "does not have" : "has", " status ",
                       ::verbsim::WcStatusName(status))) {
  return arg.status == status;
}

// A WorkCompletion whose status is one of `statuses` (an expectations-table
// entry: a provider may be allowed more than one).
MATCHER_P(WcStatusIn, statuses,
          absl::StrCat(negation ? "has a status outside" : "has a status in",
                       " {", [&] {
                         std::string s;
                         for (WcStatus st : statuses) {
                           absl::StrAppend(&s, s.empty() ? "" : ", ",
                                           ::verbsim::WcStatusName(st));
                         }
                         return s;
                       }(), "}")) {
  for (WcStatus st : statuses) {
    if (arg.status == st) return true;
  }
  return false;
}

// A successful WorkCompletion with this wr_id and opcode.
MATCHER_P2(WcOk, wr_id, opcode,
           absl::StrCat("is a SUCCESS completion of wr_id ", wr_id,
                        " with opcode ", ::verbsim::WcOpcodeName(opcode))) {
  return arg.status == WcStatus::kSuccess && arg.wr_id == wr_id &&
         arg.opcode == opcode;
}

// A flushed completion (WR_FLUSH_ERR) of this wr_id.
MATCHER_P(WcFlushed, wr_id,
          absl::StrCat("is a WR_FLUSH_ERR completion of wr_id ", wr_id)) {
  return arg.status == WcStatus::kWrFlushErr && arg.wr_id == wr_id;
}

}  // namespace testing
}  // namespace verbsim

#define VS_CONCAT_INNER_(a, b) a##b
#define VS_CONCAT_(a, b) VS_CONCAT_INNER_(a, b)

#define ASSERT_OK(expr) ASSERT_THAT((expr), ::verbsim::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::verbsim::testing::IsOk())

// ASSERT_OK_AND_ASSIGN(auto x, StatusOrExpr()); fatal failure if not OK.
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(VS_CONCAT_(vs_status_or_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(var, lhs, expr)      \
  auto var = (expr);                                    \
  ASSERT_TRUE(var.ok()) << #expr << ": " << var.status(); \
  lhs = std::move(var).value()

#endif  // VERBSIM_TESTS_MATCHERS_H_
