// Protection domains: the handle, whose creation verbs each forward to the
// file of the object they create (sim/handle_factories.h).
#include <memory>
#include <utility>

#include "core/errors.h"
#include "sim/handle_factories.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;

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
    return AllocSimMw(fabric_, st_, this, type);
  }
  absl::StatusOr<std::unique_ptr<Srq>> CreateSrq(const SrqAttr& attr) override {
    Lock lock(*fabric_);
    return CreateSimSrq(fabric_, st_, this, attr);
  }
  absl::StatusOr<std::unique_ptr<Mr>> RegMr(void* addr, size_t length,
                                            uint32_t access) override {
    Lock lock(*fabric_);
    return RegisterSimMr(fabric_, st_, this, addr, length, access);
  }
  absl::StatusOr<std::unique_ptr<Qp>> CreateQp(
      const QpInitAttr& init) override {
    Lock lock(*fabric_);
    return CreateSimQp(fabric_, st_, this, init);
  }
  absl::StatusOr<std::unique_ptr<Ah>> CreateAh(const AhAttr& attr) override {
    Lock lock(*fabric_);
    return CreateSimAh(fabric_, st_, this, attr);
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

}  // namespace

absl::StatusOr<std::unique_ptr<Pd>> CreateSimPd(
    const std::shared_ptr<Fabric>& fabric,
    const std::shared_ptr<ContextState>& context, Context* handle) {
  Node* node = context->node;
  if (node->live_pds >= fabric->profile().device.max_pd) {
    return Errno(fabric->profile().limit_errno.pd, "max_pd %d reached",
                 fabric->profile().device.max_pd);
  }
  auto pd = std::make_shared<PdState>();
  pd->context = context;
  pd->id = node->next_id++;
  ++context->pds;
  ++node->live_pds;
  return std::unique_ptr<Pd>(new SimPd(fabric, pd, handle));
}

std::shared_ptr<PdState> PdStateOf(Pd* pd) {
  auto* sim_pd = dynamic_cast<SimPd*>(pd);
  return sim_pd == nullptr ? nullptr : sim_pd->state();
}

}  // namespace verbsim::sim
