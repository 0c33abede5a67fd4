// The reference model's rules, checked by hand-picked cases: the model is
// what the harnesses trust, so it gets tests of its own.
#include "fuzz/model.h"

#include <cerrno>
#include <cstdint>

#include "gtest/gtest.h"

namespace verbsim::fuzz {
namespace {

constexpr uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite |
                          kAccessRemoteRead | kAccessRemoteAtomic;

TEST(ModelReg, ArgumentRules) {
  const RegLimits lim{UINT64_MAX, 1000};
  auto err = [&](uint64_t addr, uint64_t len, uint32_t access,
                 bool alive = true) {
    return RegArgumentErrno(RegCall{alive, addr, len, access}, lim);
  };
  EXPECT_EQ(err(0x1000, 64, kAll), 0);
  EXPECT_EQ(err(0x1000, 64, kAll, false), EINVAL);
  EXPECT_EQ(err(0x1000, 64, kAccessRemoteWrite), EINVAL);
  EXPECT_EQ(err(0x1000, 64, kAccessRemoteAtomic), EINVAL);
  EXPECT_EQ(err(0x1000, 64, kAccessRemoteRead), 0);
  EXPECT_EQ(err(0x1000, 64, 1u << 20), EINVAL);
  EXPECT_EQ(err(0x1000, 64, kAccessLocalWrite | kAccessZeroBased), EINVAL);
  EXPECT_EQ(err(0x1000, 64, kAccessLocalWrite | kAccessOnDemand), EOPNOTSUPP);
  // Flag errors before the unsupported feature.
  EXPECT_EQ(err(0x1000, 64, kAccessRemoteWrite | kAccessOnDemand), EINVAL);
  EXPECT_EQ(err(0, 1, kAccessLocalWrite), EINVAL);
  EXPECT_EQ(err(0, 0, kAccessLocalWrite), 0);
  EXPECT_EQ(err(UINT64_MAX, 0, 0), 0);
  EXPECT_EQ(err(UINT64_MAX, 1, 0), EINVAL);        // ends at 2^64
  EXPECT_EQ(err(UINT64_MAX - 9, 10, 0), EINVAL);   // ends at 2^64
  EXPECT_EQ(err(UINT64_MAX - 9, 9, 0), 0);
  EXPECT_EQ(err(1, UINT64_MAX - 1, 0), 0);
  EXPECT_EQ(RegArgumentErrno(RegCall{true, 0x1000, 65, 0}, RegLimits{64, 10}),
            EINVAL);
}

TEST(ModelKeys, LivenessPdBoundsAccess) {
  KeyModel keys;
  const int a = keys.Add(ModelMr{0, 1, 1000, 100, kAll, 0x10, 0x11, true});
  keys.Add(ModelMr{0, 2, 5000, 10, kAccessLocalWrite, 0x20, 0x21, true});
  EXPECT_EQ(keys.Check(0, 0x11, true, 1, 1000, 100, kAccessRemoteWrite),
            KeyVerdict::kOk);
  EXPECT_EQ(keys.Check(0, 0x10, true, 1, 1000, 1, 0), KeyVerdict::kNoSuchKey);
  EXPECT_EQ(keys.Check(1, 0x11, true, 1, 1000, 1, 0), KeyVerdict::kNoSuchKey);
  EXPECT_EQ(keys.Check(0, 0x11, true, 2, 1000, 1, 0), KeyVerdict::kOtherPd);
  EXPECT_EQ(keys.Check(0, 0x11, true, 1, 999, 1, 0), KeyVerdict::kOutOfRange);
  EXPECT_EQ(keys.Check(0, 0x11, true, 1, 1000, 101, 0),
            KeyVerdict::kOutOfRange);
  EXPECT_EQ(keys.Check(0, 0x11, true, 1, 1099, 1, 0), KeyVerdict::kOk);
  EXPECT_EQ(keys.Check(0, 0x11, true, 1, 1100, 0, 0), KeyVerdict::kOk);
  EXPECT_EQ(keys.Check(0, 0x11, true, 1, UINT64_MAX, 2, 0),
            KeyVerdict::kOutOfRange);
  EXPECT_EQ(keys.Check(0, 0x21, true, 2, 5000, 1, kAccessRemoteRead),
            KeyVerdict::kNoAccess);
  keys.Kill(a);
  EXPECT_EQ(keys.Check(0, 0x11, true, 1, 1000, 1, 0), KeyVerdict::kNoSuchKey);
  EXPECT_EQ(keys.FindCollision(), "");
  keys.Add(ModelMr{0, 1, 0, 10, 0, 0x30, 0x30, true});  // lkey == rkey: fine
  EXPECT_EQ(keys.FindCollision(), "");
  keys.Add(ModelMr{1, 1, 0, 10, 0, 0x21, 0x40, true});  // other node: fine
  EXPECT_EQ(keys.FindCollision(), "");
  keys.Add(ModelMr{0, 1, 0, 10, 0, 0x50, 0x21, true});
  EXPECT_NE(keys.FindCollision(), "");
}

TEST(ModelPost, SendWrRules) {
  QpCaps caps{16, 16, 2, 2, 64};
  Sge sge{0x1000, 8, 1};
  Sge three[3] = {sge, sge, sge};
  SendWr wr;
  wr.sg_list = {&sge, 1};
  EXPECT_EQ(SendWrErrno(wr, caps), 0);
  wr.opcode = WrOpcode::kBindMw;
  EXPECT_EQ(SendWrErrno(wr, caps), EINVAL);
  wr.opcode = static_cast<WrOpcode>(12);
  EXPECT_EQ(SendWrErrno(wr, caps), EINVAL);
  wr.opcode = WrOpcode::kRdmaRead;
  wr.send_flags = kSendInline;
  EXPECT_EQ(SendWrErrno(wr, caps), EINVAL);
  wr.opcode = WrOpcode::kRdmaWrite;
  EXPECT_EQ(SendWrErrno(wr, caps), 0);
  wr.send_flags = 1u << 9;
  EXPECT_EQ(SendWrErrno(wr, caps), EINVAL);
  wr.send_flags = 0;
  wr.sg_list = {three, 3};
  EXPECT_EQ(SendWrErrno(wr, caps), EINVAL);
  wr.opcode = WrOpcode::kAtomicFetchAndAdd;
  wr.sg_list = {&sge, 1};
  EXPECT_EQ(SendWrErrno(wr, caps), 0);
  Sge four{0x1000, 4, 1};
  wr.sg_list = {&four, 1};
  EXPECT_EQ(SendWrErrno(wr, caps), EINVAL);
  EXPECT_TRUE(SendQueueClosed(QpState::kRtr));
  EXPECT_FALSE(SendQueueClosed(QpState::kSqd));
  EXPECT_FALSE(SendQueueClosed(QpState::kErr));
  EXPECT_FALSE(RecvQueueClosed(QpState::kInit));
}

TEST(ModelModify, Transitions) {
  using S = QpState;
  EXPECT_EQ(ModifyErrno(S::kReset, S::kInit, InitMask()), 0);
  EXPECT_EQ(ModifyErrno(S::kInit, S::kInit, InitMask()), 0);
  EXPECT_EQ(ModifyErrno(S::kInit, S::kRtr, RtrMask()), 0);
  EXPECT_EQ(ModifyErrno(S::kRtr, S::kRts, RtsMask()), 0);
  EXPECT_EQ(ModifyErrno(S::kRts, S::kRts, RtsMask()), EINVAL);
  EXPECT_EQ(ModifyErrno(S::kRts, S::kRts, kQpState), 0);
  EXPECT_EQ(ModifyErrno(S::kSqd, S::kRts, kQpState), 0);
  EXPECT_EQ(ModifyErrno(S::kRts, S::kSqd, kQpState), 0);
  EXPECT_EQ(ModifyErrno(S::kReset, S::kRtr, RtrMask()), EINVAL);
  EXPECT_EQ(ModifyErrno(S::kInit, S::kRtr, kQpState | kQpAv), EINVAL);
  EXPECT_EQ(ModifyErrno(S::kErr, S::kInit, InitMask()), EINVAL);
  EXPECT_EQ(ModifyErrno(S::kErr, S::kReset, kQpState), 0);
  EXPECT_EQ(ModifyErrno(S::kRts, S::kErr, kQpState), 0);
  EXPECT_EQ(ModifyErrno(S::kRts, S::kErr, kQpState | kQpAccessFlags), EINVAL);
  EXPECT_EQ(ModifyErrno(S::kRts, S::kRts, kQpAccessFlags), 0);
  EXPECT_EQ(ModifyErrno(S::kRtr, S::kRtr, kQpAccessFlags), EINVAL);
  EXPECT_EQ(ModifyErrno(S::kReset, S::kReset, kQpAccessFlags), EINVAL);
}

TEST(ModelRemote, Outcomes) {
  KeyModel keys;
  keys.Add(ModelMr{1, 0, 0x1000, 64, kAll, 0x10, 0x11, true});
  keys.Add(ModelMr{1, 0, 0x2000, 64, kAccessLocalWrite | kAccessRemoteRead,
                   0x20, 0x21, true});
  const ProfileRules ibta = RulesFor("ibta");
  const ProfileRules rxe = RulesFor("rxe");
  const ResponderView rv{1, 0, kAll};
  auto out = [&](RemoteKind kind, uint64_t addr, uint32_t rkey, uint64_t len,
                 const ProfileRules& rules, uint32_t qp_access = kAll) {
    RemoteRequest r;
    r.kind = kind;
    r.addr = addr;
    r.rkey = rkey;
    r.length = len;
    r.recv_capacity = 100;
    ResponderView v = rv;
    v.qp_access = qp_access;
    return PredictRemote(r, v, keys, rules);
  };
  EXPECT_TRUE(out(RemoteKind::kWrite, 0x1000, 0x11, 64, ibta)
                  .requester.IsSuccessOnly());
  EXPECT_TRUE(out(RemoteKind::kWrite, 0x1000, 0x11, 65, ibta)
                  .requester.Contains(WcStatus::kRemAccessErr));
  EXPECT_TRUE(out(RemoteKind::kWrite, 0x2000, 0x21, 8, ibta)
                  .requester.Contains(WcStatus::kRemAccessErr));
  EXPECT_TRUE(out(RemoteKind::kRead, 0x2000, 0x21, 8, ibta)
                  .requester.IsSuccessOnly());
  EXPECT_TRUE(out(RemoteKind::kRead, 5, 0x99, 0, ibta).requester.IsSuccessOnly());
  const RemoteOutcome denied =
      out(RemoteKind::kRead, 0x2000, 0x21, 8, rxe, kAccessRemoteWrite);
  EXPECT_TRUE(denied.requester.Contains(WcStatus::kRemInvReqErr));
  EXPECT_TRUE(denied.responder_error);
  const RemoteOutcome mis = out(RemoteKind::kFetchAdd, 0x1004, 0x11, 8, ibta);
  EXPECT_TRUE(mis.requester.Contains(WcStatus::kRemInvReqErr));
  EXPECT_FALSE(mis.requester.Contains(WcStatus::kRemAccessErr));
  const RemoteOutcome both = out(RemoteKind::kCmpSwap, 0x1004, 0x99, 8, ibta);
  EXPECT_TRUE(both.requester.Contains(WcStatus::kRemInvReqErr));
  EXPECT_TRUE(both.requester.Contains(WcStatus::kRemAccessErr));
  const RemoteOutcome inv = out(RemoteKind::kSendInv, 0, 0x11, 10, rxe);
  EXPECT_TRUE(inv.requester.Contains(WcStatus::kRemAccessErr));
  EXPECT_TRUE(inv.consumes_recv);
  EXPECT_TRUE(inv.receiver.Contains(WcStatus::kRemInvReqErr));
  const RemoteOutcome big = out(RemoteKind::kSendInv, 0, 0x11, 101, ibta);
  EXPECT_TRUE(big.requester.Contains(WcStatus::kRemInvReqErr));
  EXPECT_TRUE(big.receiver.Contains(WcStatus::kLocLenErr));
  const RemoteOutcome imm = out(RemoteKind::kWriteImm, 0x1000, 0x11, 8, ibta);
  EXPECT_TRUE(imm.consumes_recv);
  EXPECT_TRUE(imm.receiver.IsSuccessOnly());
}

}  // namespace
}  // namespace verbsim::fuzz
