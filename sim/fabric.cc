#include "sim/fabric.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "sim/transport.h"

namespace verbsim::sim {

Fabric::Fabric(FabricOptions options)
    : options_(std::move(options)) {
  for (int i = 0; i < options_.nodes; ++i) {
    auto node = std::make_unique<Node>();
    node->fabric = this;
    node->index = i;
    node->name = absl::StrCat("sim", i);
    // IPv4-mapped GID of 10.<hi>.<lo>.<n> for RoCEv2 over IPv4.
    node->gid[10] = 0xff;
    node->gid[11] = 0xff;
    node->gid[12] = 10;
    node->gid[13] = static_cast<uint8_t>(((i + 1) >> 16) & 0xff);
    node->gid[14] = static_cast<uint8_t>(((i + 1) >> 8) & 0xff);
    node->gid[15] = static_cast<uint8_t>((i + 1) & 0xff);
    nodes_.push_back(std::move(node));
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
  r.length = static_cast<uint32_t>(p.payload.size());
  r.note = std::string(note);
  trace_.Record(std::move(r));
}

void Fabric::Transmit(Packet packet) {
  ++packets_sent_;
  TracePacket(TraceKind::kTransmit, packet);
  // Headers: about 58 bytes on RoCEv2 (Eth, IPv4, UDP, BTH, ICRC, FCS).
  const double bytes = static_cast<double>(packet.payload.size() + 58);
  const int64_t serialise_ns =
      static_cast<int64_t>(bytes * 8.0 / options_.gbit_per_s);
  int64_t& free_ns = link_free_ns_[{packet.src_node, packet.dst_node}];
  const int64_t start = std::max(now_ns_, free_ns);
  free_ns = start + serialise_ns;
  const int64_t arrive =
      free_ns + absl::ToInt64Nanoseconds(options_.latency);
  Schedule(arrive, [this, p = std::move(packet)]() { Deliver(p); });
}

void Fabric::Deliver(const Packet& packet) {
  if (packet.dst_node < 0 || packet.dst_node >= num_nodes()) {
    TracePacket(TraceKind::kDrop, packet, "no route");
    return;
  }
  Node* dst = nodes_[packet.dst_node].get();
  auto it = dst->qps.find(packet.dst_qpn);
  if (it == dst->qps.end()) {
    TracePacket(TraceKind::kDrop, packet, "no such QP");
    return;
  }
  TracePacket(TraceKind::kDeliver, packet);
  Packet copy = packet;
  if (IsRequest(packet.opcode)) {
    ResponderReceive(*it->second, copy);
  } else {
    CompleterReceive(*it->second, copy);
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

void Fabric::NoteThread() {
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
  NoteThread();
  const int64_t budget =
      std::max<int64_t>(0, absl::ToInt64Nanoseconds(timeout));
  bool real_time = false;
  int64_t limit = now_ns_ + budget;
  const absl::Time real_deadline =
      blocking ? absl::Now() + timeout : absl::InfinitePast();
  uint64_t steps = 0;
  while (true) {
    if (done()) return true;
    if (blocking && !real_time &&
        (multi_threaded_ || callers_.load(std::memory_order_relaxed) > 1)) {
      multi_threaded_ = true;
      real_time = true;
      limit = INT64_MAX;
    }
    if (!events_.empty()) {
      if (events_.top().at_ns <= limit) {
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
      now_ns_ = limit;  // the wait used up its virtual budget
      return done();
    }
    // Idle: only another thread can change anything now.
    if (!blocking || absl::Now() >= real_deadline) return false;
    cv_.wait_until(lock, absl::ToChronoTime(real_deadline));
  }
}

bool Fabric::RunUntilIdle(absl::Duration max_virtual) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t limit = now_ns_ + absl::ToInt64Nanoseconds(max_virtual);
  while (!events_.empty() && events_.top().at_ns <= limit) Step();
  bool idle = events_.empty();
  if (!idle) now_ns_ = std::max(now_ns_, limit);
  cv_.notify_all();
  return idle;
}

void Fabric::RunFor(absl::Duration d) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t limit = now_ns_ + absl::ToInt64Nanoseconds(d);
  while (!events_.empty() && events_.top().at_ns <= limit) Step();
  now_ns_ = std::max(now_ns_, limit);
  cv_.notify_all();
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

absl::Duration Fabric::Now() {
  std::lock_guard<std::mutex> lock(mu_);
  return absl::Nanoseconds(now_ns_);
}

}  // namespace verbsim::sim
