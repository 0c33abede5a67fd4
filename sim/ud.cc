// The UD transport (IBA 9.8.4, 10.2.x; kernel rxe rxe_req.c / rxe_resp.c):
// one packet per datagram, no acknowledgement, no retry. The receiver
// checks the Q_Key, needs a posted receive (none: the datagram is dropped,
// never RNR), and gets the 40-byte GRH first in its buffer.
#include <array>
#include <cstring>

#include "sim/fabric.h"
#include "sim/sg.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

constexpr uint32_t kGrhBytes = 40;

// The GRH area of a UD receive for RoCEv2 over IPv4, as rxe fills it: 20
// zero bytes, then the IPv4 header of the packet (docs/semantics.md section 5).
std::array<uint8_t, kGrhBytes> RoceV2Grh(const Gid& sgid, const Gid& dgid,
                                         const Packet& p) {
  std::array<uint8_t, kGrhBytes> g{};
  uint8_t* ip = g.data() + 20;
  const size_t pad = (4 - p.payload.size() % 4) % 4;
  // IPv4 + UDP + BTH + DETH (+ ImmDt) + payload + pad + ICRC.
  const size_t total = 20 + 8 + 12 + 8 + (HasImmediate(p.opcode) ? 4 : 0) +
                       p.payload.size() + pad + 4;
  ip[0] = 0x45;
  ip[1] = p.traffic_class;
  ip[2] = static_cast<uint8_t>(total >> 8);
  ip[3] = static_cast<uint8_t>(total);
  ip[6] = 0x40;  // don't fragment; identification 0
  ip[8] = p.hop_limit;
  ip[9] = 17;  // UDP
  std::memcpy(ip + 12, sgid.data() + 12, 4);
  std::memcpy(ip + 16, dgid.data() + 12, 4);
  const uint16_t sum = Ipv4Checksum(ip, 20);
  ip[10] = static_cast<uint8_t>(sum >> 8);
  ip[11] = static_cast<uint8_t>(sum);
  return g;
}

void Drop(QpCore& qp, const Packet& p, uint64_t& counter,
          absl::string_view why) {
  ++counter;
  ++qp.packets_dropped;
  qp.node->fabric->TracePacket(TraceKind::kDrop, p, why);
}

bool CanReceive(const QpCore& qp) {
  return qp.state == verbsim::QpState::kRtr ||
         qp.state == verbsim::QpState::kRts ||
         qp.state == verbsim::QpState::kSqd;
}

}  // namespace

WcStatus UdSend(QpCore& qp, SendWqe& w) {
  Fabric* fabric = qp.node->fabric;
  const SimProfile& profile = fabric->profile();
  Packet p;
  p.transport = QpType::kUd;
  p.opcode = w.opcode == WrOpcode::kSendWithImm ? RcOp::kSendOnlyImm
                                                : RcOp::kSendOnly;
  p.psn = qp.req_psn;
  qp.req_psn = PsnAdd(qp.req_psn, 1);
  p.solicited = (w.flags & kSendSolicited) != 0;
  p.imm = w.imm;
  // IBA 10.2.5: a remote Q_Key with the high bit set means "use the QP's".
  p.qkey = (w.remote_qkey & 0x80000000u) && profile.honours_controlled_qkey
               ? qp.attr.qkey
               : w.remote_qkey;
  p.traffic_class = w.ah->attr.traffic_class;
  p.hop_limit = profile.ipv4_ttl >= 0 ? static_cast<uint8_t>(profile.ipv4_ttl)
                                       : w.ah->attr.hop_limit;
  p.payload.Set(w.data.data(), w.data.size());
  p.src_node = qp.node->index;
  p.src_qpn = qp.qpn;
  // The message must fit the path MTU, the port's active MTU for UD.
  const size_t mtu = static_cast<size_t>(MtuBytes(profile.port.active_mtu));
  if (p.payload.size() > mtu) {
    ++qp.packets_dropped;
    fabric->TracePacket(TraceKind::kDrop, p, "UD message larger than the MTU");
    return profile.ud_oversize_status;
  }
  if (w.ah->dest_node >= 0) {
    ++qp.packets_sent;
    p.dst_node = w.ah->dest_node;
    p.dst_qpn = w.remote_qpn;
    fabric->Transmit(std::move(p));
    return WcStatus::kSuccess;
  }
  // A multicast group: one copy to every attached QP but the sender's own
  // (IBA 10.5.2.5: the QPN is 0xFFFFFF), in this process and, across
  // processes, the others' (Fabric::RouteMcast).
  const Fabric::McastRoute route = fabric->RouteMcast(w.ah->attr.dgid);
  if (!profile.delivers_multicast && route.ip_joined.empty()) {
    // Sent, and received by nobody (SimProfile::delivers_multicast).
    ++qp.packets_sent;
    return WcStatus::kSuccess;
  }
  for (const auto& [node, qpn] : route.members) {
    // A device that leaves multicast to the IP stack reaches a member only
    // where its node joined the group at the IP level, and then the
    // datagram the host loops back reaches the sending device's other
    // members too.
    const bool ip_joined = route.ip_joined.count(node) != 0;
    if (!profile.delivers_multicast && !ip_joined) continue;
    if (node == qp.node->index &&
        (qpn == qp.qpn ||
         (!profile.mcast_reaches_local_members && !ip_joined))) {
      continue;
    }
    ++qp.packets_sent;
    Packet copy = p;
    copy.dst_node = node;
    copy.dst_qpn = qpn;
    fabric->Transmit(std::move(copy));
  }
  return WcStatus::kSuccess;
}

void UdReceive(QpCore& qp, Packet& p) {
  Fabric* fabric = qp.node->fabric;
  if (!CanReceive(qp)) {
    Drop(qp, p, qp.msg_drops, "QP cannot receive");
    return;
  }
  if (p.qkey != qp.attr.qkey) {
    Drop(qp, p, qp.qkey_drops, "Q_Key mismatch");
    return;
  }
  if (!HasRecv(qp)) {
    Drop(qp, p, qp.no_recv_drops, "no receive posted");
    return;
  }
  const SimProfile& profile = fabric->profile();
  const uint64_t total = kGrhBytes + p.payload.size();
  const uint64_t capacity =
      qp.srq != nullptr ? qp.srq->wqes.front().capacity : qp.rq.front().capacity;
  if (total > capacity &&
      profile.ud_recv_too_small_status == WcStatus::kSuccess) {
    // The datagram does not fit: dropped, the receive stays posted.
    Drop(qp, p, qp.msg_drops, "UD receive too small");
    return;
  }
  RecvWqe r = TakeRecv(qp);
  if (total > r.capacity) {
    CompleteRecv(qp, r, profile.ud_recv_too_small_status, WcOpcode::kRecv, 0,
                 p);
    EnterError(qp);
    return;
  }
  if (CheckSgeRange(qp.node->keys, qp.pd.get(), r.sges, 0, total,
                    kAccessLocalWrite) != AccessResult::kOk) {
    CompleteRecv(qp, r, profile.recv_access_status, WcOpcode::kRecv, 0, p);
    EnterError(qp);
    return;
  }
  const Node* src = fabric->node(p.src_node);
  const auto grh = RoceV2Grh(src->gid, qp.node->gid, p);
  ScatterTo(r.sges, 0, grh.data(), kGrhBytes);
  ScatterTo(r.sges, kGrhBytes, p.payload.data(), p.payload.size());
  CompleteRecv(qp, r, WcStatus::kSuccess, WcOpcode::kRecv, total, p, kWcGrh);
}

}  // namespace verbsim::sim
