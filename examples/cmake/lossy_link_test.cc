// A user's gtest on verbsim's C++ API: an RC connection on the simulated
// fabric, a fault rule that loses the first packet of a send, and the
// checks a test of RDMA code makes (the message arrives once, intact; the
// transport retransmitted; the same seed gives the same run).
#include <cstring>
#include <memory>
#include <string>

#include "core/endpoint.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/handles.h"
#include "sim/sim_provider.h"

namespace {

using verbsim::CreateConnectedPair;
using verbsim::EndpointPair;
using verbsim::OpenProvider;
using verbsim::Provider;

struct Outcome {
  uint64_t trace_hash = 0;
  uint64_t retransmissions = 0;
  std::string received;
};

Outcome SendOverALossyLink(const std::string& spec) {
  Outcome run;
  absl::StatusOr<std::unique_ptr<Provider>> provider = OpenProvider(spec);
  EXPECT_TRUE(provider.ok()) << provider.status();
  if (!provider.ok()) return run;
  auto* sim = dynamic_cast<verbsim::sim::SimProvider*>(provider->get());
  EXPECT_NE(sim, nullptr) << spec << " is not the sim";
  if (sim == nullptr) return run;
  absl::StatusOr<EndpointPair> eps = CreateConnectedPair(**provider);
  EXPECT_TRUE(eps.ok()) << eps.status();
  if (!eps.ok()) return run;
  // The first SEND packet on the wire is lost (docs/faults.md).
  EXPECT_TRUE(sim->fabric().AddFaults("drop op=SEND_ONLY nth=1").ok());

  char out[64] = "hello over a lossy link";
  char in[64] = {};
  auto omr = eps->client->RegMsgs(out, sizeof(out));
  auto imr = eps->server->RegMsgs(in, sizeof(in));
  EXPECT_TRUE(omr.ok() && imr.ok());
  EXPECT_TRUE(eps->server->PostRecv(1, in, sizeof(in), imr->get()).ok());
  EXPECT_TRUE(eps->client
                  ->PostSend(2, out, std::strlen(out) + 1, omr->get(),
                             verbsim::kSendSignaled)
                  .ok());
  auto sent = eps->client->GetSendComp(absl::Seconds(5));
  EXPECT_TRUE(sent.ok() && sent->status == verbsim::WcStatus::kSuccess);
  auto got = eps->server->GetRecvComp(absl::Seconds(5));
  EXPECT_TRUE(got.ok() && got->status == verbsim::WcStatus::kSuccess);
  run.received = in;
  verbsim::sim::SimQpStats stats;
  if (verbsim::sim::GetSimQpStats(eps->client->qp(), &stats)) {
    run.retransmissions = stats.retransmissions;
  }
  run.trace_hash = sim->fabric().TraceHash();
  return run;
}

TEST(LossyLink, TheMessageArrivesOnceAfterARetransmission) {
  Outcome run = SendOverALossyLink("sim:rxe");
  EXPECT_EQ(run.received, "hello over a lossy link");
  EXPECT_GE(run.retransmissions, 1u);
}

TEST(LossyLink, OneSeedOneRun) {
  EXPECT_EQ(SendOverALossyLink("sim:rxe,seed=7").trace_hash,
            SendOverALossyLink("sim:rxe,seed=7").trace_hash);
}

}  // namespace
