// The fabric's queue of scheduled events, ordered by virtual time and, at
// equal times, by the order they were scheduled. A packet on its way to its
// destination (the commonest event by far) is a typed entry whose packet
// waits in a slot of a pool; anything else is a function. The heap holds
// only small fixed-size entries, so scheduling a packet allocates nothing
// once the pool has grown to the number of packets in flight.
#ifndef VERBSIM_SIM_EVENT_QUEUE_H_
#define VERBSIM_SIM_EVENT_QUEUE_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "sim/packet.h"

namespace verbsim::sim {

class EventQueue {
 public:
  enum class Kind : uint8_t {
    kCall,           // a function
    kArrive,         // a packet reaches the end of its link
    kArriveCorrupt,  // the same, with a payload bit flipped on the way
  };
  // The earliest event, as Pop hands it out.
  struct Head {
    int64_t at_ns;
    Kind kind;
    uint32_t slot;
  };

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // The time of the earliest event; the queue must not be empty.
  int64_t top_at_ns() const { return heap_.front().at_ns; }
  // Events pushed so far (those popped are pushed() - size()).
  uint64_t pushed() const { return next_seq_; }

  void PushCall(int64_t at_ns, std::function<void()> fn) {
    Push(at_ns, Kind::kCall, Take(&calls_, &free_calls_, std::move(fn)));
  }
  void PushArrival(int64_t at_ns, Packet&& packet, bool corrupt) {
    uint32_t slot;
    if (free_packets_.empty()) {
      slot = packets_.Grow();
    } else {
      slot = free_packets_.back();
      free_packets_.pop_back();
    }
    packets_[slot] = std::move(packet);
    Push(at_ns, corrupt ? Kind::kArriveCorrupt : Kind::kArrive, slot);
  }

  // Removes the earliest event from the queue. A function is moved out
  // with TakeCall; a packet stays in its slot (where packet() finds it, at
  // the same address while more packets are pushed) until ReleasePacket.
  Head Pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later());
    const Entry e = heap_.back();
    heap_.pop_back();
    return Head{e.at_ns, e.kind, e.slot};
  }
  std::function<void()> TakeCall(uint32_t slot) {
    std::function<void()> fn = std::move(calls_[slot]);
    calls_[slot] = nullptr;
    free_calls_.push_back(slot);
    return fn;
  }
  Packet& packet(uint32_t slot) { return packets_[slot]; }
  void ReleasePacket(uint32_t slot) { free_packets_.push_back(slot); }

 private:
  struct Entry {
    int64_t at_ns;
    uint64_t seq;
    uint32_t slot;
    Kind kind;
  };
  // std::*_heap keep the greatest first: "greater" is the earlier event.
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.at_ns != b.at_ns ? a.at_ns > b.at_ns : a.seq > b.seq;
    }
  };

  template <typename Pool, typename T>
  static uint32_t Take(Pool* pool, std::vector<uint32_t>* free, T&& value) {
    if (free->empty()) {
      pool->push_back(std::move(value));
      return static_cast<uint32_t>(pool->size() - 1);
    }
    const uint32_t slot = free->back();
    free->pop_back();
    (*pool)[slot] = std::move(value);
    return slot;
  }

  void Push(int64_t at_ns, Kind kind, uint32_t slot) {
    heap_.push_back(Entry{at_ns, next_seq_++, slot, kind});
    std::push_heap(heap_.begin(), heap_.end(), Later());
  }

  std::vector<Entry> heap_;
  uint64_t next_seq_ = 0;
  std::vector<std::function<void()>> calls_;
  std::vector<uint32_t> free_calls_;
  // Packets in chunks of a fixed power-of-two size: a slot never moves,
  // and finding one is a shift and a mask.
  class PacketPool {
   public:
    Packet& operator[](uint32_t slot) {
      return chunks_[slot >> kChunkBits][slot & (kChunk - 1)];
    }
    // A new slot at the end.
    uint32_t Grow() {
      if (size_ % kChunk == 0) {
        chunks_.push_back(std::make_unique<Packet[]>(kChunk));
      }
      return size_++;
    }

   private:
    static constexpr uint32_t kChunkBits = 6;
    static constexpr uint32_t kChunk = 1u << kChunkBits;
    std::vector<std::unique_ptr<Packet[]>> chunks_;
    uint32_t size_ = 0;
  };
  PacketPool packets_;
  std::vector<uint32_t> free_packets_;
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_EVENT_QUEUE_H_
