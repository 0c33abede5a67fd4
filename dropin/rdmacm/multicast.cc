// Multicast groups through rdma_cm (rdma_join_multicast(3),
// rdma_join_multicast_ex, rdma_leave_multicast(3)), as the kernel's CM does
// them for RoCEv2: the group's MGID is the IPv4-mapped form of its address,
// the id's QP (if it has one) is attached to it, a full member's device
// joins the group at the IP level (an IGMP join of the netdev; on the sim
// verbsim_dropin_mcast_ip_join, sim::Fabric::JoinMcastIp), and the program
// gets RDMA_CM_EVENT_MULTICAST_JOIN whose UD parameters address the group:
// QPN 0xFFFFFF, Q_Key RDMA_UDP_QKEY, private_data the context it gave.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>

#include <cerrno>
#include <mutex>

#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {
namespace {

// The drop-in libibverbs' IP-level join; absent on another libibverbs.
void IpJoin(ibv_context* verbs, const ibv_gid& mgid, bool join) {
  using Hook = int (*)(ibv_context*, const uint8_t*, int);
  static const Hook hook = reinterpret_cast<Hook>(
      dlsym(RTLD_DEFAULT, "verbsim_dropin_mcast_ip_join"));
  if (hook != nullptr) hook(verbs, mgid.raw, join ? 1 : 0);
}

void Leave(McJoin& g, ibv_context* verbs) {
  if (g.attached != nullptr) {
    ibv_detach_mcast(g.attached, &g.mgid, 0);
    g.attached = nullptr;
  }
  if (g.ip_joined) {
    IpJoin(verbs, g.mgid, false);
    g.ip_joined = false;
  }
}

}  // namespace

void LeaveAllGroups(Id* id) {
  for (McJoin& g : id->groups) Leave(g, id->id.verbs);
  id->groups.clear();
}

}  // namespace verbsim::rdmacm

using namespace verbsim::rdmacm;  // NOLINT: the C entry points below

extern "C" {

int rdma_join_multicast_ex(rdma_cm_id* cm_id, rdma_cm_join_mc_attr_ex* attr,
                           void* context) {
  if (cm_id == nullptr || attr == nullptr) return Fail(EINVAL);
  constexpr uint32_t kKnown =
      RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
  if ((attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) == 0 ||
      (attr->comp_mask & ~kKnown) != 0) {
    return Fail(EINVAL);
  }
  uint32_t flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
  if (attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) {
    flags = attr->join_flags;
    if (flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
        flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
      return Fail(EINVAL);
    }
  }
  sockaddr_in sin;
  if (Ipv4Of(attr->addr, &sin) != 0) return -1;
  // The group address must be one (an MGID that is not multicast is
  // refused by ibv_attach_mcast too).
  if (!IN_MULTICAST(ntohl(sin.sin_addr.s_addr))) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  Event* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(CmMutex());
    // cma.c rdma_join_multicast: an id bound to a device, in ADDR_BOUND or
    // ADDR_RESOLVED.
    if (id->node == nullptr || (id->state != State::kBound &&
                                id->state != State::kAddrResolved)) {
      return Fail(EINVAL);
    }
    for (const McJoin& g : id->groups) {
      if (g.addr.sin_addr.s_addr == sin.sin_addr.s_addr) return Fail(EADDRINUSE);
    }
    McJoin g;
    g.addr = sin;
    g.mgid = GidOfIp(ntohl(sin.sin_addr.s_addr));
    g.context = context;
    if (id->id.qp != nullptr) {
      if (int err = ibv_attach_mcast(id->id.qp, &g.mgid, 0); err != 0) {
        return Fail(err);
      }
      g.attached = id->id.qp;
    }
    if (flags == RDMA_MC_JOIN_FLAG_FULLMEMBER) {
      IpJoin(id->id.verbs, g.mgid, true);
      g.ip_joined = true;
    }
    id->groups.push_back(g);
    e = NewEvent(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
    e->ev.param.ud.private_data = context;
    e->ev.param.ud.private_data_len = 0;
    ibv_ah_attr& ah = e->ev.param.ud.ah_attr;
    ah = ibv_ah_attr{};
    ah.is_global = 1;
    ah.grh.dgid = g.mgid;
    ah.grh.sgid_index = 0;
    ah.grh.hop_limit = 64;
    ah.port_num = id->id.port_num;
    e->ev.param.ud.qp_num = 0xffffff;
    e->ev.param.ud.qkey = RDMA_UDP_QKEY;
    Deliver(id, e);
  }
  return id->sync ? WaitSync(id) : 0;
}

int rdma_join_multicast(rdma_cm_id* cm_id, sockaddr* addr, void* context) {
  rdma_cm_join_mc_attr_ex attr{};
  attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
  attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
  attr.addr = addr;
  return rdma_join_multicast_ex(cm_id, &attr, context);
}

int rdma_leave_multicast(rdma_cm_id* cm_id, sockaddr* addr) {
  if (cm_id == nullptr) return Fail(EINVAL);
  sockaddr_in sin;
  if (Ipv4Of(addr, &sin) != 0) return -1;
  Id* id = IdOf(cm_id);
  std::lock_guard<std::mutex> lock(CmMutex());
  for (auto it = id->groups.begin(); it != id->groups.end(); ++it) {
    if (it->addr.sin_addr.s_addr == sin.sin_addr.s_addr) {
      Leave(*it, id->id.verbs);
      id->groups.erase(it);
      return 0;
    }
  }
  // librdmacm: a group the id did not join.
  return Fail(EADDRNOTAVAIL);
}

}  // extern "C"
