// The payload bytes of a packet: up to kInline bytes inside the packet
// itself, so the small messages that dominate message rates allocate
// nothing, and more on the heap. Filling a payload is one memcpy
// (Set, or ResizeForOverwrite and a copy into data()), never a byte loop
// or a zero-fill before the copy.
//
// Payloads of more than half a 4 KiB MTU (the chunks of large writes and
// reads) take a block of exactly kPooledBlock bytes from a small per-thread
// pool and give it back when they are done with it, so a stream of
// full-MTU packets does not go to malloc for each one. The pool holds at
// most kPoolMax blocks per thread and frees them when the thread ends.
// Under AddressSanitizer there is no pool: every block goes back to the
// allocator, so ASan sees each one's lifetime.
#ifndef VERBSIM_SIM_PAYLOAD_H_
#define VERBSIM_SIM_PAYLOAD_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#define VERBSIM_PAYLOAD_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VERBSIM_PAYLOAD_POOL 0
#endif
#endif
#ifndef VERBSIM_PAYLOAD_POOL
#define VERBSIM_PAYLOAD_POOL 1
#endif

namespace verbsim::sim {

constexpr size_t kPooledBlock = 4096;

namespace payload_pool {

constexpr int kPoolMax = VERBSIM_PAYLOAD_POOL ? 64 : 0;

// A thread's spare blocks. Trivially destructible, so it stays usable
// after the thread's destructors ran (Drain closes it; blocks given back
// later are freed at once).
struct Pool {
  uint8_t* blocks[kPoolMax > 0 ? kPoolMax : 1];
  int count;
  bool registered;  // whether the thread-exit drain is set up
  bool closed;      // drained at thread exit
};
inline thread_local Pool t_pool{};

// Sets up the drain at thread exit (on the first block given back).
void RegisterDrain();
// Frees the calling thread's spare blocks (run at thread exit; tests).
void Drain();
// How many spare blocks the calling thread holds (tests).
inline int Spare() { return t_pool.count; }

inline uint8_t* TakeBlock() {
  Pool& pool = t_pool;
  if (pool.count > 0) return pool.blocks[--pool.count];
  return new uint8_t[kPooledBlock];
}

inline void GiveBlock(uint8_t* block) {
  Pool& pool = t_pool;
  if (pool.count < kPoolMax && !pool.closed) {
    if (!pool.registered) RegisterDrain();
    pool.blocks[pool.count++] = block;
    return;
  }
  delete[] block;
}

}  // namespace payload_pool

class Payload {
 public:
  static constexpr size_t kInline = 32;

  Payload() = default;
  ~Payload() { Release(); }
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
  uint8_t* data() { return heap_ ? heap_ : inline_; }
  const uint8_t* data() const { return heap_ ? heap_ : inline_; }
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
    uint8_t* bigger;
    if (grown > kPooledBlock / 2 && grown <= kPooledBlock) {
      grown = kPooledBlock;
      bigger = payload_pool::TakeBlock();
    } else {
      bigger = new uint8_t[grown];
    }
    if (size_ > 0) std::memcpy(bigger, data(), size_);
    Release();
    heap_ = bigger;
    capacity_ = grown;
  }
  // Gives the heap block back (to the pool if it is a pooled one).
  void Release() {
    if (heap_ == nullptr) return;
    if (capacity_ == kPooledBlock) {
      payload_pool::GiveBlock(heap_);
    } else {
      delete[] heap_;
    }
    heap_ = nullptr;
    capacity_ = 0;
  }
  void Take(Payload& o) {
    if (o.heap_) {
      Release();
      heap_ = o.heap_;
      capacity_ = o.capacity_;
      size_ = o.size_;
      o.heap_ = nullptr;
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
  uint8_t* heap_ = nullptr;  // owned; kPooledBlock bytes are a pool's
  uint8_t inline_[kInline] = {};
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_PAYLOAD_H_
