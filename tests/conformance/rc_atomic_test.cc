// RC atomics: fetch-and-add and compare-and-swap return the original value
// and change remote memory; alignment and access are checked.
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

namespace verbsim {
namespace testing {
namespace {

// Skips a test on a device without atomics.
#define SKIP_WITHOUT_ATOMICS()                                        \
  if (!expect().has_atomics) {                                        \
    GTEST_SKIP() << "no atomics on profile " << expect().profile;     \
  }

SendWr AtomicWr(WrOpcode op, uint64_t wr_id, const Sge* sge, uint64_t addr,
                uint32_t rkey, uint64_t compare_add, uint64_t swap = 0) {
  SendWr wr = MakeWr(op, wr_id, {sge, 1});
  wr.atomic.remote_addr = addr;
  wr.atomic.rkey = rkey;
  wr.atomic.compare_add = compare_add;
  wr.atomic.swap = swap;
  return wr;
}

struct AddCase {
  uint64_t initial;
  uint64_t add;
};
void PrintTo(const AddCase& c, std::ostream* os) {
  *os << std::hex << c.initial << "_plus_" << c.add;
}

class FetchAddTest : public ProviderTestWithParam<AddCase> {};

TEST_P(FetchAddTest, ReturnsOriginalAndAdds) {
  SKIP_WITHOUT_ATOMICS();
  const AddCase c = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.Store64(64, c.initial);
  p->sbuf.Store64(56, 0x1111111111111111ull);
  p->sbuf.Store64(72, 0x2222222222222222ull);
  p->cbuf.Store64(0, 0xdeaddeaddeaddeadull);
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  ASSERT_OK(p->client().Post(AtomicWr(WrOpcode::kAtomicFetchAndAdd, 1, &sge,
                                      p->sbuf.addr(64), p->smr->rkey(),
                                      c.add)));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(1u, WcOpcode::kFetchAdd)) << wc;
  EXPECT_EQ(wc.byte_len, 8u);
  EXPECT_EQ(p->cbuf.Load64(0), c.initial);
  EXPECT_EQ(p->sbuf.Load64(64), c.initial + c.add);
  // Neighbours untouched.
  EXPECT_EQ(p->sbuf.Load64(56), 0x1111111111111111ull);
  EXPECT_EQ(p->sbuf.Load64(72), 0x2222222222222222ull);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    FetchAddTest,
    ::testing::Values(AddCase{0, 1}, AddCase{41, 1},
                      AddCase{0xffffffffffffffffull, 1},
                      AddCase{0x00000000ffffffffull, 1},
                      AddCase{0x123456789ull, 0xffffffff00000000ull}));

struct CasCase {
  const char* name;
  uint64_t initial;
  uint64_t compare;
  uint64_t swap;
};
void PrintTo(const CasCase& c, std::ostream* os) { *os << c.name; }

class CompareSwapTest : public ProviderTestWithParam<CasCase> {};

TEST_P(CompareSwapTest, ReturnsOriginalAndSwapsIffEqual) {
  SKIP_WITHOUT_ATOMICS();
  const CasCase c = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.Store64(128, c.initial);
  p->cbuf.Store64(8, 0xdeaddeaddeaddeadull);
  const Sge sge = SgeOf(*p->cmr, 8, 8);
  ASSERT_OK(p->client().Post(AtomicWr(WrOpcode::kAtomicCmpAndSwp, 2, &sge,
                                      p->sbuf.addr(128), p->smr->rkey(),
                                      c.compare, c.swap)));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcOk(2u, WcOpcode::kCompSwap)) << wc;
  EXPECT_EQ(p->cbuf.Load64(8), c.initial);
  EXPECT_EQ(p->sbuf.Load64(128),
            c.compare == c.initial ? c.swap : c.initial);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    CompareSwapTest,
    ::testing::Values(
        CasCase{"Equal", 0x1234, 0x1234, 0xabcd},
        CasCase{"EqualZero", 0, 0, 0xffffffffffffffffull},
        CasCase{"Differs", 0x1234, 0x1235, 0xabcd},
        CasCase{"DiffersInHighWord", 0x0000000100000000ull, 0, 7}));

// A target not 8-byte aligned: REM_INV_REQ_ERR and nothing changes.
class MisalignedAtomicTest
    : public ProviderTestWithParam<std::tuple<WrOpcode, int>> {};

TEST_P(MisalignedAtomicTest, IsRemoteInvalidRequest) {
  SKIP_WITHOUT_ATOMICS();
  const WrOpcode op = std::get<0>(param());
  const int offset = std::get<1>(param());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.FillPattern(1, 0, 256);
  const std::vector<uint8_t> before = p->sbuf.Bytes(0, 256);
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  if (expect().misaligned_atomic_refused_at_post) {
    EXPECT_THAT(p->client().Post(AtomicWr(op, 3, &sge,
                                          p->sbuf.addr(64 + offset),
                                          p->smr->rkey(), 1, 2)),
                HasErrno(EINVAL));
    EXPECT_THAT(Drain(p->client().send_cq()), ::testing::IsEmpty());
    EXPECT_EQ(p->sbuf.Bytes(0, 256), before);
    ExpectQpState(p->client().qp(), QpState::kRts);
    return;
  }
  ASSERT_OK(p->client().Post(AtomicWr(op, 3, &sge, p->sbuf.addr(64 + offset),
                                      p->smr->rkey(), 1, 2)));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().misaligned_atomic)) << wc;
  EXPECT_EQ(wc.wr_id, 3u);
  EXPECT_EQ(p->sbuf.Bytes(0, 256), before);
  ExpectQpState(p->client().qp(), QpState::kErr);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    MisalignedAtomicTest,
    ::testing::Combine(::testing::Values(WrOpcode::kAtomicFetchAndAdd,
                                         WrOpcode::kAtomicCmpAndSwp),
                       ::testing::Values(1, 4, 7)));

class AtomicTest : public ProviderTest {};

TEST_P(AtomicTest, SequenceOfFetchAddsIsSerialised) {
  SKIP_WITHOUT_ATOMICS();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  constexpr int kN = 20;
  p->sbuf.Store64(0, 1000);
  std::vector<Sge> sges(kN);
  std::vector<SendWr> wrs;
  for (int i = 0; i < kN; ++i) {
    sges[i] = SgeOf(*p->cmr, 8 * i, 8);
    wrs.push_back(AtomicWr(WrOpcode::kAtomicFetchAndAdd, i, &sges[i],
                           p->sbuf.addr(0), p->smr->rkey(), 1));
  }
  ASSERT_OK(p->client().qp()->PostSend(wrs));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), kN));
  for (int i = 0; i < kN; ++i) {
    EXPECT_THAT(wcs[i], WcOk(static_cast<uint64_t>(i), WcOpcode::kFetchAdd));
    EXPECT_EQ(p->cbuf.Load64(8 * i), 1000u + i) << "atomic " << i;
  }
  EXPECT_EQ(p->sbuf.Load64(0), 1000u + kN);
}

TEST_P(AtomicTest, CompareSwapThenFetchAddChain) {
  SKIP_WITHOUT_ATOMICS();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.Store64(8, 5);
  const Sge a = SgeOf(*p->cmr, 0, 8);
  const Sge b = SgeOf(*p->cmr, 8, 8);
  const Sge c = SgeOf(*p->cmr, 16, 8);
  ASSERT_OK(p->client().Post(AtomicWr(WrOpcode::kAtomicCmpAndSwp, 1, &a,
                                      p->sbuf.addr(8), p->smr->rkey(), 5,
                                      100)));
  ASSERT_OK(p->client().Post(AtomicWr(WrOpcode::kAtomicFetchAndAdd, 2, &b,
                                      p->sbuf.addr(8), p->smr->rkey(), 11)));
  ASSERT_OK(p->client().Post(AtomicWr(WrOpcode::kAtomicCmpAndSwp, 3, &c,
                                      p->sbuf.addr(8), p->smr->rkey(), 5,
                                      999)));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(p->client().send_cq(), 3));
  EXPECT_THAT(wcs[0], WcOk(1u, WcOpcode::kCompSwap));
  EXPECT_THAT(wcs[1], WcOk(2u, WcOpcode::kFetchAdd));
  EXPECT_THAT(wcs[2], WcOk(3u, WcOpcode::kCompSwap));
  EXPECT_EQ(p->cbuf.Load64(0), 5u);
  EXPECT_EQ(p->cbuf.Load64(8), 100u);
  EXPECT_EQ(p->cbuf.Load64(16), 111u);
  EXPECT_EQ(p->sbuf.Load64(8), 111u);
}

TEST_P(AtomicTest, WithoutRemoteAtomicOnTheMrIsRemAccessErr) {
  SKIP_WITHOUT_ATOMICS();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Buffer target(4096);
  target.Store64(0, 77);
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Mr> mr,
      p->server().RegMr(target.data(), 4096,
                        kAccessLocalWrite | kAccessRemoteWrite |
                            kAccessRemoteRead));
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  ASSERT_OK(p->client().Post(AtomicWr(WrOpcode::kAtomicFetchAndAdd, 4, &sge,
                                      target.addr(), mr->rkey(), 1)));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().remote_mr_access)) << wc;
  EXPECT_EQ(wc.wr_id, 4u);
  EXPECT_EQ(target.Load64(0), 77u);
  ExpectQpState(p->client().qp(), QpState::kErr);
}

TEST_P(AtomicTest, AtomicWithBadRkeyIsRemAccessErr) {
  SKIP_WITHOUT_ATOMICS();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->sbuf.Store64(0, 9);
  const Sge sge = SgeOf(*p->cmr, 0, 8);
  ASSERT_OK(p->client().Post(AtomicWr(WrOpcode::kAtomicCmpAndSwp, 5, &sge,
                                      p->sbuf.addr(), ~p->smr->rkey(), 9,
                                      10)));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().bad_rkey)) << wc;
  EXPECT_EQ(p->sbuf.Load64(0), 9u);
  ExpectQpState(p->client().qp(), QpState::kErr);
}

TEST_P(AtomicTest, AtomicNeedsOneEightByteSge) {
  SKIP_WITHOUT_ATOMICS();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const Sge four = SgeOf(*p->cmr, 0, 4);
  EXPECT_THAT(p->client().Post(AtomicWr(WrOpcode::kAtomicFetchAndAdd, 6,
                                        &four, p->sbuf.addr(),
                                        p->smr->rkey(), 1)),
              HasErrno(EINVAL));
  const Sge two[] = {SgeOf(*p->cmr, 0, 8), SgeOf(*p->cmr, 8, 8)};
  SendWr wr = AtomicWr(WrOpcode::kAtomicFetchAndAdd, 7, &two[0],
                       p->sbuf.addr(), p->smr->rkey(), 1);
  wr.sg_list = two;
  if (expect().atomic_takes_any_sge_list_of_8_bytes) {
    // Taken: the original value lands in the first 8 bytes.
    p->sbuf.Store64(0, 41);
    ASSERT_OK(p->client().Post(wr));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
    EXPECT_THAT(wc, WcOk(7u, WcOpcode::kFetchAdd)) << wc;
    EXPECT_EQ(p->cbuf.Load64(0), 41u);
    EXPECT_EQ(p->sbuf.Load64(0), 42u);
    return;
  }
  EXPECT_THAT(p->client().Post(wr), HasErrno(EINVAL));
  ExpectQpState(p->client().qp(), QpState::kRts);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(AtomicTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
