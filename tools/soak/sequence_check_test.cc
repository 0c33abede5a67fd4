#include "tools/soak/sequence_check.h"

#include "gtest/gtest.h"

namespace verbsim::soak {
namespace {

TEST(RcOrder, InOrderStreamLosesNothing) {
  RcOrder o;
  for (uint64_t s = 1; s <= 100; ++s) EXPECT_EQ(o.Take(s), Arrival::kNext);
  EXPECT_EQ(o.Lost(100), 0u);
  // A stream that said it sent 102 lost the last two.
  EXPECT_EQ(o.Lost(102), 2u);
}

TEST(RcOrder, GapThenLateIsAReorderNotALoss) {
  RcOrder o;
  EXPECT_EQ(o.Take(1), Arrival::kNext);
  EXPECT_EQ(o.Take(3), Arrival::kGap);
  EXPECT_EQ(o.Lost(3), 1u);
  EXPECT_EQ(o.Take(2), Arrival::kLate);
  EXPECT_EQ(o.Lost(3), 0u);
  EXPECT_EQ(o.Take(4), Arrival::kNext);
}

TEST(RcOrder, RepeatsAndZeroAreCaught) {
  RcOrder o;
  EXPECT_EQ(o.Take(0), Arrival::kInvalid);
  EXPECT_EQ(o.Take(1), Arrival::kNext);
  EXPECT_EQ(o.Take(1), Arrival::kDuplicate);
  EXPECT_EQ(o.Take(3), Arrival::kGap);
  EXPECT_EQ(o.Take(3), Arrival::kDuplicate);
  EXPECT_EQ(o.Take(uint64_t{1} << 40), Arrival::kInvalid);
  EXPECT_EQ(o.Lost(3), 1u);
}

TEST(UdOrder, LossesAreGapsAndRepeatsAreDuplicates) {
  UdOrder o;
  EXPECT_EQ(o.Take(1), Arrival::kNext);
  EXPECT_EQ(o.Take(2), Arrival::kNext);
  EXPECT_EQ(o.Take(5), Arrival::kGap);  // 3 and 4 lost so far
  EXPECT_EQ(o.Take(5), Arrival::kDuplicate);
  EXPECT_EQ(o.Take(2), Arrival::kDuplicate);
  EXPECT_EQ(o.Take(4), Arrival::kLate);
  EXPECT_EQ(o.Take(4), Arrival::kDuplicate);
  EXPECT_EQ(o.distinct(), 4u);
  EXPECT_EQ(o.highest(), 5u);
}

TEST(UdOrder, TheWindowForgetsOldNumbersAndReusesItsBits) {
  UdOrder o;
  for (uint64_t s = 1; s <= 3 * UdOrder::kWindow; ++s) {
    ASSERT_EQ(o.Take(s), Arrival::kNext) << s;
  }
  // A bit reused for a newer number does not make it look seen.
  const uint64_t h = o.highest();
  EXPECT_EQ(o.Take(h + 2), Arrival::kGap);
  EXPECT_EQ(o.Take(h + 1), Arrival::kLate);
  // Older than the window: no verdict but a wrong one would be possible.
  EXPECT_EQ(o.Take(1), Arrival::kInvalid);
  // A jump past the whole window clears it.
  EXPECT_EQ(o.Take(h + 2 + 2 * UdOrder::kWindow), Arrival::kGap);
  EXPECT_EQ(o.Take(h + 2 + UdOrder::kWindow + 5), Arrival::kLate);
}

}  // namespace
}  // namespace verbsim::soak
