// What a soak receiver concludes from the sequence numbers it sees: an RC
// stream must deliver 1, 2, 3 ... exactly once and in order; a UD stream may
// lose datagrams but never repeat one (and, with no rule that delays or
// reorders UD, never reorder one: docs/reliability.md "Soak").
#ifndef VERBSIM_TOOLS_SOAK_SEQUENCE_CHECK_H_
#define VERBSIM_TOOLS_SOAK_SEQUENCE_CHECK_H_

#include <cstdint>
#include <set>
#include <vector>

namespace verbsim::soak {

enum class Arrival {
  kNext,       // the one expected (UD: anything newer than all before)
  kGap,        // newer than expected: those in between are missing so far
  kLate,       // one that was missing: a reorder
  kDuplicate,  // one already taken
  kInvalid,    // 0, or absurdly far ahead or behind
};

const char* ArrivalName(Arrival a);

// An RC stream's messages, numbered from 1.
class RcOrder {
 public:
  Arrival Take(uint64_t seq);
  // The stream's last number is `last`: how many of 1..last never came.
  uint64_t Lost(uint64_t last) const;
  uint64_t next() const { return next_; }

 private:
  uint64_t next_ = 1;
  std::set<uint64_t> missing_;  // below next_, not yet seen
};

// A UD stream's datagrams, numbered from 1: a window of the last kWindow
// numbers remembers which came.
class UdOrder {
 public:
  static constexpr uint64_t kWindow = 4096;
  UdOrder() : seen_(kWindow / 64, 0) {}
  Arrival Take(uint64_t seq);
  uint64_t highest() const { return highest_; }
  uint64_t distinct() const { return distinct_; }

 private:
  bool Seen(uint64_t seq) const;
  void Mark(uint64_t seq, bool on);

  uint64_t highest_ = 0;
  uint64_t distinct_ = 0;
  std::vector<uint64_t> seen_;  // bit seq % kWindow
};

}  // namespace verbsim::soak

#endif  // VERBSIM_TOOLS_SOAK_SEQUENCE_CHECK_H_
