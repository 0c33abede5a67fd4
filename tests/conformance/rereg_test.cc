// MR re-registration (ibv_rereg_mr(3)): the translation, the PD and the
// access of a region change; the keys stay, and what they grant is the new
// region. Bad input changes nothing.
#include <cstdint>
#include <memory>

#include "core/types.h"
#include "core/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture.h"
#include "tests/matchers.h"

namespace verbsim {
namespace testing {
namespace {

class ReregTest : public ProviderTest {
 protected:
  void SetUp() override {
    ProviderTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(p_, MakePair());
    p_->sbuf.FillPattern(8);
  }
  // The client reads `len` bytes at server address `addr` through `rkey`.
  absl::StatusOr<WorkCompletion> Read(uint64_t addr, uint32_t len,
                                      uint32_t rkey) {
    absl::Status s = p_->client().PostRead(1, p_->cbuf.data(), len,
                                           p_->cmr.get(), kSendSignaled, addr,
                                           rkey);
    if (!s.ok()) return s;
    return Await(p_->client().send_cq());
  }
  absl::StatusOr<WorkCompletion> Write(uint64_t addr, uint32_t len,
                                       uint32_t rkey) {
    absl::Status s = p_->client().PostWrite(2, p_->cbuf.data(), len,
                                            p_->cmr.get(), kSendSignaled,
                                            addr, rkey);
    if (!s.ok()) return s;
    return Await(p_->client().send_cq());
  }
  Mr& smr() { return *p_->smr; }
  std::unique_ptr<RcPair> p_;
};

TEST_P(ReregTest, UnsupportedIsEopnotsuppAndChangesNothing) {
  if (expect().has_rereg) GTEST_SKIP() << "the provider re-registers";
  EXPECT_THAT(smr().Rereg(kReregChangeAccess, nullptr, nullptr, 0,
                          kAccessLocalWrite),
              HasErrno(EOPNOTSUPP));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Write(p_->sbuf.addr(), 8,
                                                smr().rkey()));
  EXPECT_THAT(wc, WcOk(2u, WcOpcode::kRdmaWrite)) << wc;
}

class ReregSupportedTest : public ReregTest {
 protected:
  void SetUp() override {
    ReregTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!expect().has_rereg) GTEST_SKIP() << "the provider has no ibv_rereg_mr";
  }
};

TEST_P(ReregSupportedTest, ChangeAccessKeepsTheKeysAndNarrowsThem) {
  const uint32_t lkey = smr().lkey(), rkey = smr().rkey();
  ASSERT_OK(smr().Rereg(kReregChangeAccess, nullptr, nullptr, 0,
                        kAccessLocalWrite | kAccessRemoteRead));
  EXPECT_EQ(smr().lkey(), lkey);
  EXPECT_EQ(smr().rkey(), rkey);
  EXPECT_EQ(smr().access(), kAccessLocalWrite | kAccessRemoteRead);
  ASSERT_OK_AND_ASSIGN(WorkCompletion rd, Read(p_->sbuf.addr(), 64, rkey));
  EXPECT_THAT(rd, WcOk(1u, WcOpcode::kRdmaRead)) << rd;
  ASSERT_OK_AND_ASSIGN(WorkCompletion wr, Write(p_->sbuf.addr(), 64, rkey));
  EXPECT_THAT(wr, WcStatusIs(WcStatus::kRemAccessErr)) << wr;
}

TEST_P(ReregSupportedTest, ChangeAccessCanWidenThem) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> ro,
                       p_->server().RegMr(p_->sbuf.data(), 4096,
                                          kAccessRemoteRead));
  ASSERT_OK(ro->Rereg(kReregChangeAccess, nullptr, nullptr, 0,
                      kAccessLocalWrite | kAccessRemoteWrite));
  ASSERT_OK_AND_ASSIGN(WorkCompletion after,
                       Write(p_->sbuf.addr(), 8, ro->rkey()));
  EXPECT_THAT(after, WcOk(2u, WcOpcode::kRdmaWrite)) << after;
}

TEST_P(ReregSupportedTest, ChangeTranslationMovesTheRegion) {
  Buffer other(8192);
  other.FillPattern(2);
  ASSERT_OK(smr().Rereg(kReregChangeTranslation, nullptr, other.data(), 8192,
                        0));
  EXPECT_EQ(smr().addr(), other.data());
  EXPECT_EQ(smr().length(), 8192u);
  ASSERT_OK_AND_ASSIGN(WorkCompletion rd,
                       Read(other.addr(4096), 128, smr().rkey()));
  EXPECT_THAT(rd, WcOk(1u, WcOpcode::kRdmaRead)) << rd;
  EXPECT_EQ(p_->cbuf.Bytes(0, 128), other.Bytes(4096, 128));
}

TEST_P(ReregSupportedTest, OldTranslationIsRejectedAfterwards) {
  Buffer other(8192);
  ASSERT_OK(smr().Rereg(kReregChangeTranslation, nullptr, other.data(), 8192,
                        0));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rd,
                       Read(p_->sbuf.addr(), 64, smr().rkey()));
  EXPECT_THAT(rd, WcStatusIs(WcStatus::kRemAccessErr)) << rd;
}

// After CHANGE_PD the region serves QPs of the new PD only: the server's QP
// (old PD) now meets an rkey of another PD.
TEST_P(ReregSupportedTest, ChangePdMovesTheRegionAwayFromTheQp) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd2,
                       p_->server().context()->AllocPd());
  ASSERT_OK(smr().Rereg(kReregChangePd, pd2.get(), nullptr, 0, 0));
  EXPECT_EQ(smr().pd(), pd2.get());
  EXPECT_THAT(p_->server().pd()->Destroy(), HasErrno(EBUSY))
      << "the endpoint's QP still uses its PD";
  EXPECT_THAT(pd2->Destroy(), HasErrno(EBUSY)) << "the region is in pd2 now";
  ASSERT_OK_AND_ASSIGN(WorkCompletion rd,
                       Read(p_->sbuf.addr(), 64, smr().rkey()));
  EXPECT_THAT(rd, WcStatusIn(expect().rkey_of_other_pd)) << rd;
  ASSERT_OK(p_->server().DeregMr(p_->smr));
}

TEST_P(ReregSupportedTest, ChangePdAndBackRestoresAccess) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd2,
                       p_->server().context()->AllocPd());
  ASSERT_OK(smr().Rereg(kReregChangePd, pd2.get(), nullptr, 0, 0));
  ASSERT_OK(smr().Rereg(kReregChangePd, p_->server().pd(), nullptr, 0, 0));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rd,
                       Read(p_->sbuf.addr(), 64, smr().rkey()));
  EXPECT_THAT(rd, WcOk(1u, WcOpcode::kRdmaRead)) << rd;
  EXPECT_OK(pd2->Destroy());
}

class ReregBadInputTest : public ReregSupportedTest {};

TEST_P(ReregBadInputTest, UnknownFlagsAreEinval) {
  EXPECT_THAT(smr().Rereg(1u << 5, nullptr, nullptr, 0, 0), HasErrno(EINVAL));
}

TEST_P(ReregBadInputTest, TranslationNeedsAddressAndLength) {
  EXPECT_THAT(smr().Rereg(kReregChangeTranslation, nullptr, nullptr, 64, 0),
              HasErrno(EINVAL));
  EXPECT_THAT(smr().Rereg(kReregChangeTranslation, nullptr, p_->sbuf.data(),
                          0, 0),
              HasErrno(EINVAL));
  EXPECT_EQ(smr().addr(), p_->sbuf.data());
}

TEST_P(ReregBadInputTest, RemoteWriteWithoutLocalWriteIsEinval) {
  const uint32_t before = smr().access();
  EXPECT_THAT(smr().Rereg(kReregChangeAccess, nullptr, nullptr, 0,
                          kAccessRemoteWrite),
              HasErrno(EINVAL));
  EXPECT_EQ(smr().access(), before);
}

TEST_P(ReregBadInputTest, AccessWithoutChangeAccessIsEinval) {
  EXPECT_THAT(smr().Rereg(kReregChangePd, p_->server().pd(), nullptr, 0,
                          kAccessLocalWrite),
              HasErrno(EINVAL));
}

TEST_P(ReregBadInputTest, NullPdIsEinval) {
  EXPECT_THAT(smr().Rereg(kReregChangePd, nullptr, nullptr, 0, 0),
              HasErrno(EINVAL));
  EXPECT_EQ(smr().pd(), p_->server().pd());
}

TEST_P(ReregBadInputTest, PdOfAnotherContextIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> other, OpenDevice(1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, other->AllocPd());
  EXPECT_THAT(smr().Rereg(kReregChangePd, pd.get(), nullptr, 0, 0),
              HasErrno(EINVAL));
}

TEST_P(ReregBadInputTest, RegionWithABoundWindowIsBusy) {
  if (!expect().has_mw) GTEST_SKIP() << "the provider has no memory windows";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       p_->server().RegMr(p_->sbuf.data(), 4096,
                                          kAccessLocalWrite | kAccessMwBind |
                                              kAccessRemoteRead));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw,
                       p_->server().pd()->AllocMw(MwType::kType1));
  MwBind bind;
  bind.send_flags = kSendSignaled;
  bind.bind_info.mr = mr.get();
  bind.bind_info.addr = p_->sbuf.addr();
  bind.bind_info.length = 64;
  bind.bind_info.mw_access_flags = kAccessRemoteRead;
  ASSERT_OK(p_->server().qp()->BindMw(mw.get(), bind));
  ASSERT_OK(Await(p_->server().send_cq()).status());
  EXPECT_THAT(mr->Rereg(kReregChangeAccess, nullptr, nullptr, 0,
                        kAccessLocalWrite),
              HasErrno(EBUSY));
}

TEST_P(ReregBadInputTest, DeregisteredRegionIsEinval) {
  Mr* raw = p_->smr.get();
  ASSERT_OK(raw->Destroy());
  EXPECT_THAT(raw->Rereg(kReregChangeAccess, nullptr, nullptr, 0,
                         kAccessLocalWrite),
              HasErrno(EINVAL));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(ReregTest);
INSTANTIATE_PROVIDER_TEST_SUITE_P(ReregSupportedTest);
INSTANTIATE_PROVIDER_TEST_SUITE_P(ReregBadInputTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
