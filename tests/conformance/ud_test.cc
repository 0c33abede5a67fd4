// UD: address handles, Q_Keys, the GRH in front of every receive, datagrams
// that are dropped (never RNR), and multicast (docs/semantics.md section 5;
// rdma_post_ud_send(3), ibv_create_ah(3), ibv_attach_mcast(3)).
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <vector>

#include "core/names.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

using ::testing::IsEmpty;

constexpr uint32_t kGrh = 40;
constexpr size_t kBuf = 16384;

struct UdSize {
  const char* name;
  uint32_t bytes;
};
void PrintTo(const UdSize& s, std::ostream* os) { *os << s.name; }

// Two UD QPs in RTS, on devices 0 (sender) and 1 (receiver), an address
// handle from the sender to the receiver's GID, and a registered buffer each.
template <typename Base>
class UdFixture : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    if (this->IsSkipped() || this->HasFatalFailure()) return;
    if (!this->expect().has_ud) GTEST_SKIP() << "the provider has no UD QPs";
    ASSERT_OK_AND_ASSIGN(a_, this->OpenSide(0));
    ASSERT_OK_AND_ASSIGN(b_, this->OpenSide(1));
    ASSERT_OK_AND_ASSIGN(qa_, CreateQpOn(*a_, QpType::kUd));
    ASSERT_OK_AND_ASSIGN(qb_, CreateQpOn(*b_, QpType::kUd));
    ASSERT_OK(BringUdQpToRts(qa_.get()));
    ASSERT_OK(BringUdQpToRts(qb_.get()));
    ASSERT_OK_AND_ASSIGN(ah_, CreateAhTo(a_->pd.get(), b_->gid, a_->gid_index));
    ASSERT_OK_AND_ASSIGN(mra_, a_->pd->RegMr(abuf_.data(), kBuf,
                                             kAccessLocalWrite));
    ASSERT_OK_AND_ASSIGN(mrb_, b_->pd->RegMr(bbuf_.data(), kBuf,
                                             kAccessLocalWrite));
  }

  // Posts a receive of `len` bytes at `offset` of the receiver's buffer.
  absl::Status PostRecvB(uint64_t wr_id, uint32_t len, size_t offset = 0) {
    Sge sge = SgeOf(*mrb_, offset, len);
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = {&sge, 1};
    return qb_->PostRecv(wr);
  }
  // Sends `len` bytes of the sender's buffer to `remote_qpn` with `qkey`.
  absl::Status SendA(uint64_t wr_id, uint32_t len, uint32_t remote_qpn,
                     uint32_t qkey = kTestQkey,
                     WrOpcode opcode = WrOpcode::kSend, Ah* ah = nullptr) {
    Sge sge = SgeOf(*mra_, 0, len);
    SendWr wr = MakeWr(opcode, wr_id, {&sge, 1});
    wr.imm_data = 0x5eed;
    wr.ud.ah = ah != nullptr ? ah : ah_.get();
    wr.ud.remote_qpn = remote_qpn;
    wr.ud.remote_qkey = qkey;
    return qa_->PostSend(wr);
  }
  // The receiving QP's counters, where the provider keeps them per QP
  // (Expectations::counts_per_qp).
  QpCounters CountersB() const {
    absl::StatusOr<QpCounters> c = qb_->QueryCounters();
    EXPECT_EQ(c.ok(), this->expect().counts_per_qp) << c.status();
    return c.ok() ? *c : QpCounters{};
  }

  std::unique_ptr<Side> a_, b_;
  std::unique_ptr<Qp> qa_, qb_;
  std::unique_ptr<Ah> ah_;
  Buffer abuf_{kBuf}, bbuf_{kBuf};
  std::unique_ptr<Mr> mra_, mrb_;
};

class UdTest : public UdFixture<ProviderTest> {};
class UdSizeTest : public UdFixture<ProviderTestWithParam<UdSize>> {};

TEST_P(UdTest, DatagramArrivesAfterTheGrhWithSourceQp) {
  abuf_.FillPattern(3, 0, 100);
  ASSERT_OK(PostRecvB(7, kGrh + 100));
  ASSERT_OK(SendA(8, 100, qb_->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(8u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  EXPECT_THAT(rwc, WcOk(7u, WcOpcode::kRecv)) << rwc;
  // byte_len counts the 40 GRH bytes; the GRH flag is set.
  EXPECT_EQ(rwc.byte_len, kGrh + 100);
  EXPECT_EQ(rwc.src_qp, qa_->qp_num());
  EXPECT_EQ(rwc.qp_num, qb_->qp_num());
  EXPECT_NE(rwc.wc_flags & kWcGrh, 0u);
  EXPECT_EQ(rwc.wc_flags & kWcWithImm, 0u);
  EXPECT_EQ(bbuf_.Bytes(kGrh, 100), abuf_.Bytes(0, 100));
}

// The GRH area for RoCEv2 over IPv4: 20 zero bytes, then the IPv4 header of
// the packet, as rxe writes it.
TEST_P(UdTest, GrhHoldsTheIpv4HeaderAfterTwentyZeroBytes) {
  bbuf_.Set(0xcc);
  ASSERT_OK(PostRecvB(1, kGrh + 64));
  ASSERT_OK(SendA(2, 64, qb_->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  ASSERT_THAT(rwc, WcOk(1u, WcOpcode::kRecv));
  EXPECT_EQ(bbuf_.Bytes(0, 20), std::vector<uint8_t>(20, 0));
  const std::vector<uint8_t> ip = bbuf_.Bytes(20, 20);
  EXPECT_EQ(ip[0], 0x45) << "IPv4, 20-byte header";
  EXPECT_EQ(ip[9], 17) << "protocol UDP";
  // Total length: IPv4 20 + UDP 8 + BTH 12 + DETH 8 + payload 64 + ICRC 4.
  EXPECT_EQ(ip[2] << 8 | ip[3], 20 + 8 + 12 + 8 + 64 + 4);
  // Source and destination: the IPv4 addresses in the GIDs.
  EXPECT_EQ(std::vector<uint8_t>(ip.begin() + 12, ip.begin() + 16),
            std::vector<uint8_t>(a_->gid.begin() + 12, a_->gid.end()));
  EXPECT_EQ(std::vector<uint8_t>(ip.begin() + 16, ip.end()),
            std::vector<uint8_t>(b_->gid.begin() + 12, b_->gid.end()));
  // The header checksum verifies (one's complement sum is 0xffff).
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += ip[i] << 8 | ip[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  EXPECT_EQ(sum, 0xffffu);
}

TEST_P(UdTest, SendWithImmediateCarriesIt) {
  ASSERT_OK(PostRecvB(1, kGrh + 8));
  ASSERT_OK(SendA(2, 8, qb_->qp_num(), kTestQkey, WrOpcode::kSendWithImm));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  ASSERT_THAT(rwc, WcOk(1u, WcOpcode::kRecv));
  EXPECT_NE(rwc.wc_flags & kWcWithImm, 0u);
  EXPECT_EQ(rwc.imm_data, 0x5eedu);
  EXPECT_EQ(rwc.byte_len, kGrh + 8);
}

// A Q_Key mismatch drops the datagram at the receiver (IBA 10.2.5); the
// sender completes SUCCESS all the same.
TEST_P(UdTest, QkeyMismatchIsDroppedSilently) {
  ASSERT_OK(PostRecvB(1, kGrh + 8));
  ASSERT_OK(SendA(2, 8, qb_->qp_num(), kTestQkey + 1));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend));
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
  if (expect().counts_per_qp) {
    EXPECT_EQ(CountersB().qkey_drops, 1u);
  }
  // The receive is still there for the next datagram with the right key.
  ASSERT_OK(SendA(3, 8, qb_->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv));
}

// A remote Q_Key with the high bit set means "use the sending QP's Q_Key"
// (IBA 10.2.5).
TEST_P(UdTest, HighBitQkeyUsesTheQpsQkey) {
  ASSERT_OK(PostRecvB(1, kGrh + 8));
  ASSERT_OK(SendA(2, 8, qb_->qp_num(), 0x80000000u));
  if (expect().honours_controlled_qkey) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
    EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv));
  } else {
    // Used as given: 0x80000000 is not the receiver's Q_Key.
    EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
  }
}

// No receive posted: the datagram is dropped, never RNR; the sender
// completes SUCCESS and the receiver's QP stays usable.
TEST_P(UdTest, NoReceivePostedDropsTheDatagram) {
  ASSERT_OK(SendA(2, 8, qb_->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend));
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
  if (expect().counts_per_qp) {
    EXPECT_EQ(CountersB().no_recv_drops, 1u);
  }
  EXPECT_EQ(qb_->state(), QpState::kRts);
  ASSERT_OK(PostRecvB(1, kGrh + 8));
  ASSERT_OK(SendA(3, 8, qb_->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv));
}

TEST_P(UdTest, MessageLargerThanTheMtu) {
  ASSERT_OK_AND_ASSIGN(PortAttr port, a_->context->QueryPort(1));
  const uint32_t mtu = static_cast<uint32_t>(MtuBytes(port.active_mtu));
  ASSERT_LE(mtu + 1, kBuf - kGrh);
  ASSERT_OK(PostRecvB(1, static_cast<uint32_t>(kBuf)));
  ASSERT_OK(SendA(2, mtu + 1, qb_->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcStatusIn(expect().ud_oversize)) << swc;
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty()) << "the datagram arrived";
}

// A receive too small for GRH + payload: the sender completes SUCCESS; the
// datagram is dropped with the receive left posted, or the receive fails
// (expectations: ud_recv_too_small_receiver).
TEST_P(UdTest, ReceiveTooSmallForGrhAndPayload) {
  ASSERT_OK(PostRecvB(1, kGrh + 7));
  ASSERT_OK(SendA(2, 8, qb_->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend));
  if (expect().ud_recv_too_small_receiver.empty()) {
    EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
    EXPECT_EQ(qb_->state(), QpState::kRts);
    // The receive is still posted; a datagram that fits takes it.
    ASSERT_OK(SendA(3, 7, qb_->qp_num()));
    ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
    EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv));
    EXPECT_EQ(rwc.byte_len, kGrh + 7);
  } else {
    ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
    EXPECT_EQ(rwc.wr_id, 1u);
    EXPECT_THAT(rwc, WcStatusIn(expect().ud_recv_too_small_receiver)) << rwc;
    EXPECT_EQ(qb_->state(), QpState::kErr);
  }
}

TEST_P(UdTest, PostWithoutAddressHandleIsEinval) {
  Sge sge = SgeOf(*mra_, 0, 8);
  SendWr wr = MakeWr(WrOpcode::kSend, 1, {&sge, 1});
  wr.ud.remote_qpn = qb_->qp_num();
  wr.ud.remote_qkey = kTestQkey;
  EXPECT_THAT(qa_->PostSend(wr), HasErrno(EINVAL));
  EXPECT_THAT(Drain(a_->cq.get()), IsEmpty());
}

TEST_P(UdTest, RemoteQpnOver24BitsIsEinval) {
  if (!expect().checks_ud_remote_qpn) {
    GTEST_SKIP() << "profile " << expect().profile
                 << " does not check remote_qpn";
  }
  EXPECT_THAT(SendA(1, 8, 0x1000000u), HasErrno(EINVAL));
}

TEST_P(UdTest, AddressHandleKeepsItsAttributes) {
  AhAttr attr;
  attr.dgid = b_->gid;
  attr.sgid_index = a_->gid_index;
  attr.hop_limit = 9;
  attr.traffic_class = 0x20;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Ah> ah, a_->pd->CreateAh(attr));
  EXPECT_EQ(ah->attr().dgid, b_->gid);
  EXPECT_EQ(ah->attr().hop_limit, 9);
  EXPECT_EQ(ah->pd(), a_->pd.get());
  EXPECT_OK(Destroy(ah));
}

TEST_P(UdTest, AddressHandleFieldsReachTheGrh) {
  AhAttr attr;
  attr.dgid = b_->gid;
  attr.sgid_index = a_->gid_index;
  attr.hop_limit = 9;
  attr.traffic_class = 0x20;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Ah> ah, a_->pd->CreateAh(attr));
  ASSERT_OK(PostRecvB(1, kGrh + 8));
  ASSERT_OK(SendA(2, 8, qb_->qp_num(), kTestQkey, WrOpcode::kSend, ah.get()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  ASSERT_THAT(rwc, WcOk(1u, WcOpcode::kRecv));
  EXPECT_EQ(bbuf_[20 + 1], 0x20) << "TOS is the traffic class";
  EXPECT_EQ(bbuf_[20 + 8], expect().ipv4_ttl >= 0 ? expect().ipv4_ttl : 9)
      << "TTL is the hop limit, or what the table says";
}

TEST_P(UdTest, PdWithAnAddressHandleIsBusy) {
  EXPECT_THAT(a_->pd->Destroy(), HasErrno(EBUSY));
  EXPECT_OK(Destroy(ah_));
}

TEST_P(UdTest, DestroyedAddressHandleIsGoneForGood) {
  Ah* raw = ah_.get();
  ASSERT_OK(raw->Destroy());
  EXPECT_THAT(raw->Destroy(), HasErrno(EINVAL));
}

TEST_P(UdTest, ReceivesCompleteInPostOrder) {
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_OK(PostRecvB(10 + i, kGrh + 16, i * 64));
  }
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_OK(SendA(20 + i, 16, qb_->qp_num()));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> r,
                       AwaitN(b_->cq.get(), 4));
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(r[i].wr_id, 10 + i);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(UdTest);

// Opcodes UD does not carry: accepted by the post, then the WR completes
// LOC_QP_OP_ERR and the QP goes to ERR (rxe_req.c next_opcode;
// rdma-unit-test's UD read/write/atomic cases).
class UdOpcodeTest : public UdFixture<ProviderTestWithParam<WrOpcode>> {};

TEST_P(UdOpcodeTest, CompletesLocQpOpErr) {
  Sge sge = SgeOf(*mra_, 0, 8);
  SendWr wr = MakeWr(param(), 5, {&sge, 1});
  wr.ud.ah = ah_.get();
  wr.ud.remote_qpn = qb_->qp_num();
  wr.ud.remote_qkey = kTestQkey;
  wr.rdma.rkey = mrb_->rkey();
  wr.rdma.remote_addr = bbuf_.addr();
  wr.atomic.rkey = mrb_->rkey();
  wr.atomic.remote_addr = bbuf_.addr();
  ASSERT_OK(qa_->PostSend(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(a_->cq.get()));
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_THAT(wc, WcStatusIs(WcStatus::kLocQpOpErr)) << wc;
  EXPECT_EQ(qa_->state(), QpState::kErr);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    UdOpcodeTest,
    ::testing::Values(WrOpcode::kRdmaWrite, WrOpcode::kRdmaWriteWithImm,
                      WrOpcode::kRdmaRead, WrOpcode::kAtomicCmpAndSwp,
                      WrOpcode::kAtomicFetchAndAdd, WrOpcode::kSendWithInv,
                      WrOpcode::kLocalInv));

TEST_P(UdTest, BindMwOnUdIsEinval) {
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kBindMw;
  EXPECT_THAT(qa_->PostSend(wr), HasErrno(EINVAL));
}

// Sizes from empty to the MTU all arrive after the GRH.
TEST_P(UdSizeTest, ArrivesIntact) {
  const uint32_t len = param().bytes;
  abuf_.FillPattern(static_cast<uint8_t>(len));
  ASSERT_OK(PostRecvB(1, kGrh + len));
  ASSERT_OK(SendA(2, len, qb_->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b_->cq.get()));
  ASSERT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, kGrh + len);
  EXPECT_EQ(bbuf_.Bytes(kGrh, len), abuf_.Bytes(0, len));
}

}  // namespace
}  // namespace testing
}  // namespace verbsim

namespace verbsim {
namespace testing {
namespace {

const UdSize kUdSizes[] = {
    {"Zero", 0}, {"One", 1}, {"Hundred", 100}, {"K1", 1024}, {"K4", 4096},
};
INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(UdSizeTest, ::testing::ValuesIn(kUdSizes));

}  // namespace
}  // namespace testing
}  // namespace verbsim

namespace verbsim {
namespace testing {
namespace {

// UD multicast (ibv_attach_mcast(3)): a send to a group reaches every QP
// attached to it, on every device, once.
class McastTest : public UdFixture<ProviderTest> {
 protected:
  void SetUp() override {
    UdFixture<ProviderTest>::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!expect().has_multicast) GTEST_SKIP() << "the provider has no multicast";
    // RoCEv2 over IPv4 (the suite's GIDs): an IPv4-mapped group address,
    // 239.0.0.66 (an IPv6 group from an IPv4 source is never delivered).
    group_[10] = group_[11] = 0xff;
    group_[12] = 239;
    group_[15] = 0x42;
    ASSERT_OK_AND_ASSIGN(gah_, CreateAhTo(a_->pd.get(), group_, a_->gid_index));
  }
  absl::Status SendToGroup(uint64_t wr_id, uint32_t len) {
    Sge sge = SgeOf(*mra_, 0, len);
    SendWr wr = MakeWr(WrOpcode::kSend, wr_id, {&sge, 1});
    wr.ud.ah = gah_.get();
    wr.ud.remote_qpn = kMulticastQpn;
    wr.ud.remote_qkey = kTestQkey;
    return qa_->PostSend(wr);
  }
  Gid group_{};
  std::unique_ptr<Ah> gah_;
};

TEST_P(McastTest, ReachesEveryAttachedQpOnEveryDeviceOnce) {
  // A second member on device 1 and a member on the sender's device 0.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qb2, CreateQpOn(*b_, QpType::kUd));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qa2, CreateQpOn(*a_, QpType::kUd));
  ASSERT_OK(BringUdQpToRts(qb2.get()));
  ASSERT_OK(BringUdQpToRts(qa2.get()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mra2,
                       a_->pd->RegMr(abuf_.data(), kBuf, kAccessLocalWrite));
  for (Qp* qp : {qb_.get(), qb2.get(), qa2.get()}) {
    ASSERT_OK(qp->AttachMcast(group_, 0));
  }
  // Attaching twice changes nothing: still one copy.
  ASSERT_OK(qb_->AttachMcast(group_, 0));
  uint64_t id = 100;
  for (Qp* qp : {qb_.get(), qb2.get()}) {
    Sge sge = SgeOf(*mrb_, 0, kGrh + 32);
    RecvWr wr;
    wr.sg_list = {&sge, 1};
    for (int i = 0; i < 2; ++i) {
      wr.wr_id = id++;
      ASSERT_OK(qp->PostRecv(wr));
    }
  }
  {
    Sge sge = SgeOf(*mra2, 8192, kGrh + 32);
    RecvWr wr;
    wr.sg_list = {&sge, 1};
    for (int i = 0; i < 2; ++i) {
      wr.wr_id = id++;
      ASSERT_OK(qa2->PostRecv(wr));
    }
  }
  ASSERT_OK(SendToGroup(1, 32));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  ASSERT_THAT(swc, WcOk(1u, WcOpcode::kSend));
  if (!expect().delivers_multicast) {
    // Sent, and received by no member.
    EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
    EXPECT_THAT(Drain(a_->cq.get()), IsEmpty());
    return;
  }
  if (expect().mcast_reaches_local_members) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion other, Await(a_->cq.get()));
    EXPECT_EQ(other.qp_num, qa2->qp_num());
    EXPECT_EQ(other.src_qp, qa_->qp_num());
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> rb,
                       AwaitN(b_->cq.get(), 2));
  std::vector<uint32_t> qps = {rb[0].qp_num, rb[1].qp_num};
  EXPECT_THAT(qps, ::testing::UnorderedElementsAre(qb_->qp_num(),
                                                   qb2->qp_num()));
  for (const WorkCompletion& wc : rb) {
    EXPECT_EQ(wc.status, WcStatus::kSuccess) << wc;
    EXPECT_EQ(wc.byte_len, kGrh + 32);
  }
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty()) << "a member got two copies";
  EXPECT_THAT(Drain(a_->cq.get()), IsEmpty()) << "the sender got its own";
}

TEST_P(McastTest, DetachedQpNoLongerReceives) {
  ASSERT_OK(qb_->AttachMcast(group_, 0));
  ASSERT_OK(qb_->DetachMcast(group_, 0));
  ASSERT_OK(PostRecvB(1, kGrh + 8));
  ASSERT_OK(SendToGroup(2, 8));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a_->cq.get()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend));
  EXPECT_THAT(Drain(b_->cq.get()), IsEmpty());
}

// The kernel's uverbs destroy_qp refuses a QP still in a group; the QP
// stays usable and goes once detached.
TEST_P(McastTest, DestroyWhileAttachedIsBusy) {
  ASSERT_OK(qb_->AttachMcast(group_, 0));
  EXPECT_THAT(qb_->Destroy(), HasErrno(EBUSY));
  EXPECT_EQ(qb_->state(), QpState::kRts);
  ASSERT_OK(qb_->DetachMcast(group_, 0));
  EXPECT_OK(qb_->Destroy());
}

TEST_P(McastTest, DetachWithoutAttachIsEinval) {
  EXPECT_THAT(qb_->DetachMcast(group_, 0), HasErrno(EINVAL));
}

TEST_P(McastTest, UnicastGidIsEinval) {
  EXPECT_THAT(qb_->AttachMcast(b_->gid, 0), HasErrno(EINVAL));
}

TEST_P(McastTest, Ipv4MappedMulticastGidIsAccepted) {
  Gid v4{};
  v4[10] = v4[11] = 0xff;
  v4[12] = 239;
  v4[15] = 7;
  EXPECT_OK(qb_->AttachMcast(v4, 0));
  EXPECT_OK(qb_->DetachMcast(v4, 0));
}

TEST_P(McastTest, RcQpCannotAttach) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> rc, CreateQpOn(*b_, QpType::kRc));
  EXPECT_THAT(rc->AttachMcast(group_, 0), HasErrno(EINVAL));
}

TEST_P(McastTest, GroupNeedsTheMulticastQpn) {
  if (!expect().checks_ud_remote_qpn) {
    GTEST_SKIP() << "profile " << expect().profile
                 << " does not check remote_qpn";
  }
  Sge sge = SgeOf(*mra_, 0, 8);
  SendWr wr = MakeWr(WrOpcode::kSend, 1, {&sge, 1});
  wr.ud.ah = gah_.get();
  wr.ud.remote_qpn = qb_->qp_num();
  wr.ud.remote_qkey = kTestQkey;
  EXPECT_THAT(qa_->PostSend(wr), HasErrno(EINVAL));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(McastTest);

// Address handles with bad attributes (ibv_create_ah(3)).
class AhTest : public ProviderTest {};

TEST_P(AhTest, BadAttributesAreEinval) {
  if (!expect().has_ah) {
    GTEST_SKIP() << "the provider has no address handles";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> s, OpenSide(0));
  AhAttr good;
  good.dgid = s->gid;
  good.sgid_index = s->gid_index;
  AhAttr port = good;
  port.port_num = 2;
  EXPECT_THAT(s->pd->CreateAh(port), HasErrno(EINVAL));
  AhAttr sgid = good;
  sgid.sgid_index = 200;
  EXPECT_THAT(s->pd->CreateAh(sgid), HasErrno(expect().unused_sgid_errno));
  AhAttr local = good;
  local.is_global = false;
  EXPECT_THAT(s->pd->CreateAh(local), HasErrno(EINVAL));
  EXPECT_OK(s->pd->CreateAh(good).status());
}

TEST_P(AhTest, UnknownDestinationIsEinval) {
  if (!expect().has_ah) {
    GTEST_SKIP() << "the provider has no address handles";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> s, OpenSide(0));
  AhAttr attr;
  attr.dgid[10] = attr.dgid[11] = 0xff;
  attr.dgid[12] = 192;
  attr.dgid[13] = 0;
  attr.dgid[14] = 2;
  attr.dgid[15] = 99;  // TEST-NET-1: no device has it
  EXPECT_THAT(s->pd->CreateAh(attr), HasErrno(EINVAL));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(AhTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim

namespace verbsim {
namespace testing {
namespace {

// rdma_post_ud_send(3) on an Endpoint whose QP is UD: the address handle and
// remote QPN name the destination, the endpoint's Q_Key goes with it, and a
// null mr sends inline.
class UdEndpointTest : public ProviderTest {};

TEST_P(UdEndpointTest, PostUdSendReachesTheRemoteQp) {
  if (!expect().has_ud) GTEST_SKIP() << "the provider has no UD QPs";
  EndpointAttr attr;
  attr.qp_type = QpType::kUd;
  std::unique_ptr<Endpoint> ep[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> ctx, OpenDevice(i));
    ASSERT_OK_AND_ASSIGN(ep[i], Endpoint::Create(std::move(ctx), attr));
    ASSERT_OK(ModifyQpToInit(ep[i]->qp(), attr));
    ASSERT_OK(ModifyQpToRtr(ep[i]->qp(), attr, 0, Gid{}, 0));
    ASSERT_OK(ModifyQpToRts(ep[i]->qp(), attr, 0));
  }
  ASSERT_OK_AND_ASSIGN(
      Gid dgid,
      ep[1]->context()->QueryGid(1, RoceV4GidIndex(ep[1]->context())));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Ah> ah,
      CreateAhTo(ep[0]->pd(), dgid, RoceV4GidIndex(ep[0]->context())));
  Buffer in(kGrh + 64);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr, ep[1]->RegMsgs(in.data(), in.size()));
  ASSERT_OK(ep[1]->PostRecv(1, in.data(), in.size(), mr.get()));
  const char msg[] = "datagram";
  ASSERT_OK(ep[0]->PostUdSend(2, msg, sizeof(msg), nullptr, kSendSignaled,
                              ah.get(), ep[1]->qp()->qp_num()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, ep[0]->GetSendComp());
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, ep[1]->GetRecvComp());
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, kGrh + sizeof(msg));
  EXPECT_EQ(rwc.src_qp, ep[0]->qp()->qp_num());
  EXPECT_EQ(std::memcmp(in.data() + kGrh, msg, sizeof(msg)), 0);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(UdEndpointTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
