// The payload bytes of a packet: up to kInline bytes inside the packet
// itself, so the small messages that dominate message rates allocate
// nothing, and more on the heap. Filling a payload is one memcpy
// (Set, or ResizeForOverwrite and a copy into data()), never a byte loop
// or a zero-fill before the copy.
#ifndef VERBSIM_SIM_PAYLOAD_H_
#define VERBSIM_SIM_PAYLOAD_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace verbsim::sim {

class Payload {
 public:
  static constexpr size_t kInline = 32;

  Payload() = default;
  Payload(const Payload& o) { Set(o.data(), o.size()); }
  Payload& operator=(const Payload& o) {
    if (this != &o) Set(o.data(), o.size());
    return *this;
  }
  // A moved-from payload is empty.
  Payload(Payload&& o) noexcept { Take(o); }
  Payload& operator=(Payload&& o) noexcept {
    if (this != &o) Take(o);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint8_t* data() { return heap_ ? heap_.get() : inline_; }
  const uint8_t* data() const { return heap_ ? heap_.get() : inline_; }
  uint8_t* begin() { return data(); }
  uint8_t* end() { return data() + size_; }
  const uint8_t* begin() const { return data(); }
  const uint8_t* end() const { return data() + size_; }
  uint8_t operator[](size_t i) const { return data()[i]; }

  void clear() { size_ = 0; }
  // `n` bytes whose values are left unspecified (the caller writes them).
  void ResizeForOverwrite(size_t n) {
    Reserve(n);
    size_ = n;
  }
  // `n` bytes; those past the old size are zero.
  void resize(size_t n) {
    const size_t old = size_;
    ResizeForOverwrite(n);
    if (n > old) std::memset(data() + old, 0, n - old);
  }
  // The `n` bytes at `src`.
  void Set(const uint8_t* src, size_t n) {
    ResizeForOverwrite(n);
    if (n > 0) std::memcpy(data(), src, n);
  }
  void push_back(uint8_t b) {
    Reserve(size_ + 1);
    data()[size_++] = b;
  }

  friend bool operator==(const Payload& a, const Payload& b) {
    return a.size_ == b.size_ &&
           (a.size_ == 0 || std::memcmp(a.data(), b.data(), a.size_) == 0);
  }
  friend bool operator!=(const Payload& a, const Payload& b) {
    return !(a == b);
  }

 private:
  // Room for `n` bytes, keeping the first size_.
  void Reserve(size_t n) {
    const size_t room = heap_ ? capacity_ : kInline;
    if (n <= room) return;
    size_t grown = room * 2;
    if (grown < n) grown = n;
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[grown]);
    if (size_ > 0) std::memcpy(bigger.get(), data(), size_);
    heap_ = std::move(bigger);
    capacity_ = grown;
  }
  void Take(Payload& o) {
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      capacity_ = o.capacity_;
      size_ = o.size_;
    } else if (heap_) {
      Set(o.inline_, o.size_);  // into this one's heap storage
    } else {
      // The whole inline array: a fixed-size copy is two moves, cheaper
      // than a call for the `o.size_` bytes that matter.
      std::memcpy(inline_, o.inline_, kInline);
      size_ = o.size_;
    }
    o.size_ = 0;
    o.capacity_ = 0;
  }

  size_t size_ = 0;
  size_t capacity_ = 0;  // of heap_
  std::unique_ptr<uint8_t[]> heap_;
  uint8_t inline_[kInline] = {};
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_PAYLOAD_H_
