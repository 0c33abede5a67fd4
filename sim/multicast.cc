// UD multicast groups of the fabric: which QPs of which nodes a datagram to a
// multicast GID reaches (ibv_attach_mcast(3)), and the device limits on
// groups and attachments (max_mcast_grp, max_mcast_qp_attach,
// max_total_mcast_qp_attach), counted per node.
#include <utility>
#include <vector>

#include "core/errors.h"
#include "sim/fabric.h"
#include "sim/mcast_presence.h"
#include "sim/udp_transport.h"

namespace verbsim::sim {

std::vector<std::pair<int, uint32_t>> Fabric::McastMembers(
    const Gid& gid) const {
  auto it = mcast_.find(gid);
  if (it == mcast_.end()) return {};
  return it->second;
}

namespace {

// How many members of `members` are QPs of `node`.
int MembersOn(const std::vector<std::pair<int, uint32_t>>& members, int node) {
  int n = 0;
  for (const auto& m : members) n += m.first == node ? 1 : 0;
  return n;
}

}  // namespace

absl::Status Fabric::AttachMcast(const Gid& gid, int node, uint32_t qpn) {
  Node* n = nodes_[node].get();
  const DeviceAttr& dev = profile().device;
  const int err = profile().limit_errno.mcast;
  auto it = mcast_.find(gid);
  int on_node = 0;
  if (it != mcast_.end()) {
    for (const auto& m : it->second) {
      if (m.first == node && m.second == qpn) return absl::OkStatus();
    }
    on_node = MembersOn(it->second, node);
  }
  // The device's checks in kernel rxe's order: a group new to the device,
  // then the device's attachments, then the group's.
  if (on_node == 0 && n->mcast_groups >= dev.max_mcast_grp) {
    return Errno(err, "max_mcast_grp %d reached on %s", dev.max_mcast_grp,
                 n->name);
  }
  if (n->mcast_attachments >= dev.max_total_mcast_qp_attach) {
    return Errno(err, "max_total_mcast_qp_attach %d reached on %s",
                 dev.max_total_mcast_qp_attach, n->name);
  }
  if (on_node >= dev.max_mcast_qp_attach) {
    return Errno(err, "max_mcast_qp_attach %d reached for %s on %s",
                 dev.max_mcast_qp_attach, GidToString(gid), n->name);
  }
  mcast_[gid].emplace_back(node, qpn);
  if (mcast_presence_ != nullptr) mcast_presence_->AnnounceMember(gid, node, qpn);
  if (on_node == 0) ++n->mcast_groups;
  ++n->mcast_attachments;
  return absl::OkStatus();
}

// Forgets one attachment of a QP of `node` to a group whose other members
// are `left` (after the erase).
void Fabric::ForgetMcastMember(
    int node, const std::vector<std::pair<int, uint32_t>>& left) {
  Node* n = nodes_[node].get();
  --n->mcast_attachments;
  if (MembersOn(left, node) == 0) --n->mcast_groups;
}

bool Fabric::DetachMcast(const Gid& gid, int node, uint32_t qpn) {
  auto it = mcast_.find(gid);
  if (it == mcast_.end()) return false;
  auto& members = it->second;
  for (auto m = members.begin(); m != members.end(); ++m) {
    if (m->first == node && m->second == qpn) {
      members.erase(m);
      ForgetMcastMember(node, members);
      if (mcast_presence_ != nullptr) {
        mcast_presence_->WithdrawMember(gid, node, qpn);
      }
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
      if (m->first == node && m->second == qpn) {
        m = members.erase(m);
        ForgetMcastMember(node, members);
        if (mcast_presence_ != nullptr) {
          mcast_presence_->WithdrawMember(it->first, node, qpn);
        }
      } else {
        ++m;
      }
    }
    it = members.empty() ? mcast_.erase(it) : std::next(it);
  }
}

Fabric::McastRoute Fabric::RouteMcast(const Gid& gid) const {
  McastRoute route;
  route.members = McastMembers(gid);
  for (const auto& [key, count] : mcast_ip_joins_) {
    if (key.first == gid && count > 0) route.ip_joined.insert(key.second);
  }
  if (mcast_presence_ == nullptr) return route;
  // The other processes' members: those whose QPN is of another process
  // slot (this process's are in mcast_ already).
  McastPresence::View others = mcast_presence_->Scan(gid);
  for (const auto& [node, qpn] : others.members) {
    if (QpnSlot(qpn) != process_slot_) route.members.emplace_back(node, qpn);
  }
  route.ip_joined.insert(others.ip_joined.begin(), others.ip_joined.end());
  return route;
}

void Fabric::JoinMcastIp(const Gid& gid, int node, bool join) {
  int& count = mcast_ip_joins_[{gid, node}];
  if (join) {
    ++count;
    if (mcast_presence_ != nullptr) mcast_presence_->AnnounceIpJoin(gid, node);
  } else if (count > 0) {
    --count;
    if (mcast_presence_ != nullptr) mcast_presence_->WithdrawIpJoin(gid, node);
  }
  if (count == 0) mcast_ip_joins_.erase({gid, node});
}

}  // namespace verbsim::sim
