// The reference model's rules, checked by hand-picked cases: the model is
// what the harnesses trust, so it gets tests of its own.
#include "fuzz/model.h"

#include <cerrno>
#include <cstdint>
#include <vector>

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
  // No zero-length region (the ibta profile's strict choice).
  EXPECT_EQ(err(0, 0, kAccessLocalWrite), EINVAL);
  EXPECT_EQ(err(UINT64_MAX, 0, 0), EINVAL);
  EXPECT_EQ(err(UINT64_MAX, 1, 0), EINVAL);        // ends at 2^64
  EXPECT_EQ(err(UINT64_MAX - 9, 10, 0), EINVAL);   // ends at 2^64
  EXPECT_EQ(err(UINT64_MAX - 9, 9, 0), 0);
  EXPECT_EQ(err(1, UINT64_MAX - 1, 0), 0);
  EXPECT_EQ(RegArgumentErrno(RegCall{true, 0x1000, 65, 0}, RegLimits{64, 10}),
            EINVAL);
}

// An empty region: never on ibta; on rxe only at an address inside a page.
TEST(ModelReg, EmptyRegionsRegisterInsideAPageOnRxe) {
  const ProfileRules ibta = RulesFor("ibta");
  const ProfileRules rxe = RulesFor("rxe");
  EXPECT_FALSE(EmptyMrRegisters(ibta, 0x10040));
  EXPECT_FALSE(EmptyMrRegisters(rxe, 0x10000));
  EXPECT_TRUE(EmptyMrRegisters(rxe, 0x10040));
  EXPECT_EQ(RegArgumentErrno(RegCall{true, 0x10000, 0, 0}, RegLimits{1 << 30, 8},
                             rxe),
            EINVAL);
  EXPECT_EQ(RegArgumentErrno(RegCall{true, 0x10040, 0, 0}, RegLimits{1 << 30, 8},
                             rxe),
            0);
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

// rdma-core's rxe.c validate_send_wr: an inline READ and a two-SGE atomic
// pass, a misaligned or short atomic is EINVAL; the ibta rules differ on
// each.
TEST(ModelPost, SendWrRulesArePerProfile) {
  const PostSendRules ibta = RulesFor("ibta").post_send;
  const PostSendRules rxe = RulesFor("rxe").post_send;
  QpCaps caps{16, 16, 2, 2, 64};
  Sge sge{0x1000, 8, 1};
  Sge two[2] = {sge, sge};
  SendWr wr;
  wr.opcode = WrOpcode::kRdmaRead;
  wr.send_flags = kSendInline;
  wr.sg_list = {&sge, 1};
  EXPECT_EQ(SendWrErrno(wr, caps, ibta), EINVAL);
  EXPECT_EQ(SendWrErrno(wr, caps, rxe), 0);
  wr.send_flags = 0;
  wr.opcode = WrOpcode::kAtomicCmpAndSwp;
  wr.sg_list = {two, 2};
  EXPECT_EQ(SendWrErrno(wr, caps, ibta), EINVAL);
  EXPECT_EQ(SendWrErrno(wr, caps, rxe), 0);
  wr.sg_list = {&sge, 1};
  wr.atomic.remote_addr = 0x2004;
  EXPECT_EQ(SendWrErrno(wr, caps, ibta), 0);
  EXPECT_EQ(SendWrErrno(wr, caps, rxe), EINVAL);
  wr.atomic.remote_addr = 0x2000;
  Sge four{0x1000, 4, 1};
  Sge fours[2] = {four, four};
  wr.sg_list = {&four, 1};
  EXPECT_EQ(SendWrErrno(wr, caps, rxe), EINVAL);
  wr.sg_list = {fours, 2};
  EXPECT_EQ(SendWrErrno(wr, caps, rxe), 0);
  EXPECT_FALSE(rxe.type1_bind_wr_refused);
  EXPECT_TRUE(ibta.type1_bind_wr_refused);
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
  // A region's rkey cannot be invalidated: the spec NAKs the sender; rxe
  // acknowledges it and fails the responder alone.
  const RemoteOutcome inv_ibta = out(RemoteKind::kSendInv, 0, 0x11, 10, ibta);
  EXPECT_TRUE(inv_ibta.requester.Contains(WcStatus::kRemAccessErr));
  EXPECT_TRUE(inv_ibta.responder_error);
  const RemoteOutcome inv = out(RemoteKind::kSendInv, 0, 0x11, 10, rxe);
  EXPECT_TRUE(inv.requester.IsSuccessOnly());
  EXPECT_FALSE(inv.executes);
  EXPECT_TRUE(inv.responder_error);
  EXPECT_TRUE(inv.consumes_recv);
  EXPECT_TRUE(inv.receiver.Contains(WcStatus::kRemInvReqErr));
  const RemoteOutcome big = out(RemoteKind::kSendInv, 0, 0x11, 101, ibta);
  EXPECT_TRUE(big.requester.Contains(WcStatus::kRemInvReqErr));
  EXPECT_TRUE(big.receiver.Contains(WcStatus::kLocLenErr));
  const RemoteOutcome imm = out(RemoteKind::kWriteImm, 0x1000, 0x11, 8, ibta);
  EXPECT_TRUE(imm.consumes_recv);
  EXPECT_TRUE(imm.receiver.IsSuccessOnly());
  // A one-packet WRITE with immediate to a bad rkey: rxe completes the
  // receive it took with the error; the spec's profile flushes it.
  const RemoteOutcome bad_imm = out(RemoteKind::kWriteImm, 0, 0x99, 8, rxe);
  EXPECT_TRUE(bad_imm.requester.Contains(WcStatus::kRemAccessErr));
  EXPECT_TRUE(bad_imm.consumes_recv);
  EXPECT_TRUE(bad_imm.receiver.Contains(WcStatus::kRemAccessErr));
  EXPECT_FALSE(out(RemoteKind::kWriteImm, 0, 0x99, 8, ibta).consumes_recv);
  EXPECT_FALSE(
      out(RemoteKind::kWriteImm, 0, 0x99, 8192, rxe).consumes_recv);
}

// --- Memory windows ------------------------------------------------------------

constexpr uint32_t kBindable = kAll | kAccessMwBind;

// One region with MW_BIND in PD 0 on node 1, one without, one of PD 1.
struct WindowWorld {
  KeyModel keys;
  int mr = 0, plain = 0, other = 0;
  WindowWorld() {
    mr = keys.Add(ModelMr{1, 0, 0x10000, 0x1000, kBindable, 0x100, 0x101, true});
    plain = keys.Add(ModelMr{1, 0, 0x20000, 0x1000, kAll, 0x200, 0x201, true});
    other = keys.Add(
        ModelMr{1, 1, 0x30000, 0x1000, kBindable, 0x300, 0x301, true});
  }
  int Alloc(MwType type, int pd, uint32_t rkey) {
    ModelMw m;
    m.node = 1;
    m.pd = pd;
    m.type = type;
    m.rkey = m.handle_rkey = rkey;
    return keys.AddMw(m);
  }
  BindCall Bind(int mw, int mr_index, uint64_t addr, uint64_t len,
                uint32_t access = kAccessRemoteRead | kAccessRemoteWrite) {
    BindCall c;
    c.mw = mw;
    c.verb = keys.mw(mw).type == MwType::kType1;
    c.qp = 7;
    c.qp_pd = 0;
    c.mr = mr_index;
    c.addr = addr;
    c.length = len;
    c.access = access;
    c.wr_rkey = IncRkey(keys.mw(mw).rkey);
    return c;
  }
  // Predicts and applies; returns the completion status (or the errno as
  // a negative number).
  int Do(const BindCall& c, const ProfileRules& rules) {
    const BindOutcome o = keys.PredictBind(c, rules);
    if (o.post_errno != 0) return -o.post_errno;
    keys.ApplyBind(c, o.status);
    return static_cast<int>(o.status);
  }
};

constexpr int kOk = static_cast<int>(WcStatus::kSuccess);
constexpr int kBindErr = static_cast<int>(WcStatus::kMwBindErr);

TEST(ModelMw, AllocRules) {
  EXPECT_EQ(AllocMwErrno(true, 1, 10, 0), 0);
  EXPECT_EQ(AllocMwErrno(true, 2, 10, 9), 0);
  EXPECT_EQ(AllocMwErrno(false, 1, 10, 0), EINVAL);
  EXPECT_EQ(AllocMwErrno(true, 3, 10, 0), EINVAL);
  EXPECT_EQ(AllocMwErrno(true, 0, 10, 0), EINVAL);
  EXPECT_EQ(AllocMwErrno(true, 1, 0, 0), EOPNOTSUPP);
  EXPECT_EQ(AllocMwErrno(true, 1, 10, 10), ENOMEM);
  EXPECT_EQ(AllocMwErrno(true, 1, 10, 10, RulesFor("rxe")), EINVAL);
  EXPECT_EQ(AllocMwErrno(true, 1, 10, 9, RulesFor("rxe")), 0);
}

TEST(ModelMw, Type1BindGrantsTheWindowOnly) {
  const ProfileRules ibta = RulesFor("ibta");
  WindowWorld w;
  const int mw = w.Alloc(MwType::kType1, 0, 0x80000100);
  EXPECT_EQ(w.keys.Check(1, 0x80000100, true, 0, 0x10000, 8, 0),
            KeyVerdict::kNoSuchKey) << "unbound";
  EXPECT_EQ(w.Do(w.Bind(mw, w.mr, 0x10100, 0x100, kAccessRemoteRead), ibta),
            kOk);
  const uint32_t k = w.keys.mw(mw).rkey;
  EXPECT_EQ(k, 0x80000101u);
  EXPECT_EQ(w.keys.mw(mw).handle_rkey, k);
  EXPECT_EQ(w.keys.BoundWindows(w.mr), 1);
  EXPECT_EQ(w.keys.Check(1, k, true, 0, 0x10100, 0x100, kAccessRemoteRead),
            KeyVerdict::kOk);
  // The window's bounds and rights, not the region's.
  EXPECT_EQ(w.keys.Check(1, k, true, 0, 0x10000, 8, kAccessRemoteRead),
            KeyVerdict::kOutOfRange);
  EXPECT_EQ(w.keys.Check(1, k, true, 0, 0x10100, 8, kAccessRemoteWrite),
            KeyVerdict::kNoAccess);
  EXPECT_EQ(w.keys.Check(1, k, true, 1, 0x10100, 8, kAccessRemoteRead),
            KeyVerdict::kOtherPd);
  EXPECT_EQ(w.keys.Check(1, k, false, 0, 0x10100, 8, 0),
            KeyVerdict::kNoSuchKey) << "windows have no lkey";
  // Rebinding moves the key on: the old one is stale.
  EXPECT_EQ(w.Do(w.Bind(mw, w.mr, 0x10000, 0x1000), ibta), kOk);
  EXPECT_EQ(w.keys.Check(1, k, true, 0, 0x10100, 8, kAccessRemoteRead),
            KeyVerdict::kNoSuchKey);
  // A zero-length bind unbinds a type 1 window.
  EXPECT_EQ(w.Do(w.Bind(mw, -1, 0, 0), ibta), kOk);
  EXPECT_FALSE(w.keys.mw(mw).bound);
  EXPECT_EQ(w.keys.BoundWindows(w.mr), 0);
  EXPECT_TRUE(w.keys.FindCollision().empty());
}

TEST(ModelMw, BindRules) {
  const ProfileRules ibta = RulesFor("ibta");
  const ProfileRules rxe = RulesFor("rxe");
  WindowWorld w;
  const int t1 = w.Alloc(MwType::kType1, 0, 0x80000100);
  const int t2 = w.Alloc(MwType::kType2, 0, 0x80000200);
  const int t1o = w.Alloc(MwType::kType1, 1, 0x80000300);
  // Post errors.
  EXPECT_EQ(w.Do(w.Bind(t1, -1, 0x10, 0), ibta), -EINVAL);
  EXPECT_EQ(w.Do(w.Bind(t1, -1, 0, 8), ibta), -EINVAL);
  EXPECT_EQ(w.Do(w.Bind(t1, w.other, 0x30000, 8), ibta), -EPERM);
  EXPECT_EQ(w.Do(w.Bind(t1, w.mr, 0x10000, 8, kAccessRemoteRead |
                                              kAccessZeroBased), ibta),
            -EINVAL);
  EXPECT_EQ(w.Do(w.Bind(t1, w.mr, 0x10000, 8, kAccessMwBind), ibta),
            -EINVAL);
  BindCall wrong_way = w.Bind(t2, w.mr, 0x10000, 8);
  wrong_way.verb = true;
  EXPECT_EQ(w.Do(wrong_way, ibta), -EINVAL);
  wrong_way = w.Bind(t1, w.mr, 0x10000, 8);
  wrong_way.verb = false;
  EXPECT_EQ(w.Do(wrong_way, ibta), -EINVAL);
  EXPECT_EQ(w.keys.mw(t1).handle_rkey, 0x80000100u) << "nothing was posted";
  // C10-73: the region lacks MW_BIND; the handle's key still moved on.
  EXPECT_EQ(w.Do(w.Bind(t1, w.plain, 0x20000, 8), ibta), kBindErr);
  EXPECT_EQ(w.keys.mw(t1).handle_rkey, 0x80000101u);
  EXPECT_EQ(w.keys.mw(t1).rkey, 0x80000100u);
  // C10-75: outside the region.
  EXPECT_EQ(w.Do(w.Bind(t1, w.mr, 0x10ff8, 16), ibta), kBindErr);
  // C10-74: remote write through a region without local write.
  WindowWorld v;
  const int ro = v.keys.Add(ModelMr{1, 0, 0x50000, 64,
                                    kAccessRemoteRead | kAccessMwBind, 0x500,
                                    0x501, true});
  const int t = v.Alloc(MwType::kType1, 0, 0x80000500);
  EXPECT_EQ(v.Do(v.Bind(t, ro, 0x50000, 8, kAccessRemoteWrite), ibta),
            kBindErr);
  // The refused bind moved the handle's key on while the window kept its
  // own, so a bind naming it is refused too; a fresh window binds.
  EXPECT_EQ(v.Do(v.Bind(t, ro, 0x50000, 8, kAccessRemoteRead), ibta),
            kBindErr);
  const int fresh = v.Alloc(MwType::kType1, 0, 0x80000600);
  EXPECT_EQ(v.Do(v.Bind(fresh, ro, 0x50000, 8, kAccessRemoteRead), ibta),
            kOk);
  // C10-72: a window of another PD, bound through a QP of PD 0 (its
  // region is in PD 1 too): refused unless the profile skips it (rxe).
  EXPECT_EQ(w.keys.PredictBind(w.Bind(t1o, w.other, 0x30000, 8), ibta).status,
            WcStatus::kMwBindErr);
  EXPECT_EQ(w.keys.PredictBind(w.Bind(t1o, w.other, 0x30000, 8), rxe).status,
            WcStatus::kSuccess);
  // Type 2: bound only when free, never with length 0, its index kept.
  EXPECT_EQ(w.Do(w.Bind(t2, w.mr, 0x10000, 0), ibta), kBindErr);
  BindCall forged = w.Bind(t2, w.mr, 0x10000, 8);
  forged.wr_rkey ^= 0x100;
  EXPECT_EQ(w.Do(forged, ibta), kBindErr);
  EXPECT_EQ(w.Do(w.Bind(t2, w.mr, 0x10000, 8), ibta), kOk);
  EXPECT_EQ(w.keys.mw(t2).rkey, 0x80000201u);
  EXPECT_EQ(w.keys.mw(t2).qp, 7);
  EXPECT_EQ(w.Do(w.Bind(t2, w.mr, 0x10000, 16), ibta), kBindErr);
  // A type 2 window serves only its QP.
  EXPECT_EQ(w.keys.Check(1, 0x80000201, true, 0, 0x10000, 8,
                         kAccessRemoteRead, 7),
            KeyVerdict::kOk);
  EXPECT_EQ(w.keys.Check(1, 0x80000201, true, 0, 0x10000, 8,
                         kAccessRemoteRead, 8),
            KeyVerdict::kWrongQp);
  // A dead window: EINVAL at the post.
  w.keys.KillMw(t1);
  EXPECT_EQ(w.Do(w.Bind(t1, w.mr, 0x10000, 8), ibta), -EINVAL);
}

TEST(ModelMw, Invalidation) {
  const ProfileRules ibta = RulesFor("ibta");
  const ProfileRules rxe = RulesFor("rxe");
  WindowWorld w;
  const int t1 = w.Alloc(MwType::kType1, 0, 0x80000100);
  const int t2 = w.Alloc(MwType::kType2, 0, 0x80000200);
  ASSERT_EQ(w.Do(w.Bind(t1, w.mr, 0x10000, 8), ibta), kOk);
  ASSERT_EQ(w.Do(w.Bind(t2, w.mr, 0x10000, 8), ibta), kOk);
  int win = -1;
  // Type 1 windows, MR keys, stale and unknown keys: not invalidatable.
  EXPECT_EQ(w.keys.CheckInvalidate(1, 0x80000101, 0, 7, ibta, &win),
            InvVerdict::kNotInvalidatable);
  EXPECT_EQ(w.keys.CheckInvalidate(1, 0x101, 0, 7, ibta, &win),
            InvVerdict::kNotInvalidatable);
  EXPECT_EQ(w.keys.CheckInvalidate(1, 0x80000200, 0, 7, ibta, &win),
            InvVerdict::kNotInvalidatable);
  EXPECT_EQ(w.keys.CheckInvalidate(1, 0x80000201, 1, 7, ibta, &win),
            InvVerdict::kNotInvalidatable);
  // Through another QP: refused (ibta) or allowed (rxe).
  EXPECT_EQ(w.keys.CheckInvalidate(1, 0x80000201, 0, 8, ibta, &win),
            InvVerdict::kWrongQp);
  EXPECT_EQ(w.keys.CheckInvalidate(1, 0x80000201, 0, 8, rxe, &win),
            InvVerdict::kOk);
  ASSERT_EQ(w.keys.CheckInvalidate(1, 0x80000201, 0, 7, ibta, &win),
            InvVerdict::kOk);
  EXPECT_EQ(win, t2);
  w.keys.Invalidate(win);
  EXPECT_EQ(w.keys.Check(1, 0x80000201, true, 0, 0x10000, 8, 0, 7),
            KeyVerdict::kNoSuchKey);
  EXPECT_EQ(w.keys.BoundWindows(w.mr), 1);
  // Free again: a new bind with the next key works.
  EXPECT_EQ(w.Do(w.Bind(t2, w.mr, 0x10000, 8), ibta), kOk);
  EXPECT_EQ(w.keys.mw(t2).rkey, 0x80000202u);
  // Send with invalidate of the window: success, and the window is named.
  RemoteRequest r;
  r.kind = RemoteKind::kSendInv;
  r.rkey = 0x80000202;
  r.length = 8;
  r.recv_capacity = 8;
  const RemoteOutcome ok = PredictRemote(r, ResponderView{1, 0, kAll, 7},
                                         w.keys, ibta);
  EXPECT_TRUE(ok.requester.IsSuccessOnly());
  EXPECT_TRUE(ok.receiver.IsSuccessOnly());
  EXPECT_EQ(ok.invalidates, t2);
  const RemoteOutcome other_qp = PredictRemote(
      r, ResponderView{1, 0, kAll, 8}, w.keys, ibta);
  EXPECT_FALSE(other_qp.requester.AllowsSuccess());
  EXPECT_EQ(other_qp.invalidates, -1);
  // Dealloc of a bound window frees its region and kills its key.
  w.keys.KillMw(t1);
  EXPECT_EQ(w.keys.Check(1, 0x80000101, true, 0, 0x10000, 8, 0),
            KeyVerdict::kNoSuchKey);
  EXPECT_EQ(w.keys.BoundWindows(w.mr), 1);
  EXPECT_EQ(w.keys.LiveMwsInPd(0), 1);
}

TEST(ModelMw, Rxe61Deviations) {
  const ProfileRules rxe = RulesFor("rxe");
  WindowWorld w;
  w.keys.set_window_bounds_checked(rxe.window_bounds_checked);
  const int t1 = w.Alloc(MwType::kType1, 0, 0x80000100);
  const int t2 = w.Alloc(MwType::kType2, 0, 0x80000200);
  // A type 1 window by work request: accepted; the handle's key stays.
  BindCall wr = w.Bind(t1, w.mr, 0x10100, 0x10, kAccessRemoteRead);
  wr.verb = false;
  wr.wr_rkey = 0x80000177;
  EXPECT_EQ(w.Do(wr, rxe), kOk);
  EXPECT_EQ(w.keys.mw(t1).rkey, 0x80000177u);
  EXPECT_EQ(w.keys.mw(t1).handle_rkey, 0x80000100u);
  // Only the region's bounds are checked.
  EXPECT_EQ(w.keys.Check(1, 0x80000177, true, 0, 0x10000, 8,
                         kAccessRemoteRead),
            KeyVerdict::kOk);
  EXPECT_EQ(w.keys.Check(1, 0x80000177, true, 0, 0x10ffc, 8,
                         kAccessRemoteRead),
            KeyVerdict::kOutOfRange);
  // A type 2 bind with another index: only the key byte is taken.
  BindCall other = w.Bind(t2, w.mr, 0x10000, 8);
  other.wr_rkey = 0x12345605;
  EXPECT_EQ(w.Do(other, rxe), kOk);
  EXPECT_EQ(w.keys.mw(t2).rkey, 0x80000205u);
  EXPECT_EQ(w.keys.mw(t2).handle_rkey, 0x80000205u);
  // A too-small receive: REM_OP_ERR at the sender, LOC_QP_OP_ERR at the
  // receiver.
  RemoteRequest r;
  r.kind = RemoteKind::kSendInv;
  r.rkey = 0x80000205;
  r.length = 9;
  r.recv_capacity = 8;
  const RemoteOutcome small =
      PredictRemote(r, ResponderView{1, 0, kAll, 7}, w.keys, rxe);
  EXPECT_TRUE(small.requester.Contains(WcStatus::kRemOpErr));
  EXPECT_FALSE(small.requester.Contains(WcStatus::kRemInvReqErr));
  EXPECT_TRUE(small.receiver.Contains(WcStatus::kLocQpOpErr));
}

TEST(ModelMw, KeysOfWindowsAndRegionsDoNotCollide) {
  WindowWorld w;
  w.Alloc(MwType::kType1, 0, 0x101);  // an MR's rkey
  EXPECT_FALSE(w.keys.FindCollision().empty());
}

// --- Re-registration -------------------------------------------------------------

TEST(ModelRereg, Errnos) {
  const RegLimits lim{uint64_t{1} << 40, 1000};
  const ProfileRules ibta = RulesFor("ibta");
  const ProfileRules rxe = RulesFor("rxe");
  auto errs = [&](ReregCall c, const ProfileRules& r) {
    return ReregErrnos(c, lim, r);
  };
  using V = std::vector<int>;
  ReregCall access;
  access.flags = kReregChangeAccess;
  access.access = kAccessLocalWrite | kAccessRemoteRead;
  EXPECT_EQ(errs(access, ibta), V{});
  EXPECT_EQ(errs(access, rxe), V{EOPNOTSUPP});
  ReregCall dead = access;
  dead.mr_alive = false;
  EXPECT_EQ(errs(dead, ibta), V{EINVAL});
  ReregCall narrow = access;
  narrow.access = kAccessRemoteWrite;
  EXPECT_EQ(errs(narrow, ibta), V{EINVAL});
  narrow.access = kAccessLocalWrite | kAccessOnDemand;
  EXPECT_EQ(errs(narrow, ibta), V{EOPNOTSUPP});
  ReregCall flags;
  flags.flags = 1u << 5;
  EXPECT_EQ(errs(flags, ibta), V{EINVAL});
  ReregCall stray;
  stray.flags = kReregChangePd;
  stray.access = kAccessLocalWrite;
  EXPECT_EQ(errs(stray, ibta), V{EINVAL});
  ReregCall pd;
  pd.flags = kReregChangePd;
  EXPECT_EQ(errs(pd, ibta), V{});
  pd.pd_valid = false;
  EXPECT_EQ(errs(pd, ibta), V{EINVAL});
  ReregCall tr;
  tr.flags = kReregChangeTranslation;
  tr.addr = 0x1000;
  tr.length = 64;
  EXPECT_EQ(errs(tr, ibta), V{});
  tr.length = 0;
  EXPECT_EQ(errs(tr, ibta), V{EINVAL});
  tr.length = 64;
  tr.addr = 0;
  EXPECT_EQ(errs(tr, ibta), V{EINVAL});
  tr.addr = UINT64_MAX - 10;
  EXPECT_EQ(errs(tr, ibta), V{EINVAL});
  tr.addr = 0x1000;
  tr.length = uint64_t{1} << 41;
  EXPECT_EQ(errs(tr, ibta), V{EINVAL});
  ReregCall busy = access;
  busy.bound_windows = 1;
  EXPECT_EQ(errs(busy, ibta), V{EBUSY});
  busy.flags |= 1u << 7;
  EXPECT_EQ(errs(busy, ibta), (V{EINVAL, EBUSY}));
}

TEST(ModelRereg, KeysStayAndGrantTheNewRegion) {
  KeyModel keys;
  const int m = keys.Add(ModelMr{0, 0, 0x1000, 64, kAll, 0x10, 0x11, true});
  keys.Rereg(m, kReregChangeTranslation | kReregChangeAccess, 0, 0x8000, 32,
             kAccessLocalWrite | kAccessRemoteRead);
  EXPECT_EQ(keys.Check(0, 0x11, true, 0, 0x1000, 8, kAccessRemoteRead),
            KeyVerdict::kOutOfRange);
  EXPECT_EQ(keys.Check(0, 0x11, true, 0, 0x8000, 32, kAccessRemoteRead),
            KeyVerdict::kOk);
  EXPECT_EQ(keys.Check(0, 0x11, true, 0, 0x8000, 8, kAccessRemoteWrite),
            KeyVerdict::kNoAccess);
  keys.Rereg(m, kReregChangePd, 3, 0, 0, 0);
  EXPECT_EQ(keys.Check(0, 0x10, false, 0, 0x8000, 8, 0), KeyVerdict::kOtherPd);
  EXPECT_EQ(keys.Check(0, 0x10, false, 3, 0x8000, 8, 0), KeyVerdict::kOk);
  EXPECT_EQ(keys.mr(m).access, kAccessLocalWrite | kAccessRemoteRead);
  EXPECT_EQ(keys.LiveInPd(3), 1);
}

}  // namespace
}  // namespace verbsim::fuzz
