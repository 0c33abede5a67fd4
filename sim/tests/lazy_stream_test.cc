// The fabric's random streams are seeded at their first draw: they give the
// numbers a generator seeded up front gives, and a feature that is off
// draws nothing, so its stream is never built.
#include "sim/lazy_stream.h"

#include <cstdint>
#include <random>
#include <vector>

#include "absl/time/time.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/fabric.h"
#include "sim/profile.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

TEST(LazyStream, DrawsWhatAGeneratorSeededUpFrontDraws) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{0x9e3779b97f4a7c15}}) {
    LazyStream lazy;
    lazy.seed(seed);
    std::mt19937_64 eager(seed);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(lazy(), eager()) << "seed " << seed;
  }
}

TEST(LazyStream, SeedStartsAgainAndBuildsNothingUntilADraw) {
  LazyStream s;
  EXPECT_FALSE(s.drawn());
  s.seed(42);
  EXPECT_FALSE(s.drawn());
  const uint64_t first = s();
  EXPECT_TRUE(s.drawn());
  s();
  s.seed(42);
  EXPECT_FALSE(s.drawn());
  EXPECT_EQ(s(), first);
  // Unseeded, it is std::mt19937_64 with its default seed.
  LazyStream unseeded;
  std::mt19937_64 def;
  EXPECT_EQ(unseeded(), def());
}

TEST(LazyStream, TakesTheStandardDistributions) {
  LazyStream lazy;
  lazy.seed(7);
  std::mt19937_64 eager(7);
  std::uniform_real_distribution<double> a(0, 1), b(0, 1);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a(lazy), b(eager));
}

// A fabric draws from the stream of a feature only while the feature is on:
// the jitter stream with jitter (on by default, FabricOptions::jitter), the
// fault stream once a probabilistic rule meets packets.
void WriteOnce(Provider& provider, bool* ok) {
  *ok = false;
  auto eps = CreateConnectedPair(provider);
  ASSERT_TRUE(eps.ok()) << eps.status();
  std::vector<uint8_t> src(64, 0xab), dst(64, 0);
  auto smr = *eps->client->RegMsgs(src.data(), src.size());
  auto dmr = *eps->server->RegWrite(dst.data(), dst.size());
  ASSERT_TRUE(eps->client
                  ->PostWrite(1, src.data(), src.size(), smr.get(),
                              kSendSignaled,
                              reinterpret_cast<uint64_t>(dst.data()),
                              dmr->rkey())
                  .ok());
  auto wc = eps->client->GetSendComp();
  ASSERT_TRUE(wc.ok()) << wc.status();
  EXPECT_EQ(wc->status, WcStatus::kSuccess);
  EXPECT_EQ(dst, src);
  *ok = true;
}

TEST(LazyStream, AFabricDrawsOnlyFromTheStreamsOfItsFeatures) {
  FabricOptions options;
  options.seed = 5;
  options.profile = *ProfileByName("ibta");
  FabricOptions defaults_options = options;
  options.jitter = absl::ZeroDuration();
  SimProvider quiet(options);
  bool ok = false;
  WriteOnce(quiet, &ok);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(quiet.fabric().jitter_rng().drawn());
  EXPECT_FALSE(quiet.fabric().fault_rng().drawn());

  SimProvider defaults(defaults_options);
  ASSERT_TRUE(defaults.fabric().AddFaults("drop prob=0.000001").ok());
  WriteOnce(defaults, &ok);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(defaults.fabric().jitter_rng().drawn());
  EXPECT_TRUE(defaults.fabric().fault_rng().drawn());
}

}  // namespace
}  // namespace verbsim::sim
