// rdma_cm ids: creation, addresses, routes, listening
// (rdma_create_id(3), rdma_bind_addr(3), rdma_resolve_addr(3),
// rdma_resolve_route(3), rdma_listen(3), rdma_get_request(3),
// rdma_create_ep(3)).
//
// Addresses are the sim nodes' IPv4 addresses (nodes.cc). An address of
// this process, or of a node whose process is there (nodes.cc,
// NodePresent), resolves at once; one whose process is absent, or that no
// node has, is asked again until rdma_resolve_addr's timeout_ms, then
// ADDR_ERROR -ETIMEDOUT, as the kernel retries an unanswered neighbour
// lookup until the request's timeout (addr.c process_one_req; rxe0 and siw0
// answer so for an address of their subnet nobody owns).
// ROUTE_RESOLVED is reported at once.
#include <arpa/inet.h>
#include <rdma/rdma_verbs.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {

bool IsUd(const Id* id) { return id->id.qp_type == IBV_QPT_UD; }

bool IsIwarp(const Id* id) {
  return id->id.verbs != nullptr &&
         id->id.verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

Id* NewId(rdma_event_channel* channel, void* context, rdma_port_space ps,
          ibv_qp_type qp_type) {
  auto* id = new Id{};
  // The starting PSN of its connection, fixed from the start as the CM's
  // (a program may move its own QP with rdma_init_qp_attr before accepting).
  static std::atomic<uint32_t> ids{1};
  id->psn = (ids.fetch_add(1) * 2654435761u) & 0xffffff;
  id->id.context = context;
  id->id.ps = ps;
  id->id.qp_type = qp_type;
  id->id.channel = channel;
  id->id.route.path_rec = &id->path;
  if (channel == nullptr) {
    id->sync = true;
    id->own = NewChannel();
    if (id->own == nullptr) {
      delete id;
      return nullptr;
    }
    id->id.channel = &id->own->ch;
  }
  return id;
}

void FreeId(Id* id) {
  delete id->resend;
  delete id->last;
  if (id->sync) DeleteChannel(id->own);
  delete id;
}

// Sets the id's device from its node, and its PD to the device's default
// one, as librdmacm does once an id is bound to a device (so a program may
// make its own QP on cm_id->pd). Under CmMutex.
void AttachNode(Id* id, Node* node) {
  id->node = node;
  id->id.verbs = node->verbs;
  id->id.pd = DefaultPdLocked(node);
  id->id.port_num = 1;
  id->responder_resources = node->max_rd_atom;
  id->initiator_depth = node->max_init_rd_atom;
}

void FillRoute(Id* id) {
  rdma_route& r = id->id.route;
  std::memcpy(&r.addr.src_sin, &id->src, sizeof(id->src));
  std::memcpy(&r.addr.dst_sin, &id->dst, sizeof(id->dst));
  if (id->node != nullptr) r.addr.addr.ibaddr.sgid = id->node->gid;
  // The peer's GID is its IPv4-mapped address, as every sim node's.
  uint32_t ip = ntohl(id->dst.sin_addr.s_addr);
  if (ip == 0x7f000001 && id->node != nullptr) ip = id->node->ip;
  r.addr.addr.ibaddr.dgid = GidOfIp(ip);
  r.addr.addr.ibaddr.pkey = htobe16(0xffff);
}

void FillPath(Id* id) {
  ibv_sa_path_rec& p = id->path;
  p = ibv_sa_path_rec{};
  p.sgid = id->id.route.addr.addr.ibaddr.sgid;
  p.dgid = id->id.route.addr.addr.ibaddr.dgid;
  p.pkey = htobe16(0xffff);
  p.hop_limit = 64;
  p.mtu = id->node->active_mtu;
  // cma.c cma_resolve_iboe_route: RoCE's fixed packet life time.
  p.packet_life_time = static_cast<uint8_t>(Timing().packet_life_time);
  p.reversible = 1;
  p.numb_path = 1;
  id->id.route.num_paths = 1;
}

ibv_ah_attr AhToPeer(const Id* id) {
  ibv_ah_attr ah{};
  ah.is_global = 1;
  ah.grh.dgid = id->has_peer ? id->peer.gid : id->id.route.addr.addr.ibaddr.dgid;
  ah.grh.sgid_index = 0;
  ah.grh.hop_limit = 64;
  ah.port_num = id->id.port_num;
  return ah;
}

namespace {

int QpTypeOf(rdma_port_space ps, ibv_qp_type* type) {
  switch (ps) {
    case RDMA_PS_TCP:
    case RDMA_PS_IB:
      *type = IBV_QPT_RC;
      return 0;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB:
      *type = IBV_QPT_UD;
      return 0;
  }
  return Fail(EINVAL);
}

}  // namespace

int Ipv4Of(const sockaddr* addr, sockaddr_in* out) {
  if (addr == nullptr || addr->sa_family != AF_INET) {
    if (addr != nullptr) {
      Warn("only IPv4 addresses (the sim nodes' 127.x.y.z) are covered; got "
           "address family " + std::to_string(addr->sa_family));
    }
    return Fail(EAFNOSUPPORT);
  }
  std::memcpy(out, addr, sizeof(*out));
  return 0;
}

namespace {

// How often an address query looks for the node's owner again.
constexpr int64_t kPresencePollMs = 20;

// The next look of an address query: at the poll interval, or at its
// deadline when that comes first.
void ArmAddrQuery(Id* id) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      id->resolve_deadline - Clock::now());
  ArmTimer(id, std::clamp<int64_t>(left.count(), 0, kPresencePollMs));
}

// Reports `type` and, for a sync id, waits for it (as ucma_complete).
int Complete(Id* id, rdma_cm_event_type type, int status) {
  Deliver(id, NewEvent(id, type, status));
  return id->sync ? WaitSync(id) : 0;
}

}  // namespace

void OnAddrTimer(Id* id) {
  if (id->state != State::kAddrQuery) return;
  if (NodePresent(ntohl(id->dst.sin_addr.s_addr))) {
    id->state = State::kAddrResolved;
    Deliver(id, NewEvent(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0));
    return;
  }
  if (Clock::now() >= id->resolve_deadline) {
    // addr.c: -ETIMEDOUT; cma.c addr_handler: ADDR_ERROR, and the id is
    // bound again, ready for another rdma_resolve_addr.
    id->state = id->resolve_from;
    Deliver(id, NewEvent(id, RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT));
    return;
  }
  ArmAddrQuery(id);
}

}  // namespace verbsim::rdmacm

using namespace verbsim::rdmacm;  // NOLINT: the C entry points below

extern "C" {

int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context,
                   rdma_port_space ps) {
  if (id == nullptr) return Fail(EINVAL);
  ibv_qp_type type;
  if (QpTypeOf(ps, &type) != 0) return -1;
  // Opens the devices and announces this process's nodes, as librdmacm's
  // ucma_init does here.
  LocalNodes();
  Id* made = NewId(channel, context, ps, type);
  if (made == nullptr) return -1;
  *id = &made->id;
  return 0;
}

int rdma_destroy_id(rdma_cm_id* cm_id) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  {
    std::lock_guard<std::mutex> lock(CmMutex());
    // Closing the connection tells the peer (a DREQ or REJ in the real CM;
    // the DREP a DREQ is owed, cm.c cm_destroy_id).
    if (id->drep_owed) SendMsg(id, MsgFrom(id, MsgType::kDrep));
    id->drep_owed = false;
    CloseSockets(id);
    LeaveAllGroups(id);
  }
  FreeId(id);
  return 0;
}

int rdma_bind_addr(rdma_cm_id* cm_id, sockaddr* addr) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  sockaddr_in sin;
  if (Ipv4Of(addr, &sin) != 0) return -1;
  if (LocalNodes().empty()) return Fail(ENODEV);
  std::lock_guard<std::mutex> lock(CmMutex());
  if (id->state != State::kIdle) return Fail(EINVAL);
  const uint32_t ip = ntohl(sin.sin_addr.s_addr);
  Node* node = nullptr;
  if (ip != INADDR_ANY) {
    node = LocalNodeOf(ip);
    if (node == nullptr) return Fail(EADDRNOTAVAIL);
    // 127.0.0.1 (when no node has it) names the first local node: the id is
    // bound to that node's address, as rdma_resolve_addr binds a source of
    // 127.0.0.1, so the local address a program reads back and hands to its
    // peer (libfabric's fi_getname) reaches it from other processes too.
    sin.sin_addr.s_addr = htonl(node->ip);
  }
  id->src = sin;
  if (node != nullptr) AttachNode(id, node);
  if (BindSockets(id) != 0) {
    id->node = nullptr;
    id->id.verbs = nullptr;
    id->id.pd = nullptr;
    id->id.port_num = 0;
    id->src = sockaddr_in{};
    return -1;
  }
  FillRoute(id);
  id->state = State::kBound;
  return 0;
}

int rdma_resolve_addr(rdma_cm_id* cm_id, sockaddr* src_addr,
                      sockaddr* dst_addr, int timeout_ms) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  sockaddr_in dst;
  if (Ipv4Of(dst_addr, &dst) != 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  if (src_addr != nullptr && Ipv4Of(src_addr, &src) != 0) return -1;
  if (LocalNodes().empty()) return Fail(ENODEV);
  int status = 0;
  {
    std::lock_guard<std::mutex> lock(CmMutex());
    if (id->state != State::kIdle && id->state != State::kBound) {
      return Fail(EINVAL);
    }
    if (id->node == nullptr) {
      const uint32_t sip = ntohl(src.sin_addr.s_addr);
      Node* node = sip == INADDR_ANY ? LocalNodes().front() : LocalNodeOf(sip);
      if (node == nullptr) return Fail(EADDRNOTAVAIL);
      AttachNode(id, node);
      src.sin_addr.s_addr = htonl(node->ip);
      id->src = src;
    }
    if (id->src.sin_addr.s_addr == 0) id->src.sin_addr.s_addr = htonl(id->node->ip);
    id->dst = dst;
    FillRoute(id);
    const uint32_t ip = ntohl(dst.sin_addr.s_addr);
    if (IN_MULTICAST(ip)) {
      // A group address needs no neighbour: the kernel resolves it at once
      // (its MAC follows from the group). Joining it is not covered, and
      // rdma_join_multicast says so (mckey then names what is missing).
      id->state = State::kAddrResolved;
    } else if (NodePresent(ip)) {
      id->state = State::kAddrResolved;
    } else {
      // No process owns that address (yet), or no node has it: asked again
      // until timeout_ms, which librdmacm hands the kernel as an unsigned
      // number; an address nobody answers for times out as an unanswered
      // neighbour lookup does (addr.c process_one_req: -ETIMEDOUT).
      id->resolve_from = id->state;
      id->state = State::kAddrQuery;
      id->resolve_deadline =
          Clock::now() +
          std::chrono::milliseconds(static_cast<uint32_t>(timeout_ms));
      ArmAddrQuery(id);
      status = 1;  // the service thread reports it
    }
  }
  if (status == 1) return id->sync ? WaitSync(id) : 0;
  return Complete(id, status == 0 ? RDMA_CM_EVENT_ADDR_RESOLVED
                                  : RDMA_CM_EVENT_ADDR_ERROR,
                  status);
}

int rdma_resolve_route(rdma_cm_id* cm_id, int timeout_ms) {
  (void)timeout_ms;
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  {
    std::lock_guard<std::mutex> lock(CmMutex());
    if (id->state != State::kAddrResolved) return Fail(EINVAL);
    FillPath(id);
    id->state = State::kRouteResolved;
  }
  return Complete(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
}

int rdma_listen(rdma_cm_id* cm_id, int backlog) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  std::lock_guard<std::mutex> lock(CmMutex());
  if (id->state != State::kBound) return Fail(EINVAL);
  if (ListenSockets(id, backlog) != 0) return -1;
  id->state = State::kListening;
  return 0;
}

int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** out) {
  if (listen == nullptr || out == nullptr) return Fail(EINVAL);
  Id* l = IdOf(listen);
  if (!l->sync) return Fail(EINVAL);  // rdma_get_request(3): sync ids only
  for (;;) {
    Event* e = nullptr;
    if (Take(l->own, &e) != 0) return -1;
    if (e->ev.event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      delete e;  // nothing else is reported on a listening id
      continue;
    }
    Id* child = IdOf(e->ev.id);
    delete child->last;
    child->last = e;  // child->id.event: its private data stays readable
    child->id.event = &e->ev;
    if (l->has_ep_attr) {
      ibv_qp_init_attr attr = l->ep_attr;
      if (rdma_create_qp(&child->id, l->ep_pd, &attr) != 0) {
        const int err = errno;
        rdma_reject(&child->id, nullptr, 0);
        rdma_destroy_id(&child->id);
        return Fail(err);
      }
    }
    *out = &child->id;
    return 0;
  }
}

int rdma_create_ep(rdma_cm_id** out, rdma_addrinfo* res, ibv_pd* pd,
                   ibv_qp_init_attr* qp_init_attr) {
  if (out == nullptr || res == nullptr) return Fail(EINVAL);
  rdma_cm_id* cm_id = nullptr;
  if (rdma_create_id(nullptr, &cm_id, nullptr,
                     static_cast<rdma_port_space>(res->ai_port_space)) != 0) {
    return -1;
  }
  Id* id = IdOf(cm_id);
  int ret;
  if (res->ai_flags & RAI_PASSIVE) {
    ret = rdma_bind_addr(cm_id, res->ai_src_addr);
    if (ret == 0 && qp_init_attr != nullptr) {
      id->has_ep_attr = true;
      id->ep_attr = *qp_init_attr;
      id->ep_attr.qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
      id->ep_pd = pd;
    }
  } else {
    ret = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
    if (ret == 0) ret = rdma_resolve_route(cm_id, 2000);
    if (ret == 0 && qp_init_attr != nullptr) {
      qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
      ret = rdma_create_qp(cm_id, pd, qp_init_attr);
    }
  }
  if (ret != 0) {
    const int err = errno;
    rdma_destroy_id(cm_id);
    return Fail(err);
  }
  *out = cm_id;
  return 0;
}

// rdma_migrate_id(3): the id's events go to `channel` from now on, and the
// ones still queued on its old channel move with it (the kernel's
// ucma_migrate_id). A null channel makes the id synchronous, on a channel of
// its own; a synchronous id leaves its own channel (and the event it last
// waited for) behind. Unlike librdmacm this does not wait for the program to
// ack the id's events already taken from the old channel: nothing here
// refers to an event after it was taken.
int rdma_migrate_id(rdma_cm_id* cm_id, rdma_event_channel* channel) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  if (id->sync && channel == nullptr) return Fail(EINVAL);
  Channel* own = nullptr;
  if (channel == nullptr) {
    own = NewChannel();
    if (own == nullptr) return -1;
    channel = &own->ch;
  }
  std::lock_guard<std::mutex> lock(CmMutex());
  auto* from = reinterpret_cast<Channel*>(cm_id->channel);
  MoveEvents(from, reinterpret_cast<Channel*>(channel), cm_id);
  if (id->sync) {
    delete id->last;
    id->last = nullptr;
    cm_id->event = nullptr;
    DeleteChannel(id->own);
  }
  id->sync = own != nullptr;
  id->own = own;
  cm_id->channel = channel;
  return 0;
}

void rdma_destroy_ep(rdma_cm_id* cm_id) {
  if (cm_id == nullptr) return;
  // librdmacm's order: the QP, then an SRQ made on the id, then the id.
  if (cm_id->qp != nullptr) rdma_destroy_qp(cm_id);
  if (cm_id->srq != nullptr) rdma_destroy_srq(cm_id);
  rdma_destroy_id(cm_id);
}

int rdma_set_option(rdma_cm_id* cm_id, int level, int optname, void* optval,
                    size_t optlen) {
  if (cm_id == nullptr || optval == nullptr) return Fail(EINVAL);
  if (level == RDMA_OPTION_ID) {
    switch (optname) {
      case RDMA_OPTION_ID_TOS:
        if (optlen != sizeof(uint8_t)) return Fail(EINVAL);
        return 0;  // accepted; the sim has one traffic class
      case RDMA_OPTION_ID_ACK_TIMEOUT: {
        if (optlen != sizeof(uint8_t)) return Fail(EINVAL);
        // An RC id's QP takes it at RTS (cma.c rdma_set_ack_timeout: EINVAL
        // for other QP types).
        Id* id = IdOf(cm_id);
        if (id->id.qp_type != IBV_QPT_RC) return Fail(EINVAL);
        std::lock_guard<std::mutex> lock(CmMutex());
        id->ack_timeout = *static_cast<const uint8_t*>(optval);
        id->ack_timeout_set = true;
        return 0;
      }
      case RDMA_OPTION_ID_REUSEADDR:
      case RDMA_OPTION_ID_AFONLY:
        if (optlen != sizeof(int)) return Fail(EINVAL);
        return 0;
    }
  }
  Warn("rdma_set_option level " + std::to_string(level) + " option " +
       std::to_string(optname) + " is not covered by the verbsim drop-in "
       "library (ENOSYS)");
  return Fail(ENOSYS);
}

__be16 rdma_get_src_port(rdma_cm_id* cm_id) {
  return cm_id == nullptr ? 0 : IdOf(cm_id)->src.sin_port;
}

__be16 rdma_get_dst_port(rdma_cm_id* cm_id) {
  return cm_id == nullptr ? 0 : IdOf(cm_id)->dst.sin_port;
}

ibv_context** rdma_get_devices(int* num_devices) {
  const std::vector<Node*>& nodes = LocalNodes();
  auto** list = static_cast<ibv_context**>(
      std::calloc(nodes.size() + 1, sizeof(ibv_context*)));
  if (list == nullptr) return nullptr;
  for (size_t i = 0; i < nodes.size(); ++i) list[i] = nodes[i]->verbs;
  if (num_devices != nullptr) *num_devices = static_cast<int>(nodes.size());
  return list;
}

void rdma_free_devices(ibv_context** list) { std::free(list); }

}  // extern "C"
