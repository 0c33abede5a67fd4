// The verbs objects of the "hw" provider: each call maps onto one libibverbs
// call. Enums convert with static_cast (core/types.h mirrors ibverbs).
#include "hw/verbs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "core/names.h"

namespace verbsim {
namespace hw {

// ---------------------------------------------------------------------------
// Helpers.

int ErrnoFromReturn(int ret) {
  if (ret > 0) return ret;    // the errno value itself
  if (ret < -1) return -ret;  // a provider returning -errno
  return errno != 0 ? errno : EIO;
}

absl::Status SysError(int err, absl::string_view what) {
  // absl::ErrnoToStatus (core/errors.cc) appends strerror(err) itself.
  return ErrnoError(err, what);
}

absl::StatusOr<bool> WaitReadable(int fd, absl::Time deadline) {
  while (true) {
    int ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      absl::Duration left = deadline - absl::Now();
      if (left < absl::ZeroDuration()) left = absl::ZeroDuration();
      // Round up so that a wait never ends before the deadline.
      int64_t us = absl::ToInt64Microseconds(left);
      ms = static_cast<int>(std::min<int64_t>((us + 999) / 1000, INT_MAX));
    }
    pollfd pfd = {fd, POLLIN, 0};
    int n = poll(&pfd, 1, ms);
    if (n > 0) return true;
    if (n == 0) {
      if (ms == 0 || absl::Now() >= deadline) return false;
      continue;
    }
    if (errno == EINTR) continue;
    return SysError(errno, absl::StrFormat("poll(fd %d)", fd));
  }
}

absl::Status SetNonBlocking(int fd, absl::string_view what) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return SysError(errno, absl::StrFormat("fcntl(O_NONBLOCK) on %s", what));
  }
  return absl::OkStatus();
}

namespace {

absl::Status Dead(absl::string_view what) {
  return Errno(EINVAL, "%s was destroyed", what);
}

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
// Device attributes.

// max_inline_data is not among the attributes ibv_query_device(3) reports;
// the device tells it only through the caps ibv_create_qp(3) accepts and
// returns. Binary search with small RC QPs.
int ProbeMaxInlineData(ibv_context* ctx) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (pd == nullptr) return 0;
  ibv_cq* cq = ibv_create_cq(ctx, 1, nullptr, nullptr, 0);
  if (cq == nullptr) {
    ibv_dealloc_pd(pd);
    return 0;
  }
  // Creates a QP asking for `size` inline bytes; *granted is what the
  // device gave (at least `size`).
  auto fits = [&](uint32_t size, uint32_t* granted) {
    ibv_qp_init_attr init = {};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 1;
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = size;
    ibv_qp* qp = ibv_create_qp(pd, &init);
    if (qp == nullptr) return false;
    *granted = init.cap.max_inline_data;
    ibv_destroy_qp(qp);
    return true;
  };
  uint32_t granted = 0;
  uint32_t lo = 0;         // known to fit
  uint32_t hi = 1u << 16;  // not known to fit until tried
  if (fits(0, &granted)) {
    lo = std::min(granted, hi - 1);
    if (fits(hi, &granted)) {
      lo = granted;
      hi = lo + 1;
    }
    while (hi - lo > 1) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (fits(mid, &granted)) {
        lo = std::min(std::max(mid, granted), hi - 1);
      } else {
        hi = mid;
      }
    }
  }
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  return static_cast<int>(std::min<uint32_t>(lo, INT_MAX));
}

absl::StatusOr<DeviceAttr> QueryDeviceAttr(ibv_context* ctx) {
  const std::string name = ibv_get_device_name(ctx->device);
  ibv_device_attr da = {};
  int ret = ibv_query_device(ctx, &da);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_query_device(%s)", name));
  }
  // The probe costs a few QP creations: do it once per device and process.
  static absl::Mutex mu(absl::kConstInit);
  static auto* inline_cache = new std::map<std::string, int>();
  int max_inline = 0;
  {
    absl::MutexLock lock(&mu);
    const std::string key = absl::StrCat(name, "/", da.node_guid);
    auto it = inline_cache->find(key);
    if (it == inline_cache->end()) {
      it = inline_cache->emplace(key, ProbeMaxInlineData(ctx)).first;
    }
    max_inline = it->second;
  }
  DeviceAttr a;
  a.name = name;
  a.node_type = ctx->device->node_type;
  a.max_mr_size = da.max_mr_size;
  a.page_size_cap = da.page_size_cap;
  a.vendor_id = da.vendor_id;
  a.vendor_part_id = da.vendor_part_id;
  a.max_qp = da.max_qp;
  a.max_qp_wr = da.max_qp_wr;
  a.max_sge = da.max_sge;
  a.max_sge_rd = da.max_sge_rd;
  a.max_cq = da.max_cq;
  a.max_cqe = da.max_cqe;
  a.max_mr = da.max_mr;
  a.max_pd = da.max_pd;
  a.max_qp_rd_atom = da.max_qp_rd_atom;
  a.max_qp_init_rd_atom = da.max_qp_init_rd_atom;
  a.max_inline_data = max_inline;
  a.max_mw = da.max_mw;
  a.max_ah = da.max_ah;
  a.max_srq = da.max_srq;
  a.max_srq_wr = da.max_srq_wr;
  a.max_srq_sge = da.max_srq_sge;
  a.max_pkeys = da.max_pkeys;
  a.atomic_cap = static_cast<AtomicCap>(da.atomic_cap);
  a.phys_port_cnt = da.phys_port_cnt;
  a.device_cap_flags = da.device_cap_flags;
  a.max_res_rd_atom = static_cast<uint64_t>(da.max_res_rd_atom);
  a.max_mcast_grp = da.max_mcast_grp;
  a.max_mcast_qp_attach = da.max_mcast_qp_attach;
  a.max_total_mcast_qp_attach = da.max_total_mcast_qp_attach;
  a.local_ca_ack_delay = da.local_ca_ack_delay;
  return a;
}

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
  absl::Status Destroy() override {
    if (res_ == nullptr) return Dead(absl::StrFormat("mr lkey 0x%x", lkey_));
    int ret = ibv_dereg_mr(res_->mr);
    if (ret != 0) {
      return SysError(ErrnoFromReturn(ret),
                      absl::StrFormat("ibv_dereg_mr(lkey 0x%x)", lkey_));
    }
    res_->mr = nullptr;
    res_.reset();
    return absl::OkStatus();
  }
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
  absl::Status Destroy() override {
    if (res_ == nullptr) return Dead("completion channel");
    int ret = ibv_destroy_comp_channel(res_->channel);
    if (ret != 0) {
      return SysError(
          ErrnoFromReturn(ret),
          absl::StrFormat("ibv_destroy_comp_channel(fd %d): CQs still use it",
                          fd_));
    }
    res_->channel = nullptr;
    res_.reset();
    return absl::OkStatus();
  }
  absl::StatusOr<Cq*> GetEvent(absl::Duration timeout) override;
  void AckEvents(Cq* cq, unsigned int count) override;

  const std::shared_ptr<ChannelRes>& res() const { return res_; }

 private:
  std::shared_ptr<ChannelRes> res_;
  int fd_;
};

class HwCq final : public Cq {
 public:
  HwCq(std::shared_ptr<CqRes> res, CompChannel* channel)
      : res_(std::move(res)), channel_(channel), cqe_(res_->cq->cqe) {
    absl::MutexLock lock(&res_->mu);
    res_->handle = this;
  }
  ~HwCq() override { Release(); }
  absl::Status Destroy() override {
    if (res_ == nullptr) return Dead("cq");
    // Every QP on this CQ holds its CqRes. Refuse here rather than let
    // ibv_destroy_cq find out: libsiw (rdma-core providers/siw/siw.c,
    // siw_destroy_cq) unmaps the CQ ring before the kernel refuses with
    // EBUSY, and the CQ's next poll then crashes.
    if (res_.use_count() > 1) {
      return Errno(EBUSY, "destroy cq %u: QPs still use it", res_->cq->handle);
    }
    res_->AckAll();
    int ret = ibv_destroy_cq(res_->cq);
    if (ret != 0) {
      return SysError(ErrnoFromReturn(ret),
                      absl::StrFormat("ibv_destroy_cq(cq %u): QPs still use it",
                                      res_->cq->handle));
    }
    res_->cq = nullptr;
    Release();
    return absl::OkStatus();
  }
  int cqe() const override { return cqe_; }
  absl::StatusOr<int> Poll(absl::Span<WorkCompletion> wcs) override;
  absl::Status ReqNotify(bool solicited_only) override {
    if (res_ == nullptr) return Dead("cq");
    int ret = ibv_req_notify_cq(res_->cq, solicited_only ? 1 : 0);
    if (ret != 0) {
      return SysError(
          ErrnoFromReturn(ret),
          absl::StrFormat("ibv_req_notify_cq(cq %u)", res_->cq->handle));
    }
    return absl::OkStatus();
  }
  CompChannel* channel() const override { return channel_; }

  void AckEvents(unsigned int count) {
    if (res_ != nullptr) res_->Ack(count);
  }
  const std::shared_ptr<CqRes>& res() const { return res_; }

 private:
  void Release() {
    if (res_ == nullptr) return;
    {
      absl::MutexLock lock(&res_->mu);
      res_->handle = nullptr;
    }
    res_.reset();
  }
  std::shared_ptr<CqRes> res_;
  CompChannel* channel_;
  int cqe_;
};

class HwAh final : public Ah {
 public:
  HwAh(std::shared_ptr<AhRes> res, const AhAttr& attr, Pd* pd)
      : res_(std::move(res)), attr_(attr), pd_(pd) {}
  absl::Status Destroy() override {
    if (res_ == nullptr) return Dead("ah");
    int ret = ibv_destroy_ah(res_->ah);
    if (ret != 0) {
      return SysError(ErrnoFromReturn(ret), "ibv_destroy_ah");
    }
    res_->ah = nullptr;
    res_.reset();
    return absl::OkStatus();
  }
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
  absl::Status Destroy() override {
    if (res_ == nullptr) return Dead(absl::StrFormat("mw rkey 0x%x", rkey_));
    int ret = ibv_dealloc_mw(res_->mw);
    if (ret != 0) {
      return SysError(ErrnoFromReturn(ret),
                      absl::StrFormat("ibv_dealloc_mw(rkey 0x%x)", rkey_));
    }
    res_->mw = nullptr;
    res_.reset();
    return absl::OkStatus();
  }
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
  absl::Status Destroy() override {
    if (res_ == nullptr) return Dead(absl::StrFormat("srq %u", id_));
    // QPs on this SRQ hold its SrqRes: refuse as the kernel would, before a
    // provider library can tear down its ring (see HwCq::Destroy).
    if (res_.use_count() > 1) {
      return Errno(EBUSY, "destroy srq %u: QPs still use it", id_);
    }
    int ret = ibv_destroy_srq(res_->srq);
    if (ret != 0) {
      return SysError(ErrnoFromReturn(ret),
                      absl::StrFormat("ibv_destroy_srq(srq %u)", id_));
    }
    res_->srq = nullptr;
    res_.reset();
    return absl::OkStatus();
  }
  uint32_t srq_id() const override { return id_; }
  Pd* pd() const override { return pd_; }
  absl::Status PostRecv(absl::Span<const RecvWr> wrs,
                        size_t* bad_index) override;
  absl::Status Modify(const SrqAttr& attr, uint32_t mask) override {
    if (res_ == nullptr) return Dead(absl::StrFormat("srq %u", id_));
    if ((mask & ~static_cast<uint32_t>(kSrqMaxWr | kSrqLimit)) != 0) {
      return Errno(EINVAL, "ModifySrq %u: unknown mask bits 0x%x", id_,
                   mask & ~static_cast<uint32_t>(kSrqMaxWr | kSrqLimit));
    }
    ibv_srq_attr a = {};
    a.max_wr = attr.max_wr;
    a.max_sge = attr.max_sge;
    a.srq_limit = attr.srq_limit;
    int ret = ibv_modify_srq(res_->srq, &a, static_cast<int>(mask));
    if (ret != 0) {
      return SysError(ErrnoFromReturn(ret),
                      absl::StrFormat("ibv_modify_srq(srq %u, max_wr %u, "
                                      "limit %u, mask 0x%x)",
                                      id_, attr.max_wr, attr.srq_limit, mask));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<SrqAttr> Query() const override {
    if (res_ == nullptr) return Dead(absl::StrFormat("srq %u", id_));
    ibv_srq_attr a = {};
    int ret = ibv_query_srq(res_->srq, &a);
    if (ret != 0) {
      return SysError(ErrnoFromReturn(ret),
                      absl::StrFormat("ibv_query_srq(srq %u)", id_));
    }
    SrqAttr out;
    out.max_wr = a.max_wr;
    out.max_sge = a.max_sge;
    out.srq_limit = a.srq_limit;
    return out;
  }

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
  absl::Status Destroy() override {
    if (res_ == nullptr) return Dead(absl::StrFormat("qp %u", qp_num_));
    int ret = ibv_destroy_qp(res_->qp);
    if (ret != 0) {
      return SysError(ErrnoFromReturn(ret),
                      absl::StrFormat("ibv_destroy_qp(qp %u)", qp_num_));
    }
    res_->qp = nullptr;
    res_.reset();
    return absl::OkStatus();
  }
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
  absl::Status Check() const {
    return res_ != nullptr ? absl::OkStatus()
                           : Dead(absl::StrFormat("qp %u", qp_num_));
  }
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
  absl::Status Destroy() override {
    if (res_ == nullptr) return Dead(absl::StrCat("context ", attr_.name));
    if (res_.use_count() > 1) {
      return Errno(EBUSY,
                   "context %s still has %d PDs, CQs or completion channels",
                   attr_.name, static_cast<int>(res_.use_count() - 1));
    }
    if (res_->owned) {
      if (ibv_close_device(res_->ctx) != 0) {
        return SysError(errno,
                        absl::StrCat("ibv_close_device(", attr_.name, ")"));
      }
      res_->ctx = nullptr;
    }
    res_.reset();
    return absl::OkStatus();
  }
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
  absl::Status Check() const {
    return res_ != nullptr ? absl::OkStatus()
                           : Dead(absl::StrCat("context ", attr_.name));
  }
  absl::Status CheckPort(absl::string_view call, int port_num) const {
    if (port_num < 1 || port_num > attr_.phys_port_cnt) {
      return Errno(EINVAL, "%s: port %d out of range 1..%d on %s", call,
                   port_num, attr_.phys_port_cnt, attr_.name);
    }
    return absl::OkStatus();
  }

  std::shared_ptr<DeviceRes> res_;
  DeviceAttr attr_;
  bool async_nonblocking_ = false;
};

// --- Context ----------------------------------------------------------------

absl::StatusOr<PortAttr> HwContext::QueryPort(uint8_t port_num) const {
  if (absl::Status s = Check(); !s.ok()) return s;
  if (absl::Status s = CheckPort("QueryPort", port_num); !s.ok()) return s;
  ibv_port_attr pa = {};
  int ret = ibv_query_port(res_->ctx, port_num, &pa);
  if (ret != 0) {
    return SysError(
        ErrnoFromReturn(ret),
        absl::StrFormat("ibv_query_port(%s, %d)", attr_.name, port_num));
  }
  PortAttr p;
  p.state = pa.state;
  p.max_mtu = static_cast<Mtu>(pa.max_mtu);
  p.active_mtu = static_cast<Mtu>(pa.active_mtu);
  p.gid_tbl_len = pa.gid_tbl_len;
  p.pkey_tbl_len = pa.pkey_tbl_len;
  p.link_layer = pa.link_layer;
  p.port_cap_flags = pa.port_cap_flags;
  p.max_msg_sz = pa.max_msg_sz;
  p.max_vl_num = pa.max_vl_num;
  return p;
}

absl::StatusOr<Gid> HwContext::QueryGid(uint8_t port_num, int index) const {
  absl::StatusOr<PortAttr> port = QueryPort(port_num);
  if (!port.ok()) return port.status();
  if (index < 0 || index >= port->gid_tbl_len) {
    return Errno(EINVAL, "QueryGid: index %d out of range 0..%d on %s port %d",
                 index, port->gid_tbl_len - 1, attr_.name, port_num);
  }
  ibv_gid gid = {};
  if (ibv_query_gid(res_->ctx, port_num, index, &gid) != 0) {
    return SysError(errno, absl::StrFormat("ibv_query_gid(%s, port %d, %d)",
                                           attr_.name, port_num, index));
  }
  Gid out;
  std::memcpy(out.data(), gid.raw, out.size());
  return out;
}

absl::StatusOr<std::unique_ptr<Pd>> HwContext::AllocPd() {
  if (absl::Status s = Check(); !s.ok()) return s;
  auto res = std::make_shared<PdRes>();
  res->pd = ibv_alloc_pd(res_->ctx);
  if (res->pd == nullptr) {
    return SysError(errno, absl::StrCat("ibv_alloc_pd(", attr_.name, ")"));
  }
  res->dev = res_;
  return std::unique_ptr<Pd>(new HwPd(std::move(res), this));
}

absl::StatusOr<std::unique_ptr<CompChannel>> HwContext::CreateCompChannel() {
  if (absl::Status s = Check(); !s.ok()) return s;
  auto res = std::make_shared<ChannelRes>();
  res->channel = ibv_create_comp_channel(res_->ctx);
  if (res->channel == nullptr) {
    return SysError(errno,
                    absl::StrCat("ibv_create_comp_channel(", attr_.name, ")"));
  }
  res->dev = res_;
  if (absl::Status s = SetNonBlocking(res->channel->fd, "a completion channel");
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<CompChannel>(new HwCompChannel(std::move(res)));
}

absl::StatusOr<std::unique_ptr<Cq>> HwContext::CreateCq(int cqe,
                                                        CompChannel* channel) {
  if (absl::Status s = Check(); !s.ok()) return s;
  if (cqe < 1 || cqe > attr_.max_cqe) {
    return Errno(EINVAL, "CreateCq: cqe %d out of range 1..%d on %s", cqe,
                 attr_.max_cqe, attr_.name);
  }
  auto res = std::make_shared<CqRes>();
  res->dev = res_;
  ibv_comp_channel* raw_channel = nullptr;
  if (channel != nullptr) {
    auto* hw = dynamic_cast<HwCompChannel*>(channel);
    if (hw == nullptr) {
      return Errno(EINVAL, "CreateCq: the channel is not an hw channel");
    }
    if (hw->res() == nullptr) return Dead("CreateCq: the completion channel");
    if (hw->res()->dev != res_) {
      return Errno(EINVAL, "CreateCq: the channel belongs to another context");
    }
    res->channel = hw->res();
    raw_channel = hw->res()->channel;
  }
  // cq_context is the CqRes, so that a channel event finds its handle.
  res->cq = ibv_create_cq(res_->ctx, cqe, res.get(), raw_channel, 0);
  if (res->cq == nullptr) {
    return SysError(
        errno, absl::StrFormat("ibv_create_cq(%s, cqe %d)", attr_.name, cqe));
  }
  return std::unique_ptr<Cq>(new HwCq(std::move(res), channel));
}

absl::StatusOr<AsyncEvent> HwContext::GetAsyncEvent(absl::Duration timeout) {
  if (absl::Status s = Check(); !s.ok()) return s;
  if (!async_nonblocking_) {
    if (absl::Status s = SetNonBlocking(res_->ctx->async_fd, "the async fd");
        !s.ok()) {
      return s;
    }
    async_nonblocking_ = true;
  }
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<bool> ready = WaitReadable(res_->ctx->async_fd, deadline);
    if (!ready.ok()) return ready.status();
    if (!*ready) {
      return Errno(ETIMEDOUT, "no async event on %s within %s", attr_.name,
                   absl::FormatDuration(timeout));
    }
    ibv_async_event event;
    if (ibv_get_async_event(res_->ctx, &event) != 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return SysError(errno,
                      absl::StrCat("ibv_get_async_event(", attr_.name, ")"));
    }
    AsyncEvent out;
    out.type = static_cast<AsyncEventType>(event.event_type);
    switch (event.event_type) {
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
      case IBV_EVENT_COMM_EST:
      case IBV_EVENT_SQ_DRAINED:
      case IBV_EVENT_PATH_MIG:
      case IBV_EVENT_PATH_MIG_ERR:
      case IBV_EVENT_QP_LAST_WQE_REACHED:
        out.qp_num = event.element.qp->qp_num;
        break;
      case IBV_EVENT_CQ_ERR:
        out.cq_id = event.element.cq->handle;
        break;
      case IBV_EVENT_SRQ_ERR:
      case IBV_EVENT_SRQ_LIMIT_REACHED:
        out.srq_id = event.element.srq->handle;
        break;
      case IBV_EVENT_PORT_ACTIVE:
      case IBV_EVENT_PORT_ERR:
      case IBV_EVENT_LID_CHANGE:
      case IBV_EVENT_PKEY_CHANGE:
      case IBV_EVENT_GID_CHANGE:
      case IBV_EVENT_SM_CHANGE:
      case IBV_EVENT_CLIENT_REREGISTER:
        out.port_num = static_cast<uint8_t>(event.element.port_num);
        break;
      default:
        break;
    }
    ibv_ack_async_event(&event);
    return out;
  }
}

// --- Pd ---------------------------------------------------------------------

Context* HwPd::context() const { return context_; }

absl::Status HwPd::Destroy() {
  if (absl::Status s = Check(); !s.ok()) return s;
  int ret = ibv_dealloc_pd(res_->pd);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    "ibv_dealloc_pd: MRs, QPs or AHs still use the pd");
  }
  res_->pd = nullptr;
  res_.reset();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Mr>> HwPd::RegMr(void* addr, size_t length,
                                                uint32_t access) {
  if (absl::Status s = Check(); !s.ok()) return s;
  // Bits verbsim does not name go to the device, which decides: kernel 6.1
  // accepts HUGETLB and rdma-core drops the optional range (bits 20..29),
  // the rest is EINVAL from ib_check_mr_access.
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
      (access & kAccessLocalWrite) == 0) {
    return Errno(EINVAL, "RegMr: access %s needs LOCAL_WRITE",
                 AccessFlagsName(access));
  }
  if (addr == nullptr && length != 0) {
    return Errno(EINVAL, "RegMr: null address with length %zu", length);
  }
  // A range that wraps goes to the device, which decides (ib_umem_get:
  // EINVAL; siw_umem_get: EFAULT).
  const DeviceAttr& dev = context_->device_attr();
  if (length > dev.max_mr_size) {
    return Errno(EINVAL, "RegMr: length %zu exceeds max_mr_size %u of %s",
                 length, dev.max_mr_size, dev.name);
  }
  auto res = std::make_shared<MrRes>();
  res->mr = ibv_reg_mr(res_->pd, addr, length, static_cast<int>(access));
  if (res->mr == nullptr) {
    return SysError(errno, absl::StrFormat("ibv_reg_mr(%p, %zu, %s)", addr,
                                           length, AccessFlagsName(access)));
  }
  res->pd = res_;
  return std::unique_ptr<Mr>(new HwMr(std::move(res), this, access));
}

absl::StatusOr<std::unique_ptr<Qp>> HwPd::CreateQp(const QpInitAttr& attr) {
  if (absl::Status s = Check(); !s.ok()) return s;
  if (attr.qp_type != QpType::kRc && attr.qp_type != QpType::kUc &&
      attr.qp_type != QpType::kUd) {
    return Errno(EINVAL, "CreateQp: qp_type %d is not RC, UC or UD",
                 static_cast<int>(attr.qp_type));
  }
  std::shared_ptr<CqRes> cqs[2];
  const char* names[2] = {"send_cq", "recv_cq"};
  Cq* given[2] = {attr.send_cq, attr.recv_cq};
  for (int i = 0; i < 2; ++i) {
    if (given[i] == nullptr) {
      return Errno(EINVAL, "CreateQp: %s is null", names[i]);
    }
    auto* hw = dynamic_cast<HwCq*>(given[i]);
    if (hw == nullptr) {
      return Errno(EINVAL, "CreateQp: %s is not an hw CQ", names[i]);
    }
    if (hw->res() == nullptr) {
      return Errno(EINVAL, "CreateQp: %s was destroyed", names[i]);
    }
    if (hw->res()->dev != res_->dev) {
      return Errno(EINVAL, "CreateQp: %s belongs to another context", names[i]);
    }
    cqs[i] = hw->res();
  }
  std::shared_ptr<SrqRes> srq;
  if (attr.srq != nullptr) {
    auto* hw = dynamic_cast<HwSrq*>(attr.srq);
    if (hw == nullptr || hw->res() == nullptr) {
      return Errno(EINVAL, "CreateQp: srq is not a live hw SRQ");
    }
    if (hw->res()->pd->dev != res_->dev) {
      return Errno(EINVAL, "CreateQp: srq belongs to another context");
    }
    srq = hw->res();
  }
  // With an SRQ the receive caps are ignored (ibv_create_qp(3)).
  const uint32_t recv_wr = srq != nullptr ? 0 : attr.cap.max_recv_wr;
  const uint32_t recv_sge = srq != nullptr ? 0 : attr.cap.max_recv_sge;
  const DeviceAttr& dev = context_->device_attr();
  const struct {
    const char* name;
    uint32_t value;
    int max;
  } caps[] = {
      {"max_send_wr", attr.cap.max_send_wr, dev.max_qp_wr},
      {"max_recv_wr", recv_wr, dev.max_qp_wr},
      {"max_send_sge", attr.cap.max_send_sge, dev.max_sge},
      {"max_recv_sge", recv_sge, dev.max_sge},
      {"max_inline_data", attr.cap.max_inline_data, dev.max_inline_data},
  };
  for (const auto& cap : caps) {
    if (cap.value > static_cast<uint32_t>(std::max(cap.max, 0))) {
      return Errno(EINVAL, "CreateQp: %s %u exceeds the device limit %d of %s",
                   cap.name, cap.value, cap.max, dev.name);
    }
  }
  ibv_qp_init_attr init = {};
  init.send_cq = cqs[0]->cq;
  init.recv_cq = cqs[1]->cq;
  init.cap.max_send_wr = attr.cap.max_send_wr;
  init.cap.max_recv_wr = recv_wr;
  init.cap.max_send_sge = attr.cap.max_send_sge;
  init.cap.max_recv_sge = recv_sge;
  init.cap.max_inline_data = attr.cap.max_inline_data;
  init.srq = srq != nullptr ? srq->srq : nullptr;
  init.qp_type = static_cast<ibv_qp_type>(attr.qp_type);
  init.sq_sig_all = attr.sq_sig_all ? 1 : 0;
  auto res = std::make_shared<QpRes>();
  res->qp = ibv_create_qp(res_->pd, &init);
  if (res->qp == nullptr) {
    return SysError(
        errno,
        absl::StrFormat("ibv_create_qp(%s, send_wr %u, recv_wr %u, "
                        "send_sge %u, recv_sge %u, inline %u)",
                        QpTypeName(attr.qp_type), attr.cap.max_send_wr,
                        attr.cap.max_recv_wr, attr.cap.max_send_sge,
                        attr.cap.max_recv_sge, attr.cap.max_inline_data));
  }
  res->pd = res_;
  res->send_cq = cqs[0];
  res->recv_cq = cqs[1];
  res->srq = std::move(srq);
  // The caps the device actually granted (ibv_create_qp(3) writes them back).
  QpInitAttr actual = attr;
  actual.cap.max_send_wr = init.cap.max_send_wr;
  actual.cap.max_recv_wr = init.cap.max_recv_wr;
  actual.cap.max_send_sge = init.cap.max_send_sge;
  actual.cap.max_recv_sge = init.cap.max_recv_sge;
  actual.cap.max_inline_data = init.cap.max_inline_data;
  return std::unique_ptr<Qp>(
      new HwQp(std::move(res), this, actual, dev.phys_port_cnt));
}

ibv_ah_attr ToIbv(const AhAttr& a) {
  ibv_ah_attr out = {};
  std::memcpy(out.grh.dgid.raw, a.dgid.data(), a.dgid.size());
  out.grh.flow_label = a.flow_label;
  out.grh.sgid_index = a.sgid_index;
  out.grh.hop_limit = a.hop_limit;
  out.grh.traffic_class = a.traffic_class;
  out.dlid = a.dlid;
  out.sl = a.sl;
  out.src_path_bits = 0;
  out.static_rate = 0;
  out.is_global = a.is_global ? 1 : 0;
  out.port_num = a.port_num;
  return out;
}

AhAttr FromIbv(const ibv_ah_attr& a) {
  AhAttr out;
  std::memcpy(out.dgid.data(), a.grh.dgid.raw, out.dgid.size());
  out.flow_label = a.grh.flow_label;
  out.sgid_index = a.grh.sgid_index;
  out.hop_limit = a.grh.hop_limit;
  out.traffic_class = a.grh.traffic_class;
  out.dlid = a.dlid;
  out.sl = a.sl;
  out.is_global = a.is_global != 0;
  out.port_num = a.port_num;
  return out;
}

absl::StatusOr<std::unique_ptr<Ah>> HwPd::CreateAh(const AhAttr& attr) {
  if (absl::Status s = Check(); !s.ok()) return s;
  absl::StatusOr<PortAttr> port = context_->QueryPort(attr.port_num);
  if (!port.ok()) return port.status();
  if (attr.is_global && attr.sgid_index >= port->gid_tbl_len) {
    return Errno(EINVAL, "CreateAh: sgid_index %d out of range 0..%d",
                 attr.sgid_index, port->gid_tbl_len - 1);
  }
  ibv_ah_attr raw = ToIbv(attr);
  auto res = std::make_shared<AhRes>();
  res->ah = ibv_create_ah(res_->pd, &raw);
  if (res->ah == nullptr) {
    return SysError(errno,
                    absl::StrFormat("ibv_create_ah(dgid %s, port %d)",
                                    GidToString(attr.dgid), attr.port_num));
  }
  res->pd = res_;
  return std::unique_ptr<Ah>(new HwAh(std::move(res), attr, this));
}

absl::StatusOr<std::unique_ptr<Mw>> HwPd::AllocMw(MwType type) {
  if (absl::Status s = Check(); !s.ok()) return s;
  if (type != MwType::kType1 && type != MwType::kType2) {
    return Errno(EINVAL, "AllocMw: type %d is neither 1 nor 2",
                 static_cast<int>(type));
  }
  auto res = std::make_shared<MwRes>();
  res->mw = ibv_alloc_mw(res_->pd, static_cast<ibv_mw_type>(type));
  if (res->mw == nullptr) {
    return SysError(errno != 0 ? errno : EOPNOTSUPP,
                    absl::StrFormat("ibv_alloc_mw(type %d)",
                                    static_cast<int>(type)));
  }
  res->pd = res_;
  return std::unique_ptr<Mw>(new HwMw(std::move(res), type, this));
}

absl::StatusOr<std::unique_ptr<Srq>> HwPd::CreateSrq(const SrqAttr& attr) {
  if (absl::Status s = Check(); !s.ok()) return s;
  const DeviceAttr& dev = context_->device_attr();
  if (dev.max_srq <= 0) {
    return Errno(EOPNOTSUPP, "CreateSrq: %s has no shared receive queues",
                 dev.name);
  }
  if (attr.max_wr < 1 ||
      attr.max_wr > static_cast<uint32_t>(std::max(dev.max_srq_wr, 0)) ||
      attr.max_sge > static_cast<uint32_t>(std::max(dev.max_srq_sge, 0))) {
    return Errno(EINVAL,
                 "CreateSrq: max_wr %u, max_sge %u outside 1..%d, 0..%d of %s",
                 attr.max_wr, attr.max_sge, dev.max_srq_wr, dev.max_srq_sge,
                 dev.name);
  }
  ibv_srq_init_attr init = {};
  init.attr.max_wr = attr.max_wr;
  init.attr.max_sge = attr.max_sge;
  init.attr.srq_limit = attr.srq_limit;
  auto res = std::make_shared<SrqRes>();
  errno = 0;
  res->srq = ibv_create_srq(res_->pd, &init);
  if (res->srq == nullptr) {
    return SysError(errno != 0 ? errno : EOPNOTSUPP,
                    absl::StrFormat("ibv_create_srq(max_wr %u, max_sge %u)",
                                    attr.max_wr, attr.max_sge));
  }
  res->pd = res_;
  return std::unique_ptr<Srq>(new HwSrq(std::move(res), this));
}

// --- CompChannel ------------------------------------------------------------

absl::StatusOr<Cq*> HwCompChannel::GetEvent(absl::Duration timeout) {
  if (res_ == nullptr) return Dead("completion channel");
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<bool> ready = WaitReadable(fd_, deadline);
    if (!ready.ok()) return ready.status();
    if (!*ready) {
      return Errno(ETIMEDOUT, "no completion event within %s",
                   absl::FormatDuration(timeout));
    }
    ibv_cq* cq = nullptr;
    void* cq_context = nullptr;
    if (ibv_get_cq_event(res_->channel, &cq, &cq_context) != 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return SysError(errno, "ibv_get_cq_event");
    }
    auto* cq_res = static_cast<CqRes*>(cq_context);
    HwCq* handle = nullptr;
    {
      absl::MutexLock lock(&cq_res->mu);
      ++cq_res->unacked;
      handle = cq_res->handle;
    }
    if (handle != nullptr) return handle;
    cq_res->Ack(1);  // the CQ's handle was dropped: nobody wants the event
  }
}

void HwCompChannel::AckEvents(Cq* cq, unsigned int count) {
  if (auto* hw = dynamic_cast<HwCq*>(cq); hw != nullptr) hw->AckEvents(count);
}

// --- Cq ---------------------------------------------------------------------

WorkCompletion FromIbv(const ibv_wc& wc) {
  WorkCompletion out;
  out.wr_id = wc.wr_id;
  out.status = static_cast<WcStatus>(wc.status);
  out.opcode = static_cast<WcOpcode>(wc.opcode);
  out.vendor_err = wc.vendor_err;
  out.byte_len = wc.byte_len;
  if (wc.wc_flags & IBV_WC_WITH_IMM) out.imm_data = ntohl(wc.imm_data);
  if (wc.wc_flags & IBV_WC_WITH_INV) out.invalidated_rkey = wc.invalidated_rkey;
  out.qp_num = wc.qp_num;
  out.src_qp = wc.src_qp;
  out.wc_flags = wc.wc_flags;
  out.pkey_index = wc.pkey_index;
  out.slid = wc.slid;
  out.sl = wc.sl;
  out.dlid_path_bits = wc.dlid_path_bits;
  return out;
}

absl::StatusOr<int> HwCq::Poll(absl::Span<WorkCompletion> wcs) {
  if (res_ == nullptr) return Dead("cq");
  constexpr size_t kChunk = 16;
  ibv_wc raw[kChunk];
  size_t done = 0;
  const size_t want = std::min<size_t>(wcs.size(), INT_MAX);
  while (done < want) {
    const int ask = static_cast<int>(std::min(kChunk, want - done));
    const int n = ibv_poll_cq(res_->cq, ask, raw);
    if (n < 0) {
      return SysError(n < -1 ? -n : EIO,
                      absl::StrFormat("ibv_poll_cq(cq %u) returned %d",
                                      res_->cq->handle, n));
    }
    for (int i = 0; i < n; ++i) wcs[done + i] = FromIbv(raw[i]);
    done += n;
    if (n < ask) break;
  }
  return static_cast<int>(done);
}

// --- Qp ---------------------------------------------------------------------

QpState HwQp::state() const {
  if (res_ == nullptr) return QpState::kUnknown;
  ibv_qp_attr attr = {};
  ibv_qp_init_attr init = {};
  if (ibv_query_qp(res_->qp, &attr, IBV_QP_STATE, &init) != 0) {
    return QpState::kUnknown;
  }
  return static_cast<QpState>(attr.qp_state);
}

constexpr uint32_t kAllQpAttrMask = (1u << 21) - 1;

absl::Status HwQp::Modify(const QpAttr& attr, uint32_t mask) {
  if (absl::Status s = Check(); !s.ok()) return s;
  if ((mask & ~kAllQpAttrMask) != 0) {
    // What ibv_modify_qp answers (rdma-core ibv_cmd_modify_qp).
    return Errno(EOPNOTSUPP, "Modify qp %u: mask bits 0x%x past "
                 "IBV_QP_DEST_QPN", qp_num_, mask & ~kAllQpAttrMask);
  }
  if ((mask & (kQpAltPath | kQpPathMigState)) != 0) {
    return Errno(EINVAL,
                 "Modify qp %u: %s not supported (QpAttr has no alternate "
                 "path or migration state)",
                 qp_num_,
                 QpAttrMaskName(mask & (kQpAltPath | kQpPathMigState)));
  }
  auto valid_state = [](QpState s) {
    return s >= QpState::kReset && s <= QpState::kErr;
  };
  if ((mask & kQpState) && !valid_state(attr.qp_state)) {
    return Errno(EINVAL, "Modify qp %u: qp_state %d is not a QP state", qp_num_,
                 static_cast<int>(attr.qp_state));
  }
  if ((mask & kQpCurState) && !valid_state(attr.cur_qp_state)) {
    return Errno(EINVAL, "Modify qp %u: cur_qp_state %d is not a QP state",
                 qp_num_, static_cast<int>(attr.cur_qp_state));
  }
  if ((mask & kQpPathMtu) && MtuBytes(attr.path_mtu) == 0) {
    return Errno(EINVAL, "Modify qp %u: path_mtu %d is not an MTU value",
                 qp_num_, static_cast<int>(attr.path_mtu));
  }
  if ((mask & kQpPort) &&
      (attr.port_num < 1 || attr.port_num > phys_port_cnt_)) {
    return Errno(EINVAL, "Modify qp %u: port_num %d out of range 1..%d",
                 qp_num_, attr.port_num, phys_port_cnt_);
  }
  if ((mask & kQpAv) &&
      (attr.ah_attr.port_num < 1 || attr.ah_attr.port_num > phys_port_cnt_)) {
    return Errno(EINVAL, "Modify qp %u: ah_attr.port_num %d out of range 1..%d",
                 qp_num_, attr.ah_attr.port_num, phys_port_cnt_);
  }
  ibv_qp_attr a = {};
  a.qp_state = static_cast<ibv_qp_state>(attr.qp_state);
  a.cur_qp_state = static_cast<ibv_qp_state>(attr.cur_qp_state);
  a.path_mtu = static_cast<ibv_mtu>(attr.path_mtu);
  a.qkey = attr.qkey;
  a.rq_psn = attr.rq_psn;
  a.sq_psn = attr.sq_psn;
  a.dest_qp_num = attr.dest_qp_num;
  a.qp_access_flags = attr.qp_access_flags;
  a.cap.max_send_wr = attr.cap.max_send_wr;
  a.cap.max_recv_wr = attr.cap.max_recv_wr;
  a.cap.max_send_sge = attr.cap.max_send_sge;
  a.cap.max_recv_sge = attr.cap.max_recv_sge;
  a.cap.max_inline_data = attr.cap.max_inline_data;
  a.ah_attr = ToIbv(attr.ah_attr);
  a.pkey_index = attr.pkey_index;
  a.en_sqd_async_notify = attr.en_sqd_async_notify ? 1 : 0;
  a.max_rd_atomic = attr.max_rd_atomic;
  a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  a.min_rnr_timer = attr.min_rnr_timer;
  a.port_num = attr.port_num;
  a.timeout = attr.timeout;
  a.retry_cnt = attr.retry_cnt;
  a.rnr_retry = attr.rnr_retry;
  return ModifyRaw(&a, static_cast<int>(mask), "Modify");
}

absl::Status HwQp::ModifyRaw(ibv_qp_attr* attr, int mask,
                             absl::string_view why) {
  if (absl::Status s = Check(); !s.ok()) return s;
  const QpState from = state();
  int ret = ibv_modify_qp(res_->qp, attr, mask);
  if (ret != 0) {
    std::string to =
        (mask & IBV_QP_STATE)
            ? std::string(QpStateName(static_cast<QpState>(attr->qp_state)))
            : std::string(QpStateName(from));
    return SysError(
        ErrnoFromReturn(ret),
        absl::StrFormat("%s: ibv_modify_qp(qp %u, %s -> %s, mask "
                        "%s)",
                        why, qp_num_, QpStateName(from), to,
                        QpAttrMaskName(static_cast<uint32_t>(mask))));
  }
  return absl::OkStatus();
}

absl::StatusOr<QpAttr> HwQp::Query() const {
  if (absl::Status s = Check(); !s.ok()) return s;
  ibv_qp_attr a = {};
  ibv_qp_init_attr init = {};
  int ret = ibv_query_qp(
      res_->qp, &a,
      static_cast<int>(kAllQpAttrMask & ~(kQpAltPath | kQpPathMigState)),
      &init);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_query_qp(qp %u)", qp_num_));
  }
  QpAttr out;
  out.qp_state = static_cast<QpState>(a.qp_state);
  out.cur_qp_state = static_cast<QpState>(a.cur_qp_state);
  out.path_mtu = static_cast<Mtu>(a.path_mtu);
  out.qkey = a.qkey;
  out.rq_psn = a.rq_psn;
  out.sq_psn = a.sq_psn;
  out.dest_qp_num = a.dest_qp_num;
  out.qp_access_flags = a.qp_access_flags;
  out.cap.max_send_wr = a.cap.max_send_wr;
  out.cap.max_recv_wr = a.cap.max_recv_wr;
  out.cap.max_send_sge = a.cap.max_send_sge;
  out.cap.max_recv_sge = a.cap.max_recv_sge;
  out.cap.max_inline_data = a.cap.max_inline_data;
  out.ah_attr = FromIbv(a.ah_attr);
  out.pkey_index = a.pkey_index;
  out.en_sqd_async_notify = a.en_sqd_async_notify != 0;
  out.sq_draining = a.sq_draining != 0;
  out.max_rd_atomic = a.max_rd_atomic;
  out.max_dest_rd_atomic = a.max_dest_rd_atomic;
  out.min_rnr_timer = a.min_rnr_timer;
  out.port_num = a.port_num;
  out.timeout = a.timeout;
  out.retry_cnt = a.retry_cnt;
  out.rnr_retry = a.rnr_retry;
  return out;
}

// Checks what ibv_send_wr cannot express and fills `out` (all but sg_list
// and next).
absl::Status HwQp::CheckSendWr(size_t i, const SendWr& wr,
                               ibv_send_wr* out) const {
  const int op = static_cast<int>(wr.opcode);
  if (op < static_cast<int>(WrOpcode::kRdmaWrite) ||
      op > static_cast<int>(WrOpcode::kSendWithInv)) {
    return Errno(EINVAL, "PostSend qp %u: wr %zu (wr_id %u) opcode %d unknown",
                 qp_num_, i, wr.wr_id, op);
  }
  ibv_mw* bind_mw = nullptr;
  ibv_mr* bind_mr = nullptr;
  if (wr.opcode == WrOpcode::kBindMw) {
    auto* mw = dynamic_cast<HwMw*>(wr.bind_mw.mw);
    if (mw == nullptr || mw->raw() == nullptr) {
      return Errno(EINVAL,
                   "PostSend qp %u: wr %zu (wr_id %u) BIND_MW needs a live hw "
                   "memory window",
                   qp_num_, i, wr.wr_id);
    }
    bind_mw = mw->raw();
    if (wr.bind_mw.bind_info.mr != nullptr) {
      auto* mr = dynamic_cast<HwMr*>(wr.bind_mw.bind_info.mr);
      if (mr == nullptr || mr->raw() == nullptr) {
        return Errno(EINVAL,
                     "PostSend qp %u: wr %zu (wr_id %u) BIND_MW needs a live "
                     "hw memory region",
                     qp_num_, i, wr.wr_id);
      }
      bind_mr = mr->raw();
    }
  }
  if ((wr.send_flags & ~kSendAllKnown) != 0) {
    return Errno(EINVAL,
                 "PostSend qp %u: wr %zu (wr_id %u) unknown send_flags 0x%x",
                 qp_num_, i, wr.wr_id, wr.send_flags & ~kSendAllKnown);
  }
  if (wr.sg_list.size() > static_cast<size_t>(INT_MAX)) {
    return Errno(EINVAL, "PostSend qp %u: wr %zu (wr_id %u) has %zu SGEs",
                 qp_num_, i, wr.wr_id, wr.sg_list.size());
  }
  *out = {};
  out->wr_id = wr.wr_id;
  out->num_sge = static_cast<int>(wr.sg_list.size());
  out->opcode = static_cast<ibv_wr_opcode>(wr.opcode);
  out->send_flags = wr.send_flags;
  switch (wr.opcode) {
    case WrOpcode::kSendWithImm:
    case WrOpcode::kRdmaWriteWithImm:
      out->imm_data = htonl(wr.imm_data);
      break;
    case WrOpcode::kSendWithInv:
    case WrOpcode::kLocalInv:
      out->invalidate_rkey = wr.invalidate_rkey;
      break;
    default:
      break;
  }
  switch (wr.opcode) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
    case WrOpcode::kRdmaRead:
      out->wr.rdma.remote_addr = wr.rdma.remote_addr;
      out->wr.rdma.rkey = wr.rdma.rkey;
      break;
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd:
      out->wr.atomic.remote_addr = wr.atomic.remote_addr;
      out->wr.atomic.compare_add = wr.atomic.compare_add;
      out->wr.atomic.swap = wr.atomic.swap;
      out->wr.atomic.rkey = wr.atomic.rkey;
      break;
    case WrOpcode::kBindMw:
      out->bind_mw.mw = bind_mw;
      out->bind_mw.rkey = wr.bind_mw.rkey;
      out->bind_mw.bind_info.mr = bind_mr;
      out->bind_mw.bind_info.addr = wr.bind_mw.bind_info.addr;
      out->bind_mw.bind_info.length = wr.bind_mw.bind_info.length;
      out->bind_mw.bind_info.mw_access_flags =
          wr.bind_mw.bind_info.mw_access_flags;
      break;
    default:
      break;
  }
  if (init_.qp_type == QpType::kUd) {
    auto* ah = dynamic_cast<HwAh*>(wr.ud.ah);
    if (ah == nullptr || ah->raw() == nullptr) {
      return Errno(EINVAL,
                   "PostSend qp %u: wr %zu (wr_id %u) UD send needs a live hw "
                   "address handle (ah %p)",
                   qp_num_, i, wr.wr_id, static_cast<void*>(wr.ud.ah));
    }
    out->wr.ud.ah = ah->raw();
    out->wr.ud.remote_qpn = wr.ud.remote_qpn;
    out->wr.ud.remote_qkey = wr.ud.remote_qkey;
  }
  return absl::OkStatus();
}

absl::Status HwQp::PostSend(absl::Span<const SendWr> wrs, size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (absl::Status s = Check(); !s.ok()) return s;
  if (wrs.empty()) return absl::OkStatus();
  size_t total_sge = 0;
  for (const SendWr& wr : wrs) total_sge += wr.sg_list.size();
  absl::InlinedVector<ibv_send_wr, 4> raw(wrs.size());
  absl::InlinedVector<ibv_sge, 8> sges(total_sge);
  // As ibv_post_send: the WRs before the first bad one are posted.
  size_t valid = 0;
  absl::Status invalid;
  size_t next_sge = 0;
  for (; valid < wrs.size(); ++valid) {
    const SendWr& wr = wrs[valid];
    invalid = CheckSendWr(valid, wr, &raw[valid]);
    if (!invalid.ok()) break;
    ibv_sge* list = sges.data() + next_sge;
    for (const Sge& sge : wr.sg_list) {
      sges[next_sge++] = ibv_sge{sge.addr, sge.length, sge.lkey};
    }
    raw[valid].sg_list = wr.sg_list.empty() ? nullptr : list;
    if (valid > 0) raw[valid - 1].next = &raw[valid];
  }
  if (valid > 0) {
    ibv_send_wr* bad = nullptr;
    int ret = ibv_post_send(res_->qp, raw.data(), &bad);
    if (ret != 0) {
      size_t index = 0;
      if (bad >= raw.data() && bad < raw.data() + valid)
        index = bad - raw.data();
      if (bad_index != nullptr) *bad_index = index;
      const SendWr& wr = wrs[index];
      return SysError(
          ErrnoFromReturn(ret),
          absl::StrFormat("ibv_post_send(qp %u in %s): wr %zu (wr_id %u, %s, "
                          "%zu sge, flags 0x%x)",
                          qp_num_, QpStateName(state()), index, wr.wr_id,
                          WrOpcodeName(wr.opcode), wr.sg_list.size(),
                          wr.send_flags));
    }
  }
  // Posted BIND_MW requests give their windows the rkey they name.
  for (size_t k = 0; k < valid; ++k) {
    if (wrs[k].opcode == WrOpcode::kBindMw) {
      if (auto* mw = dynamic_cast<HwMw*>(wrs[k].bind_mw.mw); mw != nullptr) {
        mw->set_rkey(wrs[k].bind_mw.rkey);
      }
    }
  }
  if (!invalid.ok() && bad_index != nullptr) *bad_index = valid;
  return invalid;
}

// ibv_post_recv / ibv_post_srq_recv over `wrs`: `post` takes the linked
// list and returns the ibverbs result and the bad WR; `who` names the queue
// ("qp 5 in RTS") in errors.
template <typename PostFn>
absl::Status PostRecvList(absl::Span<const RecvWr> wrs, size_t* bad_index,
                          const std::string& who, PostFn post) {
  if (wrs.empty()) return absl::OkStatus();
  size_t total_sge = 0;
  for (const RecvWr& wr : wrs) total_sge += wr.sg_list.size();
  absl::InlinedVector<ibv_recv_wr, 4> raw(wrs.size());
  absl::InlinedVector<ibv_sge, 8> sges(total_sge);
  size_t valid = 0;
  absl::Status invalid;
  size_t next_sge = 0;
  for (; valid < wrs.size(); ++valid) {
    const RecvWr& wr = wrs[valid];
    if (wr.sg_list.size() > static_cast<size_t>(INT_MAX)) {
      invalid = Errno(EINVAL, "PostRecv %s: wr %zu (wr_id %u) has %zu SGEs",
                      who, valid, wr.wr_id, wr.sg_list.size());
      break;
    }
    ibv_sge* list = sges.data() + next_sge;
    for (const Sge& sge : wr.sg_list) {
      sges[next_sge++] = ibv_sge{sge.addr, sge.length, sge.lkey};
    }
    raw[valid] = {};
    raw[valid].wr_id = wr.wr_id;
    raw[valid].sg_list = wr.sg_list.empty() ? nullptr : list;
    raw[valid].num_sge = static_cast<int>(wr.sg_list.size());
    if (valid > 0) raw[valid - 1].next = &raw[valid];
  }
  if (valid > 0) {
    ibv_recv_wr* bad = nullptr;
    int ret = post(raw.data(), &bad);
    if (ret != 0) {
      size_t index = 0;
      if (bad >= raw.data() && bad < raw.data() + valid)
        index = bad - raw.data();
      if (bad_index != nullptr) *bad_index = index;
      return SysError(
          ErrnoFromReturn(ret),
          absl::StrFormat("post recv (%s): wr %zu (wr_id %u, %zu sge)", who,
                          index, wrs[index].wr_id, wrs[index].sg_list.size()));
    }
  }
  if (!invalid.ok() && bad_index != nullptr) *bad_index = valid;
  return invalid;
}

absl::Status HwQp::PostRecv(absl::Span<const RecvWr> wrs, size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (absl::Status s = Check(); !s.ok()) return s;
  if (wrs.empty()) return absl::OkStatus();
  ibv_qp* qp = res_->qp;
  return PostRecvList(
      wrs, bad_index,
      absl::StrFormat("ibv_post_recv, qp %u in %s", qp_num_,
                      QpStateName(state())),
      [qp](ibv_recv_wr* list, ibv_recv_wr** bad) {
        return ibv_post_recv(qp, list, bad);
      });
}

absl::Status HwSrq::PostRecv(absl::Span<const RecvWr> wrs, size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (res_ == nullptr) return Dead(absl::StrFormat("srq %u", id_));
  ibv_srq* srq = res_->srq;
  return PostRecvList(wrs, bad_index,
                      absl::StrFormat("ibv_post_srq_recv, srq %u", id_),
                      [srq](ibv_recv_wr* list, ibv_recv_wr** bad) {
                        return ibv_post_srq_recv(srq, list, bad);
                      });
}

absl::Status HwQp::BindMw(Mw* mw, const MwBind& bind) {
  if (absl::Status s = Check(); !s.ok()) return s;
  auto* hw_mw = dynamic_cast<HwMw*>(mw);
  if (hw_mw == nullptr || hw_mw->raw() == nullptr) {
    return Errno(EINVAL, "BindMw qp %u: not a live hw memory window", qp_num_);
  }
  ibv_mr* mr = nullptr;
  if (bind.bind_info.mr != nullptr) {
    auto* hw_mr = dynamic_cast<HwMr*>(bind.bind_info.mr);
    if (hw_mr == nullptr || hw_mr->raw() == nullptr) {
      return Errno(EINVAL, "BindMw qp %u: not a live hw memory region",
                   qp_num_);
    }
    mr = hw_mr->raw();
  }
  ibv_mw_bind b = {};
  b.wr_id = bind.wr_id;
  b.send_flags = bind.send_flags;
  b.bind_info.mr = mr;
  b.bind_info.addr = bind.bind_info.addr;
  b.bind_info.length = bind.bind_info.length;
  b.bind_info.mw_access_flags = bind.bind_info.mw_access_flags;
  // ibv_bind_mw (verbs.h) refuses a type 2 window and a length without a
  // region (EINVAL) and a region of another PD (EPERM) itself.
  int ret = ibv_bind_mw(res_->qp, hw_mw->raw(), &b);
  if (ret != 0) {
    return SysError(
        ErrnoFromReturn(ret),
        absl::StrFormat("ibv_bind_mw(qp %u, rkey 0x%x, addr 0x%x, length %u, "
                        "%s)",
                        qp_num_, hw_mw->rkey(), bind.bind_info.addr,
                        bind.bind_info.length,
                        AccessFlagsName(bind.bind_info.mw_access_flags)));
  }
  hw_mw->set_rkey(hw_mw->raw()->rkey);
  return absl::OkStatus();
}

absl::Status HwQp::AttachMcast(const Gid& gid, uint16_t lid) {
  if (absl::Status s = Check(); !s.ok()) return s;
  ibv_gid g;
  std::memcpy(g.raw, gid.data(), sizeof(g.raw));
  int ret = ibv_attach_mcast(res_->qp, &g, lid);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_attach_mcast(qp %u, %s, lid %u)",
                                    qp_num_, GidToString(gid), lid));
  }
  return absl::OkStatus();
}

absl::Status HwQp::DetachMcast(const Gid& gid, uint16_t lid) {
  if (absl::Status s = Check(); !s.ok()) return s;
  ibv_gid g;
  std::memcpy(g.raw, gid.data(), sizeof(g.raw));
  int ret = ibv_detach_mcast(res_->qp, &g, lid);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_detach_mcast(qp %u, %s, lid %u)",
                                    qp_num_, GidToString(gid), lid));
  }
  return absl::OkStatus();
}

absl::Status HwMr::Rereg(uint32_t flags, Pd* pd, void* addr, size_t length,
                         uint32_t access) {
  if (res_ == nullptr) return Dead(absl::StrFormat("mr lkey 0x%x", lkey_));
  if (flags == 0 || (flags & ~kReregAllKnown) != 0) {
    return Errno(EINVAL, "Rereg mr lkey 0x%x: flags 0x%x (known: 0x%x)", lkey_,
                 flags, kReregAllKnown);
  }
  std::shared_ptr<PdRes> new_pd;
  if (flags & kReregChangePd) {
    auto* hw_pd = dynamic_cast<HwPd*>(pd);
    if (hw_pd == nullptr || hw_pd->res() == nullptr) {
      return Errno(EINVAL, "Rereg mr lkey 0x%x: not a live hw pd", lkey_);
    }
    new_pd = hw_pd->res();
  }
  if (flags & kReregChangeAccess) {
    // Unnamed bits go to the device, as for RegMr.
    if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
        (access & kAccessLocalWrite) == 0) {
      return Errno(EINVAL, "Rereg mr lkey 0x%x: access %s needs LOCAL_WRITE",
                   lkey_, AccessFlagsName(access));
    }
  }
  errno = 0;
  int ret = ibv_rereg_mr(res_->mr, static_cast<int>(flags),
                         new_pd != nullptr ? new_pd->pd : nullptr, addr,
                         length, static_cast<int>(access));
  if (ret != 0) {
    // IBV_REREG_MR_ERR_INPUT (-1): bad arguments; the others leave errno.
    const int err = ret == IBV_REREG_MR_ERR_INPUT ? EINVAL
                    : errno != 0                  ? errno
                                                  : EIO;
    return SysError(err, absl::StrFormat("ibv_rereg_mr(lkey 0x%x, flags 0x%x) "
                                         "returned %d",
                                         lkey_, flags, ret));
  }
  ibv_mr* mr = res_->mr;
  lkey_ = mr->lkey;
  rkey_ = mr->rkey;
  if (flags & kReregChangeTranslation) {
    addr_ = addr;
    length_ = length;
  }
  if (flags & kReregChangeAccess) access_ = access;
  if (new_pd != nullptr) {
    res_->pd = std::move(new_pd);
    pd_ = pd;
  }
  return absl::OkStatus();
}

// Builds a Context over `ctx`; closes it on failure when `owned`.
absl::StatusOr<std::unique_ptr<Context>> MakeContext(ibv_context* ctx,
                                                     bool owned,
                                                     std::shared_ptr<CmId> cm) {
  auto res = std::make_shared<DeviceRes>();
  res->ctx = ctx;
  res->owned = owned;
  res->cm = std::move(cm);
  absl::StatusOr<DeviceAttr> attr = QueryDeviceAttr(ctx);
  if (!attr.ok()) return attr.status();  // res closes what it owns
  res->name = attr->name;
  return std::unique_ptr<Context>(new HwContext(std::move(res), *attr));
}

}  // namespace

// ---------------------------------------------------------------------------
// Entry points for the provider and the rdma_cm code.

CmId::~CmId() {
  if (id != nullptr) rdma_destroy_id(id);
  if (channel != nullptr) rdma_destroy_event_channel(channel);
}

namespace {

// ibv_get_device_list, with "no RDMA in this kernel" (NULL with ENOSYS, or
// ENODEV) as an empty list.
absl::StatusOr<std::vector<ibv_device*>> DeviceList(ibv_device*** list) {
  int num = 0;
  errno = 0;
  *list = ibv_get_device_list(&num);
  if (*list == nullptr) {
    if (errno == ENOSYS || errno == ENODEV || errno == ENOENT || errno == 0) {
      return std::vector<ibv_device*>();
    }
    return SysError(errno, "ibv_get_device_list");
  }
  return std::vector<ibv_device*>(*list, *list + std::max(num, 0));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> DeviceNames() {
  ibv_device** list = nullptr;
  absl::StatusOr<std::vector<ibv_device*>> devices = DeviceList(&list);
  if (!devices.ok()) return devices.status();
  std::vector<std::string> names;
  for (ibv_device* device : *devices) {
    names.push_back(ibv_get_device_name(device));
  }
  if (list != nullptr) ibv_free_device_list(list);
  return names;
}

absl::StatusOr<std::vector<std::string>> DevicesLike(absl::string_view name) {
  ibv_device** list = nullptr;
  absl::StatusOr<std::vector<ibv_device*>> devices = DeviceList(&list);
  if (!devices.ok()) return devices.status();
  // What tells two devices of one driver apart from others: the transport
  // and the vendor id (ibv_query_device needs an open context). Not the part
  // id: siw numbers its devices with it (siw_main.c, vendor_part_id =
  // dev_id++).
  struct Kind {
    int transport = -1;
    uint32_t vendor_id = 0;
    bool known = false;
    bool operator==(const Kind& o) const {
      return known && o.known && transport == o.transport &&
             vendor_id == o.vendor_id;
    }
  };
  auto kind_of = [](ibv_device* device) {
    Kind kind;
    kind.transport = static_cast<int>(device->transport_type);
    ibv_context* ctx = ibv_open_device(device);
    if (ctx == nullptr) return kind;
    ibv_device_attr attr = {};
    if (ibv_query_device(ctx, &attr) == 0) {
      kind.vendor_id = attr.vendor_id;
      kind.known = true;
    }
    ibv_close_device(ctx);
    return kind;
  };
  std::vector<std::string> names;
  ibv_device* chosen = nullptr;
  for (ibv_device* device : *devices) {
    names.push_back(ibv_get_device_name(device));
    if (names.back() == name) chosen = device;
  }
  if (chosen == nullptr) {
    if (list != nullptr) ibv_free_device_list(list);
    return Errno(ENODEV, "no RDMA device named '%s' (%s)", name,
                 names.empty() ? std::string("this machine has none")
                               : "devices: " + absl::StrJoin(names, ", "));
  }
  const Kind want = kind_of(chosen);
  std::vector<std::string> out = {std::string(name)};
  for (ibv_device* device : *devices) {
    if (device == chosen) continue;
    if (kind_of(device) == want) out.push_back(ibv_get_device_name(device));
  }
  ibv_free_device_list(list);
  return out;
}

absl::StatusOr<std::unique_ptr<Context>> OpenDevice(absl::string_view name) {
  ibv_device** list = nullptr;
  absl::StatusOr<std::vector<ibv_device*>> devices = DeviceList(&list);
  if (!devices.ok()) return devices.status();
  std::vector<std::string> names;
  ibv_device* found = nullptr;
  for (ibv_device* device : *devices) {
    names.push_back(ibv_get_device_name(device));
    if (names.back() == name) found = device;
  }
  if (found == nullptr) {
    if (list != nullptr) ibv_free_device_list(list);
    return Errno(ENODEV, "no RDMA device named '%s' (%s)", name,
                 names.empty() ? std::string("this machine has none")
                               : "devices: " + absl::StrJoin(names, ", "));
  }
  ibv_context* ctx = ibv_open_device(found);
  const int err = errno;
  ibv_free_device_list(list);  // an opened context stays valid
  if (ctx == nullptr) {
    return SysError(err, absl::StrFormat("ibv_open_device(%s)", name));
  }
  return MakeContext(ctx, /*owned=*/true, nullptr);
}

absl::StatusOr<std::unique_ptr<Context>> WrapCmContext(
    std::shared_ptr<CmId> cm) {
  if (cm == nullptr || cm->id == nullptr || cm->id->verbs == nullptr) {
    return Errno(EINVAL, "the cm_id is not bound to an RDMA device");
  }
  ibv_context* ctx = cm->id->verbs;
  return MakeContext(ctx, /*owned=*/false, std::move(cm));
}

ibv_context* RawContext(const Context* context) {
  auto* hw = dynamic_cast<const HwContext*>(context);
  return hw != nullptr ? hw->raw() : nullptr;
}

absl::Status ModifyRawQp(Qp* qp, ibv_qp_attr* attr, int mask,
                         absl::string_view why) {
  auto* hw = dynamic_cast<HwQp*>(qp);
  if (hw == nullptr) return Errno(EINVAL, "%s: not an hw QP", why);
  return hw->ModifyRaw(attr, mask, why);
}

}  // namespace hw
}  // namespace verbsim
