// The sim's asynchronous events (ibv_get_async_event(3)): port state
// changes, a QP forced into error, a CQ overrun. The SRQ events are in the
// conformance suite (tests/conformance/srq_test.cc).
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/provider.h"
#include "gtest/gtest.h"
#include "sim/sim_provider.h"
#include "sim/thread_state.h"

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

// In process, a thread that waits for an async event only may be the one
// thread that moves the fabric on: work posted while it sleeps wakes it, and
// it runs the work to the event. Here the writes overrun a CQ of two
// entries while the thread that posted them only waits for the waiter.
TEST(AsyncEventsTest, AnAsyncEventWaiterRunsWorkPostedWhileItSlept) {
  World w;
  w.provider = *OpenProvider("sim");
  w.fabric = &AsSimProvider(w.provider.get())->fabric();
  EndpointAttr attr;
  attr.cq_depth = 2;
  absl::StatusOr<EndpointPair> eps = CreateConnectedPair(*w.provider, attr);
  ASSERT_TRUE(eps.ok()) << eps.status();
  Endpoint& c = *eps->client;
  std::vector<uint64_t> src(1, 7), dst(1);
  auto smr = c.RegMsgs(src.data(), 8);
  auto dmr = eps->server->RegWrite(dst.data(), 8);
  ASSERT_TRUE(smr.ok() && dmr.ok());
  Context* client = c.context();
  std::atomic<int> waiter_tid{0};
  absl::StatusOr<AsyncEvent> event = absl::UnknownError("no answer yet");
  std::thread waiter([&] {
    waiter_tid.store(CurrentThreadTid());
    event = client->GetAsyncEvent(absl::Seconds(30));
  });
  while (waiter_tid.load() == 0) std::this_thread::yield();
  bool asleep = false;
  for (int i = 0; i < 5000 && !asleep; ++i) {
    asleep = !ThreadIsRunnable(waiter_tid.load());
    if (!asleep) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(asleep) << "the waiting thread never slept";
  const absl::Time posted = absl::Now();
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(c.PostWrite(i, src.data(), 8, smr->get(), kSendSignaled,
                            reinterpret_cast<uint64_t>(dst.data()),
                            (*dmr)->rkey())
                    .ok());
  }
  waiter.join();
  // Not woken, it would sleep to its deadline (30 s) and only then run the
  // writes.
  EXPECT_LT(absl::Now() - posted, absl::Seconds(15))
      << "the posts did not wake the thread waiting for an async event";
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->type, AsyncEventType::kCqErr);
  EXPECT_EQ(dst[0], 7u);
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
