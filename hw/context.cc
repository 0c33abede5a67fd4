// HwContext, the "hw" provider's opened device: its ports and GIDs, the PDs,
// completion channels and CQs made on it, and its async events.
#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "hw/ibv_convert.h"
#include "hw/objects.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {

absl::Status HwContext::Check() const {
  return res_ != nullptr ? absl::OkStatus()
                         : Dead(absl::StrCat("context ", attr_.name));
}

absl::Status HwContext::CheckPort(absl::string_view call, int port_num) const {
  if (port_num < 1 || port_num > attr_.phys_port_cnt) {
    return Errno(EINVAL, "%s: port %d out of range 1..%d on %s", call,
                 port_num, attr_.phys_port_cnt, attr_.name);
  }
  return absl::OkStatus();
}

absl::Status HwContext::Destroy() {
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
  return PortAttrFromIbv(pa);
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
  return GidFromIbv(gid);
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

ibv_context* RawContext(const Context* context) {
  auto* hw = dynamic_cast<const HwContext*>(context);
  return hw != nullptr ? hw->raw() : nullptr;
}

}  // namespace hw
}  // namespace verbsim
