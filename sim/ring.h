// A double-ended queue over one growable circular buffer: push at either
// end, pop at the front, index from the front. Unlike std::deque it keeps
// its storage when emptied, so a queue that cycles through the same few
// entries (a QP's send queue) allocates nothing in steady state; std::deque
// gives an element as large as a send WQE a block of its own. And an empty
// Ring has no storage at all, where a std::deque allocates a block and its
// map as it is built: the sim's objects hold a dozen queues, most of which
// never see an entry (a QP's read responses, a CQ's channel events).
#ifndef VERBSIM_SIM_RING_H_
#define VERBSIM_SIM_RING_H_

#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace verbsim::sim {

template <typename T>
class Ring {
 public:
  template <typename R, typename V>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = V*;
    using reference = V&;
    Iter(R* ring, size_t i) : ring_(ring), i_(i) {}
    V& operator*() const { return (*ring_)[i_]; }
    V* operator->() const { return &(*ring_)[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }
    // The position from the front.
    size_t index() const { return i_; }

   private:
    R* ring_;
    size_t i_;
  };
  using iterator = Iter<Ring, T>;
  using const_iterator = Iter<const Ring, const T>;

  Ring() = default;
  Ring(const Ring&) = default;
  Ring& operator=(const Ring&) = default;
  // A moved-from ring is empty.
  Ring(Ring&& o) noexcept { *this = std::move(o); }
  Ring& operator=(Ring&& o) noexcept {
    if (this == &o) return *this;
    buf_ = std::move(o.buf_);
    head_ = o.head_;
    size_ = o.size_;
    o.buf_.clear();
    o.head_ = 0;
    o.size_ = 0;
    return *this;
  }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  const T& operator[](size_t i) const {
    return buf_[(head_ + i) & (buf_.size() - 1)];
  }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void push_back(T&& value) {
    if (size_ == buf_.size()) Grow();
    (*this)[size_] = std::move(value);
    ++size_;
  }
  void push_back(const T& value) { push_back(T(value)); }
  // The new entry becomes index 0.
  void push_front(T&& value) {
    if (size_ == buf_.size()) Grow();
    head_ = (head_ + buf_.size() - 1) & (buf_.size() - 1);
    (*this)[0] = std::move(value);
    ++size_;
  }
  void push_front(const T& value) { push_front(T(value)); }
  // Building an entry in place: the slot past the back, which holds T{}
  // (every slot outside the queue does). CommitBack() makes it the back;
  // an entry not committed must be put back to T{} (AbandonBack) before
  // the next PrepareBack or push_back.
  T& PrepareBack() {
    if (size_ == buf_.size()) Grow();
    return (*this)[size_];
  }
  void CommitBack() { ++size_; }
  void AbandonBack() { Reset((*this)[size_]); }
  // The slot is reset to T{}, so what the entry held is released now.
  void pop_front() {
    Reset(buf_[head_]);
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
  }
  void clear() {
    while (!empty()) pop_front();
  }
  // Removes the entry at `pos`, moving the ones after it forward; returns
  // the position of the entry that followed it.
  iterator erase(iterator pos) {
    const size_t i = pos.index();
    for (size_t j = i; j + 1 < size_; ++j) {
      (*this)[j] = std::move((*this)[j + 1]);
    }
    Reset((*this)[size_ - 1]);
    --size_;
    return iterator(this, i);
  }

  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, size_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

 private:
  // Puts a slot back to T{}, releasing what it held. (Rebuilt in place
  // rather than assigned from a T{}: gcc takes the move of an
  // absl::InlinedVector's inline storage out of a fresh temporary for a
  // read of uninitialized memory.)
  static void Reset(T& slot) {
    std::destroy_at(&slot);
    ::new (static_cast<void*>(&slot)) T();
  }

  // Doubles the buffer (a power of two, so an index wraps with a mask) and
  // moves the entries to its start, in order.
  void Grow() {
    std::vector<T> bigger(buf_.empty() ? 4 : buf_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    buf_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> buf_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_RING_H_
