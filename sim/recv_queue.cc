// Receive WQEs: from the QP's receive queue or from its shared receive queue
// (IBA 10.2.9), and asynchronous events.
#include "sim/fabric.h"
#include "sim/transport.h"

namespace verbsim::sim {

void RaiseAsyncEvent(ContextState& context, const AsyncEvent& event) {
  if (context.dead) return;
  context.async_events.push_back(event);
  context.node->fabric->Wake();
}

bool HasRecv(const QpCore& qp) {
  return qp.srq != nullptr ? !qp.srq->wqes.empty() : !qp.rq.empty();
}

RecvWqe TakeRecv(QpCore& qp) {
  if (qp.srq == nullptr) {
    RecvWqe r = std::move(qp.rq.front());
    qp.rq.pop_front();
    return r;
  }
  SrqState& srq = *qp.srq;
  RecvWqe r = std::move(srq.wqes.front());
  srq.wqes.pop_front();
  // ibv_modify_srq(3): the event fires once when fewer WRs than the limit
  // remain, and disarms the limit.
  if (srq.limit != 0 && srq.wqes.size() < srq.limit) {
    srq.limit = 0;
    AsyncEvent ev;
    ev.type = AsyncEventType::kSrqLimitReached;
    ev.srq_id = srq.id;
    RaiseAsyncEvent(*srq.pd->context, ev);
  }
  return r;
}

void ReturnRecv(QpCore& qp, RecvWqe r) {
  if (qp.srq != nullptr) {
    qp.srq->wqes.push_front(std::move(r));
  } else {
    qp.rq.push_front(std::move(r));
  }
}

}  // namespace verbsim::sim
