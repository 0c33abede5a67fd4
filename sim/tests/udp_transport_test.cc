// The UDP transport's own behaviour (docs/udp-transport.md): junk, corrupt
// and foreign datagrams are counted and dropped, a datagram carries packets
// back to back, local nodes talk in real
// time, the ACK timer runs in real time, and bad options are refused.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "sim/tests/two_process.h"
#include "sim/sim_provider.h"
#include "sim/udp_transport.h"
#include "sim/wire.h"

namespace verbsim::sim {
namespace {

constexpr uint32_t kBase = kDefaultAddressBase;  // the fabrics' default

int BoundSocket(int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return -1;
  sockaddr_in b = LoopbackAddress(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&b), sizeof(b)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Node 0 of a two-node UDP fabric in this process, to which the tests send
// datagrams from plain sockets, and an ACK from node 1 to it.
struct Node0 {
  int base = 0;
  std::unique_ptr<Provider> provider;
  Fabric* fabric = nullptr;
  sockaddr_in address{};
};

absl::StatusOr<Node0> OpenNode0() {
  Node0 n;
  n.base = FreeBasePort();
  if (n.base == 0) return absl::UnavailableError("no free base port");
  auto provider =
      OpenProvider(absl::StrCat("sim:nodes=2,udp=", n.base, ",local=0"));
  if (!provider.ok()) return provider.status();
  n.provider = *std::move(provider);
  n.fabric = &AsSimProvider(n.provider.get())->fabric();
  n.address = LoopbackAddress(n.base);
  return n;
}

Packet AckFromNode1() {
  Packet p;
  p.src_node = 1;
  p.dst_node = 0;
  p.opcode = RcOp::kAcknowledge;
  return p;
}

// Datagrams that are not RoCEv2 packets of the sim are dropped and counted;
// a corrupted one counts as an ICRC error of the node. One process: node 0
// is local, the junk comes from a plain socket.
TEST(UdpTransport, JunkAndCorruptDatagramsAreCountedNotFatal) {
  absl::StatusOr<Node0> n = OpenNode0();
  ASSERT_TRUE(n.ok()) << n.status();
  Fabric& fabric = *n->fabric;
  const int base = n->base;
  // From node 1's port (node 1 lives in no process here), so the datagrams
  // pass the check of who sent them.
  const int fd = BoundSocket(base + 1);
  ASSERT_GE(fd, 0);
  sockaddr_in a = n->address;
  const uint8_t junk[5] = {1, 2, 3, 4, 5};
  sendto(fd, junk, sizeof(junk), 0, reinterpret_cast<sockaddr*>(&a),
         sizeof(a));
  std::vector<uint8_t> bad = EncodeRoceV2Ip(AckFromNode1(), 1, kBase);
  bad[bad.size() - 6] ^= 0x40;  // inside the AETH: only the ICRC sees it
  sendto(fd, bad.data(), bad.size(), 0, reinterpret_cast<sockaddr*>(&a),
         sizeof(a));
  close(fd);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline &&
         (fabric.udp_malformed() < 1 || fabric.GetNodeStats(0)->icrc_errors < 1)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(fabric.udp_malformed(), 1u);
  EXPECT_EQ(fabric.GetNodeStats(0)->icrc_errors, 1u);
  EXPECT_EQ(fabric.udp_foreign(), 0u);
}

// Only the fabric's nodes send to it: a valid packet from a port that is no
// node's, and one whose source is another node than its port's, are
// dropped and counted, and reach nobody.
TEST(UdpTransport, DatagramsFromOutsideTheFabricAreDroppedAndCounted) {
  absl::StatusOr<Node0> n = OpenNode0();
  ASSERT_TRUE(n.ok()) << n.status();
  Fabric& fabric = *n->fabric;
  const int base = n->base;
  sockaddr_in a = n->address;
  Packet p = AckFromNode1();
  const std::vector<uint8_t> ack = EncodeRoceV2Ip(p, 1, kBase);
  const int stranger = socket(AF_INET, SOCK_DGRAM, 0);  // an ephemeral port
  ASSERT_GE(stranger, 0);
  sendto(stranger, ack.data(), ack.size(), 0, reinterpret_cast<sockaddr*>(&a),
         sizeof(a));
  close(stranger);
  p.src_node = 0;  // node 0's address, from node 1's port
  const std::vector<uint8_t> posing = EncodeRoceV2Ip(p, 1, kBase);
  const int node1 = BoundSocket(base + 1);
  ASSERT_GE(node1, 0);
  sendto(node1, posing.data(), posing.size(), 0,
         reinterpret_cast<sockaddr*>(&a), sizeof(a));
  close(node1);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline && fabric.udp_foreign() < 2) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(fabric.udp_foreign(), 2u);
  EXPECT_EQ(fabric.udp_malformed(), 0u);
  EXPECT_EQ(fabric.GetNodeStats(0)->packets_received, 0u);
}

// A datagram may carry several packets back to back (a sender batches the
// packets of a message): each is checked on its own; a rest that is no
// packet is counted once as malformed, after the packets before it. The
// packets carry a flipped AETH bit, so that each one checked is one ICRC
// error of node 0.
TEST(UdpTransport, ADatagramCarriesPacketsBackToBack) {
  absl::StatusOr<Node0> n = OpenNode0();
  ASSERT_TRUE(n.ok()) << n.status();
  Fabric& fabric = *n->fabric;
  sockaddr_in a = n->address;
  std::vector<uint8_t> bad = EncodeRoceV2Ip(AckFromNode1(), 1, kBase);
  bad[bad.size() - 6] ^= 0x40;
  std::vector<uint8_t> two = bad;
  two.insert(two.end(), bad.begin(), bad.end());
  std::vector<uint8_t> cut = bad;
  cut.insert(cut.end(), {0x45, 0, 0, 3});  // a header too short to be one
  const int node1 = BoundSocket(n->base + 1);
  ASSERT_GE(node1, 0);
  sendto(node1, two.data(), two.size(), 0, reinterpret_cast<sockaddr*>(&a),
         sizeof(a));
  sendto(node1, cut.data(), cut.size(), 0, reinterpret_cast<sockaddr*>(&a),
         sizeof(a));
  close(node1);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline &&
         (fabric.GetNodeStats(0)->icrc_errors < 3 ||
          fabric.udp_malformed() < 1)) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(fabric.GetNodeStats(0)->icrc_errors, 3u);
  EXPECT_EQ(fabric.udp_malformed(), 1u);
  EXPECT_EQ(fabric.udp_foreign(), 0u);
}

// Two nodes of one process on the UDP transport (node 2 is elsewhere): their
// packets go through the event queue, in real time, driven by the progress
// thread; the connection setup of the provider works between them.
TEST(UdpTransport, LocalNodesTalkInRealTime) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  auto provider =
      OpenProvider(absl::StrCat("sim:nodes=3,udp=", base, ",local=0+1"));
  ASSERT_TRUE(provider.ok()) << provider.status();
  auto devices = (*provider)->ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<std::string>{"sim0", "sim1"}));
  auto eps = CreateConnectedPair(**provider, EndpointAttr{});
  ASSERT_TRUE(eps.ok()) << eps.status();
  Endpoint& c = *eps->client;
  Endpoint& s = *eps->server;
  std::vector<uint8_t> cbuf(4096), sbuf(4096);
  auto cmr = c.RegMsgs(cbuf.data(), cbuf.size());
  auto smr = s.RegMsgs(sbuf.data(), sbuf.size());
  ASSERT_TRUE(cmr.ok() && smr.ok());
  Fill(cbuf.data(), 3000, 4);
  ASSERT_TRUE(s.PostRecv(1, sbuf.data(), 4096, smr->get()).ok());
  Fabric& fabric = AsSimProvider(provider->get())->fabric();
  const absl::Duration t0 = fabric.Now();
  ASSERT_TRUE(c.PostSend(2, cbuf.data(), 3000, cmr->get(), kSendSignaled).ok());
  auto rc = s.GetRecvComp(kComp);
  ASSERT_TRUE(rc.ok()) << rc.status();
  EXPECT_EQ(rc->status, WcStatus::kSuccess);
  EXPECT_EQ(rc->byte_len, 3000u);
  EXPECT_EQ(std::memcmp(sbuf.data(), cbuf.data(), 3000), 0);
  auto sc = c.GetSendComp(kComp);
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kSuccess);
  // The clock is the wall clock: it moved, by less than the test's bound.
  const absl::Duration dt = fabric.Now() - t0;
  EXPECT_GT(dt, absl::ZeroDuration());
  EXPECT_LT(dt, kComp);
  // Nothing left this process.
  EXPECT_EQ(fabric.GetNodeStats(2)->packets_received, 0u);
}

// The ACK timer runs in real time: a send to a node whose port nobody
// listens on is retried retry_cnt times, 4.096 us * 2^timeout apart on the
// wall clock, then fails with RETRY_EXC_ERR (IBA 9.7.6.1.3).
TEST(UdpTransport, AckTimeoutRunsInRealTime) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  Side c;
  absl::Status made = MakeSide(base, 0, QpType::kRc, &c);
  ASSERT_TRUE(made.ok()) << made;
  EndpointAttr attr = c.ep->attr();
  attr.retry_cnt = 3;
  Info peer;  // node 1's GID, a QP that does not exist
  peer.qpn = 99;
  peer.gid = Ipv4MappedGid(NodeIpv4(kBase, 1));  // node 1
  ASSERT_TRUE(ModifyQpToRtr(c.ep->qp(), attr, peer.qpn, peer.gid, 0).ok());
  ASSERT_TRUE(ModifyQpToRts(c.ep->qp(), attr, 0).ok());
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(
      c.ep->PostSend(1, c.buf.data(), 8, c.mr.get(), kSendSignaled).ok());
  auto sc = c.ep->GetSendComp(kComp);
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kRetryExcErr);
  const absl::Duration elapsed = absl::Now() - t0;
  // 1 + retry_cnt timeouts of 4.096 us * 2^10 (the side's timeout).
  EXPECT_GE(elapsed, absl::Nanoseconds(4 * (4096 << 10)));
  EXPECT_LT(elapsed, absl::Seconds(5));
  SimQpStats stats;
  ASSERT_TRUE(GetSimQpStats(c.ep->qp(), &stats));
  EXPECT_EQ(stats.timeouts, 4u);
}

TEST(UdpTransport, BadOptionsAreRefused) {
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:local=0").status()), EINVAL);
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:udp=0").status()), EINVAL);
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:udp=70000").status()), EINVAL);
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:nodes=2,udp=30000,local=5").status()),
            EINVAL);
  EXPECT_EQ(
      ErrnoOf(OpenProvider("sim:nodes=2,udp=30000,local=all,local=0").status()),
      EINVAL);
  EXPECT_EQ(ErrnoOf(OpenProvider("sim:nodes=2,local=all").status()), EINVAL);
  // A node's port already bound: the next process slot (several processes
  // own one node); all slots bound: EADDRINUSE naming a port.
  const int base = FreeBasePort(2 * kMaxProcessSlots);
  ASSERT_NE(base, 0);
  std::vector<std::unique_ptr<Provider>> owners;
  for (int slot = 0; slot < kMaxProcessSlots; ++slot) {
    auto p = OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=0"));
    ASSERT_TRUE(p.ok()) << "slot " << slot << ": " << p.status();
    EXPECT_EQ(AsSimProvider(p->get())->fabric().process_slot(), slot);
    owners.push_back(*std::move(p));
  }
  auto full = OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=0"));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(ErrnoOf(full.status()), EADDRINUSE);
  EXPECT_NE(full.status().message().find(
                std::to_string(SlotPort(base, 2, 0, kMaxProcessSlots - 1))),
            std::string::npos)
      << full.status();
}

}  // namespace
}  // namespace verbsim::sim
