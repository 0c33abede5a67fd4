#include "core/endpoint.h"

#include <utility>

#include "absl/time/clock.h"
#include "core/errors.h"

namespace verbsim {

absl::StatusOr<std::unique_ptr<Endpoint>> Endpoint::Create(
    std::unique_ptr<Context> context, const EndpointAttr& attr) {
  if (context == nullptr) return Errno(EINVAL, "Endpoint::Create: null context");
  if (attr.cq_depth <= 0) {
    return Errno(EINVAL, "Endpoint::Create: cq_depth %d", attr.cq_depth);
  }
  std::unique_ptr<Endpoint> ep(new Endpoint());
  ep->attr_ = attr;
  ep->context_ = std::move(context);
  absl::StatusOr<std::unique_ptr<Pd>> pd = ep->context_->AllocPd();
  if (!pd.ok()) return pd.status();
  ep->pd_ = *std::move(pd);
  auto send_channel = ep->context_->CreateCompChannel();
  if (!send_channel.ok()) return send_channel.status();
  ep->send_channel_ = *std::move(send_channel);
  auto recv_channel = ep->context_->CreateCompChannel();
  if (!recv_channel.ok()) return recv_channel.status();
  ep->recv_channel_ = *std::move(recv_channel);
  auto send_cq = ep->context_->CreateCq(attr.cq_depth, ep->send_channel_.get());
  if (!send_cq.ok()) return send_cq.status();
  ep->send_cq_ = *std::move(send_cq);
  auto recv_cq = ep->context_->CreateCq(attr.cq_depth, ep->recv_channel_.get());
  if (!recv_cq.ok()) return recv_cq.status();
  ep->recv_cq_ = *std::move(recv_cq);
  QpInitAttr init;
  init.send_cq = ep->send_cq_.get();
  init.recv_cq = ep->recv_cq_.get();
  init.cap = attr.cap;
  init.qp_type = attr.qp_type;
  init.sq_sig_all = attr.sq_sig_all;
  auto qp = ep->pd_->CreateQp(init);
  if (!qp.ok()) return qp.status();
  ep->qp_ = *std::move(qp);
  return ep;
}

Endpoint::~Endpoint() {
  // The connection first (it may refer to the QP), then the objects in
  // reverse order of creation.
  connection_.reset();
  qp_.reset();
  recv_cq_.reset();
  send_cq_.reset();
  recv_channel_.reset();
  send_channel_.reset();
  pd_.reset();
  context_.reset();
}

void Endpoint::set_connection(std::unique_ptr<Connection> connection) {
  connection_ = std::move(connection);
}

absl::Status Endpoint::WaitConnected(absl::Duration timeout) {
  if (connection_ == nullptr) {
    return Errno(ENOTCONN, "endpoint qp %u has no connection", qp_->qp_num());
  }
  return connection_->WaitEstablished(timeout);
}

absl::StatusOr<std::unique_ptr<Mr>> Endpoint::RegMsgs(void* addr,
                                                      size_t length) {
  return pd_->RegMr(addr, length, kAccessLocalWrite);
}
absl::StatusOr<std::unique_ptr<Mr>> Endpoint::RegRead(void* addr,
                                                      size_t length) {
  return pd_->RegMr(addr, length, kAccessLocalWrite | kAccessRemoteRead);
}
absl::StatusOr<std::unique_ptr<Mr>> Endpoint::RegWrite(void* addr,
                                                       size_t length) {
  return pd_->RegMr(addr, length, kAccessLocalWrite | kAccessRemoteWrite);
}
absl::StatusOr<std::unique_ptr<Mr>> Endpoint::RegMr(void* addr, size_t length,
                                                    uint32_t access) {
  return pd_->RegMr(addr, length, access);
}
absl::Status Endpoint::DeregMr(std::unique_ptr<Mr>& mr) {
  return Destroy(mr);
}

namespace {

// One SGE for a (addr, length, mr) triple as librdmacm builds it; a length
// beyond 32 bits cannot be expressed in an SGE.
absl::StatusOr<Sge> MakeSge(const void* addr, size_t length, const Mr* mr) {
  if (length > UINT32_MAX) {
    return Errno(EINVAL, "length %zu exceeds the 32-bit SGE length", length);
  }
  Sge sge;
  sge.addr = reinterpret_cast<uint64_t>(addr);
  sge.length = static_cast<uint32_t>(length);
  sge.lkey = mr != nullptr ? mr->lkey() : 0;
  return sge;
}

}  // namespace

absl::Status Endpoint::PostRecv(uint64_t wr_id, void* addr, size_t length,
                                const Mr* mr) {
  if (mr == nullptr) return Errno(EINVAL, "PostRecv: a receive needs an mr");
  absl::StatusOr<Sge> sge = MakeSge(addr, length, mr);
  if (!sge.ok()) return sge.status();
  return PostRecvv(wr_id, {&*sge, 1});
}

absl::Status Endpoint::PostRecvv(uint64_t wr_id, absl::Span<const Sge> sgl) {
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = sgl;
  return qp_->PostRecv(wr);
}

absl::Status Endpoint::PostSend(uint64_t wr_id, const void* addr,
                                size_t length, const Mr* mr, uint32_t flags) {
  absl::StatusOr<Sge> sge = MakeSge(addr, length, mr);
  if (!sge.ok()) return sge.status();
  // rdma_post_send(3): without an mr the data is sent inline.
  if (mr == nullptr) flags |= kSendInline;
  return PostSendv(wr_id, {&*sge, 1}, flags);
}

absl::Status Endpoint::PostSendv(uint64_t wr_id, absl::Span<const Sge> sgl,
                                 uint32_t flags) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = WrOpcode::kSend;
  wr.sg_list = sgl;
  wr.send_flags = flags;
  return PostOne(wr);
}

absl::Status Endpoint::PostRead(uint64_t wr_id, void* addr, size_t length,
                                const Mr* mr, uint32_t flags,
                                uint64_t remote_addr, uint32_t rkey) {
  if (mr == nullptr) return Errno(EINVAL, "PostRead: a read needs an mr");
  absl::StatusOr<Sge> sge = MakeSge(addr, length, mr);
  if (!sge.ok()) return sge.status();
  return PostReadv(wr_id, {&*sge, 1}, flags, remote_addr, rkey);
}

absl::Status Endpoint::PostReadv(uint64_t wr_id, absl::Span<const Sge> sgl,
                                 uint32_t flags, uint64_t remote_addr,
                                 uint32_t rkey) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = WrOpcode::kRdmaRead;
  wr.sg_list = sgl;
  wr.send_flags = flags;
  wr.rdma.remote_addr = remote_addr;
  wr.rdma.rkey = rkey;
  return PostOne(wr);
}

absl::Status Endpoint::PostWrite(uint64_t wr_id, const void* addr,
                                 size_t length, const Mr* mr, uint32_t flags,
                                 uint64_t remote_addr, uint32_t rkey) {
  absl::StatusOr<Sge> sge = MakeSge(addr, length, mr);
  if (!sge.ok()) return sge.status();
  if (mr == nullptr) flags |= kSendInline;
  return PostWritev(wr_id, {&*sge, 1}, flags, remote_addr, rkey);
}

absl::Status Endpoint::PostWritev(uint64_t wr_id, absl::Span<const Sge> sgl,
                                  uint32_t flags, uint64_t remote_addr,
                                  uint32_t rkey) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.sg_list = sgl;
  wr.send_flags = flags;
  wr.rdma.remote_addr = remote_addr;
  wr.rdma.rkey = rkey;
  return PostOne(wr);
}

absl::Status Endpoint::PostUdSend(uint64_t wr_id, const void* addr,
                                  size_t length, const Mr* mr, uint32_t flags,
                                  Ah* ah, uint32_t remote_qpn) {
  if (ah == nullptr) return Errno(EINVAL, "PostUdSend: null address handle");
  absl::StatusOr<Sge> sge = MakeSge(addr, length, mr);
  if (!sge.ok()) return sge.status();
  if (mr == nullptr) flags |= kSendInline;
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = WrOpcode::kSend;
  wr.sg_list = {&*sge, 1};
  wr.send_flags = flags;
  wr.ud.ah = ah;
  wr.ud.remote_qpn = remote_qpn;
  wr.ud.remote_qkey = attr_.qkey;
  return PostOne(wr);
}

absl::Status Endpoint::Post(const SendWr& wr) { return PostOne(wr); }

absl::Status Endpoint::PostOne(const SendWr& wr) { return qp_->PostSend(wr); }

absl::StatusOr<WorkCompletion> Endpoint::GetSendComp(absl::Duration timeout) {
  return GetComp(send_cq_.get(), send_channel_.get(), timeout);
}

absl::StatusOr<WorkCompletion> Endpoint::GetRecvComp(absl::Duration timeout) {
  return GetComp(recv_cq_.get(), recv_channel_.get(), timeout);
}

// The loop of rdma_get_send_comp(3): poll; arm; poll again (a completion may
// have arrived before arming); wait for the channel event and acknowledge it.
absl::StatusOr<WorkCompletion> Endpoint::GetComp(Cq* cq, CompChannel* channel,
                                                 absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  WorkCompletion wc;
  while (true) {
    absl::StatusOr<int> n = cq->Poll({&wc, 1});
    if (!n.ok()) return n.status();
    if (*n == 1) return wc;
    absl::Status armed = cq->ReqNotify(false);
    if (!armed.ok()) return armed;
    n = cq->Poll({&wc, 1});
    if (!n.ok()) return n.status();
    if (*n == 1) return wc;
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return Errno(ETIMEDOUT, "no completion on qp %u within %s",
                   qp_->qp_num(), absl::FormatDuration(timeout));
    }
    absl::StatusOr<Cq*> event = channel->GetEvent(left);
    if (!event.ok()) {
      if (ErrnoOf(event.status()) == ETIMEDOUT) {
        return Errno(ETIMEDOUT, "no completion on qp %u within %s: %s",
                     qp_->qp_num(), absl::FormatDuration(timeout),
                     event.status().message());
      }
      return event.status();
    }
    channel->AckEvents(*event, 1);
  }
}

absl::Status ModifyQpToInit(Qp* qp, const EndpointAttr& attr) {
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.pkey_index = 0;
  a.port_num = 1;
  uint32_t mask = kQpState | kQpPkeyIndex | kQpPort;
  if (qp->type() == QpType::kUd) {
    a.qkey = attr.qkey;
    mask |= kQpQkey;
  } else {
    a.qp_access_flags = attr.qp_access;
    mask |= kQpAccessFlags;
  }
  return qp->Modify(a, mask);
}

absl::Status ModifyQpToRtr(Qp* qp, const EndpointAttr& attr,
                           uint32_t remote_qpn, const Gid& remote_gid,
                           uint32_t rq_psn) {
  QpAttr a;
  a.qp_state = QpState::kRtr;
  uint32_t mask = kQpState;
  if (qp->type() != QpType::kUd) {
    a.path_mtu = attr.path_mtu;
    a.dest_qp_num = remote_qpn;
    a.rq_psn = rq_psn;
    a.ah_attr.dgid = remote_gid;
    a.ah_attr.sgid_index = attr.sgid_index;
    a.ah_attr.port_num = 1;
    mask |= kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
    if (qp->type() == QpType::kRc) {
      a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
      a.min_rnr_timer = attr.min_rnr_timer;
      mask |= kQpMaxDestRdAtomic | kQpMinRnrTimer;
    }
  }
  return qp->Modify(a, mask);
}

absl::Status ModifyQpToRts(Qp* qp, const EndpointAttr& attr, uint32_t sq_psn) {
  QpAttr a;
  a.qp_state = QpState::kRts;
  a.sq_psn = sq_psn;
  uint32_t mask = kQpState | kQpSqPsn;
  if (qp->type() == QpType::kRc) {
    a.max_rd_atomic = attr.max_rd_atomic;
    a.retry_cnt = attr.retry_cnt;
    a.rnr_retry = attr.rnr_retry;
    a.timeout = attr.timeout;
    mask |= kQpMaxQpRdAtomic | kQpRetryCnt | kQpRnrRetry | kQpTimeout;
  }
  return qp->Modify(a, mask);
}

}  // namespace verbsim
