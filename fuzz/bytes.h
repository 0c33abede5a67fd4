// Reading a fuzz input as a stream of small integers, and writing one (for
// the seed corpus generator). Reading past the end yields zeros, so every
// byte string is a valid program: a short input is just a short program.
#ifndef VERBSIM_FUZZ_BYTES_H_
#define VERBSIM_FUZZ_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace verbsim::fuzz {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  size_t consumed() const { return pos_; }

  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  // Little-endian, so a writer and a reader agree without thinking.
  // The low byte first, as ByteWriter writes it. (Two reads in one
  // expression would be unsequenced: compilers differ in which comes first.)
  uint16_t U16() {
    const uint16_t lo = U8();
    return static_cast<uint16_t>(lo | (U8() << 8));
  }
  uint32_t U32() {
    uint32_t lo = U16();
    return lo | (static_cast<uint32_t>(U16()) << 16);
  }
  uint64_t U64() {
    uint64_t lo = U32();
    return lo | (static_cast<uint64_t>(U32()) << 32);
  }
  bool Bool() { return (U8() & 1) != 0; }
  // A value in [0, n); 0 when n is 0. One byte when n <= 256, else two.
  uint32_t Below(uint32_t n) {
    if (n == 0) return 0;
    if (n <= 256) return U8() % n;
    return U16() % n;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

class ByteWriter {
 public:
  ByteWriter& U8(uint8_t v) {
    bytes_.push_back(v);
    return *this;
  }
  ByteWriter& U16(uint16_t v) { return U8(v & 0xff).U8(v >> 8); }
  ByteWriter& U32(uint32_t v) {
    return U16(static_cast<uint16_t>(v & 0xffff))
        .U16(static_cast<uint16_t>(v >> 16));
  }
  ByteWriter& U64(uint64_t v) {
    return U32(static_cast<uint32_t>(v)).U32(static_cast<uint32_t>(v >> 32));
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace verbsim::fuzz

#endif  // VERBSIM_FUZZ_BYTES_H_
