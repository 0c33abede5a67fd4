// The conformance suite's fixtures and helpers. Every test is
// value-parameterised over provider specs: always "sim", "sim:rxe" and "sim:siw", plus "hw" (skipped
// with its reason when no RDMA device is present); VERBSIM_PROVIDER, when
// set, names the only provider to run.
//
//   class MyTest : public ProviderTest {};
//   TEST_P(MyTest, Works) { ASSERT_OK_AND_ASSIGN(auto pair, MakePair()); ... }
//   INSTANTIATE_PROVIDER_TEST_SUITE_P(MyTest);
//
//   class SizeTest : public ProviderTestWithParam<uint32_t> {};
//   TEST_P(SizeTest, Works) { uint32_t size = param(); ... }
//   INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(SizeTest, ::testing::Values(1, 2));
#ifndef VERBSIM_TESTS_FIXTURE_H_
#define VERBSIM_TESTS_FIXTURE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "core/types.h"
#include "core/verbs.h"
#include "gtest/gtest.h"
#include "tests/expectations.h"

namespace verbsim {
namespace testing {

// How long a test waits for a completion that must come.
inline constexpr absl::Duration kTimeout = absl::Seconds(5);
// How long a test watches a CQ that must stay empty.
inline constexpr absl::Duration kQuiet = absl::Milliseconds(30);

// Why a case that moves a QP by hand (MakeRawQp, ConnectQps, BringQpTo) is
// skipped on iWARP (Expectations::hand_connected_qps).
inline constexpr char kIwarpHandQpReason[] =
    "iWARP: a QP reaches RTS only through rdma_cm and siw_verbs_modify_qp "
    "takes only the state and access flags (siw_qp.c siw_qp_modify: no "
    "socket, EINVAL); this case connects QPs by hand";

inline constexpr char kNoHardwareReason[] =
    "no RDMA device: run the rxe/siw guest harness (tools/) to test hw";

// The provider specs the suite runs on: VERBSIM_PROVIDER alone when set,
// else "sim", "sim:rxe", "sim:siw" and "hw".
std::vector<std::string> ProviderSpecs();

// A test-name-safe form of any printable value ("hw:rxe0" -> "hw_rxe0").
std::string SanitizeParamName(const std::string& text);

struct ProviderParamName {
  std::string operator()(
      const ::testing::TestParamInfo<std::string>& info) const {
    return SanitizeParamName(info.param);
  }
  template <typename T>
  std::string operator()(
      const ::testing::TestParamInfo<std::tuple<std::string, T>>& info)
      const {
    return SanitizeParamName(std::get<0>(info.param)) + "_" +
           SanitizeParamName(::testing::PrintToString(std::get<1>(info.param)));
  }
};

// A zero-filled, 4096-byte aligned buffer that never moves.
class Buffer {
 public:
  explicit Buffer(size_t size);
  Buffer(Buffer&&) = default;
  Buffer& operator=(Buffer&&) = default;

  uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  uint64_t addr(size_t offset = 0) const {
    return reinterpret_cast<uint64_t>(data_.get() + offset);
  }
  uint8_t& operator[](size_t i) const { return data_.get()[i]; }
  // Writes the Pattern(seed) bytes over [offset, offset + length).
  void FillPattern(uint8_t seed, size_t offset = 0, size_t length = SIZE_MAX);
  void Set(uint8_t value);
  std::vector<uint8_t> Bytes(size_t offset, size_t length) const;
  uint64_t Load64(size_t offset) const;
  void Store64(size_t offset, uint64_t value);

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

// `length` bytes that differ between seeds and do not repeat every 256.
std::vector<uint8_t> Pattern(uint8_t seed, size_t length);

// An SGE over [offset, offset + length) of `mr`.
Sge SgeOf(const Mr& mr, size_t offset, uint32_t length);

// A send WR (signaled unless `flags` says otherwise).
SendWr MakeWr(WrOpcode opcode, uint64_t wr_id, absl::Span<const Sge> sgl,
              uint32_t flags = kSendSignaled);

// A connected RC pair with one registered buffer on each side.
struct RcPair {
  EndpointPair eps;
  Buffer cbuf{0};
  Buffer sbuf{0};
  std::unique_ptr<Mr> cmr;
  std::unique_ptr<Mr> smr;

  Endpoint& client() const { return *eps.client; }
  Endpoint& server() const { return *eps.server; }
};

// A QP made by hand on one context, with one CQ for both queues.
struct RawQp {
  std::unique_ptr<Context> context;
  std::unique_ptr<Pd> pd;
  std::unique_ptr<Cq> cq;
  std::unique_ptr<Qp> qp;
  Gid gid{};
  // On a provider that reaches RTS only through the CM (iWARP),
  // Harness::BringQpTo connects `qp` to this QP on another device.
  std::unique_ptr<RawQp> peer;
  std::unique_ptr<QpLink> link;
};

// One device opened by hand: a context, a PD and one CQ (for both queues of
// the QPs made on it), and the port's GID.
struct Side {
  std::unique_ptr<Context> context;
  std::unique_ptr<Pd> pd;
  std::unique_ptr<Cq> cq;
  Gid gid{};              // the GID at gid_index
  uint8_t gid_index = 0;  // RoceV4GidIndex()
};

// The index of the port's first IPv4-mapped GID (RoCEv2 over IPv4), else 0.
// On a RoCE device index 0 is the IPv6 link-local GID derived from the MAC
// (the kernel's roce_gid_mgmt.c); the suite's UD tests want IPv4.
uint8_t RoceV4GidIndex(Context* context);

// The Q_Key the suite's UD QPs use (rdma_cm's).
inline constexpr uint32_t kTestQkey = 0x01234567;

// A QP of `type` on `side` (its PD and CQ), in RESET; `srq` may be null.
absl::StatusOr<std::unique_ptr<Qp>> CreateQpOn(
    Side& side, QpType type, const QpCap& cap = {16, 16, 2, 2, 64},
    Srq* srq = nullptr, bool sq_sig_all = false);
// Connects RC or UC QPs `a` (on a side with GID `ga`) and `b` to each other,
// both to RTS with the EndpointAttr defaults and `access` as QP access.
absl::Status ConnectQps(Qp* a, const Gid& ga, Qp* b, const Gid& gb,
                        uint32_t access = kAccessLocalWrite |
                                          kAccessRemoteWrite |
                                          kAccessRemoteRead |
                                          kAccessRemoteAtomic);
// Brings a UD QP from RESET to RTS with Q_Key `qkey`.
absl::Status BringUdQpToRts(Qp* qp, uint32_t qkey = kTestQkey);
// An address handle on `pd` to `dgid` from local GID `sgid_index` (RoCE:
// global, port 1).
absl::StatusOr<std::unique_ptr<Ah>> CreateAhTo(Pd* pd, const Gid& dgid,
                                               uint8_t sgid_index = 0);

// The attributes and mask of one modify-QP step (docs/semantics.md section 3).
struct QpStep {
  QpAttr attr;
  uint32_t mask = 0;
};
QpStep ResetToInitStep(uint32_t access = kAccessLocalWrite |
                                         kAccessRemoteWrite |
                                         kAccessRemoteRead);
QpStep InitToRtrStep(uint32_t dest_qpn, const Gid& dgid);
QpStep RtrToRtsStep();
QpStep ToStateStep(QpState state);  // just STATE: for ERR, RESET, SQD, SQD->RTS

// Drives a RESET QP along the valid path RESET->INIT->RTR->RTS(->SQD), or
// RESET->INIT->ERR; connects it to itself (its own QPN and GID) on the way.
absl::Status BringQpTo(RawQp& raw, QpState state);

// What ibv_modify_qp returns, by hand, on a QP in `from` that the CM did not
// connect, where the driver takes only the state and the access flags
// (Expectations::checks_qp_transitions false, siw), for a QP made fresh and
// moved only by the suite's steps: the kernel's core checks of ports
// (uverbs_cmd.c modify_qp: IBV_QP_PORT and the AV's port must be port 1,
// and on INIT -> RTR the AV's port must be the one RESET -> INIT set), then
// siw_qp_modify's "no socket" for RTS from IDLE (RESET, INIT, RTR); 0 for
// success.
int StateOnlyModifyErrno(QpState from, const QpAttr& attr, uint32_t mask);

// Polls `cq` until a completion arrives (the sim progresses while its CQs
// are polled); ETIMEDOUT after `timeout`.
absl::StatusOr<WorkCompletion> Await(Cq* cq, absl::Duration timeout = kTimeout);
// Polls until `n` completions arrived; returns them in order.
absl::StatusOr<std::vector<WorkCompletion>> AwaitN(
    Cq* cq, int n, absl::Duration timeout = kTimeout);
// Polls `cq` for `quiet` and returns whatever arrived (tests expect none).
std::vector<WorkCompletion> Drain(Cq* cq, absl::Duration quiet = kQuiet);
// Moves `qp` to ERR (ibv_modify_qp with IBV_QP_STATE alone).
absl::Status MoveToErr(Qp* qp);
// A key no MR has: `key` with its top bit flipped.
inline uint32_t BadKey(uint32_t key) { return key ^ 0x80000000u; }

// Shared per-test state: the provider, its devices, its expectations.
class Harness {
 public:
  // Opens `spec`; skips (hw without a device) or fails the test on error.
  void Init(const std::string& spec);

  Provider& provider() const { return *provider_; }
  const std::string& spec() const { return spec_; }
  const std::vector<std::string>& devices() const { return devices_; }
  const Expectations& expect() const { return expect_; }
  // Checks that `qp` is in `state` as far as the provider can tell:
  // Qp::state() and ibv_query_qp. siw's query never reports the state
  // (Expectations::query_reports_qp_attrs): RESET is what it says then.
  void ExpectQpState(const Qp* qp, QpState state) const;

  // Lets `d` pass on the devices without polling: real time on hardware;
  // on the sim, whose clock moves only as its CQs are polled, `d` of
  // virtual time, every event due in it run.
  void LetTimePass(absl::Duration d) const;

  absl::StatusOr<std::unique_ptr<Context>> OpenDevice(int index = 0) const;
  // The default endpoint attributes of the suite.
  static EndpointAttr DefaultAttr();
  // Every access right the device supports: LOCAL_WRITE, REMOTE_WRITE,
  // REMOTE_READ and, with atomics, REMOTE_ATOMIC.
  uint32_t FullAccess() const;
  absl::StatusOr<EndpointPair> Connect(const EndpointAttr& attr) const;
  // A connected pair with a `buffer_size` buffer on each side, registered
  // with `access` (FullAccess() by default).
  absl::StatusOr<std::unique_ptr<RcPair>> MakePair(
      size_t buffer_size = 64 * 1024, const EndpointAttr& attr = DefaultAttr(),
      uint32_t access = 0) const;
  // A QP in RESET on device `device_index` (one CQ for both queues).
  absl::StatusOr<std::unique_ptr<RawQp>> MakeRawQp(
      const QpCap& cap = {16, 16, 2, 2, 0}, int device_index = 0,
      bool sq_sig_all = false) const;
  // Connects RC QPs `a` (on a side with GID `ga`) and `b` to RTS with
  // `access`: by hand (the free ConnectQps) where the provider allows it,
  // else through the provider's CM (Provider::ConnectQps), whose link lives
  // as long as this harness.
  absl::Status ConnectQps(Qp* a, const Gid& ga, Qp* b, const Gid& gb,
                          uint32_t access = kAccessLocalWrite |
                                            kAccessRemoteWrite |
                                            kAccessRemoteRead |
                                            kAccessRemoteAtomic) const;
  // The free BringQpTo, except that on a provider that reaches RTS only
  // through the CM, RTS (and SQD by way of it) comes from a connection to
  // a fresh QP on another device (raw.peer).
  absl::Status BringQpTo(RawQp& raw, QpState state) const;
  // Device `device_index` opened with a PD and a 1024-entry CQ.
  absl::StatusOr<std::unique_ptr<Side>> OpenSide(int device_index = 0) const;

 private:
  std::string spec_;
  std::unique_ptr<Provider> provider_;
  std::vector<std::string> devices_;
  Expectations expect_;
  mutable std::vector<std::unique_ptr<QpLink>> links_;
};

class ProviderTest : public ::testing::TestWithParam<std::string>,
                     public Harness {
 protected:
  void SetUp() override { Init(GetParam()); }
};

template <typename T>
class ProviderTestWithParam
    : public ::testing::TestWithParam<std::tuple<std::string, T>>,
      public Harness {
 protected:
  void SetUp() override { Init(std::get<0>(this->GetParam())); }
  const T& param() const { return std::get<1>(this->GetParam()); }
};

}  // namespace testing
}  // namespace verbsim

#define INSTANTIATE_PROVIDER_TEST_SUITE_P(suite)                     \
  INSTANTIATE_TEST_SUITE_P(                                          \
      Providers, suite,                                              \
      ::testing::ValuesIn(::verbsim::testing::ProviderSpecs()),      \
      ::verbsim::testing::ProviderParamName())

#define INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(suite, ...)              \
  INSTANTIATE_TEST_SUITE_P(                                             \
      Providers, suite,                                                 \
      ::testing::Combine(                                               \
          ::testing::ValuesIn(::verbsim::testing::ProviderSpecs()),     \
          __VA_ARGS__),                                                 \
      ::verbsim::testing::ProviderParamName())

#endif  // VERBSIM_TESTS_FIXTURE_H_
