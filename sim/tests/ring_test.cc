#include "sim/ring.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace verbsim::sim {
namespace {

std::vector<int> Contents(const Ring<int>& r) {
  std::vector<int> out;
  for (int v : r) out.push_back(v);
  return out;
}

TEST(RingTest, KeepsOrderAcrossWrapAndGrowth) {
  Ring<int> r;
  int next = 0;
  int first = 0;
  // Push and pop so that the head walks around the buffer, and grow it
  // while the entries wrap past its end.
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 3 + round % 7; ++i) r.push_back(next++);
    for (int i = 0; i < 2 + round % 5 && !r.empty(); ++i) {
      ASSERT_EQ(r.front(), first++);
      r.pop_front();
    }
    ASSERT_EQ(r.size(), static_cast<size_t>(next - first));
    for (size_t i = 0; i < r.size(); ++i) {
      ASSERT_EQ(r[i], first + static_cast<int>(i)) << "round " << round;
    }
    if (!r.empty()) {
      ASSERT_EQ(r.back(), next - 1);
    }
  }
  std::vector<int> want;
  for (int v = first; v < next; ++v) want.push_back(v);
  EXPECT_EQ(Contents(r), want);
}

TEST(RingTest, PopFrontReleasesWhatTheEntryHeld) {
  Ring<std::shared_ptr<std::string>> r;
  auto held = std::make_shared<std::string>("wqe");
  r.push_back(std::shared_ptr<std::string>(held));
  EXPECT_EQ(held.use_count(), 2);
  r.pop_front();
  EXPECT_EQ(held.use_count(), 1);
  EXPECT_TRUE(r.empty());
}

TEST(RingTest, AMovedFromRingIsEmptyAndUsable) {
  Ring<int> a;
  for (int i = 0; i < 9; ++i) a.push_back(int{i});
  a.pop_front();
  Ring<int> b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): documented
  EXPECT_EQ(Contents(b), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  a.push_back(42);
  EXPECT_EQ(Contents(a), std::vector<int>{42});
  b.clear();
  EXPECT_TRUE(b.empty());
  b.push_back(7);
  EXPECT_EQ(b.front(), 7);
}

TEST(RingTest, AnEntryBuiltInPlaceJoinsTheBackWhenCommitted) {
  Ring<int> r;
  // Across growth (4, 8, 16 slots) and with the head moved on.
  for (int i = 0; i < 20; ++i) {
    int& slot = r.PrepareBack();
    ASSERT_EQ(slot, 0) << "a slot outside the queue holds T{}";
    slot = i;
    r.CommitBack();
    if (i % 3 == 2) r.pop_front();
  }
  std::vector<int> want;
  for (int v = 6; v < 20; ++v) want.push_back(v);  // six popped
  EXPECT_EQ(Contents(r), want);
}

TEST(RingTest, AnAbandonedEntryIsReleasedAndNotQueued) {
  Ring<std::shared_ptr<std::string>> r;
  r.push_back(std::make_shared<std::string>("kept"));
  auto held = std::make_shared<std::string>("abandoned");
  r.PrepareBack() = held;
  EXPECT_EQ(held.use_count(), 2);
  r.AbandonBack();
  EXPECT_EQ(held.use_count(), 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(*r.back(), "kept");
  // The slot is free for the next entry.
  r.push_back(std::make_shared<std::string>("next"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(*r.back(), "next");
}

TEST(RingTest, MatchesADequeUnderPushesAtBothEndsPopsAndErases) {
  // The sim's queues moved from std::deque to Ring: a receive queue takes a
  // WQE back at its front (recv_queue.cc) and pending placements leave from
  // the middle (placement.cc). Random operations, checked against a deque
  // after each one.
  Ring<int> r;
  std::deque<int> want;
  uint64_t x = 0x9e3779b97f4a7c15u;  // xorshift64
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int value = 0;
  for (int step = 0; step < 20000; ++step) {
    const uint64_t op = next() % 8;
    if (op < 3) {
      r.push_back(int{value});
      want.push_back(value++);
    } else if (op < 5) {
      r.push_front(int{value});
      want.push_front(value++);
    } else if (op < 7) {
      if (!want.empty()) {
        r.pop_front();
        want.pop_front();
      }
    } else if (!want.empty()) {
      const size_t at = next() % want.size();
      auto it = r.begin();
      for (size_t i = 0; i < at; ++i) ++it;
      const auto after = r.erase(it);
      want.erase(want.begin() + static_cast<std::ptrdiff_t>(at));
      ASSERT_EQ(after.index(), at) << "step " << step;
      if (at < want.size()) {
        ASSERT_EQ(*after, want[at]) << "step " << step;
      } else {
        ASSERT_TRUE(after == r.end()) << "step " << step;
      }
    }
    ASSERT_EQ(r.size(), want.size()) << "step " << step;
    if (!want.empty()) {
      ASSERT_EQ(r.front(), want.front()) << "step " << step;
      ASSERT_EQ(r.back(), want.back()) << "step " << step;
    }
  }
  EXPECT_EQ(Contents(r), std::vector<int>(want.begin(), want.end()));
}

TEST(RingTest, EraseReleasesWhatTheEntryHeldAndKeepsTheRest) {
  Ring<std::shared_ptr<std::string>> r;
  auto a = std::make_shared<std::string>("a");
  auto b = std::make_shared<std::string>("b");
  auto c = std::make_shared<std::string>("c");
  r.push_back(a);
  r.push_back(b);
  r.push_front(c);  // c a b
  auto it = r.begin();
  ++it;
  it = r.erase(it);  // c b
  EXPECT_EQ(a.use_count(), 1);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(*it, b);
  EXPECT_EQ(r.front(), c);
  EXPECT_EQ(r.back(), b);
  r.clear();
  EXPECT_EQ(b.use_count(), 1);
  EXPECT_EQ(c.use_count(), 1);
}

}  // namespace
}  // namespace verbsim::sim
