// Completion channels and async events with real file descriptors. The sim
// delivers events to whoever waits on it (CompChannel::GetEvent,
// Context::GetAsyncEvent), so one thread per channel and per context waits
// there and turns each event into a byte on a pipe: the fd a program polls
// becomes readable, and ibv_get_cq_event / ibv_get_async_event take the
// event in order. Waiting in the sim also drives it, so completions arrive
// while a program sleeps in poll(2) on the fd.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/time/time.h"
#include "dropin/verbs/state.h"
#include "sim/fabric.h"

using namespace verbsim;
using namespace verbsim::dropin;

namespace verbsim::dropin {

namespace {
// How long a pump waits in the sim before it looks at its stop flag.
constexpr absl::Duration kPumpSlice = absl::Milliseconds(20);
}  // namespace

bool EventPipe::Open() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  read_fd = fds[0];
  write_fd = fds[1];
  return true;
}

void EventPipe::Close() {
  if (read_fd >= 0) close(read_fd);
  if (write_fd >= 0) close(write_fd);
  read_fd = write_fd = -1;
}

void EventPipe::Signal() {
  char b = 1;
  while (write(write_fd, &b, 1) < 0 && errno == EINTR) {
  }
}

bool EventPipe::Take() {
  char b;
  for (;;) {
    ssize_t n = read(read_fd, &b, 1);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;  // EAGAIN on an O_NONBLOCK fd
  }
}

void StartAsyncPump(Ctx* ctx) {
  ctx->async_pump = std::thread([ctx] {
    sim::Fabric::MarkHelperThread();
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(ctx->mu);
        if (ctx->stop) return;
      }
      absl::StatusOr<AsyncEvent> ev = ctx->impl->GetAsyncEvent(kPumpSlice);
      if (!ev.ok()) continue;  // ETIMEDOUT: look at the stop flag again
      ibv_async_event out{};
      out.event_type = static_cast<ibv_event_type>(ev->type);
      std::lock_guard<std::mutex> lock(ctx->mu);
      switch (ev->type) {
        case AsyncEventType::kQpFatal:
        case AsyncEventType::kQpReqErr:
        case AsyncEventType::kQpAccessErr:
        case AsyncEventType::kCommEst:
        case AsyncEventType::kSqDrained:
        case AsyncEventType::kPathMig:
        case AsyncEventType::kPathMigErr:
        case AsyncEventType::kQpLastWqeReached:
          for (QpWrap* q : ctx->qps) {
            if (q->qp.qp_num == ev->qp_num) out.element.qp = &q->qp;
          }
          if (out.element.qp == nullptr) continue;  // the QP is gone
          break;
        case AsyncEventType::kSrqErr:
        case AsyncEventType::kSrqLimitReached:
          for (SrqWrap* s : ctx->srqs) {
            if (s->impl->srq_id() == ev->srq_id) out.element.srq = &s->srq;
          }
          if (out.element.srq == nullptr) continue;
          break;
        case AsyncEventType::kCqErr:
          // The sim names the CQ by an id the drop-in does not see; the
          // event is delivered without its CQ (docs/drop-in.md).
          break;
        default:
          out.element.port_num = ev->port_num;
          break;
      }
      ctx->async.push_back(out);
      ctx->async_pipe.Signal();
    }
  });
}

void StopAsyncPump(Ctx* ctx) {
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    ctx->stop = true;
  }
  if (ctx->async_pump.joinable()) ctx->async_pump.join();
}

}  // namespace verbsim::dropin

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  Ctx* ctx = CtxOf(context);
  absl::StatusOr<std::unique_ptr<CompChannel>> ch =
      ctx->impl->CreateCompChannel();
  if (!ch.ok()) {
    ErrnoFrom(ch.status(), "ibv_create_comp_channel");
    return nullptr;
  }
  auto* w = new ChannelWrap{};
  w->impl = *std::move(ch);
  w->ctx = ctx;
  if (!w->pipe.Open()) {
    int err = errno;
    delete w;
    errno = err;
    return nullptr;
  }
  w->ch.context = context;
  w->ch.fd = w->pipe.read_fd;
  w->ch.refcnt = 0;
  w->pump = std::thread([w] {
    sim::Fabric::MarkHelperThread();
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(w->mu);
        if (w->stop) return;
      }
      absl::StatusOr<Cq*> cq = w->impl->GetEvent(kPumpSlice);
      if (!cq.ok()) continue;
      std::lock_guard<std::mutex> lock(w->mu);
      w->events.push_back(*cq);
      w->pipe.Signal();
    }
  });
  return &w->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  auto* w = WrapOf<ChannelWrap>(channel);
  absl::Status s = w->impl->Destroy();
  if (!s.ok()) return ErrnoFrom(s, "ibv_destroy_comp_channel");
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->stop = true;
  }
  w->pump.join();
  w->pipe.Close();
  delete w;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  auto* w = WrapOf<ChannelWrap>(channel);
  for (;;) {
    if (!w->pipe.Take()) return -1;  // errno EAGAIN from a non-blocking fd
    Cq* sim_cq = nullptr;
    {
      std::lock_guard<std::mutex> lock(w->mu);
      if (w->events.empty()) continue;  // its CQ was destroyed meanwhile
      sim_cq = w->events.front();
      w->events.pop_front();
    }
    std::lock_guard<std::mutex> lock(w->ctx->mu);
    for (CqWrap* c : w->ctx->cqs) {
      if (c->impl.get() == sim_cq) {
        *cq = &c->cq;
        *cq_context = c->cq.cq_context;
        return 0;
      }
    }
  }
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  ObjectUse use = UseObject(cq, ObjectKind::kCq, nullptr);
  if (use.error()) return;  // no such CQ: nothing to count
  auto* w = WrapOf<CqWrap>(cq);
  if (w->channel != nullptr) w->channel->impl->AckEvents(w->impl.get(), nevents);
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  Ctx* ctx = CtxOf(context);
  for (;;) {
    if (!ctx->async_pipe.Take()) return -1;
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (ctx->async.empty()) continue;
    *event = ctx->async.front();
    ctx->async.pop_front();
    return 0;
  }
}

void ibv_ack_async_event(ibv_async_event* event) { (void)event; }

}  // extern "C"
