// The fabric's random streams: a fabric made with a seed and one reseeded
// to it draw the same numbers from every stream, other seeds draw others,
// and what one stream draws moves no other stream.
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "sim/fabric.h"
#include "sim/profile.h"

namespace verbsim::sim {
namespace {

FabricOptions WithSeed(uint64_t seed) {
  FabricOptions options;
  options.seed = seed;
  options.profile = *ProfileByName("ibta");
  return options;
}

// The first `n` draws of each of the fabric's streams, in turn.
std::vector<uint64_t> Draws(Fabric& fabric, int n) {
  std::vector<uint64_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(fabric.jitter_rng()());
    out.push_back(fabric.fault_rng()());
    out.push_back(fabric.placement_rng()());
    out.push_back(fabric.ack_rng()());
    out.push_back(fabric.memory_rng()());
  }
  return out;
}

TEST(RandomStreams, AFabricMadeWithASeedDrawsAsOneReseededToIt) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{42},
                        uint64_t{0xfedcba9876543210}}) {
    Fabric made(WithSeed(seed));
    Fabric reseeded(WithSeed(seed + 1));
    Draws(reseeded, 3);  // (moved on before the reseed)
    reseeded.Reseed(seed);
    EXPECT_EQ(Draws(made, 400), Draws(reseeded, 400)) << "seed " << seed;
  }
}

TEST(RandomStreams, OtherSeedsDrawOtherNumbers) {
  Fabric a(WithSeed(7));
  Fabric b(WithSeed(8));
  const std::vector<uint64_t> da = Draws(a, 50), db = Draws(b, 50);
  int same = 0;
  for (size_t i = 0; i < da.size(); ++i) same += da[i] == db[i];
  EXPECT_EQ(same, 0);
}

TEST(RandomStreams, EachStreamIsSeededOnItsOwn) {
  // Five streams of one fabric start at five different numbers, and a
  // stream's numbers do not depend on how much another stream drew.
  Fabric a(WithSeed(3));
  Fabric b(WithSeed(3));
  const std::vector<uint64_t> first = Draws(a, 1);
  for (size_t i = 0; i < first.size(); ++i) {
    for (size_t j = i + 1; j < first.size(); ++j) {
      EXPECT_NE(first[i], first[j]) << "streams " << i << " and " << j;
    }
  }
  for (int i = 0; i < 1000; ++i) b.fault_rng()();
  EXPECT_EQ(b.jitter_rng()(), first[0]);
  EXPECT_EQ(b.placement_rng()(), first[2]);
  EXPECT_EQ(b.ack_rng()(), first[3]);
  EXPECT_EQ(b.memory_rng()(), first[4]);
}

}  // namespace
}  // namespace verbsim::sim
