// Sim-specific tests: what only the simulated fabric can show (packets,
// PSNs, virtual time, counters). Cross-provider behaviour lives in
// //tests:conformance_test.
#include <cstring>
#include <string>
#include <vector>

#include "core/endpoint.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

struct Pair {
  std::unique_ptr<Provider> provider;
  EndpointPair eps;
};

Pair MakePair(const EndpointAttr& attr = {}) {
  Pair p;
  auto provider = OpenProvider("sim");
  EXPECT_TRUE(provider.ok()) << provider.status();
  p.provider = *std::move(provider);
  auto eps = CreateConnectedPair(*p.provider, attr);
  EXPECT_TRUE(eps.ok()) << eps.status();
  p.eps = *std::move(eps);
  return p;
}

TEST(SimSmoke, SendRecvWriteRead) {
  Pair p = MakePair();
  Endpoint& c = *p.eps.client;
  Endpoint& s = *p.eps.server;
  std::vector<char> cbuf(8192, 0), sbuf(8192, 0);
  auto cmr = c.RegMr(cbuf.data(), cbuf.size(),
                     kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite);
  auto smr = s.RegMr(sbuf.data(), sbuf.size(),
                     kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite);
  ASSERT_TRUE(cmr.ok() && smr.ok());
  std::strcpy(cbuf.data(), "hello");
  ASSERT_TRUE(s.PostRecv(7, sbuf.data(), 100, smr->get()).ok());
  ASSERT_TRUE(c.PostSend(8, cbuf.data(), 6, cmr->get(), kSendSignaled).ok());
  auto sc = c.GetSendComp(absl::Seconds(1));
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kSuccess);
  EXPECT_EQ(sc->wr_id, 8u);
  auto rc = s.GetRecvComp(absl::Seconds(1));
  ASSERT_TRUE(rc.ok()) << rc.status();
  EXPECT_EQ(rc->status, WcStatus::kSuccess);
  EXPECT_EQ(rc->byte_len, 6u);
  EXPECT_STREQ(sbuf.data(), "hello");

  // Multi-packet write then read back.
  for (int i = 0; i < 5000; ++i) cbuf[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(c.PostWrite(9, cbuf.data(), 5000, cmr->get(), kSendSignaled,
                          reinterpret_cast<uint64_t>(sbuf.data()),
                          (*smr)->rkey())
                  .ok());
  sc = c.GetSendComp(absl::Seconds(1));
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(cbuf.data(), sbuf.data(), 5000), 0);
  std::memset(cbuf.data() + 6000, 0, 2000);
  ASSERT_TRUE(c.PostRead(10, cbuf.data() + 6000, 2000, cmr->get(),
                         kSendSignaled,
                         reinterpret_cast<uint64_t>(sbuf.data()) + 100,
                         (*smr)->rkey())
                  .ok());
  sc = c.GetSendComp(absl::Seconds(1));
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kSuccess);
  EXPECT_EQ(sc->opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(std::memcmp(cbuf.data() + 6000, sbuf.data() + 100, 2000), 0);

  // Bad rkey: REM_ACCESS_ERR, QP to ERR, later WR flushed.
  ASSERT_TRUE(c.PostWrite(11, cbuf.data(), 8, cmr->get(), kSendSignaled,
                          reinterpret_cast<uint64_t>(sbuf.data()),
                          (*smr)->rkey() ^ 0x1000)
                  .ok());
  sc = c.GetSendComp(absl::Seconds(1));
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kRemAccessErr);
  EXPECT_EQ(c.qp()->state(), QpState::kErr);
  ASSERT_TRUE(c.PostSend(12, cbuf.data(), 8, cmr->get(), 0).ok());
  sc = c.GetSendComp(absl::Seconds(1));
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kWrFlushErr);
  EXPECT_EQ(sc->wr_id, 12u);
}

TEST(SimSmoke, RnrRetryExhaustedInVirtualTime) {
  EndpointAttr attr;
  attr.rnr_retry = 2;
  attr.min_rnr_timer = 1;
  Pair p = MakePair(attr);
  Endpoint& c = *p.eps.client;
  char buf[16] = "x";
  auto mr = c.RegMsgs(buf, sizeof(buf));
  ASSERT_TRUE(mr.ok());
  ASSERT_TRUE(c.PostSend(1, buf, 4, mr->get(), kSendSignaled).ok());
  auto sc = c.GetSendComp(absl::Seconds(1));
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kRnrRetryExcErr);
  SimQpStats stats;
  ASSERT_TRUE(GetSimQpStats(c.qp(), &stats));
  EXPECT_EQ(stats.retransmissions, 2u);
}

TEST(SimSmoke, RetryExhaustedWhenPeerGone) {
  EndpointAttr attr;
  attr.retry_cnt = 3;
  attr.timeout = 8;
  Pair p = MakePair(attr);
  Endpoint& c = *p.eps.client;
  ASSERT_TRUE(p.eps.server->qp()->Modify([] { QpAttr a; a.qp_state = QpState::kReset; return a; }(), kQpState).ok());
  char buf[16] = "x";
  auto mr = c.RegMsgs(buf, sizeof(buf));
  ASSERT_TRUE(mr.ok());
  auto* sim = AsSimProvider(p.provider.get());
  absl::Duration t0 = sim->fabric().Now();
  ASSERT_TRUE(c.PostSend(1, buf, 4, mr->get(), kSendSignaled).ok());
  auto sc = c.GetSendComp(absl::Seconds(1));
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->status, WcStatus::kRetryExcErr);
  // 1 + retry_cnt timeouts of 4.096 us * 2^8.
  absl::Duration elapsed = sim->fabric().Now() - t0;
  EXPECT_GE(elapsed, absl::Nanoseconds(4 * (4096 << 8)));
  EXPECT_LT(elapsed, absl::Nanoseconds(5 * (4096 << 8)));
}

}  // namespace
}  // namespace verbsim::sim
