#include "tools/soak/sequence_check.h"

namespace verbsim::soak {
namespace {

// A number this far ahead of the expected one is garbage, not a gap.
constexpr uint64_t kMaxJump = 1u << 20;

}  // namespace

const char* ArrivalName(Arrival a) {
  switch (a) {
    case Arrival::kNext: return "next";
    case Arrival::kGap: return "gap";
    case Arrival::kLate: return "late";
    case Arrival::kDuplicate: return "duplicate";
    case Arrival::kInvalid: return "invalid";
  }
  return "unknown";
}

Arrival RcOrder::Take(uint64_t seq) {
  if (seq == 0 || (seq > next_ && seq - next_ > kMaxJump)) {
    return Arrival::kInvalid;
  }
  if (seq == next_) {
    ++next_;
    return Arrival::kNext;
  }
  if (seq > next_) {
    for (uint64_t s = next_; s < seq; ++s) missing_.insert(s);
    next_ = seq + 1;
    return Arrival::kGap;
  }
  return missing_.erase(seq) == 1 ? Arrival::kLate : Arrival::kDuplicate;
}

uint64_t RcOrder::Lost(uint64_t last) const {
  uint64_t lost = 0;
  for (uint64_t s : missing_) lost += s <= last ? 1 : 0;
  if (last >= next_) lost += last - next_ + 1;
  return lost;
}

bool UdOrder::Seen(uint64_t seq) const {
  const uint64_t bit = seq % kWindow;
  return (seen_[bit / 64] >> (bit % 64)) & 1;
}

void UdOrder::Mark(uint64_t seq, bool on) {
  const uint64_t bit = seq % kWindow;
  const uint64_t mask = uint64_t{1} << (bit % 64);
  if (on) {
    seen_[bit / 64] |= mask;
  } else {
    seen_[bit / 64] &= ~mask;
  }
}

Arrival UdOrder::Take(uint64_t seq) {
  if (seq == 0 || (seq > highest_ && seq - highest_ > kMaxJump)) {
    return Arrival::kInvalid;
  }
  if (seq > highest_) {
    // The numbers the window moves past start unseen.
    const uint64_t from =
        seq - highest_ > kWindow ? seq - kWindow + 1 : highest_ + 1;
    for (uint64_t s = from; s < seq; ++s) Mark(s, false);
    Mark(seq, true);
    const bool next = seq == highest_ + 1;
    highest_ = seq;
    ++distinct_;
    return next ? Arrival::kNext : Arrival::kGap;
  }
  if (highest_ - seq >= kWindow) return Arrival::kInvalid;
  if (Seen(seq)) return Arrival::kDuplicate;
  Mark(seq, true);
  ++distinct_;
  return Arrival::kLate;
}

}  // namespace verbsim::soak
