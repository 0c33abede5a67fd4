// Memory windows: the handle and ibv_alloc_mw(3)'s checks. Binding and
// invalidation are work requests (mw.cc).
#include <memory>
#include <utility>

#include "core/errors.h"
#include "sim/handle_factories.h"
#include "sim/keys.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;

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

}  // namespace

absl::StatusOr<std::unique_ptr<Mw>> AllocSimMw(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, MwType type) {
  if (pd->dead) return Errno(EINVAL, "pd %u is destroyed", pd->id);
  if (type != MwType::kType1 && type != MwType::kType2) {
    return Errno(EINVAL, "mw type %d is neither 1 nor 2",
                 static_cast<int>(type));
  }
  const DeviceAttr& dev = fabric->profile().device;
  if (dev.max_mw == 0) {
    return Errno(EOPNOTSUPP, "%s has no memory windows (max_mw 0)",
                 pd->context->node->name);
  }
  Node* node = pd->context->node;
  if (node->keys.live_mws() >= static_cast<size_t>(dev.max_mw)) {
    return Errno(fabric->profile().limit_errno.mw, "max_mw %d reached",
                 dev.max_mw);
  }
  auto mw = std::make_shared<MwState>();
  mw->node = node;
  mw->pd = pd;
  mw->type = type;
  node->keys.InsertMw(mw);
  mw->posted_rkey = mw->rkey;
  ++pd->mws;
  return std::unique_ptr<Mw>(new SimMw(fabric, mw, pd_handle));
}

std::shared_ptr<MwState> MwStateOf(Mw* mw) {
  auto* sim_mw = dynamic_cast<SimMw*>(mw);
  return sim_mw == nullptr ? nullptr : sim_mw->state();
}

}  // namespace verbsim::sim
