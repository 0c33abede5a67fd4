// Connection setup of the "hw" provider through librdmacm (see hw/cm.h): the
// rdma_cm events, the QP transitions rdma_cm computes, listening, accepting
// and connecting. Addresses are in hw/cm_address.cc.
#include "hw/cm.h"

#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "core/names.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {
namespace {

// ---------------------------------------------------------------------------
// Events.

constexpr int kResolveTimeoutMs = 2000;

// The fields of an rdma_cm_event, copied before the event is acknowledged.
struct CmEvent {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_ERROR;
  int status = 0;
  rdma_cm_id* id = nullptr;
  rdma_conn_param conn = {};  // private_data points into `private_data`
  std::string private_data;
};

// The starting PSNs. rdma_cm picks a random starting PSN for each side and
// carries it in the IB CM REQ and REP, so EndpointAttr::sq_psn would be
// ignored. Two verbsim endpoints instead tell each other their sq_psn in the
// connection's private data, marked so that a peer that is not verbsim
// (which sends no marker) keeps rdma_cm's PSNs. iWARP has no PSNs.
constexpr char kPsnMagic[4] = {'V', 'S', 'P', '1'};
constexpr size_t kPsnDataLen = 8;

std::string EncodePsn(uint32_t psn) {
  std::string out(kPsnMagic, sizeof(kPsnMagic));
  const uint32_t be = htonl(psn & 0xffffffu);
  out.append(reinterpret_cast<const char*>(&be), sizeof(be));
  return out;
}

// The peer's sq_psn, or -1 when the private data carries none.
int64_t DecodePsn(const std::string& data) {
  if (data.size() < kPsnDataLen ||
      std::memcmp(data.data(), kPsnMagic, sizeof(kPsnMagic)) != 0) {
    return -1;
  }
  uint32_t be;
  std::memcpy(&be, data.data() + sizeof(kPsnMagic), sizeof(be));
  return ntohl(be) & 0xffffffu;
}

// PSNs that replace rdma_init_qp_attr's; -1 keeps rdma_cm's.
struct PsnOverride {
  int64_t sq_psn = -1;
  int64_t rq_psn = -1;
};

absl::Status CreateChannel(CmId* cm) {
  cm->channel = rdma_create_event_channel();
  if (cm->channel == nullptr) {
    const int err = errno;
    return SysError(err, err == ENODEV ? "rdma_create_event_channel: "
                                         "librdmacm found no RDMA device"
                                       : "rdma_create_event_channel");
  }
  return SetNonBlocking(cm->channel->fd, "an rdma_cm event channel");
}

absl::StatusOr<CmEvent> NextEvent(rdma_event_channel* channel,
                                  absl::Time deadline,
                                  absl::string_view waiting_for) {
  while (true) {
    absl::StatusOr<bool> ready = WaitReadable(channel->fd, deadline);
    if (!ready.ok()) return ready.status();
    if (!*ready)
      return Errno(ETIMEDOUT, "timed out waiting for %s", waiting_for);
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) != 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return SysError(errno, "rdma_get_cm_event");
    }
    CmEvent out;
    out.type = event->event;
    out.status = event->status;
    out.id = event->id;
    out.conn = event->param.conn;
    if (event->param.conn.private_data != nullptr &&
        event->param.conn.private_data_len > 0) {
      out.private_data.assign(
          static_cast<const char*>(event->param.conn.private_data),
          event->param.conn.private_data_len);
    }
    out.conn.private_data = nullptr;
    out.conn.private_data_len = 0;
    rdma_ack_cm_event(event);
    return out;
  }
}

// The error an unexpected or failure event stands for.
absl::Status EventError(const CmEvent& event, absl::string_view context) {
  int err = event.status < 0 ? -event.status : 0;
  switch (event.type) {
    case RDMA_CM_EVENT_REJECTED:
      // status: the IB CM reject reason (28: no listener), or -errno.
      return Errno(ECONNREFUSED, "%s: rejected (%s, status %d)", context,
                   rdma_event_str(event.type), event.status);
    case RDMA_CM_EVENT_DISCONNECTED:
      return Errno(ENOTCONN, "%s: disconnected by the peer", context);
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return Errno(ENODEV, "%s: the RDMA device was removed", context);
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
      if (err == 0) err = ETIMEDOUT;
      break;
    default:
      if (err == 0) err = EIO;
      break;
  }
  return Errno(err, "%s: %s (status %d)", context, rdma_event_str(event.type),
               event.status);
}

absl::Status Expect(rdma_event_channel* channel, rdma_cm_event_type type,
                    absl::Duration timeout, absl::string_view context) {
  absl::StatusOr<CmEvent> event =
      NextEvent(channel, absl::Now() + timeout,
                absl::StrFormat("%s (%s)", rdma_event_str(type), context));
  if (!event.ok()) return event.status();
  if (event->type != type || event->status != 0) {
    return EventError(*event, context);
  }
  return absl::OkStatus();
}

absl::StatusOr<rdma_port_space> PortSpace(QpType type) {
  switch (type) {
    case QpType::kRc:
      return RDMA_PS_TCP;
    case QpType::kUd:
      return RDMA_PS_UDP;
    default:
      return Errno(EOPNOTSUPP,
                   "hw: rdma_cm connects RC and UD endpoints, not qp_type %s",
                   QpTypeName(type));
  }
}

// An id in the port space an endpoint of `type` needs, on an event channel
// of its own.
absl::Status OpenCmId(QpType type, CmId* cm) {
  absl::StatusOr<rdma_port_space> ps = PortSpace(type);
  if (!ps.ok()) return ps.status();
  if (absl::Status s = CreateChannel(cm); !s.ok()) return s;
  if (rdma_create_id(cm->channel, &cm->id, nullptr, *ps) != 0) {
    return SysError(errno, "rdma_create_id");
  }
  return absl::OkStatus();
}

bool IsIwarp(const rdma_cm_id* id) {
  return id->verbs != nullptr &&
         id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
}

absl::Status CheckDevice(const rdma_cm_id* id, const EndpointAttr& attr,
                         absl::string_view address) {
  if (attr.device.empty() || id->verbs == nullptr) return absl::OkStatus();
  const std::string actual = ibv_get_device_name(id->verbs->device);
  if (actual != attr.device) {
    return Errno(EINVAL, "address %s is on RDMA device %s, not attr.device %s",
                 address, actual, attr.device);
  }
  return absl::OkStatus();
}

// The endpoint `attr` asks for, on the device the cm_id is bound to (which
// must be attr.device when that names one).
absl::StatusOr<std::unique_ptr<Endpoint>> EndpointOn(
    const std::shared_ptr<CmId>& cm, const EndpointAttr& attr,
    absl::string_view address) {
  if (absl::Status s = CheckDevice(cm->id, attr, address); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Context>> context = WrapCmContext(cm);
  if (!context.ok()) return context.status();
  return Endpoint::Create(*std::move(context), attr);
}

uint8_t Clamp(int value, int max) {
  return static_cast<uint8_t>(std::max(0, std::min({value, max, 255})));
}

// Moves the endpoint's QP to `state` with the attributes rdma_cm computed
// (rdma_init_qp_attr(3)), overriding what EndpointAttr chooses. -1 for
// `resp_res` / `init_depth` keeps rdma_cm's values.
absl::Status MoveQpTo(rdma_cm_id* id, Qp* qp, const EndpointAttr& attr,
                      ibv_qp_state state, int resp_res = -1,
                      int init_depth = -1,
                      const PsnOverride& psn = PsnOverride()) {
  const DeviceAttr& dev = qp->pd()->context()->device_attr();
  ibv_qp_attr a = {};
  int mask = 0;
  a.qp_state = state;
  if (rdma_init_qp_attr(id, &a, &mask) != 0) {
    return SysError(errno,
                    absl::StrFormat("rdma_init_qp_attr(%s)",
                                    QpStateName(static_cast<QpState>(state))));
  }
  if (mask & IBV_QP_ACCESS_FLAGS) {
    a.qp_access_flags = attr.qp_access;
    if (dev.atomic_cap == AtomicCap::kNone) {
      a.qp_access_flags &= ~kAccessRemoteAtomic;
    }
  }
  if ((mask & IBV_QP_PATH_MTU) &&
      static_cast<int>(attr.path_mtu) < static_cast<int>(a.path_mtu)) {
    a.path_mtu = static_cast<ibv_mtu>(attr.path_mtu);
  }
  if (mask & IBV_QP_QKEY) a.qkey = attr.qkey;
  if (mask & IBV_QP_MIN_RNR_TIMER) a.min_rnr_timer = attr.min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) a.timeout = attr.timeout;
  if (mask & IBV_QP_RETRY_CNT) a.retry_cnt = Clamp(attr.retry_cnt, 7);
  if (mask & IBV_QP_RNR_RETRY) a.rnr_retry = Clamp(attr.rnr_retry, 7);
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && resp_res >= 0) {
    a.max_dest_rd_atomic = static_cast<uint8_t>(resp_res);
  }
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && init_depth >= 0) {
    a.max_rd_atomic = static_cast<uint8_t>(init_depth);
  }
  if ((mask & IBV_QP_SQ_PSN) && psn.sq_psn >= 0) {
    a.sq_psn = static_cast<uint32_t>(psn.sq_psn);
  }
  if ((mask & IBV_QP_RQ_PSN) && psn.rq_psn >= 0) {
    a.rq_psn = static_cast<uint32_t>(psn.rq_psn);
  }
  return ModifyRawQp(qp, &a, mask, "rdma_cm");
}

absl::Status MoveQp(rdma_cm_id* id, Endpoint& ep, ibv_qp_state state,
                    int resp_res = -1, int init_depth = -1,
                    const PsnOverride& psn = PsnOverride()) {
  return MoveQpTo(id, ep.qp(), ep.attr(), state, resp_res, init_depth, psn);
}

// UD: INIT from rdma_cm, then RTR and RTS by hand.
absl::Status ReadyUd(rdma_cm_id* id, Endpoint& ep) {
  if (absl::Status s = MoveQp(id, ep, IBV_QPS_INIT); !s.ok()) return s;
  ibv_qp_attr a = {};
  a.qp_state = IBV_QPS_RTR;
  if (absl::Status s = ModifyRawQp(ep.qp(), &a, IBV_QP_STATE, "UD to RTR");
      !s.ok()) {
    return s;
  }
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = ep.attr().sq_psn;
  return ModifyRawQp(ep.qp(), &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD to RTS");
}

// ---------------------------------------------------------------------------
// The connection of one endpoint.

class CmConnection final : public Endpoint::Connection {
 public:
  CmConnection(std::shared_ptr<CmId> cm, Endpoint* ep, bool active,
               bool established, std::string peer)
      : cm_(std::move(cm)),
        ep_(ep),
        active_(active),
        established_(established),
        peer_(std::move(peer)) {}
  ~CmConnection() override {
    if (established_ && ep_->attr().qp_type == QpType::kRc) {
      rdma_disconnect(cm_->id);
    }
  }

  absl::Status WaitEstablished(absl::Duration timeout) override {
    if (established_) return absl::OkStatus();
    if (!failed_.ok()) return failed_;
    const absl::Time deadline = absl::Now() + timeout;
    const std::string context = absl::StrFormat("%s connection with %s (qp %u)",
                                                active_ ? "active" : "passive",
                                                peer_, ep_->qp()->qp_num());
    while (true) {
      absl::StatusOr<CmEvent> event =
          NextEvent(cm_->channel, deadline,
                    absl::StrCat("the ", context, " to be established"));
      if (!event.ok()) {
        if (ErrnoOf(event.status()) != ETIMEDOUT) failed_ = event.status();
        return event.status();
      }
      switch (event->type) {
        case RDMA_CM_EVENT_CONNECT_RESPONSE:
          // IB/RoCE active side with an external QP: librdmacm leaves RTR,
          // RTS and the RTU (rdma_establish) to us.
          if (absl::Status s = CompleteActive(*event); !s.ok()) {
            failed_ = s;
            return s;
          }
          established_ = true;
          return absl::OkStatus();
        case RDMA_CM_EVENT_ESTABLISHED:
          if (event->status != 0) break;
          established_ = true;
          return absl::OkStatus();
        case RDMA_CM_EVENT_TIMEWAIT_EXIT:
        case RDMA_CM_EVENT_ADDR_CHANGE:
          continue;
        default:
          break;
      }
      failed_ = EventError(*event, context);
      return failed_;
    }
  }

 private:
  absl::Status CompleteActive(const CmEvent& response) {
    // A verbsim peer answered with its sq_psn: it took ours from the REQ.
    PsnOverride psn;
    psn.rq_psn = DecodePsn(response.private_data);
    if (psn.rq_psn >= 0) psn.sq_psn = ep_->attr().sq_psn & 0xffffffu;
    absl::Status s = MoveQp(cm_->id, *ep_, IBV_QPS_RTR, -1, -1, psn);
    if (s.ok()) s = MoveQp(cm_->id, *ep_, IBV_QPS_RTS, -1, -1, psn);
    if (s.ok() && rdma_establish(cm_->id) != 0) {
      s = SysError(errno, "rdma_establish");
    }
    if (!s.ok()) rdma_reject(cm_->id, nullptr, 0);
    return s;
  }

  std::shared_ptr<CmId> cm_;
  Endpoint* ep_;  // owns this connection
  bool active_;
  bool established_;
  absl::Status failed_;
  std::string peer_;
};

// ---------------------------------------------------------------------------
// Listener.

class CmListener final : public Listener {
 public:
  CmListener(std::unique_ptr<CmId> cm, EndpointAttr attr, std::string address)
      : cm_(std::move(cm)),
        attr_(std::move(attr)),
        address_(std::move(address)) {}

  std::string address() const override { return address_; }

  absl::StatusOr<std::unique_ptr<Endpoint>> Accept(
      absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      absl::StatusOr<CmEvent> event =
          NextEvent(cm_->channel, deadline,
                    absl::StrFormat("a connection request on %s", address_));
      if (!event.ok()) return event.status();
      if (event->type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
        return EventError(*event, absl::StrCat("listener on ", address_));
      }
      if (event->type != RDMA_CM_EVENT_CONNECT_REQUEST) continue;
      auto conn = std::make_shared<CmId>();
      conn->id = event->id;  // destroyed with `conn` if anything fails
      absl::StatusOr<std::unique_ptr<Endpoint>> ep = AcceptOne(conn, *event);
      if (!ep.ok()) rdma_reject(conn->id, nullptr, 0);
      return ep;
    }
  }

 private:
  absl::StatusOr<std::unique_ptr<Endpoint>> AcceptOne(
      const std::shared_ptr<CmId>& conn, const CmEvent& request) {
    const std::string peer = FormatAddress(rdma_get_peer_addr(conn->id));
    // Each endpoint gets its own event channel.
    if (absl::Status s = CreateChannel(conn.get()); !s.ok()) return s;
    if (rdma_migrate_id(conn->id, conn->channel) != 0) {
      return SysError(errno, "rdma_migrate_id");
    }
    absl::StatusOr<std::unique_ptr<Endpoint>> ep =
        EndpointOn(conn, attr_, address_);
    if (!ep.ok()) return ep.status();
    Endpoint& e = **ep;
    const DeviceAttr& dev = e.context()->device_attr();
    rdma_conn_param param = {};
    param.qp_num = e.qp()->qp_num();
    param.rnr_retry_count = Clamp(attr_.rnr_retry, 7);
    param.flow_control = 1;
    std::string reply_data;  // outlives rdma_accept
    bool established = false;
    if (attr_.qp_type == QpType::kUd) {
      if (absl::Status s = ReadyUd(conn->id, e); !s.ok()) return s;
      established = true;  // SIDR: the reply is all there is
    } else {
      const int resp_res =
          Clamp(std::min<int>(attr_.max_dest_rd_atomic,
                              request.conn.responder_resources),
                dev.max_qp_rd_atom);
      const int init_depth = Clamp(
          std::min<int>(attr_.max_rd_atomic, request.conn.initiator_depth),
          dev.max_qp_init_rd_atom);
      param.responder_resources = static_cast<uint8_t>(resp_res);
      param.initiator_depth = static_cast<uint8_t>(init_depth);
      absl::Status s = MoveQp(conn->id, e, IBV_QPS_INIT);
      if (s.ok() && !IsIwarp(conn->id)) {
        // A verbsim peer sent its sq_psn: receive from there, and send from
        // our own attr.sq_psn, which the REP tells it.
        PsnOverride psn;
        psn.rq_psn = DecodePsn(request.private_data);
        if (psn.rq_psn >= 0) {
          psn.sq_psn = attr_.sq_psn & 0xffffffu;
          reply_data = EncodePsn(attr_.sq_psn);
          param.private_data = reply_data.data();
          param.private_data_len = static_cast<uint8_t>(reply_data.size());
        }
        s = MoveQp(conn->id, e, IBV_QPS_RTR, resp_res, init_depth, psn);
        if (s.ok()) {
          s = MoveQp(conn->id, e, IBV_QPS_RTS, resp_res, init_depth, psn);
        }
      }
      if (!s.ok()) return s;
    }
    if (rdma_accept(conn->id, &param) != 0) {
      return SysError(errno, absl::StrFormat("rdma_accept(%s)", peer));
    }
    e.set_connection(std::make_unique<CmConnection>(conn, &e, /*active=*/false,
                                                    established, peer));
    return ep;
  }

  std::unique_ptr<CmId> cm_;
  EndpointAttr attr_;
  std::string address_;
};

// The ids of a connection CmConnectQps made. The active side disconnects
// first; each CmId then destroys its id before its channel.
class CmQpLink final : public QpLink {
 public:
  ~CmQpLink() override {
    if (established && active != nullptr && active->id != nullptr) {
      rdma_disconnect(active->id);
    }
  }
  std::unique_ptr<CmId> listener;
  std::unique_ptr<CmId> passive;
  std::unique_ptr<CmId> active;
  bool established = false;
};

// The name of the RDMA device of a hw QP; EINVAL for a QP of another
// provider.
absl::StatusOr<std::string> QpDevice(const Qp* qp) {
  ibv_context* context = RawContext(qp->pd()->context());
  if (context == nullptr) {
    return Errno(EINVAL, "qp %u is not a QP of the hw provider",
                 qp->qp_num());
  }
  return std::string(ibv_get_device_name(context->device));
}

// The id must sit on the device the QP was made on: rdma_cm hands the
// connection to the QP of that number on the id's device (iw_cm.c
// iw_cm_connect: iw_get_qp).
absl::Status CheckIdDevice(const rdma_cm_id* id, const std::string& device,
                           const Qp* qp) {
  const std::string actual =
      id->verbs != nullptr ? ibv_get_device_name(id->verbs->device) : "";
  if (actual != device) {
    return Errno(EINVAL, "qp %u is on %s but its rdma_cm id bound to '%s'",
                 qp->qp_num(), device, actual);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Listener>> CmListen(absl::string_view address,
                                                   const EndpointAttr& attr) {
  absl::StatusOr<SockAddr> addr = ParseAddress(address);
  if (!addr.ok()) return addr.status();
  auto cm = std::make_unique<CmId>();
  if (absl::Status s = OpenCmId(attr.qp_type, cm.get()); !s.ok()) return s;
  if (rdma_bind_addr(cm->id, addr->get()) != 0) {
    return SysError(errno, absl::StrFormat("rdma_bind_addr(%s)", address));
  }
  if (absl::Status s = CheckDevice(cm->id, attr, address); !s.ok()) return s;
  if (rdma_listen(cm->id, 16) != 0) {
    return SysError(errno, absl::StrFormat("rdma_listen(%s)", address));
  }
  SockAddr bound;
  std::memcpy(&bound.storage, rdma_get_local_addr(cm->id),
              sizeof(bound.storage));
  bound.set_port(ntohs(rdma_get_src_port(cm->id)));
  return std::unique_ptr<Listener>(
      new CmListener(std::move(cm), attr, FormatAddress(bound.get())));
}

absl::StatusOr<std::unique_ptr<Endpoint>> CmConnect(absl::string_view address,
                                                    const EndpointAttr& attr,
                                                    const SockAddr* source) {
  absl::StatusOr<SockAddr> dst = ParseAddress(address);
  if (!dst.ok()) return dst.status();
  if (dst->port() == 0) {
    return Errno(EINVAL, "Connect: address '%s' has port 0", address);
  }
  auto cm = std::make_shared<CmId>();
  if (absl::Status s = OpenCmId(attr.qp_type, cm.get()); !s.ok()) return s;
  SockAddr src;
  if (source != nullptr) src = *source;
  if (rdma_resolve_addr(cm->id, source != nullptr ? src.get() : nullptr,
                        dst->get(), kResolveTimeoutMs) != 0) {
    return SysError(errno, absl::StrFormat("rdma_resolve_addr(%s)", address));
  }
  const absl::Duration wait = absl::Milliseconds(kResolveTimeoutMs + 1000);
  const std::string context = absl::StrCat("connect to ", address);
  if (absl::Status s =
          Expect(cm->channel, RDMA_CM_EVENT_ADDR_RESOLVED, wait, context);
      !s.ok()) {
    return s;
  }
  if (rdma_resolve_route(cm->id, kResolveTimeoutMs) != 0) {
    return SysError(errno, absl::StrFormat("rdma_resolve_route(%s)", address));
  }
  if (absl::Status s =
          Expect(cm->channel, RDMA_CM_EVENT_ROUTE_RESOLVED, wait, context);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::unique_ptr<Endpoint>> ep = EndpointOn(cm, attr, address);
  if (!ep.ok()) return ep.status();
  Endpoint& e = **ep;
  const DeviceAttr& dev = e.context()->device_attr();
  rdma_conn_param param = {};
  param.qp_num = e.qp()->qp_num();
  std::string request_data;  // outlives rdma_connect
  if (attr.qp_type == QpType::kUd) {
    if (absl::Status s = ReadyUd(cm->id, e); !s.ok()) return s;
  } else {
    if (absl::Status s = MoveQp(cm->id, e, IBV_QPS_INIT); !s.ok()) return s;
    param.responder_resources =
        Clamp(attr.max_dest_rd_atomic, dev.max_qp_rd_atom);
    param.initiator_depth = Clamp(attr.max_rd_atomic, dev.max_qp_init_rd_atom);
    param.retry_count = Clamp(attr.retry_cnt, 7);
    param.rnr_retry_count = Clamp(attr.rnr_retry, 7);
    param.flow_control = 1;
    if (!IsIwarp(cm->id)) {
      request_data = EncodePsn(attr.sq_psn);
      param.private_data = request_data.data();
      param.private_data_len = static_cast<uint8_t>(request_data.size());
    }
  }
  if (rdma_connect(cm->id, &param) != 0) {
    return SysError(errno, absl::StrFormat("rdma_connect(%s)", address));
  }
  e.set_connection(std::make_unique<CmConnection>(
      cm, &e, /*active=*/true, /*established=*/false, std::string(address)));
  return ep;
}

absl::StatusOr<std::unique_ptr<QpLink>> CmConnectQps(
    Qp* a, Qp* b, const EndpointAttr& attr) {
  if (a == nullptr || b == nullptr || a == b) {
    return Errno(EINVAL, "ConnectQps needs two distinct QPs");
  }
  absl::StatusOr<std::string> device_a = QpDevice(a);
  if (!device_a.ok()) return device_a.status();
  absl::StatusOr<std::string> device_b = QpDevice(b);
  if (!device_b.ok()) return device_b.status();
  if (a->type() != QpType::kRc || b->type() != QpType::kRc) {
    return Errno(EINVAL, "ConnectQps: qp %u is %s and qp %u is %s; rdma_cm "
                 "connects RC QPs (RDMA_PS_TCP)", a->qp_num(),
                 QpTypeName(a->type()), b->qp_num(), QpTypeName(b->type()));
  }
  absl::StatusOr<SockAddr> src = DeviceAddress(*device_a);
  if (!src.ok()) return src.status();
  absl::StatusOr<SockAddr> dst = DeviceAddress(*device_b);
  if (!dst.ok()) return dst.status();
  const std::string context =
      absl::StrFormat("ConnectQps(qp %u on %s, qp %u on %s)", a->qp_num(),
                      *device_a, b->qp_num(), *device_b);
  const absl::Duration wait = absl::Milliseconds(kResolveTimeoutMs + 1000);
  auto link = std::make_unique<CmQpLink>();

  // The passive side listens on b's device, at a port the kernel picks.
  link->listener = std::make_unique<CmId>();
  if (absl::Status s = OpenCmId(QpType::kRc, link->listener.get()); !s.ok()) {
    return s;
  }
  if (rdma_bind_addr(link->listener->id, dst->get()) != 0) {
    return SysError(errno, absl::StrCat(context, ": rdma_bind_addr"));
  }
  if (rdma_listen(link->listener->id, 1) != 0) {
    return SysError(errno, absl::StrCat(context, ": rdma_listen"));
  }
  dst->set_port(ntohs(rdma_get_src_port(link->listener->id)));

  // The active side resolves from a's device and connects with a.
  link->active = std::make_unique<CmId>();
  rdma_cm_id* active = nullptr;
  if (absl::Status s = OpenCmId(QpType::kRc, link->active.get()); !s.ok()) {
    return s;
  }
  active = link->active->id;
  if (rdma_resolve_addr(active, src->get(), dst->get(), kResolveTimeoutMs) !=
      0) {
    return SysError(errno, absl::StrCat(context, ": rdma_resolve_addr"));
  }
  if (absl::Status s = Expect(link->active->channel,
                              RDMA_CM_EVENT_ADDR_RESOLVED, wait, context);
      !s.ok()) {
    return s;
  }
  if (rdma_resolve_route(active, kResolveTimeoutMs) != 0) {
    return SysError(errno, absl::StrCat(context, ": rdma_resolve_route"));
  }
  if (absl::Status s = Expect(link->active->channel,
                              RDMA_CM_EVENT_ROUTE_RESOLVED, wait, context);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckIdDevice(active, *device_a, a); !s.ok()) return s;
  if (absl::Status s = MoveQpTo(active, a, attr, IBV_QPS_INIT); !s.ok()) {
    return s;
  }
  const DeviceAttr& dev_a = a->pd()->context()->device_attr();
  rdma_conn_param param = {};
  param.qp_num = a->qp_num();
  param.responder_resources =
      Clamp(attr.max_dest_rd_atomic, dev_a.max_qp_rd_atom);
  param.initiator_depth = Clamp(attr.max_rd_atomic, dev_a.max_qp_init_rd_atom);
  param.retry_count = Clamp(attr.retry_cnt, 7);
  param.rnr_retry_count = Clamp(attr.rnr_retry, 7);
  param.flow_control = 1;
  if (rdma_connect(active, &param) != 0) {
    return SysError(errno, absl::StrCat(context, ": rdma_connect"));
  }

  // The request reaches the listener; b takes it.
  absl::StatusOr<CmEvent> request =
      NextEvent(link->listener->channel, absl::Now() + wait,
                absl::StrCat("the connection request (", context, ")"));
  if (!request.ok()) return request.status();
  if (request->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
    return EventError(*request, context);
  }
  link->passive = std::make_unique<CmId>();
  link->passive->id = request->id;
  rdma_cm_id* passive = request->id;
  if (absl::Status s = CreateChannel(link->passive.get()); !s.ok()) return s;
  if (rdma_migrate_id(passive, link->passive->channel) != 0) {
    return SysError(errno, absl::StrCat(context, ": rdma_migrate_id"));
  }
  if (absl::Status s = CheckIdDevice(passive, *device_b, b); !s.ok()) {
    rdma_reject(passive, nullptr, 0);
    return s;
  }
  const DeviceAttr& dev_b = b->pd()->context()->device_attr();
  const int resp_res = Clamp(
      std::min<int>(attr.max_dest_rd_atomic, request->conn.responder_resources),
      dev_b.max_qp_rd_atom);
  const int init_depth = Clamp(
      std::min<int>(attr.max_rd_atomic, request->conn.initiator_depth),
      dev_b.max_qp_init_rd_atom);
  absl::Status moved = MoveQpTo(passive, b, attr, IBV_QPS_INIT);
  // IB and RoCE: the passive side is ready before it accepts; on iWARP the
  // kernel's iw_cm moves the QP to RTS itself (siw_accept).
  if (moved.ok() && !IsIwarp(passive)) {
    moved = MoveQpTo(passive, b, attr, IBV_QPS_RTR, resp_res, init_depth);
    if (moved.ok()) {
      moved = MoveQpTo(passive, b, attr, IBV_QPS_RTS, resp_res, init_depth);
    }
  }
  if (!moved.ok()) {
    rdma_reject(passive, nullptr, 0);
    return moved;
  }
  rdma_conn_param reply = {};
  reply.qp_num = b->qp_num();
  reply.responder_resources = static_cast<uint8_t>(resp_res);
  reply.initiator_depth = static_cast<uint8_t>(init_depth);
  reply.rnr_retry_count = Clamp(attr.rnr_retry, 7);
  reply.flow_control = 1;
  if (rdma_accept(passive, &reply) != 0) {
    return SysError(errno, absl::StrCat(context, ": rdma_accept"));
  }

  // The active side completes (IB/RoCE: RTR, RTS and the RTU are ours with
  // an external QP), then the passive side sees the connection established.
  absl::StatusOr<CmEvent> response =
      NextEvent(link->active->channel, absl::Now() + wait,
                absl::StrCat("the connection response (", context, ")"));
  if (!response.ok()) return response.status();
  if (response->type == RDMA_CM_EVENT_CONNECT_RESPONSE) {
    absl::Status s = MoveQpTo(active, a, attr, IBV_QPS_RTR);
    if (s.ok()) s = MoveQpTo(active, a, attr, IBV_QPS_RTS);
    if (s.ok() && rdma_establish(active) != 0) {
      s = SysError(errno, absl::StrCat(context, ": rdma_establish"));
    }
    if (!s.ok()) {
      rdma_reject(active, nullptr, 0);
      return s;
    }
  } else if (response->type != RDMA_CM_EVENT_ESTABLISHED ||
             response->status != 0) {
    return EventError(*response, context);
  }
  link->established = true;
  if (absl::Status s = Expect(link->passive->channel,
                              RDMA_CM_EVENT_ESTABLISHED, wait, context);
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<QpLink>(std::move(link));
}

}  // namespace hw
}  // namespace verbsim
