// A gtest fixture for a suite that runs on whichever provider the
// environment names, as verbsim's own conformance suite does: the sim by
// default, `VERBSIM_PROVIDER=sim:rxe` for the rxe profile,
// `VERBSIM_PROVIDER=hw` for a real device (the cases skip, saying why, when
// there is none). Each case gets the provider and a connected RC pair.
//
//   class MyTest : public verbsim::testing::ProviderTest {};
//   TEST_F(MyTest, Send) {
//     if (sim::Fabric* f = fabric()) ASSERT_THAT(f->AddFaults("drop nth=1"), IsOk());
//     ... client().PostSend(...) ...
//   }
#ifndef VERBSIM_TESTS_PROVIDER_FIXTURE_H_
#define VERBSIM_TESTS_PROVIDER_FIXTURE_H_

#include <memory>
#include <string>
#include <utility>

#include "core/endpoint.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/sim_provider.h"

namespace verbsim {
namespace testing {

class ProviderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string spec = ProviderSpecFromEnv();
    absl::StatusOr<std::unique_ptr<Provider>> provider = OpenProvider(spec);
    ASSERT_TRUE(provider.ok()) << "VERBSIM_PROVIDER=" << spec << ": "
                               << provider.status();
    provider_ = *std::move(provider);
    absl::StatusOr<std::vector<std::string>> devices =
        provider_->ListDevices();
    if (!devices.ok() || devices->empty()) {
      GTEST_SKIP() << spec << " has no RDMA device";
    }
    absl::StatusOr<EndpointPair> pair = CreateConnectedPair(*provider_);
    ASSERT_TRUE(pair.ok()) << spec << ": a connected pair: " << pair.status();
    pair_ = *std::move(pair);
  }

  Provider& provider() { return *provider_; }
  Endpoint& client() { return *pair_.client; }
  Endpoint& server() { return *pair_.server; }
  // The simulated fabric (fault rules, virtual time, counters, the trace),
  // or null on a real device.
  sim::Fabric* fabric() {
    auto* sim = dynamic_cast<sim::SimProvider*>(provider_.get());
    return sim == nullptr ? nullptr : &sim->fabric();
  }

 private:
  std::unique_ptr<Provider> provider_;
  EndpointPair pair_;
};

}  // namespace testing
}  // namespace verbsim

#endif  // VERBSIM_TESTS_PROVIDER_FIXTURE_H_
