// Placement of RDMA write data at the responder, in a randomised order
// within what the spec allows, drawn from the fabric's seeded streams
// (Fabric::placement_rng and, for the weak memory model, memory_rng): the
// data of a write packet is placed in 64-byte chunks in random order over a
// few nanoseconds (ibv_query_qp_data_in_order(3): placement order inside a
// message is not guaranteed), always complete before the message is
// acknowledged. Where the profile places messages in order (MemoryModel), it
// is also complete before the next request of the QP executes; otherwise it
// may land after later writes' data until a send, read or atomic of the QP,
// a completion, an ACK or an overlapping write forces it out
// (docs/ordering.md rules W1-W3).
#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "sim/fabric.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

constexpr uint64_t kChunk = 64;

// Places the chunks of pending write `c`.
void Place(const PendingChunk& c) {
  for (uint32_t index : c.left) {
    const uint64_t off = uint64_t{index} * kChunk;
    const uint64_t n = std::min<uint64_t>(kChunk, c.bytes.size() - off);
    std::memcpy(reinterpret_cast<void*>(c.va + off), c.bytes.data() + off, n);
  }
}

// Once nothing is pending, what waited for the data runs, in order.
void RunAfterPlacement(QpCore& qp) {
  if (!qp.placements.empty() || qp.after_placement.empty()) return;
  auto then = std::move(qp.after_placement);
  qp.after_placement.clear();
  for (auto& fn : then) fn(qp);
}

// Places every pending write that is due.
void PlaceDue(QpCore& qp) {
  const int64_t now = qp.node->fabric->now_ns();
  for (auto it = qp.placements.begin(); it != qp.placements.end();) {
    if (it->due_ns <= now) {
      Place(*it);
      it = qp.placements.erase(it);
    } else {
      ++it;
    }
  }
  RunAfterPlacement(qp);
}

bool Overlaps(const QpCore& qp, uint64_t va, uint64_t len) {
  for (const PendingChunk& c : qp.placements) {
    if (va < c.va + c.bytes.size() && c.va < va + len) return true;
  }
  return false;
}

// A random subset of the packet's 64-byte chunks lands now, the rest a
// little later (within `spread` ns): any chunk, the last one included, may
// be seen before the others. Where messages may land out of order
// (MemoryModel), the rest may come after later writes' data.
template <typename Rng>
void PlaceInChunks(QpCore& qp, uint64_t va, Payload&& data,
                   Rng& rng, uint64_t spread) {
  Fabric* fabric = qp.node->fabric;
  const uint32_t chunks =
      static_cast<uint32_t>((data.size() + kChunk - 1) / kChunk);
  std::vector<uint32_t> order(chunks);
  for (uint32_t i = 0; i < chunks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  // (A single chunk here is one chosen to land late.)
  const uint32_t now_count =
      chunks == 1 ? 0 : static_cast<uint32_t>(rng() % (chunks + 1));
  for (uint32_t i = 0; i < now_count; ++i) {
    const uint64_t off = uint64_t{order[i]} * kChunk;
    const uint64_t n = std::min<uint64_t>(kChunk, data.size() - off);
    std::memcpy(reinterpret_cast<void*>(va + off), data.data() + off, n);
  }
  if (now_count == chunks) return;
  PendingChunk pending;
  pending.va = va;
  pending.bytes = std::move(data);
  pending.left.assign(order.begin() + now_count, order.end());
  pending.due_ns = fabric->now_ns() + 5 + static_cast<int64_t>(rng() % spread);
  const int64_t due = pending.due_ns;
  qp.placements.push_back(std::move(pending));
  const uint64_t generation = qp.placement_generation;
  Node* node = qp.node;
  const uint32_t qpn = qp.qpn;
  fabric->Schedule(due, [node, qpn, generation]() {
    QpCore* q = node->FindQp(qpn);
    if (q == nullptr || q->placement_generation != generation) return;
    PlaceDue(*q);
  });
}

}  // namespace

void PlaceWriteData(QpCore& qp, uint64_t va, Payload&& data) {
  Fabric* fabric = qp.node->fabric;
  if (data.empty()) return;
  const bool in_order = fabric->profile().memory.places_messages_in_order;
  // A later write to the same bytes wins (requests execute in order, IBA
  // 9.5): what an earlier one still has pending lands first.
  if (!in_order && Overlaps(qp, va, data.size())) {
    FlushPlacements(qp);
    // What waited for the flushed data ran and may have moved the QP to
    // ERR (a CQ overrun): then this packet's data does not land.
    if (qp.state == verbsim::QpState::kErr) return;
  }
  if (!fabric->options().randomize_schedule ||
      (data.size() <= kChunk &&
       (in_order || (fabric->memory_rng()() & 7) != 0))) {
    // One chunk lands whole: now, or (out of order, one time in eight) a
    // little later.
    std::memcpy(reinterpret_cast<void*>(va), data.data(), data.size());
    return;
  }
  if (in_order) {
    PlaceInChunks(qp, va, std::move(data), fabric->placement_rng(), 50);
  } else {
    PlaceInChunks(qp, va, std::move(data), fabric->memory_rng(), 1000);
  }
}

void AfterPlacement(QpCore& qp, std::function<void(QpCore&)> then) {
  if (qp.placements.empty()) {
    then(qp);
    return;
  }
  qp.after_placement.push_back(std::move(then));
}

void FlushPlacements(QpCore& qp) {
  if (qp.placements.empty()) return;
  ++qp.placement_generation;  // the scheduled events have nothing left to do
  while (!qp.placements.empty()) {
    PendingChunk c = std::move(qp.placements.front());
    qp.placements.pop_front();
    Place(c);
  }
  RunAfterPlacement(qp);
}

void DropPlacements(QpCore& qp) {
  ++qp.placement_generation;
  qp.placements.clear();
  qp.after_placement.clear();
}

}  // namespace verbsim::sim
