// Device limits (sim/profile.h): every limit on how many objects of a kind a
// device holds at once, and every limit on the size of one object, refused
// with the errno of the device the profile models (ObjectLimitErrnos;
// docs/reliability.md "## Bounded memory" has the sources). For each count
// limit the test lowers it (a SimProvider built from FabricOptions whose
// profile it changed), creates objects until the create fails, checks the
// errno, that the failure changed nothing (the objects made before still
// work; freeing one makes room for exactly one), destroys everything, and
// does it all again: after a warm-up round the process's resident memory
// (/proc/self/statm) must come back to where it was, within kRssSlackBytes.
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
#include "core/verbs.h"
#include "gtest/gtest.h"
#include "sim/profile.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

// Objects per round, the warm-up rounds, the rounds measured after them,
// and the growth allowed over those. One allocation left behind per object,
// however small (glibc's smallest chunk is 32 bytes), holds 4 x 8192 x 32 =
// 1 MiB, twice the slack; the slack is above the most seen without a leak
// (28 KiB plain, 110 KiB under TSan, 280 KiB under ASan: heap fragmentation
// and the sanitizer allocators' own structures, which do not grow with more
// rounds).
constexpr int kLimit = 8192;
constexpr int kWarmUps = 2;
constexpr int kRounds = 4;
#if defined(__SANITIZE_THREAD__)
#define VERBSIM_LIMITS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VERBSIM_LIMITS_TSAN 1
#endif
#endif
#if defined(VERBSIM_LIMITS_TSAN)
// Under TSan the shadow memory of every heap address a round touches for
// the first time stays resident (nothing returns it), so a round that
// lands on new addresses grows without a leak (seen: 2.8 MiB for 8192 QPs,
// and swings of -6 MiB); the plain and ASan runs hold the tight bound.
constexpr int64_t kRssSlackBytes = 8 * 1024 * 1024;
#else
constexpr int64_t kRssSlackBytes = 512 * 1024;
#endif

}  // namespace
}  // namespace verbsim::sim

// The sanitizers' allocators keep freed memory in their own free lists; this
// hands it back to the system (sanitizer/allocator_interface.h), where the
// runtime has it.
extern "C" void __sanitizer_purge_allocator() __attribute__((weak));

namespace verbsim::sim {
namespace {

// Resident bytes of this process: statm's second field, in pages. Free
// memory is handed back first (glibc's malloc_trim releases the free pages
// inside the heap too), so that memory freed by an earlier test, still
// resident, cannot hide memory held now.
int64_t ResidentBytes() {
  malloc_trim(0);
  if (__sanitizer_purge_allocator != nullptr) __sanitizer_purge_allocator();
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  if (n != 2) return -1;
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

// The three built-in profiles.
std::vector<std::string> Profiles() { return ProfileNames(); }

// A provider of two devices whose profile `name` has its limits changed by
// `lower`, and a context on sim0.
struct Device {
  std::unique_ptr<SimProvider> provider;
  std::unique_ptr<Context> context;
  SimProfile profile;
};

Device OpenDevice(const std::string& name,
                  const std::function<void(DeviceAttr&)>& lower) {
  Device d;
  FabricOptions fo;
  fo.nodes = 2;
  absl::StatusOr<SimProfile> profile = ProfileByName(name);
  EXPECT_TRUE(profile.ok()) << profile.status();
  fo.profile = *profile;
  lower(fo.profile.device);
  d.profile = fo.profile;
  d.provider = std::make_unique<SimProvider>(std::move(fo));
  absl::StatusOr<std::unique_ptr<Context>> ctx = d.provider->Open("sim0");
  EXPECT_TRUE(ctx.ok()) << ctx.status();
  if (ctx.ok()) d.context = *std::move(ctx);
  return d;
}

// One kind of object against its count limit: how to make one (the status
// of the create), check that one still works, and destroy one.
struct Pool {
  std::function<absl::Status()> create;   // appends to the pool on success
  std::function<void(size_t)> check;      // the i-th object still works
  std::function<absl::Status()> pop;      // destroys the last one (checked)
  std::function<size_t()> size;
};

// One round: fill to `limit`, the next create fails with `expected_errno`,
// the objects still work, freeing one makes room for exactly one, then
// everything is destroyed.
void FillAndDrain(Pool& pool, int limit, int expected_errno,
                  const std::string& what) {
  for (int i = 0; i < limit; ++i) {
    absl::Status s = pool.create();
    ASSERT_TRUE(s.ok()) << what << " #" << i << ": " << s;
  }
  absl::Status past = pool.create();
  EXPECT_EQ(ErrnoOf(past), expected_errno) << what << " past the limit: "
                                           << past;
  ASSERT_EQ(pool.size(), static_cast<size_t>(limit)) << what;
  // Still refused: a failed create took no slot, and gave none back.
  EXPECT_EQ(ErrnoOf(pool.create()), expected_errno) << what;
  pool.check(0);
  pool.check(static_cast<size_t>(limit) - 1);
  ASSERT_TRUE(pool.pop().ok()) << what;
  ASSERT_TRUE(pool.create().ok()) << what << " after one was freed";
  EXPECT_EQ(ErrnoOf(pool.create()), expected_errno) << what;
  while (pool.size() > 0) {
    absl::Status s = pool.pop();
    ASSERT_TRUE(s.ok()) << what << ": " << s;
  }
}

// A warm-up round, then kRounds rounds; resident memory after them must be
// within kRssSlackBytes of where it was after the warm-up.
void CheckLimitAndMemory(Pool& pool, int limit, int expected_errno,
                         const std::string& what) {
  for (int r = 0; r < kWarmUps; ++r) {
    FillAndDrain(pool, limit, expected_errno, what + " (warm-up)");
    if (::testing::Test::HasFatalFailure()) return;
  }
  const int64_t before = ResidentBytes();
  ASSERT_GT(before, 0);
  for (int r = 0; r < kRounds; ++r) {
    FillAndDrain(pool, limit, expected_errno,
                 absl::StrCat(what, " (round ", r + 1, ")"));
    if (::testing::Test::HasFatalFailure()) return;
  }
  const int64_t after = ResidentBytes();
  std::printf("%s: resident memory %+lld bytes over %d rounds of %d\n",
              what.c_str(), static_cast<long long>(after - before), kRounds,
              limit);
  EXPECT_LE(after - before, kRssSlackBytes)
      << what << ": resident memory grew from " << before << " to " << after
      << " bytes over " << kRounds << " rounds of " << limit << " objects";
}

// Owns handles of one type as a Pool.
template <typename T>
struct Handles {
  std::vector<std::unique_ptr<T>> items;
  Pool AsPool(std::function<absl::StatusOr<std::unique_ptr<T>>()> make,
              std::function<void(T&)> check) {
    Pool p;
    p.create = [this, make]() -> absl::Status {
      absl::StatusOr<std::unique_ptr<T>> h = make();
      if (!h.ok()) return h.status();
      items.push_back(*std::move(h));
      return absl::OkStatus();
    };
    p.check = [this, check](size_t i) { check(*items.at(i)); };
    p.pop = [this]() {
      absl::Status s = items.back()->Destroy();
      items.pop_back();
      return s;
    };
    p.size = [this] { return items.size(); };
    return p;
  }
};

class LimitsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LimitsTest, Pd) {
  Device d = OpenDevice(GetParam(), [](DeviceAttr& a) { a.max_pd = kLimit; });
  ASSERT_NE(d.context, nullptr);
  std::vector<char> buf(64);
  Handles<Pd> pds;
  Pool pool = pds.AsPool([&] { return d.context->AllocPd(); },
                         [&](Pd& pd) {
                           auto mr = pd.RegMr(buf.data(), buf.size(),
                                              kAccessLocalWrite);
                           EXPECT_TRUE(mr.ok()) << mr.status();
                         });
  CheckLimitAndMemory(pool, kLimit, d.profile.limit_errno.pd, "PD");
}

TEST_P(LimitsTest, Cq) {
  Device d = OpenDevice(GetParam(), [](DeviceAttr& a) { a.max_cq = kLimit; });
  ASSERT_NE(d.context, nullptr);
  Handles<Cq> cqs;
  Pool pool = cqs.AsPool([&] { return d.context->CreateCq(4, nullptr); },
                         [](Cq& cq) {
                           WorkCompletion wc[1];
                           auto n = cq.Poll(absl::MakeSpan(wc));
                           ASSERT_TRUE(n.ok()) << n.status();
                           EXPECT_EQ(*n, 0);
                           EXPECT_TRUE(cq.ReqNotify(false).ok());
                         });
  CheckLimitAndMemory(pool, kLimit, d.profile.limit_errno.cq, "CQ");
}

TEST_P(LimitsTest, Qp) {
  Device d = OpenDevice(GetParam(), [](DeviceAttr& a) { a.max_qp = kLimit; });
  ASSERT_NE(d.context, nullptr);
  auto pd = d.context->AllocPd();
  auto cq = d.context->CreateCq(16, nullptr);
  ASSERT_TRUE(pd.ok() && cq.ok());
  QpInitAttr init;
  init.send_cq = cq->get();
  init.recv_cq = cq->get();
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  Handles<Qp> qps;
  const bool reports_state = d.profile.iwarp.query_reports_qp_attrs;
  Pool pool = qps.AsPool([&] { return (*pd)->CreateQp(init); },
                         [&](Qp& qp) {
                           EXPECT_TRUE(ModifyQpToInit(&qp, EndpointAttr()).ok());
                           // (siw's query reports no state.)
                           if (reports_state) {
                             EXPECT_EQ(qp.state(), QpState::kInit);
                           }
                           QpAttr reset;
                           reset.qp_state = QpState::kReset;
                           EXPECT_TRUE(qp.Modify(reset, kQpState).ok());
                         });
  CheckLimitAndMemory(pool, kLimit, d.profile.limit_errno.qp, "QP");
}

TEST_P(LimitsTest, Srq) {
  Device d = OpenDevice(GetParam(), [](DeviceAttr& a) { a.max_srq = kLimit; });
  ASSERT_NE(d.context, nullptr);
  auto pd = d.context->AllocPd();
  ASSERT_TRUE(pd.ok());
  std::vector<char> buf(64);
  auto mr = (*pd)->RegMr(buf.data(), buf.size(), kAccessLocalWrite);
  ASSERT_TRUE(mr.ok());
  SrqAttr attr;
  attr.max_wr = 4;
  attr.max_sge = 1;
  Handles<Srq> srqs;
  Pool pool = srqs.AsPool([&] { return (*pd)->CreateSrq(attr); },
                          [&](Srq& srq) {
                            Sge sge{reinterpret_cast<uint64_t>(buf.data()), 64,
                                    (*mr)->lkey()};
                            RecvWr wr;
                            wr.wr_id = 7;
                            wr.sg_list = absl::MakeConstSpan(&sge, 1);
                            EXPECT_TRUE(
                                srq.PostRecv(absl::MakeConstSpan(&wr, 1),
                                             nullptr)
                                    .ok());
                          });
  CheckLimitAndMemory(pool, kLimit, d.profile.limit_errno.srq, "SRQ");
}

TEST_P(LimitsTest, Mr) {
  Device d = OpenDevice(GetParam(), [](DeviceAttr& a) { a.max_mr = kLimit; });
  ASSERT_NE(d.context, nullptr);
  auto pd = d.context->AllocPd();
  ASSERT_TRUE(pd.ok());
  std::vector<char> buf(4096);
  Handles<Mr> mrs;
  Pool pool = mrs.AsPool(
      [&] {
        return (*pd)->RegMr(buf.data(), buf.size(),
                            kAccessLocalWrite | kAccessRemoteWrite);
      },
      [&](Mr& mr) {
        EXPECT_EQ(mr.addr(), buf.data());
        EXPECT_EQ(mr.length(), buf.size());
        EXPECT_NE(mr.lkey(), 0u);
      });
  CheckLimitAndMemory(pool, kLimit, d.profile.limit_errno.mr, "MR");
}

TEST_P(LimitsTest, Mw) {
  Device d = OpenDevice(GetParam(), [](DeviceAttr& a) {
    if (a.max_mw > 0) a.max_mw = kLimit;
  });
  ASSERT_NE(d.context, nullptr);
  auto pd = d.context->AllocPd();
  ASSERT_TRUE(pd.ok());
  if (d.profile.device.max_mw == 0) {
    // No windows at all (siw): every allocation is refused.
    EXPECT_EQ(ErrnoOf((*pd)->AllocMw(MwType::kType2).status()), EOPNOTSUPP);
    return;
  }
  Handles<Mw> mws;
  Pool pool = mws.AsPool([&] { return (*pd)->AllocMw(MwType::kType2); },
                         [&](Mw& mw) {
                           EXPECT_EQ(mw.type(), MwType::kType2);
                           EXPECT_EQ(mw.pd(), pd->get());
                         });
  CheckLimitAndMemory(pool, kLimit, d.profile.limit_errno.mw, "MW");
}

// Address handles are counted per device, whatever PD they are on.
TEST_P(LimitsTest, Ah) {
  Device d = OpenDevice(GetParam(), [](DeviceAttr& a) {
    if (a.max_ah > 0) a.max_ah = kLimit;
  });
  ASSERT_NE(d.context, nullptr);
  std::vector<std::unique_ptr<Pd>> pds;
  for (int i = 0; i < 2; ++i) {
    auto pd = d.context->AllocPd();
    ASSERT_TRUE(pd.ok());
    pds.push_back(*std::move(pd));
  }
  auto peer = d.provider->Open("sim1");
  ASSERT_TRUE(peer.ok());
  AhAttr attr;
  attr.dgid = *(*peer)->QueryGid(1, 0);
  if (!d.profile.iwarp.has_ah) {
    EXPECT_EQ(ErrnoOf(pds[0]->CreateAh(attr).status()), EOPNOTSUPP);
    return;
  }
  int made = 0;
  Handles<Ah> ahs;
  Pool pool = ahs.AsPool([&] { return pds[made++ % 2]->CreateAh(attr); },
                         [&](Ah& ah) { EXPECT_EQ(ah.attr().dgid, attr.dgid); });
  CheckLimitAndMemory(pool, kLimit, d.profile.limit_errno.ah, "AH");
}

// Multicast: UD QPs of one device attach to groups; three limits.
class McastTest : public ::testing::TestWithParam<std::string> {
 protected:
  static Gid Group(int i) {
    Gid g{};
    g[0] = 0xff;
    g[1] = 0x0e;
    g[14] = static_cast<uint8_t>(i >> 8);
    g[15] = static_cast<uint8_t>(i);
    return g;
  }
  // `n` UD QPs on the device.
  void MakeQps(int n) {
    auto pd = d_.context->AllocPd();
    auto cq = d_.context->CreateCq(16, nullptr);
    ASSERT_TRUE(pd.ok() && cq.ok());
    pd_ = *std::move(pd);
    cq_ = *std::move(cq);
    QpInitAttr init;
    init.send_cq = cq_.get();
    init.recv_cq = cq_.get();
    init.qp_type = QpType::kUd;
    init.cap.max_send_wr = 1;
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    for (int i = 0; i < n; ++i) {
      auto qp = pd_->CreateQp(init);
      ASSERT_TRUE(qp.ok()) << qp.status();
      qps_.push_back(*std::move(qp));
    }
  }
  // A pool of attachments: the i-th attach joins QP `qp_of(i)` to group
  // `group_of(i)`; pop detaches the last.
  Pool Attachments(std::function<int(int)> qp_of,
                   std::function<int(int)> group_of) {
    Pool p;
    p.create = [this, qp_of, group_of]() -> absl::Status {
      const int i = static_cast<int>(attached_.size());
      const int q = qp_of(i), g = group_of(i);
      absl::Status s = qps_.at(q)->AttachMcast(Group(g), 0);
      if (s.ok()) attached_.emplace_back(q, g);
      return s;
    };
    p.check = [this](size_t i) {
      // Attaching again what is attached is no new attachment.
      const auto [q, g] = attached_.at(i);
      EXPECT_TRUE(qps_[q]->AttachMcast(Group(g), 0).ok());
    };
    p.pop = [this]() {
      const auto [q, g] = attached_.back();
      attached_.pop_back();
      return qps_[q]->DetachMcast(Group(g), 0);
    };
    p.size = [this] { return attached_.size(); };
    return p;
  }
  void TearDown() override {
    for (auto& qp : qps_) EXPECT_TRUE(qp->Destroy().ok());
  }
  Device d_;  // first, so it goes last
  std::unique_ptr<Pd> pd_;
  std::unique_ptr<Cq> cq_;
  std::vector<std::unique_ptr<Qp>> qps_;
  std::vector<std::pair<int, int>> attached_;
};

TEST_P(McastTest, Groups) {
  d_ = OpenDevice(GetParam(), [](DeviceAttr& a) {
    a.max_mcast_grp = kLimit;
    a.max_total_mcast_qp_attach = 4 * kLimit;
  });
  ASSERT_NE(d_.context, nullptr);
  if (d_.profile.iwarp.rc_only) GTEST_SKIP() << "no UD QPs on " << GetParam();
  MakeQps(2);
  // Group i gets QP i % 2: a group counts once however many QPs are in it.
  Pool pool = Attachments([](int i) { return i % 2; }, [](int i) { return i; });
  ASSERT_TRUE(qps_[1]->AttachMcast(Group(0), 0).ok());  // group 0 twice
  CheckLimitAndMemory(pool, kLimit, d_.profile.limit_errno.mcast, "group");
  EXPECT_TRUE(qps_[1]->DetachMcast(Group(0), 0).ok());
}

TEST_P(McastTest, QpsOfOneGroup) {
  // The profile's own limit (56 on rxe's and ibta's device, rxe_param.h).
  d_ = OpenDevice(GetParam(), [](DeviceAttr&) {});
  ASSERT_NE(d_.context, nullptr);
  if (d_.profile.iwarp.rc_only) GTEST_SKIP() << "no UD QPs on " << GetParam();
  const int limit = d_.profile.device.max_mcast_qp_attach;
  ASSERT_GT(limit, 0);
  MakeQps(limit + 1);
  Pool pool = Attachments([](int i) { return i; }, [](int) { return 7; });
  CheckLimitAndMemory(pool, limit, d_.profile.limit_errno.mcast,
                      "QP of one group");
}

TEST_P(McastTest, AttachmentsOfTheDevice) {
  d_ = OpenDevice(GetParam(), [](DeviceAttr& a) {
    a.max_total_mcast_qp_attach = kLimit;
    a.max_mcast_grp = kLimit;
  });
  ASSERT_NE(d_.context, nullptr);
  if (d_.profile.iwarp.rc_only) GTEST_SKIP() << "no UD QPs on " << GetParam();
  constexpr int kQps = 32;  // below max_mcast_qp_attach
  MakeQps(kQps);
  Pool pool = Attachments([](int i) { return i % kQps; },
                          [](int i) { return i / kQps; });
  CheckLimitAndMemory(pool, kLimit, d_.profile.limit_errno.mcast,
                      "attachment");
}

// Sizes of one object: at the device's limit accepted, one past it EINVAL,
// on every profile with its own limits.
TEST_P(LimitsTest, ObjectSizes) {
  Device d = OpenDevice(GetParam(), [](DeviceAttr&) {});
  ASSERT_NE(d.context, nullptr);
  const DeviceAttr& dev = d.profile.device;
  EXPECT_TRUE(d.context->CreateCq(dev.max_cqe, nullptr).ok());
  EXPECT_EQ(ErrnoOf(d.context->CreateCq(dev.max_cqe + 1, nullptr).status()),
            EINVAL);
  EXPECT_EQ(ErrnoOf(d.context->CreateCq(0, nullptr).status()), EINVAL);
  auto pd = d.context->AllocPd();
  auto cq = d.context->CreateCq(16, nullptr);
  ASSERT_TRUE(pd.ok() && cq.ok());
  QpInitAttr base;
  base.send_cq = cq->get();
  base.recv_cq = cq->get();
  base.cap.max_send_wr = 1;
  base.cap.max_recv_wr = 1;
  base.cap.max_send_sge = 1;
  base.cap.max_recv_sge = 1;
  const uint32_t max_qp_wr = static_cast<uint32_t>(dev.max_qp_wr);
  const uint32_t max_sge = static_cast<uint32_t>(dev.max_sge);
  const uint32_t max_inline = static_cast<uint32_t>(dev.max_inline_data);
  struct Case {
    const char* what;
    uint32_t QpCap::*field;
    uint32_t limit;
  };
  for (const Case& c : {Case{"max_send_wr", &QpCap::max_send_wr, max_qp_wr},
                        Case{"max_recv_wr", &QpCap::max_recv_wr, max_qp_wr},
                        Case{"max_send_sge", &QpCap::max_send_sge, max_sge},
                        Case{"max_recv_sge", &QpCap::max_recv_sge, max_sge},
                        Case{"max_inline_data", &QpCap::max_inline_data,
                             max_inline}}) {
    QpInitAttr at = base;
    at.cap.*c.field = c.limit;
    auto ok = (*pd)->CreateQp(at);
    EXPECT_TRUE(ok.ok()) << c.what << " " << c.limit << ": " << ok.status();
    QpInitAttr past = base;
    past.cap.*c.field = c.limit + 1;
    EXPECT_EQ(ErrnoOf((*pd)->CreateQp(past).status()), EINVAL)
        << c.what << " " << c.limit + 1;
  }
  SrqAttr srq;
  srq.max_wr = static_cast<uint32_t>(dev.max_srq_wr);
  srq.max_sge = static_cast<uint32_t>(dev.max_srq_sge);
  auto s = (*pd)->CreateSrq(srq);
  EXPECT_TRUE(s.ok()) << s.status();
  SrqAttr past_wr = srq;
  ++past_wr.max_wr;
  EXPECT_EQ(ErrnoOf((*pd)->CreateSrq(past_wr).status()), EINVAL);
  SrqAttr past_sge = srq;
  ++past_sge.max_sge;
  EXPECT_EQ(ErrnoOf((*pd)->CreateSrq(past_sge).status()), EINVAL);
}

// The probe itself: memory held across the measured rounds is seen. Each
// round keeps kLimit blocks of 64 bytes, as a leak of that size per object
// would, and the growth must exceed the slack.
TEST(LimitsProbeTest, HeldMemoryExceedsTheSlack) {
  std::vector<std::unique_ptr<char[]>> held;
  held.reserve(static_cast<size_t>(kRounds) * kLimit);
  const int64_t before = ResidentBytes();
  ASSERT_GT(before, 0);
  for (int i = 0; i < kRounds * kLimit; ++i) {
    held.emplace_back(new char[64]);
    held.back()[0] = static_cast<char>(i);  // touched, so resident
  }
  EXPECT_GT(ResidentBytes() - before, kRssSlackBytes);
}

INSTANTIATE_TEST_SUITE_P(Profiles, LimitsTest, ::testing::ValuesIn(Profiles()),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Profiles, McastTest, ::testing::ValuesIn(Profiles()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace verbsim::sim
