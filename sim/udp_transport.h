// The UDP link transport: the sim's packets to nodes of other processes as
// RoCEv2 datagrams on loopback (sim/wire.h encoding, the IPv4 packet as the
// UDP payload), one socket per local node.
//
// Address scheme (docs/udp-transport.md): every process builds a fabric of
// the same `nodes`, the same base port and the same address base; node i
// (GID ::ffff:<base + i>, as in-process, sim/addresses.h) listens on
// 127.0.0.1:<base_port + i>. Each process says
// which nodes are its own; the others are placeholders that only hold a GID.
//
// Several processes may own one node, as several processes open one HCA:
// each process takes a process slot s (the first one whose ports are free),
// its node i listens on 127.0.0.1:<base_port + s * nodes + i>, and the QPNs it
// makes carry s in their top bits (QpnSlot), so a packet's destination QPN
// names the process, and the port, it goes to.
#ifndef VERBSIM_SIM_UDP_TRANSPORT_H_
#define VERBSIM_SIM_UDP_TRANSPORT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <netinet/in.h>

#include "absl/status/status.h"

namespace verbsim::sim {

// 127.0.0.1:`port`, the only address the UDP transport binds or sends to.
sockaddr_in LoopbackAddress(int port);

// Processes that can share one node, and the QPN bits that say which.
inline constexpr int kMaxProcessSlots = 16;
inline constexpr int kQpnSlotShift = 16;
// The largest UDP payload over IPv4 (65,535 less the IPv4 and UDP headers).
inline constexpr size_t kMaxDatagramBytes = 65507;

// The process slot a QPN was made in (the multicast QPN has none: 0).
inline int QpnSlot(uint32_t qpn) {
  return qpn == 0xffffff ? 0 : static_cast<int>(qpn >> kQpnSlotShift);
}
// The port of node `node` in process slot `slot`.
inline int SlotPort(int base_port, int fabric_nodes, int node, int slot) {
  return base_port + slot * fabric_nodes + node;
}

class UdpSockets {
 public:
  UdpSockets() = default;
  UdpSockets(const UdpSockets&) = delete;
  UdpSockets& operator=(const UdpSockets&) = delete;
  ~UdpSockets();

  // Takes the first process slot whose ports are all free: binds
  // 127.0.0.1:SlotPort(base_port, fabric_nodes, n, slot) for each local node
  // n, plus an eventfd that Wake() signals. With every slot taken (or
  // another bind error) the error names the port; nothing stays open on
  // failure.
  absl::Status Open(int base_port, int fabric_nodes,
                    const std::vector<int>& local_nodes);
  // The process slot Open took.
  int slot() const { return slot_; }
  // Sends `bytes` from local node `src`'s socket to node `dst`'s port in
  // process slot `dst_slot`. Returns false when the kernel refused it (the
  // packet is lost).
  bool Send(int src, int dst, int dst_slot, const std::vector<uint8_t>& bytes);
  // After fork(), in the child: closes the sockets this object holds (they
  // are the parent's ports) without touching anything else.
  void CloseAfterFork();
  // A datagram and the node whose port sent it: `size` bytes at `data`.
  struct Datagram {
    int src_node = -1;
    std::unique_ptr<uint8_t[]> data;
    size_t size = 0;
  };
  // Waits up to `timeout_ns` (or until Wake) for a datagram to be ready;
  // with `sockets` false, for Wake or the time only.
  void WaitReadable(int64_t timeout_ns, bool sockets = true);
  // Appends, without waiting, every datagram that is ready and was sent
  // from 127.0.0.1 by the port of one of the fabric's nodes in any process
  // slot; the others are dropped and counted (foreign()). Datagrams longer
  // than 64 KiB cannot exist on UDP. Two threads may drain at once; each
  // datagram goes to one of them. At most kDrainBatch datagrams a socket
  // per call, so that one busy peer does not keep the others waiting.
  static constexpr int kDrainBatch = 256;
  void Drain(std::vector<Datagram>* out);
  // Datagrams dropped because no node of the fabric sent them.
  uint64_t foreign() const { return foreign_.load(std::memory_order_relaxed); }
  // Makes a Wait in progress (or the next one) return at once.
  void Wake();

 private:
  int base_port_ = 0;
  int fabric_nodes_ = 0;
  int slot_ = 0;
  std::vector<int> fds_;    // one per local node
  std::vector<int> nodes_;  // the node of fds_[i]
  int wake_fd_ = -1;
  std::atomic<uint64_t> foreign_{0};
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_UDP_TRANSPORT_H_
