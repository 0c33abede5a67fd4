// Completion queues and completion channels: the handles (poll, arm,
// events) and ibv_create_cq(3)'s checks. Completions are pushed by cq.cc.
#include <atomic>
#include <iterator>
#include <memory>
#include <utility>

#include "absl/time/time.h"
#include "core/errors.h"
#include "sim/handle_factories.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;

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
    // With a progress thread (the UDP transport) that thread runs what is
    // due and fills the CQ; polling an empty CQ then needs no lock, so a
    // program spinning on it never holds off the thread that fills it.
    if (fabric_->has_progress_thread() && !wcs.empty() &&
        st_->ready.load(std::memory_order_acquire) == 0 &&
        live_.load(std::memory_order_acquire)) {
      // Receive what has come meanwhile, here rather than in that thread.
      if (!fabric_->PumpUdp(/*wait=*/false) ||
          st_->ready.load(std::memory_order_acquire) == 0) {
        return 0;
      }
    }
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
      // A send queue's completion, polled, frees its WR's slot and those
      // of the WRs before it (SimProfile::sq_slots_held_until_polled).
      ReleaseSqSlots(*st_->context->node, st_->releases.front());
      st_->releases.pop_front();
    }
    if (n > 0) {
      st_->ready.store(st_->ready.load(std::memory_order_relaxed) - n,
                       std::memory_order_release);
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
  absl::Status Resize(int cqe) override {
    Lock lock(*fabric_);
    const SimProfile& profile = fabric_->profile();
    if (!profile.resizes_cq) {
      return Errno(EOPNOTSUPP, "the %s profile cannot resize a CQ", profile.name);
    }
    if (st_->dead) return Errno(EINVAL, "cq %u is destroyed", st_->id);
    // The checks of rxe_cq_chk_attr: a size in [1, max_cqe], and room for
    // the completions the CQ holds.
    const int max_cqe = profile.device.max_cqe;
    if (cqe < 1 || cqe > max_cqe) {
      return Errno(EINVAL, "cqe %d outside [1, max_cqe %d]", cqe, max_cqe);
    }
    if (static_cast<size_t>(cqe) < st_->entries.size()) {
      return Errno(EINVAL, "cqe %d is below the %zu completions cq %u holds",
                   cqe, st_->entries.size(), st_->id);
    }
    // Rounded as at creation (ibv_resize_cq(3): at least cqe entries).
    st_->cqe = static_cast<int>(
        RoundQueue(profile.queue_rounding, static_cast<uint32_t>(cqe)));
    return absl::OkStatus();
  }
  const std::shared_ptr<CqState>& state() const { return st_; }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    live_.store(false, std::memory_order_release);
    if (st_->channel != nullptr) {
      --st_->channel->cqs;
      // Drop this CQ's pending events.
      auto& ev = st_->channel->events;
      for (auto it = ev.begin(); it != ev.end();) {
        it = it->get() == st_.get() ? ev.erase(it) : std::next(it);
      }
    }
    --st_->context->cqs;
    --st_->context->node->live_cqs;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<CqState> st_;
  CompChannel* channel_;
  // False once destroyed: read without the lock by the empty-poll path.
  std::atomic<bool> live_{true};
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

}  // namespace

absl::StatusOr<std::unique_ptr<CompChannel>> CreateSimChannel(
    const std::shared_ptr<Fabric>& fabric,
    const std::shared_ptr<ContextState>& context) {
  auto ch = std::make_shared<ChannelState>();
  ch->context = context;
  ++context->channels;
  return std::unique_ptr<CompChannel>(new SimChannel(fabric, ch));
}

absl::StatusOr<std::unique_ptr<Cq>> CreateSimCq(
    const std::shared_ptr<Fabric>& fabric,
    const std::shared_ptr<ContextState>& context, const DeviceAttr& device,
    int cqe, CompChannel* channel) {
  if (cqe < 1 || cqe > device.max_cqe) {
    return Errno(EINVAL, "cqe %d outside [1, max_cqe %d]", cqe, device.max_cqe);
  }
  std::shared_ptr<ChannelState> ch;
  if (channel != nullptr) {
    auto* sim_channel = dynamic_cast<SimChannel*>(channel);
    if (sim_channel == nullptr) {
      return Errno(EINVAL, "completion channel of another provider");
    }
    ch = sim_channel->state();
    if (ch->dead) return Errno(EINVAL, "completion channel is destroyed");
    if (ch->context != context) {
      return Errno(EINVAL, "completion channel of another context");
    }
  }
  Node* node = context->node;
  if (node->live_cqs >= device.max_cq) {
    return Errno(fabric->profile().limit_errno.cq, "max_cq %d reached",
                 device.max_cq);
  }
  auto cq = std::make_shared<CqState>();
  cq->context = context;
  cq->channel = ch;
  cq->id = node->next_id++;
  // What the CQ holds: the profile's rounding of the request
  // (ibv_create_cq(3): at least cqe entries).
  cq->cqe = static_cast<int>(
      RoundQueue(fabric->profile().queue_rounding, static_cast<uint32_t>(cqe)));
  if (ch != nullptr) ++ch->cqs;
  ++context->cqs;
  ++node->live_cqs;
  return std::unique_ptr<Cq>(new SimCq(fabric, cq, channel));
}

std::shared_ptr<CqState> CqStateOf(Cq* cq) {
  auto* sim_cq = dynamic_cast<SimCq*>(cq);
  return sim_cq == nullptr ? nullptr : sim_cq->state();
}

}  // namespace verbsim::sim
