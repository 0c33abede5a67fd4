// A seeded random stream whose generator is built at its first draw.
//
// The fabric keeps one stream per component (jitter, faults, placement, ACK
// coalescing; Fabric::Streams). Seeding a std::mt19937_64 fills 312 words of
// state, and most fabrics never draw from most streams: a fabric without
// jitter or fault rules draws nothing from those two, and a fuzzer input
// builds a fresh fabric every time. Seeding at the first draw gives the
// same numbers as seeding up front (the generator starts from the same seed
// either way) and costs nothing for a stream that is never drawn from.
#ifndef VERBSIM_SIM_LAZY_STREAM_H_
#define VERBSIM_SIM_LAZY_STREAM_H_

#include <cstdint>
#include <optional>
#include <random>

namespace verbsim::sim {

// Meets UniformRandomBitGenerator (std::shuffle and the std distributions
// take it), with the range of std::mt19937_64.
class LazyStream {
 public:
  using result_type = std::mt19937_64::result_type;
  static constexpr result_type min() { return std::mt19937_64::min(); }
  static constexpr result_type max() { return std::mt19937_64::max(); }

  // Starts the stream again from `seed`; the generator is built at the next
  // draw.
  void seed(uint64_t seed) {
    seed_ = seed;
    engine_.reset();
  }
  result_type operator()() {
    if (!engine_.has_value()) engine_.emplace(seed_);
    return (*engine_)();
  }
  // Whether anything was drawn since the last seed() (for tests).
  bool drawn() const { return engine_.has_value(); }

 private:
  uint64_t seed_ = std::mt19937_64::default_seed;
  std::optional<std::mt19937_64> engine_;
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_LAZY_STREAM_H_
