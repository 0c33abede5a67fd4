#include "sim/fabric.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
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
  events_.push(Event{std::max(at_ns, now_ns_), next_seq_++, std::move(fn)});
  // In real time, the progress thread sleeps until its next event: wake it
  // for an earlier one.
  if (udp_ != nullptr && at_ns < progress_wake_ns_) {
    progress_wake_ns_ = at_ns;
    udp_->Wake();
  }
}

void Fabric::TracePacket(TraceKind kind, const Packet& p,
                         absl::string_view note) {
  TraceRecord r;
  r.time_ns = now_ns_;
  r.kind = kind;
  const bool at_sender = kind == TraceKind::kTransmit;
  r.node = at_sender ? p.src_node : p.dst_node;
  r.qpn = at_sender ? p.src_qpn : p.dst_qpn;
  r.peer_node = at_sender ? p.dst_node : p.src_node;
  r.peer_qpn = at_sender ? p.dst_qpn : p.src_qpn;
  r.opcode = static_cast<uint8_t>(p.opcode);
  r.psn = p.psn;
  r.syndrome = p.opcode == RcOp::kAcknowledge ? p.syndrome : 0;
  r.length = static_cast<uint32_t>(PayloadLength(p));
  r.note = std::string(note);
  trace_.Record(std::move(r));
}

void Fabric::Transmit(Packet packet) {
  ++packets_sent_;
  TracePacket(TraceKind::kTransmit, packet);
  if (packet.src_node >= 0 && packet.src_node < num_nodes()) {
    ++nodes_[packet.src_node]->packets_sent;
  }
  const LinkModel& link = LinkBetween(packet.src_node, packet.dst_node);
  // Headers: about 58 bytes on RoCEv2 (Eth, IPv4, UDP, BTH, ICRC, FCS).
  const double bytes = static_cast<double>(PayloadLength(packet) + 58);
  const int64_t serialise_ns =
      static_cast<int64_t>(bytes * 8.0 / link.gbit_per_s);
  int64_t& free_ns = link_free_ns_[{packet.src_node, packet.dst_node}];
  const int64_t start = std::max(now_ns_, free_ns);
  free_ns = start + serialise_ns;
  int64_t arrive = free_ns + absl::ToInt64Nanoseconds(link.latency);
  if (PayloadLength(packet) > static_cast<size_t>(link.mtu)) {
    if (keep_packets_) captured_.push_back({now_ns_, packet, true});
    Schedule(arrive, [this, p = std::move(packet)]() {
      TracePacket(TraceKind::kDrop, p, "larger than the link MTU");
    });
    return;
  }
  const int64_t jitter = absl::ToInt64Nanoseconds(options_.jitter);
  if (jitter > 0) {
    arrive += static_cast<int64_t>(streams_.jitter() %
                                   static_cast<uint64_t>(jitter + 1));
  }

  int64_t extra_ns = 0;
  int copies = 1;
  bool corrupt = false;
  bool bypass_fifo = false;
  std::string lost;  // why the packet is lost, if it is
  const bool go_on = ApplyPacketFaults(packet, &extra_ns, &copies, &corrupt,
                                      &bypass_fifo, &lost);
  if (keep_packets_) captured_.push_back({now_ns_, packet, !go_on});
  if (!go_on) {
    // Recorded when it would have arrived, so the trace reads as a timeline.
    Schedule(arrive, [this, p = std::move(packet), note = std::move(lost)]() {
      TracePacket(TraceKind::kDrop, p, note);
    });
    return;
  }
  // One QP's packets to one QP stay in order unless a fault reorders them.
  int64_t& flow_ns = flow_last_ns_[{packet.src_node, packet.src_qpn,
                                    packet.dst_node, packet.dst_qpn}];
  if (!bypass_fifo) {
    arrive = std::max(arrive, flow_ns);
    flow_ns = arrive;
  }
  arrive += extra_ns;
  if (extra_ns == 0 && copies == 1 && packet.dst_node >= 0 &&
      packet.dst_node < num_nodes() && nodes_[packet.dst_node]->remote) {
    // UDP transport: the datagram leaves now; the wire (loopback) is the
    // latency. Only a delay or duplicate fault holds it in the event queue.
    Arrive(std::move(packet), corrupt);
    return;
  }
  for (int i = 1; i < copies; ++i) {
    Schedule(arrive + i * serialise_ns,
             [this, p = packet, corrupt]() mutable {
               Arrive(std::move(p), corrupt);
             });
  }
  Schedule(arrive, [this, p = std::move(packet), corrupt]() mutable {
    Arrive(std::move(p), corrupt);
  });
}

bool Fabric::ApplyPacketFaults(const Packet& p, int64_t* extra_ns,
                               int* copies, bool* corrupt, bool* bypass_fifo,
                               std::string* lost) {
  auto node_down = [&](int n) {
    return n >= 0 && n < num_nodes() && nodes_[n]->crashed;
  };
  if (node_down(p.src_node) || node_down(p.dst_node)) {
    *lost = "node down";
    return false;
  }
  auto port_down = [&](int n) {
    return n >= 0 && n < num_nodes() && nodes_[n]->port_down;
  };
  if (port_down(p.src_node) || port_down(p.dst_node)) {
    *lost = "port down";
    return false;
  }
  for (const LinkDown& l : faults_.links) {
    const bool on_link = (p.src_node == l.a && p.dst_node == l.b) ||
                         (p.src_node == l.b && p.dst_node == l.a);
    if (on_link && now_ns_ >= l.from_ns && now_ns_ < l.until_ns) {
      *lost = "fault: link down";
      return false;
    }
  }
  for (size_t i = 0; i < faults_.packets.size(); ++i) {
    PacketRule& r = faults_.packets[i];
    if ((r.src_node >= 0 && r.src_node != p.src_node) ||
        (r.dst_node >= 0 && r.dst_node != p.dst_node) ||
        (r.qpn >= 0 && r.qpn != p.src_qpn && r.qpn != p.dst_qpn) ||
        (r.opcode >= 0 && r.opcode != static_cast<int>(p.opcode)) ||
        (r.psn >= 0 && r.psn != p.psn)) {
      continue;
    }
    ++r.matched;
    if (r.nth != 0 && r.matched != r.nth) continue;
    if (r.probability < 1.0 &&
        std::uniform_real_distribution<double>(0, 1)(streams_.faults) >=
            r.probability) {
      continue;
    }
    ++r.fired;
    const std::string note = absl::StrCat("fault: ", FaultActionName(r.action),
                                          " (rule ", i + 1, ")");
    switch (r.action) {
      case FaultAction::kDrop:
        *lost = note;
        return false;
      case FaultAction::kDuplicate:
        TracePacket(TraceKind::kTransmit, p, note);
        ++*copies;
        break;
      case FaultAction::kDelay:
        TracePacket(TraceKind::kTransmit, p, note);
        *extra_ns += r.delay_ns;
        *bypass_fifo = true;
        break;
      case FaultAction::kReorder:
        // Held back behind what follows: a few packet times late.
        TracePacket(TraceKind::kTransmit, p, note);
        *extra_ns += r.delay_ns > 0 ? r.delay_ns : 3000;
        *bypass_fifo = true;
        break;
      case FaultAction::kCorrupt:
        TracePacket(TraceKind::kTransmit, p, note);
        *corrupt = true;
        break;
    }
  }
  return true;
}

void Fabric::Arrive(Packet packet, bool corrupt) {
  if (packet.deferred_len != 0) {
    // The sender's device reads the payload now (sim/packet.h).
    Node* src = nodes_[packet.src_node].get();
    auto it = src->qps.find(packet.src_qpn);
    const bool read = it != src->qps.end() &&
                      (packet.deferred_wqe != 0
                           ? GatherDeferred(*it->second, packet)
                           : FetchDeferredRead(*it->second, packet));
    if (!read) {
      TracePacket(TraceKind::kDrop, packet, "its source memory is gone");
      return;
    }
  }
  const bool remote = packet.dst_node >= 0 && packet.dst_node < num_nodes() &&
                      nodes_[packet.dst_node]->remote;
  if (!remote) {
    Deliver(std::move(packet), corrupt);
    return;
  }
  // The packet leaves this process: RoCEv2 over UDP. A corrupt fault flips
  // a payload bit after the ICRC is computed, so the receiver's ICRC check
  // catches it (as a NIC's would).
  std::vector<uint8_t> bytes =
      EncodeRoceV2Ip(packet, ip_id_++, options_.address_base);
  if (corrupt) bytes[bytes.size() - 5] ^= 0x01;
  if (!udp_->Send(packet.src_node, packet.dst_node, bytes)) {
    TracePacket(TraceKind::kDrop, packet, "UDP send failed");
  }
}

void Fabric::Deliver(Packet packet, bool corrupt) {
  if (packet.dst_node < 0 || packet.dst_node >= num_nodes()) {
    TracePacket(TraceKind::kDrop, packet, "no route");
    return;
  }
  Node* dst = nodes_[packet.dst_node].get();
  if (dst->crashed) {
    ++dst->packets_dropped;
    TracePacket(TraceKind::kDrop, packet, "node down");
    return;
  }
  if (corrupt) {
    // The ICRC check fails: dropped and counted (IBA 7.8.1).
    ++dst->icrc_errors;
    ++dst->packets_dropped;
    TracePacket(TraceKind::kDrop, packet, "bad ICRC");
    return;
  }
  auto it = dst->qps.find(packet.dst_qpn);
  if (it == dst->qps.end()) {
    ++dst->packets_dropped;
    TracePacket(TraceKind::kDrop, packet, "no such QP");
    return;
  }
  ++dst->packets_received;
  ++it->second->packets_received;
  TracePacket(TraceKind::kDeliver, packet);
  if (IsRequest(packet.opcode)) {
    ResponderReceive(*it->second, packet);
  } else {
    CompleterReceive(*it->second, packet);
  }
}

bool Fabric::Step() {
  if (events_.empty()) return false;
  // The function may schedule more events; move it out first.
  Event ev = std::move(const_cast<Event&>(events_.top()));
  events_.pop();
  now_ns_ = std::max(now_ns_, ev.at_ns);
  ev.fn();
  return true;
}

bool Fabric::HelperWait(Lock& fabric_lock, const std::function<bool()>& done,
                        absl::Duration timeout) {
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
    const bool app_idle = callers_.load(std::memory_order_relaxed) == 0 &&
                          now - quiet_since >= kHelperGrace;
    const int64_t cap = frozen_ ? now_ns_ : INT64_MAX;
    if (app_idle && udp_ == nullptr && !events_.empty() &&
        events_.top().at_ns <= cap) {
      // The application is away (blocked on a descriptor, presumably):
      // move the fabric on for it, a batch at a time.
      Step();
      if (++steps % 64 == 0) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      }
      continue;
    }
    // Wait for the application's calls (or the grace) to change things.
    cv_.wait_until(lock, absl::ToChronoTime(std::min(
                             deadline, now + absl::Milliseconds(1))));
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

bool Fabric::DriveUntil(Lock& fabric_lock, const std::function<bool()>& done,
                        absl::Duration timeout, bool blocking) {
  std::unique_lock<std::mutex>& lock = fabric_lock.unique_lock();
  if (helper_thread_ && blocking && udp_ == nullptr) {
    return HelperWait(fabric_lock, done, timeout);
  }
  NoteThread();
  if (udp_ != nullptr) {
    // Real time (UDP transport): run what is due by the wall clock; the
    // progress thread runs the rest and the datagrams, and wakes us.
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      SyncClock();
      while (!done() && !events_.empty() && events_.top().at_ns <= now_ns_) {
        Step();
      }
      if (done()) return true;
      if (!blocking || absl::Now() >= deadline) return false;
      cv_.wait_until(lock, std::min(absl::ToChronoTime(deadline),
                                    std::chrono::system_clock::now() +
                                        std::chrono::milliseconds(1)));
    }
  }
  if (!blocking) {
    // A poll: what is due now, else the events of the next moment.
    int64_t limit = now_ns_;
    bool stepped_time = frozen_;  // frozen: never the next moment
    while (!done()) {
      if (events_.empty()) return false;
      if (events_.top().at_ns <= limit) {
        Step();
      } else if (!stepped_time) {
        limit = events_.top().at_ns;
        stepped_time = true;
      } else {
        return false;
      }
    }
    return true;
  }
  const int64_t budget =
      std::max<int64_t>(0, absl::ToInt64Nanoseconds(timeout));
  bool real_time = false;
  int64_t limit = now_ns_ + budget;
  const absl::Time real_deadline = absl::Now() + timeout;
  uint64_t steps = 0;
  while (true) {
    if (done()) return true;
    if (!real_time &&
        (multi_threaded_ || callers_.load(std::memory_order_relaxed) > 1)) {
      multi_threaded_ = true;
      real_time = true;
      limit = INT64_MAX;
    }
    if (!events_.empty()) {
      // Frozen (re-read each turn: Freeze may come while this thread
      // waits): only what is due now runs, and the clock stays.
      const int64_t cap = frozen_ ? now_ns_ : limit;
      if (events_.top().at_ns <= cap) {
        Step();
        if (real_time && ++steps % 64 == 0) {
          if (absl::Now() >= real_deadline) return done();
          // Let the other threads in.
          lock.unlock();
          std::this_thread::yield();
          lock.lock();
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
    cv_.wait_until(lock, absl::ToChronoTime(real_deadline));
  }
}

bool Fabric::RunUntilIdle(absl::Duration max_virtual) {
  if (real_time()) {
    // The progress thread runs the events; wait (in real time) until none
    // is left.
    const absl::Time deadline = absl::Now() + max_virtual;
    std::unique_lock<std::mutex> lock(mu_);
    while (!events_.empty() && absl::Now() < deadline) {
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
    return events_.empty();
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t limit = now_ns_ + absl::ToInt64Nanoseconds(max_virtual);
  while (!events_.empty() && events_.top().at_ns <= limit) Step();
  bool idle = events_.empty();
  if (!idle) now_ns_ = std::max(now_ns_, limit);
  cv_.notify_all();
  return idle;
}

void Fabric::RunFor(absl::Duration d) {
  if (real_time()) {
    absl::SleepFor(d);  // the progress thread runs the events meanwhile
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t limit = now_ns_ + absl::ToInt64Nanoseconds(d);
  while (!events_.empty() && events_.top().at_ns <= limit) Step();
  now_ns_ = std::max(now_ns_, limit);
  cv_.notify_all();
}

const LinkModel& Fabric::LinkBetween(int a, int b) const {
  if (!links_.empty()) {
    auto it = links_.find({std::min(a, b), std::max(a, b)});
    if (it != links_.end()) return it->second;
  }
  return options_.link;
}

absl::Status Fabric::SetLink(int a, int b, const LinkModel& model) {
  std::lock_guard<std::mutex> lock(mu_);
  if (a < 0 || a >= num_nodes() || b < 0 || b >= num_nodes() || a == b) {
    return Errno(EINVAL, "link %d-%d: nodes must be two of 0..%d", a, b,
                 num_nodes() - 1);
  }
  if (model.latency < absl::ZeroDuration() || !(model.gbit_per_s > 0) ||
      model.mtu < 256) {
    return Errno(EINVAL,
                 "link %d-%d: latency %s, rate %g Gbit/s, mtu %d out of range",
                 a, b, absl::FormatDuration(model.latency), model.gbit_per_s,
                 model.mtu);
  }
  links_[{std::min(a, b), std::max(a, b)}] = model;
  return absl::OkStatus();
}

LinkModel Fabric::GetLink(int a, int b) {
  std::lock_guard<std::mutex> lock(mu_);
  return LinkBetween(a, b);
}

absl::Status Fabric::AddFaults(absl::string_view text) {
  absl::StatusOr<FaultPlan> plan = ParseFaults(text);
  if (!plan.ok()) return plan.status();
  return AddFaultPlan(*std::move(plan));
}

absl::Status Fabric::AddFaultPlan(FaultPlan plan) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const NodeCrash& c : plan.crashes) {
    if (c.node >= num_nodes()) {
      return Errno(EINVAL, "crash: no node %d (the fabric has %d)", c.node,
                   num_nodes());
    }
  }
  for (const QpError& q : plan.qp_errors) {
    if (q.node >= num_nodes()) {
      return Errno(EINVAL, "qperr: no node %d (the fabric has %d)", q.node,
                   num_nodes());
    }
  }
  for (const CqOverflow& o : plan.cq_overflows) {
    if (o.node >= num_nodes()) {
      return Errno(EINVAL, "cqoverflow: no node %d (the fabric has %d)",
                   o.node, num_nodes());
    }
  }
  for (const CqOverflow& o : plan.cq_overflows) {
    const CqOverflow copy = o;
    Schedule(o.at_ns, [this, copy]() { ForceCqOverflow(copy); });
  }
  for (const NodeCrash& c : plan.crashes) {
    const int node = c.node;
    Schedule(c.at_ns, [this, node]() { CrashNode(node); });
  }
  for (const QpError& q : plan.qp_errors) {
    const int node = q.node;
    const uint32_t qpn = q.qpn;
    Schedule(q.at_ns, [this, node, qpn]() { ForceQpError(node, qpn); });
  }
  MergeFaults(faults_, std::move(plan));
  return absl::OkStatus();
}

void Fabric::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.packets.clear();
  faults_.links.clear();
  faults_.regfail_nth = 0;
  faults_.postfail_nth = 0;
}

absl::Status Fabric::Freeze(bool frozen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (udp_ != nullptr) {
    return Errno(EOPNOTSUPP, "virtual time cannot be frozen in real time "
                             "(VERBSIM_UDP)");
  }
  frozen_ = frozen;
  cv_.notify_all();
  return absl::OkStatus();
}

void Fabric::Reseed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.Reseed(seed);
}

void Fabric::Streams::Reseed(uint64_t seed) {
  // Each stream starts from the seed mixed with its own constant (one
  // splitmix64 step), so the streams are unrelated to each other.
  auto derive = [seed](uint64_t stream) {
    FastRandom mix(seed ^ stream);
    return mix();
  };
  jitter.seed(derive(0x6a6974746572ull));   // "jitter"
  faults.seed(derive(0x6661756c7473ull));   // "faults"
  placement.seed(derive(0x706c616365ull));  // "place"
  acks.seed(derive(0x61636b73ull));         // "acks"
  memory.seed(derive(0x6d656d6f7279ull));   // "memory"
}

std::vector<PacketRule> Fabric::PacketRules() {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_.packets;
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

bool Fabric::RegistrationFaultDue(int node) {
  ++registrations_;
  if (faults_.regfail_nth == 0 || registrations_ != faults_.regfail_nth) {
    return false;
  }
  RecordLocalFault(node, 0, "fault: registration fails (regfail)");
  return true;
}

bool Fabric::PostFaultDue(int node, uint32_t qpn) {
  ++posts_;
  if (faults_.postfail_nth == 0 || posts_ != faults_.postfail_nth) {
    return false;
  }
  RecordLocalFault(node, qpn, "fault: post fails (postfail)");
  return true;
}

void Fabric::RecordLocalFault(int node, uint32_t qpn, absl::string_view note) {
  TraceRecord r;
  r.time_ns = now_ns_;
  r.kind = TraceKind::kDrop;
  r.node = node;
  r.qpn = qpn;
  r.note = std::string(note);
  trace_.Record(std::move(r));
}

std::vector<std::pair<int, uint32_t>> Fabric::McastMembers(
    const Gid& gid) const {
  auto it = mcast_.find(gid);
  if (it == mcast_.end()) return {};
  return it->second;
}

void Fabric::AttachMcast(const Gid& gid, int node, uint32_t qpn) {
  auto& members = mcast_[gid];
  for (const auto& m : members) {
    if (m.first == node && m.second == qpn) return;
  }
  members.emplace_back(node, qpn);
}

bool Fabric::DetachMcast(const Gid& gid, int node, uint32_t qpn) {
  auto it = mcast_.find(gid);
  if (it == mcast_.end()) return false;
  auto& members = it->second;
  for (auto m = members.begin(); m != members.end(); ++m) {
    if (m->first == node && m->second == qpn) {
      members.erase(m);
      if (members.empty()) mcast_.erase(it);
      return true;
    }
  }
  return false;
}

int Fabric::McastGroupsOf(int node, uint32_t qpn) const {
  int groups = 0;
  for (const auto& [gid, members] : mcast_) {
    for (const auto& m : members) {
      if (m.first == node && m.second == qpn) ++groups;
    }
  }
  return groups;
}

void Fabric::DetachAll(int node, uint32_t qpn) {
  for (auto it = mcast_.begin(); it != mcast_.end();) {
    auto& members = it->second;
    for (auto m = members.begin(); m != members.end();) {
      m = (m->first == node && m->second == qpn) ? members.erase(m) : m + 1;
    }
    it = members.empty() ? mcast_.erase(it) : std::next(it);
  }
}

void Fabric::ForceQpError(int node, uint32_t qpn) {
  auto it = nodes_[node]->qps.find(qpn);
  if (it == nodes_[node]->qps.end()) return;
  QpCore& qp = *it->second;
  RecordLocalFault(node, qpn, "fault: QP forced to ERR");
  AsyncEvent ev;
  ev.type = AsyncEventType::kQpFatal;
  ev.qp_num = qpn;
  qp.pd->context->async_events.push_back(ev);
  if (qp.state != verbsim::QpState::kErr) EnterError(qp);
  cv_.notify_all();
}

void Fabric::ForceCqOverflow(const CqOverflow& o) {
  auto it = nodes_[o.node]->qps.find(o.qpn);
  if (it == nodes_[o.node]->qps.end()) return;
  CqState& cq = o.recv_cq ? *it->second->recv_cq : *it->second->send_cq;
  RecordLocalFault(o.node, o.qpn,
                   o.recv_cq ? "fault: receive CQ overflows (cqoverflow)"
                             : "fault: send CQ overflows (cqoverflow)");
  OverflowCq(cq);
  cv_.notify_all();
}

absl::Status Fabric::SetPortState(int node, bool up) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node < 0 || node >= num_nodes()) {
    return Errno(EINVAL, "no node %d (the fabric has %d)", node, num_nodes());
  }
  Node& n = *nodes_[node];
  if (n.port_down == !up) return absl::OkStatus();
  n.port_down = !up;
  RecordLocalFault(node, 0, up ? "port up" : "port down");
  AsyncEvent ev;
  ev.type = up ? AsyncEventType::kPortActive : AsyncEventType::kPortErr;
  ev.port_num = 1;
  for (const std::weak_ptr<ContextState>& w : n.contexts) {
    if (std::shared_ptr<ContextState> c = w.lock()) RaiseAsyncEvent(*c, ev);
  }
  cv_.notify_all();
  return absl::OkStatus();
}

void Fabric::CrashNode(int node) {
  Node& n = *nodes_[node];
  if (n.crashed) return;
  n.crashed = true;
  RecordLocalFault(node, 0, "fault: node crashed");
  std::vector<uint32_t> qpns;
  for (const auto& [qpn, qp] : n.qps) qpns.push_back(qpn);
  std::sort(qpns.begin(), qpns.end());
  for (uint32_t qpn : qpns) ForceQpError(node, qpn);
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

absl::Status Fabric::StartUdp() {
  if (!address_status_.ok()) return address_status_;
  const FabricOptions::Udp& u = options_.udp;
  if (u.base_port <= 0 || u.base_port + num_nodes() - 1 > 65535) {
    return Errno(EINVAL,
                 "UDP transport: base port %d with %d nodes leaves 1..65535",
                 u.base_port, num_nodes());
  }
  if (u.local_nodes.empty()) {
    return Errno(EINVAL, "UDP transport: no local node");
  }
  for (int i : u.local_nodes) {
    if (i < 0 || i >= num_nodes()) {
      return Errno(EINVAL, "UDP transport: local node %d is not one of 0..%d",
                   i, num_nodes() - 1);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (udp_ != nullptr) return Errno(EBUSY, "UDP transport already started");
  auto sockets = std::make_unique<UdpSockets>();
  if (absl::Status s = sockets->Open(u.base_port, u.local_nodes); !s.ok()) {
    return s;
  }
  // The clock goes on from the virtual time reached so far, in real time.
  real_start_ns_ = absl::GetCurrentTimeNanos() - now_ns_;
  udp_ = std::move(sockets);
  multi_threaded_ = true;
  progress_ = std::thread([this] { ProgressLoop(); });
  return absl::OkStatus();
}

void Fabric::ProgressLoop() {
  std::vector<UdpSockets::Datagram> datagrams;
  while (true) {
    int64_t sleep_ns;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_) return;
      SyncClock();
      for (const UdpSockets::Datagram& d : datagrams) {
        ReceiveDatagram(d.src_node, d.bytes);
      }
      datagrams.clear();
      while (!events_.empty() && events_.top().at_ns <= now_ns_) Step();
      // Sleep until the next event, at most 10 ms (Schedule wakes us for an
      // earlier one).
      sleep_ns = 10'000'000;
      if (!events_.empty()) {
        sleep_ns = std::min(sleep_ns, events_.top().at_ns - now_ns_);
      }
      progress_wake_ns_ = now_ns_ + sleep_ns;
      cv_.notify_all();
    }
    udp_->Wait(std::max<int64_t>(sleep_ns, 0), num_nodes(), &datagrams);
  }
}

void Fabric::ReceiveDatagram(int sender, const std::vector<uint8_t>& bytes) {
  absl::StatusOr<Packet> p =
      DecodeRoceV2Ip(bytes.data(), bytes.size(), options_.address_base);
  if (!p.ok()) {
    // A bad ICRC is the destination's to count (IBA 7.8.1), if the header
    // names one of our nodes; anything else is not a packet of the sim.
    const int dst =
        bytes.size() >= 20
            ? NodeOfIpv4(options_.address_base,
                         uint32_t{bytes[16]} << 24 | uint32_t{bytes[17]} << 16 |
                             uint32_t{bytes[18]} << 8 | bytes[19])
            : -1;
    if (absl::IsDataLoss(p.status()) && dst >= 0 && dst < num_nodes() &&
        !nodes_[dst]->remote) {
      ++nodes_[dst]->icrc_errors;
      ++nodes_[dst]->packets_dropped;
      RecordLocalFault(dst, 0, "bad ICRC (UDP datagram)");
    } else {
      ++udp_malformed_;
    }
    return;
  }
  if (p->dst_node >= num_nodes() || nodes_[p->dst_node]->remote ||
      p->src_node >= num_nodes()) {
    ++udp_malformed_;
    return;
  }
  // A packet whose source address names another node than the port that
  // sent it: one node posing as another.
  if (p->src_node != sender) {
    ++udp_foreign_;
    return;
  }
  // RC and UC carry only the destination QP: the source QP is the one the
  // receiving QP is connected to (IBA 9.7: the connection identifies it).
  if (p->transport != QpType::kUd) {
    auto it = nodes_[p->dst_node]->qps.find(p->dst_qpn);
    if (it != nodes_[p->dst_node]->qps.end() &&
        it->second->dest_node == p->src_node) {
      p->src_qpn = it->second->attr.dest_qp_num;
    }
  }
  Deliver(*std::move(p), false);
}

uint64_t Fabric::udp_foreign() {
  std::lock_guard<std::mutex> lock(mu_);
  return udp_foreign_ + (udp_ != nullptr ? udp_->foreign() : 0);
}

uint64_t Fabric::udp_malformed() {
  std::lock_guard<std::mutex> lock(mu_);
  return udp_malformed_;
}

}  // namespace verbsim::sim
