// Providers, devices and contexts: listing, opening, attributes, ports, GIDs.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/errors.h"
#include "core/provider.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

using ::testing::Contains;
using ::testing::Ge;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ProviderRegistryTest, UnknownProviderIsRejectedByName) {
  absl::StatusOr<std::unique_ptr<Provider>> provider = OpenProvider("nope");
  EXPECT_THAT(provider, HasErrno(ENOENT));
  EXPECT_THAT(provider, FailsMentioning("nope"));
}

TEST(ProviderRegistryTest, SimIsRegistered) {
  EXPECT_THAT(RegisteredProviders(), Contains("sim"));
}

TEST(ProviderRegistryTest, UnknownSimProfileIsRejectedByName) {
  absl::StatusOr<std::unique_ptr<Provider>> provider =
      OpenProvider("sim:no-such-profile");
  EXPECT_THAT(provider, Not(IsOk()));
  EXPECT_THAT(provider, FailsMentioning("no-such-profile"));
}

class DeviceTest : public ProviderTest {};

TEST_P(DeviceTest, ListsDevices) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> devices,
                       provider().ListDevices());
  EXPECT_GE(static_cast<int>(devices.size()), expect().min_devices);
  std::set<std::string> unique(devices.begin(), devices.end());
  EXPECT_EQ(unique.size(), devices.size()) << "device names repeat";
  for (const std::string& d : devices) EXPECT_FALSE(d.empty());
}

TEST_P(DeviceTest, OpenUnknownDeviceFailsNamingIt) {
  absl::StatusOr<std::unique_ptr<Context>> context =
      provider().Open("no_such_device9");
  EXPECT_THAT(context, Not(IsOk()));
  EXPECT_THAT(context, FailsMentioning("no_such_device9"));
}

TEST_P(DeviceTest, EveryListedDeviceOpensWithItsName) {
  for (size_t i = 0; i < devices().size(); ++i) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context,
                         OpenDevice(static_cast<int>(i)));
    EXPECT_EQ(context->device_attr().name, devices()[i]);
  }
}

TEST_P(DeviceTest, OpeningADeviceTwiceGivesIndependentContexts) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> a, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> b, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, a->AllocPd());
  // A PD in one context does not keep the other busy.
  EXPECT_OK(b->Destroy());
  EXPECT_OK(pd->Destroy());
  EXPECT_OK(a->Destroy());
}

// What kind of device it says it is: a CA (InfiniBand, RoCE) or an RNIC
// (iWARP), as struct ibv_device's node_type.
TEST_P(DeviceTest, NodeTypeSaysWhatKindOfDevice) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  EXPECT_EQ(context->device_attr().node_type, expect().node_type);
}

TEST_P(DeviceTest, AttributesAreSane) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  const DeviceAttr& a = context->device_attr();
  EXPECT_GT(a.max_qp, 0);
  EXPECT_GT(a.max_qp_wr, 0);
  EXPECT_GE(a.max_sge, 1);
  EXPECT_GE(a.max_sge_rd, 1);
  EXPECT_LE(a.max_sge_rd, a.max_sge);
  EXPECT_GT(a.max_cq, 0);
  EXPECT_GT(a.max_cqe, 0);
  EXPECT_GT(a.max_mr, 0);
  EXPECT_GT(a.max_pd, 0);
  EXPECT_GT(a.max_mr_size, 0u);
  EXPECT_GE(a.max_qp_rd_atom, 1);
  EXPECT_GE(a.max_qp_init_rd_atom, 1);
  EXPECT_GE(a.phys_port_cnt, 1);
  // The suite's default endpoint must fit the device.
  const EndpointAttr defaults;
  EXPECT_GE(a.max_inline_data,
            static_cast<int>(defaults.cap.max_inline_data));
  EXPECT_GE(a.max_qp_wr, static_cast<int>(defaults.cap.max_send_wr));
  EXPECT_GE(a.max_sge, static_cast<int>(defaults.cap.max_send_sge));
  EXPECT_GE(a.max_cqe, defaults.cq_depth);
  EXPECT_GE(a.max_qp_rd_atom, 1);
}

TEST_P(DeviceTest, AtomicCapMatchesExpectations) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  const AtomicCap cap = context->device_attr().atomic_cap;
  if (expect().has_atomics) {
    EXPECT_NE(cap, AtomicCap::kNone);
  } else {
    EXPECT_EQ(cap, AtomicCap::kNone);
  }
}

TEST_P(DeviceTest, QueryPortOne) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(PortAttr port, context->QueryPort(1));
  EXPECT_EQ(port.state, 4) << "port not ACTIVE";
  EXPECT_GT(MtuBytes(port.max_mtu), 0);
  EXPECT_GT(MtuBytes(port.active_mtu), 0);
  EXPECT_LE(static_cast<int>(port.active_mtu), static_cast<int>(port.max_mtu));
  EXPECT_GE(port.gid_tbl_len, 1);
  EXPECT_GE(port.pkey_tbl_len, expect().min_pkey_tbl_len);
}

TEST_P(DeviceTest, QueryPortRejectsBadPortNumbers) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  const int ports = context->device_attr().phys_port_cnt;
  EXPECT_THAT(context->QueryPort(0), HasErrno(EINVAL));
  EXPECT_THAT(context->QueryPort(static_cast<uint8_t>(ports + 1)),
              HasErrno(EINVAL));
  EXPECT_THAT(context->QueryPort(255), HasErrno(EINVAL));
}

TEST_P(DeviceTest, QueryGidGivesANonZeroGidPerDevice) {
  std::set<std::string> gids;
  for (size_t i = 0; i < devices().size(); ++i) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context,
                         OpenDevice(static_cast<int>(i)));
    ASSERT_OK_AND_ASSIGN(Gid gid, context->QueryGid(1, 0));
    EXPECT_NE(gid, Gid{}) << devices()[i];
    EXPECT_FALSE(GidToString(gid).empty());
    gids.insert(GidToString(gid));
    // Stable across queries.
    EXPECT_THAT(context->QueryGid(1, 0), IsOkAndHolds(gid));
  }
  EXPECT_EQ(gids.size(), devices().size()) << "two devices share a GID";
}

TEST_P(DeviceTest, QueryGidRejectsBadPortAndIndex) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(PortAttr port, context->QueryPort(1));
  const int ports = context->device_attr().phys_port_cnt;
  EXPECT_THAT(context->QueryGid(0, 0), HasErrno(EINVAL));
  EXPECT_THAT(context->QueryGid(static_cast<uint8_t>(ports + 1), 0),
              HasErrno(EINVAL));
  EXPECT_THAT(context->QueryGid(1, -1), HasErrno(EINVAL));
  EXPECT_THAT(context->QueryGid(1, port.gid_tbl_len), HasErrno(EINVAL));
}

TEST_P(DeviceTest, AllocPdGivesDistinctPds) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> a, context->AllocPd());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> b, context->AllocPd());
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(a->context(), context.get());
  EXPECT_EQ(b->context(), context.get());
}

TEST_P(DeviceTest, AsyncEventTimesOutWhenNothingHappened) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  const absl::Time start = absl::Now();
  EXPECT_THAT(context->GetAsyncEvent(absl::Milliseconds(50)),
              HasErrno(ETIMEDOUT));
  EXPECT_THAT(context->GetAsyncEvent(absl::Milliseconds(50)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_P(DeviceTest, ContextDestroyIsBusyWhilePdLives) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, context->AllocPd());
  EXPECT_THAT(context->Destroy(), HasErrno(EBUSY));
  // Unchanged and usable.
  EXPECT_OK(context->QueryPort(1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd2, context->AllocPd());
  EXPECT_OK(Destroy(pd2));
  EXPECT_OK(Destroy(pd));
  EXPECT_OK(Destroy(context));
  EXPECT_EQ(context, nullptr);
}

TEST_P(DeviceTest, ContextDestroyIsBusyWhileCqOrChannelLives) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompChannel> channel,
                       context->CreateCompChannel());
  EXPECT_THAT(context->Destroy(), HasErrno(EBUSY));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cq> cq, context->CreateCq(8, nullptr));
  EXPECT_OK(Destroy(channel));
  EXPECT_THAT(context->Destroy(), HasErrno(EBUSY));
  EXPECT_OK(Destroy(cq));
  EXPECT_OK(Destroy(context));
}

TEST_P(DeviceTest, CallsOnADestroyedContextFail) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK(context->Destroy());
  EXPECT_THAT(context->AllocPd(), HasErrno(EINVAL));
  EXPECT_THAT(context->QueryPort(1), HasErrno(EINVAL));
  EXPECT_THAT(context->QueryGid(1, 0), HasErrno(EINVAL));
  EXPECT_THAT(context->CreateCq(8, nullptr), HasErrno(EINVAL));
  EXPECT_THAT(context->CreateCompChannel(), HasErrno(EINVAL));
  EXPECT_THAT(context->GetAsyncEvent(absl::Milliseconds(1)),
              HasErrno(EINVAL));
  EXPECT_THAT(context->Destroy(), HasErrno(EINVAL));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(DeviceTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
