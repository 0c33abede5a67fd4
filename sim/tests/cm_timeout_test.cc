// The sim provider's connection setup gives a request nobody accepts up
// after the CM's modelled tries (core/cm_timing.h), as the drop-in
// librdmacm does: WaitConnected reports ETIMEDOUT from the CM, not the
// caller's own timeout, and a later Accept ignores the request.
#include <cstdlib>

#include "absl/time/time.h"
#include "core/cm_timing.h"
#include "core/errors.h"
#include "core/provider.h"
#include "gtest/gtest.h"

namespace verbsim {
namespace {

// Short CM times: a REQ try of 2 * 1 + 4 ms, one retry after an MRA of
// 16 + 2 ms: 24 ms in all.
class ShortCmTimes : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv(env::kCmResponseTimeout, "10", 1);
    setenv(env::kCmPacketLifetime, "8", 1);
    setenv(env::kCmRetries, "1", 1);
    setenv(env::kCmMraTimeout, "12", 1);
  }
  void TearDown() override {
    for (const char* v : {env::kCmResponseTimeout, env::kCmPacketLifetime,
                          env::kCmRetries, env::kCmMraTimeout}) {
      unsetenv(v);
    }
  }
};

TEST_F(ShortCmTimes, ARequestNobodyAcceptsExpiresInTheCm) {
  absl::StatusOr<std::unique_ptr<Provider>> p = OpenProvider("sim");
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<std::string> address = (*p)->LoopbackAddress();
  ASSERT_TRUE(address.ok());
  absl::StatusOr<std::unique_ptr<Listener>> listener =
      (*p)->Listen(*address, EndpointAttr{});
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<std::unique_ptr<Endpoint>> client =
      (*p)->Connect(*address, EndpointAttr{});
  ASSERT_TRUE(client.ok()) << client.status();
  // Far longer than the CM's 24 ms: the answer is the CM's.
  const absl::Status waited = (*client)->WaitConnected(absl::Seconds(60));
  EXPECT_EQ(ErrnoOf(waited), ETIMEDOUT) << waited;
  EXPECT_NE(waited.message().find("the CM gave it up after 2 tries (24 ms)"),
            std::string::npos)
      << waited;
  // The late Accept finds no request to answer.
  absl::StatusOr<std::unique_ptr<Endpoint>> server =
      (*listener)->Accept(absl::Milliseconds(50));
  EXPECT_EQ(ErrnoOf(server.status()), ETIMEDOUT) << server.status();
  EXPECT_NE(server.status().message().find("no connection request"),
            std::string::npos);
  // The client's endpoint is still there to be dropped.
  client->reset();
}

TEST_F(ShortCmTimes, ARequestAcceptedInTimeConnects) {
  // Accepted before its time is up: the model changes nothing.
  setenv(env::kCmResponseTimeout, "20", 1);
  absl::StatusOr<std::unique_ptr<Provider>> p = OpenProvider("sim");
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<EndpointPair> pair = CreateConnectedPair(**p);
  ASSERT_TRUE(pair.ok()) << pair.status();
}

TEST_F(ShortCmTimes, ABadValueFailsTheProviderNamingIt) {
  setenv(env::kCmRetries, "many", 1);
  absl::StatusOr<std::unique_ptr<Provider>> p = OpenProvider("sim");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(ErrnoOf(p.status()), EINVAL);
  EXPECT_NE(p.status().message().find("VERBSIM_CM_RETRIES='many'"),
            std::string::npos)
      << p.status();
}

}  // namespace
}  // namespace verbsim
