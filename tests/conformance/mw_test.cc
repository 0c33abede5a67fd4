// Memory windows (IBA 10.6.7; ibv_alloc_mw(3), ibv_bind_mw(3)) and
// invalidation (IBA 10.6.5): the window lives on the server, is bound
// through the server's QP, and the client reaches server memory through its
// rkey (docs/semantics.md section 5).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
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

constexpr uint32_t kWindowAccess = kAccessRemoteRead | kAccessRemoteWrite;

template <typename Base>
class MwFixture : public Base {
 protected:
  void SetUp() override {
    Base::SetUp();
    if (this->IsSkipped() || this->HasFatalFailure()) return;
    if (!this->expect().has_mw) {
      GTEST_SKIP() << "the provider has no memory windows";
    }
    ASSERT_OK_AND_ASSIGN(
        p_, this->MakePair(64 * 1024, Harness::DefaultAttr(),
                           this->FullAccess() | kAccessMwBind));
    p_->sbuf.FillPattern(5);
  }

  Endpoint& server() { return p_->server(); }
  Endpoint& client() { return p_->client(); }
  Pd* spd() { return server().pd(); }

  // Binds type 1 window `mw` over [offset, offset + len) of the server's
  // region through the server's QP, signaled.
  absl::Status BindType1(Mw* mw, size_t offset, uint64_t len,
                         uint32_t access = kWindowAccess, Mr* mr = nullptr) {
    MwBind bind;
    bind.wr_id = 77;
    bind.send_flags = kSendSignaled;
    bind.bind_info.mr = mr != nullptr ? mr : p_->smr.get();
    bind.bind_info.addr = p_->sbuf.addr(offset);
    bind.bind_info.length = len;
    bind.bind_info.mw_access_flags = access;
    return server().qp()->BindMw(mw, bind);
  }
  // The BIND_MW work request for type 2 window `mw` with its next rkey.
  SendWr Type2Bind(Mw* mw, size_t offset, uint64_t len,
                   uint32_t access = kWindowAccess) {
    SendWr wr;
    wr.wr_id = 78;
    wr.opcode = WrOpcode::kBindMw;
    wr.send_flags = kSendSignaled;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = IncRkey(mw->rkey());
    wr.bind_mw.bind_info.mr = p_->smr.get();
    wr.bind_mw.bind_info.addr = p_->sbuf.addr(offset);
    wr.bind_mw.bind_info.length = len;
    wr.bind_mw.bind_info.mw_access_flags = access;
    return wr;
  }
  // The server's next send completion (the bind's or invalidate's).
  absl::StatusOr<WorkCompletion> ServerSendComp() {
    return Await(server().send_cq());
  }
  // The client reads `len` bytes at server offset `offset` through `rkey`.
  absl::StatusOr<WorkCompletion> ReadVia(uint32_t rkey, size_t offset,
                                         uint32_t len) {
    absl::Status s = client().PostRead(1, p_->cbuf.data(), len, p_->cmr.get(),
                                       kSendSignaled, p_->sbuf.addr(offset),
                                       rkey);
    if (!s.ok()) return s;
    return Await(client().send_cq());
  }
  absl::StatusOr<WorkCompletion> WriteVia(uint32_t rkey, size_t offset,
                                          uint32_t len) {
    absl::Status s = client().PostWrite(2, p_->cbuf.data(), len, p_->cmr.get(),
                                        kSendSignaled, p_->sbuf.addr(offset),
                                        rkey);
    if (!s.ok()) return s;
    return Await(client().send_cq());
  }

  std::unique_ptr<RcPair> p_;
};

class MwTest : public MwFixture<ProviderTest> {};
class MwTypeTest : public MwFixture<ProviderTestWithParam<MwType>> {};

// --- Allocation ------------------------------------------------------------

TEST_P(MwTypeTest, AllocatesWithItsTypeAndPd) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(param()));
  EXPECT_EQ(mw->type(), param());
  EXPECT_EQ(mw->pd(), spd());
  EXPECT_OK(Destroy(mw));
}

TEST_P(MwTypeTest, PdWithAWindowIsBusy) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd, server().context()->AllocPd());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, pd->AllocMw(param()));
  EXPECT_THAT(pd->Destroy(), HasErrno(EBUSY));
  ASSERT_OK(Destroy(mw));
  EXPECT_OK(Destroy(pd));
}

TEST_P(MwTypeTest, DeallocTwiceIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(param()));
  ASSERT_OK(mw->Destroy());
  EXPECT_THAT(mw->Destroy(), HasErrno(EINVAL));
}

TEST_P(MwTest, UnknownTypeIsEinval) {
  EXPECT_THAT(spd()->AllocMw(static_cast<MwType>(3)), HasErrno(EINVAL));
}

// --- Type 1: ibv_bind_mw ----------------------------------------------------

TEST_P(MwTest, Type1BindGrantsRemoteReadAndWrite) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  const uint32_t before = mw->rkey();
  ASSERT_OK(BindType1(mw.get(), 4096, 8192));
  // ibv_bind_mw(3): the window's rkey is the next one once the post is in.
  EXPECT_EQ(mw->rkey(), IncRkey(before));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_THAT(bwc, WcOk(77u, WcOpcode::kBindMw)) << bwc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, ReadVia(mw->rkey(), 4096, 512));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRdmaRead)) << rwc;
  EXPECT_EQ(p_->cbuf.Bytes(0, 512), p_->sbuf.Bytes(4096, 512));
  p_->cbuf.FillPattern(6);
  ASSERT_OK_AND_ASSIGN(WorkCompletion wwc, WriteVia(mw->rkey(), 8192, 256));
  EXPECT_THAT(wwc, WcOk(2u, WcOpcode::kRdmaWrite)) << wwc;
  EXPECT_EQ(p_->sbuf.Bytes(8192, 256), p_->cbuf.Bytes(0, 256));
}

TEST_P(MwTest, WindowWithoutWriteAccessRefusesWrites) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 0, 4096, kAccessRemoteRead));
  ASSERT_OK(ServerSendComp().status());
  ASSERT_OK_AND_ASSIGN(WorkCompletion wwc, WriteVia(mw->rkey(), 0, 64));
  EXPECT_THAT(wwc, WcStatusIs(WcStatus::kRemAccessErr)) << wwc;
}

TEST_P(MwTest, AccessOutsideTheWindowIsRemAccessErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 4096, 4096));
  ASSERT_OK(ServerSendComp().status());
  // Inside the region, outside the window (rxe checks the region only).
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, ReadVia(mw->rkey(), 8000, 200));
  EXPECT_THAT(rwc, WcStatusIs(expect().mw_bounds_checked
                                  ? WcStatus::kRemAccessErr
                                  : WcStatus::kSuccess))
      << rwc;
}

TEST_P(MwTest, ZeroLengthBindUnbindsType1) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 0, 4096));
  ASSERT_OK(ServerSendComp().status());
  const uint32_t bound = mw->rkey();
  ASSERT_OK(BindType1(mw.get(), 0, 0));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_THAT(bwc, WcOk(77u, WcOpcode::kBindMw)) << bwc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, ReadVia(bound, 0, 64));
  EXPECT_THAT(rwc, WcStatusIs(WcStatus::kRemAccessErr)) << rwc;
}

TEST_P(MwTest, RebindMakesTheOldRkeyStale) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 0, 4096));
  ASSERT_OK(ServerSendComp().status());
  const uint32_t old_rkey = mw->rkey();
  ASSERT_OK(BindType1(mw.get(), 0, 8192));
  ASSERT_OK(ServerSendComp().status());
  EXPECT_NE(mw->rkey(), old_rkey);
  ASSERT_OK_AND_ASSIGN(WorkCompletion good, ReadVia(mw->rkey(), 4096, 64));
  EXPECT_THAT(good, WcOk(1u, WcOpcode::kRdmaRead)) << good;
  ASSERT_OK_AND_ASSIGN(WorkCompletion stale, ReadVia(old_rkey, 0, 64));
  EXPECT_THAT(stale, WcStatusIs(WcStatus::kRemAccessErr)) << stale;
}

TEST_P(MwTest, BindOnRegionWithoutMwBindIsMwBindErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> plain,
                       server().RegMr(p_->sbuf.data(), 4096,
                                      kAccessLocalWrite | kAccessRemoteRead));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 0, 4096, kAccessRemoteRead, plain.get()));
  // C10-73: the bind is refused as it executes; the QP goes to ERR.
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_EQ(bwc.wr_id, 77u);
  EXPECT_THAT(bwc, WcStatusIs(WcStatus::kMwBindErr)) << bwc;
  EXPECT_EQ(server().qp()->state(), QpState::kErr);
}

TEST_P(MwTest, WindowBeyondTheRegionIsMwBindErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 60 * 1024, 8192));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_THAT(bwc, WcStatusIs(WcStatus::kMwBindErr)) << bwc;
}

TEST_P(MwTest, RemoteWriteWindowNeedsLocalWriteOnTheRegion) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> ro,
                       server().RegMr(p_->sbuf.data(), 4096,
                                      kAccessRemoteRead | kAccessMwBind));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  // C10-74.
  ASSERT_OK(BindType1(mw.get(), 0, 4096, kAccessRemoteWrite, ro.get()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_THAT(bwc, WcStatusIs(WcStatus::kMwBindErr)) << bwc;
}

TEST_P(MwTest, UnsignaledBindStillReportsItsError) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  MwBind bind;
  bind.wr_id = 9;
  bind.bind_info.mr = p_->smr.get();
  bind.bind_info.addr = p_->sbuf.addr(60 * 1024);
  bind.bind_info.length = 8192;
  bind.bind_info.mw_access_flags = kAccessRemoteRead;
  ASSERT_OK(server().qp()->BindMw(mw.get(), bind));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_EQ(bwc.wr_id, 9u);
  EXPECT_THAT(bwc, WcStatusIs(WcStatus::kMwBindErr)) << bwc;
}

TEST_P(MwTest, UnsignaledGoodBindCompletesNothing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  MwBind bind;
  bind.bind_info.mr = p_->smr.get();
  bind.bind_info.addr = p_->sbuf.addr(0);
  bind.bind_info.length = 64;
  bind.bind_info.mw_access_flags = kAccessRemoteRead;
  ASSERT_OK(server().qp()->BindMw(mw.get(), bind));
  EXPECT_THAT(Drain(server().send_cq()), IsEmpty());
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, ReadVia(mw->rkey(), 0, 64));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRdmaRead)) << rwc;
}

TEST_P(MwTest, BindMwVerbRefusesType2) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  const uint32_t before = mw->rkey();
  EXPECT_THAT(BindType1(mw.get(), 0, 4096), HasErrno(EINVAL));
  EXPECT_EQ(mw->rkey(), before);
  EXPECT_THAT(Drain(server().send_cq()), IsEmpty());
}

TEST_P(MwTest, BindWithoutRegionButWithLengthIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  MwBind bind;
  bind.bind_info.length = 64;
  EXPECT_THAT(server().qp()->BindMw(mw.get(), bind), HasErrno(EINVAL));
}

TEST_P(MwTest, ZeroBasedWindowIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  EXPECT_THAT(BindType1(mw.get(), 0, 64, kAccessRemoteRead | kAccessZeroBased),
              HasErrno(EINVAL));
}

TEST_P(MwTest, RegionOfAnotherPdIsEperm) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd2, server().context()->AllocPd());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> other,
                       pd2->RegMr(p_->sbuf.data(), 4096,
                                  kAccessLocalWrite | kAccessMwBind));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  // libibverbs ibv_bind_mw: region and window must share a PD.
  EXPECT_THAT(BindType1(mw.get(), 0, 64, kAccessRemoteRead, other.get()),
              HasErrno(EPERM));
}

TEST_P(MwTest, Type1WindowOfAnotherPdThanTheQp) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Pd> pd2, server().context()->AllocPd());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> other,
                       pd2->RegMr(p_->sbuf.data(), 4096,
                                  kAccessLocalWrite | kAccessMwBind));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, pd2->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 0, 64, kAccessRemoteRead, other.get()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  // C10-72 (rdma-unit-test MrMwOnOtherPd); rxe 6.1 does not check.
  EXPECT_THAT(bwc, WcStatusIs(expect().bind_checks_pd ? WcStatus::kMwBindErr
                                                      : WcStatus::kSuccess))
      << bwc;
}

TEST_P(MwTest, DeallocOfABoundWindowInvalidatesIt) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 0, 4096));
  ASSERT_OK(ServerSendComp().status());
  const uint32_t rkey = mw->rkey();
  ASSERT_OK(Destroy(mw));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, ReadVia(rkey, 0, 64));
  EXPECT_THAT(rwc, WcStatusIs(WcStatus::kRemAccessErr)) << rwc;
}

TEST_P(MwTest, DeregOfARegionWithABoundWindowFails) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 0, 4096));
  ASSERT_OK(ServerSendComp().status());
  EXPECT_THAT(p_->smr->Destroy(), HasErrno(expect().dereg_bound_mr_errno));
  // Nothing changed: the window still works.
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, ReadVia(mw->rkey(), 0, 64));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRdmaRead)) << rwc;
  // Unbound, the region can go.
  ASSERT_OK(BindType1(mw.get(), 0, 0));
  ASSERT_OK(ServerSendComp().status());
  EXPECT_OK(server().DeregMr(p_->smr));
}

// A send posted after a bind on the same QP is ordered after it
// (docs/semantics.md section 4): the peer can use the rkey the send carries.
TEST_P(MwTest, SendAfterBindCarriesAUsableRkey) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(client().PostRecv(5, p_->cbuf.data() + 60 * 1024, 64,
                              p_->cmr.get()));
  MwBind bind;
  bind.wr_id = 1;
  bind.bind_info.mr = p_->smr.get();
  bind.bind_info.addr = p_->sbuf.addr(0);
  bind.bind_info.length = 4096;
  bind.bind_info.mw_access_flags = kAccessRemoteRead;
  ASSERT_OK(server().qp()->BindMw(mw.get(), bind));
  const uint32_t rkey = mw->rkey();
  ASSERT_OK(server().PostSend(2, &rkey, sizeof(rkey), nullptr, kSendInline));
  ASSERT_OK_AND_ASSIGN(WorkCompletion got, Await(client().recv_cq()));
  ASSERT_THAT(got, WcOk(5u, WcOpcode::kRecv));
  uint32_t received = 0;
  std::memcpy(&received, p_->cbuf.data() + 60 * 1024, sizeof(received));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, ReadVia(received, 0, 128));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRdmaRead)) << rwc;
}

// --- Type 2: the BIND_MW work request --------------------------------------

TEST_P(MwTest, Type2BindGrantsAccessWithTheChosenRkey) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  SendWr bind = Type2Bind(mw.get(), 0, 8192);
  ASSERT_OK(server().Post(bind));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_THAT(bwc, WcOk(78u, WcOpcode::kBindMw)) << bwc;
  EXPECT_EQ(mw->rkey(), bind.bind_mw.rkey);
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc,
                       ReadVia(bind.bind_mw.rkey, 1024, 256));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRdmaRead)) << rwc;
  EXPECT_EQ(p_->cbuf.Bytes(0, 256), p_->sbuf.Bytes(1024, 256));
}

TEST_P(MwTest, Type2WorkRequestForType1IsEinval) {
  if (!expect().refuses_type1_bind_wr) {
    GTEST_SKIP() << "profile " << expect().profile
                 << " accepts BIND_MW work requests for type 1 windows";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  EXPECT_THAT(server().Post(Type2Bind(mw.get(), 0, 64)), HasErrno(EINVAL));
}

TEST_P(MwTest, Type2BoundTwiceIsMwBindErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  ASSERT_OK(server().Post(Type2Bind(mw.get(), 0, 4096)));
  ASSERT_OK(ServerSendComp().status());
  // o10-37.2.30: only a free type 2 window can be bound.
  ASSERT_OK(server().Post(Type2Bind(mw.get(), 0, 8192)));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_THAT(bwc, WcStatusIs(WcStatus::kMwBindErr)) << bwc;
}

TEST_P(MwTest, Type2ZeroLengthBindIsMwBindErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  ASSERT_OK(server().Post(Type2Bind(mw.get(), 0, 0)));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_THAT(bwc, WcStatusIs(WcStatus::kMwBindErr)) << bwc;
}

TEST_P(MwTest, Type2RkeyOfAnotherIndexIsMwBindErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  const uint32_t own = mw->rkey();
  SendWr bind = Type2Bind(mw.get(), 0, 4096);
  bind.bind_mw.rkey ^= 0x100;  // the index part is the window's own
  ASSERT_OK(server().Post(bind));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  if (expect().bind_checks_rkey_index) {
    EXPECT_THAT(bwc, WcStatusIs(WcStatus::kMwBindErr)) << bwc;
  } else {
    // Only the key byte is taken: the window answers to its own index with
    // the new key byte, and not to the rkey the bind named. (What Mw::rkey()
    // says is the provider's bookkeeping; the wire tells the truth.)
    EXPECT_THAT(bwc, WcOk(78u, WcOpcode::kBindMw)) << bwc;
    const uint32_t real = (own & ~0xffu) | (bind.bind_mw.rkey & 0xffu);
    ASSERT_OK_AND_ASSIGN(WorkCompletion ok, ReadVia(real, 0, 64));
    EXPECT_THAT(ok, WcOk(1u, WcOpcode::kRdmaRead)) << ok;
    ASSERT_OK_AND_ASSIGN(WorkCompletion bad,
                         ReadVia(bind.bind_mw.rkey, 0, 64));
    EXPECT_THAT(bad, WcStatusIs(WcStatus::kRemAccessErr)) << bad;
  }
}

// A type 2 window serves only the QP it was bound through.
TEST_P(MwTest, Type2ThroughAnotherQpIsRemAccessErr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  // A second QP on the server's PD, connected to a QP on the client's side.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Side> far, OpenSide(1));
  Side near;
  ASSERT_OK_AND_ASSIGN(near.cq, server().context()->CreateCq(64, nullptr));
  QpInitAttr init;
  init.send_cq = init.recv_cq = near.cq.get();
  init.cap = {16, 16, 2, 2, 0};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qp2, spd()->CreateQp(init));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Qp> qpf, CreateQpOn(*far, QpType::kRc));
  // RoCE: the GID ConnectQps sources from (the IPv4-mapped one).
  ASSERT_OK_AND_ASSIGN(Gid sgid, server().context()->QueryGid(
                                     1, RoceV4GidIndex(server().context())));
  ASSERT_OK(ConnectQps(qp2.get(), sgid, qpf.get(), far->gid));
  SendWr bind = Type2Bind(mw.get(), 0, 4096);
  ASSERT_OK(server().Post(bind));
  ASSERT_OK(ServerSendComp().status());
  Buffer local(64);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mr> lmr,
                       far->pd->RegMr(local.data(), 64, kAccessLocalWrite));
  Sge sge = SgeOf(*lmr, 0, 64);
  SendWr read = MakeWr(WrOpcode::kRdmaRead, 3, {&sge, 1});
  read.rdma.remote_addr = p_->sbuf.addr(0);
  read.rdma.rkey = bind.bind_mw.rkey;
  ASSERT_OK(qpf->PostSend(read));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(far->cq.get()));
  EXPECT_THAT(rwc, WcStatusIs(WcStatus::kRemAccessErr)) << rwc;
}

TEST_P(MwTest, LocalInvalidateOfType2RevokesIt) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  SendWr bind = Type2Bind(mw.get(), 0, 4096);
  ASSERT_OK(server().Post(bind));
  ASSERT_OK(ServerSendComp().status());
  SendWr inv = MakeWr(WrOpcode::kLocalInv, 4, {});
  inv.invalidate_rkey = bind.bind_mw.rkey;
  ASSERT_OK(server().Post(inv));
  ASSERT_OK_AND_ASSIGN(WorkCompletion iwc, ServerSendComp());
  EXPECT_THAT(iwc, WcOk(4u, WcOpcode::kLocalInv)) << iwc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc,
                       ReadVia(bind.bind_mw.rkey, 0, 64));
  EXPECT_THAT(rwc, WcStatusIs(WcStatus::kRemAccessErr)) << rwc;
}

TEST_P(MwTest, InvalidatedType2CanBeBoundAgain) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  SendWr bind = Type2Bind(mw.get(), 0, 4096);
  ASSERT_OK(server().Post(bind));
  ASSERT_OK(ServerSendComp().status());
  SendWr inv = MakeWr(WrOpcode::kLocalInv, 4, {});
  inv.invalidate_rkey = bind.bind_mw.rkey;
  ASSERT_OK(server().Post(inv));
  ASSERT_OK(ServerSendComp().status());
  SendWr again = Type2Bind(mw.get(), 4096, 4096);
  ASSERT_OK(server().Post(again));
  ASSERT_OK_AND_ASSIGN(WorkCompletion bwc, ServerSendComp());
  EXPECT_THAT(bwc, WcOk(78u, WcOpcode::kBindMw)) << bwc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc,
                       ReadVia(again.bind_mw.rkey, 4096, 64));
  EXPECT_THAT(rwc, WcOk(1u, WcOpcode::kRdmaRead)) << rwc;
}

TEST_P(MwTest, SendWithInvalidateRevokesTheReceiversWindow) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  SendWr bind = Type2Bind(mw.get(), 0, 4096);
  ASSERT_OK(server().Post(bind));
  ASSERT_OK(ServerSendComp().status());
  ASSERT_OK(server().PostRecv(6, p_->sbuf.data() + 32768, 64, p_->smr.get()));
  const Sge sge = SgeOf(*p_->cmr, 0, 16);
  SendWr send = MakeWr(WrOpcode::kSendWithInv, 7, {&sge, 1});
  send.invalidate_rkey = bind.bind_mw.rkey;
  ASSERT_OK(client().Post(send));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(client().send_cq()));
  EXPECT_THAT(swc, WcOk(7u, WcOpcode::kSend)) << swc;
  ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(server().recv_cq()));
  EXPECT_THAT(rwc, WcOk(6u, WcOpcode::kRecv)) << rwc;
  if (expect().reports_with_inv) {
    EXPECT_NE(rwc.wc_flags & kWcWithInv, 0u);
    EXPECT_EQ(rwc.invalidated_rkey, bind.bind_mw.rkey);
  }
  ASSERT_OK_AND_ASSIGN(WorkCompletion read,
                       ReadVia(bind.bind_mw.rkey, 0, 64));
  EXPECT_THAT(read, WcStatusIs(WcStatus::kRemAccessErr)) << read;
}

TEST_P(MwTest, SendWithInvalidateOfAType1WindowFails) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType1));
  ASSERT_OK(BindType1(mw.get(), 0, 4096));
  ASSERT_OK(ServerSendComp().status());
  ASSERT_OK(server().PostRecv(6, p_->sbuf.data() + 32768, 64, p_->smr.get()));
  const Sge sge = SgeOf(*p_->cmr, 0, 16);
  SendWr send = MakeWr(WrOpcode::kSendWithInv, 7, {&sge, 1});
  send.invalidate_rkey = mw->rkey();
  ASSERT_OK(client().Post(send));
  ASSERT_OK_AND_ASSIGN(WorkCompletion swc, Await(client().send_cq()));
  EXPECT_THAT(swc, WcStatusIn(expect().send_inv_bad_rkey_sender)) << swc;
  if (!expect().send_inv_bad_rkey_receiver.empty()) {
    ASSERT_OK_AND_ASSIGN(WorkCompletion rwc, Await(server().recv_cq()));
    EXPECT_THAT(rwc, WcStatusIn(expect().send_inv_bad_rkey_receiver)) << rwc;
  }
}

class LocalInvalidateRefusedTest
    : public MwFixture<ProviderTestWithParam<const char*>> {};

// LOCAL_INV of something it cannot invalidate fails the WR and the QP.
TEST_P(LocalInvalidateRefusedTest, CompletesInError) {
  const std::string what = param();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> t1, spd()->AllocMw(MwType::kType1));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> t2, spd()->AllocMw(MwType::kType2));
  uint32_t rkey = 0;
  if (what == "Type1Window") {
    ASSERT_OK(BindType1(t1.get(), 0, 4096));
    ASSERT_OK(ServerSendComp().status());
    rkey = t1->rkey();
  } else if (what == "UnboundType2") {
    rkey = t2->rkey();
  } else if (what == "RegionFromRegMr") {
    rkey = p_->smr->rkey();
  } else {  // "StaleType2Rkey"
    SendWr bind = Type2Bind(t2.get(), 0, 4096);
    ASSERT_OK(server().Post(bind));
    ASSERT_OK(ServerSendComp().status());
    rkey = IncRkey(bind.bind_mw.rkey);
  }
  SendWr inv = MakeWr(WrOpcode::kLocalInv, 4, {});
  inv.invalidate_rkey = rkey;
  ASSERT_OK(server().Post(inv));
  ASSERT_OK_AND_ASSIGN(WorkCompletion iwc, ServerSendComp());
  EXPECT_EQ(iwc.wr_id, 4u);
  EXPECT_THAT(iwc, WcStatusIn(expect().local_inv_refused)) << iwc;
  EXPECT_EQ(server().qp()->state(), QpState::kErr);
}

// Local invalidate is fenced behind every earlier WR of its QP (IBA
// 10.6.5.1): while an earlier send waits for a receive (RNR), the window it
// would invalidate still serves the peer.
TEST_P(MwTest, LocalInvalidateWaitsForEarlierWork) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Mw> mw, spd()->AllocMw(MwType::kType2));
  SendWr bind = Type2Bind(mw.get(), 0, 4096);
  ASSERT_OK(server().Post(bind));
  ASSERT_OK(ServerSendComp().status());
  // The client has no receive posted yet: this send waits in RNR retries.
  ASSERT_OK(server().PostSend(10, p_->sbuf.data(), 16, p_->smr.get(),
                              kSendSignaled));
  SendWr inv = MakeWr(WrOpcode::kLocalInv, 11, {});
  inv.invalidate_rkey = bind.bind_mw.rkey;
  ASSERT_OK(server().Post(inv));
  ASSERT_OK_AND_ASSIGN(WorkCompletion early,
                       ReadVia(bind.bind_mw.rkey, 0, 64));
  EXPECT_THAT(early, WcOk(1u, WcOpcode::kRdmaRead))
      << "the window was invalidated before the earlier send completed";
  ASSERT_OK(client().PostRecv(12, p_->cbuf.data() + 32768, 64, p_->cmr.get()));
  ASSERT_OK_AND_ASSIGN(std::vector<WorkCompletion> done,
                       AwaitN(server().send_cq(), 2));
  EXPECT_THAT(done[0], WcOk(10u, WcOpcode::kSend)) << done[0];
  EXPECT_THAT(done[1], WcOk(11u, WcOpcode::kLocalInv)) << done[1];
  ASSERT_OK_AND_ASSIGN(WorkCompletion late, ReadVia(bind.bind_mw.rkey, 0, 64));
  EXPECT_THAT(late, WcStatusIs(WcStatus::kRemAccessErr)) << late;
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(MwTest);
INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    MwTypeTest, ::testing::Values(MwType::kType1, MwType::kType2));
INSTANTIATE_PROVIDER_TEST_SUITE_WITH_P(
    LocalInvalidateRefusedTest,
    ::testing::Values("Type1Window", "UnboundType2", "RegionFromRegMr",
                      "StaleType2Rkey"));

}  // namespace
}  // namespace testing
}  // namespace verbsim
