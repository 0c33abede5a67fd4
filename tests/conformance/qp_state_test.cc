// The RC QP state machine (docs/semantics.md section 3): valid and invalid
// transitions, required and forbidden attributes, value ranges, Query, and
// what posting does in each state.
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "core/endpoint.h"
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

using ::testing::ElementsAre;
using ::testing::IsEmpty;

struct Transition {
  QpState from;
  QpState to;
};
void PrintTo(const Transition& t, std::ostream* os) {
  *os << QpStateName(t.from) << "_to_" << QpStateName(t.to);
}

bool InvolvesSqd(const Transition& t) {
  return t.from == QpState::kSqd || t.to == QpState::kSqd;
}

// What a modify by hand must return: `table_errno` where the provider
// follows the transition table, else what a driver that takes only the
// state and access flags returns (StateOnlyModifyErrno).
int ModifyErrno(const Expectations& e, int table_errno, QpState from,
                const QpAttr& attr, uint32_t mask) {
  return e.checks_qp_transitions ? table_errno
                                 : StateOnlyModifyErrno(from, attr, mask);
}

void ExpectModify(const absl::Status& status, int want) {
  if (want == 0) {
    EXPECT_OK(status);
  } else {
    EXPECT_THAT(status, HasErrno(want));
  }
}

// The SQD cases run where SQD exists, and where the driver takes any state
// (siw maps SQD to CLOSING, siw_verbs.c).
bool SkipsSqd(const Expectations& e, const Transition& t) {
  return InvolvesSqd(t) && !e.supports_sqd && e.checks_qp_transitions;
}

// The attributes a test passes for a move into `t.to`: the required set of
// the matching valid transition (or just STATE).
QpStep StepInto(const Transition& t, const RawQp& raw) {
  switch (t.to) {
    case QpState::kInit:
      return ResetToInitStep();
    case QpState::kRtr:
      return InitToRtrStep(raw.qp->qp_num(), raw.gid);
    case QpState::kRts:
      return t.from == QpState::kSqd ? ToStateStep(QpState::kRts)
                                     : RtrToRtsStep();
    default:
      return ToStateStep(t.to);
  }
}

// The attributes Query reports that a failed Modify must leave alone.
void ExpectSameAttrs(const QpAttr& before, const QpAttr& after) {
  EXPECT_EQ(after.qp_state, before.qp_state);
  EXPECT_EQ(after.qp_access_flags, before.qp_access_flags);
  EXPECT_EQ(after.port_num, before.port_num);
  EXPECT_EQ(after.pkey_index, before.pkey_index);
  EXPECT_EQ(after.path_mtu, before.path_mtu);
  EXPECT_EQ(after.dest_qp_num, before.dest_qp_num);
  EXPECT_EQ(after.rq_psn, before.rq_psn);
  EXPECT_EQ(after.sq_psn, before.sq_psn);
  EXPECT_EQ(after.max_dest_rd_atomic, before.max_dest_rd_atomic);
  EXPECT_EQ(after.min_rnr_timer, before.min_rnr_timer);
  EXPECT_EQ(after.max_rd_atomic, before.max_rd_atomic);
  EXPECT_EQ(after.timeout, before.timeout);
  EXPECT_EQ(after.retry_cnt, before.retry_cnt);
  EXPECT_EQ(after.rnr_retry, before.rnr_retry);
}

// --- Valid transitions -------------------------------------------------------

class ValidTransitionTest : public ProviderTestWithParam<Transition> {};

TEST_P(ValidTransitionTest, Succeeds) {
  const Transition t = param();
  if (SkipsSqd(expect(), t)) {
    GTEST_SKIP() << "no SQD on profile " << expect().profile;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ExpectQpState(raw->qp.get(), QpState::kReset);
  ASSERT_OK(BringQpTo(*raw, t.from));
  ASSERT_NO_FATAL_FAILURE(ExpectQpState(raw->qp.get(), t.from));
  const QpStep step = StepInto(t, *raw);
  // siw: RTS by hand has no socket; the rest succeeds.
  const int want = ModifyErrno(expect(), 0, t.from, step.attr, step.mask);
  ExpectModify(raw->qp->Modify(step.attr, step.mask), want);
  ExpectQpState(raw->qp.get(), want == 0 ? t.to : t.from);
}

const Transition kValidTransitions[] = {
    {QpState::kReset, QpState::kInit}, {QpState::kInit, QpState::kRtr},
    {QpState::kRtr, QpState::kRts},    {QpState::kRts, QpState::kSqd},
    {QpState::kSqd, QpState::kRts},    {QpState::kReset, QpState::kReset},
    {QpState::kInit, QpState::kReset}, {QpState::kRtr, QpState::kReset},
    {QpState::kRts, QpState::kReset},  {QpState::kSqd, QpState::kReset},
    {QpState::kErr, QpState::kReset},  {QpState::kInit, QpState::kErr},
    {QpState::kRtr, QpState::kErr},
    {QpState::kRts, QpState::kErr},    {QpState::kSqd, QpState::kErr},
    {QpState::kErr, QpState::kErr},
};

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(ValidTransitionTest,
                                       ::testing::ValuesIn(kValidTransitions));

// --- Invalid transitions -----------------------------------------------------

class InvalidTransitionTest : public ProviderTestWithParam<Transition> {};

TEST_P(InvalidTransitionTest, FailsWithEinvalAndLeavesTheQpAlone) {
  const Transition t = param();
  if (SkipsSqd(expect(), t)) {
    GTEST_SKIP() << "no SQD on profile " << expect().profile;
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK(BringQpTo(*raw, t.from));
  ASSERT_OK_AND_ASSIGN(QpAttr before, raw->qp->Query());
  const QpStep step = StepInto(t, *raw);
  // siw has no transition table: only its own rules refuse (and then the
  // QP is left alone too).
  const int want =
      ModifyErrno(expect(), EINVAL, t.from, step.attr, step.mask);
  ExpectModify(raw->qp->Modify(step.attr, step.mask), want);
  if (want == 0) return;
  ExpectQpState(raw->qp.get(), t.from);
  ASSERT_OK_AND_ASSIGN(QpAttr after, raw->qp->Query());
  ExpectSameAttrs(before, after);
}

const Transition kInvalidTransitions[] = {
    {QpState::kReset, QpState::kRtr}, {QpState::kReset, QpState::kRts},
    {QpState::kReset, QpState::kSqd}, {QpState::kInit, QpState::kRts},
    {QpState::kInit, QpState::kSqd},  {QpState::kRtr, QpState::kInit},
    {QpState::kRtr, QpState::kSqd},   {QpState::kRts, QpState::kInit},
    {QpState::kRts, QpState::kRtr},   {QpState::kSqd, QpState::kInit},
    {QpState::kSqd, QpState::kRtr},   {QpState::kErr, QpState::kInit},
    {QpState::kErr, QpState::kRtr},   {QpState::kErr, QpState::kRts},
    {QpState::kErr, QpState::kSqd},   {QpState::kReset, QpState::kErr},
};

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    InvalidTransitionTest, ::testing::ValuesIn(kInvalidTransitions));

// --- Attribute masks ---------------------------------------------------------

// One of the three connection steps, with one mask bit to remove or add.
struct MaskCase {
  QpState from;  // RESET, INIT or RTR: the step is the next one
  uint32_t bit;
};
void PrintTo(const MaskCase& c, std::ostream* os) {
  *os << QpStateName(c.from) << "_" << QpAttrMaskName(c.bit);
}

QpStep NextStep(QpState from, const RawQp& raw) {
  switch (from) {
    case QpState::kReset:
      return ResetToInitStep();
    case QpState::kInit:
      return InitToRtrStep(raw.qp->qp_num(), raw.gid);
    default: {
      QpStep s = RtrToRtsStep();
      // Values that differ from a fresh QP's, so a partial update shows.
      s.attr.sq_psn = 0x4242;
      s.attr.timeout = 18;
      s.attr.retry_cnt = 5;
      s.attr.rnr_retry = 4;
      return s;
    }
  }
}

class MissingRequiredAttrTest : public ProviderTestWithParam<MaskCase> {};

TEST_P(MissingRequiredAttrTest, FailsWithEinvalAndLeavesTheQpAlone) {
  const MaskCase c = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK(BringQpTo(*raw, c.from));
  ASSERT_OK_AND_ASSIGN(QpAttr before, raw->qp->Query());
  QpStep step = NextStep(c.from, *raw);
  ASSERT_NE(step.mask & c.bit, 0u) << "not a required attribute";
  const int want =
      ModifyErrno(expect(), EINVAL, c.from, step.attr, step.mask & ~c.bit);
  ExpectModify(raw->qp->Modify(step.attr, step.mask & ~c.bit), want);
  if (want != 0) {
    ExpectQpState(raw->qp.get(), c.from);
    ASSERT_OK_AND_ASSIGN(QpAttr after, raw->qp->Query());
    ExpectSameAttrs(before, after);
  }
  // With the full mask the step then works (siw: but for RTS by hand).
  ExpectModify(raw->qp->Modify(step.attr, step.mask),
               ModifyErrno(expect(), 0, c.from, step.attr, step.mask));
}

std::vector<MaskCase> RequiredAttrCases() {
  std::vector<MaskCase> out;
  for (uint32_t bit : {kQpState, kQpPkeyIndex, kQpPort, kQpAccessFlags}) {
    out.push_back({QpState::kReset, bit});
  }
  for (uint32_t bit : {kQpState, kQpAv, kQpPathMtu, kQpDestQpn, kQpRqPsn,
                       kQpMaxDestRdAtomic, kQpMinRnrTimer}) {
    out.push_back({QpState::kInit, bit});
  }
  for (uint32_t bit : {kQpState, kQpSqPsn, kQpMaxQpRdAtomic, kQpRetryCnt,
                       kQpRnrRetry, kQpTimeout}) {
    out.push_back({QpState::kRtr, bit});
  }
  return out;
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(MissingRequiredAttrTest,
                                       ::testing::ValuesIn(RequiredAttrCases()));

class ForbiddenAttrTest : public ProviderTestWithParam<MaskCase> {};

TEST_P(ForbiddenAttrTest, FailsWithEinvalAndLeavesTheQpAlone) {
  const MaskCase c = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK(BringQpTo(*raw, c.from));
  ASSERT_OK_AND_ASSIGN(QpAttr before, raw->qp->Query());
  QpStep step = NextStep(c.from, *raw);
  // Sensible values for the extra attribute.
  step.attr.ah_attr.dgid = raw->gid;
  step.attr.ah_attr.port_num = 1;
  step.attr.dest_qp_num = raw->qp->qp_num();
  step.attr.path_mtu = Mtu::k1024;
  step.attr.qkey = 0x11111111;
  step.attr.max_rd_atomic = 1;
  step.attr.max_dest_rd_atomic = 1;
  step.attr.timeout = 14;
  step.attr.rnr_retry = 7;
  ASSERT_EQ(step.mask & c.bit, 0u) << "a required attribute";
  const int want =
      ModifyErrno(expect(), EINVAL, c.from, step.attr, step.mask | c.bit);
  ExpectModify(raw->qp->Modify(step.attr, step.mask | c.bit), want);
  if (want == 0) return;
  ExpectQpState(raw->qp.get(), c.from);
  ASSERT_OK_AND_ASSIGN(QpAttr after, raw->qp->Query());
  ExpectSameAttrs(before, after);
}

const MaskCase kForbiddenAttrCases[] = {
    {QpState::kReset, kQpAv},          {QpState::kReset, kQpSqPsn},
    {QpState::kReset, kQpQkey},        {QpState::kReset, kQpPathMtu},
    {QpState::kInit, kQpSqPsn},        {QpState::kInit, kQpTimeout},
    {QpState::kInit, kQpMaxQpRdAtomic}, {QpState::kInit, kQpRnrRetry},
    {QpState::kRtr, kQpAv},            {QpState::kRtr, kQpDestQpn},
    {QpState::kRtr, kQpRqPsn},         {QpState::kRtr, kQpPathMtu},
    {QpState::kRtr, kQpMaxDestRdAtomic},
};

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    ForbiddenAttrTest, ::testing::ValuesIn(kForbiddenAttrCases));

// --- Values out of range -----------------------------------------------------

struct RangeCase {
  const char* name;
  QpState from;
  // Spoils one attribute of the step; false when the device leaves no value
  // out of range.
  std::function<bool(QpAttr&, const DeviceAttr&, const PortAttr&)> spoil;
};
void PrintTo(const RangeCase& c, std::ostream* os) { *os << c.name; }

class OutOfRangeAttrTest : public ProviderTestWithParam<RangeCase> {};

// The attribute (QpAttrMask bit) a range case spoils, from its name.
uint32_t AttrOf(const std::string& name) {
  const std::pair<const char*, uint32_t> kPrefixes[] = {
      {"AvPort", kQpAv},           {"AvWithoutGrh", kQpAv},
      {"Port", kQpPort},
      {"PkeyIndex", kQpPkeyIndex}, {"UnknownAccessBit", kQpAccessFlags},
      {"PathMtu", kQpPathMtu},     {"MinRnrTimer", kQpMinRnrTimer},
      {"MaxDestRdAtomic", kQpMaxDestRdAtomic},
      {"MaxRdAtomic", kQpMaxQpRdAtomic},
      {"Timeout", kQpTimeout},     {"RetryCnt", kQpRetryCnt},
      {"RnrRetry", kQpRnrRetry},
  };
  for (const auto& [prefix, attr] : kPrefixes) {
    if (name.rfind(prefix, 0) == 0) return attr;
  }
  return 0;
}

TEST_P(OutOfRangeAttrTest, FailsWithEinvalAndLeavesTheQpAlone) {
  const RangeCase& c = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK_AND_ASSIGN(PortAttr port, raw->context->QueryPort(1));
  ASSERT_OK(BringQpTo(*raw, c.from));
  ASSERT_OK_AND_ASSIGN(QpAttr before, raw->qp->Query());
  QpStep step = NextStep(c.from, *raw);
  if (!c.spoil(step.attr, raw->context->device_attr(), port)) {
    GTEST_SKIP() << "the device accepts every value of this field";
  }
  if (!expect().checks_qp_transitions) {
    // No ranges: only the core's port checks and RTS by hand refuse.
    const int want = StateOnlyModifyErrno(c.from, step.attr, step.mask);
    ExpectModify(raw->qp->Modify(step.attr, step.mask), want);
    if (want != 0) {
      ASSERT_OK_AND_ASSIGN(QpAttr after, raw->qp->Query());
      ExpectSameAttrs(before, after);
    }
    return;
  }
  if (expect().modify_unchecked_attrs & AttrOf(c.name)) {
    // The profile takes this attribute as given: the step succeeds.
    EXPECT_OK(raw->qp->Modify(step.attr, step.mask));
    EXPECT_NE(raw->qp->state(), c.from);
    return;
  }
  EXPECT_THAT(raw->qp->Modify(step.attr, step.mask), HasErrno(EINVAL));
  EXPECT_EQ(raw->qp->state(), c.from);
  ASSERT_OK_AND_ASSIGN(QpAttr after, raw->qp->Query());
  ExpectSameAttrs(before, after);
}

std::vector<RangeCase> RangeCases() {
  using A = QpAttr;
  using D = DeviceAttr;
  using P = PortAttr;
  return {
      {"Port0", QpState::kReset,
       [](A& a, const D&, const P&) { return (a.port_num = 0), true; }},
      {"PortPastLast", QpState::kReset,
       [](A& a, const D& d, const P&) {
         a.port_num = static_cast<uint8_t>(d.phys_port_cnt + 1);
         return true;
       }},
      {"PkeyIndexPastTable", QpState::kReset,
       [](A& a, const D&, const P& p) {
         a.pkey_index = static_cast<uint16_t>(p.pkey_tbl_len);
         return true;
       }},
      {"UnknownAccessBit", QpState::kReset,
       [](A& a, const D&, const P&) {
         a.qp_access_flags |= 1u << 15;
         return true;
       }},
      {"PathMtu0", QpState::kInit,
       [](A& a, const D&, const P&) {
         a.path_mtu = static_cast<Mtu>(0);
         return true;
       }},
      {"PathMtu6", QpState::kInit,
       [](A& a, const D&, const P&) {
         a.path_mtu = static_cast<Mtu>(6);
         return true;
       }},
      {"MinRnrTimer32", QpState::kInit,
       [](A& a, const D&, const P&) { return (a.min_rnr_timer = 32), true; }},
      {"MaxDestRdAtomicOverDevice", QpState::kInit,
       [](A& a, const D& d, const P&) {
         if (d.max_qp_rd_atom >= 255) return false;
         a.max_dest_rd_atomic = static_cast<uint8_t>(d.max_qp_rd_atom + 1);
         return true;
       }},
      {"AvPortPastLast", QpState::kInit,
       [](A& a, const D& d, const P&) {
         a.ah_attr.port_num = static_cast<uint8_t>(d.phys_port_cnt + 1);
         return true;
       }},
      // RoCE addresses by GID: an AV without a GRH (rdma_check_ah_attr).
      {"AvWithoutGrh", QpState::kInit,
       [](A& a, const D&, const P&) { return (a.ah_attr.is_global = false), true; }},
      {"Timeout32", QpState::kRtr,
       [](A& a, const D&, const P&) { return (a.timeout = 32), true; }},
      {"Timeout255", QpState::kRtr,
       [](A& a, const D&, const P&) { return (a.timeout = 255), true; }},
      {"RetryCnt8", QpState::kRtr,
       [](A& a, const D&, const P&) { return (a.retry_cnt = 8), true; }},
      {"RnrRetry8", QpState::kRtr,
       [](A& a, const D&, const P&) { return (a.rnr_retry = 8), true; }},
      {"MaxRdAtomicOverDevice", QpState::kRtr,
       [](A& a, const D& d, const P&) {
         if (d.max_qp_init_rd_atom >= 255) return false;
         a.max_rd_atomic = static_cast<uint8_t>(d.max_qp_init_rd_atom + 1);
         return true;
       }},
  };
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(OutOfRangeAttrTest,
                                       ::testing::ValuesIn(RangeCases()));

// --- Query and queues --------------------------------------------------------

class QpStateTest : public ProviderTest {};

TEST_P(QpStateTest, QueryReturnsWhatWasSet) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  Qp* qp = raw->qp.get();
  const uint32_t access = kAccessLocalWrite | kAccessRemoteRead;
  QpStep init = ResetToInitStep(access);
  ASSERT_OK(qp->Modify(init.attr, init.mask));
  QpStep rtr = InitToRtrStep(qp->qp_num(), raw->gid);
  rtr.attr.path_mtu = Mtu::k512;
  rtr.attr.rq_psn = 0x123456;
  rtr.attr.max_dest_rd_atomic = 4;
  rtr.attr.min_rnr_timer = 10;
  ASSERT_OK(qp->Modify(rtr.attr, rtr.mask));
  QpStep rts = RtrToRtsStep();
  rts.attr.sq_psn = 0xabcdef;
  rts.attr.max_rd_atomic = 2;
  rts.attr.timeout = 13;
  rts.attr.retry_cnt = 5;
  rts.attr.rnr_retry = 3;
  if (!expect().query_reports_qp_attrs) {
    // siw: RTS by hand has no socket, and siw_verbs.c siw_query_qp reports
    // no state, PSN or destination and fixed access flags, whatever was set.
    EXPECT_THAT(qp->Modify(rts.attr, rts.mask), HasErrno(EINVAL));
    ASSERT_OK_AND_ASSIGN(QpAttr q, qp->Query());
    EXPECT_EQ(q.qp_state, QpState::kReset);
    EXPECT_EQ(q.rq_psn, 0u);
    EXPECT_EQ(q.sq_psn, 0u);
    EXPECT_EQ(q.dest_qp_num, 0u);
    EXPECT_EQ(q.qp_access_flags,
              kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
    return;
  }
  ASSERT_OK(qp->Modify(rts.attr, rts.mask));

  ASSERT_OK_AND_ASSIGN(QpAttr a, qp->Query());
  EXPECT_EQ(a.qp_state, QpState::kRts);
  EXPECT_EQ(a.qp_access_flags, access);
  EXPECT_EQ(a.port_num, 1);
  EXPECT_EQ(a.pkey_index, 0);
  EXPECT_EQ(a.path_mtu, Mtu::k512);
  EXPECT_EQ(a.dest_qp_num, qp->qp_num());
  EXPECT_EQ(a.rq_psn, 0x123456u);
  EXPECT_EQ(a.max_dest_rd_atomic, 4);
  EXPECT_EQ(a.min_rnr_timer, 10);
  EXPECT_EQ(a.sq_psn, 0xabcdefu);
  EXPECT_EQ(a.max_rd_atomic, 2);
  EXPECT_EQ(a.timeout, 13);
  EXPECT_EQ(a.retry_cnt, 5);
  EXPECT_EQ(a.rnr_retry, 3);
  EXPECT_EQ(a.ah_attr.dgid, raw->gid);
  EXPECT_GE(a.cap.max_send_wr, 16u);
  EXPECT_GE(a.cap.max_recv_wr, 16u);
  EXPECT_GE(a.cap.max_send_sge, 2u);
  EXPECT_GE(a.cap.max_recv_sge, 2u);
}

TEST_P(QpStateTest, NewQpIsInResetWithItsInitAttr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  EXPECT_EQ(raw->qp->state(), QpState::kReset);
  EXPECT_EQ(raw->qp->type(), QpType::kRc);
  EXPECT_EQ(raw->qp->pd(), raw->pd.get());
  EXPECT_EQ(raw->qp->send_cq(), raw->cq.get());
  EXPECT_EQ(raw->qp->recv_cq(), raw->cq.get());
  EXPECT_EQ(raw->qp->init_attr().qp_type, QpType::kRc);
  EXPECT_GE(raw->qp->init_attr().cap.max_send_wr, 16u);
  EXPECT_NE(raw->qp->qp_num(), 0u);
  ASSERT_OK_AND_ASSIGN(QpAttr a, raw->qp->Query());
  EXPECT_EQ(a.qp_state, QpState::kReset);
}

TEST_P(QpStateTest, QpNumbersAreDistinct) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  QpInitAttr init = raw->qp->init_attr();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> second, raw->pd->CreateQp(init));
  EXPECT_NE(second->qp_num(), raw->qp->qp_num());
  ASSERT_OK(Destroy(second));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> third, raw->pd->CreateQp(init));
  EXPECT_NE(third->qp_num(), raw->qp->qp_num());
  EXPECT_NE(third->qp_num(), 0u);
}

TEST_P(QpStateTest, ResetThenReconnectWorks) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK(BringQpTo(*raw, QpState::kRts));
  QpStep reset = ToStateStep(QpState::kReset);
  ASSERT_OK(raw->qp->Modify(reset.attr, reset.mask));
  if (!expect().resets_qps) {
    // siw_qp.c siw_qp_nextstate_from_rts ignores RESET: the QP stays
    // connected and still carries a send to its peer.
    Buffer buf(128);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                         raw->pd->RegMr(buf.data(), 64, kAccessLocalWrite));
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<Mr> pmr,
        raw->peer->pd->RegMr(buf.data() + 64, 64, kAccessLocalWrite));
    const Sge psge = SgeOf(*pmr, 0, 64);
    RecvWr pwr;
    pwr.wr_id = 1;
    pwr.sg_list = {&psge, 1};
    ASSERT_OK(raw->peer->qp->PostRecv(pwr));
    const Sge ssge = SgeOf(*mr, 0, 32);
    ASSERT_OK(raw->qp->PostSend(MakeWr(WrOpcode::kSend, 2, {&ssge, 1})));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(raw->cq.get()));
    EXPECT_THAT(wc, WcOk(2u, WcOpcode::kSend)) << wc;
    ASSERT_OK_AND_ASSIGN(WorkCompletion pwc, Await(raw->peer->cq.get()));
    EXPECT_THAT(pwc, WcOk(1u, WcOpcode::kRecv)) << pwc;
    return;
  }
  EXPECT_EQ(raw->qp->state(), QpState::kReset);
  ASSERT_OK(BringQpTo(*raw, QpState::kRts));
  EXPECT_EQ(raw->qp->state(), QpState::kRts);
}

// --- Posting by state --------------------------------------------------------

class PostSendByStateTest : public ProviderTestWithParam<QpState> {};

TEST_P(PostSendByStateTest, IsRejectedBeforeRts) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK(BringQpTo(*raw, param()));
  Buffer buf(64);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       raw->pd->RegMr(buf.data(), 64, kAccessLocalWrite));
  const Sge sge = SgeOf(*mr, 0, 64);
  const SendWr wr = MakeWr(WrOpcode::kSend, 1, {&sge, 1});
  EXPECT_THAT(raw->qp->PostSend(wr),
              HasErrno(expect().post_send_before_rts_errno));
  ExpectQpState(raw->qp.get(), param());
  EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    PostSendByStateTest,
    ::testing::Values(QpState::kReset, QpState::kInit, QpState::kRtr));

class PostRecvByStateTest : public ProviderTestWithParam<QpState> {};

TEST_P(PostRecvByStateTest, IsRejectedOnlyInReset) {
  const QpState state = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK(BringQpTo(*raw, state));
  Buffer buf(64);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       raw->pd->RegMr(buf.data(), 64, kAccessLocalWrite));
  const Sge sge = SgeOf(*mr, 0, 64);
  RecvWr wr;
  wr.wr_id = 77;
  wr.sg_list = {&sge, 1};
  if (state == QpState::kReset && expect().refuses_recv_in_reset) {
    EXPECT_THAT(raw->qp->PostRecv(wr), HasErrno(EINVAL));
    EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
  } else if (state == QpState::kErr && !expect().flushes_recv_posted_in_err) {
    // Allowed in ERR, but the profile never flushes it (rxe).
    ASSERT_OK(raw->qp->PostRecv(wr));
    EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
  } else if (state == QpState::kErr) {
    // Allowed in ERR; completes at once, flushed.
    ASSERT_OK(raw->qp->PostRecv(wr));
    ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(raw->cq.get()));
    EXPECT_THAT(wc, WcFlushed(77u)) << wc;
    EXPECT_EQ(wc.qp_num, raw->qp->qp_num());
  } else {
    ASSERT_OK(raw->qp->PostRecv(wr));
    EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
  }
  ExpectQpState(raw->qp.get(), state);
}

INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    PostRecvByStateTest, ::testing::Values(QpState::kReset, QpState::kInit,
                                           QpState::kRtr, QpState::kRts,
                                           QpState::kErr));

TEST_P(QpStateTest, MovingToErrFlushesPostedReceivesInOrder) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK(BringQpTo(*raw, QpState::kInit));
  Buffer buf(256);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       raw->pd->RegMr(buf.data(), 256, kAccessLocalWrite));
  for (uint64_t id = 1; id <= 3; ++id) {
    const Sge sge = SgeOf(*mr, (id - 1) * 64, 64);
    RecvWr wr;
    wr.wr_id = id;
    wr.sg_list = {&sge, 1};
    ASSERT_OK(raw->qp->PostRecv(wr));
  }
  EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
  QpStep err = ToStateStep(QpState::kErr);
  ASSERT_OK(raw->qp->Modify(err.attr, err.mask));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(raw->cq.get(), 3));
  EXPECT_THAT(wcs, ElementsAre(WcFlushed(1u), WcFlushed(2u), WcFlushed(3u)));
  for (const WorkCompletion& wc : wcs) {
    EXPECT_EQ(wc.qp_num, raw->qp->qp_num());
  }
  EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
}

TEST_P(QpStateTest, ResetDiscardsPostedReceivesWithoutCompletions) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  ASSERT_OK(BringQpTo(*raw, QpState::kInit));
  Buffer buf(256);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       raw->pd->RegMr(buf.data(), 256, kAccessLocalWrite));
  for (uint64_t id = 1; id <= 3; ++id) {
    const Sge sge = SgeOf(*mr, (id - 1) * 64, 64);
    RecvWr wr;
    wr.wr_id = id;
    wr.sg_list = {&sge, 1};
    ASSERT_OK(raw->qp->PostRecv(wr));
  }
  QpStep reset = ToStateStep(QpState::kReset);
  ASSERT_OK(raw->qp->Modify(reset.attr, reset.mask));
  EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
  // Had they survived, ERR (by way of INIT) would flush them now.
  ASSERT_OK(BringQpTo(*raw, QpState::kErr));
  if (expect().resets_qps) {
    EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
    return;
  }
  // siw ignores RESET in IDLE: the receives survive it and ERR flushes
  // them, in order (siw_qp.c siw_rq_flush).
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(raw->cq.get(), 3));
  for (uint64_t id = 1; id <= 3; ++id) {
    EXPECT_THAT(wcs[id - 1], WcFlushed(id)) << wcs[id - 1];
  }
}

TEST_P(QpStateTest, ReceiveQueueFullIsEnomem) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw,
                       MakeRawQp({/*max_send_wr=*/4, /*max_recv_wr=*/8,
                                  /*max_send_sge=*/1, /*max_recv_sge=*/1,
                                  /*max_inline_data=*/0}));
  ASSERT_OK(BringQpTo(*raw, QpState::kInit));
  ASSERT_OK_AND_ASSIGN(QpAttr attr, raw->qp->Query());
  const uint32_t depth = attr.cap.max_recv_wr;
  ASSERT_GE(depth, 8u);
  Buffer buf(64);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                       raw->pd->RegMr(buf.data(), 64, kAccessLocalWrite));
  const Sge sge = SgeOf(*mr, 0, 64);
  std::vector<RecvWr> wrs(depth + 1);
  for (uint32_t i = 0; i <= depth; ++i) {
    wrs[i].wr_id = i;
    wrs[i].sg_list = {&sge, 1};
  }
  size_t bad = 12345;
  EXPECT_THAT(raw->qp->PostRecv(wrs, &bad), HasErrno(ENOMEM));
  EXPECT_EQ(bad, depth);
  // Still full, and the full queue is checked before the WR's SGE count
  // (rxe_post_one_recv, siw_post_receive).
  RecvWr one;
  one.wr_id = 999;
  one.sg_list = {&sge, 1};
  EXPECT_THAT(raw->qp->PostRecv(one), HasErrno(ENOMEM));
  std::vector<Sge> many(attr.cap.max_recv_sge + 1, sge);
  RecvWr too_many;
  too_many.wr_id = 998;
  too_many.sg_list = many;
  EXPECT_THAT(raw->qp->PostRecv(too_many), HasErrno(ENOMEM));
  // The accepted ones are there: ERR flushes exactly them.
  QpStep err = ToStateStep(QpState::kErr);
  ASSERT_OK(raw->qp->Modify(err.attr, err.mask));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> wcs,
                       AwaitN(raw->cq.get(), static_cast<int>(depth)));
  for (uint32_t i = 0; i < depth; ++i) EXPECT_THAT(wcs[i], WcFlushed(i));
  EXPECT_THAT(Drain(raw->cq.get()), IsEmpty());
}

// A mask bit past IBV_QP_DEST_QPN: EOPNOTSUPP, the QP unchanged (rdma-core
// ibv_cmd_modify_qp).
TEST_P(QpStateTest, MaskBitPastDestQpnIsEopnotsupp) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> raw, MakeRawQp());
  QpStep step = NextStep(QpState::kReset, *raw);
  EXPECT_THAT(raw->qp->Modify(step.attr, step.mask | (1u << 25)),
              HasErrno(EOPNOTSUPP));
  EXPECT_EQ(raw->qp->state(), QpState::kReset);
  EXPECT_OK(raw->qp->Modify(step.attr, step.mask));
}

TEST_P(QpStateTest, AQpInRtrReceivesButCannotSend) {
  // Two QPs connected by hand (core's ModifyQpTo* helpers): A in RTS, B left
  // in RTR. The responder works from RTR on.
  const int other = devices().size() > 1 ? 1 : 0;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> a, MakeRawQp());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RawQp> b,
                       MakeRawQp({16, 16, 2, 2, 0}, other));
  const EndpointAttr attr;
  ASSERT_OK(ModifyQpToInit(a->qp.get(), attr));
  ASSERT_OK(ModifyQpToInit(b->qp.get(), attr));
  ASSERT_OK(ModifyQpToRtr(a->qp.get(), attr, b->qp->qp_num(), b->gid, 100));
  ASSERT_OK(ModifyQpToRtr(b->qp.get(), attr, a->qp->qp_num(), a->gid, 200));
  if (!expect().hand_connected_qps) {
    // iWARP: QPs moved by hand never connect. A cannot enter RTS (no
    // socket) and B, "in RTR", cannot send (siw_qp.c siw_qp_modify,
    // siw_verbs.c siw_post_send).
    EXPECT_THAT(ModifyQpToRts(a->qp.get(), attr, 200), HasErrno(EINVAL));
    Buffer buf(64);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> mr,
                         b->pd->RegMr(buf.data(), 64, kAccessLocalWrite));
    const Sge sge = SgeOf(*mr, 0, 8);
    EXPECT_THAT(b->qp->PostSend(MakeWr(WrOpcode::kSend, 3, {&sge, 1})),
                HasErrno(expect().post_send_before_rts_errno));
    return;
  }
  ASSERT_OK(ModifyQpToRts(a->qp.get(), attr, 200));
  EXPECT_EQ(b->qp->state(), QpState::kRtr);

  Buffer abuf(4096), bbuf(4096);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> amr,
                       a->pd->RegMr(abuf.data(), 4096, kAccessLocalWrite));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> bmr,
                       b->pd->RegMr(bbuf.data(), 4096, kAccessLocalWrite));
  abuf.FillPattern(3, 0, 2500);
  const Sge rsge = SgeOf(*bmr, 0, 4096);
  RecvWr rwr;
  rwr.wr_id = 1;
  rwr.sg_list = {&rsge, 1};
  ASSERT_OK(b->qp->PostRecv(rwr));
  const Sge ssge = SgeOf(*amr, 0, 2500);
  ASSERT_OK(a->qp->PostSend(MakeWr(WrOpcode::kSend, 2, {&ssge, 1})));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(a->cq.get()));
  EXPECT_THAT(swc, WcOk(2u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(b->cq.get()));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRecv)) << rwc;
  EXPECT_EQ(rwc.byte_len, 2500u);
  EXPECT_EQ(bbuf.Bytes(0, 2500), abuf.Bytes(0, 2500));
  const Sge back = SgeOf(*bmr, 0, 8);
  EXPECT_THAT(b->qp->PostSend(MakeWr(WrOpcode::kSend, 3, {&back, 1})),
              HasErrno(EINVAL));
  EXPECT_EQ(b->qp->state(), QpState::kRtr);
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(QpStateTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
