// RC RDMA write and read: sizes, write with immediate, ordering on one QP,
// fences, completion opcodes, many WRs in flight.
#include <cstdint>
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

const uint32_t kMtu = MtuBytes(EndpointAttr().path_mtu);

struct Size {
  const char* name;
  uint32_t bytes;
};
void PrintTo(const Size& s, std::ostream* os) { *os << s.name; }

const Size kSizes[] = {
    {"One", 1},           {"Eight", 8},
    {"MtuMinus1", kMtu - 1}, {"Mtu", kMtu},
    {"MtuPlus1", kMtu + 1},  {"SixtyFourKiB", 64 * 1024},
    {"OneMiB", 1u << 20},
};

constexpr uint32_t kGuard = 64;

class RdmaSizeTest : public ProviderTestWithParam<Size> {};

TEST_P(RdmaSizeTest, WriteLandsExactly) {
  const uint32_t size = param().bytes;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p,
                       MakePair(size + 2 * kGuard));
  p->cbuf.FillPattern(31);
  p->sbuf.Set(0xee);
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), size, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(kGuard),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaWrite)) << wc;
  EXPECT_EQ(p->sbuf.Bytes(kGuard, size), p->cbuf.Bytes(0, size));
  EXPECT_EQ(p->sbuf.Bytes(0, kGuard), std::vector<uint8_t>(kGuard, 0xee));
  EXPECT_EQ(p->sbuf.Bytes(kGuard + size, kGuard),
            std::vector<uint8_t>(kGuard, 0xee));
  // A plain write consumes no receive and completes nothing remotely.
  EXPECT_THAT(Drain(p->server().recv_cq()), IsEmpty());
}

TEST_P(RdmaSizeTest, ReadFetchesExactly) {
  const uint32_t size = param().bytes;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p,
                       MakePair(size + 2 * kGuard));
  p->sbuf.FillPattern(32);
  p->cbuf.Set(0xee);
  ASSERT_OK(p->client().PostRead(1, p->cbuf.data() + kGuard, size,
                                 p->cmr.get(), kSendSignaled, p->sbuf.addr(),
                                 p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaRead)) << wc;
  EXPECT_EQ(p->cbuf.Bytes(kGuard, size), p->sbuf.Bytes(0, size));
  EXPECT_EQ(p->cbuf.Bytes(0, kGuard), std::vector<uint8_t>(kGuard, 0xee));
  EXPECT_EQ(p->cbuf.Bytes(kGuard + size, kGuard),
            std::vector<uint8_t>(kGuard, 0xee));
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(RdmaSizeTest,
                                       ::testing::ValuesIn(kSizes));

class RdmaTest : public ProviderTest {};

TEST_P(RdmaTest, ZeroLengthWriteAndReadSucceed) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.FillPattern(1);
  p->cbuf.FillPattern(2);
  const std::vector<uint8_t> server = p->sbuf.Bytes(0, p->sbuf.size());
  const std::vector<uint8_t> client = p->cbuf.Bytes(0, p->cbuf.size());
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 0, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK(p->client().PostRead(2, p->cbuf.data(), 0, p->cmr.get(),
                                 kSendSignaled, p->sbuf.addr(),
                                 p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(wcs[0], WcOk(1u, WcOpcode::kRdmaWrite)) << wcs[0];
  EXPECT_THAT(wcs[1], WcOk(2u, WcOpcode::kRdmaRead)) << wcs[1];
  EXPECT_EQ(p->sbuf.Bytes(0, p->sbuf.size()), server);
  EXPECT_EQ(p->cbuf.Bytes(0, p->cbuf.size()), client);
}

TEST_P(RdmaTest, WriteWithImmediateConsumesAReceive) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->cbuf.FillPattern(3, 0, 2000);
  p->sbuf.Set(0xee);
  // The receive buffer is separate from the target and stays untouched.
  ASSERT_OK(p->server().PostRecv(10, p->sbuf.data() + 32768, 64,
                                 p->smr.get()));
  const Sge sge = SgeOf(*p->cmr, 0, 2000);
  SendWr wr = MakeWr(WrOpcode::kRdmaWriteWithImm, 11, {&sge, 1});
  wr.imm_data = 0xc0ffee;
  wr.rdma.remote_addr = p->sbuf.addr(100);
  wr.rdma.rkey = p->smr->rkey();
  if (!expect().has_immediate) {
    // rdma-core providers/siw/siw.c map_send_opcode: no immediate data.
    EXPECT_THAT(p->client().Post(wr), HasErrno(EINVAL));
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    return;
  }
  ASSERT_OK(p->client().Post(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(11u, WcOpcode::kRdmaWrite)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(10u, WcOpcode::kRecvRdmaWithImm)) << rwc;
  EXPECT_NE(rwc.wc_flags & kWcWithImm, 0u);
  EXPECT_EQ(rwc.imm_data, 0xc0ffeeu);
  EXPECT_EQ(rwc.byte_len, 2000u);
  EXPECT_EQ(p->sbuf.Bytes(100, 2000), p->cbuf.Bytes(0, 2000));
  EXPECT_EQ(p->sbuf.Bytes(32768, 64), std::vector<uint8_t>(64, 0xee));
}

TEST_P(RdmaTest, ZeroLengthWriteWithImmediate) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(10, p->sbuf.data(), 64, p->smr.get()));
  SendWr wr = MakeWr(WrOpcode::kRdmaWriteWithImm, 11, {});
  wr.imm_data = 42;
  wr.rdma.remote_addr = p->sbuf.addr();
  wr.rdma.rkey = p->smr->rkey();
  if (!expect().has_immediate) {
    // rdma-core providers/siw/siw.c map_send_opcode: no immediate data.
    EXPECT_THAT(p->client().Post(wr), HasErrno(EINVAL));
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    return;
  }
  ASSERT_OK(p->client().Post(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(p->client().send_cq()));
  EXPECT_THAT(swc, WcOk(11u, WcOpcode::kRdmaWrite)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(p->server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(10u, WcOpcode::kRecvRdmaWithImm)) << rwc;
  EXPECT_EQ(rwc.imm_data, 42u);
  EXPECT_EQ(rwc.byte_len, 0u);
}

TEST_P(RdmaTest, WriteThenReadOnOneQpSeesTheWrite) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->cbuf.FillPattern(4, 0, 3000);
  p->sbuf.FillPattern(5);  // old contents, different
  // The write is unsignaled; the read is posted right behind it.
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 3000, p->cmr.get(), 0,
                                  p->sbuf.addr(500), p->smr->rkey()));
  ASSERT_OK(p->client().PostRead(2, p->cbuf.data() + 8192, 3000, p->cmr.get(),
                                 kSendSignaled, p->sbuf.addr(500),
                                 p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(2u, WcOpcode::kRdmaRead)) << wc;
  EXPECT_EQ(p->cbuf.Bytes(8192, 3000), p->cbuf.Bytes(0, 3000));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(RdmaTest, FencedWriteAfterReadIsAcceptedAndOrdered) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.FillPattern(6, 0, 4096);
  const std::vector<uint8_t> original = p->sbuf.Bytes(0, 4096);
  p->cbuf.FillPattern(7, 8192, 4096);
  ASSERT_OK(p->client().PostRead(1, p->cbuf.data(), 4096, p->cmr.get(),
                                 kSendSignaled, p->sbuf.addr(),
                                 p->smr->rkey()));
  ASSERT_OK(p->client().PostWrite(2, p->cbuf.data() + 8192, 4096, p->cmr.get(),
                                  kSendSignaled | kSendFence, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 2));
  EXPECT_THAT(wcs[0], WcOk(1u, WcOpcode::kRdmaRead)) << wcs[0];
  EXPECT_THAT(wcs[1], WcOk(2u, WcOpcode::kRdmaWrite)) << wcs[1];
  EXPECT_EQ(p->cbuf.Bytes(0, 4096), original) << "read saw the later write";
  EXPECT_EQ(p->sbuf.Bytes(0, 4096), p->cbuf.Bytes(8192, 4096));
}

TEST_P(RdmaTest, ManyWritesInFlightCompleteInPostOrder) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024));
  constexpr int kN = 32;
  p->cbuf.FillPattern(8);
  std::vector<SendWr> wrs;
  std::vector<Sge> sges(kN);
  for (int i = 0; i < kN; ++i) {
    sges[i] = SgeOf(*p->cmr, i * 2000, 1500 + i);
    SendWr wr = MakeWr(WrOpcode::kRdmaWrite, 1000 + i, {&sges[i], 1});
    wr.rdma.remote_addr = p->sbuf.addr(i * 2000);
    wr.rdma.rkey = p->smr->rkey();
    wrs.push_back(wr);
  }
  size_t bad = 99;
  ASSERT_OK(p->client().qp()->PostSend(wrs, &bad));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_THAT(wcs[i], WcOk(1000u + i, WcOpcode::kRdmaWrite)) << wcs[i];
    EXPECT_EQ(p->sbuf.Bytes(i * 2000, 1500 + i),
              p->cbuf.Bytes(i * 2000, 1500 + i));
  }
}

TEST_P(RdmaTest, ManyReadsInFlightCompleteInPostOrder) {
  // More reads than max_rd_atomic allows at once: the requester must queue.
  EndpointAttr attr = DefaultAttr();
  attr.max_rd_atomic = 2;
  attr.max_dest_rd_atomic = 2;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024, attr));
  constexpr int kN = 16;
  p->sbuf.FillPattern(9);
  std::vector<SendWr> wrs;
  std::vector<Sge> sges(kN);
  for (int i = 0; i < kN; ++i) {
    sges[i] = SgeOf(*p->cmr, i * 4000, 3000 + i);
    SendWr wr = MakeWr(WrOpcode::kRdmaRead, 2000 + i, {&sges[i], 1});
    wr.rdma.remote_addr = p->sbuf.addr(i * 100);
    wr.rdma.rkey = p->smr->rkey();
    wrs.push_back(wr);
  }
  ASSERT_OK(p->client().qp()->PostSend(wrs));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_THAT(wcs[i], WcOk(2000u + i, WcOpcode::kRdmaRead)) << wcs[i];
    EXPECT_EQ(p->cbuf.Bytes(i * 4000, 3000 + i),
              p->sbuf.Bytes(i * 100, 3000 + i));
  }
}

TEST_P(RdmaTest, ReadIntoScatteredSges) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024));
  const DeviceAttr& device = p->client().context()->device_attr();
  if (device.max_sge_rd < 3) {
    GTEST_SKIP() << "the device reports max_sge_rd " << device.max_sge_rd
                 << " (siw: iWARP reads into one SGE)";
  }
  p->sbuf.FillPattern(10, 0, 3000);
  p->cbuf.Set(0xee);
  const Sge sges[] = {SgeOf(*p->cmr, 40000, 1000), SgeOf(*p->cmr, 100, 7),
                      SgeOf(*p->cmr, 20000, 1993)};
  ASSERT_OK(p->client().PostReadv(1, sges, kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaRead)) << wc;
  EXPECT_EQ(p->cbuf.Bytes(40000, 1000), p->sbuf.Bytes(0, 1000));
  EXPECT_EQ(p->cbuf.Bytes(100, 7), p->sbuf.Bytes(1000, 7));
  EXPECT_EQ(p->cbuf.Bytes(20000, 1993), p->sbuf.Bytes(1007, 1993));
  EXPECT_EQ(p->cbuf[107], 0xee);
}

TEST_P(RdmaTest, WriteFromGatheredSges) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair(64 * 1024));
  p->cbuf.FillPattern(11);
  const Sge sges[] = {SgeOf(*p->cmr, 30000, 1500), SgeOf(*p->cmr, 5, 3),
                      SgeOf(*p->cmr, 9000, 700), SgeOf(*p->cmr, 100, 1)};
  ASSERT_OK(p->client().PostWritev(1, sges, kSendSignaled, p->sbuf.addr(10),
                                   p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kRdmaWrite)) << wc;
  EXPECT_EQ(p->sbuf.Bytes(10, 1500), p->cbuf.Bytes(30000, 1500));
  EXPECT_EQ(p->sbuf.Bytes(1510, 3), p->cbuf.Bytes(5, 3));
  EXPECT_EQ(p->sbuf.Bytes(1513, 700), p->cbuf.Bytes(9000, 700));
  EXPECT_EQ(p->sbuf.Bytes(2213, 1), p->cbuf.Bytes(100, 1));
  EXPECT_EQ(p->sbuf[2214], 0);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(RdmaTest);

// Every opcode posted on one QP gets the completion opcode ibv_wc says.
struct OpcodeCase {
  WrOpcode wr;
  WcOpcode wc;
};
void PrintTo(const OpcodeCase& c, std::ostream* os) {
  *os << WrOpcodeName(c.wr);
}

class CompletionOpcodeTest : public ProviderTestWithParam<OpcodeCase> {};

TEST_P(CompletionOpcodeTest, MatchesTheWorkRequest) {
  const OpcodeCase c = param();
  const bool atomic = c.wr == WrOpcode::kAtomicCmpAndSwp ||
                      c.wr == WrOpcode::kAtomicFetchAndAdd;
  if (atomic && !expect().has_atomics) {
    GTEST_SKIP() << "no atomics on profile " << expect().profile;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->server().PostRecv(1, p->sbuf.data() + 8192, 4096,
                                 p->smr.get()));
  const Sge sge = SgeOf(*p->cmr, 0, atomic ? 8 : 64);
  SendWr wr = MakeWr(c.wr, 5, {&sge, 1});
  wr.rdma.remote_addr = p->sbuf.addr();
  wr.rdma.rkey = p->smr->rkey();
  wr.atomic.remote_addr = p->sbuf.addr();
  wr.atomic.rkey = p->smr->rkey();
  wr.imm_data = 1;
  if (!expect().has_immediate && (c.wr == WrOpcode::kSendWithImm ||
                                  c.wr == WrOpcode::kRdmaWriteWithImm)) {
    // rdma-core providers/siw/siw.c map_send_opcode: no immediate data.
    EXPECT_THAT(p->client().Post(wr), HasErrno(EINVAL));
    EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
    return;
  }
  ASSERT_OK(p->client().Post(wr));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(5u, c.wc)) << wc;
  EXPECT_EQ(wc.qp_num, p->client().qp()->qp_num());
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    CompletionOpcodeTest,
    ::testing::Values(
        OpcodeCase{WrOpcode::kSend, WcOpcode::kSend},
        OpcodeCase{WrOpcode::kSendWithImm, WcOpcode::kSend},
        OpcodeCase{WrOpcode::kRdmaWrite, WcOpcode::kRdmaWrite},
        OpcodeCase{WrOpcode::kRdmaWriteWithImm, WcOpcode::kRdmaWrite},
        OpcodeCase{WrOpcode::kRdmaRead, WcOpcode::kRdmaRead},
        OpcodeCase{WrOpcode::kAtomicCmpAndSwp, WcOpcode::kCompSwap},
        OpcodeCase{WrOpcode::kAtomicFetchAndAdd, WcOpcode::kFetchAdd}));

}  // namespace
}  // namespace testing
}  // namespace verbsim
