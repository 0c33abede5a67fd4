// Multicast groups across the processes of a fabric on the UDP transport
// (docs/udp-transport.md, "Multicast"). A process announces each QP it
// attaches to a group, and each node it joined to a group at the IP level
// (what the kernel's CM does for RoCE when a program joins through
// rdma_cm), with one abstract UNIX socket bound per fact:
//   verbsim-mcast/<namespace>/<gid hex>/m/<node>/<qpn>
//   verbsim-mcast/<namespace>/<gid hex>/j/<node>/<pid>
// A sender reads them back from /proc/net/unix. The kernel removes a name
// when its process ends, so a process that dies leaves no member behind.
#ifndef VERBSIM_SIM_MCAST_PRESENCE_H_
#define VERBSIM_SIM_MCAST_PRESENCE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/types.h"

namespace verbsim::sim {

class McastPresence {
 public:
  // `ns` names the fabric (its UDP base port), shared by its processes.
  explicit McastPresence(std::string ns) : ns_(std::move(ns)) {}
  McastPresence(const McastPresence&) = delete;
  McastPresence& operator=(const McastPresence&) = delete;
  ~McastPresence();

  // A QP of this process joins or leaves a group (idempotent).
  void AnnounceMember(const Gid& gid, int node, uint32_t qpn);
  void WithdrawMember(const Gid& gid, int node, uint32_t qpn);
  // This process joins node `node` to a group at the IP level, or leaves
  // it; counted, so two joins need two leaves.
  void AnnounceIpJoin(const Gid& gid, int node);
  void WithdrawIpJoin(const Gid& gid, int node);

  struct View {
    std::vector<std::pair<int, uint32_t>> members;  // (node, qpn)
    std::set<int> ip_joined;                        // nodes
  };
  // What every process of the fabric announces for `gid` now.
  View Scan(const Gid& gid) const;

  // After fork(), in the child: the parent's names stay the parent's.
  void ForgetAfterFork();

 private:
  std::string Prefix(const Gid& gid) const;
  std::string ns_;
  std::map<std::tuple<Gid, int, uint32_t>, int> members_;  // fd per member
  std::map<std::pair<Gid, int>, std::pair<int, int>> joins_;  // fd, count
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_MCAST_PRESENCE_H_
