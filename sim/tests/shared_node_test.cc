// Several processes on one node, as several processes open one HCA
// (docs/udp-transport.md, "Processes sharing a node"): each process takes
// its own process slot, makes QPNs carrying it, and a packet's destination
// QPN names the process it goes to, on a node both processes own.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/tests/two_process.h"
#include "sim/sim_provider.h"
#include "sim/udp_transport.h"

namespace verbsim::sim {
namespace {

enum : uint32_t { kReady = 1, kWritten = 2, kDone = 3 };

std::string SharedSpec(int base) {
  return absl::StrCat("sim:nodes=2,udp=", base, ",local=all");
}

// Two fabrics of this process that both own every node, each with an RC
// endpoint on node 0 (slots 0 and 1).
void TwoOwnersOfNode0(Side* a, Side* b) {
  const int base = FreeBasePort(4);
  ASSERT_NE(base, 0);
  absl::Status made = MakeSideWith(SharedSpec(base), 0, QpType::kRc, a);
  ASSERT_TRUE(made.ok()) << made;
  made = MakeSideWith(SharedSpec(base), 0, QpType::kRc, b);
  ASSERT_TRUE(made.ok()) << made;
}

// Two fabrics of one process that both own every node: the second takes
// slot 1, lists the same devices, and its QPNs differ from the first's in
// the slot bits.
TEST(SharedNode, SecondOwnerTakesTheNextSlotAndItsOwnQpns) {
  Side a, b;
  ASSERT_NO_FATAL_FAILURE(TwoOwnersOfNode0(&a, &b));
  EXPECT_EQ(a.fabric().process_slot(), 0);
  EXPECT_EQ(b.fabric().process_slot(), 1);
  auto devices = b.provider->ListDevices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<std::string>{"sim0", "sim1"}));
  EXPECT_EQ(QpnSlot(a.info.qpn), 0);
  EXPECT_EQ(QpnSlot(b.info.qpn), 1);
  EXPECT_EQ(a.info.qpn & 0xffff, b.info.qpn & 0xffff);  // same first QPN
  EXPECT_EQ(a.info.gid, b.info.gid);                    // the same node
  EXPECT_NE(a.info.rkey, b.info.rkey);  // each process its own keys
}

// A key is the process's own, as on one HCA: A's QP writing into B's
// region with A's own rkey (a valid key in A, the first region in both)
// gets the remote access error, and B's memory is untouched.
TEST(SharedNode, AKeyOfOneProcessNamesNothingInAnother) {
  Side a, b;
  ASSERT_NO_FATAL_FAILURE(TwoOwnersOfNode0(&a, &b));
  ASSERT_TRUE(Connect(a, b.info).ok());
  ASSERT_TRUE(Connect(b, a.info).ok());
  Fill(a.buf.data(), 64, 9);
  std::fill(b.buf.begin(), b.buf.end(), 0);
  ASSERT_TRUE(a.ep->PostWrite(1, a.buf.data(), 64, a.mr.get(), kSendSignaled,
                              b.info.addr, a.info.rkey)
                  .ok());
  auto sc = a.ep->GetSendComp(kComp);
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kRemAccessErr);
  b.fabric().Now();
  EXPECT_TRUE(std::all_of(b.buf.begin(), b.buf.end(),
                          [](uint8_t v) { return v == 0; }));
}

// A forked child and its parent both on node 0: RC send, RDMA write and
// RDMA read between the two processes' QPs on the one node, both ways, with
// every byte checked; then a QP of each on node 1 reaches the other's QP on
// node 0.
TEST(SharedNode, TwoProcessesOnOneNodeTalkRc) {
  const int base = FreeBasePort(4);
  ASSERT_NE(base, 0);
  auto child = [base](int, Channel& ch) {
    Side s;
    absl::Status made = MakeSideWith(SharedSpec(base), 0, QpType::kRc, &s);
    ASSERT_TRUE(made.ok()) << made;
    ASSERT_TRUE(s.ep->PostRecv(7, s.buf.data(), 8192, s.mr.get()).ok());
    Fill(s.buf.data() + 16384, 5000, 4);  // the parent reads it
    Info peer;
    ASSERT_TRUE(Exchange(ch, s.info, &peer, false));
    EXPECT_NE(peer.qpn, s.info.qpn);
    ASSERT_TRUE(Connect(s, peer).ok());
    ASSERT_TRUE(ch.Token(kReady));
    auto rc = s.ep->GetRecvComp(kComp);
    ASSERT_TRUE(rc.ok()) << rc.status();
    EXPECT_EQ(rc->status, WcStatus::kSuccess);
    EXPECT_EQ(rc->wr_id, 7u);
    EXPECT_EQ(rc->byte_len, 6000u);
    std::vector<uint8_t> want(6000);
    Fill(want.data(), want.size(), 1);
    EXPECT_EQ(std::memcmp(s.buf.data(), want.data(), 6000), 0);
    ASSERT_TRUE(ch.Expect(kWritten));
    s.fabric().Now();  // orders the progress thread's writes before the read
    Fill(want.data(), 3000, 2);
    EXPECT_EQ(std::memcmp(s.buf.data() + 32768, want.data(), 3000), 0);
    // And back: this process writes into the parent's region.
    Fill(s.buf.data() + 49152, 2000, 5);
    ASSERT_TRUE(s.ep->PostWrite(8, s.buf.data() + 49152, 2000, s.mr.get(),
                                kSendSignaled, peer.addr + 49152, peer.rkey)
                    .ok());
    auto sc = s.ep->GetSendComp(kComp);
    ASSERT_TRUE(sc.ok()) << sc.status();
    EXPECT_EQ(sc->status, WcStatus::kSuccess);
    ASSERT_TRUE(ch.Token(kDone));
    ASSERT_TRUE(ch.Expect(kDone));
    EXPECT_EQ(s.fabric().udp_foreign(), 0u);
    EXPECT_EQ(s.fabric().udp_malformed(), 0u);
  };
  auto parent = [base](int, Channel& ch) {
    Side c;
    absl::Status made = MakeSideWith(SharedSpec(base), 0, QpType::kRc, &c);
    ASSERT_TRUE(made.ok()) << made;
    Info peer;
    ASSERT_TRUE(Exchange(ch, c.info, &peer, true));
    EXPECT_NE(QpnSlot(peer.qpn), QpnSlot(c.info.qpn));
    EXPECT_EQ(peer.gid, c.info.gid);
    ASSERT_TRUE(Connect(c, peer).ok());
    ASSERT_TRUE(ch.Expect(kReady));
    uint8_t* b = c.buf.data();
    Fill(b, 6000, 1);
    ASSERT_TRUE(c.ep->PostSend(1, b, 6000, c.mr.get(), kSendSignaled).ok());
    Fill(b + 8192, 3000, 2);
    ASSERT_TRUE(c.ep->PostWrite(2, b + 8192, 3000, c.mr.get(), kSendSignaled,
                                peer.addr + 32768, peer.rkey)
                    .ok());
    ASSERT_TRUE(c.ep->PostRead(3, b + 16384, 5000, c.mr.get(), kSendSignaled,
                               peer.addr + 16384, peer.rkey)
                    .ok());
    for (uint64_t id = 1; id <= 3; ++id) {
      auto sc = c.ep->GetSendComp(kComp);
      ASSERT_TRUE(sc.ok()) << sc.status();
      EXPECT_EQ(sc->status, WcStatus::kSuccess) << "wr_id " << sc->wr_id;
      EXPECT_EQ(sc->wr_id, id);
    }
    std::vector<uint8_t> want(5000);
    Fill(want.data(), want.size(), 4);
    EXPECT_EQ(std::memcmp(b + 16384, want.data(), 5000), 0);
    ASSERT_TRUE(ch.Token(kWritten));
    ASSERT_TRUE(ch.Expect(kDone));
    c.fabric().Now();
    Fill(want.data(), 2000, 5);
    EXPECT_EQ(std::memcmp(b + 49152, want.data(), 2000), 0);
    ASSERT_TRUE(ch.Token(kDone));
  };
  RunTwoProcesses(parent, child);
}

}  // namespace
}  // namespace verbsim::sim
