// The librdmacm-like API on Endpoint (docs/semantics.md section 7): connection
// setup, the post_* helpers and their argument checks, blocking completions.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
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

class ConnectTest : public ProviderTest {};

TEST_P(ConnectTest, ListenConnectAcceptGivesTwoConnectedRtsQps) {
  ASSERT_OK_AND_ASSIGN(std::string address, provider().LoopbackAddress());
  EndpointAttr attr = DefaultAttr();
  attr.path_mtu = Mtu::k2048;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Listener> listener,
                       provider().Listen(address, attr));
  EXPECT_EQ(listener->address(), address);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Endpoint> client,
                       provider().Connect(address, attr));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Endpoint> server,
                       listener->Accept(kTimeout));
  ASSERT_OK(client->WaitConnected(kTimeout));
  ExpectQpState(client->qp(), QpState::kRts);
  ExpectQpState(server->qp(), QpState::kRts);
  if (!expect().query_reports_qp_attrs) {
    // siw_query_qp reports no destination, PSN or path (iwarp_test.cc).
    return;
  }
  ASSERT_OK_AND_ASSIGN(QpAttr c, client->qp()->Query());
  ASSERT_OK_AND_ASSIGN(QpAttr s, server->qp()->Query());
  EXPECT_EQ(c.dest_qp_num, server->qp()->qp_num());
  EXPECT_EQ(s.dest_qp_num, client->qp()->qp_num());
  EXPECT_EQ(c.path_mtu, Mtu::k2048);
  EXPECT_EQ(s.path_mtu, Mtu::k2048);
  // Each side's rq_psn is the other's sq_psn.
  EXPECT_EQ(c.rq_psn, s.sq_psn);
  EXPECT_EQ(s.rq_psn, c.sq_psn);
  // rdma_cm resolves the IPv4 address to the IPv4-mapped GID.
  ASSERT_OK_AND_ASSIGN(
      Gid server_gid,
      server->context()->QueryGid(1, RoceV4GidIndex(server->context())));
  EXPECT_EQ(c.ah_attr.dgid, server_gid);
}

TEST_P(ConnectTest, LoopbackAddressesAreFresh) {
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string address, provider().LoopbackAddress());
    EXPECT_TRUE(seen.insert(address).second) << address << " repeated";
  }
}

TEST_P(ConnectTest, ListeningTwiceOnAnAddressIsEaddrinuse) {
  ASSERT_OK_AND_ASSIGN(std::string address, provider().LoopbackAddress());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Listener> first,
                       provider().Listen(address, DefaultAttr()));
  EXPECT_THAT(provider().Listen(address, DefaultAttr()), HasErrno(EADDRINUSE));
}

TEST_P(ConnectTest, ConnectWithoutAListenerIsRefused) {
  ASSERT_OK_AND_ASSIGN(std::string address, provider().LoopbackAddress());
  absl::StatusOr<std::unique_ptr<Endpoint>> client =
      provider().Connect(address, DefaultAttr());
  if (client.ok()) {
    // The refusal may come asynchronously, as rdma_connect's event does.
    EXPECT_THAT((*client)->WaitConnected(kTimeout), HasErrno(ECONNREFUSED));
  } else {
    EXPECT_THAT(client, HasErrno(ECONNREFUSED));
  }
}

TEST_P(ConnectTest, AcceptWithoutARequestTimesOut) {
  ASSERT_OK_AND_ASSIGN(std::string address, provider().LoopbackAddress());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Listener> listener,
                       provider().Listen(address, DefaultAttr()));
  const absl::Time start = absl::Now();
  EXPECT_THAT(listener->Accept(absl::Milliseconds(50)), HasErrno(ETIMEDOUT));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_P(ConnectTest, TwoPairsDoNotCrossTalk) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> a, MakePair());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> b, MakePair());
  a->cbuf.FillPattern(1, 0, 100);
  b->cbuf.FillPattern(2, 0, 100);
  ASSERT_OK(a->server().PostRecv(1, a->sbuf.data(), 100, a->smr.get()));
  ASSERT_OK(b->server().PostRecv(2, b->sbuf.data(), 100, b->smr.get()));
  ASSERT_OK(b->client().PostSend(20, b->cbuf.data(), 100, b->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK(a->client().PostSend(10, a->cbuf.data(), 100, a->cmr.get(),
                                 kSendSignaled));
  ASSERT_OK_AND_ASSIGN(WorkCompletion ra, Await(a->server().recv_cq()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion rb, Await(b->server().recv_cq()));
  EXPECT_THAT(ra, WcOk(1u, WcOpcode::kRecv));
  EXPECT_THAT(rb, WcOk(2u, WcOpcode::kRecv));
  EXPECT_EQ(a->sbuf.Bytes(0, 100), a->cbuf.Bytes(0, 100));
  EXPECT_EQ(b->sbuf.Bytes(0, 100), b->cbuf.Bytes(0, 100));
}

TEST_P(ConnectTest, RkeyOfAnotherPairsMrIsRejected) {
  // Both servers may sit on the same device: an rkey is only good in its PD.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> a, MakePair());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> b, MakePair());
  ASSERT_OK(a->client().PostWrite(1, a->cbuf.data(), 64, a->cmr.get(),
                                  kSendSignaled, b->sbuf.addr(),
                                  b->smr->rkey()));
  ASSERT_OK_AND_ASSIGN(WorkCompletion wc, Await(a->client().send_cq()));
  EXPECT_THAT(wc, WcStatusIn(expect().rkey_of_other_pd)) << wc;
  EXPECT_EQ(b->sbuf.Bytes(0, 64), std::vector<uint8_t>(64, 0));
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(ConnectTest);

class PostApiTest : public ProviderTest {};

TEST_P(PostApiTest, ReceiveAndReadNeedAnMr) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  EXPECT_THAT(p->server().PostRecv(1, p->sbuf.data(), 64, nullptr),
              HasErrno(EINVAL));
  EXPECT_THAT(p->client().PostRead(2, p->cbuf.data(), 64, nullptr,
                                   kSendSignaled, p->sbuf.addr(),
                                   p->smr->rkey()),
              HasErrno(EINVAL));
  EXPECT_THAT(Drain(p->client().send_cq()), IsEmpty());
}

TEST_P(PostApiTest, UdSendNeedsAnAddressHandle) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  EXPECT_THAT(p->client().PostUdSend(1, p->cbuf.data(), 8, p->cmr.get(),
                                     kSendSignaled, nullptr, 1),
              HasErrno(EINVAL));
}

TEST_P(PostApiTest, LengthBeyondThirtyTwoBitsIsEinval) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  const size_t huge = size_t{1} << 32;
  EXPECT_THAT(p->client().PostSend(1, p->cbuf.data(), huge, p->cmr.get(),
                                   kSendSignaled),
              HasErrno(EINVAL));
  EXPECT_THAT(p->client().PostWrite(2, p->cbuf.data(), huge, p->cmr.get(),
                                    kSendSignaled, p->sbuf.addr(),
                                    p->smr->rkey()),
              HasErrno(EINVAL));
  EXPECT_THAT(p->server().PostRecv(3, p->sbuf.data(), huge, p->smr.get()),
              HasErrno(EINVAL));
  ExpectQpState(p->client().qp(), QpState::kRts);
}

TEST_P(PostApiTest, DeregMrOfNullIsEinval) {
  ASSERT_OK_AND_ASSIGN(EndpointPair eps, Connect(DefaultAttr()));
  std::unique_ptr<Mr> none;
  EXPECT_THAT(eps.client->DeregMr(none), HasErrno(EINVAL));
}

TEST_P(PostApiTest, PingPongWithBlockingCompletions) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  constexpr int kRounds = 50;
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_OK(p->server().PostRecv(i, p->sbuf.data(), 64, p->smr.get()));
    ASSERT_OK(p->client().PostRecv(i, p->cbuf.data() + 4096, 64,
                                   p->cmr.get()));
    p->cbuf.Store64(0, 1000 + i);
    ASSERT_OK(p->client().PostSend(i, p->cbuf.data(), 8, p->cmr.get(),
                                   kSendSignaled));
    ASSERT_OK_AND_ASSIGN(WorkCompletion r1, p->server().GetRecvComp(kTimeout));
    ASSERT_THAT(r1, WcOk(static_cast<uint64_t>(i), WcOpcode::kRecv)) << r1;
    ASSERT_EQ(p->sbuf.Load64(0), 1000u + i);
    p->sbuf.Store64(8, 2000 + i);
    ASSERT_OK(p->server().PostSend(i, p->sbuf.data() + 8, 8, p->smr.get(),
                                   kSendSignaled));
    ASSERT_OK_AND_ASSIGN(WorkCompletion r2, p->client().GetRecvComp(kTimeout));
    ASSERT_THAT(r2, WcOk(static_cast<uint64_t>(i), WcOpcode::kRecv)) << r2;
    ASSERT_EQ(p->cbuf.Load64(4096), 2000u + i);
    ASSERT_OK_AND_ASSIGN(WorkCompletion s1, p->client().GetSendComp(kTimeout));
    ASSERT_OK_AND_ASSIGN(WorkCompletion s2, p->server().GetSendComp(kTimeout));
    ASSERT_THAT(s1, WcOk(static_cast<uint64_t>(i), WcOpcode::kSend));
    ASSERT_THAT(s2, WcOk(static_cast<uint64_t>(i), WcOpcode::kSend));
  }
}

TEST_P(PostApiTest, ErrorCompletionIsAValueNotACallFailure) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RcPair> p, MakePair());
  ASSERT_OK(p->client().PostWrite(1, p->cbuf.data(), 8, p->cmr.get(),
                                  kSendSignaled, p->sbuf.addr(),
                                  p->smr->rkey() ^ 0x80000000u));
  absl::StatusOr<WorkCompletion> wc = p->client().GetSendComp(kTimeout);
  ASSERT_OK(wc);
  EXPECT_THAT(*wc, WcStatusIn(expect().bad_rkey)) << *wc;
}

INSTANTIATE_PROVIDER_TEST_SUITE_P(PostApiTest);

}  // namespace
}  // namespace testing
}  // namespace verbsim
