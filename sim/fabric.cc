// The fabric's clock and event loop: virtual time, the queue of scheduled
// events, and the ways callers drive it (a poll, a blocking wait, a helper
// thread's wait, RunFor and RunUntilIdle). The link (link.cc), fault
// injection (fault_injection.cc), multicast (multicast.cc) and the UDP
// transport (fabric_udp.cc) are the fabric's other parts.
#include "sim/fabric.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "sim/mcast_presence.h"
#include "sim/peer_liveness.h"  // ~Fabric releases the liveness table
#include "sim/thread_state.h"
#include "sim/transport.h"
#include "sim/udp_transport.h"
#include "sim/wire.h"

namespace verbsim::sim {

Fabric::Fabric(FabricOptions options)
    : options_(std::move(options)),
      address_status_(CheckAddressBase(options_.address_base, options_.nodes)),
      streams_(options_.seed) {
  for (int i = 0; i < options_.nodes; ++i) {
    auto node = std::make_unique<Node>();
    node->fabric = this;
    node->index = i;
    node->name = absl::StrCat("sim", i);
    node->keys.set_node(i);
    node->keys.set_window_bounds_checked(options_.profile.mw_bounds_checked);
    node->keys.set_key_scheme(options_.profile.one_key_for_both,
                              options_.profile.rkey_needs_remote_access);
    // RoCEv2 over IPv4: GID 0 is the IPv4-mapped form of the address.
    node->ipv4 = NodeIpv4(options_.address_base, i);
    node->gid = Ipv4MappedGid(node->ipv4);
    nodes_.push_back(std::move(node));
  }
  if (options_.udp.base_port != 0) {
    for (auto& n : nodes_) n->remote = true;
    for (int i : options_.udp.local_nodes) {
      if (i >= 0 && i < num_nodes()) nodes_[i]->remote = false;
    }
  }
}

Fabric::~Fabric() {
  if (progress_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    udp_->Wake();
    progress_.join();
  }
}

int Fabric::NodeByGid(const Gid& gid) const {
  for (const auto& n : nodes_) {
    if (n->gid == gid) return n->index;
  }
  return -1;
}

void Fabric::Schedule(int64_t at_ns, std::function<void()> fn) {
  events_.PushCall(std::max(at_ns, now_ns_), std::move(fn));
  WakeProgressFor(at_ns);
}

void Fabric::ScheduleArrival(int64_t at_ns, Packet&& packet, bool corrupt) {
  events_.PushArrival(std::max(at_ns, now_ns_), std::move(packet), corrupt);
  WakeProgressFor(at_ns);
}

void Fabric::WakeProgressFor(int64_t at_ns) {
  // In real time, the progress thread sleeps until its next event: wake it
  // for an earlier one.
  if (udp_ != nullptr && at_ns < progress_wake_ns_) {
    progress_wake_ns_ = at_ns;
    udp_->Wake();
  }
}

bool Fabric::Step() {
  if (events_.empty()) return false;
  // The event may schedule more events: it leaves the queue first.
  const EventQueue::Head ev = events_.Pop();
  ++steps_;
  now_ns_ = std::max(now_ns_, ev.at_ns);
  if (ev.kind == EventQueue::Kind::kCall) {
    events_.TakeCall(ev.slot)();
  } else {
    Arrive(std::move(events_.packet(ev.slot)),
           ev.kind == EventQueue::Kind::kArriveCorrupt);
    events_.ReleasePacket(ev.slot);
  }
  return true;
}

bool Fabric::HelperWait(Lock& fabric_lock, absl::FunctionRef<bool()> done,
                        absl::Duration timeout, std::condition_variable& cv) {
  std::unique_lock<std::mutex>& lock = fabric_lock.unique_lock();
  const absl::Time deadline = absl::Now() + timeout;
  uint64_t seen_calls = app_calls_.load(std::memory_order_relaxed);
  absl::Time quiet_since = absl::Now();
  uint64_t steps = 0;
  while (!done()) {
    const absl::Time now = absl::Now();
    if (now >= deadline) return false;
    const uint64_t calls = app_calls_.load(std::memory_order_relaxed);
    if (calls != seen_calls) {
      seen_calls = calls;
      quiet_since = now;
    }
    const bool app_idle =
        AppThreadsInCalls() == 0 &&
        now - quiet_since >= kHelperGrace &&
        (now - quiet_since >= kHelperGraceRunnable ||
         !ThreadIsRunnable(last_app_tid_.load(std::memory_order_relaxed)));
    const int64_t cap = frozen_ ? now_ns_ : INT64_MAX;
    if (app_idle && udp_ == nullptr && !events_.empty() &&
        events_.top_at_ns() <= cap) {
      // The application is away (blocked on a descriptor, presumably):
      // move the fabric on for it, a batch at a time.
      Step();
      if (++steps % 64 == 0) YieldLock(lock);
      continue;
    }
    // Wait for the application's calls (or the grace) to change things.
    NoteLockLeft(/*to_wait=*/true);
    WaitOn(cv, lock,
           absl::ToChronoTime(std::min(deadline, now + absl::Milliseconds(1))));
    NoteLockTaken();
  }
  return true;
}

void Fabric::NoteThread() {
  if (helper_thread_) return;
  if (multi_threaded_) return;
  const std::thread::id me = std::this_thread::get_id();
  if (!have_first_thread_) {
    have_first_thread_ = true;
    first_thread_ = me;
  } else if (me != first_thread_) {
    multi_threaded_ = true;
  }
}

bool Fabric::Drive(Lock& fabric_lock, absl::FunctionRef<bool()> done,
                   absl::Duration timeout, bool blocking, WaitFor wait_for) {
  std::unique_lock<std::mutex>& lock = fabric_lock.unique_lock();
  std::condition_variable& cv =
      wait_for == WaitFor::kAsyncEvent ? async_cv_ : cv_;
  if (helper_thread_ && blocking && udp_ == nullptr) {
    return HelperWait(fabric_lock, done, timeout, cv);
  }
  NoteThread();
  if (udp_ != nullptr) {
    // Real time (UDP transport): run what is due by the wall clock; the
    // progress thread runs the rest and the datagrams, and wakes us.
    const absl::Time deadline = absl::Now() + timeout;
    // The periodic look is a safety net (whatever the waiter awaits wakes
    // it); a thread that waits for an async event only looks less often.
    const auto period = wait_for == WaitFor::kAsyncEvent
                            ? std::chrono::milliseconds(10)
                            : std::chrono::milliseconds(1);
    while (true) {
      SyncClock();
      while (!done() && !events_.empty() && events_.top_at_ns() <= now_ns_) {
        Step();
      }
      if (done()) return true;
      if (!blocking || absl::Now() >= deadline) return false;
      NoteLockLeft(/*to_wait=*/true);
      WaitOn(cv, lock,
             std::min(absl::ToChronoTime(deadline),
                      std::chrono::system_clock::now() + period));
      NoteLockTaken();
    }
  }
  if (!blocking) return RunForPoll(done);
  const int64_t budget =
      std::max<int64_t>(0, absl::ToInt64Nanoseconds(timeout));
  bool real_time = false;
  int64_t limit = now_ns_ + budget;
  const absl::Time real_deadline = absl::Now() + timeout;
  uint64_t steps = 0;
  while (true) {
    if (done()) return true;
    if (!real_time &&
        (multi_threaded_ || AppThreadsInCalls() > 1)) {
      multi_threaded_ = true;
      real_time = true;
      limit = INT64_MAX;
    }
    if (!events_.empty()) {
      // Frozen (re-read each turn: Freeze may come while this thread
      // waits): only what is due now runs, and the clock stays.
      const int64_t cap = frozen_ ? now_ns_ : limit;
      if (events_.top_at_ns() <= cap) {
        Step();
        if (real_time && ++steps % 64 == 0) {
          if (absl::Now() >= real_deadline) return done();
          YieldLock(lock);  // let the other threads in
        }
        continue;
      }
      if (!frozen_) {
        now_ns_ = limit;  // the wait used up its virtual budget
        return done();
      }
    }
    // Idle, or frozen: only another thread can change anything now.
    if (absl::Now() >= real_deadline) return false;
    NoteLockLeft(/*to_wait=*/true);
    WaitOn(cv, lock, absl::ToChronoTime(real_deadline));
    NoteLockTaken();
  }
}

bool Fabric::RunForPoll(absl::FunctionRef<bool()> done) {
  int64_t limit = now_ns_;
  bool stepped_time = frozen_;  // frozen: never the next moment
  while (!done()) {
    if (events_.empty()) return false;
    if (events_.top_at_ns() <= limit) {
      Step();
    } else if (!stepped_time) {
      limit = events_.top_at_ns();
      stepped_time = true;
    } else {
      return false;
    }
  }
  return true;
}

bool Fabric::RunUntilIdle(absl::Duration max_virtual) {
  if (real_time()) {
    // The progress thread runs the events; wait (in real time) until none
    // is left.
    const absl::Time deadline = absl::Now() + max_virtual;
    std::unique_lock<std::mutex> lock(mu_);
    while (!events_.empty() && absl::Now() < deadline) {
      WaitOn(cv_, lock,
             std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
    }
    return events_.empty();
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t limit = now_ns_ + absl::ToInt64Nanoseconds(max_virtual);
  while (!events_.empty() && events_.top_at_ns() <= limit) Step();
  bool idle = events_.empty();
  if (!idle) now_ns_ = std::max(now_ns_, limit);
  Wake();
  return idle;
}

void Fabric::RunFor(absl::Duration d) {
  if (real_time()) {
    absl::SleepFor(d);  // the progress thread runs the events meanwhile
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t limit = now_ns_ + absl::ToInt64Nanoseconds(d);
  while (!events_.empty() && events_.top_at_ns() <= limit) Step();
  now_ns_ = std::max(now_ns_, limit);
  Wake();
}

void Fabric::Reseed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.Reseed(seed);
}

namespace {
// Each stream's constant (its name's letters).
constexpr uint64_t kJitterStream = 0x6a6974746572ull;  // "jitter"
constexpr uint64_t kFaultStream = 0x6661756c7473ull;   // "faults"
constexpr uint64_t kPlaceStream = 0x706c616365ull;     // "place"
constexpr uint64_t kAckStream = 0x61636b73ull;         // "acks"
constexpr uint64_t kMemoryStream = 0x6d656d6f7279ull;  // "memory"
}  // namespace

// Each stream starts from the seed mixed with its own constant (one
// splitmix64 step), so the streams are unrelated to each other.
uint64_t Fabric::Streams::Derive(uint64_t seed, uint64_t stream) {
  FastRandom mix(seed ^ stream);
  return mix();
}

Fabric::Streams::Streams(uint64_t seed)
    : jitter(Derive(seed, kJitterStream)),
      faults(Derive(seed, kFaultStream)),
      placement(Derive(seed, kPlaceStream)),
      acks(Derive(seed, kAckStream)),
      memory(Derive(seed, kMemoryStream)) {}

void Fabric::Streams::Reseed(uint64_t seed) {
  jitter.seed(Derive(seed, kJitterStream));
  faults.seed(Derive(seed, kFaultStream));
  placement.seed(Derive(seed, kPlaceStream));
  acks.seed(Derive(seed, kAckStream));
  memory.seed(Derive(seed, kMemoryStream));
}

absl::StatusOr<NodeStats> Fabric::GetNodeStats(int node) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node < 0 || node >= num_nodes()) {
    return Errno(EINVAL, "no node %d (the fabric has %d)", node, num_nodes());
  }
  const Node& n = *nodes_[node];
  return NodeStats{n.packets_sent, n.packets_received, n.packets_dropped,
                   n.icrc_errors};
}

std::string Fabric::Describe() const {
  return absl::StrCat("virtual time ",
                      absl::FormatDuration(absl::Nanoseconds(now_ns_)), ", ",
                      events_.size(), " events pending, ",
                      multi_threaded_ ? "multi-threaded" : "single-threaded");
}

uint64_t Fabric::TraceHash() {
  std::lock_guard<std::mutex> lock(mu_);
  return trace_.hash();
}

void Fabric::KeepTrace(bool keep) {
  std::lock_guard<std::mutex> lock(mu_);
  trace_.set_keep(keep);
}

std::vector<TraceRecord> Fabric::TraceRecords() {
  std::lock_guard<std::mutex> lock(mu_);
  return trace_.records();
}

std::string Fabric::TraceText() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const TraceRecord& r : trace_.records()) {
    out += FormatTraceRecord(r);
    out += '\n';
  }
  return out;
}

void Fabric::KeepPackets(bool keep) {
  std::lock_guard<std::mutex> lock(mu_);
  keep_packets_ = keep;
}

std::vector<Fabric::CapturedPacket> Fabric::CapturedPackets() {
  std::lock_guard<std::mutex> lock(mu_);
  return captured_;
}

absl::Duration Fabric::Now() {
  std::lock_guard<std::mutex> lock(mu_);
  SyncClock();
  return absl::Nanoseconds(now_ns_);
}

void Fabric::SyncClock() {
  if (udp_ == nullptr) return;
  now_ns_ = std::max(now_ns_, absl::GetCurrentTimeNanos() - real_start_ns_);
}

}  // namespace verbsim::sim
