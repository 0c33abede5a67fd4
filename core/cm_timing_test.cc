#include "core/cm_timing.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace verbsim {
namespace {

void UnsetAll() {
  for (const char* v : {env::kCmResponseTimeout, env::kCmRetries,
                        env::kCmMraTimeout, env::kCmPacketLifetime}) {
    unsetenv(v);
  }
}

TEST(CmTiming, DefaultsAreTheKernelsConstants) {
  UnsetAll();
  std::string error;
  const CmTiming t = CmTimingFromEnv(&error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(t.response_timeout, 20);  // CMA_CM_RESPONSE_TIMEOUT
  EXPECT_EQ(t.max_retries, 15);       // CMA_MAX_CM_RETRIES
  EXPECT_EQ(t.mra_timeout, 24);       // CM_MRA_SETTING
  EXPECT_EQ(t.packet_life_time, 16);  // CMA_IBOE_PACKET_LIFETIME
}

TEST(CmTiming, TriesFollowTheKernelsFormulas) {
  const CmTiming t;
  EXPECT_EQ(IbaTimeMs(20), 4096);
  EXPECT_EQ(IbaTimeMs(3), 1);  // below 2^8 * 4.096 us: one millisecond
  // REQ on RoCE: 2 * 256 ms + 4096 ms.
  EXPECT_EQ(ReqTryMs(t), 4608);
  EXPECT_EQ(RepTryMs(t.response_timeout), 4096);
  EXPECT_EQ(SidrTryMs(t), 4096);
  // After an MRA of 24: 65536 ms + the ACK timeout (life time 17: 512 ms).
  EXPECT_EQ(AfterMraTryMs(24, 16), 66048);
  EXPECT_EQ(UnansweredReqMs(t), 4608 + 15 * 66048);
}

TEST(CmTiming, VariablesReplaceTheDefaults) {
  UnsetAll();
  setenv(env::kCmResponseTimeout, "12", 1);
  setenv(env::kCmRetries, "0", 1);
  setenv(env::kCmMraTimeout, "14", 1);
  setenv(env::kCmPacketLifetime, "8", 1);
  std::string error;
  const CmTiming t = CmTimingFromEnv(&error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(ReqTryMs(t), 2 * 1 + 16);
  EXPECT_EQ(t.max_retries, 0);
  EXPECT_EQ(UnansweredReqMs(t), ReqTryMs(t));
  UnsetAll();
}

TEST(CmTiming, ABadValueIsAnErrorNamingItAndKeepsTheDefaults) {
  UnsetAll();
  setenv(env::kCmRetries, "16", 1);
  std::string error;
  const CmTiming t = CmTimingFromEnv(&error);
  EXPECT_EQ(error, "VERBSIM_CM_RETRIES='16' is not a number in 0..15");
  EXPECT_EQ(t.max_retries, 15);
  UnsetAll();
  setenv(env::kCmResponseTimeout, "soon", 1);
  CmTimingFromEnv(&error);
  EXPECT_EQ(error, "VERBSIM_CM_RESPONSE_TIMEOUT='soon' is not a number in 0..31");
  UnsetAll();
}

}  // namespace
}  // namespace verbsim
