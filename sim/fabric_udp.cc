// The fabric across processes: RoCEv2 datagrams over loopback UDP
// (docs/udp-transport.md). A progress thread runs the events due by the wall
// clock and receives datagrams for this process's nodes.
#include <algorithm>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "sim/fabric.h"
#include "sim/mcast_presence.h"
#include "sim/peer_liveness.h"
#include "sim/transport.h"
#include "sim/udp_transport.h"
#include "sim/wire.h"

namespace verbsim::sim {

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
  if (absl::Status s = sockets->Open(u.base_port, num_nodes(), u.local_nodes);
      !s.ok()) {
    return s;
  }
  // The QPNs this process makes carry its slot, so that every process on
  // a node makes different ones and a packet's QPN names its process.
  process_slot_ = sockets->slot();
  const uint32_t first_qpn =
      (static_cast<uint32_t>(process_slot_) << kQpnSlotShift) | 17;
  for (auto& n : nodes_) {
    n->next_qpn = std::max(n->next_qpn, first_qpn);
    n->keys.set_process_slot(process_slot_);
  }
  // The clock goes on from the virtual time reached so far, in real time.
  real_start_ns_ = absl::GetCurrentTimeNanos() - now_ns_;
  udp_ = std::move(sockets);
  mcast_presence_ =
      std::make_unique<McastPresence>(absl::StrCat("udp", u.base_port));
  StartLiveness();
  multi_threaded_ = true;
  progress_ = std::thread([this] { ProgressLoop(); });
  has_progress_thread_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void Fabric::ProgressLoop() {
  while (true) {
    // Datagrams first, then the events due: an ACK that came while this
    // process was not running is seen before a timer that expired meanwhile
    // runs (docs/udp-transport.md, "Time and progress").
    PumpUdp(/*wait=*/true);
    int64_t sleep_ns;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_) return;
      SyncClock();
      while (!events_.empty() && events_.top_at_ns() <= now_ns_) Step();
      // Sleep until the next event, at most 10 ms (Schedule wakes us for an
      // earlier one).
      sleep_ns = 10'000'000;
      if (!events_.empty()) {
        sleep_ns = std::min(sleep_ns, events_.top_at_ns() - now_ns_);
      }
      progress_wake_ns_ = now_ns_ + sleep_ns;
      cv_.notify_all();
    }
    // While the application polls, its polls take the datagrams
    // (PumpUdp): a wake-up of this thread for each one would only take a
    // core from it. This thread then sleeps until its next event, Wake, or
    // the end of the window, and watches the sockets again once the polls
    // stop.
    const int64_t since_app_ns =
        MonotonicNs() - app_pumped_ns_.load(std::memory_order_relaxed);
    if (since_app_ns < kAppPumpWindowNs) {
      udp_->WaitReadable(
          std::clamp<int64_t>(sleep_ns, 0, kAppPumpWindowNs - since_app_ns),
          /*sockets=*/false);
    } else {
      udp_->WaitReadable(std::max<int64_t>(sleep_ns, 0));
    }
  }
}

bool Fabric::PumpUdp(bool wait) {
  if (!has_progress_thread()) return false;
  // One receiver at a time takes datagrams and delivers them, so the
  // packets of a flow are delivered in the order they came.
  std::unique_lock<std::mutex> rx(rx_mu_, std::defer_lock);
  if (wait) {
    rx.lock();
  } else if (!rx.try_lock()) {
    return false;
  }
  static thread_local std::vector<UdpSockets::Datagram> datagrams;
  datagrams.clear();
  const int64_t began_ns = MonotonicNs();
  if (!wait) app_pumped_ns_.store(began_ns, std::memory_order_relaxed);
  udp_->Drain(&datagrams);
  // Fewer than a batch in all: no socket stopped at its batch, each was
  // read until it was empty.
  const bool emptied =
      datagrams.size() < static_cast<size_t>(UdpSockets::kDrainBatch);
  if (datagrams.empty()) {
    NoteDrained(began_ns, emptied);
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  SyncClock();
  for (const UdpSockets::Datagram& d : datagrams) {
    ReceiveDatagram(d.src_node, absl::MakeConstSpan(d.data.get(), d.size));
  }
  // Under the lock: a timer that runs next sees the deliveries and the
  // drain together.
  NoteDrained(began_ns, emptied);
  datagrams.clear();
  cv_.notify_all();
  return true;
}

void Fabric::ReceiveDatagram(int sender, absl::Span<const uint8_t> bytes) {
  // One or more packets (UdpBatch); a rest that is no packet is malformed.
  if (bytes.empty() || !ForEachPacketOfDatagram(bytes, [&](const uint8_t* ip, size_t len) {
        ReceivePacket(sender, ip, len);
      })) {
    ++udp_malformed_;
  }
}

void Fabric::ReceivePacket(int sender, const uint8_t* bytes, size_t len) {
  absl::StatusOr<Packet> p = DecodeRoceV2Ip(bytes, len, options_.address_base);
  if (!p.ok()) {
    // A bad ICRC is the destination's to count (IBA 7.8.1), if the header
    // names one of our nodes; anything else is not a packet of the sim.
    const int dst =
        len >= 20
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

void Fabric::AbandonAfterFork() {
  if (udp_ == nullptr) return;
  udp_->CloseAfterFork();
  if (mcast_presence_ != nullptr) mcast_presence_->ForgetAfterFork();
  has_progress_thread_.store(false, std::memory_order_release);
}

void Fabric::LockForFork() {
  rx_mu_.lock();
  mu_.lock();
}

void Fabric::UnlockAfterFork() {
  mu_.unlock();
  rx_mu_.unlock();
}

void Fabric::UnlockInChildAfterFork() {
  // The child has the forking thread only: no turn asked for, no thread
  // waiting, none holding (fabric_lock.cc).
  lock_turn_.store(0, std::memory_order_relaxed);
  lock_waiters_.store(0, std::memory_order_relaxed);
  lock_holder_.store(0, std::memory_order_relaxed);
  lock_state_.store(0, std::memory_order_relaxed);
  callers_ = 0;  // the parent's threads inside calls are not the child's
  UnlockAfterFork();
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
