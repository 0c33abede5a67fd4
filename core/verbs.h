// The verbs object model every provider implements: one narrow interface,
// mirroring libibverbs (ibv_context, ibv_pd, ibv_mr, ibv_cq, ibv_comp_channel,
// ibv_qp, ibv_ah). Tests and the post_* API (core/endpoint.h) are written once
// against it.
//
// Verbs added after a provider was written default to EOPNOTSUPP
// ("not supported by this provider") until the provider implements them.
//
// Ownership: objects are returned as std::unique_ptr. Dropping a handle
// releases the object (resources it still backs stay valid until their users
// go). Destroy() is the checked form, as ibv_destroy_*/ibv_dealloc_pd: it fails
// with EBUSY and changes nothing while other objects still use this one.
#ifndef VERBSIM_CORE_VERBS_H_
#define VERBSIM_CORE_VERBS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/types.h"

namespace verbsim {

class Context;
class Pd;

// Base of every verbs object: the checked destroy.
class VerbsObject {
 public:
  virtual ~VerbsObject() = default;
  // Fails with EBUSY (FAILED_PRECONDITION) naming the users while the object
  // is in use; on success the object is dead and every later call on it fails
  // with EINVAL.
  virtual absl::Status Destroy() = 0;
};

// Destroys `object` and resets the pointer on success; leaves it as it was on
// failure.
template <typename T>
absl::Status Destroy(std::unique_ptr<T>& object) {
  if (object == nullptr) {
    return absl::InvalidArgumentError("EINVAL: Destroy of a null object");
  }
  absl::Status status = object->Destroy();
  if (status.ok()) object.reset();
  return status;
}

// struct ibv_mr.
class Mr : public VerbsObject {
 public:
  virtual void* addr() const = 0;
  virtual uint64_t length() const = 0;
  virtual uint32_t lkey() const = 0;
  virtual uint32_t rkey() const = 0;
  virtual uint32_t access() const = 0;
  virtual Pd* pd() const = 0;
  // ibv_rereg_mr(3): changes the translation (addr, length), the PD and/or
  // the access of the region, as `flags` (ReregFlags) say; the arguments a
  // flag does not name are ignored. Conceptually a deregistration followed
  // by a registration: whether the keys change is the provider's (lkey()
  // and rkey() tell). EINVAL for unknown flags or bad arguments, EBUSY while
  // memory windows are bound to the region; the region is unchanged then.
  virtual absl::Status Rereg(uint32_t flags, Pd* pd, void* addr,
                             size_t length, uint32_t access);
};

// struct ibv_mw: a memory window (ibv_alloc_mw(3)). Destroy() is
// ibv_dealloc_mw(3); a bound window is invalidated by it.
class Mw : public VerbsObject {
 public:
  virtual MwType type() const = 0;
  // The rkey the window answers to now (ibv_bind_mw(3) and a BIND_MW work
  // request change it).
  virtual uint32_t rkey() const = 0;
  virtual Pd* pd() const = 0;
};

// struct ibv_srq: a shared receive queue (ibv_create_srq(3)).
class Srq : public VerbsObject {
 public:
  virtual uint32_t srq_id() const = 0;
  virtual Pd* pd() const = 0;
  // ibv_post_srq_recv(3): EINVAL for too many SGEs, ENOMEM when full; on
  // failure `*bad_index` is the first WR not posted.
  virtual absl::Status PostRecv(absl::Span<const RecvWr> wrs,
                                size_t* bad_index = nullptr) = 0;
  absl::Status PostRecv(const RecvWr& wr) { return PostRecv({&wr, 1}); }
  // ibv_modify_srq(3): kSrqMaxWr resizes, kSrqLimit arms the limit event.
  virtual absl::Status Modify(const SrqAttr& attr, uint32_t mask) = 0;
  // ibv_query_srq(3).
  virtual absl::StatusOr<SrqAttr> Query() const = 0;
};

// struct ibv_comp_channel: delivers an event for each armed CQ that got a
// completion.
class Cq;
class CompChannel : public VerbsObject {
 public:
  // Waits up to `timeout` for the next event (ibv_get_cq_event(3)); returns
  // the CQ it concerns. DEADLINE_EXCEEDED (ETIMEDOUT) when none came.
  virtual absl::StatusOr<Cq*> GetEvent(absl::Duration timeout) = 0;
  // ibv_ack_cq_events(3).
  virtual void AckEvents(Cq* cq, unsigned int count) = 0;
};

// struct ibv_cq.
class Cq : public VerbsObject {
 public:
  virtual int cqe() const = 0;
  // ibv_poll_cq(3): fills up to wcs.size() completions, returns how many.
  virtual absl::StatusOr<int> Poll(absl::Span<WorkCompletion> wcs) = 0;
  // ibv_req_notify_cq(3).
  virtual absl::Status ReqNotify(bool solicited_only) = 0;
  virtual CompChannel* channel() const = 0;
  // ibv_resize_cq(3): room for at least `cqe` completions from now on
  // (cqe() then says how many), keeping those the CQ holds. EINVAL for a
  // size outside [1, max_cqe] or below the number of completions held, with
  // the CQ unchanged; EOPNOTSUPP where the device cannot resize.
  virtual absl::Status Resize(int cqe);
};

// struct ibv_ah.
class Ah : public VerbsObject {
 public:
  virtual const AhAttr& attr() const = 0;
  virtual Pd* pd() const = 0;
};

// struct ibv_qp.
class Qp : public VerbsObject {
 public:
  virtual uint32_t qp_num() const = 0;
  virtual QpType type() const = 0;
  virtual QpState state() const = 0;
  virtual Pd* pd() const = 0;
  virtual Cq* send_cq() const = 0;
  virtual Cq* recv_cq() const = 0;
  // ibv_modify_qp(3): EINVAL with the QP unchanged for a wrong mask, a
  // forbidden transition or an attribute out of range.
  virtual absl::Status Modify(const QpAttr& attr, uint32_t mask) = 0;
  // ibv_query_qp(3).
  virtual absl::StatusOr<QpAttr> Query() const = 0;
  virtual QpInitAttr init_attr() const = 0;
  // ibv_post_send(3): posts wrs in order; on failure `*bad_index` (if given)
  // is the first one not posted. EINVAL in a state that forbids posting, for
  // too many SGEs, a bad opcode or flag, inline data too large; ENOMEM when
  // the queue is full.
  virtual absl::Status PostSend(absl::Span<const SendWr> wrs,
                                size_t* bad_index = nullptr) = 0;
  absl::Status PostSend(const SendWr& wr) { return PostSend({&wr, 1}); }
  // ibv_post_recv(3).
  virtual absl::Status PostRecv(absl::Span<const RecvWr> wrs,
                                size_t* bad_index = nullptr) = 0;
  absl::Status PostRecv(const RecvWr& wr) { return PostRecv({&wr, 1}); }
  // ibv_bind_mw(3): binds (or, with a zero length, unbinds) type 1 window
  // `mw` through this QP's send queue. On success the window's rkey is the
  // next one at once; the bind completes on the send CQ (WcOpcode::kBindMw,
  // MW_BIND_ERR when the bind is refused as it executes). EINVAL for a type 2
  // window or inconsistent arguments.
  virtual absl::Status BindMw(Mw* mw, const MwBind& bind);
  // ibv_attach_mcast(3) / ibv_detach_mcast(3): UD QPs only; EINVAL for a GID
  // that is not multicast, another QP type, or a detach of a group the QP is
  // not attached to.
  virtual absl::Status AttachMcast(const Gid& gid, uint16_t lid);
  virtual absl::Status DetachMcast(const Gid& gid, uint16_t lid);
  // The QP's counters; EOPNOTSUPP from a provider that does not count per
  // QP.
  virtual absl::StatusOr<QpCounters> QueryCounters() const;
};

// struct ibv_pd.
class Pd : public VerbsObject {
 public:
  virtual Context* context() const = 0;
  // ibv_reg_mr(3). EINVAL for unknown access bits, REMOTE_WRITE or
  // REMOTE_ATOMIC without LOCAL_WRITE, a null address with a nonzero length,
  // a range that wraps or exceeds max_mr_size.
  virtual absl::StatusOr<std::unique_ptr<Mr>> RegMr(void* addr, size_t length,
                                                    uint32_t access) = 0;
  // ibv_create_qp(3). EINVAL for caps over the device limits or CQs of
  // another context.
  virtual absl::StatusOr<std::unique_ptr<Qp>> CreateQp(
      const QpInitAttr& attr) = 0;
  // ibv_create_ah(3).
  virtual absl::StatusOr<std::unique_ptr<Ah>> CreateAh(
      const AhAttr& attr) = 0;
  // ibv_alloc_mw(3). EINVAL for an unknown type, EOPNOTSUPP when the device
  // has no memory windows.
  virtual absl::StatusOr<std::unique_ptr<Mw>> AllocMw(MwType type);
  // ibv_create_srq(3): attr.max_wr / max_sge within the device's max_srq_wr
  // and max_srq_sge, else EINVAL; EOPNOTSUPP without SRQ support.
  virtual absl::StatusOr<std::unique_ptr<Srq>> CreateSrq(
      const SrqAttr& attr);
};

// struct ibv_context: an opened device.
class Context : public VerbsObject {
 public:
  virtual const DeviceAttr& device_attr() const = 0;
  virtual absl::StatusOr<PortAttr> QueryPort(uint8_t port_num) const = 0;
  // The port's GID at `index` (ibv_query_gid(3)).
  virtual absl::StatusOr<Gid> QueryGid(uint8_t port_num, int index) const = 0;
  virtual absl::StatusOr<std::unique_ptr<Pd>> AllocPd() = 0;
  virtual absl::StatusOr<std::unique_ptr<CompChannel>> CreateCompChannel() = 0;
  // ibv_create_cq(3): `cqe` entries at least, `channel` may be null.
  virtual absl::StatusOr<std::unique_ptr<Cq>> CreateCq(
      int cqe, CompChannel* channel) = 0;
  // ibv_get_async_event(3) with a timeout; ETIMEDOUT when none came.
  virtual absl::StatusOr<AsyncEvent> GetAsyncEvent(absl::Duration timeout) = 0;
};

}  // namespace verbsim

#endif  // VERBSIM_CORE_VERBS_H_
