// Internal to the "hw" provider: the ibverbs objects it holds and the classes
// that implement the interfaces of core/verbs.h over them. The methods live
// by concern:
//   hw/device.cc   device list, opening a device, its attributes
//   hw/context.cc  HwContext: ports, GIDs, PDs, CQs, channels, async events
//   hw/cq.cc       HwCompChannel and HwCq
//   hw/memory.cc   HwPd itself, HwMr and HwMw
//   hw/qp.cc       HwQp (all but posting) and HwAh
//   hw/srq.cc      HwSrq (all but posting)
//   hw/post.cc     the post verbs of QPs and SRQs, and ibv_bind_mw
#ifndef VERBSIM_HW_OBJECTS_H_
#define VERBSIM_HW_OBJECTS_H_

#include <infiniband/verbs.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/verbs.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {

// The error of a call on a handle whose object was destroyed ("`what` was
// destroyed", EINVAL).
absl::Status Dead(absl::string_view what);

// ---------------------------------------------------------------------------
// Shared ownership of the ibverbs objects. A destructor body releases the
// object, then its members release what it depends on.

struct DeviceRes {
  ibv_context* ctx = nullptr;
  bool owned = false;        // opened by us: ibv_close_device at the end
  std::shared_ptr<CmId> cm;  // a cm_id's context: the id goes after us
  std::string name;
  ~DeviceRes() {
    if (owned && ctx != nullptr) ibv_close_device(ctx);
  }
};

struct PdRes {
  std::shared_ptr<DeviceRes> dev;
  ibv_pd* pd = nullptr;
  ~PdRes() {
    if (pd != nullptr) ibv_dealloc_pd(pd);
  }
};

struct MrRes {
  std::shared_ptr<PdRes> pd;
  ibv_mr* mr = nullptr;
  ~MrRes() {
    if (mr != nullptr) ibv_dereg_mr(mr);
  }
};

struct ChannelRes {
  std::shared_ptr<DeviceRes> dev;
  ibv_comp_channel* channel = nullptr;
  ~ChannelRes() {
    if (channel != nullptr) ibv_destroy_comp_channel(channel);
  }
};

class HwCq;

// ibv_destroy_cq(3) waits until every event of the CQ is acknowledged, so
// the events handed out and not yet acknowledged are counted here and
// acknowledged before the CQ goes.
struct CqRes {
  std::shared_ptr<DeviceRes> dev;
  std::shared_ptr<ChannelRes> channel;
  ibv_cq* cq = nullptr;
  absl::Mutex mu;
  unsigned int unacked ABSL_GUARDED_BY(mu) = 0;
  HwCq* handle ABSL_GUARDED_BY(mu) = nullptr;  // null once the handle is gone

  void Ack(unsigned int count) {
    absl::MutexLock lock(&mu);
    count = std::min(count, unacked);
    if (count > 0 && cq != nullptr) ibv_ack_cq_events(cq, count);
    unacked -= count;
  }
  void AckAll() { Ack(UINT_MAX); }
  ~CqRes() {
    if (cq != nullptr) {
      AckAll();
      ibv_destroy_cq(cq);
    }
  }
};

struct MwRes {
  std::shared_ptr<PdRes> pd;
  ibv_mw* mw = nullptr;
  ~MwRes() {
    if (mw != nullptr) ibv_dealloc_mw(mw);
  }
};

struct SrqRes {
  std::shared_ptr<PdRes> pd;
  ibv_srq* srq = nullptr;
  ~SrqRes() {
    if (srq != nullptr) ibv_destroy_srq(srq);
  }
};

struct QpRes {
  std::shared_ptr<PdRes> pd;
  std::shared_ptr<CqRes> send_cq;
  std::shared_ptr<CqRes> recv_cq;
  std::shared_ptr<SrqRes> srq;
  ibv_qp* qp = nullptr;
  ~QpRes() {
    if (qp != nullptr) ibv_destroy_qp(qp);
  }
};

struct AhRes {
  std::shared_ptr<PdRes> pd;
  ibv_ah* ah = nullptr;
  ~AhRes() {
    if (ah != nullptr) ibv_destroy_ah(ah);
  }
};

// ---------------------------------------------------------------------------
// The objects.

class HwContext;

class HwPd final : public Pd {
 public:
  HwPd(std::shared_ptr<PdRes> res, HwContext* context)
      : res_(std::move(res)), context_(context) {}
  absl::Status Destroy() override;
  Context* context() const override;
  absl::StatusOr<std::unique_ptr<Mr>> RegMr(void* addr, size_t length,
                                            uint32_t access) override;
  absl::StatusOr<std::unique_ptr<Qp>> CreateQp(const QpInitAttr& attr) override;
  absl::StatusOr<std::unique_ptr<Ah>> CreateAh(const AhAttr& attr) override;
  absl::StatusOr<std::unique_ptr<Mw>> AllocMw(MwType type) override;
  absl::StatusOr<std::unique_ptr<Srq>> CreateSrq(const SrqAttr& attr) override;

  const std::shared_ptr<PdRes>& res() const { return res_; }

 private:
  absl::Status Check() const {
    return res_ != nullptr ? absl::OkStatus() : Dead("pd");
  }
  std::shared_ptr<PdRes> res_;
  HwContext* context_;
};

class HwMr final : public Mr {
 public:
  HwMr(std::shared_ptr<MrRes> res, Pd* pd, uint32_t access)
      : res_(std::move(res)),
        pd_(pd),
        addr_(res_->mr->addr),
        length_(res_->mr->length),
        lkey_(res_->mr->lkey),
        rkey_(res_->mr->rkey),
        access_(access) {}
  absl::Status Destroy() override;
  void* addr() const override { return addr_; }
  uint64_t length() const override { return length_; }
  uint32_t lkey() const override { return lkey_; }
  uint32_t rkey() const override { return rkey_; }
  uint32_t access() const override { return access_; }
  Pd* pd() const override { return pd_; }
  absl::Status Rereg(uint32_t flags, Pd* pd, void* addr, size_t length,
                     uint32_t access) override;

  ibv_mr* raw() const { return res_ != nullptr ? res_->mr : nullptr; }

 private:
  std::shared_ptr<MrRes> res_;
  Pd* pd_;
  void* addr_;
  uint64_t length_;
  uint32_t lkey_;
  uint32_t rkey_;
  uint32_t access_;
};

class HwCompChannel final : public CompChannel {
 public:
  explicit HwCompChannel(std::shared_ptr<ChannelRes> res)
      : res_(std::move(res)), fd_(res_->channel->fd) {}
  absl::Status Destroy() override;
  absl::StatusOr<Cq*> GetEvent(absl::Duration timeout) override;
  void AckEvents(Cq* cq, unsigned int count) override;

  const std::shared_ptr<ChannelRes>& res() const { return res_; }

 private:
  std::shared_ptr<ChannelRes> res_;
  int fd_;
};

class HwCq final : public Cq {
 public:
  HwCq(std::shared_ptr<CqRes> res, CompChannel* channel);
  ~HwCq() override { Release(); }
  absl::Status Destroy() override;
  int cqe() const override { return cqe_; }
  absl::StatusOr<int> Poll(absl::Span<WorkCompletion> wcs) override;
  absl::Status ReqNotify(bool solicited_only) override;
  CompChannel* channel() const override { return channel_; }
  absl::Status Resize(int cqe) override;

  void AckEvents(unsigned int count) {
    if (res_ != nullptr) res_->Ack(count);
  }
  const std::shared_ptr<CqRes>& res() const { return res_; }

 private:
  // Forgets the CqRes, telling it first that its handle is gone.
  void Release();
  std::shared_ptr<CqRes> res_;
  CompChannel* channel_;
  int cqe_;
};

class HwAh final : public Ah {
 public:
  HwAh(std::shared_ptr<AhRes> res, const AhAttr& attr, Pd* pd)
      : res_(std::move(res)), attr_(attr), pd_(pd) {}
  absl::Status Destroy() override;
  const AhAttr& attr() const override { return attr_; }
  Pd* pd() const override { return pd_; }
  ibv_ah* raw() const { return res_ != nullptr ? res_->ah : nullptr; }
  const std::shared_ptr<PdRes>* pd_res() const {
    return res_ != nullptr ? &res_->pd : nullptr;
  }

 private:
  std::shared_ptr<AhRes> res_;
  AhAttr attr_;
  Pd* pd_;
};

class HwMw final : public Mw {
 public:
  HwMw(std::shared_ptr<MwRes> res, MwType type, Pd* pd)
      : res_(std::move(res)), type_(type), pd_(pd), rkey_(res_->mw->rkey) {}
  absl::Status Destroy() override;
  MwType type() const override { return type_; }
  uint32_t rkey() const override { return rkey_; }
  Pd* pd() const override { return pd_; }

  ibv_mw* raw() const { return res_ != nullptr ? res_->mw : nullptr; }
  // ibv_bind_mw(3) gives a type 1 window its next rkey in ibv_mw::rkey. A
  // type 2 window gets the rkey its BIND_MW work request names when that is
  // posted: ibv_post_send(3) does not touch ibv_mw::rkey, so it is written
  // here as an application must (rdma-core's rxe provider sends ibv_mw::rkey
  // as the window's current rkey with the next bind, and the kernel refuses
  // that bind with MW_BIND_ERR when it is stale). A bind that then fails
  // leaves the window with its old rkey, as ibv_bind_mw(3) warns.
  void set_rkey(uint32_t rkey) {
    rkey_ = rkey;
    if (res_ != nullptr && res_->mw != nullptr) res_->mw->rkey = rkey;
  }

 private:
  std::shared_ptr<MwRes> res_;
  MwType type_;
  Pd* pd_;
  uint32_t rkey_;
};

class HwSrq final : public Srq {
 public:
  HwSrq(std::shared_ptr<SrqRes> res, Pd* pd)
      : res_(std::move(res)), pd_(pd), id_(res_->srq->handle) {}
  absl::Status Destroy() override;
  uint32_t srq_id() const override { return id_; }
  Pd* pd() const override { return pd_; }
  absl::Status PostRecv(absl::Span<const RecvWr> wrs,
                        size_t* bad_index) override;
  absl::Status Modify(const SrqAttr& attr, uint32_t mask) override;
  absl::StatusOr<SrqAttr> Query() const override;

  const std::shared_ptr<SrqRes>& res() const { return res_; }

 private:
  std::shared_ptr<SrqRes> res_;
  Pd* pd_;
  uint32_t id_;
};

class HwQp final : public Qp {
 public:
  HwQp(std::shared_ptr<QpRes> res, Pd* pd, const QpInitAttr& init,
       int phys_port_cnt)
      : res_(std::move(res)),
        pd_(pd),
        init_(init),
        qp_num_(res_->qp->qp_num),
        phys_port_cnt_(phys_port_cnt) {}
  absl::Status Destroy() override;
  uint32_t qp_num() const override { return qp_num_; }
  QpType type() const override { return init_.qp_type; }
  QpState state() const override;
  Pd* pd() const override { return pd_; }
  Cq* send_cq() const override { return init_.send_cq; }
  Cq* recv_cq() const override { return init_.recv_cq; }
  absl::Status Modify(const QpAttr& attr, uint32_t mask) override;
  absl::StatusOr<QpAttr> Query() const override;
  QpInitAttr init_attr() const override { return init_; }
  absl::Status PostSend(absl::Span<const SendWr> wrs,
                        size_t* bad_index) override;
  absl::Status PostRecv(absl::Span<const RecvWr> wrs,
                        size_t* bad_index) override;
  absl::Status BindMw(Mw* mw, const MwBind& bind) override;
  absl::Status AttachMcast(const Gid& gid, uint16_t lid) override;
  absl::Status DetachMcast(const Gid& gid, uint16_t lid) override;

  absl::Status ModifyRaw(ibv_qp_attr* attr, int mask, absl::string_view why);

 private:
  absl::Status Check() const;
  absl::Status CheckSendWr(size_t i, const SendWr& wr, ibv_send_wr* out) const;

  std::shared_ptr<QpRes> res_;
  Pd* pd_;
  QpInitAttr init_;
  uint32_t qp_num_;
  int phys_port_cnt_;
};

class HwContext final : public Context {
 public:
  HwContext(std::shared_ptr<DeviceRes> res, DeviceAttr attr)
      : res_(std::move(res)), attr_(std::move(attr)) {}
  absl::Status Destroy() override;
  const DeviceAttr& device_attr() const override { return attr_; }
  absl::StatusOr<PortAttr> QueryPort(uint8_t port_num) const override;
  absl::StatusOr<Gid> QueryGid(uint8_t port_num, int index) const override;
  absl::StatusOr<std::unique_ptr<Pd>> AllocPd() override;
  absl::StatusOr<std::unique_ptr<CompChannel>> CreateCompChannel() override;
  absl::StatusOr<std::unique_ptr<Cq>> CreateCq(int cqe,
                                               CompChannel* channel) override;
  absl::StatusOr<AsyncEvent> GetAsyncEvent(absl::Duration timeout) override;

  ibv_context* raw() const { return res_ != nullptr ? res_->ctx : nullptr; }
  const std::shared_ptr<DeviceRes>& res() const { return res_; }

 private:
  absl::Status Check() const;
  absl::Status CheckPort(absl::string_view call, int port_num) const;

  std::shared_ptr<DeviceRes> res_;
  DeviceAttr attr_;
  bool async_nonblocking_ = false;
};

}  // namespace hw
}  // namespace verbsim

#endif  // VERBSIM_HW_OBJECTS_H_
