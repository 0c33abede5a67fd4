#include "sim/handles.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "core/names.h"
#include "sim/qp_verbs.h"
#include "sim/sg.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;

class SimContext;
class SimPd;
class SimCq;
class SimChannel;

// ibv_reg_mr(3)'s checks of the access flags, shared by RegMr and Rereg.
absl::Status CheckMrAccess(const SimProfile& profile, uint32_t access) {
  if (access & ~(kAccessAllKnown | profile.ignored_access_bits)) {
    return Errno(EINVAL, "access 0x%x has unknown bits", access);
  }
  // ibv_reg_mr(3): remote write or atomic access needs local write.
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) &&
      !(access & kAccessLocalWrite)) {
    return Errno(EINVAL, "access %s needs LOCAL_WRITE with remote write or atomic",
                 AccessFlagsName(access));
  }
  if ((access & kAccessZeroBased) && !profile.accepts_zero_based) {
    return Errno(EINVAL, "access ZERO_BASED needs ibv_reg_mr_iova");
  }
  if (access & kAccessOnDemand) {
    return Errno(profile.on_demand_errno,
                 "access ON_DEMAND: the device has no on-demand paging");
  }
  return absl::OkStatus();
}

// ibv_reg_mr(3)'s checks of the range.
absl::Status CheckMrRange(const SimProfile& profile, const void* addr,
                          size_t length) {
  const DeviceAttr& dev = profile.device;
  if (length == 0 && !profile.zero_length_mr) {
    // The kernel's ib_umem_get refuses an empty range.
    return Errno(EINVAL, "length 0: the device registers no empty region");
  }
  if (addr == nullptr && length > 0) {
    return Errno(EINVAL, "null address with length %zu", length);
  }
  const uint64_t start = reinterpret_cast<uint64_t>(addr);
  if (start + length < start) {
    return Errno(profile.wrapping_range_errno,
                 "range [0x%x, +%zu) wraps the address space", start, length);
  }
  if (length > dev.max_mr_size) {
    return Errno(EINVAL, "length %zu exceeds max_mr_size", length);
  }
  return absl::OkStatus();
}

std::shared_ptr<PdState> PdStateOf(Pd* pd);

class SimMr : public Mr {
 public:
  SimMr(std::shared_ptr<Fabric> fabric, std::shared_ptr<MrState> st, Pd* pd)
      : fabric_(std::move(fabric)), st_(std::move(st)), pd_(pd) {}
  const std::shared_ptr<MrState>& state() const { return st_; }
  ~SimMr() override {
    Lock lock(*fabric_);
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "mr lkey 0x%x is already deregistered", st_->lkey);
    if (st_->mws_bound > 0) {
      return Errno(fabric_->profile().dereg_bound_mr_errno,
                   "mr lkey 0x%x has %d memory windows bound", st_->lkey,
                   st_->mws_bound);
    }
    Release();
    return absl::OkStatus();
  }
  absl::Status Rereg(uint32_t flags, Pd* pd, void* addr, size_t length,
                     uint32_t access) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "mr lkey 0x%x is deregistered", st_->lkey);
    if (!fabric_->profile().supports_rereg) {
      return Errno(EOPNOTSUPP, "ibv_rereg_mr: %s has no re-registration",
                   fabric_->profile().name);
    }
    if (flags & ~kReregAllKnown) {
      return Errno(EINVAL, "rereg flags 0x%x has unknown bits", flags);
    }
    // libibverbs: access is given only with CHANGE_ACCESS.
    if (access != 0 && !(flags & kReregChangeAccess)) {
      return Errno(EINVAL, "rereg access 0x%x without CHANGE_ACCESS", access);
    }
    if (st_->mws_bound > 0) {
      return Errno(EBUSY, "mr lkey 0x%x has %d memory windows bound",
                   st_->lkey, st_->mws_bound);
    }
    std::shared_ptr<PdState> new_pd = st_->pd;
    if (flags & kReregChangePd) {
      new_pd = PdStateOf(pd);
      if (new_pd == nullptr) {
        return Errno(EINVAL, "rereg CHANGE_PD to a PD of another provider");
      }
      if (new_pd->dead) return Errno(EINVAL, "rereg CHANGE_PD to a destroyed PD");
      if (new_pd->context != st_->pd->context) {
        return Errno(EINVAL, "rereg CHANGE_PD to a PD of another context");
      }
    }
    if (flags & kReregChangeTranslation) {
      // ibv_rereg_mr(3): a new translation needs an address and a length.
      if (addr == nullptr || length == 0) {
        return Errno(EINVAL, "rereg CHANGE_TRANSLATION needs an address and "
                     "a length (got %p, %zu)", addr, length);
      }
      if (absl::Status s = CheckMrRange(fabric_->profile(), addr, length);
          !s.ok()) {
        return s;
      }
    }
    if (flags & kReregChangeAccess) {
      if (absl::Status s = CheckMrAccess(fabric_->profile(), access); !s.ok()) {
        return s;
      }
    }
    // Applied only once every argument passed.
    if (flags & kReregChangePd) {
      --st_->pd->mrs;
      st_->pd = new_pd;
      ++new_pd->mrs;
      pd_ = pd;
    }
    if (flags & kReregChangeTranslation) {
      st_->addr = reinterpret_cast<uint64_t>(addr);
      st_->length = length;
    }
    if (flags & kReregChangeAccess) st_->access = access;
    st_->node->keys.NoteChange();
    // The keys stay (rdma-unit-test ReregMrChangeAccess: the old rkey still
    // works); what they grant is the new PD, range and access.
    return absl::OkStatus();
  }
  void* addr() const override {
    Lock lock(*fabric_);
    return reinterpret_cast<void*>(st_->addr);
  }
  uint64_t length() const override {
    Lock lock(*fabric_);
    return st_->length;
  }
  uint32_t lkey() const override {
    Lock lock(*fabric_);
    return st_->lkey;
  }
  uint32_t rkey() const override {
    Lock lock(*fabric_);
    return st_->rkey;
  }
  uint32_t access() const override {
    Lock lock(*fabric_);
    return st_->access;
  }
  Pd* pd() const override {
    Lock lock(*fabric_);
    return pd_;
  }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    st_->node->keys.Remove(*st_);
    --st_->pd->mrs;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<MrState> st_;
  Pd* pd_;
};

class SimChannel : public CompChannel {
 public:
  SimChannel(std::shared_ptr<Fabric> fabric, std::shared_ptr<ChannelState> st)
      : fabric_(std::move(fabric)), st_(std::move(st)) {}
  ~SimChannel() override {
    Lock lock(*fabric_);
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "completion channel is destroyed");
    if (st_->cqs > 0) {
      return Errno(EBUSY, "completion channel is used by %d CQs", st_->cqs);
    }
    Release();
    return absl::OkStatus();
  }
  absl::StatusOr<Cq*> GetEvent(absl::Duration timeout) override;
  void AckEvents(Cq*, unsigned int) override {}
  const std::shared_ptr<ChannelState>& state() const { return st_; }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    st_->events.clear();
    --st_->context->channels;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<ChannelState> st_;
};

class SimCq : public Cq {
 public:
  SimCq(std::shared_ptr<Fabric> fabric, std::shared_ptr<CqState> st,
        CompChannel* channel)
      : fabric_(std::move(fabric)), st_(std::move(st)), channel_(channel) {
    st_->handle = this;
  }
  ~SimCq() override {
    Lock lock(*fabric_);
    st_->handle = nullptr;
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "cq %u is destroyed", st_->id);
    if (!st_->qps.empty()) {
      return Errno(EBUSY, "cq %u is used by %zu QPs", st_->id,
                   st_->qps.size());
    }
    Release();
    return absl::OkStatus();
  }
  int cqe() const override { return st_->cqe; }
  CompChannel* channel() const override { return channel_; }
  absl::StatusOr<int> Poll(absl::Span<WorkCompletion> wcs) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "cq %u is destroyed", st_->id);
    if (wcs.empty()) return 0;
    fabric_->DriveUntil(
        lock, [this] { return !st_->entries.empty(); }, absl::ZeroDuration(),
        /*blocking=*/false);
    int n = 0;
    while (n < static_cast<int>(wcs.size()) && !st_->entries.empty()) {
      wcs[n++] = st_->entries.front();
      st_->entries.pop_front();
    }
    return n;
  }
  absl::Status ReqNotify(bool solicited_only) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "cq %u is destroyed", st_->id);
    // Without a channel the CQ is armed all the same; no event is delivered
    // (as ibv_req_notify_cq on devices). A pending next-completion request
    // is not narrowed by a solicited-only one (IBA C11-31, C11-32), unless
    // the profile takes the last request as it is (siw).
    const bool keep_next = fabric_->profile().cq_notify_keeps_next &&
                           st_->armed && !st_->armed_solicited_only;
    st_->armed_solicited_only = solicited_only && !keep_next;
    st_->armed = true;
    return absl::OkStatus();
  }
  const std::shared_ptr<CqState>& state() const { return st_; }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    if (st_->channel != nullptr) {
      --st_->channel->cqs;
      // Drop this CQ's pending events.
      auto& ev = st_->channel->events;
      for (auto it = ev.begin(); it != ev.end();) {
        it = it->get() == st_.get() ? ev.erase(it) : it + 1;
      }
    }
    --st_->context->cqs;
    --st_->context->node->live_cqs;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<CqState> st_;
  CompChannel* channel_;
};

absl::StatusOr<Cq*> SimChannel::GetEvent(absl::Duration timeout) {
  Lock lock(*fabric_);
  if (st_->dead) return Errno(EINVAL, "completion channel is destroyed");
  auto ready = [this] {
    // Events of CQs whose handle is gone are discarded.
    while (!st_->events.empty() && st_->events.front()->handle == nullptr) {
      st_->events.pop_front();
    }
    return !st_->events.empty();
  };
  fabric_->DriveUntil(lock, ready, timeout, /*blocking=*/true);
  if (!ready()) {
    return Errno(ETIMEDOUT, "no completion event within %s (%s)",
                 absl::FormatDuration(timeout), fabric_->Describe());
  }
  Cq* cq = st_->events.front()->handle;
  st_->events.pop_front();
  return cq;
}

class SimAh : public Ah {
 public:
  SimAh(std::shared_ptr<Fabric> fabric, std::shared_ptr<AhState> st, Pd* pd)
      : fabric_(std::move(fabric)), st_(std::move(st)), pd_(pd) {}
  ~SimAh() override {
    Lock lock(*fabric_);
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "address handle is destroyed");
    Release();
    return absl::OkStatus();
  }
  const AhAttr& attr() const override { return st_->attr; }
  Pd* pd() const override { return pd_; }
  const std::shared_ptr<AhState>& state() const { return st_; }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    --st_->pd->ahs;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<AhState> st_;
  Pd* pd_;
};

class SimMw : public Mw {
 public:
  SimMw(std::shared_ptr<Fabric> fabric, std::shared_ptr<MwState> st, Pd* pd)
      : fabric_(std::move(fabric)), st_(std::move(st)), pd_(pd) {}
  ~SimMw() override {
    Lock lock(*fabric_);
    Release();
  }
  // ibv_dealloc_mw(3): a bound window is invalidated with it.
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "memory window is deallocated");
    Release();
    return absl::OkStatus();
  }
  MwType type() const override { return st_->type; }
  uint32_t rkey() const override {
    Lock lock(*fabric_);
    return st_->type == MwType::kType1 ? st_->posted_rkey : st_->rkey;
  }
  Pd* pd() const override { return pd_; }
  const std::shared_ptr<MwState>& state() const { return st_; }

 private:
  void Release() {
    if (st_->dead) return;
    UnbindMw(*st_);
    st_->dead = true;
    st_->node->keys.RemoveMw(*st_);
    --st_->pd->mws;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<MwState> st_;
  Pd* pd_;
};

class SimSrq : public Srq {
 public:
  SimSrq(std::shared_ptr<Fabric> fabric, std::shared_ptr<SrqState> st, Pd* pd)
      : fabric_(std::move(fabric)), st_(std::move(st)), pd_(pd) {}
  ~SimSrq() override {
    Lock lock(*fabric_);
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "srq %u is destroyed", st_->id);
    if (st_->qps > 0) {
      return Errno(EBUSY, "srq %u is used by %d QPs", st_->id, st_->qps);
    }
    Release();
    return absl::OkStatus();
  }
  uint32_t srq_id() const override { return st_->id; }
  Pd* pd() const override { return pd_; }
  absl::Status PostRecv(absl::Span<const RecvWr> wrs,
                        size_t* bad_index) override {
    Lock lock(*fabric_);
    if (bad_index != nullptr) *bad_index = 0;
    if (st_->dead) return Errno(EINVAL, "srq %u is destroyed", st_->id);
    for (size_t i = 0; i < wrs.size(); ++i) {
      if (bad_index != nullptr) *bad_index = i;
      const RecvWr& wr = wrs[i];
      // A full queue first, then the SGE count (rxe_post_one_recv,
      // siw_post_srq_recv).
      if (st_->wqes.size() >= st_->max_wr) {
        return Errno(ENOMEM, "srq %u is full (%u WRs)", st_->id, st_->max_wr);
      }
      if (wr.sg_list.size() > st_->max_sge) {
        return Errno(EINVAL, "wr_id %u: %zu SGEs exceed the SRQ's max_sge %u",
                     wr.wr_id, wr.sg_list.size(), st_->max_sge);
      }
      RecvWqe r;
      r.wr_id = wr.wr_id;
      r.sges.assign(wr.sg_list.begin(), wr.sg_list.end());
      r.capacity = SgeTotal(r.sges);
      st_->wqes.push_back(std::move(r));
    }
    if (bad_index != nullptr) *bad_index = wrs.size();
    fabric_->Wake();
    return absl::OkStatus();
  }
  absl::Status Modify(const SrqAttr& attr, uint32_t mask) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "srq %u is destroyed", st_->id);
    if (mask & ~(kSrqMaxWr | kSrqLimit)) {
      return Errno(EINVAL, "srq_attr_mask 0x%x has unknown bits", mask);
    }
    uint32_t max_wr = st_->max_wr;
    // The limit is checked first: libsiw refuses a bad one (EINVAL) before
    // it finds it cannot resize.
    if ((mask & kSrqLimit) && !(mask & kSrqMaxWr) &&
        attr.srq_limit > max_wr) {
      return Errno(EINVAL, "srq_limit %u exceeds max_wr %u", attr.srq_limit,
                   max_wr);
    }
    if ((mask & kSrqMaxWr) && !fabric_->profile().resizes_srq) {
      return Errno(EOPNOTSUPP, "profile %s's library does not resize an SRQ",
                   fabric_->profile().name);
    }
    if (mask & kSrqMaxWr) {
      const DeviceAttr& dev = fabric_->profile().device;
      if (attr.max_wr == 0 ||
          attr.max_wr > static_cast<uint32_t>(dev.max_srq_wr)) {
        return Errno(EINVAL, "max_wr %u outside [1, max_srq_wr %d]",
                     attr.max_wr, dev.max_srq_wr);
      }
      if (attr.max_wr < st_->wqes.size()) {
        return Errno(EINVAL, "max_wr %u is below the %zu WRs posted",
                     attr.max_wr, st_->wqes.size());
      }
      max_wr = RoundQueue(fabric_->profile().queue_rounding, attr.max_wr);
    }
    if ((mask & kSrqLimit) && attr.srq_limit > max_wr) {
      return Errno(EINVAL, "srq_limit %u exceeds max_wr %u", attr.srq_limit,
                   max_wr);
    }
    st_->max_wr = max_wr;
    if (mask & kSrqLimit) st_->limit = attr.srq_limit;
    return absl::OkStatus();
  }
  absl::StatusOr<SrqAttr> Query() const override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "srq %u is destroyed", st_->id);
    if (!fabric_->profile().queries_srq) {
      return Errno(EOPNOTSUPP, "profile %s's library does not query an SRQ",
                   fabric_->profile().name);
    }
    return Capacity();
  }
  // What the SRQ holds, whatever the profile's library lets a program ask.
  SrqAttr LockedCapacity() const {
    Lock lock(*fabric_);
    return Capacity();
  }
  SrqAttr Capacity() const {
    SrqAttr a;
    a.max_wr = st_->max_wr;
    a.max_sge = st_->max_sge;
    a.srq_limit = st_->limit;
    return a;
  }
  const std::shared_ptr<SrqState>& state() const { return st_; }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    st_->wqes.clear();
    --st_->pd->srqs;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<SrqState> st_;
  Pd* pd_;
};

class SimQp : public Qp {
 public:
  SimQp(std::shared_ptr<Fabric> fabric, std::unique_ptr<QpCore> st, Pd* pd,
        Cq* send_cq, Cq* recv_cq, QpInitAttr init)
      : fabric_(std::move(fabric)),
        st_(std::move(st)),
        pd_(pd),
        send_cq_(send_cq),
        recv_cq_(recv_cq),
        init_(init) {}
  ~SimQp() override {
    Lock lock(*fabric_);
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "qp %u is destroyed", st_->qpn);
    // The kernel's uverbs destroy_qp refuses a QP still in a group.
    if (int groups = fabric_->McastGroupsOf(st_->node->index, st_->qpn);
        groups > 0) {
      return Errno(EBUSY, "qp %u is attached to %d multicast group(s): "
                   "detach it first", st_->qpn, groups);
    }
    Release();
    return absl::OkStatus();
  }
  uint32_t qp_num() const override { return st_->qpn; }
  QpType type() const override { return st_->type; }
  verbsim::QpState state() const override {
    Lock lock(*fabric_);
    // What ibv_query_qp says (siw: never the state; see Query()).
    if (!fabric_->profile().iwarp.query_reports_qp_attrs) {
      return verbsim::QpState::kReset;
    }
    return st_->state;
  }
  Pd* pd() const override { return pd_; }
  Cq* send_cq() const override { return send_cq_; }
  Cq* recv_cq() const override { return recv_cq_; }
  QpInitAttr init_attr() const override { return init_; }
  absl::Status Modify(const QpAttr& attr, uint32_t mask) override {
    Lock lock(*fabric_);
    absl::Status s = ModifyQp(*st_, attr, mask);
    fabric_->Wake();
    return s;
  }
  absl::StatusOr<QpAttr> Query() const override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "qp %u is destroyed", st_->qpn);
    QpAttr a = st_->attr;
    a.qp_state = st_->state;
    a.cur_qp_state = st_->state;
    a.cap = st_->cap;
    const SimProfile& profile = fabric_->profile();
    if (!profile.iwarp.query_reports_qp_attrs) {
      // siw_verbs.c siw_query_qp fills the caps, the netdev's MTU, the
      // inbound and outbound read depths and fixed access flags; the rest
      // stays zero (state RESET, no PSNs, no destination).
      QpAttr q;
      q.cap = st_->cap;
      q.cap.max_inline_data =
          static_cast<uint32_t>(profile.device.max_inline_data);
      q.path_mtu = profile.port.active_mtu;
      q.max_rd_atomic = a.max_dest_rd_atomic;       // irq_size
      q.max_dest_rd_atomic = a.max_rd_atomic;       // orq_size
      q.qp_access_flags =
          kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
      return q;
    }
    return a;
  }
  absl::Status PostSend(absl::Span<const SendWr> wrs,
                        size_t* bad_index) override {
    Lock lock(*fabric_);
    std::vector<ResolvedWr> resolved;
    for (size_t i = 0; i < wrs.size(); ++i) {
      if (absl::Status s = Resolve(wrs[i], &resolved, wrs.size()); !s.ok()) {
        if (bad_index != nullptr) *bad_index = 0;
        return s;
      }
    }
    fabric_->NoteThread();
    if (fabric_->PostFaultDue(st_->node->index, st_->qpn)) {
      if (bad_index != nullptr) *bad_index = 0;
      return Errno(ENOMEM, "injected fault: post_send on qp %u fails",
                   st_->qpn);
    }
    absl::Status s = sim::PostSend(*st_, wrs, resolved, bad_index);
    fabric_->Wake();
    return s;
  }
  absl::Status BindMw(Mw* mw, const MwBind& bind) override {
    Lock lock(*fabric_);
    auto* sim_mw = dynamic_cast<SimMw*>(mw);
    if (sim_mw == nullptr) {
      return Errno(EINVAL, "ibv_bind_mw: not a memory window of this provider");
    }
    MwState& m = *sim_mw->state();
    if (m.dead) return Errno(EINVAL, "ibv_bind_mw: the window is deallocated");
    if (m.type != MwType::kType1) {
      return Errno(EINVAL, "ibv_bind_mw: type 2 windows are bound by a "
                   "BIND_MW work request");
    }
    const MwBindInfo& b = bind.bind_info;
    if (b.mr == nullptr && (b.addr != 0 || b.length != 0)) {
      return Errno(EINVAL, "ibv_bind_mw: addr 0x%x length %u without a region",
                   b.addr, b.length);
    }
    SendWr wr;
    wr.wr_id = bind.wr_id;
    wr.opcode = WrOpcode::kBindMw;
    wr.send_flags = bind.send_flags;
    wr.bind_mw.mw = mw;
    const uint32_t named = bind.current_rkey.value_or(m.posted_rkey);
    wr.bind_mw.rkey = IncRkey(named);
    wr.bind_mw.current_rkey = named;
    wr.bind_mw.bind_info = b;
    std::vector<ResolvedWr> resolved;
    if (absl::Status s = Resolve(wr, &resolved, 1); !s.ok()) return s;
    resolved[0].bind_verb = true;
    // libibverbs ibv_bind_mw: the region and the window share a PD.
    if (resolved[0].bind_mr != nullptr && resolved[0].bind_mr->pd != m.pd) {
      return Errno(EPERM, "ibv_bind_mw: the region is of another PD than "
                   "the window");
    }
    fabric_->NoteThread();
    absl::Status s = sim::PostSend(*st_, {&wr, 1}, resolved, nullptr);
    // ibv_bind_mw(3): on success the window's rkey is the new one.
    if (s.ok()) m.posted_rkey = wr.bind_mw.rkey;
    fabric_->Wake();
    return s;
  }
  absl::Status AttachMcast(const Gid& gid, uint16_t lid) override {
    Lock lock(*fabric_);
    if (absl::Status s = CheckMcast(gid, lid); !s.ok()) return s;
    fabric_->AttachMcast(gid, st_->node->index, st_->qpn);
    return absl::OkStatus();
  }
  absl::Status DetachMcast(const Gid& gid, uint16_t lid) override {
    Lock lock(*fabric_);
    if (absl::Status s = CheckMcast(gid, lid); !s.ok()) return s;
    if (!fabric_->DetachMcast(gid, st_->node->index, st_->qpn)) {
      return Errno(EINVAL, "qp %u is not attached to %s", st_->qpn,
                   GidToString(gid));
    }
    return absl::OkStatus();
  }
  absl::Status PostRecv(absl::Span<const RecvWr> wrs,
                        size_t* bad_index) override {
    Lock lock(*fabric_);
    fabric_->NoteThread();
    if (fabric_->PostFaultDue(st_->node->index, st_->qpn)) {
      if (bad_index != nullptr) *bad_index = 0;
      return Errno(ENOMEM, "injected fault: post_recv on qp %u fails",
                   st_->qpn);
    }
    absl::Status s = sim::PostRecv(*st_, wrs, bad_index);
    fabric_->Wake();
    return s;
  }
  std::string DebugString() const {
    Lock lock(*fabric_);
    const QpCore& q = *st_;
    std::string sq;
    for (const SendWqe& w : q.sq) {
      absl::StrAppend(&sq, w.phase == SendWqe::Phase::kPosted    ? "P"
                           : w.phase == SendWqe::Phase::kInFlight ? "F"
                                                                  : "D");
      if (w.phase != SendWqe::Phase::kPosted) absl::StrAppend(&sq, w.first_psn);
      absl::StrAppend(&sq, " ");
    }
    return absl::StrCat(
        "qp ", q.qpn, " ", QpStateName(q.state), " sq[", q.sq.size(),
        "]={", sq, "} req_next=", q.req_next, " req_psn=", q.req_psn,
        " halted=", q.req_halted, " rnr_waiting=", q.rnr_waiting,
        " timer_armed=", q.timer_armed, " timer_event=", q.timer_event_pending,
        " retry_left=", q.retry_left, " rq=", q.rq.size(), " epsn=", q.epsn,
        " nak_sent=", q.nak_sent, " ack_pending=", q.ack_pending,
        " placements=", q.placements.size(), " | ", fabric_->Describe());
  }
  // Resolves the public handles `wr` names into sim state (appended to
  // `out`); EINVAL for a handle of another provider.
  static absl::Status Resolve(const SendWr& wr, std::vector<ResolvedWr>* out,
                              size_t reserve) {
    if (out->empty()) out->reserve(reserve);
    ResolvedWr r;
    if (wr.ud.ah != nullptr) {
      auto* ah = dynamic_cast<SimAh*>(wr.ud.ah);
      if (ah == nullptr) {
        return Errno(EINVAL, "wr_id %u: address handle of another provider",
                     wr.wr_id);
      }
      r.ah = ah->state();
    }
    if (wr.opcode == WrOpcode::kBindMw) {
      if (wr.bind_mw.mw != nullptr) {
        auto* mw = dynamic_cast<SimMw*>(wr.bind_mw.mw);
        if (mw == nullptr) {
          return Errno(EINVAL, "wr_id %u: memory window of another provider",
                       wr.wr_id);
        }
        r.mw = mw->state();
      }
      if (wr.bind_mw.bind_info.mr != nullptr) {
        auto* mr = dynamic_cast<SimMr*>(wr.bind_mw.bind_info.mr);
        if (mr == nullptr) {
          return Errno(EINVAL, "wr_id %u: region of another provider",
                       wr.wr_id);
        }
        r.bind_mr = mr->state();
      }
    }
    out->push_back(std::move(r));
    return absl::OkStatus();
  }
  absl::Status CheckMcast(const Gid& gid, uint16_t lid) const {
    if (st_->dead) return Errno(EINVAL, "qp %u is destroyed", st_->qpn);
    if (st_->type != QpType::kUd) {
      return Errno(EINVAL, "qp %u is %s: only UD QPs join multicast groups",
                   st_->qpn, QpTypeName(st_->type));
    }
    if (!IsMulticastGid(gid)) {
      return Errno(EINVAL, "gid %s is not a multicast GID", GidToString(gid));
    }
    (void)lid;  // RoCE: the LID is unused
    return absl::OkStatus();
  }
  void MarkCmConnected() {
    Lock lock(*fabric_);
    st_->cm_connected = true;
  }
  SimQpStats Stats() const {
    Lock lock(*fabric_);
    SimQpStats s;
    s.packets_sent = st_->packets_sent;
    s.packets_received = st_->packets_received;
    s.packets_dropped = st_->packets_dropped;
    s.retransmissions = st_->retransmissions;
    s.timeouts = st_->timeouts;
    s.rnr_naks = st_->rnr_naks;
    s.naks_received = st_->naks_received;
    s.naks_sent = st_->naks_sent;
    s.no_recv_drops = st_->no_recv_drops;
    s.qkey_drops = st_->qkey_drops;
    s.msg_drops = st_->msg_drops;
    return s;
  }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    st_->node->qps.erase(st_->qpn);
    --st_->node->live_qps;
    st_->send_cq->qps.erase(st_.get());
    st_->recv_cq->qps.erase(st_.get());
    --st_->pd->qps;
    if (st_->srq != nullptr) --st_->srq->qps;
    fabric_->DetachAll(st_->node->index, st_->qpn);
    ++st_->timer_generation;
  }
  std::shared_ptr<Fabric> fabric_;
  std::unique_ptr<QpCore> st_;
  Pd* pd_;
  Cq* send_cq_;
  Cq* recv_cq_;
  QpInitAttr init_;
};

class SimPd : public Pd {
 public:
  SimPd(std::shared_ptr<Fabric> fabric, std::shared_ptr<PdState> st,
        Context* context)
      : fabric_(std::move(fabric)), st_(std::move(st)), context_(context) {}
  ~SimPd() override {
    Lock lock(*fabric_);
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "pd %u is destroyed", st_->id);
    if (st_->mrs + st_->qps + st_->ahs + st_->mws + st_->srqs > 0) {
      return Errno(EBUSY,
                   "pd %u is used by %d MRs, %d QPs, %d AHs, %d MWs, %d SRQs",
                   st_->id, st_->mrs, st_->qps, st_->ahs, st_->mws,
                   st_->srqs);
    }
    Release();
    return absl::OkStatus();
  }
  Context* context() const override { return context_; }
  const std::shared_ptr<PdState>& state() const { return st_; }

  absl::StatusOr<std::unique_ptr<Mw>> AllocMw(MwType type) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "pd %u is destroyed", st_->id);
    if (type != MwType::kType1 && type != MwType::kType2) {
      return Errno(EINVAL, "mw type %d is neither 1 nor 2",
                   static_cast<int>(type));
    }
    const DeviceAttr& dev = fabric_->profile().device;
    if (dev.max_mw == 0) {
      return Errno(EOPNOTSUPP, "%s has no memory windows (max_mw 0)",
                   st_->context->node->name);
    }
    Node* node = st_->context->node;
    if (node->keys.live_mws() >= static_cast<size_t>(dev.max_mw)) {
      return Errno(ENOMEM, "max_mw %d reached", dev.max_mw);
    }
    auto mw = std::make_shared<MwState>();
    mw->node = node;
    mw->pd = st_;
    mw->type = type;
    node->keys.InsertMw(mw);
    mw->posted_rkey = mw->rkey;
    ++st_->mws;
    return std::unique_ptr<Mw>(new SimMw(fabric_, mw, this));
  }

  absl::StatusOr<std::unique_ptr<Srq>> CreateSrq(const SrqAttr& attr) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "pd %u is destroyed", st_->id);
    const DeviceAttr& dev = fabric_->profile().device;
    if (dev.max_srq == 0) {
      return Errno(EOPNOTSUPP, "%s has no shared receive queues",
                   st_->context->node->name);
    }
    if (attr.max_wr == 0 ||
        attr.max_wr > static_cast<uint32_t>(dev.max_srq_wr)) {
      return Errno(EINVAL, "srq max_wr %u outside [1, max_srq_wr %d]",
                   attr.max_wr, dev.max_srq_wr);
    }
    if (attr.max_sge > static_cast<uint32_t>(dev.max_srq_sge)) {
      return Errno(EINVAL, "srq max_sge %u exceeds max_srq_sge %d",
                   attr.max_sge, dev.max_srq_sge);
    }
    Node* node = st_->context->node;
    auto srq = std::make_shared<SrqState>();
    srq->pd = st_;
    srq->id = node->next_id++;
    srq->max_wr = RoundQueue(fabric_->profile().queue_rounding, attr.max_wr);
    // rxe raises a zero max_sge to its minimum of one.
    srq->max_sge = std::max<uint32_t>(1, attr.max_sge);
    // ibv_create_srq(3): srq_limit is irrelevant here; ibv_modify_srq arms.
    srq->limit = 0;
    ++st_->srqs;
    return std::unique_ptr<Srq>(new SimSrq(fabric_, srq, this));
  }

  absl::StatusOr<std::unique_ptr<Mr>> RegMr(void* addr, size_t length,
                                            uint32_t access) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "pd %u is destroyed", st_->id);
    Node* node = st_->context->node;
    const SimProfile& profile = fabric_->profile();
    const DeviceAttr& dev = profile.device;
    if (absl::Status s = CheckMrAccess(profile, access); !s.ok()) return s;
    if (absl::Status s = CheckMrRange(profile, addr, length); !s.ok()) return s;
    const uint64_t start = reinterpret_cast<uint64_t>(addr);
    if (fabric_->RegistrationFaultDue(node->index)) {
      return Errno(ENOMEM, "injected fault: registration %zu bytes at 0x%x fails",
                   length, start);
    }
    if (node->keys.live() >= static_cast<size_t>(dev.max_mr)) {
      return Errno(ENOMEM, "max_mr %d reached", dev.max_mr);
    }
    auto mr = std::make_shared<MrState>();
    mr->node = node;
    mr->pd = st_;
    mr->addr = start;
    mr->length = length;
    mr->access = access;
    node->keys.Insert(mr);
    ++st_->mrs;
    return std::unique_ptr<Mr>(new SimMr(fabric_, mr, this));
  }

  absl::StatusOr<std::unique_ptr<Qp>> CreateQp(
      const QpInitAttr& init) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "pd %u is destroyed", st_->id);
    const DeviceAttr& dev = fabric_->profile().device;
    if (init.qp_type != QpType::kRc && init.qp_type != QpType::kUc &&
        init.qp_type != QpType::kUd) {
      return Errno(EINVAL, "qp_type %d is not RC, UC or UD",
                   static_cast<int>(init.qp_type));
    }
    if (fabric_->profile().iwarp.rc_only && init.qp_type != QpType::kRc) {
      // siw_verbs.c siw_create_qp: "only RC QP's supported".
      return Errno(EOPNOTSUPP, "%s QPs: profile %s has RC QPs only",
                   QpTypeName(init.qp_type), fabric_->profile().name);
    }
    auto* scq = dynamic_cast<SimCq*>(init.send_cq);
    auto* rcq = dynamic_cast<SimCq*>(init.recv_cq);
    if (scq == nullptr || rcq == nullptr) {
      return Errno(EINVAL, "send_cq and recv_cq must be CQs of this provider");
    }
    if (scq->state()->dead || rcq->state()->dead) {
      return Errno(EINVAL, "a CQ of the QP is destroyed");
    }
    if (scq->state()->context != st_->context ||
        rcq->state()->context != st_->context) {
      return Errno(EINVAL, "the CQs belong to another context than the PD");
    }
    std::shared_ptr<SrqState> srq;
    if (init.srq != nullptr) {
      auto* sim_srq = dynamic_cast<SimSrq*>(init.srq);
      if (sim_srq == nullptr) {
        return Errno(EINVAL, "srq of another provider");
      }
      srq = sim_srq->state();
      if (srq->dead) return Errno(EINVAL, "srq %u is destroyed", srq->id);
      if (srq->pd->context != st_->context) {
        return Errno(EINVAL, "srq %u belongs to another context", srq->id);
      }
    }
    QpCap c = init.cap;
    if (srq != nullptr) {
      // ibv_create_qp(3): with an SRQ the receive queue attributes are
      // ignored.
      c.max_recv_wr = 0;
      c.max_recv_sge = 0;
    }
    if (c.max_send_wr > static_cast<uint32_t>(dev.max_qp_wr) ||
        c.max_recv_wr > static_cast<uint32_t>(dev.max_qp_wr)) {
      return Errno(EINVAL, "max_send_wr %u / max_recv_wr %u exceed max_qp_wr %d",
                   c.max_send_wr, c.max_recv_wr, dev.max_qp_wr);
    }
    if (c.max_send_sge > static_cast<uint32_t>(dev.max_sge) ||
        c.max_recv_sge > static_cast<uint32_t>(dev.max_sge)) {
      return Errno(EINVAL, "max_send_sge %u / max_recv_sge %u exceed max_sge %d",
                   c.max_send_sge, c.max_recv_sge, dev.max_sge);
    }
    if (c.max_inline_data > static_cast<uint32_t>(dev.max_inline_data)) {
      return Errno(EINVAL, "max_inline_data %u exceeds the device's %d",
                   c.max_inline_data, dev.max_inline_data);
    }
    Node* node = st_->context->node;
    if (node->live_qps >= dev.max_qp) {
      return Errno(ENOMEM, "max_qp %d reached", dev.max_qp);
    }
    auto qp = std::make_unique<QpCore>();
    qp->node = node;
    qp->qpn = node->next_qpn++;
    qp->type = init.qp_type;
    qp->pd = st_;
    qp->send_cq = scq->state();
    qp->recv_cq = rcq->state();
    qp->srq = srq;
    if (srq != nullptr) ++srq->qps;
    // What the QP holds and ibv_query_qp reports; ibv_create_qp reports
    // the work-request counts as asked (the kernels' create paths leave
    // them), the rest as held.
    qp->cap = GrantQpCap(fabric_->profile(), c);
    QpInitAttr reported = init;
    reported.cap = qp->cap;
    reported.cap.max_send_wr = c.max_send_wr;
    reported.cap.max_recv_wr = c.max_recv_wr;
    qp->sq_sig_all = init.sq_sig_all;
    qp->attr.port_num = 1;
    node->qps[qp->qpn] = qp.get();
    ++node->live_qps;
    qp->send_cq->qps.insert(qp.get());
    qp->recv_cq->qps.insert(qp.get());
    ++st_->qps;
    return std::unique_ptr<Qp>(
        new SimQp(fabric_, std::move(qp), this, scq, rcq, reported));
  }

  absl::StatusOr<std::unique_ptr<Ah>> CreateAh(const AhAttr& attr) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "pd %u is destroyed", st_->id);
    if (attr.port_num != 1) {
      return Errno(EINVAL, "ah port_num %d: the device has port 1 only",
                   attr.port_num);
    }
    if (!fabric_->profile().iwarp.has_ah) {
      // ibv_create_ah(3) checks the port and the GID index against the
      // port's table; then rdma-core providers/siw/siw.c siw_create_ah
      // returns NULL.
      if (attr.sgid_index >= fabric_->profile().port.gid_tbl_len) {
        return Errno(EINVAL, "sgid_index %d beyond the GID table of %d",
                     attr.sgid_index, fabric_->profile().port.gid_tbl_len);
      }
      return Errno(EOPNOTSUPP, "ibv_create_ah: profile %s has no address "
                   "handles", fabric_->profile().name);
    }
    if (!attr.is_global) {
      return Errno(EINVAL, "RoCE address handles need a GRH (is_global)");
    }
    if (absl::Status s = CheckSgidIndex(fabric_->profile(), attr.sgid_index);
        !s.ok()) {
      return s;
    }
    const bool multicast = IsMulticastGid(attr.dgid);
    const int dest_node = multicast ? -1 : fabric_->NodeByGid(attr.dgid);
    if (!multicast && dest_node < 0) {
      return Errno(EINVAL, "no route to dgid %s", GidToString(attr.dgid));
    }
    const DeviceAttr& dev = fabric_->profile().device;
    if (st_->ahs >= dev.max_ah) return Errno(ENOMEM, "max_ah reached");
    auto ah = std::make_shared<AhState>();
    ah->pd = st_;
    ah->attr = attr;
    ah->dest_node = dest_node;
    ++st_->ahs;
    return std::unique_ptr<Ah>(new SimAh(fabric_, ah, this));
  }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    --st_->context->pds;
    --st_->context->node->live_pds;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<PdState> st_;
  Context* context_;
};

std::shared_ptr<PdState> PdStateOf(Pd* pd) {
  auto* sim_pd = dynamic_cast<SimPd*>(pd);
  return sim_pd == nullptr ? nullptr : sim_pd->state();
}

class SimContext : public Context {
 public:
  SimContext(std::shared_ptr<Fabric> fabric, Node* node)
      : fabric_(std::move(fabric)), st_(std::make_shared<ContextState>()) {
    st_->node = node;
    attr_ = fabric_->profile().device;
    attr_.name = node->name;
    Lock lock(*fabric_);
    auto& list = node->contexts;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [](const std::weak_ptr<ContextState>& w) {
                                return w.expired();
                              }),
               list.end());
    list.push_back(st_);
  }
  const SimProfile& profile() const { return fabric_->profile(); }
  ~SimContext() override {
    Lock lock(*fabric_);
    st_->dead = true;
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    if (st_->pds + st_->cqs + st_->channels > 0) {
      return Errno(EBUSY, "context %s has %d PDs, %d CQs, %d channels open",
                   attr_.name, st_->pds, st_->cqs, st_->channels);
    }
    st_->dead = true;
    return absl::OkStatus();
  }
  const DeviceAttr& device_attr() const override { return attr_; }
  absl::StatusOr<PortAttr> QueryPort(uint8_t port_num) const override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    if (port_num != 1) {
      return Errno(EINVAL, "port %d: %s has port 1 only", port_num, attr_.name);
    }
    PortAttr port = fabric_->profile().port;
    if (st_->node->port_down) port.state = 1;  // IBV_PORT_DOWN
    return port;
  }
  absl::StatusOr<Gid> QueryGid(uint8_t port_num, int index) const override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    if (port_num != 1) {
      return Errno(EINVAL, "port %d: %s has port 1 only", port_num, attr_.name);
    }
    const int len = fabric_->profile().port.gid_tbl_len;
    if (index < 0 || index >= len) {
      return Errno(EINVAL, "gid index %d beyond the GID table of %d", index,
                   len);
    }
    // Entry 0 holds the node's GID; the others are empty, and an empty
    // entry reads as zeros (ibv_query_gid(3)).
    return index == 0 ? st_->node->gid : Gid{};
  }
  absl::StatusOr<std::unique_ptr<Pd>> AllocPd() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    Node* node = st_->node;
    if (node->live_pds >= attr_.max_pd) {
      return Errno(ENOMEM, "max_pd %d reached", attr_.max_pd);
    }
    auto pd = std::make_shared<PdState>();
    pd->context = st_;
    pd->id = node->next_id++;
    ++st_->pds;
    ++node->live_pds;
    return std::unique_ptr<Pd>(new SimPd(fabric_, pd, this));
  }
  absl::StatusOr<std::unique_ptr<CompChannel>> CreateCompChannel() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    auto ch = std::make_shared<ChannelState>();
    ch->context = st_;
    ++st_->channels;
    return std::unique_ptr<CompChannel>(new SimChannel(fabric_, ch));
  }
  absl::StatusOr<std::unique_ptr<Cq>> CreateCq(int cqe,
                                               CompChannel* channel) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    if (cqe < 1 || cqe > attr_.max_cqe) {
      return Errno(EINVAL, "cqe %d outside [1, max_cqe %d]", cqe, attr_.max_cqe);
    }
    std::shared_ptr<ChannelState> ch;
    if (channel != nullptr) {
      auto* sim_channel = dynamic_cast<SimChannel*>(channel);
      if (sim_channel == nullptr) {
        return Errno(EINVAL, "completion channel of another provider");
      }
      ch = sim_channel->state();
      if (ch->dead) return Errno(EINVAL, "completion channel is destroyed");
      if (ch->context != st_) {
        return Errno(EINVAL, "completion channel of another context");
      }
    }
    Node* node = st_->node;
    if (node->live_cqs >= attr_.max_cq) {
      return Errno(ENOMEM, "max_cq %d reached", attr_.max_cq);
    }
    auto cq = std::make_shared<CqState>();
    cq->context = st_;
    cq->channel = ch;
    cq->id = node->next_id++;
    // What the CQ holds: the profile's rounding of the request
    // (ibv_create_cq(3): at least cqe entries).
    cq->cqe = static_cast<int>(
        RoundQueue(fabric_->profile().queue_rounding, static_cast<uint32_t>(cqe)));
    if (ch != nullptr) ++ch->cqs;
    ++st_->cqs;
    ++node->live_cqs;
    return std::unique_ptr<Cq>(new SimCq(fabric_, cq, channel));
  }
  absl::StatusOr<AsyncEvent> GetAsyncEvent(absl::Duration timeout) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    fabric_->DriveUntil(
        lock, [this] { return !st_->async_events.empty(); }, timeout,
        /*blocking=*/true);
    if (st_->async_events.empty()) {
      return Errno(ETIMEDOUT, "no async event on %s within %s", attr_.name,
                   absl::FormatDuration(timeout));
    }
    AsyncEvent ev = st_->async_events.front();
    st_->async_events.pop_front();
    return ev;
  }

 private:
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<ContextState> st_;
  DeviceAttr attr_;
};

}  // namespace

std::unique_ptr<Context> OpenSimContext(std::shared_ptr<Fabric> fabric,
                                        int node_index) {
  Node* node = fabric->node(node_index);
  return std::make_unique<SimContext>(std::move(fabric), node);
}

std::string SimQpDebugString(const Qp* qp) {
  const auto* sim_qp = dynamic_cast<const SimQp*>(qp);
  return sim_qp == nullptr ? std::string() : sim_qp->DebugString();
}

void MarkSimQpCmConnected(Qp* qp) {
  auto* sim_qp = dynamic_cast<SimQp*>(qp);
  if (sim_qp != nullptr) sim_qp->MarkCmConnected();
}

const SimProfile* GetSimProfile(const Context* context) {
  const auto* sim_context = dynamic_cast<const SimContext*>(context);
  return sim_context == nullptr ? nullptr : &sim_context->profile();
}

bool GetSimSrqCapacity(const Srq* srq, SrqAttr* out) {
  const auto* sim_srq = dynamic_cast<const SimSrq*>(srq);
  if (sim_srq == nullptr) return false;
  *out = sim_srq->LockedCapacity();
  return true;
}

bool GetSimQpStats(const Qp* qp, SimQpStats* out) {
  const auto* sim_qp = dynamic_cast<const SimQp*>(qp);
  if (sim_qp == nullptr) return false;
  *out = sim_qp->Stats();
  return true;
}

}  // namespace verbsim::sim
