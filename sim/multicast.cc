// UD multicast groups of the fabric: which QPs of which nodes a datagram to a
// multicast GID reaches (ibv_attach_mcast(3)).
#include <utility>
#include <vector>

#include "sim/fabric.h"

namespace verbsim::sim {

std::vector<std::pair<int, uint32_t>> Fabric::McastMembers(
    const Gid& gid) const {
  auto it = mcast_.find(gid);
  if (it == mcast_.end()) return {};
  return it->second;
}

void Fabric::AttachMcast(const Gid& gid, int node, uint32_t qpn) {
  auto& members = mcast_[gid];
  for (const auto& m : members) {
    if (m.first == node && m.second == qpn) return;
  }
  members.emplace_back(node, qpn);
}

bool Fabric::DetachMcast(const Gid& gid, int node, uint32_t qpn) {
  auto it = mcast_.find(gid);
  if (it == mcast_.end()) return false;
  auto& members = it->second;
  for (auto m = members.begin(); m != members.end(); ++m) {
    if (m->first == node && m->second == qpn) {
      members.erase(m);
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
      m = (m->first == node && m->second == qpn) ? members.erase(m) : m + 1;
    }
    it = members.empty() ? mcast_.erase(it) : std::next(it);
  }
}

}  // namespace verbsim::sim
