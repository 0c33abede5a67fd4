// A user's gtest on verbsim's C++ API, with the helpers verbsim installs
// (verbsim-gtest): the fixture opens the provider VERBSIM_PROVIDER names and
// connects an RC pair; on the sim, a fault rule loses the first packet of a
// send, and the test checks what code over RDMA must see (the message
// arrives once, intact) and what the transport did (a retransmission). The
// same seed gives the same run.
#include <cstring>
#include <memory>
#include <string>

#include "core/endpoint.h"
#include "core/provider.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "sim/sim_provider.h"
#include "tests/matchers.h"
#include "tests/provider_fixture.h"

namespace {

using verbsim::testing::IsOk;
using verbsim::testing::WcStatusIs;

class LossyLinkTest : public verbsim::testing::ProviderTest {
 protected:
  // Sends `text` from client to server; the received text.
  std::string SendAndReceive(const char* text) {
    char out[64] = {}, in[64] = {};
    std::strncpy(out, text, sizeof(out) - 1);
    auto omr = client().RegMsgs(out, sizeof(out));
    auto imr = server().RegMsgs(in, sizeof(in));
    EXPECT_THAT(omr, IsOk());
    EXPECT_THAT(imr, IsOk());
    if (!omr.ok() || !imr.ok()) return "";
    EXPECT_THAT(server().PostRecv(1, in, sizeof(in), imr->get()), IsOk());
    EXPECT_THAT(client().PostSend(2, out, std::strlen(out) + 1, omr->get(),
                                  verbsim::kSendSignaled),
                IsOk());
    auto sent = client().GetSendComp(absl::Seconds(5));
    EXPECT_THAT(sent, IsOk());
    if (sent.ok()) EXPECT_THAT(*sent, WcStatusIs(verbsim::WcStatus::kSuccess));
    auto got = server().GetRecvComp(absl::Seconds(5));
    EXPECT_THAT(got, IsOk());
    if (got.ok()) EXPECT_THAT(*got, WcStatusIs(verbsim::WcStatus::kSuccess));
    return in;
  }
};

TEST_F(LossyLinkTest, TheMessageArrivesOnceAfterARetransmission) {
  verbsim::sim::Fabric* fabric = this->fabric();
  if (fabric != nullptr) {
    // The first SEND packet on the wire is lost (docs/faults.md).
    ASSERT_THAT(fabric->AddFaults("drop op=SEND_ONLY nth=1"), IsOk());
  }
  EXPECT_EQ(SendAndReceive("hello over a lossy link"),
            "hello over a lossy link");
  verbsim::sim::SimQpStats stats;
  if (verbsim::sim::GetSimQpStats(client().qp(), &stats)) {
    EXPECT_GE(stats.retransmissions, 1u);
  }
}

// Without the fixture: two fabrics with one seed run alike.
uint64_t TraceHashOfOneSend(const std::string& spec) {
  auto provider = verbsim::OpenProvider(spec);
  EXPECT_THAT(provider, IsOk());
  if (!provider.ok()) return 0;
  auto* sim = dynamic_cast<verbsim::sim::SimProvider*>(provider->get());
  auto pair = verbsim::CreateConnectedPair(**provider);
  EXPECT_THAT(pair, IsOk());
  if (sim == nullptr || !pair.ok()) return 0;
  char buf[16] = "same";
  auto mr = pair->client->RegMsgs(buf, sizeof(buf));
  auto rmr = pair->server->RegMsgs(buf + 8, 8);
  EXPECT_THAT(pair->server->PostRecv(1, buf + 8, 8, rmr->get()), IsOk());
  EXPECT_THAT(pair->client->PostSend(2, buf, 5, mr->get(),
                                     verbsim::kSendSignaled),
              IsOk());
  EXPECT_THAT(pair->client->GetSendComp(absl::Seconds(5)), IsOk());
  return sim->fabric().TraceHash();
}

TEST(Determinism, OneSeedOneRun) {
  EXPECT_EQ(TraceHashOfOneSend("sim:rxe,seed=7"),
            TraceHashOfOneSend("sim:rxe,seed=7"));
}

}  // namespace
