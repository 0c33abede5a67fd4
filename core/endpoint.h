// The post_* API of librdmacm's rdma_verbs.h for C++ (rdma_post_send(3),
// rdma_post_recv(3), rdma_post_read(3), rdma_post_write(3),
// rdma_post_ud_send(3), rdma_reg_msgs(3) ...), on an Endpoint: what
// rdma_cm_id is to librdmacm, a QP with its PD, CQs and completion channels.
// It runs unchanged on every provider.
#ifndef VERBSIM_CORE_ENDPOINT_H_
#define VERBSIM_CORE_ENDPOINT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/types.h"
#include "core/verbs.h"

namespace verbsim {

// How an endpoint's QP and CQs are made and connected.
struct EndpointAttr {
  QpType qp_type = QpType::kRc;
  QpCap cap = {/*max_send_wr=*/64, /*max_recv_wr=*/64, /*max_send_sge=*/4,
               /*max_recv_sge=*/4, /*max_inline_data=*/64};
  int cq_depth = 256;
  bool sq_sig_all = false;
  // The QP's remote access flags (IBV_QP_ACCESS_FLAGS).
  uint32_t qp_access = kAccessLocalWrite | kAccessRemoteWrite |
                       kAccessRemoteRead | kAccessRemoteAtomic;
  Mtu path_mtu = Mtu::k1024;
  uint8_t max_rd_atomic = 16;       // initiator depth
  uint8_t max_dest_rd_atomic = 16;  // responder resources
  uint8_t timeout = 14;             // 4.096 us * 2^14 = 67 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;            // 7: retry forever
  uint8_t min_rnr_timer = 12;       // IBTA encoding: 0.64 ms
  uint32_t sq_psn = 0;              // the peer's rq_psn
  uint32_t qkey = 0x01234567;       // UD: rdma_cm's QKey
  // The local GID index of the path (ModifyQpToRtr's ah_attr.sgid_index);
  // rdma_cm chooses it itself on devices.
  uint8_t sgid_index = 0;
  // The local device; empty: the provider's choice.
  std::string device;
};

// An rdma_cm_id-like endpoint. Post calls return OK or a Status carrying the
// errno librdmacm would set (see core/errors.h).
class Endpoint {
 public:
  // Provider-specific connection state (the rdma_cm handshake on hw).
  class Connection {
   public:
    virtual ~Connection() = default;
    // Waits until the connection is established (RTS on both sides).
    virtual absl::Status WaitEstablished(absl::Duration timeout) = 0;
  };

  // Creates the PD, two completion channels, send and receive CQs and a QP in
  // RESET on `context`.
  static absl::StatusOr<std::unique_ptr<Endpoint>> Create(
      std::unique_ptr<Context> context, const EndpointAttr& attr);
  ~Endpoint();

  Context* context() const { return context_.get(); }
  Pd* pd() const { return pd_.get(); }
  Qp* qp() const { return qp_.get(); }
  Cq* send_cq() const { return send_cq_.get(); }
  Cq* recv_cq() const { return recv_cq_.get(); }
  const EndpointAttr& attr() const { return attr_; }
  void set_connection(std::unique_ptr<Connection> connection);
  absl::Status WaitConnected(absl::Duration timeout = absl::Seconds(10));

  // rdma_reg_msgs(3): LOCAL_WRITE.
  absl::StatusOr<std::unique_ptr<Mr>> RegMsgs(void* addr, size_t length);
  // rdma_reg_read(3): LOCAL_WRITE | REMOTE_READ.
  absl::StatusOr<std::unique_ptr<Mr>> RegRead(void* addr, size_t length);
  // rdma_reg_write(3): LOCAL_WRITE | REMOTE_WRITE.
  absl::StatusOr<std::unique_ptr<Mr>> RegWrite(void* addr, size_t length);
  // ibv_reg_mr(3) with any access.
  absl::StatusOr<std::unique_ptr<Mr>> RegMr(void* addr, size_t length,
                                            uint32_t access);
  // rdma_dereg_mr(3); resets `mr` on success.
  absl::Status DeregMr(std::unique_ptr<Mr>& mr);

  // rdma_post_recv(3) / rdma_post_recvv(3).
  absl::Status PostRecv(uint64_t wr_id, void* addr, size_t length,
                        const Mr* mr);
  absl::Status PostRecvv(uint64_t wr_id, absl::Span<const Sge> sgl);
  // rdma_post_send(3) / rdma_post_sendv(3). A null `mr` sends inline.
  absl::Status PostSend(uint64_t wr_id, const void* addr, size_t length,
                        const Mr* mr, uint32_t flags);
  absl::Status PostSendv(uint64_t wr_id, absl::Span<const Sge> sgl,
                         uint32_t flags);
  // rdma_post_read(3) / rdma_post_readv(3). `mr` is required.
  absl::Status PostRead(uint64_t wr_id, void* addr, size_t length,
                        const Mr* mr, uint32_t flags, uint64_t remote_addr,
                        uint32_t rkey);
  absl::Status PostReadv(uint64_t wr_id, absl::Span<const Sge> sgl,
                         uint32_t flags, uint64_t remote_addr, uint32_t rkey);
  // rdma_post_write(3) / rdma_post_writev(3). A null `mr` writes inline.
  absl::Status PostWrite(uint64_t wr_id, const void* addr, size_t length,
                         const Mr* mr, uint32_t flags, uint64_t remote_addr,
                         uint32_t rkey);
  absl::Status PostWritev(uint64_t wr_id, absl::Span<const Sge> sgl,
                          uint32_t flags, uint64_t remote_addr, uint32_t rkey);
  // rdma_post_ud_send(3).
  absl::Status PostUdSend(uint64_t wr_id, const void* addr, size_t length,
                          const Mr* mr, uint32_t flags, Ah* ah,
                          uint32_t remote_qpn);
  // Any work request (write/send with immediate, atomics, send with
  // invalidate, local invalidate ...): ibv_post_send(3) of one WR.
  //
  // A WR posted without kSendSignaled (and without sq_sig_all) gives no
  // completion, and on mlx5 and the sim's ibta profile it keeps its
  // send-queue slot after it completed, until a completion of a later WR
  // of this QP is polled (GetSendComp or Cq::Poll of send_cq()): a program
  // that never signals gets ENOMEM once attr().cap.max_send_wr WRs were
  // posted. Signal one WR in every few and poll its completion
  // (docs/semantics.md section 10).
  absl::Status Post(const SendWr& wr);

  // rdma_get_send_comp(3) / rdma_get_recv_comp(3): poll, arm, poll, wait on
  // the channel; ETIMEDOUT (DEADLINE_EXCEEDED) after `timeout`. The returned
  // completion may carry an error status: that is not a call failure.
  absl::StatusOr<WorkCompletion> GetSendComp(
      absl::Duration timeout = absl::Seconds(10));
  absl::StatusOr<WorkCompletion> GetRecvComp(
      absl::Duration timeout = absl::Seconds(10));

 private:
  Endpoint() = default;
  absl::StatusOr<WorkCompletion> GetComp(Cq* cq, CompChannel* channel,
                                         absl::Duration timeout);
  absl::Status PostOne(const SendWr& wr);

  EndpointAttr attr_;
  // Declared in creation order; destroyed in reverse.
  std::unique_ptr<Context> context_;
  std::unique_ptr<Pd> pd_;
  std::unique_ptr<CompChannel> send_channel_;
  std::unique_ptr<CompChannel> recv_channel_;
  std::unique_ptr<Cq> send_cq_;
  std::unique_ptr<Cq> recv_cq_;
  std::unique_ptr<Qp> qp_;
  std::unique_ptr<Connection> connection_;
};

// QP state helpers used by providers and tests: the attribute masks a
// connection needs (docs/semantics.md section 3).
absl::Status ModifyQpToInit(Qp* qp, const EndpointAttr& attr);
absl::Status ModifyQpToRtr(Qp* qp, const EndpointAttr& attr,
                           uint32_t remote_qpn, const Gid& remote_gid,
                           uint32_t rq_psn);
absl::Status ModifyQpToRts(Qp* qp, const EndpointAttr& attr, uint32_t sq_psn);

}  // namespace verbsim

#endif  // VERBSIM_CORE_ENDPOINT_H_
