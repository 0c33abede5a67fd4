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
#include <memory>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "sim/fabric.h"
#include "sim/random_order.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

constexpr uint64_t kChunk = 64;

using ChunkMask = absl::InlinedVector<uint64_t, 1>;

// Copies the chunks of `bytes` whose bits are set in `mask` to `va`, a run
// of neighbouring chunks at a time. The order of the copies is not seen:
// they all land within one event.
void CopyChunks(uint64_t va, const Payload& bytes, const ChunkMask& mask) {
  for (size_t w = 0; w < mask.size(); ++w) {
    uint64_t bits = mask[w];
    while (bits != 0) {
      const int first = __builtin_ctzll(bits);
      const uint64_t from_first = bits >> first;
      const int run = from_first == ~uint64_t{0}
                          ? 64 - first
                          : __builtin_ctzll(~from_first);
      const uint64_t off = (uint64_t{w} * 64 + first) * kChunk;
      const uint64_t end = std::min<uint64_t>(
          off + static_cast<uint64_t>(run) * kChunk, bytes.size());
      std::memcpy(reinterpret_cast<void*>(va + off), bytes.data() + off,
                  end - off);
      bits = run == 64 ? 0 : bits & ~(((uint64_t{1} << run) - 1) << first);
    }
  }
}

// Places the chunks of pending write `c`.
void Place(const PendingChunk& c) { CopyChunks(c.va, c.bytes, c.left); }

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
      if (it == qp.placements.begin()) {
        qp.placements.pop_front();
        it = qp.placements.begin();
      } else {
        it = qp.placements.erase(it);
      }
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
  // Which chunks land now (the rest land later) is what the draws decide.
  // (A single chunk here is one chosen to land late.)
  ChunkMask now_mask((chunks + 63) / 64, 0);
  uint32_t now_count = 0;
  if (chunks > 64) {
    // The first now_count chunks of a random order land now.
    std::unique_ptr<uint32_t[]> order(new uint32_t[chunks]);
    for (uint32_t i = 0; i < chunks; ++i) order[i] = i;
    RandomOrder(order.get(), chunks, rng);
    now_count = static_cast<uint32_t>(rng() % (chunks + 1));
    for (uint32_t i = 0; i < now_count; ++i) {
      now_mask[order[i] / 64] |= uint64_t{1} << (order[i] % 64);
    }
  } else if (chunks > 1) {
    // Every packet up to 4 KiB: the same draws, without the order.
    now_mask[0] = ChunksLandingNow(rng, chunks);
    now_count = static_cast<uint32_t>(__builtin_popcountll(now_mask[0]));
  }
  CopyChunks(va, data, now_mask);
  if (now_count == chunks) return;
  PendingChunk pending;
  pending.va = va;
  pending.bytes = std::move(data);
  pending.left = std::move(now_mask);
  for (uint64_t& word : pending.left) word = ~word;
  if (chunks % 64 != 0) {
    pending.left.back() &= (uint64_t{1} << (chunks % 64)) - 1;
  }
  pending.due_ns = fabric->now_ns() + 5 + static_cast<int64_t>(rng() % spread);
  const int64_t due = pending.due_ns;
  qp.placements.push_back(std::move(pending));
  // The event's capture fits std::function's inline storage (16 bytes):
  // the QP number and the low half of the generation, which cannot wrap
  // within the microsecond the event waits.
  const uint64_t qpn_generation =
      uint64_t{qp.qpn} << 32 | static_cast<uint32_t>(qp.placement_generation);
  Node* node = qp.node;
  fabric->Schedule(due, [node, qpn_generation]() {
    QpCore* q = node->FindQp(static_cast<uint32_t>(qpn_generation >> 32));
    if (q == nullptr || static_cast<uint32_t>(q->placement_generation) !=
                            static_cast<uint32_t>(qpn_generation)) {
      return;
    }
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
