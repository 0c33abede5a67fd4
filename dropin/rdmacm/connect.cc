// Connections (rdma_connect(3), rdma_accept(3), rdma_reject(3),
// rdma_disconnect(3), rdma_establish(3)) and the CM messages that drive them.
//
// RC (RDMA_PS_TCP): REQ -> REP -> RTU, then DREQ -> DREP; the QPs move to
// RTR/RTS with the peer's QPN, PSN and GID before REP (passive) and on REP
// (active), as librdmacm does. UD (RDMA_PS_UDP): SIDR REQ -> SIDR REP, and
// the active side's ESTABLISHED event carries the peer's QPN, Q_Key and an
// address handle. Statuses are the kernel CM's: a REQ nobody listens for is
// REJECTED with reason 8 (IB_CM_REJ_INVALID_SERVICE_ID), a consumer's
// rejection 28 (IB_CM_REJ_CONSUMER_DEFINED), a SIDR REQ nobody listens for
// UNREACHABLE with status 1 (IB_SIDR_UNSUPPORTED). An event's private data
// is the whole field of its message, zero-padded past what the peer gave
// (cma.c reports the field's size, e.g. IB_CM_REP_PRIVATE_DATA_SIZE).
//
// Timeouts and retries are the kernel CM's (core/cm_timing.h): a REQ, SIDR
// REQ, REP or DREQ that gets no answer is sent again after each try, up to
// the retry count, and then given up: UNREACHABLE with status -ETIMEDOUT
// for a REQ, SIDR REQ or REP (cma.c cma_ib_handler: IB_CM_REQ_ERROR and
// IB_CM_REP_ERROR; cma_sidr_rep_handler: IB_CM_SIDR_REQ_ERROR), DISCONNECTED
// with -ETIMEDOUT for a DREQ (IB_CM_DREQ_ERROR). The QP is left as it is, as
// cma.c and librdmacm leave it on these events. A passive CM whose consumer
// has not answered a REQ yet, or an active one whose consumer has not
// answered a REP (rdma_establish), answers the repeated message with an MRA
// (cm.c cm_dup_req_handler, cm_dup_rep_handler, after cma.c's
// ib_prepare_cm_mra), which stretches the sender's tries to the MRA's
// service timeout (cm.c cm_mra_handler). An answer that comes after its
// request was given up is ignored.
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {

namespace {

constexpr int kRejInvalidServiceId = 8;
constexpr int kRejConsumerDefined = 28;
constexpr uint32_t kSidrUnsupported = 1;
constexpr uint32_t kSidrReject = 2;

// Private data limits: the CM MAD's field, less librdmacm's 36-byte header
// on a REQ (rdma_connect(3), rdma_accept(3), rdma_reject(3)).
constexpr int kReqPrivate = 56;
constexpr int kRepPrivate = 196;
constexpr int kRejPrivate = 148;
constexpr int kSidrReqPrivate = 180;
constexpr int kSidrRepPrivate = 136;

// iWARP (the siw profile): the kernel's iw_cm hands the private data to
// siw, which sends it in an MPA request or reply after the 4-byte MPA v2
// IRD/ORD header, and the peer's event carries exactly what was sent
// (siw_cm.c siw_cm_upcall). Any u8 length is taken; siw_send_mpareqrep adds
// the header to a u8 length, so from 252 bytes on the header's length
// wraps and the peer refuses the message (siw_recv_mpa_rr: "extra data",
// -EPROTO). The sim takes every length and fails those messages at the peer
// as siw does.
constexpr int kIwarpPrivate = 255;
constexpr int kIwarpIntact = 251;
// How long siw's active side waits for the MPA reply (siw_cm.h
// MPAREQ_TIMEOUT).
constexpr int64_t kIwarpMpaReplyMs = 10000;

// A responder_resources / initiator_depth value from a program:
// RDMA_MAX_RESP_RES (0xff) means the device's limit; more than the limit is
// EINVAL (librdmacm's ucma_valid_param).
int Resources(uint8_t asked, uint8_t limit, uint8_t* out) {
  if (asked == RDMA_MAX_RESP_RES) {
    *out = limit;
    return 0;
  }
  if (asked > limit) return Fail(EINVAL);
  *out = asked;
  return 0;
}

void TakePeer(Id* id, const Msg& m) {
  id->peer.qpn = m.qpn;
  id->peer.psn = m.psn;
  id->peer.qkey = m.qkey;
  std::memcpy(id->peer.gid.raw, m.gid, 16);
  id->peer.responder_resources = m.responder_resources;
  id->peer.initiator_depth = m.initiator_depth;
  id->peer.retry_count = m.retry_count;
  id->peer.rnr_retry_count = m.rnr_retry_count;
  id->has_peer = true;
}

// The receiver's view of the peer's resources (the kernel swaps them:
// cm_format_req_event / cm_format_rep_event).
void FillConnParam(Event* e, const Msg& m) {
  e->ev.param.conn.responder_resources = m.initiator_depth;
  e->ev.param.conn.initiator_depth = m.responder_resources;
  e->ev.param.conn.retry_count = m.retry_count;
  e->ev.param.conn.rnr_retry_count = m.rnr_retry_count;
  e->ev.param.conn.qp_num = m.qpn;
}

void ReportDisconnected(Id* id, int status = 0) {
  StopTimer(id);
  if (id->disconnect_reported) return;
  id->disconnect_reported = true;
  Deliver(id, NewEvent(id, RDMA_CM_EVENT_DISCONNECTED, status));
}

// One try of this id's connection messages (REQ or REP, and later its
// DREQ): the active side's REQ time, or the response time the peer's REQ
// gave the passive side (cm.c: cm_id_priv->timeout_ms, set by
// ib_send_cm_req or cm_req_handler and used for every later message).
int64_t ConnTryMs(const Id* id) {
  return id->passive ? RepTryMs(id->req_response_timeout)
                     : ReqTryMs(Timing());
}
int ConnRetries(const Id* id) {
  return id->passive ? id->req_max_retries : Timing().max_retries;
}

// Answers a repeated REQ or REP with an MRA: the consumer has the request
// and has not answered yet (cm.c cm_dup_req_handler in MRA_REQ_SENT,
// cm_dup_rep_handler in MRA_REP_SENT).
void SendMra(Id* id) {
  Msg mra = MsgFrom(id, MsgType::kMra);
  mra.status = static_cast<uint32_t>(Timing().mra_timeout);
  SendMsg(id, mra);
}

}  // namespace

Id* OnRequest(Id* listener, int fd, const Msg& m) {
  if (listener->state != State::kListening) return nullptr;
  // siw: an MPA request whose length wrapped is dropped with its stream
  // before the listener hears of it (siw_cm.c siw_proc_mpareq fails in
  // siw_recv_mpa_rr); the active side sees the stream close.
  if (IsIwarp(listener) && m.private_data_len > kIwarpIntact) return nullptr;
  Node* node = LocalNodeOf(ntohl(m.dst_ip));
  if (node == nullptr) return nullptr;
  Id* child = NewId(listener->sync ? nullptr : listener->id.channel,
                    listener->id.context, listener->id.ps, listener->id.qp_type);
  if (child == nullptr) return nullptr;
  AttachNode(child, node);
  child->src.sin_family = AF_INET;
  child->src.sin_addr.s_addr = m.dst_ip;
  child->src.sin_port = m.dst_port;
  child->dst.sin_family = AF_INET;
  child->dst.sin_addr.s_addr = m.src_ip;
  child->dst.sin_port = m.src_port;
  TakePeer(child, m);
  FillRoute(child);
  child->id.route.addr.addr.ibaddr.dgid = child->peer.gid;
  FillPath(child);
  child->responder_resources = std::min(m.initiator_depth, node->max_rd_atom);
  child->initiator_depth = std::min(m.responder_resources, node->max_init_rd_atom);
  child->retry_count = m.retry_count;
  child->passive = true;
  child->req_response_timeout = m.cm_response_timeout;
  child->req_max_retries = m.max_cm_retries;
  child->conn_fd = fd;
  child->state = State::kRequested;
  Event* e = NewEvent(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m.private_data,
                      IsIwarp(child)                   ? m.private_data_len
                      : m.type == MsgType::kSidrReq ? kSidrReqPrivate
                                                       : kReqPrivate);
  e->ev.listen_id = &listener->id;
  if (m.type == MsgType::kSidrReq) {
    e->ev.param.ud.ah_attr = AhToPeer(child);
    e->ev.param.ud.qp_num = m.qpn;
    e->ev.param.ud.qkey = m.qkey;
  } else {
    FillConnParam(e, m);
  }
  Deliver(listener, e);
  return child;
}

void StartRetries(Id* id, const Msg& msg, int retries, int64_t try_ms) {
  if (id->resend == nullptr) id->resend = new Msg;
  *id->resend = msg;
  id->tries_left = retries;
  id->try_ms = try_ms;
  id->mra_received = false;
  ArmTimer(id, try_ms);
}

void OnTimer(Id* id) {
  if (id->state != State::kConnecting && id->state != State::kAccepted &&
      id->state != State::kDisconnecting) {
    return;  // answered meanwhile
  }
  if (id->tries_left > 0) {
    // The MAD layer's retry (mad.c retry_send): the same message again.
    --id->tries_left;
    if (id->resend != nullptr) SendMsg(id, *id->resend);
    ArmTimer(id, id->try_ms);
    return;
  }
  if (Debug()) Warn("no answer after the last try: giving up");
  if (id->state == State::kDisconnecting) {
    id->state = State::kDisconnected;
    ReportDisconnected(id, -ETIMEDOUT);
    return;
  }
  id->state = State::kTimedOut;
  // siw gives up its stream with the MPA request (siw_cm.c: release_cep).
  if (IsIwarp(id)) CloseSockets(id);
  Deliver(id, NewEvent(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT));
}

void OnMessage(Id* id, const Msg* m) {
  if (m == nullptr) {  // the peer's end is closed
    StopTimer(id);
    switch (id->state) {
      case State::kConnecting:
        // The passive side went away without an answer: its CM would have
        // sent a consumer REJ when the id was destroyed. On iWARP the
        // stream closed under the MPA request: siw_cm.c
        // SIW_CM_WORK_PEER_CLOSE reports CONNECT_REPLY -ECONNRESET, which
        // cma.c cma_iw_handler makes REJECTED.
        id->state = State::kRejected;
        if (IsIwarp(id)) {
          Deliver(id, NewEvent(id, RDMA_CM_EVENT_REJECTED, -ECONNRESET));
          break;
        }
        Deliver(id, NewEvent(id, IsUd(id) ? RDMA_CM_EVENT_UNREACHABLE
                                          : RDMA_CM_EVENT_REJECTED,
                             IsUd(id) ? static_cast<int>(kSidrReject)
                                      : kRejConsumerDefined));
        break;
      case State::kAccepted:
        id->state = State::kRejected;
        Deliver(id, NewEvent(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT));
        break;
      case State::kEstablished:
      case State::kConnectResponse:
      case State::kDisconnecting:
        id->state = State::kDisconnected;
        ReportDisconnected(id);
        break;
      default:
        break;
    }
    return;
  }
  if (Debug()) {
    Warn("message type " + std::to_string(static_cast<int>(m->type)) +
         " in state " + std::to_string(static_cast<int>(id->state)));
  }
  switch (m->type) {
    case MsgType::kRep: {
      if (id->state == State::kConnectResponse) {
        SendMra(id);  // the program has not called rdma_establish yet
        return;
      }
      if (id->state != State::kConnecting) return;
      StopTimer(id);
      if (IsIwarp(id) && m->private_data_len > kIwarpIntact) {
        // siw_cm.c siw_proc_mpareply: the reply's length wrapped, so
        // siw_recv_mpa_rr fails it: CONNECT_REPLY -EINVAL, CONNECT_ERROR
        // (cma.c cma_iw_handler), and the stream closes.
        CloseSockets(id);
        id->state = State::kRejected;
        Deliver(id, NewEvent(id, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL));
        return;
      }
      TakePeer(id, *m);
      id->responder_resources = std::min(id->responder_resources, m->initiator_depth);
      id->initiator_depth = std::min(id->initiator_depth, m->responder_resources);
      if (id->id.qp == nullptr) {
        // The program made its QP itself: it moves it (rdma_init_qp_attr)
        // and calls rdma_establish.
        id->state = State::kConnectResponse;
        Event* e = NewEvent(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0,
                            m->private_data,
                            IsIwarp(id) ? m->private_data_len : kRepPrivate);
        FillConnParam(e, *m);
        Deliver(id, e);
        return;
      }
      if (MoveQp(id, {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) != 0) {
        const int err = errno;
        Msg rej = MsgFrom(id, MsgType::kRej);
        rej.status = kRejConsumerDefined;
        SendMsg(id, rej);
        id->state = State::kRejected;
        Deliver(id, NewEvent(id, RDMA_CM_EVENT_CONNECT_ERROR, -err));
        return;
      }
      SendMsg(id, MsgFrom(id, MsgType::kRtu));
      id->state = State::kEstablished;
      Event* e = NewEvent(id, RDMA_CM_EVENT_ESTABLISHED, 0, m->private_data,
                          IsIwarp(id) ? m->private_data_len : kRepPrivate);
      FillConnParam(e, *m);
      Deliver(id, e);
      return;
    }
    case MsgType::kSidrRep: {
      if (id->state != State::kConnecting) return;
      CloseSockets(id);  // SIDR is one exchange
      if (m->status != 0) {
        id->state = State::kRejected;
        Deliver(id, NewEvent(id, RDMA_CM_EVENT_UNREACHABLE,
                             static_cast<int>(m->status), m->private_data,
                             kSidrRepPrivate));
        return;
      }
      TakePeer(id, *m);
      id->state = State::kEstablished;
      Event* e = NewEvent(id, RDMA_CM_EVENT_ESTABLISHED, 0, m->private_data,
                          kSidrRepPrivate);
      e->ev.param.ud.ah_attr = AhToPeer(id);
      e->ev.param.ud.qp_num = m->qpn;
      e->ev.param.ud.qkey = m->qkey;
      Deliver(id, e);
      return;
    }
    case MsgType::kRej: {
      if (id->state != State::kConnecting && id->state != State::kAccepted &&
          id->state != State::kConnectResponse) {
        return;
      }
      CloseSockets(id);
      id->state = State::kRejected;
      if (IsIwarp(id)) {
        if (m->private_data_len > kIwarpIntact) {
          // As an over-long reply: refused before its reject bit is seen.
          Deliver(id, NewEvent(id, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL));
          return;
        }
        // An MPA reply with the reject bit: siw_cm.c siw_proc_mpareply
        // reports CONNECT_REPLY -ECONNRESET with the reply's private data.
        Deliver(id, NewEvent(id, RDMA_CM_EVENT_REJECTED, -ECONNRESET,
                             m->private_data, m->private_data_len));
        return;
      }
      Deliver(id, NewEvent(id, RDMA_CM_EVENT_REJECTED,
                           static_cast<int>(m->status), m->private_data,
                           kRejPrivate));
      return;
    }
    case MsgType::kRtu: {
      if (id->state != State::kAccepted) return;
      StopTimer(id);
      id->state = State::kEstablished;
      Deliver(id, NewEvent(id, RDMA_CM_EVENT_ESTABLISHED, 0));
      return;
    }
    case MsgType::kDreq: {
      if (id->state != State::kEstablished && id->state != State::kDisconnecting &&
          id->state != State::kAccepted) {
        return;
      }
      if (IsIwarp(id)) {
        // iWARP closes the stream: both sides are told at once (siw_cm.c
        // SIW_CM_WORK_PEER_CLOSE: IW_CM_EVENT_DISCONNECT and CLOSE), and
        // the QP goes to ERR with its queues flushed (siw_qp_llp_close).
        SendMsg(id, MsgFrom(id, MsgType::kDrep));
        if (id->id.qp != nullptr) {
          ibv_qp_attr attr{};
          attr.qp_state = IBV_QPS_ERR;
          ibv_modify_qp(id->id.qp, &attr, IBV_QP_STATE);
        }
      } else {
        // cm.c cm_dreq_handler: the id waits in DREQ_RCVD; the DREP goes
        // out when the consumer calls rdma_disconnect or destroys the id
        // (cma.c rdma_disconnect: ib_send_cm_drep), so the initiator's
        // DISCONNECTED comes only then.
        id->drep_owed = true;
      }
      id->state = State::kDisconnected;
      ReportDisconnected(id);
      return;
    }
    case MsgType::kReq: {
      // The REQ again: the active side's retry.
      if (id->state == State::kRequested && !IsUd(id)) SendMra(id);
      return;
    }
    case MsgType::kMra: {
      const bool waiting = (id->state == State::kConnecting && !IsUd(id)) ||
                           id->state == State::kAccepted;
      if (!waiting || id->mra_received || !id->timer_armed) return;
      // cm.c cm_mra_handler: the message's timer now runs for the MRA's
      // service timeout plus the path's ACK timeout (ib_modify_mad).
      id->mra_received = true;
      id->try_ms = AfterMraTryMs(static_cast<int>(m->status),
                                 Timing().packet_life_time);
      ArmTimer(id, id->try_ms);
      return;
    }
    case MsgType::kDrep: {
      if (id->state != State::kDisconnecting) return;
      id->state = State::kDisconnected;
      ReportDisconnected(id);
      return;
    }
    default:
      return;
  }
}

}  // namespace verbsim::rdmacm

using namespace verbsim::rdmacm;  // NOLINT: the C entry points below

extern "C" {

int rdma_connect(rdma_cm_id* cm_id, rdma_conn_param* param) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  {
    std::lock_guard<std::mutex> lock(CmMutex());
    if (id->state != State::kRouteResolved) return Fail(EINVAL);
    const bool ud = IsUd(id);
    Msg m{};
    if (id->id.qp != nullptr) {
      id->qp_num = id->id.qp->qp_num;
    } else if (param != nullptr && param->qp_num != 0) {
      id->qp_num = param->qp_num;  // a QP the program made (ibv_create_qp)
    } else {
      Warn("rdma_connect: the id has no QP and conn_param gives no qp_num");
      return Fail(EINVAL);
    }
    if (param != nullptr) {
      if (Resources(param->responder_resources, id->node->max_rd_atom,
                    &id->responder_resources) != 0 ||
          Resources(param->initiator_depth, id->node->max_init_rd_atom,
                    &id->initiator_depth) != 0) {
        return -1;
      }
      id->retry_count = std::min<uint8_t>(param->retry_count, 7);
      id->rnr_retry_count = std::min<uint8_t>(param->rnr_retry_count, 7);
    }
    m = MsgFrom(id, ud ? MsgType::kSidrReq : MsgType::kReq);
    const bool iwarp = IsIwarp(id);
    if (param != nullptr &&
        SetPrivateData(&m, param->private_data, param->private_data_len,
                       iwarp ? kIwarpPrivate
                       : ud  ? kSidrReqPrivate
                             : kReqPrivate) != 0) {
      return -1;
    }
    id->state = State::kConnecting;
    if (iwarp && ConnectSocket(id) != 0) {
      // iWARP connects a TCP stream first: the peer's reset fails the call
      // (siw_cm.c siw_connect: kernel_bindconnect -ECONNREFUSED), and the
      // id is resolved again (cma.c rdma_connect's err_state).
      id->state = State::kRouteResolved;
      return Fail(ECONNREFUSED);
    }
    if (iwarp) {
      if (!SendMsg(id, m)) {
        id->state = State::kRejected;
        Deliver(id, NewEvent(id, RDMA_CM_EVENT_REJECTED, -ECONNRESET));
      } else {
        // TCP retransmits, so no CM retries; siw waits MPAREQ_TIMEOUT (10 s)
        // for the MPA reply, then reports CONNECT_REPLY -ETIMEDOUT, which
        // cma.c cma_iw_handler makes UNREACHABLE (siw_cm.h, siw_cm.c
        // SIW_CM_WORK_MPATIMEOUT): OnTimer's verdict after no retry.
        StartRetries(id, m, 0, kIwarpMpaReplyMs);
      }
    } else if (ConnectSocket(id) != 0) {
      // Nobody listens at that address and port.
      id->state = State::kRejected;
      Deliver(id, ud ? NewEvent(id, RDMA_CM_EVENT_UNREACHABLE,
                                static_cast<int>(kSidrUnsupported))
                     : NewEvent(id, RDMA_CM_EVENT_REJECTED, kRejInvalidServiceId));
    } else if (!SendMsg(id, m)) {
      id->state = State::kRejected;
      Deliver(id, NewEvent(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET));
    } else {
      StartRetries(id, m, Timing().max_retries,
                   ud ? SidrTryMs(Timing()) : ReqTryMs(Timing()));
    }
  }
  return id->sync ? WaitSync(id) : 0;
}

int rdma_accept(rdma_cm_id* cm_id, rdma_conn_param* param) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  bool wait = false;
  {
    std::lock_guard<std::mutex> lock(CmMutex());
    if (id->state != State::kRequested) return Fail(EINVAL);
    const bool ud = IsUd(id);
    if (id->id.qp != nullptr) {
      id->qp_num = id->id.qp->qp_num;
    } else if (param != nullptr && param->qp_num != 0) {
      id->qp_num = param->qp_num;
    } else {
      Warn("rdma_accept: the id has no QP and conn_param gives no qp_num");
      return Fail(EINVAL);
    }
    if (param != nullptr && !ud) {
      if (Resources(param->responder_resources, id->node->max_rd_atom,
                    &id->responder_resources) != 0 ||
          Resources(param->initiator_depth, id->node->max_init_rd_atom,
                    &id->initiator_depth) != 0) {
        return -1;
      }
      id->rnr_retry_count = std::min<uint8_t>(param->rnr_retry_count, 7);
    }
    Msg m = MsgFrom(id, ud ? MsgType::kSidrRep : MsgType::kRep);
    const bool iwarp = IsIwarp(id);
    if (param != nullptr &&
        SetPrivateData(&m, param->private_data, param->private_data_len,
                       iwarp ? kIwarpPrivate
                       : ud  ? kSidrRepPrivate
                             : kRepPrivate) != 0) {
      // cma.c rdma_accept: a failed accept moves the QP to ERR and rejects
      // the request (IB_CM_REJ_CONSUMER_DEFINED; a SIDR REQ gets a SIDR REP
      // with IB_SIDR_REJECT).
      const int err = errno;
      if (id->id.qp != nullptr && !ud) {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_ERR;
        ibv_modify_qp(id->id.qp, &attr, IBV_QP_STATE);
      }
      Msg rej = MsgFrom(id, ud ? MsgType::kSidrRep : MsgType::kRej);
      rej.status = ud ? kSidrReject : kRejConsumerDefined;
      SendMsg(id, rej);
      CloseSockets(id);
      id->state = State::kRejected;
      return Fail(err);
    }
    if (ud) {
      m.qkey = RDMA_UDP_QKEY;
      SendMsg(id, m);
      CloseSockets(id);
      id->state = State::kEstablished;
      return 0;  // SIDR has no RTU: nothing to wait for
    }
    if (id->id.qp != nullptr &&
        MoveQp(id, {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) != 0) {
      const int err = errno;
      Msg rej = MsgFrom(id, MsgType::kRej);
      rej.status = kRejConsumerDefined;
      SendMsg(id, rej);
      id->state = State::kRejected;
      return Fail(err);
    }
    id->state = State::kAccepted;
    if (!SendMsg(id, m)) {
      id->state = State::kRejected;
      return Fail(ECONNRESET);
    }
    if (iwarp) {
      // siw_cm.c siw_accept reports IW_CM_EVENT_ESTABLISHED once its MPA
      // reply is sent: no RTU, no retries (TCP's).
      id->state = State::kEstablished;
      Deliver(id, NewEvent(id, RDMA_CM_EVENT_ESTABLISHED, 0));
    } else {
      StartRetries(id, m, ConnRetries(id), ConnTryMs(id));
    }
    wait = id->sync;
  }
  return wait ? WaitSync(id) : 0;
}

int rdma_reject(rdma_cm_id* cm_id, const void* private_data,
                uint8_t private_data_len) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  std::lock_guard<std::mutex> lock(CmMutex());
  if (id->state != State::kRequested) return Fail(EINVAL);
  const bool ud = IsUd(id);
  Msg m = MsgFrom(id, ud ? MsgType::kSidrRep : MsgType::kRej);
  m.status = ud ? kSidrReject : kRejConsumerDefined;
  if (SetPrivateData(&m, private_data, private_data_len,
                     IsIwarp(id) ? kIwarpPrivate
                     : ud        ? kSidrRepPrivate
                                 : kRejPrivate) != 0) {
    return -1;
  }
  SendMsg(id, m);
  CloseSockets(id);
  id->state = State::kRejected;
  return 0;
}

int rdma_establish(rdma_cm_id* cm_id) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  std::lock_guard<std::mutex> lock(CmMutex());
  if (id->state != State::kConnectResponse) return Fail(EINVAL);
  if (!SendMsg(id, MsgFrom(id, MsgType::kRtu))) return Fail(ECONNRESET);
  id->state = State::kEstablished;
  return 0;
}

int rdma_disconnect(rdma_cm_id* cm_id) {
  if (cm_id == nullptr) return Fail(EINVAL);
  Id* id = IdOf(cm_id);
  bool wait = false;
  {
    std::lock_guard<std::mutex> lock(CmMutex());
    switch (id->state) {
      case State::kEstablished:
      case State::kAccepted:
      case State::kConnectResponse:
        if (IsUd(id)) return Fail(EINVAL);  // nothing to disconnect
        // The QP stops first (librdmacm's ucma_modify_qp_err).
        if (id->id.qp != nullptr) {
          ibv_qp_attr attr{};
          attr.qp_state = IBV_QPS_ERR;
          ibv_modify_qp(id->id.qp, &attr, IBV_QP_STATE);
        }
        if (Msg dreq = MsgFrom(id, MsgType::kDreq); SendMsg(id, dreq)) {
          id->state = State::kDisconnecting;
          StartRetries(id, dreq, ConnRetries(id), ConnTryMs(id));
        } else {
          id->state = State::kDisconnected;
          ReportDisconnected(id);
        }
        break;
      case State::kDisconnecting:
      case State::kDisconnected:
        // The DREP the peer's DREQ is owed (cma.c rdma_disconnect: the
        // DREQ cannot go out in DREQ_RCVD, ib_send_cm_drep does).
        if (id->drep_owed) SendMsg(id, MsgFrom(id, MsgType::kDrep));
        id->drep_owed = false;
        if (id->id.qp != nullptr) {
          ibv_qp_attr attr{};
          attr.qp_state = IBV_QPS_ERR;
          ibv_modify_qp(id->id.qp, &attr, IBV_QP_STATE);
        }
        break;
      default:
        return Fail(EINVAL);
    }
    // A sync id takes its one DISCONNECTED event here, whoever started.
    wait = id->sync && !id->disconnect_waited;
    id->disconnect_waited = true;
  }
  return wait ? WaitSync(id) : 0;
}

}  // extern "C"
