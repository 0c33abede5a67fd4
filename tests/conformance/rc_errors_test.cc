// RC error cases of docs/semantics.md section 2, with the status each side sees
// (from the expectations table), the QP states afterwards, and the flush of
// everything outstanding or posted later.
#include <cstdint>
#include <memory>
#include <ostream>
#include <tuple>
#include <vector>

#include "core/names.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"
#include "tests/observed.h"

namespace verbsim {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;


// On iWARP (Expectations::remote_errors_terminate) an error ends the
// connection: the side that detects it sends a TERMINATE and both QPs go to
// ERR, flushing their receives. A receive posted beforehand on `ep` shows,
// by its flush, that `ep` got there; WRs posted before then race the
// TERMINATE, so the cases post nothing more until it has arrived.
constexpr uint64_t kSentinelRecv = 99;
absl::Status PostSentinelRecv(RcPair& p, Endpoint& ep) {
  Buffer& buf = &ep == &p.client() ? p.cbuf : p.sbuf;
  Mr* mr = &ep == &p.client() ? p.cmr.get() : p.smr.get();
  return ep.PostRecv(kSentinelRecv, buf.data() + buf.size() - 64, 64, mr);
}
void ExpectSentinelFlushed(Endpoint& ep) {
  absl::StatusOr<WorkCompletion> wc = Await(ep.recv_cq());
  ASSERT_TRUE(wc.ok()) << wc.status();
  EXPECT_THAT(*wc, WcFlushed(kSentinelRecv)) << *wc;
}

enum class Op { kSend, kWrite, kRead, kFetchAdd, kCmpSwap };
void PrintTo(Op op, std::ostream* os) {
  static const char* const kNames[] = {"Send", "Write", "Read", "FetchAdd",
                                       "CmpSwap"};
  *os << kNames[static_cast<int>(op)];
}
bool IsAtomicOp(Op op) { return op == Op::kFetchAdd || op == Op::kCmpSwap; }

WrOpcode OpcodeOf(Op op) {
  switch (op) {
    case Op::kSend: return WrOpcode::kSend;
    case Op::kWrite: return WrOpcode::kRdmaWrite;
    case Op::kRead: return WrOpcode::kRdmaRead;
    case Op::kFetchAdd: return WrOpcode::kAtomicFetchAndAdd;
    case Op::kCmpSwap: return WrOpcode::kAtomicCmpAndSwp;
  }
  return WrOpcode::kSend;
}

// Posts `op` from the client: local [0, length) of cmr (8 bytes for
// atomics) to the server's buffer at `remote_offset`, with `rkey` and `lkey`.
absl::Status PostOp(RcPair& p, Op op, uint64_t wr_id, uint32_t length,
                    uint32_t lkey, uint32_t rkey, uint64_t remote_offset = 0,
                    uint32_t flags = kSendSignaled) {
  Sge sge = SgeOf(*p.cmr, 0, IsAtomicOp(op) ? 8 : length);
  sge.lkey = lkey;
  SendWr wr = MakeWr(OpcodeOf(op), wr_id, {&sge, 1}, flags);
  wr.rdma.remote_addr = p.sbuf.addr(remote_offset);
  wr.rdma.rkey = rkey;
  wr.atomic.remote_addr = p.sbuf.addr(remote_offset);
  wr.atomic.rkey = rkey;
  wr.atomic.compare_add = 1;
  wr.atomic.swap = 2;
  return p.client().Post(wr);
}

// --- Bad keys ------------------------------------------------------------------

class BadRkeyTest : public ProviderTestWithParam<Op> {};

TEST_P(BadRkeyTest, RequesterRemAccessErrQpToErrResponderSeesNothing) {
  const Op op = param();
  if (IsAtomicOp(op) && !expect().has_atomics) {
    GTEST_SKIP() << "no atomics on profile " << expect().profile;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.FillPattern(1, 0, 4096);
  const std::vector<uint8_t> before = p->sbuf.Bytes(0, 4096);
  ASSERT_OK(PostOp(*p, op, 1, 512, p->cmr->lkey(), BadKey(p->smr->rkey())));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().bad_rkey)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(wc.qp_num, p->client().qp()->qp_num());
  ExpectQpState(p->client().qp(), QpState::kErr);
  EXPECT_EQ(p->sbuf.Bytes(0, 4096), before);
  EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    BadRkeyTest,
    ::testing::Values(Op::kWrite, Op::kRead, Op::kFetchAdd, Op::kCmpSwap));

class ZeroLengthBadRkeyTest : public ProviderTestWithParam<Op> {};

TEST_P(ZeroLengthBadRkeyTest, StatusIsOneTheProfileAllows) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(PostOp(*p, param(), 1, 0, p->cmr->lkey(), BadKey(p->smr->rkey())));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().zero_length_bad_rkey)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  ExpectQpState(p->client().qp(), wc.status == WcStatus::kSuccess ? QpState::kRts
                                                             : QpState::kErr);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(ZeroLengthBadRkeyTest,
                                       ::testing::Values(Op::kWrite,
                                                         Op::kRead));

class BadLkeyTest : public ProviderTestWithParam<Op> {};

TEST_P(BadLkeyTest, RequesterLocalProtectionErrorNothingSent) {
  const Op op = param();
  if (IsAtomicOp(op) && !expect().has_atomics) {
    GTEST_SKIP() << "no atomics on profile " << expect().profile;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.FillPattern(2, 0, 4096);
  const std::vector<uint8_t> before = p->sbuf.Bytes(0, 4096);
  ASSERT_OK(p->server().PostRecv(9, p->sbuf.data() + 8192, 4096,
                                 p->smr.get()));
  ASSERT_OK(PostOp(*p, op, 1, 512, BadKey(p->cmr->lkey()), p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().bad_lkey)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  ExpectQpState(p->client().qp(), QpState::kErr);
  if (IsAtomicOp(op) && expect().atomic_executes_before_local_check) {
    // The responder executed it; only the requester's copy-back failed.
    EXPECT_NE(p->sbuf.Bytes(0, 4096), before);
  } else {
    EXPECT_EQ(p->sbuf.Bytes(0, 4096), before);
  }
  if (expect().remote_errors_terminate) {
    // The requester's TERMINATE moves the server to ERR too.
    ASSERT_OK_AND_ASSIGN(WorkCompletion flushed,
                         Await(p->server().recv_cq()));
    EXPECT_THAT(flushed, WcFlushed(9u)) << flushed;
    ExpectQpState(p->server().qp(), QpState::kErr);
  } else {
    EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
    ExpectQpState(p->server().qp(), QpState::kRts);
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    BadLkeyTest,
    ::testing::Values(Op::kSend, Op::kWrite, Op::kRead, Op::kFetchAdd));

// --- Receive-side protection ------------------------------------------------

enum class RecvFault { kBadLkey, kAddressOutsideMr, kMrDeregistered,
                       kMrWithoutLocalWrite };
void PrintTo(RecvFault f, std::ostream* os) {
  static const char* const kNames[] = {"BadLkey", "AddressOutsideMr",
                                       "MrDeregistered",
                                       "MrWithoutLocalWrite"};
  *os << kNames[static_cast<int>(f)];
}

class RecvProtectionTest : public ProviderTestWithParam<RecvFault> {};

TEST_P(RecvProtectionTest, SenderRemOpErrReceiverLocalError) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Buffer rbuf(8192);
  rbuf.Set(0xee);
  const RecvFault fault = param();
  const uint32_t access = fault == RecvFault::kMrWithoutLocalWrite
                              ? kAccessRemoteRead
                              : kAccessLocalWrite;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       p->server().RegMr(rbuf.data(), 4096, access));
  Sge sge = SgeOf(*mr, 0, 1024);
  switch (fault) {
    case RecvFault::kBadLkey:
      sge.lkey = BadKey(mr->lkey());
      break;
    case RecvFault::kAddressOutsideMr:
      sge.addr = rbuf.addr(4096 - 512);  // 512 bytes past the MR's end
      break;
    case RecvFault::kMrDeregistered:
    case RecvFault::kMrWithoutLocalWrite:
      break;
  }
  ASSERT_OK(p->server().PostRecvv(1, {&sge, 1}));
  ASSERT_OK(p->server().PostRecv(2, p->sbuf.data(), 4096, p->smr.get()));
  if (fault == RecvFault::kMrDeregistered) {
    ASSERT_OK(p->server().DeregMr(mr));
  }
  p->cbuf.FillPattern(3, 0, 1024);
  ASSERT_OK(p->client().PostSend(10, p->cbuf.data(), 1024, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcStatusIn(expect().recv_prot_sender)) << swc;
  EXPECT_EQ(swc.wr_id, 10u);
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcStatusIn(expect().recv_prot_receiver)) << rwc;
  EXPECT_EQ(rwc.wr_id, 1u);
  EXPECT_EQ(rwc.qp_num, p->server().qp()->qp_num());
  // Both QPs are in ERR; the second receive is flushed.
  ASSERT_OK_AND_ASSIGN(WorkCompletion flushed, Await(p->server().recv_cq()));
  EXPECT_THAT(flushed, WcFlushed(2u)) << flushed;
  ExpectQpState(p->client().qp(), QpState::kErr);
  ExpectQpState(p->server().qp(), QpState::kErr);
  // Nothing was written outside the MR.
  EXPECT_EQ(rbuf.Bytes(4096, 4096), std::vector<uint8_t>(4096, 0xee));
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    RecvProtectionTest,
    ::testing::Values(RecvFault::kBadLkey, RecvFault::kAddressOutsideMr,
                      RecvFault::kMrDeregistered,
                      RecvFault::kMrWithoutLocalWrite));

// --- Receive too small -------------------------------------------------------

class RecvTooSmallTest
    : public ProviderTestWithParam<std::tuple<uint32_t, uint32_t>> {};

TEST_P(RecvTooSmallTest, SenderRemInvReqErrReceiverLocLenErr) {
  const uint32_t recv_len = std::get<0>(param());
  const uint32_t send_len = std::get<1>(param());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.Set(0xee);
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), recv_len, p->smr.get()));
  ASSERT_OK(p->server().PostRecv(2, p->sbuf.data() + 16384, 16384,
                                 p->smr.get()));
  const bool terminates = expect().remote_errors_terminate;
  if (terminates) {
    ASSERT_OK(PostSentinelRecv(*p, p->client()));
  }
  ASSERT_OK(p->client().PostSend(10, p->cbuf.data(), send_len, p->cmr.get(),
                                 kSendSignaled));
  if (terminates) {
    // The second send goes once the TERMINATE has arrived (else it races).
    ASSERT_NO_FATAL_FAILURE(ExpectSentinelFlushed(p->client()));
  }
  ASSERT_OK(p->client().PostSend(11, p->cbuf.data(), 8, p->cmr.get(),
                                 kSendSignaled));
  const bool later_flushed = expect().flushes_send_posted_in_err;
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> swcs,
                       AwaitN(p->client().send_cq(), later_flushed ? 2 : 1));
  EXPECT_THAT(swcs[0], WcStatusIn(expect().recv_too_small_sender)) << swcs[0];
  EXPECT_EQ(swcs[0].wr_id, 10u);
  if (later_flushed) {
    EXPECT_THAT(swcs[1], WcFlushed(11u)) << swcs[1];
  } else {
    // siw: taken, never completed.
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> rwcs,
                       AwaitN(p->server().recv_cq(), 2));
  EXPECT_THAT(rwcs[0], WcStatusIn(expect().recv_too_small_receiver))
      << rwcs[0];
  EXPECT_EQ(rwcs[0].wr_id, 1u);
  EXPECT_THAT(rwcs[1], WcFlushed(2u)) << rwcs[1];
  ExpectQpState(p->client().qp(), QpState::kErr);
  ExpectQpState(p->server().qp(), QpState::kErr);
  // Nothing beyond the receive buffer was written.
  EXPECT_EQ(p->sbuf.Bytes(recv_len, 1024), std::vector<uint8_t>(1024, 0xee));
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    RecvTooSmallTest,
    ::testing::Values(std::make_tuple(0u, 1u), std::make_tuple(100u, 101u),
                      std::make_tuple(1024u, 1025u),
                      std::make_tuple(1024u, 4096u)));

// --- No receive posted (RNR) -------------------------------------------------

class RnrTest : public ProviderTestWithParam<int> {};

TEST_P(RnrTest, RnrRetryExhaustedIsRnrRetryExcErr) {
  if (!expect().has_rnr) {
    GTEST_SKIP() << "iWARP has no RNR: a send without a receive ends the "
                    "connection (IwarpTest.SendWithoutAReceiveTerminates)";
  }
  EndpointAttr attr = DefaultAttr();
  attr.rnr_retry = static_cast<uint8_t>(param());
  attr.min_rnr_timer = 1;  // 0.01 ms
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  ASSERT_OK(p->client().PostSend(1, p->cbuf.data(), 100, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().rnr_exceeded)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  ExpectQpState(p->client().qp(), QpState::kErr);
  // The responder only said "not ready": it is not in error.
  ExpectQpState(p->server().qp(), QpState::kRts);
  EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
}

TEST_P(RnrTest, WriteWithImmediateWithoutAReceiveIsRnrToo) {
  if (!expect().has_rnr || !expect().has_immediate) {
    GTEST_SKIP() << "no RNR and no immediate data on profile "
                 << expect().profile;
  }
  EndpointAttr attr = DefaultAttr();
  attr.rnr_retry = static_cast<uint8_t>(param());
  attr.min_rnr_timer = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  const Sge sge = SgeOf(*p->cmr, 0, 64);
  SendWr wr = MakeWr(WrOpcode::kRdmaWriteWithImm, 1, {&sge, 1});
  wr.imm_data = 5;
  wr.rdma.remote_addr = p->sbuf.addr();
  wr.rdma.rkey = p->smr->rkey();
  ASSERT_OK(p->client().Post(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().rnr_exceeded)) << wc;
  ExpectQpState(p->client().qp(), QpState::kErr);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(RnrTest, ::testing::Values(0, 1, 3));

// --- Peer silent -------------------------------------------------------------

enum class PeerGone { kReset, kDestroyed };
void PrintTo(PeerGone g, std::ostream* os) {
  *os << (g == PeerGone::kReset ? "PeerReset" : "PeerDestroyed");
}

class PeerGoneTest : public ProviderTestWithParam<std::tuple<Op, PeerGone>> {};

TEST_P(PeerGoneTest, RetriesExhaustedIsRetryExcErr) {
  if (!expect().has_transport_retries) {
    GTEST_SKIP() << "iWARP has no transport retry count: TCP retransmits "
                    "(siw_verbs_modify_qp ignores retry_cnt)";
  }
  const Op op = std::get<0>(param());
  EndpointAttr attr = DefaultAttr();
  attr.timeout = 8;  // 4.096 us * 2^8 = 1 ms
  attr.retry_cnt = 2;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  if (std::get<1>(param()) == PeerGone::kReset) {
    QpAttr reset;
    reset.qp_state = QpState::kReset;
    ASSERT_OK(p->server().qp()->Modify(reset, kQpState));
  } else {
    ASSERT_OK(p->server().qp()->Destroy());
  }
  ASSERT_OK(PostOp(*p, op, 1, 256, p->cmr->lkey(), p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().retry_exceeded)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  ExpectQpState(p->client().qp(), QpState::kErr);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    PeerGoneTest,
    ::testing::Combine(::testing::Values(Op::kSend, Op::kWrite, Op::kRead),
                       ::testing::Values(PeerGone::kReset,
                                         PeerGone::kDestroyed)));

// --- Access rights: MR and QP ---------------------------------------------------

// The remote MR lacks exactly the right the opcode needs.
class RemoteMrAccessTest : public ProviderTestWithParam<Op> {};

TEST_P(RemoteMrAccessTest, IsRemAccessErr) {
  const Op op = param();
  if (IsAtomicOp(op) && !expect().has_atomics) {
    GTEST_SKIP() << "no atomics on profile " << expect().profile;
  }
  uint32_t needed = op == Op::kWrite   ? kAccessRemoteWrite
                    : op == Op::kRead ? kAccessRemoteRead
                                      : kAccessRemoteAtomic;
  const uint32_t access = FullAccess() & ~needed;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p,
                       MakePair(64 * 1024, DefaultAttr(), access));
  ASSERT_NE(p->smr->access() & needed, needed);
  p->sbuf.FillPattern(4, 0, 4096);
  const std::vector<uint8_t> before = p->sbuf.Bytes(0, 4096);
  ASSERT_OK(PostOp(*p, op, 1, 256, p->cmr->lkey(), p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().remote_mr_access)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  ExpectQpState(p->client().qp(), QpState::kErr);
  EXPECT_EQ(p->sbuf.Bytes(0, 4096), before);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    RemoteMrAccessTest, ::testing::Values(Op::kWrite, Op::kRead,
                                          Op::kFetchAdd));

// The remote QP lacks the REMOTE_* flag the opcode needs (its MR has it).
class RemoteQpAccessTest : public ProviderTestWithParam<Op> {};

TEST_P(RemoteQpAccessTest, IsARemoteError) {
  const Op op = param();
  if (IsAtomicOp(op) && !expect().has_atomics) {
    GTEST_SKIP() << "no atomics on profile " << expect().profile;
  }
  uint32_t needed = op == Op::kWrite   ? kAccessRemoteWrite
                    : op == Op::kRead ? kAccessRemoteRead
                                      : kAccessRemoteAtomic;
  EndpointAttr attr = DefaultAttr();
  attr.qp_access = (kAccessLocalWrite | kAccessRemoteWrite |
                    kAccessRemoteRead | kAccessRemoteAtomic) &
                   ~needed;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  p->sbuf.FillPattern(5, 0, 4096);
  const std::vector<uint8_t> before = p->sbuf.Bytes(0, 4096);
  if (!expect().enforces_qp_access) {
    // siw keeps the QP's access flags but its receive path never checks
    // them (siw_qp.c, siw_qp_rx.c): the operation succeeds.
    p->cbuf.FillPattern(6, 0, 256);
    ASSERT_OK(PostOp(*p, op, 1, 256, p->cmr->lkey(), p->smr->rkey()));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
    EXPECT_THAT(wc, WcStatusIs(WcStatus::kSuccess)) << wc;
    EXPECT_EQ(p->cbuf.Bytes(0, 256), p->sbuf.Bytes(0, 256));
    return;
  }
  ASSERT_OK_AND_ASSIGN(QpAttr server_attr, p->server().qp()->Query());
  ASSERT_EQ(server_attr.qp_access_flags & needed, 0u);
  ASSERT_OK(PostOp(*p, op, 1, 256, p->cmr->lkey(), p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().remote_qp_access)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  ExpectQpState(p->client().qp(), QpState::kErr);
  EXPECT_EQ(p->sbuf.Bytes(0, 4096), before);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    RemoteQpAccessTest, ::testing::Values(Op::kWrite, Op::kRead,
                                          Op::kFetchAdd));

class RcErrorTest : public ProviderTest {};

TEST_P(RcErrorTest, ReadIntoLocalMrWithoutLocalWriteIsLocalProtectionError) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Buffer local(4096);
  local.Set(0xee);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       p->client().RegMr(local.data(), 4096,
                                         kAccessRemoteRead));
  p->sbuf.FillPattern(6, 0, 512);
  ASSERT_OK(p->client().PostRead(1, local.data(), 512, mr.get(),
                                 kSendSignaled, p->sbuf.addr(),
                                 p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().read_into_readonly_mr)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  ExpectQpState(p->client().qp(), QpState::kErr);
  EXPECT_EQ(local.Bytes(0, 4096), std::vector<uint8_t>(4096, 0xee));
}

TEST_P(RcErrorTest, LkeyOfAnMrInAnotherPdIsLocalProtectionError) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> other,
                       p->client().context()->AllocPd());
  Buffer local(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       other->RegMr(local.data(), 4096, kAccessLocalWrite));
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 4096, p->smr.get()));
  ASSERT_OK(p->client().PostSend(2, local.data(), 64, mr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().bad_lkey)) << wc;
  ExpectQpState(p->client().qp(), QpState::kErr);
  if (expect().remote_errors_terminate) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion flushed,
                         Await(p->server().recv_cq()));
    EXPECT_THAT(flushed, WcFlushed(1u)) << flushed;
  } else {
    EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
  }
}

TEST_P(RcErrorTest, RkeyOfAnMrInAnotherPdIsRejected) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> other,
                       p->server().context()->AllocPd());
  Buffer target(4096);
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Mr> mr,
      other->RegMr(target.data(), 4096,
                   kAccessLocalWrite | kAccessRemoteWrite));
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 64, p->cmr.get(),
                                  kSendSignaled, target.addr(), mr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().rkey_of_other_pd)) << wc;
  ExpectQpState(p->client().qp(), QpState::kErr);
  EXPECT_EQ(target.Bytes(0, 64), std::vector<uint8_t>(64, 0));
}

// --- After the first error -----------------------------------------------------

TEST_P(RcErrorTest, EverythingOutstandingAndLaterIsFlushedInPostOrder) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->client().PostRecv(20, p->cbuf.data() + 32768, 1024,
                                 p->cmr.get()));
  ASSERT_OK(p->client().PostRecv(21, p->cbuf.data() + 33792, 1024,
                                 p->cmr.get()));
  ASSERT_OK(p->server().PostRecv(30, p->sbuf.data() + 32768, 1024,
                                 p->smr.get()));
  const Sge sge = SgeOf(*p->cmr, 0, 256);
  if (expect().remote_errors_terminate) {
    // iWARP: the failing write completes once sent; the TERMINATE then
    // flushes the client's receives (WRs posted in between would race it).
    ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 256, p->cmr.get(),
                                    kSendSignaled, p->sbuf.addr(),
                                    BadKey(p->smr->rkey())));
    ASSERT_OK_AND_ASSIGN(WorkCompletion first, Await(p->client().send_cq()));
    EXPECT_THAT(first, WcStatusIn(expect().bad_rkey)) << first;
    EXPECT_EQ(first.wr_id, 1u);
    ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> recvs,
                         AwaitN(p->client().recv_cq(), 2));
    EXPECT_THAT(recvs, ElementsAre(WcFlushed(20u), WcFlushed(21u)));
    ASSERT_OK_AND_ASSIGN(WorkCompletion server_flushed,
                         Await(p->server().recv_cq()));
    EXPECT_THAT(server_flushed, WcFlushed(30u)) << server_flushed;
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    // Posting in ERR is allowed.
    ASSERT_OK(p->client().PostSend(6, p->cbuf.data(), 16, p->cmr.get(),
                                   kSendSignaled));
    if (expect().flushes_send_posted_in_err) {
      ASSERT_OK_AND_ASSIGN(WorkCompletion later, Await(p->client().send_cq()));
      EXPECT_THAT(later, WcFlushed(6u)) << later;
    } else {
      EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    }
    return;
  }
  // One batch: a failing write, then an unsignaled write, a send, a read.
  std::vector<SendWr> wrs;
  SendWr bad = MakeWr(WrOpcode::kRdmaWrite, 1, {&sge, 1});
  bad.rdma.remote_addr = p->sbuf.addr();
  bad.rdma.rkey = BadKey(p->smr->rkey());
  wrs.push_back(bad);
  SendWr quiet = MakeWr(WrOpcode::kRdmaWrite, 2, {&sge, 1}, 0);
  quiet.rdma.remote_addr = p->sbuf.addr();
  quiet.rdma.rkey = p->smr->rkey();
  wrs.push_back(quiet);
  wrs.push_back(MakeWr(WrOpcode::kSend, 3, {&sge, 1}));
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 4, {&sge, 1});
  read.rdma.remote_addr = p->sbuf.addr();
  read.rdma.rkey = p->smr->rkey();
  wrs.push_back(read);
  ASSERT_OK(p->client().qp()->PostSend(wrs));

  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> sends,
                       AwaitN(p->client().send_cq(), 4));
  EXPECT_THAT(sends[0], WcStatusIn(expect().bad_rkey)) << sends[0];
  EXPECT_EQ(sends[0].wr_id, 1u);
  // Flushed, the unsignaled one included.
  EXPECT_THAT(sends[1], WcFlushed(2u)) << sends[1];
  EXPECT_THAT(sends[2], WcFlushed(3u)) << sends[2];
  EXPECT_THAT(sends[3], WcFlushed(4u)) << sends[3];
  for (const WorkCompletion& wc : sends) {
    EXPECT_EQ(wc.qp_num, p->client().qp()->qp_num());
  }
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> recvs,
                       AwaitN(p->client().recv_cq(), 2));
  EXPECT_THAT(recvs, ElementsAre(WcFlushed(20u), WcFlushed(21u)));
  ExpectQpState(p->client().qp(), QpState::kErr);

  // Posting in ERR is allowed and completes flushed, in order.
  ASSERT_OK(p->client().PostSend(5, p->cbuf.data(), 16, p->cmr.get(), 0));
  ASSERT_OK(p->client().PostSend(6, p->cbuf.data(), 16, p->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK(p->client().PostRecv(22, p->cbuf.data(), 16, p->cmr.get()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> later,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(later, ElementsAre(WcFlushed(5u), WcFlushed(6u)));
  if (expect().flushes_recv_posted_in_err) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion later_recv,
                         Await(p->client().recv_cq()));
    EXPECT_THAT(later_recv, WcFlushed(22u));
  } else {
    EXPECT_THAT(Drain(p->client().recv_cq()), IsEmpty());
  }
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
  // The server's receive was never consumed by the flushed send.
  std::vector<WorkCompletion> server = Drain(p->server().recv_cq());
  for (const WorkCompletion& wc : server) {
    EXPECT_NE(wc.status, WcStatus::kSuccess) << wc;
  }
}

TEST_P(RcErrorTest, AnErrorCompletesAnUnsignaledWr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  if (expect().remote_errors_terminate) {
    // iWARP: the write completed (silently) once sent; only the TERMINATE
    // says it failed, by flushing the client's receive.
    ASSERT_OK(PostSentinelRecv(*p, p->client()));
    ASSERT_OK(p->client().PostWrite(7, p->cbuf.data(), 64, p->cmr.get(),
                                    /*flags=*/0, p->sbuf.addr(),
                                    BadKey(p->smr->rkey())));
    ASSERT_NO_FATAL_FAILURE(ExpectSentinelFlushed(p->client()));
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    return;
  }
  ASSERT_OK(p->client().PostWrite(7, p->cbuf.data(), 64, p->cmr.get(),
                                  /*flags=*/0, p->sbuf.addr(),
                                  BadKey(p->smr->rkey())));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().bad_rkey)) << wc;
  EXPECT_EQ(wc.wr_id, 7u);
  ExpectQpState(p->client().qp(), QpState::kErr);
}

// ibv_poll_cq(3): on an error completion only wr_id, status, qp_num and
// vendor_err are valid. mlx5 leaves the opcode unwritten (providers/mlx5/
// cq.c), and the ibta profile reports the other queue's opcode, so code
// that dispatches an error completion on its opcode fails here; siw copies
// the WR's. The case notes what each provider reports.
TEST_P(RcErrorTest, AnErrorCompletionsOpcodeIsOnlyWhatTheProviderSays) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(5, p->sbuf.data() + 4096, 64, p->smr.get()));
  // A READ with a bad rkey: the NAK's status, or on iWARP the TERMINATE's
  // flush (which moves the server's QP to ERR too).
  ASSERT_OK(p->client().PostRead(6, p->cbuf.data(), 64, p->cmr.get(),
                                 kSendSignaled, p->sbuf.addr(),
                                 BadKey(p->smr->rkey())));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  NoteCompletionStatus(swc.status);
  NoteValue("read_error_opcode", static_cast<int>(swc.opcode));
  EXPECT_EQ(swc.wr_id, 6u);
  EXPECT_NE(swc.status, WcStatus::kSuccess);
  // The server's receive, flushed as its QP goes to ERR (on iWARP it may
  // be there already: ERR to ERR is a valid transition).
  const QpStep err = ToStateStep(QpState::kErr);
  ASSERT_OK(p->server().qp()->Modify(err.attr, err.mask));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  NoteCompletionStatus(rwc.status);
  NoteValue("recv_error_opcode", static_cast<int>(rwc.opcode));
  EXPECT_THAT(rwc, WcFlushed(5u)) << rwc;
  switch (expect().error_completion_has_wr_opcode) {
    case Known::kYes:
      EXPECT_EQ(swc.opcode, WcOpcode::kRdmaRead);
      EXPECT_EQ(rwc.opcode, WcOpcode::kRecv);
      break;
    case Known::kNo:
      EXPECT_NE(swc.opcode, WcOpcode::kRdmaRead);
      EXPECT_NE(rwc.opcode, WcOpcode::kRecv);
      break;
    case Known::kUnknown:
      break;
  }
}

TEST_P(RcErrorTest, SuccessfulWrsBeforeTheErrorKeepTheirCompletions) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->cbuf.FillPattern(12, 0, 128);
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 128, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK(p->client().PostWrite(2, p->cbuf.data(), 128, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  BadKey(p->smr->rkey())));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(wcs[0], WcOk(1u, WcOpcode::kRdmaWrite)) << wcs[0];
  EXPECT_THAT(wcs[1], WcStatusIn(expect().bad_rkey)) << wcs[1];
  EXPECT_EQ(p->sbuf.Bytes(0, 128), p->cbuf.Bytes(0, 128));
}

TEST_P(RcErrorTest, ModifyToErrFlushesOutstandingSends) {
  if (!expect().has_transport_retries) {
    GTEST_SKIP() << "iWARP: a SEND completes once TCP has it, so a silent "
                    "peer leaves nothing outstanding to flush or discard";
  }
  // The peer is silent (RESET) and retries forever would take long: the
  // sends are outstanding when the client is moved to ERR.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  QpAttr reset;
  reset.qp_state = QpState::kReset;
  ASSERT_OK(p->server().qp()->Modify(reset, kQpState));
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_OK(p->client().PostSend(id, p->cbuf.data(), 64, p->cmr.get(),
                                   kSendSignaled));
  }
  QpAttr err;
  err.qp_state = QpState::kErr;
  ASSERT_OK(p->client().qp()->Modify(err, kQpState));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 3));
  EXPECT_THAT(wcs, ElementsAre(WcFlushed(1u), WcFlushed(2u), WcFlushed(3u)));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

// A receive posted to a QP in ERR, and a second move to ERR: where the post
// does not flush it, the move may (rxe's user-space post only writes the
// ring; rxe_qp_error runs the responder, which drains it).
TEST_P(RcErrorTest, AMoveToErrFlushesReceivesPostedInErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(MoveToErr(p->client().qp()));
  ExpectQpState(p->client().qp(), QpState::kErr);
  ASSERT_OK(p->client().PostRecv(31, p->cbuf.data(), 16, p->cmr.get()));
  ASSERT_OK(p->client().PostRecv(32, p->cbuf.data(), 16, p->cmr.get()));
  if (expect().flushes_recv_posted_in_err) {
    ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                         AwaitN(p->client().recv_cq(), 2));
    EXPECT_THAT(wcs, ElementsAre(WcFlushed(31u), WcFlushed(32u)));
  } else {
    EXPECT_THAT(Drain(p->client().recv_cq()), IsEmpty());
  }
  ASSERT_OK(MoveToErr(p->client().qp()));
  if (!expect().flushes_recv_posted_in_err &&
      expect().err_move_flushes_recv_posted_in_err) {
    ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                         AwaitN(p->client().recv_cq(), 2));
    EXPECT_THAT(wcs, ElementsAre(WcFlushed(31u), WcFlushed(32u)));
  }
  EXPECT_THAT(Drain(p->client().recv_cq()), IsEmpty());
  ExpectQpState(p->client().qp(), QpState::kErr);
}

TEST_P(RcErrorTest, ResetDiscardsOutstandingSendsWithoutCompletions) {
  if (!expect().has_transport_retries) {
    GTEST_SKIP() << "iWARP: a SEND completes once TCP has it, so a silent "
                    "peer leaves nothing outstanding to flush or discard";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  QpAttr reset;
  reset.qp_state = QpState::kReset;
  ASSERT_OK(p->server().qp()->Modify(reset, kQpState));
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_OK(p->client().PostSend(id, p->cbuf.data(), 64, p->cmr.get(),
                                   kSendSignaled));
  }
  ASSERT_OK(p->client().qp()->Modify(reset, kQpState));
  ExpectQpState(p->client().qp(), QpState::kReset);
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
  // Had they survived, ERR (by way of INIT) would flush them now.
  const QpStep init = ResetToInitStep();
  ASSERT_OK(p->client().qp()->Modify(init.attr, init.mask));
  QpAttr err;
  err.qp_state = QpState::kErr;
  ASSERT_OK(p->client().qp()->Modify(err, kQpState));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(RcErrorTest, SendWithInvalidateOfABadRkeyIsRemAccessErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data(), 4096, p->smr.get()));
  const Sge sge = SgeOf(*p->cmr, 0, 32);
  SendWr wr = MakeWr(WrOpcode::kSendWithInv, 2, {&sge, 1});
  wr.invalidate_rkey = BadKey(p->smr->rkey());
  ASSERT_OK(p->client().Post(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().send_inv_bad_rkey_sender)) << wc;
  EXPECT_EQ(wc.wr_id, 2u);
  if (!expect().send_inv_bad_rkey_receiver.empty()) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
    EXPECT_THAT(rwc, WcStatusIn(expect().send_inv_bad_rkey_receiver)) << rwc;
    EXPECT_EQ(rwc.wr_id, 1u);
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(RcErrorTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
