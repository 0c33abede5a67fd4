// Fault injection on the fabric: packet rules applied as a packet is
// transmitted, link and node failures, forced QP errors and CQ overruns, and
// the local faults of registrations and posts (sim/faults.h parses the rules;
// docs/faults.md).
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "sim/fabric.h"
#include "sim/transport.h"

namespace verbsim::sim {

bool Fabric::ApplyPacketFaults(const Packet& p, int64_t* extra_ns,
                               int* copies, bool* corrupt, bool* bypass_fifo,
                               std::string* lost) {
  if (nodes_down_ > 0) {
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
  Wake();
  return absl::OkStatus();
}

std::vector<PacketRule> Fabric::PacketRules() {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_.packets;
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
  Wake();
}

void Fabric::ForceCqOverflow(const CqOverflow& o) {
  auto it = nodes_[o.node]->qps.find(o.qpn);
  if (it == nodes_[o.node]->qps.end()) return;
  CqState& cq = o.recv_cq ? *it->second->recv_cq : *it->second->send_cq;
  RecordLocalFault(o.node, o.qpn,
                   o.recv_cq ? "fault: receive CQ overflows (cqoverflow)"
                             : "fault: send CQ overflows (cqoverflow)");
  OverflowCq(cq);
  Wake();
}

absl::Status Fabric::SetPortState(int node, bool up) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node < 0 || node >= num_nodes()) {
    return Errno(EINVAL, "no node %d (the fabric has %d)", node, num_nodes());
  }
  Node& n = *nodes_[node];
  if (n.port_down == !up) return absl::OkStatus();
  n.port_down = !up;
  nodes_down_ += up ? -1 : 1;
  RecordLocalFault(node, 0, up ? "port up" : "port down");
  AsyncEvent ev;
  ev.type = up ? AsyncEventType::kPortActive : AsyncEventType::kPortErr;
  ev.port_num = 1;
  for (const std::weak_ptr<ContextState>& w : n.contexts) {
    if (std::shared_ptr<ContextState> c = w.lock()) RaiseAsyncEvent(*c, ev);
  }
  Wake();
  return absl::OkStatus();
}

void Fabric::CrashNode(int node) {
  Node& n = *nodes_[node];
  if (n.crashed) return;
  n.crashed = true;
  ++nodes_down_;
  RecordLocalFault(node, 0, "fault: node crashed");
  std::vector<uint32_t> qpns;
  for (const auto& [qpn, qp] : n.qps) qpns.push_back(qpn);
  std::sort(qpns.begin(), qpns.end());
  for (uint32_t qpn : qpns) ForceQpError(node, qpn);
}

}  // namespace verbsim::sim
