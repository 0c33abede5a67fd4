// Completion channels and CQs of the "hw" provider.
#include <algorithm>
#include <cerrno>
#include <climits>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "hw/ibv_convert.h"
#include "hw/objects.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {

// --- CompChannel ------------------------------------------------------------

absl::Status HwCompChannel::Destroy() {
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

HwCq::HwCq(std::shared_ptr<CqRes> res, CompChannel* channel)
    : res_(std::move(res)), channel_(channel), cqe_(res_->cq->cqe) {
  absl::MutexLock lock(&res_->mu);
  res_->handle = this;
}

absl::Status HwCq::Destroy() {
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

absl::Status HwCq::Resize(int cqe) {
  if (res_ == nullptr) return Dead("cq");
  int ret = ibv_resize_cq(res_->cq, cqe);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_resize_cq(cq %u, cqe %d)",
                                    res_->cq->handle, cqe));
  }
  cqe_ = res_->cq->cqe;
  return absl::OkStatus();
}

absl::Status HwCq::ReqNotify(bool solicited_only) {
  if (res_ == nullptr) return Dead("cq");
  int ret = ibv_req_notify_cq(res_->cq, solicited_only ? 1 : 0);
  if (ret != 0) {
    return SysError(
        ErrnoFromReturn(ret),
        absl::StrFormat("ibv_req_notify_cq(cq %u)", res_->cq->handle));
  }
  return absl::OkStatus();
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
    for (int i = 0; i < n; ++i) wcs[done + i] = WcFromIbv(raw[i]);
    done += n;
    if (n < ask) break;
  }
  return static_cast<int>(done);
}

void HwCq::Release() {
  if (res_ == nullptr) return;
  {
    absl::MutexLock lock(&res_->mu);
    res_->handle = nullptr;
  }
  res_.reset();
}

}  // namespace hw
}  // namespace verbsim
