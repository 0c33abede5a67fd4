// The sim nodes' IPv4 addresses (sim/addresses.h): inside 127.0.0.0/8 by
// default and whatever the base, a base that leaves that range refused
// wherever it comes from (spec option, environment, FabricOptions), and
// nothing opens on a fabric with refused addresses.
#include "core/environment.h"
#include "sim/addresses.h"

#include <cstdlib>
#include <string>

#include "core/errors.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

// The status's errno is EINVAL and its message names every one of `parts`.
void ExpectEinvalNaming(const absl::Status& status,
                        std::initializer_list<const char*> parts) {
  EXPECT_EQ(ErrnoOf(status), EINVAL) << status;
  for (const char* part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos)
        << "'" << part << "' not in: " << status;
  }
}

TEST(Addresses, ParseAndFormatIpv4) {
  absl::StatusOr<uint32_t> ip = ParseIpv4("127.0.1.1");
  ASSERT_TRUE(ip.ok()) << ip.status();
  EXPECT_EQ(*ip, kDefaultAddressBase);
  EXPECT_EQ(Ipv4ToString(*ip), "127.0.1.1");
  for (const char* bad : {"", "127.0.1", "127.0.1.1.1", "127.0.1.256",
                          "127.0.1.-1", "127.0.1.x", "127..1.1", " 127.0.1.1",
                          "127.0.1.0001"}) {
    absl::StatusOr<uint32_t> parsed = ParseIpv4(bad);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "'";
    EXPECT_NE(parsed.status().message().find(absl::StrCat("'", bad, "'")),
              std::string::npos)
        << parsed.status();
  }
}

TEST(Addresses, OnlyLoopbackBasesPass) {
  EXPECT_TRUE(CheckAddressBase(kDefaultAddressBase, 2).ok());
  EXPECT_TRUE(CheckAddressBase(0x7f000001, 4096).ok());   // 127.0.0.1
  EXPECT_TRUE(CheckAddressBase(0x7ffffffd, 2).ok());      // ..254
  ExpectEinvalNaming(CheckAddressBase(0x0a000001, 2),     // 10.0.0.1
                     {"10.0.0.1", "127.0.0.1..127.255.255.254"});
  ExpectEinvalNaming(CheckAddressBase(0xc0a80001, 1),     // 192.168.0.1
                     {"192.168.0.1", "loopback"});
  ExpectEinvalNaming(CheckAddressBase(0x7f000000, 1),     // 127.0.0.0
                     {"127.0.0.0"});
  // The last node would be the broadcast 127.255.255.255, or past /8.
  ExpectEinvalNaming(CheckAddressBase(0x7ffffffe, 2), {"127.255.255.254"});
  ExpectEinvalNaming(CheckAddressBase(0x7f000001, 0), {"0 node"});
}

TEST(Addresses, NodeOfIpv4InvertsNodeIpv4) {
  for (int node : {0, 1, 254, 255, 4095}) {
    EXPECT_EQ(NodeOfIpv4(kDefaultAddressBase,
                         NodeIpv4(kDefaultAddressBase, node)),
              node);
  }
  EXPECT_EQ(NodeOfIpv4(kDefaultAddressBase, 0x7f000001), -1);  // below
  EXPECT_EQ(NodeOfIpv4(kDefaultAddressBase, 0x0a000101), -1);  // not 127/8
}

TEST(Addresses, DefaultNodesAreLoopbackAndTheirGidsMapThem) {
  auto provider = OpenProvider("sim:nodes=3");
  ASSERT_TRUE(provider.ok()) << provider.status();
  for (int i = 0; i < 3; ++i) {
    auto ctx = (*provider)->Open(absl::StrCat("sim", i));
    ASSERT_TRUE(ctx.ok()) << ctx.status();
    auto gid = (*ctx)->QueryGid(1, 0);
    ASSERT_TRUE(gid.ok()) << gid.status();
    EXPECT_EQ(GidToString(*gid), absl::StrCat("::ffff:127.0.1.", i + 1));
  }
}

TEST(Addresses, SpecOptionMovesTheBase) {
  auto provider = OpenProvider("sim:rxe,addr_base=127.9.0.10");
  ASSERT_TRUE(provider.ok()) << provider.status();
  auto ctx = (*provider)->Open("sim1");
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  auto gid = (*ctx)->QueryGid(1, 0);
  ASSERT_TRUE(gid.ok()) << gid.status();
  EXPECT_EQ(GidToString(*gid), "::ffff:127.9.0.11");
}

TEST(Addresses, NonLoopbackSpecOptionIsRefused) {
  ExpectEinvalNaming(OpenProvider("sim:addr_base=10.0.0.1").status(),
                     {"10.0.0.1", "loopback"});
  ExpectEinvalNaming(OpenProvider("sim:addr_base=172.16.0.1").status(),
                     {"172.16.0.1", "loopback"});
  ExpectEinvalNaming(OpenProvider("sim:addr_base=localhost").status(),
                     {"addr_base=localhost", "not an IPv4 address"});
  // A leading zero (octal to inet_aton, decimal to some) is refused.
  ExpectEinvalNaming(OpenProvider("sim:addr_base=127.0.1.01").status(),
                     {"addr_base=127.0.1.01", "not an IPv4 address"});
  // In range for 2 nodes, out of it for 3.
  EXPECT_TRUE(OpenProvider("sim:addr_base=127.255.255.252").ok());
  ExpectEinvalNaming(
      OpenProvider("sim:addr_base=127.255.255.253,nodes=3").status(),
      {"127.255.255.253", "3 node"});
}

TEST(Addresses, EnvironmentMovesTheBaseAndTheSpecWins) {
  setenv(env::kAddressBase, "127.3.0.1", 1);
  auto from_env = OpenProvider("sim");
  auto spec_wins = OpenProvider("sim:addr_base=127.4.0.1");
  setenv(env::kAddressBase, "8.8.8.8", 1);
  auto refused = OpenProvider("sim");
  setenv(env::kAddressBase, "not-an-address", 1);
  auto garbled = OpenProvider("sim");
  unsetenv(env::kAddressBase);
  ASSERT_TRUE(from_env.ok()) << from_env.status();
  ASSERT_TRUE(spec_wins.ok()) << spec_wins.status();
  auto gid = (*(*from_env)->Open("sim0"))->QueryGid(1, 0);
  ASSERT_TRUE(gid.ok());
  EXPECT_EQ(GidToString(*gid), "::ffff:127.3.0.1");
  gid = (*(*spec_wins)->Open("sim0"))->QueryGid(1, 0);
  ASSERT_TRUE(gid.ok());
  EXPECT_EQ(GidToString(*gid), "::ffff:127.4.0.1");
  ExpectEinvalNaming(refused.status(), {"8.8.8.8", "loopback"});
  ExpectEinvalNaming(garbled.status(),
                     {"VERBSIM_ADDR_BASE", "'not-an-address'"});
}

TEST(Addresses, AFabricWithRefusedAddressesOpensNothing) {
  FabricOptions fo;
  fo.address_base = 0x0a000001;  // 10.0.0.1
  SimProvider provider(fo);
  ExpectEinvalNaming(provider.fabric().address_status(), {"10.0.0.1"});
  ExpectEinvalNaming(provider.Open("sim0").status(), {"10.0.0.1", "loopback"});
  ExpectEinvalNaming(provider.Listen("sim0:7000", {}).status(), {"10.0.0.1"});
  ExpectEinvalNaming(provider.Connect("sim0:7000", {}).status(), {"10.0.0.1"});
  ExpectEinvalNaming(provider.fabric().StartUdp(), {"10.0.0.1"});
}

}  // namespace
}  // namespace verbsim::sim
