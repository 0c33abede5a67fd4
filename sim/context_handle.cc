// The device context: its attributes, ports and GID table, the async event
// queue, and the creation of PDs, completion channels and CQs.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/time/time.h"
#include "core/errors.h"
#include "sim/handle_factories.h"
#include "sim/handles.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;

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
  void JoinMcastIp(const Gid& gid, bool join) {
    Lock lock(*fabric_);
    fabric_->JoinMcastIp(gid, st_->node->index, join);
  }
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
    return CreateSimPd(fabric_, st_, this);
  }
  absl::StatusOr<std::unique_ptr<CompChannel>> CreateCompChannel() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    return CreateSimChannel(fabric_, st_);
  }
  absl::StatusOr<std::unique_ptr<Cq>> CreateCq(int cqe,
                                               CompChannel* channel) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    return CreateSimCq(fabric_, st_, attr_, cqe, channel);
  }
  absl::StatusOr<AsyncEvent> GetAsyncEvent(absl::Duration timeout) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "context %s is closed", attr_.name);
    fabric_->DriveUntil(
        lock, [this] { return !st_->async_events.empty(); }, timeout,
        /*blocking=*/true, Fabric::WaitFor::kAsyncEvent);
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

bool JoinSimMcastIp(Context* context, const Gid& gid, bool join) {
  auto* sim_context = dynamic_cast<SimContext*>(context);
  if (sim_context == nullptr) return false;
  sim_context->JoinMcastIp(gid, join);
  return true;
}

const SimProfile* GetSimProfile(const Context* context) {
  const auto* sim_context = dynamic_cast<const SimContext*>(context);
  return sim_context == nullptr ? nullptr : &sim_context->profile();
}

}  // namespace verbsim::sim
