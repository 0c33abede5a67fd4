// Address handles: the handle and ibv_create_ah(3)'s checks (RoCE: a GRH,
// a GID index inside the table, a destination the fabric can route to).
#include <memory>
#include <utility>

#include "core/errors.h"
#include "core/names.h"
#include "sim/handle_factories.h"
#include "sim/qp_verbs.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;

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
    --st_->pd->context->node->live_ahs;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<AhState> st_;
  Pd* pd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Ah>> CreateSimAh(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, const AhAttr& attr) {
  if (pd->dead) return Errno(EINVAL, "pd %u is destroyed", pd->id);
  if (attr.port_num != 1) {
    return Errno(EINVAL, "ah port_num %d: the device has port 1 only",
                 attr.port_num);
  }
  if (!fabric->profile().iwarp.has_ah) {
    // ibv_create_ah(3) checks the port and the GID index against the
    // port's table; then rdma-core providers/siw/siw.c siw_create_ah
    // returns NULL.
    if (attr.sgid_index >= fabric->profile().port.gid_tbl_len) {
      return Errno(EINVAL, "sgid_index %d beyond the GID table of %d",
                   attr.sgid_index, fabric->profile().port.gid_tbl_len);
    }
    return Errno(EOPNOTSUPP, "ibv_create_ah: profile %s has no address "
                 "handles", fabric->profile().name);
  }
  if (!attr.is_global) {
    return Errno(EINVAL, "RoCE address handles need a GRH (is_global)");
  }
  if (absl::Status s = CheckSgidIndex(fabric->profile(), attr.sgid_index);
      !s.ok()) {
    return s;
  }
  const bool multicast = IsMulticastGid(attr.dgid);
  const int dest_node = multicast ? -1 : fabric->NodeByGid(attr.dgid);
  if (!multicast && dest_node < 0) {
    return Errno(EINVAL, "no route to dgid %s", GidToString(attr.dgid));
  }
  const DeviceAttr& dev = fabric->profile().device;
  Node* node = pd->context->node;
  if (node->live_ahs >= dev.max_ah) {
    return Errno(fabric->profile().limit_errno.ah, "max_ah %d reached",
                 dev.max_ah);
  }
  auto ah = std::make_shared<AhState>();
  ah->pd = pd;
  ah->attr = attr;
  ah->dest_node = dest_node;
  ++pd->ahs;
  ++node->live_ahs;
  return std::unique_ptr<Ah>(new SimAh(fabric, ah, pd_handle));
}

std::shared_ptr<AhState> AhStateOf(Ah* ah) {
  auto* sim_ah = dynamic_cast<SimAh*>(ah);
  return sim_ah == nullptr ? nullptr : sim_ah->state();
}

}  // namespace verbsim::sim
