// RC send/receive: sizes around the MTU, ordering of receives, gather and
// scatter, immediate data, inline data, signaling, RNR recovery.
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <tuple>
#include <vector>

#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const uint32_t kMtu = MtuBytes(EndpointAttr().path_mtu);

struct Size {
  const char* name;
  uint32_t bytes;
};
void PrintTo(const Size& s, std::ostream* os) { *os << s.name; }

const Size kSizes[] = {
    {"Zero", 0},
    {"One", 1},
    {"MtuMinus1", kMtu - 1},
    {"Mtu", kMtu},
    {"MtuPlus1", kMtu + 1},
    {"ThreeMtusAndABit", 3 * kMtu + 7},
    {"OneMiB", 1u << 20},
};

class SendSizeTest : public ProviderTestWithParam<Size> {};

TEST_P(SendSizeTest, ArrivesIntactWithByteLen) {
  const uint32_t size = param().bytes;
  constexpr uint32_t kGuard = 64;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(size + kGuard));
  p->cbuf.FillPattern(9);
  p->sbuf.Set(0xee);
  ASSERT_OK(p->server().PostRecv(0xabc, p->sbuf.data(), size + kGuard,
                                 p->smr.get()));
  ASSERT_OK(p->client().PostSend(0xdef, p->cbuf.data(), size, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(0xdefu, WcOpcode::kSend)) << swc;
  EXPECT_EQ(swc.qp_num, p->client().qp()->qp_num());
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(0xabcu, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, size);
  EXPECT_EQ(rwc.qp_num, p->server().qp()->qp_num());
  EXPECT_EQ(rwc.wc_flags & kWcWithImm, 0u);
  EXPECT_EQ(p->sbuf.Bytes(0, size), p->cbuf.Bytes(0, size));
  EXPECT_EQ(p->sbuf.Bytes(size, kGuard), std::vector<uint8_t>(kGuard, 0xee))
      << "bytes past the message were written";
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
  EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(SendSizeTest,
                                       ::testing::ValuesIn(kSizes));

// Gather from `send_sges` SGEs, scatter into `recv_sges` SGEs.
class SgeCountTest : public ProviderTestWithParam<std::tuple<int, int>> {};

// `total` split into `n` unequal pieces (weights 1..n).
std::vector<uint32_t> Split(uint32_t total, int n) {
  std::vector<uint32_t> out;
  const uint32_t weights = static_cast<uint32_t>(n * (n + 1) / 2);
  uint32_t used = 0;
  for (int i = 0; i < n; ++i) {
    uint32_t len = i == n - 1 ? total - used
                              : total * static_cast<uint32_t>(i + 1) / weights;
    out.push_back(len);
    used += len;
  }
  return out;
}

TEST_P(SgeCountTest, GatherAndScatter) {
  const int send_sges = std::get<0>(param());
  const int recv_sges = std::get<1>(param());
  constexpr uint32_t kTotal = 2500;  // spans three 1024-byte packets
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024));
  p->cbuf.FillPattern(21);
  p->sbuf.Set(0xee);

  // Pieces come from scattered, descending places of the client buffer.
  std::vector<Sge> gather;
  std::vector<uint8_t> expected;
  size_t where = 60000;
  for (uint32_t len : Split(kTotal, send_sges)) {
    where -= len + 1000;
    gather.push_back(SgeOf(*p->cmr, where, len));
    const std::vector<uint8_t> piece = p->cbuf.Bytes(where, len);
    expected.insert(expected.end(), piece.begin(), piece.end());
  }
  // Receive pieces at ascending, non-adjacent offsets; exactly kTotal bytes.
  std::vector<Sge> scatter;
  std::vector<std::pair<size_t, uint32_t>> pieces;
  size_t at = 100;
  for (uint32_t len : Split(kTotal, recv_sges)) {
    scatter.push_back(SgeOf(*p->smr, at, len));
    pieces.push_back({at, len});
    at += len + 333;
  }
  ASSERT_OK(p->server().PostRecvv(5, scatter));
  ASSERT_OK(p->client().PostSendv(6, gather, kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(6u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(5u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, kTotal);
  std::vector<uint8_t> got;
  for (const auto& [offset, len] : pieces) {
    const std::vector<uint8_t> piece = p->sbuf.Bytes(offset, len);
    got.insert(got.end(), piece.begin(), piece.end());
    // The gap after each piece is untouched.
    EXPECT_EQ(p->sbuf[offset + len], 0xee);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(p->sbuf[99], 0xee);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    SgeCountTest, ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                     ::testing::Values(1, 2, 3, 4)));

class SendRecvTest : public ProviderTest {};

TEST_P(SendRecvTest, ReceivesAreConsumedInPostOrder) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024));
  constexpr int kN = 6;
  for (int i = 0; i < kN; ++i) {
    ASSERT_OK(p->server().PostRecv(100 + i, p->sbuf.data() + i * 4096, 4096,
                                   p->smr.get()));
  }
  for (int i = 0; i < kN; ++i) {
    const uint32_t len = 100 + 300 * i;
    p->cbuf.FillPattern(static_cast<uint8_t>(i), i * 4096, len);
    ASSERT_OK(p->client().PostSend(200 + i, p->cbuf.data() + i * 4096, len,
                                   p->cmr.get(), kSendSignaled));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> sends,
                       AwaitN(p->client().send_cq(), kN));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> recvs,
                       AwaitN(p->server().recv_cq(), kN));
  for (int i = 0; i < kN; ++i) {
    const uint32_t len = 100 + 300 * i;
    EXPECT_THAT(sends[i], WcOk(200u + i, WcOpcode::kSend)) << sends[i];
    EXPECT_THAT(recvs[i], WcOk(100u + i, WcOpcode::kRecv)) << recvs[i];
    EXPECT_EQ(recvs[i].byte_len, len);
    EXPECT_EQ(p->sbuf.Bytes(i * 4096, len), p->cbuf.Bytes(i * 4096, len))
        << "message " << i;
  }
}

TEST_P(SendRecvTest, SendWithImmediateDeliversImmAndFlag) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->cbuf.FillPattern(2, 0, 300);
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 4096, p->smr.get()));
  const Sge sge = SgeOf(*p->cmr, 0, 300);
  SendWr wr = MakeWr(WrOpcode::kSendWithImm, 2, {&sge, 1});
  wr.imm_data = 0x8badf00d;
  if (!expect().has_immediate) {
    // rdma-core providers/siw/siw.c map_send_opcode: no immediate data.
    EXPECT_THAT(p->client().Post(wr), HasErrno(EINVAL));
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    return;
  }
  ASSERT_OK(p->client().Post(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_NE(rwc.wc_flags & kWcWithImm, 0u);
  EXPECT_EQ(rwc.imm_data, 0x8badf00du);
  EXPECT_EQ(rwc.byte_len, 300u);
  EXPECT_EQ(p->sbuf.Bytes(0, 300), p->cbuf.Bytes(0, 300));
}

TEST_P(SendRecvTest, WrIdsRoundTripUnchanged) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const uint64_t ids[] = {0, 1, 0xffffffffffffffffull, 0x8000000000000001ull,
                          0x0123456789abcdefull};
  for (uint64_t id : ids) {
    ASSERT_OK(p->server().PostRecv(~id, p->sbuf.data(), 64, p->smr.get()));
    ASSERT_OK(p->client().PostSend(id, p->cbuf.data(), 8, p->cmr.get(),
                                   kSendSignaled));
    ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
    EXPECT_THAT(swc, WcOk(id, WcOpcode::kSend)) << swc;
    ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
    EXPECT_THAT(rwc, WcOk(~id, WcOpcode::kRecv)) << rwc;
  }
}

TEST_P(SendRecvTest, UnsignaledSendsCompleteOnlyThroughALaterSignaledOne) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(p->server().PostRecv(10 + i, p->sbuf.data() + i * 128, 128,
                                   p->smr.get()));
  }
  ASSERT_OK(p->client().PostSend(1, p->cbuf.data(), 16, p->cmr.get(), 0));
  ASSERT_OK(p->client().PostSend(2, p->cbuf.data(), 16, p->cmr.get(), 0));
  ASSERT_OK(p->client().PostSend(3, p->cbuf.data(), 16, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(3u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> recvs,
                       AwaitN(p->server().recv_cq(), 3));
  EXPECT_THAT(recvs, ElementsAre(WcOk(10u, WcOpcode::kRecv),
                                 WcOk(11u, WcOpcode::kRecv),
                                 WcOk(12u, WcOpcode::kRecv)));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(SendRecvTest, UnsignaledSendAloneProducesNoCompletion) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(10, p->sbuf.data(), 128, p->smr.get()));
  ASSERT_OK(p->client().PostSend(1, p->cbuf.data(), 16, p->cmr.get(), 0));
  // It was delivered ...
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(10u, WcOpcode::kRecv)) << rwc;
  // ... yet the sender sees nothing.
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(SendRecvTest, SqSigAllSignalsEveryWr) {
  EndpointAttr attr = DefaultAttr();
  attr.sq_sig_all = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(p->server().PostRecv(10 + i, p->sbuf.data() + i * 128, 128,
                                   p->smr.get()));
    ASSERT_OK(p->client().PostSend(i, p->cbuf.data(), 16, p->cmr.get(), 0));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> sends,
                       AwaitN(p->client().send_cq(), 3));
  EXPECT_THAT(sends, ElementsAre(WcOk(0u, WcOpcode::kSend),
                                 WcOk(1u, WcOpcode::kSend),
                                 WcOk(2u, WcOpcode::kSend)));
  EXPECT_TRUE(p->client().qp()->init_attr().sq_sig_all);
}

TEST_P(SendRecvTest, SolicitedFlagIsAccepted) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 128, p->smr.get()));
  ASSERT_OK(p->client().PostSend(2, p->cbuf.data(), 32, p->cmr.get(),
                                 kSendSignaled | kSendSolicited));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
}

TEST_P(SendRecvTest, SendPostedBeforeTheReceiveSucceedsAfterRnrRetries) {
  if (!expect().has_rnr) {
    GTEST_SKIP() << "iWARP has no RNR: a send without a receive ends the "
                    "connection (IwarpTest.SendWithoutAReceiveTerminates)";
  }
  // rnr_retry 7: the requester retries for as long as it takes.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->cbuf.FillPattern(8, 0, 500);
  ASSERT_OK(p->client().PostSend(1, p->cbuf.data(), 500, p->cmr.get(),
                                 kSendSignaled));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
  ASSERT_OK(p->server().PostRecv(2, p->sbuf.data(), 4096, p->smr.get()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(1u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(2u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, 500u);
  EXPECT_EQ(p->sbuf.Bytes(0, 500), p->cbuf.Bytes(0, 500));
}

TEST_P(SendRecvTest, BothDirectionsAtOnce) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024));
  p->cbuf.FillPattern(1, 0, 8192);
  p->sbuf.FillPattern(2, 0, 8192);
  ASSERT_OK(p->client().PostRecv(1, p->cbuf.data() + 16384, 8192,
                                 p->cmr.get()));
  ASSERT_OK(p->server().PostRecv(2, p->sbuf.data() + 16384, 8192,
                                 p->smr.get()));
  ASSERT_OK(p->client().PostSend(3, p->cbuf.data(), 8192, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK(p->server().PostSend(4, p->sbuf.data(), 8192, p->smr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion c_send, Await(p->client().send_cq()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion s_send, Await(p->server().send_cq()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion c_recv, Await(p->client().recv_cq()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion s_recv, Await(p->server().recv_cq()));
  EXPECT_THAT(c_send, WcOk(3u, WcOpcode::kSend));
  EXPECT_THAT(s_send, WcOk(4u, WcOpcode::kSend));
  EXPECT_THAT(c_recv, WcOk(1u, WcOpcode::kRecv));
  EXPECT_THAT(s_recv, WcOk(2u, WcOpcode::kRecv));
  EXPECT_EQ(p->cbuf.Bytes(16384, 8192), p->sbuf.Bytes(0, 8192));
  EXPECT_EQ(p->sbuf.Bytes(16384, 8192), p->cbuf.Bytes(0, 8192));
}

TEST_P(SendRecvTest, SendWithInvalidateAndLocalInvalidateArePostable) {
  // Their outcome on an MR from RegMr is the memory-window work's; here only
  // that the post itself is accepted.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 128, p->smr.get()));
  const Sge sge = SgeOf(*p->cmr, 0, 16);
  SendWr inv = MakeWr(WrOpcode::kSendWithInv, 2, {&sge, 1});
  inv.invalidate_rkey = p->smr->rkey();
  EXPECT_OK(p->client().Post(inv));
  SendWr local = MakeWr(WrOpcode::kLocalInv, 3, {});
  local.invalidate_rkey = p->cmr->lkey();
  if (!expect().has_local_inv) {
    // rdma-core providers/siw/siw.c map_send_opcode: no LOCAL_INV.
    EXPECT_THAT(p->client().Post(local), HasErrno(EINVAL));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    return;
  }
  EXPECT_OK(p->client().Post(local));
  // Each gets exactly one completion, in post order.
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_EQ(wcs[0].wr_id, 2u);
  EXPECT_EQ(wcs[1].wr_id, 3u);
}

TEST_P(SendRecvTest, ReceiveWithoutSgesTakesAZeroByteMessage) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  if (!expect().recv_may_have_no_sge) {
    // rdma-core providers/siw/siw.c push_recv_wqe: num_sge 0 is EINVAL.
    EXPECT_THAT(p->server().PostRecvv(1, {}), HasErrno(EINVAL));
    return;
  }
  ASSERT_OK(p->server().PostRecvv(1, {}));
  ASSERT_OK(p->client().PostSend(2, p->cbuf.data(), 0, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, 0u);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(SendRecvTest);

// Every path MTU: multi-packet sends and reads segment and reassemble.
struct PathMtu {
  Mtu mtu;
};
void PrintTo(const PathMtu& m, std::ostream* os) {
  *os << "Mtu" << MtuBytes(m.mtu);
}

class PathMtuTest : public ProviderTestWithParam<PathMtu> {};

TEST_P(PathMtuTest, MultiPacketSendAndReadAtThisMtu) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(PortAttr port, context->QueryPort(1));
  if (MtuBytes(param().mtu) > MtuBytes(port.active_mtu)) {
    GTEST_SKIP() << "the port's active MTU is " << MtuBytes(port.active_mtu);
  }
  EndpointAttr attr = DefaultAttr();
  attr.path_mtu = param().mtu;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  ASSERT_OK_AND_ASSIGN(QpAttr qattr, p->client().qp()->Query());
  // siw_query_qp reports the netdev's MTU, not the QP's (TCP segments).
  EXPECT_EQ(qattr.path_mtu, expect().query_reports_qp_attrs
                                ? param().mtu
                                : port.active_mtu);
  const uint32_t size = 5 * static_cast<uint32_t>(MtuBytes(param().mtu)) + 3;
  p->cbuf.FillPattern(40, 0, size);
  p->sbuf.FillPattern(41, 32768, size);
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), size, p->smr.get()));
  ASSERT_OK(p->client().PostSend(2, p->cbuf.data(), size, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK(p->client().PostRead(3, p->cbuf.data() + 32768, size,
                                 p->cmr.get(), kSendSignaled,
                                 p->sbuf.addr(32768), p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> sends,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(sends, ElementsAre(WcOk(2u, WcOpcode::kSend),
                                 WcOk(3u, WcOpcode::kRdmaRead)));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, size);
  EXPECT_EQ(p->sbuf.Bytes(0, size), p->cbuf.Bytes(0, size));
  EXPECT_EQ(p->cbuf.Bytes(32768, size), p->sbuf.Bytes(32768, size));
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    PathMtuTest,
    ::testing::Values(PathMtu{Mtu::k256}, PathMtu{Mtu::k512},
                      PathMtu{Mtu::k1024}, PathMtu{Mtu::k2048},
                      PathMtu{Mtu::k4096}));

class PsnTest : public ProviderTestWithParam<uint32_t> {};

TEST_P(PsnTest, TrafficAcrossThePsnWrapIsIntact) {
  // Start the PSNs just below 2^24 so that the messages cross the wrap.
  EndpointAttr attr = DefaultAttr();
  attr.sq_psn = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  ASSERT_OK_AND_ASSIGN(QpAttr qattr, p->client().qp()->Query());
  // iWARP has no PSN: siw_query_qp reports none.
  EXPECT_EQ(qattr.sq_psn, expect().query_reports_qp_attrs ? param() : 0u);
  p->cbuf.FillPattern(50);
  p->sbuf.FillPattern(51, 40000, 8000);
  constexpr int kN = 4;
  const uint32_t len = 3 * kMtu + 5;  // four packets each
  for (int i = 0; i < kN; ++i) {
    ASSERT_OK(p->server().PostRecv(i, p->sbuf.data() + i * 5000, 5000,
                                   p->smr.get()));
  }
  for (int i = 0; i < kN; ++i) {
    ASSERT_OK(p->client().PostSend(10 + i, p->cbuf.data() + i * 5000, len,
                                   p->cmr.get(), kSendSignaled));
  }
  ASSERT_OK(p->client().PostRead(20, p->cbuf.data() + 40000, 8000,
                                 p->cmr.get(), kSendSignaled,
                                 p->sbuf.addr(40000), p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> sends,
                       AwaitN(p->client().send_cq(), kN + 1));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> recvs,
                       AwaitN(p->server().recv_cq(), kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_THAT(sends[i], WcOk(10u + i, WcOpcode::kSend)) << sends[i];
    EXPECT_THAT(recvs[i], WcOk(static_cast<uint64_t>(i), WcOpcode::kRecv));
    EXPECT_EQ(p->sbuf.Bytes(i * 5000, len), p->cbuf.Bytes(i * 5000, len));
  }
  EXPECT_THAT(sends[kN], WcOk(20u, WcOpcode::kRdmaRead)) << sends[kN];
  EXPECT_EQ(p->cbuf.Bytes(40000, 8000), p->sbuf.Bytes(40000, 8000));
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(PsnTest,
                                       ::testing::Values(0u, 0xfffffeu,
                                                         0xfffff0u));

// Inline sends: the buffer is reusable as soon as the post returns.
class InlineSendTest : public ProviderTestWithParam<int> {};

TEST_P(InlineSendTest, BufferIsReusableRightAfterPost) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK_AND_ASSIGN(QpAttr attr, p->client().qp()->Query());
  const uint32_t max_inline = attr.cap.max_inline_data;
  ASSERT_GE(max_inline, EndpointAttr().cap.max_inline_data);
  // param(): 1, 16, or 0 meaning "exactly max_inline_data".
  const uint32_t size = param() == 0 ? max_inline : param();
  std::vector<uint8_t> data = Pattern(77, size);
  const std::vector<uint8_t> sent = data;
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 4096, p->smr.get()));
  // No MR: the endpoint sends inline (rdma_post_send with a null mr).
  ASSERT_OK(p->client().PostSend(2, data.data(), size, nullptr,
                                 kSendSignaled));
  std::memset(data.data(), 0x5a, size);
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, size);
  EXPECT_EQ(p->sbuf.Bytes(0, size), sent);
}

TEST_P(InlineSendTest, InlineWriteBufferIsReusableRightAfterPost) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK_AND_ASSIGN(QpAttr attr, p->client().qp()->Query());
  const uint32_t size = param() == 0 ? attr.cap.max_inline_data : param();
  std::vector<uint8_t> data = Pattern(78, size);
  const std::vector<uint8_t> sent = data;
  ASSERT_OK(p->client().PostWrite(3, data.data(), size, nullptr,
                                  kSendSignaled, p->sbuf.addr(128),
                                  p->smr->rkey()));
  std::memset(data.data(), 0x5a, size);
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(3u, WcOpcode::kRdmaWrite)) << swc;
  EXPECT_EQ(p->sbuf.Bytes(128, size), sent);
  EXPECT_EQ(p->sbuf[127], 0);
  EXPECT_EQ(p->sbuf[128 + size], 0);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(InlineSendTest,
                                       ::testing::Values(1, 16, 0));

class InlineLimitTest : public ProviderTest {};

TEST_P(InlineLimitTest, InlineOverMaxInlineDataIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK_AND_ASSIGN(QpAttr attr, p->client().qp()->Query());
  const uint32_t size = attr.cap.max_inline_data + 1;
  std::vector<uint8_t> data(size, 1);
  EXPECT_THAT(p->client().PostSend(1, data.data(), size, nullptr,
                                   kSendSignaled),
              HasErrno(EINVAL));
  EXPECT_THAT(p->client().PostWrite(2, data.data(), size, nullptr,
                                    kSendSignaled, p->sbuf.addr(),
                                    p->smr->rkey()),
              HasErrno(EINVAL));
  ExpectQpState(p->client().qp(), QpState::kRts);
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(InlineLimitTest, InlineIgnoresTheLkey) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  std::vector<uint8_t> data = Pattern(5, 32);
  Sge sge;
  sge.addr = reinterpret_cast<uint64_t>(data.data());
  sge.length = 32;
  sge.lkey = 0xdeadbeef;  // no such MR: inline data is not checked
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 4096, p->smr.get()));
  ASSERT_OK(p->client().PostSendv(2, {&sge, 1}, kSendSignaled | kSendInline));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_EQ(rwc.byte_len, 32u);
  EXPECT_EQ(p->sbuf.Bytes(0, 32), data);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(InlineLimitTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
