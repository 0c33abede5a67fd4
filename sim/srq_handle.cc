// Shared receive queues: the handle (posting, ibv_modify_srq(3),
// ibv_query_srq(3)) and ibv_create_srq(3)'s checks.
#include <algorithm>
#include <memory>
#include <utility>

#include "core/errors.h"
#include "sim/handle_factories.h"
#include "sim/handles.h"
#include "sim/qp_verbs.h"
#include "sim/sg.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;

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
      // A library with a fixed limit checks that one, not the SRQ's
      // (libsiw push_recv_wqe: SIW_MAX_SGE).
      const uint32_t library =
          fabric_->profile().post_send.library_sge_limit;
      if (library != 0 && wr.sg_list.size() > library) {
        return Errno(EINVAL, "wr_id %u: %zu SGEs exceed the library's %u",
                     wr.wr_id, wr.sg_list.size(), library);
      }
      if (library == 0 && wr.sg_list.size() > st_->max_sge) {
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
    fabric_->WakeForPost();
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
    --st_->pd->context->node->live_srqs;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<SrqState> st_;
  Pd* pd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Srq>> CreateSimSrq(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, const SrqAttr& attr) {
  if (pd->dead) return Errno(EINVAL, "pd %u is destroyed", pd->id);
  const DeviceAttr& dev = fabric->profile().device;
  if (dev.max_srq == 0) {
    return Errno(EOPNOTSUPP, "%s has no shared receive queues",
                 pd->context->node->name);
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
  Node* node = pd->context->node;
  if (node->live_srqs >= dev.max_srq) {
    return Errno(fabric->profile().limit_errno.srq, "max_srq %d reached",
                 dev.max_srq);
  }
  auto srq = std::make_shared<SrqState>();
  srq->pd = pd;
  srq->id = node->next_id++;
  srq->max_wr = RoundQueue(fabric->profile().queue_rounding, attr.max_wr);
  // rxe raises a zero max_sge to its minimum of one.
  srq->max_sge = std::max<uint32_t>(1, attr.max_sge);
  // ibv_create_srq(3): srq_limit is irrelevant here; ibv_modify_srq arms.
  srq->limit = 0;
  ++pd->srqs;
  ++node->live_srqs;
  return std::unique_ptr<Srq>(new SimSrq(fabric, srq, pd_handle));
}

std::shared_ptr<SrqState> SrqStateOf(Srq* srq) {
  auto* sim_srq = dynamic_cast<SimSrq*>(srq);
  return sim_srq == nullptr ? nullptr : sim_srq->state();
}

bool GetSimSrqCapacity(const Srq* srq, SrqAttr* out) {
  const auto* sim_srq = dynamic_cast<const SimSrq*>(srq);
  if (sim_srq == nullptr) return false;
  *out = sim_srq->LockedCapacity();
  return true;
}

}  // namespace verbsim::sim
