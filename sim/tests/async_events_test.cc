// The sim's asynchronous events (ibv_get_async_event(3)): port state
// changes, a QP forced into error, a CQ overrun. The SRQ events are in the
// conformance suite (tests/conformance/srq_test.cc).
#include <memory>
#include <string>

#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {
namespace {

struct World {
  std::unique_ptr<Provider> provider;
  Fabric* fabric = nullptr;
  EndpointPair eps;
};

World Connect(const std::string& spec = "sim") {
  World w;
  w.provider = *OpenProvider(spec);
  w.fabric = &AsSimProvider(w.provider.get())->fabric();
  absl::StatusOr<EndpointPair> eps =
      CreateConnectedPair(*w.provider, EndpointAttr());
  EXPECT_TRUE(eps.ok()) << eps.status();
  if (eps.ok()) w.eps = *std::move(eps);
  return w;
}

TEST(AsyncEventsTest, NoEventTimesOut) {
  World w = Connect();
  absl::StatusOr<AsyncEvent> ev =
      w.eps.client->context()->GetAsyncEvent(absl::Milliseconds(1));
  EXPECT_EQ(ErrnoOf(ev.status()), ETIMEDOUT) << ev.status();
}

// The fabric node of a sim context ("sim0" is node 0).
int NodeOf(Context* context) {
  return std::stoi(context->device_attr().name.substr(3));
}

TEST(AsyncEventsTest, PortDownAndUpAreReportedAndSeenByQueryPort) {
  World w = Connect();
  Context* server = w.eps.server->context();
  const int node = NodeOf(server);
  ASSERT_TRUE(w.fabric->SetPortState(node, false).ok());
  absl::StatusOr<AsyncEvent> down = server->GetAsyncEvent(absl::Seconds(1));
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_EQ(down->type, AsyncEventType::kPortErr);
  EXPECT_EQ(down->port_num, 1);
  EXPECT_EQ(server->QueryPort(1)->state, 1) << "IBV_PORT_DOWN";
  // The other device's context sees nothing.
  EXPECT_FALSE(w.eps.client->context()
                   ->GetAsyncEvent(absl::Milliseconds(1))
                   .ok());
  ASSERT_TRUE(w.fabric->SetPortState(node, true).ok());
  absl::StatusOr<AsyncEvent> up = server->GetAsyncEvent(absl::Seconds(1));
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->type, AsyncEventType::kPortActive);
  EXPECT_EQ(server->QueryPort(1)->state, 4) << "IBV_PORT_ACTIVE";
}

TEST(AsyncEventsTest, PortDownLosesTrafficUntilRetriesRunOut) {
  World w = Connect();
  ASSERT_TRUE(
      w.fabric->SetPortState(NodeOf(w.eps.server->context()), false).ok());
  char byte = 'x';
  ASSERT_TRUE(w.eps.client
                  ->PostSend(1, &byte, 1, nullptr, kSendSignaled | kSendInline)
                  .ok());
  absl::StatusOr<WorkCompletion> wc =
      w.eps.client->GetSendComp(absl::Seconds(60));
  ASSERT_TRUE(wc.ok()) << wc.status();
  EXPECT_EQ(wc->status, WcStatus::kRetryExcErr);
}

TEST(AsyncEventsTest, UnknownNodeIsEinval) {
  World w = Connect();
  EXPECT_EQ(ErrnoOf(w.fabric->SetPortState(7, false)), EINVAL);
}

TEST(AsyncEventsTest, ForcedQpErrorIsQpFatal) {
  World w = Connect();
  const uint32_t qpn = w.eps.server->qp()->qp_num();
  ASSERT_TRUE(w.fabric
                  ->AddFaults("qperr node=" +
                              std::to_string(NodeOf(w.eps.server->context())) +
                              " qp=" + std::to_string(qpn) + " at_us=1")
                  .ok());
  absl::StatusOr<AsyncEvent> ev =
      w.eps.server->context()->GetAsyncEvent(absl::Seconds(1));
  ASSERT_TRUE(ev.ok()) << ev.status();
  EXPECT_EQ(ev->type, AsyncEventType::kQpFatal);
  EXPECT_EQ(ev->qp_num, qpn);
  EXPECT_EQ(w.eps.server->qp()->state(), QpState::kErr);
}

}  // namespace
}  // namespace verbsim::sim
