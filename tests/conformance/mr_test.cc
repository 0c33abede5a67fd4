// Memory registration: access-flag rules, keys, bad ranges, the librdmacm
// registration helpers, and keys of deregistered MRs.
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "core/endpoint.h"
#include "core/errors.h"
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

using ::testing::Not;

// An access-flag combination; printed by name in test names.
struct Access {
  uint32_t bits;
};
void PrintTo(const Access& a, std::ostream* os) {
  *os << (a.bits == 0 ? std::string("none") : AccessFlagsName(a.bits));
}

// IBV_ACCESS_REMOTE_WRITE or REMOTE_ATOMIC need LOCAL_WRITE.
bool ValidAccess(uint32_t bits) {
  if ((bits & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
      (bits & kAccessLocalWrite) == 0) {
    return false;
  }
  return true;
}

std::vector<Access> BasicCombinations() {
  std::vector<Access> out;
  const uint32_t basic = kAccessLocalWrite | kAccessRemoteWrite |
                         kAccessRemoteRead | kAccessRemoteAtomic;
  for (uint32_t bits = 0; bits <= basic; ++bits) out.push_back({bits});
  return out;
}

// Every combination of the four basic rights, each with or without
// LOCAL_WRITE's requirement met: valid ones register with exactly that
// access, invalid ones fail with EINVAL.
class MrAccessTest : public ProviderTestWithParam<Access> {};

TEST_P(MrAccessTest, RegistersIffTheCombinationIsValid) {
  const uint32_t bits = param().bits;
  if ((bits & kAccessRemoteAtomic) != 0 && !expect().has_atomics) {
    GTEST_SKIP() << "device without atomics (profile " << expect().profile
                 << ")";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, context->AllocPd());
  Buffer buf(4096);
  absl::StatusOr<std::unique_ptr<Mr>> mr = pd->RegMr(buf.data(), 4096, bits);
  if (ValidAccess(bits)) {
    ASSERT_OK(mr);
    EXPECT_EQ((*mr)->access(), bits);
    EXPECT_EQ((*mr)->addr(), buf.data());
    EXPECT_EQ((*mr)->length(), 4096u);
    EXPECT_EQ((*mr)->pd(), pd.get());
  } else {
    EXPECT_THAT(mr, HasErrno(EINVAL));
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    MrAccessTest, ::testing::ValuesIn(BasicCombinations()));

// The other known bits, each with LOCAL_WRITE: supported ones register with
// exactly that access, refused ones fail cleanly (expectations table).
class MrExtraAccessTest : public ProviderTestWithParam<Access> {};

TEST_P(MrExtraAccessTest, RegistersOrIsRefusedAsTheProfileSays) {
  const uint32_t bit = param().bits;
  const bool supported = (expect().supported_extra_access & bit) != 0;
  const bool refused = (expect().refused_extra_access & bit) != 0;
  if (!supported && !refused) {
    GTEST_SKIP() << AccessFlagsName(bit) << " is device-dependent on profile "
                 << expect().profile;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, context->AllocPd());
  Buffer buf(4096);
  absl::StatusOr<std::unique_ptr<Mr>> mr =
      pd->RegMr(buf.data(), 4096, kAccessLocalWrite | bit);
  if (supported) {
    ASSERT_OK(mr);
    EXPECT_EQ((*mr)->access(), kAccessLocalWrite | bit);
  } else {
    EXPECT_THAT(mr, ::testing::AnyOf(HasErrno(EINVAL), HasErrno(EOPNOTSUPP)));
    // The refusal leaves the PD free.
    EXPECT_OK(Destroy(pd));
  }
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    MrExtraAccessTest,
    ::testing::Values(Access{kAccessMwBind}, Access{kAccessZeroBased},
                      Access{kAccessOnDemand}));

// Bits outside every known flag are rejected, or accepted without effect
// where the table says the device ignores them.
class MrUnknownAccessTest : public ProviderTestWithParam<Access> {};

TEST_P(MrUnknownAccessTest, IsRejected) {
  const uint32_t bit = param().bits;
  const bool rejected = (expect().rejected_access_bits & bit) != 0;
  const bool ignored = (expect().ignored_access_bits & bit) != 0;
  if (!rejected && !ignored) {
    GTEST_SKIP() << "bit 0x" << std::hex << bit
                 << " is a vendor extension on profile " << expect().profile;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Context> context, OpenDevice());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, context->AllocPd());
  Buffer buf(4096);
  if (ignored) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                         pd->RegMr(buf.data(), 4096, kAccessLocalWrite | bit));
    EXPECT_EQ(mr->length(), 4096u);
    return;
  }
  EXPECT_THAT(pd->RegMr(buf.data(), 4096, kAccessLocalWrite | bit),
              HasErrno(EINVAL));
  EXPECT_THAT(pd->RegMr(buf.data(), 4096, bit), HasErrno(EINVAL));
}

// HUGETLB, FLUSH_GLOBAL, unknown, RELAXED_ORDERING (the optional range),
// unknown, past the optional range, the top bit.
INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    MrUnknownAccessTest,
    ::testing::Values(Access{1u << 7}, Access{1u << 8}, Access{1u << 10},
                      Access{1u << 15}, Access{1u << 20}, Access{1u << 30},
                      Access{1u << 31}));

class MrTest : public ProviderTest {
 protected:
  void SetUp() override {
    ProviderTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(context_, OpenDevice());
    ASSERT_OK_AND_ASSIGN(pd_, context_->AllocPd());
  }
  void TearDown() override {
    pd_.reset();
    context_.reset();
  }
  std::unique_ptr<Context> context_;
  std::unique_ptr<Pd> pd_;
};

TEST_P(MrTest, LkeyDiffersFromRkey) {
  if (expect().lkey_differs_from_rkey == Known::kUnknown) {
    GTEST_SKIP() << "profile " << expect().profile
                 << " may use one key for both";
  }
  Buffer buf(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       pd_->RegMr(buf.data(), 4096, FullAccess()));
  if (expect().lkey_differs_from_rkey == Known::kYes) {
    EXPECT_NE(mr->lkey(), mr->rkey());
  } else {
    EXPECT_EQ(mr->lkey(), mr->rkey());
  }
}

// rxe gives an MR without remote access no rkey (0); others give it one.
TEST_P(MrTest, RkeyOfALocalOnlyMr) {
  Buffer buf(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       pd_->RegMr(buf.data(), 4096, kAccessLocalWrite));
  if (expect().rkey_needs_remote_access) {
    EXPECT_EQ(mr->rkey(), 0u);
  } else {
    EXPECT_NE(mr->rkey(), 0u);
  }
}

TEST_P(MrTest, KeysAreDistinctAcrossMrs) {
  Buffer buf(64 * 1024);
  std::vector<std::unique_ptr<Mr>> mrs;
  std::set<uint32_t> lkeys, rkeys, all;
  for (int i = 0; i < 16; ++i) {
    // Overlapping and identical ranges still get their own keys.
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<Mr> mr,
        pd_->RegMr(buf.data() + (i % 4) * 4096, 4096, FullAccess()));
    lkeys.insert(mr->lkey());
    rkeys.insert(mr->rkey());
    all.insert(mr->lkey());
    all.insert(mr->rkey());
    mrs.push_back(std::move(mr));
  }
  EXPECT_EQ(lkeys.size(), 16u);
  EXPECT_EQ(rkeys.size(), 16u);
  if (expect().lkey_differs_from_rkey == Known::kYes) {
    EXPECT_EQ(all.size(), 32u) << "an lkey of one MR is the rkey of another";
  }
}

TEST_P(MrTest, KeysAreNotReusedAfterDeregistration) {
  Buffer buf(4096);
  std::set<uint32_t> dead_keys;
  for (int round = 0; round < 8; ++round) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                         pd_->RegMr(buf.data(), 4096, FullAccess()));
    EXPECT_EQ(dead_keys.count(mr->lkey()), 0u) << "round " << round;
    EXPECT_EQ(dead_keys.count(mr->rkey()), 0u) << "round " << round;
    dead_keys.insert(mr->lkey());
    dead_keys.insert(mr->rkey());
    ASSERT_OK(Destroy(mr));
  }
}

TEST_P(MrTest, ZeroLengthMr) {
  Buffer buf(64);
  absl::StatusOr<std::unique_ptr<Mr>> mr =
      pd_->RegMr(buf.data(), 0, kAccessLocalWrite);
  switch (expect().zero_length_mr) {
    case Known::kYes:
      ASSERT_OK(mr);
      EXPECT_EQ((*mr)->length(), 0u);
      break;
    case Known::kNo:
      EXPECT_THAT(mr, HasErrno(EINVAL));
      break;
    case Known::kUnknown:
      GTEST_SKIP() << "zero-length MRs are implementation-defined on "
                   << expect().profile;
  }
}

TEST_P(MrTest, ZeroLengthMrInsideAPage) {
  Buffer buf(4096);  // page-aligned
  absl::StatusOr<std::unique_ptr<Mr>> mr =
      pd_->RegMr(buf.data() + 64, 0, kAccessLocalWrite);
  switch (expect().zero_length_mr_inside_a_page) {
    case Known::kYes:
      ASSERT_OK(mr);
      EXPECT_EQ((*mr)->length(), 0u);
      EXPECT_EQ((*mr)->addr(), buf.data() + 64);
      break;
    case Known::kNo:
      EXPECT_THAT(mr, HasErrno(EINVAL));
      break;
    case Known::kUnknown:
      GTEST_SKIP() << "zero-length MRs are implementation-defined on "
                   << expect().profile;
  }
}

TEST_P(MrTest, NullAddressWithLengthIsRejected) {
  EXPECT_THAT(pd_->RegMr(nullptr, 4096, kAccessLocalWrite), HasErrno(EINVAL));
  EXPECT_THAT(pd_->RegMr(nullptr, 1, 0), HasErrno(EINVAL));
}

TEST_P(MrTest, WrappingRangeIsRejected) {
  void* near_top = reinterpret_cast<void*>(UINTPTR_MAX - 4095);
  EXPECT_THAT(pd_->RegMr(near_top, 8192, kAccessLocalWrite),
              HasErrno(expect().wrapping_range_errno));
}

TEST_P(MrTest, RangeOfSizeMaxIsRejected) {
  if (!expect().refuses_size_max_range) {
    GTEST_SKIP() << "siw 6.1 registers it: siw_umem_get has no overflow "
                    "check (a kernel bug the sim does not model)";
  }
  void* near_top = reinterpret_cast<void*>(UINTPTR_MAX - 4095);
  EXPECT_THAT(pd_->RegMr(near_top, SIZE_MAX, kAccessLocalWrite),
              HasErrno(expect().wrapping_range_errno));
}

TEST_P(MrTest, LengthOverMaxMrSizeIsRejected) {
  const uint64_t max = context_->device_attr().max_mr_size;
  if (max >= SIZE_MAX) {
    GTEST_SKIP() << "max_mr_size is the whole address space";
  }
  Buffer buf(64);
  EXPECT_THAT(pd_->RegMr(buf.data(), static_cast<size_t>(max) + 1,
                         kAccessLocalWrite),
              HasErrno(EINVAL));
}

TEST_P(MrTest, DestroyTwiceFails) {
  Buffer buf(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       pd_->RegMr(buf.data(), 4096, kAccessLocalWrite));
  ASSERT_OK(mr->Destroy());
  EXPECT_THAT(mr->Destroy(), HasErrno(EINVAL));
}

TEST_P(MrTest, RegMrOnDestroyedPdFails) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, context_->AllocPd());
  ASSERT_OK(pd->Destroy());
  Buffer buf(4096);
  EXPECT_THAT(pd->RegMr(buf.data(), 4096, kAccessLocalWrite),
              HasErrno(EINVAL));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(MrTest);

// The librdmacm helpers and deregistered keys, on a connected pair.
class EndpointMrTest : public ProviderTest {};

TEST_P(EndpointMrTest, RegHelpersGiveTheirAccess) {
  ASSERT_OK_AND_ASSIGN(EndpointPair eps, Connect(DefaultAttr()));
  Buffer buf(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> msgs,
                       eps.client->RegMsgs(buf.data(), 4096));
  EXPECT_EQ(msgs->access(), kAccessLocalWrite);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> read,
                       eps.client->RegRead(buf.data(), 4096));
  EXPECT_EQ(read->access(), kAccessLocalWrite | kAccessRemoteRead);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> write,
                       eps.client->RegWrite(buf.data(), 4096));
  EXPECT_EQ(write->access(), kAccessLocalWrite | kAccessRemoteWrite);
  EXPECT_EQ(write->pd(), eps.client->pd());
  EXPECT_OK(eps.client->DeregMr(write));
  EXPECT_EQ(write, nullptr);
}

TEST_P(EndpointMrTest, RkeyOfDeregisteredMrIsRejectedAfterNewRegistrations) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Buffer target(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> old,
                       p->server().RegWrite(target.data(), 4096));
  const uint32_t old_rkey = old->rkey();
  const uint64_t old_addr = target.addr();
  ASSERT_OK(p->server().DeregMr(old));
  // Registrations over the same memory after it.
  std::vector<std::unique_ptr<Mr>> fresh;
  for (int i = 0; i < 8; ++i) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                         p->server().RegWrite(target.data(), 4096));
    fresh.push_back(std::move(mr));
  }
  p->cbuf.FillPattern(3, 0, 64);
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 64, p->cmr.get(),
                                  kSendSignaled, old_addr, old_rkey));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().bad_rkey)) << wc;
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(target.Bytes(0, 64), std::vector<uint8_t>(64, 0));
}

TEST_P(EndpointMrTest, LkeyOfDeregisteredMrIsRejected) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  Buffer local(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> old,
                       p->client().RegMsgs(local.data(), 4096));
  const Sge stale = SgeOf(*old, 0, 64);
  ASSERT_OK(p->client().DeregMr(old));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> fresh,
                       p->client().RegMsgs(local.data(), 4096));
  ASSERT_OK(p->client().PostWritev(2, {&stale, 1}, kSendSignaled,
                                   p->sbuf.addr(), p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().bad_lkey)) << wc;
  EXPECT_EQ(wc.wr_id, 2u);
}

// The peer's lkey names nothing here (another device's key, or on one device
// an MR of another PD), even where the client has an MR of its own at the
// same place in its key table (found by the differential runs:
// docs/fidelity.md).
TEST_P(EndpointMrTest, LkeyOfThePeersMrIsRejected) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  p->cbuf.FillPattern(4, 0, 64);
  Sge foreign = SgeOf(*p->cmr, 0, 64);
  foreign.lkey = p->smr->lkey();
  ASSERT_OK(p->client().PostWritev(3, {&foreign, 1}, kSendSignaled,
                                   p->sbuf.addr(), p->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(p->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().bad_lkey)) << wc;
  EXPECT_EQ(wc.wr_id, 3u);
  EXPECT_EQ(p->sbuf.Bytes(0, 64), std::vector<uint8_t>(64, 0));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(EndpointMrTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
