// The link between simulated HCAs: a packet leaves its QP (TransmitFrom),
// is serialised and delayed by the link model, meets the fault rules
// (fault_injection.cc), arrives (where a late gather or read fetches its
// payload), and is delivered to the destination QP's responder or completer.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "core/errors.h"
#include "sim/fabric.h"
#include "sim/peer_liveness.h"
#include "sim/transport.h"
#include "sim/udp_transport.h"
#include "sim/wire.h"

namespace verbsim::sim {

uint32_t PacketPayloadBytes(const QpCore& qp, WrOpcode opcode) {
  const uint32_t segment = qp.node->fabric->profile().iwarp.tcp_segment_bytes;
  if (segment > 0) {
    // siw's iwarp.h: struct iwarp_send (untagged) and iwarp_rdma_write /
    // iwarp_rdma_rresp (tagged); then the MPA CRC field.
    constexpr uint32_t kUntaggedHeader = 20, kTaggedHeader = 16, kCrc = 4;
    const bool untagged = opcode == WrOpcode::kSend ||
                          opcode == WrOpcode::kSendWithImm ||
                          opcode == WrOpcode::kSendWithInv;
    return segment - (untagged ? kUntaggedHeader : kTaggedHeader) - kCrc;
  }
  int bytes = MtuBytes(qp.attr.path_mtu);
  return bytes > 0 ? static_cast<uint32_t>(bytes) : 1024;
}

void TransmitFrom(QpCore& qp, Packet&& packet) {
  ++qp.packets_sent;
  packet.src_node = qp.node->index;
  packet.src_qpn = qp.qpn;
  packet.dst_node = qp.dest_node;
  packet.dst_qpn = qp.attr.dest_qp_num;
  Fabric* fabric = qp.node->fabric;
  fabric->Transmit(std::move(packet), &qp.link_flow);
  // Across processes: when the QP's latest packet left (taken after the
  // send), what its ACK timer asks the peer's liveness slot about.
  if (fabric->real_time()) qp.udp_sent_ns = MonotonicNs();
}

void Fabric::TracePacket(TraceKind kind, const Packet& p,
                         absl::string_view note) {
  TraceFields r;
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
  trace_.Record(r, note);
}

void Fabric::Transmit(Packet&& packet, LinkFlowCache* cache) {
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
  // The QP's cache holds the entries of its latest peer QP; another peer
  // (a reconnected QP) looks them up again.
  if (cache != nullptr && (cache->dst_node != packet.dst_node ||
                           cache->dst_qpn != packet.dst_qpn ||
                           cache->link_free_ns == nullptr)) {
    cache->dst_node = packet.dst_node;
    cache->dst_qpn = packet.dst_qpn;
    cache->link_free_ns = &link_free_ns_[{packet.src_node, packet.dst_node}];
    cache->flow_last_ns = &flow_last_ns_[{packet.src_node, packet.src_qpn,
                                          packet.dst_node, packet.dst_qpn}];
  }
  int64_t& free_ns =
      cache != nullptr ? *cache->link_free_ns
                       : link_free_ns_[{packet.src_node, packet.dst_node}];
  const int64_t start = std::max(now_ns_, free_ns);
  free_ns = start + serialise_ns;
  int64_t arrive = free_ns + LatencyNs(link);
  // An iWARP FPDU rides a TCP stream, which cuts it to the link's MTU
  // itself: only an InfiniBand or RoCE packet can be too long for a link.
  const bool rides_tcp = profile().iwarp.tcp_segment_bytes > 0;
  if (!rides_tcp && PayloadLength(packet) > static_cast<size_t>(link.mtu)) {
    if (keep_packets_) captured_.push_back({now_ns_, packet, true});
    Schedule(arrive, [this, p = std::move(packet)]() {
      TracePacket(TraceKind::kDrop, p, "larger than the link MTU");
    });
    return;
  }
  const int64_t jitter = jitter_ns_;
  if (jitter > 0) {
    arrive += static_cast<int64_t>(streams_.jitter() %
                                   static_cast<uint64_t>(jitter + 1));
  }

  int64_t extra_ns = 0;
  int copies = 1;
  bool corrupt = false;
  bool bypass_fifo = false;
  std::string lost;  // why the packet is lost, if it is
  // (Most fabrics have no fault rule and no node down: no call then.)
  const bool go_on =
      (nodes_down_ == 0 && faults_.links.empty() && faults_.packets.empty()) ||
      ApplyPacketFaults(packet, &extra_ns, &copies, &corrupt, &bypass_fifo,
                        &lost);
  if (keep_packets_) captured_.push_back({now_ns_, packet, !go_on});
  if (!go_on) {
    // Recorded when it would have arrived, so the trace reads as a timeline.
    Schedule(arrive, [this, p = std::move(packet), note = std::move(lost)]() {
      TracePacket(TraceKind::kDrop, p, note);
    });
    return;
  }
  // One QP's packets to one QP stay in order unless a fault reorders them.
  int64_t& flow_ns =
      cache != nullptr ? *cache->flow_last_ns
                       : flow_last_ns_[{packet.src_node, packet.src_qpn,
                                        packet.dst_node, packet.dst_qpn}];
  if (!bypass_fifo) {
    arrive = std::max(arrive, flow_ns);
    flow_ns = arrive;
  }
  arrive += extra_ns;
  if (extra_ns == 0 && copies == 1 && LeavesProcess(packet)) {
    // UDP transport: the datagram leaves now; the wire (loopback) is the
    // latency. Only a delay or duplicate fault holds it in the event queue.
    Arrive(std::move(packet), corrupt);
    return;
  }
  for (int i = 1; i < copies; ++i) {
    Packet copy = packet;
    ScheduleArrival(arrive + i * serialise_ns, std::move(copy), corrupt);
  }
  ScheduleArrival(arrive, std::move(packet), corrupt);
}

bool Fabric::LeavesProcess(const Packet& packet) const {
  // A fabric made without the UDP transport has no remote node and never
  // starts it (StartUdp needs a base port).
  if (options_.udp.base_port == 0) return false;
  if (packet.dst_node < 0 || packet.dst_node >= num_nodes()) return false;
  if (nodes_[packet.dst_node]->remote) return true;
  return udp_ != nullptr && QpnSlot(packet.dst_qpn) != process_slot_;
}

void Fabric::Arrive(Packet&& packet, bool corrupt) {
  if (packet.deferred_len != 0) {
    // The sender's device reads the payload now (sim/packet.h).
    Node* src = nodes_[packet.src_node].get();
    QpCore* qp = src->FindQp(packet.src_qpn);
    const bool read = qp != nullptr && (packet.deferred_wqe != 0
                                            ? GatherDeferred(*qp, packet)
                                            : FetchDeferredRead(*qp, packet));
    if (!read) {
      TracePacket(TraceKind::kDrop, packet, "its source memory is gone");
      return;
    }
  }
  if (!LeavesProcess(packet)) {
    Deliver(std::move(packet), corrupt);
    return;
  }
  // The packet leaves this process: RoCEv2 over UDP, encoded straight into
  // the datagram of its port while a UdpBatch is open. A corrupt fault
  // flips a payload bit after the ICRC is computed, so the receiver's ICRC
  // check catches it (as a NIC's would).
  const int slot = QpnSlot(packet.dst_qpn);
  if (udp_batch_depth_ == 0) {
    std::vector<uint8_t> bytes =
        EncodeRoceV2Ip(packet, ip_id_++, options_.address_base);
    if (corrupt) bytes[bytes.size() - 5] ^= 0x01;
    if (!udp_->Send(packet.src_node, packet.dst_node, slot, bytes)) {
      TracePacket(TraceKind::kDrop, packet, "UDP send failed");
    }
    return;
  }
  std::vector<uint8_t>& datagram = PendingDatagramFor(
      packet.src_node, packet.dst_node, slot, RoceV2IpLength(packet));
  AppendRoceV2Ip(packet, ip_id_++, options_.address_base, &datagram);
  if (corrupt) datagram[datagram.size() - 5] ^= 0x01;
}

std::vector<uint8_t>& Fabric::PendingDatagramFor(int src, int dst, int slot,
                                                 size_t room) {
  for (PendingDatagram& d : udp_pending_) {
    if (d.src != src || d.dst != dst || d.dst_slot != slot) continue;
    if (d.bytes.size() + room > kMaxDatagramBytes) {
      SendPending(d);
      d.bytes.clear();
    }
    return d.bytes;
  }
  udp_pending_.push_back({src, dst, slot, {}});
  // Room for a whole datagram: packets are appended without a move.
  udp_pending_.back().bytes.reserve(kMaxDatagramBytes);
  return udp_pending_.back().bytes;
}

void Fabric::FlushUdpBatch() {
  for (const PendingDatagram& d : udp_pending_) SendPending(d);
  udp_pending_.clear();
}

void Fabric::SendPending(const PendingDatagram& d) {
  if (d.bytes.empty() || udp_->Send(d.src, d.dst, d.dst_slot, d.bytes)) {
    return;
  }
  // Refused (a full socket buffer): each of its packets is lost.
  ForEachPacketOfDatagram(d.bytes, [&](const uint8_t* ip, size_t len) {
    absl::StatusOr<Packet> p = DecodeRoceV2Ip(ip, len, options_.address_base);
    if (p.ok()) TracePacket(TraceKind::kDrop, *p, "UDP send failed");
  });
}

void Fabric::Deliver(Packet&& packet, bool corrupt) {
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
  QpCore* qp = dst->FindQp(packet.dst_qpn);
  if (qp == nullptr) {
    ++dst->packets_dropped;
    TracePacket(TraceKind::kDrop, packet, "no such QP");
    return;
  }
  ++dst->packets_received;
  ++qp->packets_received;
  TracePacket(TraceKind::kDeliver, packet);
  if (IsRequest(packet.opcode)) {
    ResponderReceive(*qp, packet);
  } else {
    CompleterReceive(*qp, packet);
  }
}

int64_t Fabric::AnswerDueNs(int src, int dst) const {
  const LinkModel& link = LinkBetween(src, dst);
  const int64_t one_way = absl::ToInt64Nanoseconds(link.latency) +
                          absl::ToInt64Nanoseconds(options_.jitter);
  auto free_at = [&](int a, int b) {
    auto it = link_free_ns_.find({a, b});
    return it == link_free_ns_.end() ? now_ns_
                                     : std::max(now_ns_, it->second);
  };
  const int64_t arrive = free_at(src, dst) + one_way;
  // The answer: headers only (about 58 bytes), after what the way back
  // already carries.
  const int64_t back = std::max(arrive, free_at(dst, src)) +
                       static_cast<int64_t>(58 * 8.0 / link.gbit_per_s);
  return back + one_way + 1000;
}

int64_t Fabric::LatencyNs(const LinkModel& link) const {
  return &link == &options_.link ? default_latency_ns_
                                 : absl::ToInt64Nanoseconds(link.latency);
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

}  // namespace verbsim::sim
