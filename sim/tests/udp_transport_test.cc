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

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "sim/tests/two_process.h"
#include "sim/sim_provider.h"
#include "sim/thread_state.h"
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

// How many times thread `tid` of this process has gone to sleep so far
// (voluntary_ctxt_switches in /proc), or -1.
int64_t TimesAsleep(int tid) {
  std::ifstream status(absl::StrCat("/proc/self/task/", tid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    constexpr absl::string_view kField = "voluntary_ctxt_switches:";
    if (absl::StartsWith(line, kField)) {
      return std::stoll(line.substr(kField.size()));
    }
  }
  return -1;
}

// With a progress thread, a thread that waits for an async event only (the
// drop-in's async-event thread) sleeps through posts and completions, as a
// device's async event file stays quiet while its CQs fill; it looks on its
// own every 10 ms at most (Fabric::DriveUntil), and an async event wakes it.
TEST(UdpTransport, AThreadWaitingForAnAsyncEventSleepsThroughCompletions) {
  const int base = FreeBasePort();
  ASSERT_NE(base, 0);
  auto provider =
      OpenProvider(absl::StrCat("sim:nodes=2,udp=", base, ",local=0+1"));
  ASSERT_TRUE(provider.ok()) << provider.status();
  auto eps = CreateConnectedPair(**provider, EndpointAttr{});
  ASSERT_TRUE(eps.ok()) << eps.status();
  Endpoint& c = *eps->client;
  std::vector<uint64_t> src(1), dst(1);
  auto smr = c.RegMsgs(src.data(), 8);
  auto dmr = eps->server->RegWrite(dst.data(), 8);
  ASSERT_TRUE(smr.ok() && dmr.ok());
  Context* server = eps->server->context();
  std::atomic<int> waiter_tid{0};
  absl::StatusOr<AsyncEvent> event = absl::UnknownError("no answer yet");
  std::thread waiter([&] {
    waiter_tid.store(CurrentThreadTid());
    event = server->GetAsyncEvent(absl::Seconds(60));
  });
  while (waiter_tid.load() == 0) std::this_thread::yield();
  const int tid = waiter_tid.load();
  bool asleep = false;
  for (int i = 0; i < 5000 && !asleep; ++i) {
    asleep = !ThreadIsRunnable(tid);
    if (!asleep) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(asleep) << "the waiting thread never slept";
  const int64_t slept_before = TimesAsleep(tid);
  ASSERT_GE(slept_before, 0);
  const absl::Time start = absl::Now();

  constexpr int kWrites = 2000;
  for (int i = 1; i <= kWrites; ++i) {
    src[0] = i;
    ASSERT_TRUE(c.PostWrite(i, src.data(), 8, smr->get(), kSendSignaled,
                            reinterpret_cast<uint64_t>(dst.data()),
                            (*dmr)->rkey())
                    .ok());
    absl::StatusOr<WorkCompletion> wc = c.GetSendComp(kComp);
    ASSERT_TRUE(wc.ok()) << wc.status();
    ASSERT_EQ(wc->status, WcStatus::kSuccess);
  }
  EXPECT_EQ(dst[0], static_cast<uint64_t>(kWrites));
  const int64_t woken = TimesAsleep(tid) - slept_before;
  const int64_t looks = absl::ToInt64Milliseconds(absl::Now() - start) / 10;
  // Its own looks, with room for a late timer; a wake per post or
  // completion would be thousands.
  EXPECT_LE(woken, 2 * looks + 50)
      << "the thread waiting for an async event was woken " << woken
      << " times during " << kWrites << " writes";

  const int node = std::stoi(server->device_attr().name.substr(3));
  ASSERT_TRUE(
      AsSimProvider(provider->get())->fabric().SetPortState(node, false).ok());
  waiter.join();
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->type, AsyncEventType::kPortErr);
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
