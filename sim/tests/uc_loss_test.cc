// UC under packet loss, which only the sim can arrange: a message that loses
// a packet (on the wire or to a bad ICRC) is dropped whole and silently. No
// NAK, no retransmission; the requester completes SUCCESS once its packets
// are sent, and the receive the lost message had started to fill takes the
// next message (IBA 9.8.3.2; kernel rxe rxe_resp.c).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/endpoint.h"
#include "core/names.h"
#include "core/provider.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "sim/packet.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

constexpr size_t kBuf = 16384;
constexpr uint32_t kMtu = 1024;  // the EndpointAttr default path MTU

// Two UC QPs, qa on sim0 (sender) and qb on sim1 (receiver, on an SRQ if
// asked), connected, with a registered buffer each.
struct UcLink {
  std::unique_ptr<Provider> provider;
  Fabric* fabric = nullptr;
  std::unique_ptr<Context> ca, cb;
  std::unique_ptr<Pd> pa, pb;
  std::unique_ptr<Cq> cqa, cqb;
  std::unique_ptr<Srq> srq;
  std::unique_ptr<Qp> qa, qb;
  std::vector<uint8_t> abuf = std::vector<uint8_t>(kBuf, 0);
  std::vector<uint8_t> bbuf = std::vector<uint8_t>(kBuf, 0);
  std::unique_ptr<Mr> mra, mrb;

  // Fills the sender's buffer with bytes that depend on `seed`.
  void Fill(uint8_t seed) {
    for (size_t i = 0; i < abuf.size(); ++i) {
      abuf[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
    }
  }
  std::vector<uint8_t> A(size_t offset, size_t len) const {
    return {abuf.begin() + offset, abuf.begin() + offset + len};
  }
  std::vector<uint8_t> B(size_t offset, size_t len) const {
    return {bbuf.begin() + offset, bbuf.begin() + offset + len};
  }
  absl::Status PostRecv(uint64_t wr_id, uint32_t len, size_t offset = 0) {
    Sge sge{reinterpret_cast<uint64_t>(bbuf.data() + offset), len,
            mrb->lkey()};
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = {&sge, 1};
    return srq != nullptr ? srq->PostRecv(wr) : qb->PostRecv(wr);
  }
  absl::Status Post(uint64_t wr_id, WrOpcode opcode, uint32_t len,
                    size_t remote_offset = 0) {
    Sge sge{reinterpret_cast<uint64_t>(abuf.data()), len, mra->lkey()};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.sg_list = {&sge, 1};
    wr.send_flags = kSendSignaled;
    wr.imm_data = 0xabcd;
    wr.rdma.remote_addr =
        reinterpret_cast<uint64_t>(bbuf.data() + remote_offset);
    wr.rdma.rkey = mrb->rkey();
    return qa->PostSend(wr);
  }
  // Runs the fabric until nothing is left to do and returns what `cq` holds.
  std::vector<WorkCompletion> Settle(Cq* cq) {
    fabric->RunUntilIdle();
    std::vector<WorkCompletion> out;
    WorkCompletion wc;
    while (true) {
      absl::StatusOr<int> n = cq->Poll({&wc, 1});
      if (!n.ok() || *n == 0) break;
      out.push_back(wc);
    }
    return out;
  }
  SimQpStats Stats(const Qp* qp) const {
    SimQpStats st;
    EXPECT_TRUE(GetSimQpStats(qp, &st));
    return st;
  }
  // ACKs and NAKs in the trace: UC sends none.
  int Responses() {
    int n = 0;
    for (const TraceRecord& r : fabric->TraceRecords()) {
      n += r.opcode == static_cast<uint8_t>(RcOp::kAcknowledge) &&
           r.kind == TraceKind::kDeliver;
    }
    return n;
  }
};

std::unique_ptr<UcLink> MakeLink(const std::string& faults,
                                 bool with_srq = false) {
  auto l = std::make_unique<UcLink>();
  auto provider = OpenProvider("sim");
  EXPECT_TRUE(provider.ok()) << provider.status();
  if (!provider.ok()) return nullptr;
  l->provider = *std::move(provider);
  l->fabric = &AsSimProvider(l->provider.get())->fabric();
  l->fabric->KeepTrace(true);
  EXPECT_TRUE(l->fabric->AddFaults(faults).ok()) << faults;
  l->ca = *l->provider->Open("sim0");
  l->cb = *l->provider->Open("sim1");
  l->pa = *l->ca->AllocPd();
  l->pb = *l->cb->AllocPd();
  l->cqa = *l->ca->CreateCq(64, nullptr);
  l->cqb = *l->cb->CreateCq(64, nullptr);
  if (with_srq) {
    SrqAttr sa;
    sa.max_wr = 16;
    sa.max_sge = 1;
    l->srq = *l->pb->CreateSrq(sa);
  }
  QpInitAttr init;
  init.qp_type = QpType::kUc;
  init.cap = {16, 16, 1, 1, 0};
  init.send_cq = init.recv_cq = l->cqa.get();
  l->qa = *l->pa->CreateQp(init);
  init.send_cq = init.recv_cq = l->cqb.get();
  init.srq = l->srq.get();
  l->qb = *l->pb->CreateQp(init);
  l->mra = *l->pa->RegMr(l->abuf.data(), kBuf, kAccessLocalWrite);
  l->mrb = *l->pb->RegMr(l->bbuf.data(), kBuf,
                         kAccessLocalWrite | kAccessRemoteWrite);
  EndpointAttr attr;
  attr.qp_type = QpType::kUc;
  attr.qp_access = kAccessLocalWrite | kAccessRemoteWrite;
  const Gid ga = *l->ca->QueryGid(1, 0);
  const Gid gb = *l->cb->QueryGid(1, 0);
  EXPECT_TRUE(ModifyQpToInit(l->qa.get(), attr).ok());
  EXPECT_TRUE(ModifyQpToInit(l->qb.get(), attr).ok());
  EXPECT_TRUE(ModifyQpToRtr(l->qa.get(), attr, l->qb->qp_num(), gb, 0).ok());
  EXPECT_TRUE(ModifyQpToRtr(l->qb.get(), attr, l->qa->qp_num(), ga, 0).ok());
  EXPECT_TRUE(ModifyQpToRts(l->qa.get(), attr, 0).ok());
  EXPECT_TRUE(ModifyQpToRts(l->qb.get(), attr, 0).ok());
  EXPECT_EQ(MtuBytes(l->qa->Query()->path_mtu), static_cast<int>(kMtu));
  return l;
}

// Checks that `wcs` is one SUCCESS completion of `wr_id`.
void ExpectOneOk(const std::vector<WorkCompletion>& wcs, uint64_t wr_id,
                 WcOpcode opcode) {
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kSuccess) << wcs[0];
  EXPECT_EQ(wcs[0].wr_id, wr_id) << wcs[0];
  EXPECT_EQ(wcs[0].opcode, opcode) << wcs[0];
}

// Sends a 4-packet message that loses a packet, then a 100-byte one: the
// first is dropped whole, the second lands in the receive the first had
// started to fill.
void LoseOnePacketOfASend(const std::string& faults) {
  std::unique_ptr<UcLink> l = MakeLink(faults);
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->PostRecv(1, 4 * kMtu).ok());
  l->Fill(1);
  ASSERT_TRUE(l->Post(10, WrOpcode::kSend, 4 * kMtu).ok());
  ExpectOneOk(l->Settle(l->cqa.get()), 10, WcOpcode::kSend);
  EXPECT_TRUE(l->Settle(l->cqb.get()).empty()) << "the damaged message arrived";
  SimQpStats rx = l->Stats(l->qb.get());
  SimQpStats tx = l->Stats(l->qa.get());
  EXPECT_EQ(rx.naks_sent, 0u);
  EXPECT_EQ(tx.retransmissions, 0u);
  EXPECT_EQ(tx.timeouts, 0u);
  EXPECT_EQ(tx.packets_sent, 4u);
  EXPECT_EQ(l->Responses(), 0);
  EXPECT_EQ(l->qb->state(), QpState::kRts);

  l->Fill(2);
  ASSERT_TRUE(l->Post(11, WrOpcode::kSend, 100).ok());
  ExpectOneOk(l->Settle(l->cqa.get()), 11, WcOpcode::kSend);
  std::vector<WorkCompletion> r = l->Settle(l->cqb.get());
  ExpectOneOk(r, 1, WcOpcode::kRecv);
  if (!r.empty()) {
    EXPECT_EQ(r[0].byte_len, 100u);
  }
  EXPECT_EQ(l->B(0, 100), l->A(0, 100));
  EXPECT_EQ(l->Stats(l->qa.get()).retransmissions, 0u);
  // One message lost, counted once (a lost LAST is known only when the
  // next message starts).
  EXPECT_EQ(l->Stats(l->qb.get()).msg_drops, 1u);
}

TEST(UcLoss, DroppedMiddlePacketDropsTheWholeMessage) {
  LoseOnePacketOfASend("drop op=SEND_MIDDLE nth=1");
}

TEST(UcLoss, DroppedFirstPacketDropsTheWholeMessage) {
  LoseOnePacketOfASend("drop op=SEND_FIRST nth=1");
}

TEST(UcLoss, DroppedLastPacketDropsTheWholeMessage) {
  LoseOnePacketOfASend("drop op=SEND_LAST nth=1");
}

TEST(UcLoss, CorruptedPacketDropsTheWholeMessage) {
  LoseOnePacketOfASend("corrupt op=SEND_MIDDLE nth=1");
}

TEST(UcLoss, CorruptedPacketCountsAnIcrcError) {
  std::unique_ptr<UcLink> l = MakeLink("corrupt op=SEND_MIDDLE nth=1");
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->PostRecv(1, 4 * kMtu).ok());
  ASSERT_TRUE(l->Post(10, WrOpcode::kSend, 3 * kMtu).ok());
  l->fabric->RunUntilIdle();
  absl::StatusOr<NodeStats> node = l->fabric->GetNodeStats(1);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->icrc_errors, 1u);
  EXPECT_TRUE(l->Settle(l->cqb.get()).empty());
}

// Of three messages the second loses its first packet: the first and the
// third arrive, into the first and second receives.
TEST(UcLoss, OnlyTheDamagedMessageIsLost) {
  std::unique_ptr<UcLink> l = MakeLink("drop op=SEND_FIRST nth=2");
  ASSERT_NE(l, nullptr);
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(l->PostRecv(1 + i, 2 * kMtu, i * 2 * kMtu).ok());
  }
  l->Fill(3);
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(l->Post(10 + i, WrOpcode::kSend, 2 * kMtu - 10 + i).ok());
  }
  EXPECT_EQ(l->Settle(l->cqa.get()).size(), 3u);
  std::vector<WorkCompletion> r = l->Settle(l->cqb.get());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].wr_id, 1u);
  EXPECT_EQ(r[0].byte_len, 2 * kMtu - 10);
  EXPECT_EQ(r[1].wr_id, 2u);
  EXPECT_EQ(r[1].byte_len, 2 * kMtu - 8);
  EXPECT_EQ(l->Stats(l->qb.get()).msg_drops, 1u);
  EXPECT_EQ(l->Stats(l->qa.get()).retransmissions, 0u);
}

// An RDMA write that loses a middle packet: what came before it may have
// landed, nothing after it does; the requester completes SUCCESS and the
// next write is placed as usual.
TEST(UcLoss, DroppedMiddlePacketOfAWriteStopsItThere) {
  std::unique_ptr<UcLink> l = MakeLink("drop op=RDMA_WRITE_MIDDLE nth=1");
  ASSERT_NE(l, nullptr);
  l->Fill(4);
  ASSERT_TRUE(l->Post(10, WrOpcode::kRdmaWrite, 3 * kMtu).ok());
  ExpectOneOk(l->Settle(l->cqa.get()), 10, WcOpcode::kRdmaWrite);
  EXPECT_EQ(l->B(kMtu, 2 * kMtu), std::vector<uint8_t>(2 * kMtu, 0));
  EXPECT_EQ(l->Stats(l->qb.get()).msg_drops, 1u);
  ASSERT_TRUE(l->PostRecv(1, 0).ok());
  ASSERT_TRUE(l->Post(11, WrOpcode::kRdmaWriteWithImm, 3 * kMtu).ok());
  ExpectOneOk(l->Settle(l->cqa.get()), 11, WcOpcode::kRdmaWrite);
  std::vector<WorkCompletion> r = l->Settle(l->cqb.get());
  ExpectOneOk(r, 1, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(l->B(0, 3 * kMtu), l->A(0, 3 * kMtu));
  EXPECT_EQ(l->Stats(l->qa.get()).retransmissions, 0u);
  EXPECT_EQ(l->Responses(), 0);
}

// A write with immediate whose last packet is lost takes no receive: the
// receive is there for the next message.
TEST(UcLoss, LostLastPacketOfWriteWithImmediateLeavesTheReceive) {
  std::unique_ptr<UcLink> l =
      MakeLink("drop op=RDMA_WRITE_LAST_WITH_IMMEDIATE nth=1");
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->PostRecv(1, 64, 8192).ok());
  l->Fill(5);
  ASSERT_TRUE(l->Post(10, WrOpcode::kRdmaWriteWithImm, 2 * kMtu).ok());
  ExpectOneOk(l->Settle(l->cqa.get()), 10, WcOpcode::kRdmaWrite);
  EXPECT_TRUE(l->Settle(l->cqb.get()).empty());
  ASSERT_TRUE(l->Post(11, WrOpcode::kSend, 64).ok());
  std::vector<WorkCompletion> r = l->Settle(l->cqb.get());
  ExpectOneOk(r, 1, WcOpcode::kRecv);
  EXPECT_EQ(l->B(8192, 64), l->A(0, 64));
}

// On an SRQ, the receive a damaged message had started to fill goes back to
// the front of the SRQ: the next message takes the same WQE.
TEST(UcLoss, SrqReceiveOfADroppedMessageIsReused) {
  std::unique_ptr<UcLink> l =
      MakeLink("drop op=SEND_MIDDLE nth=1", /*with_srq=*/true);
  ASSERT_NE(l, nullptr);
  ASSERT_TRUE(l->PostRecv(1, 4 * kMtu).ok());
  ASSERT_TRUE(l->PostRecv(2, 4 * kMtu, 8192).ok());
  l->Fill(6);
  ASSERT_TRUE(l->Post(10, WrOpcode::kSend, 3 * kMtu).ok());
  ASSERT_TRUE(l->Post(11, WrOpcode::kSend, 3 * kMtu).ok());
  EXPECT_EQ(l->Settle(l->cqa.get()).size(), 2u);
  std::vector<WorkCompletion> r = l->Settle(l->cqb.get());
  ExpectOneOk(r, 1, WcOpcode::kRecv);
  if (!r.empty()) {
    EXPECT_EQ(r[0].byte_len, 3 * kMtu);
  }
  EXPECT_EQ(l->B(0, 3 * kMtu), l->A(0, 3 * kMtu));
  EXPECT_EQ(l->Stats(l->qb.get()).msg_drops, 1u);
}

}  // namespace
}  // namespace verbsim::sim
