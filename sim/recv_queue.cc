// Receive WQEs: from the QP's receive queue or from its shared receive queue
// (IBA 10.2.9), and asynchronous events.
#include "sim/fabric.h"
#include "sim/sg.h"
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

void BeginRecv(QpCore& qp) {
  qp.cur_recv = TakeRecv(qp);
  qp.recv_offset = 0;
  qp.in_send = true;
}

RecvSpace CheckRecvSpace(const QpCore& qp, uint64_t len) {
  if (qp.recv_offset + len > qp.cur_recv.capacity) return RecvSpace::kTooSmall;
  if (len > 0 && CheckSgeRange(qp.node->keys, qp.pd.get(), qp.cur_recv.sges,
                               qp.recv_offset, len, kAccessLocalWrite) !=
                     AccessResult::kOk) {
    return RecvSpace::kRefused;
  }
  return RecvSpace::kOk;
}

void ScatterBeforeRefusal(QpCore& qp, absl::Span<const uint8_t> payload) {
  if (!qp.node->fabric->profile().scatters_up_to_a_failing_sge) return;
  uint64_t passed = 0;
  CheckSgeRange(qp.node->keys, qp.pd.get(), qp.cur_recv.sges, qp.recv_offset,
                payload.size(), kAccessLocalWrite, &passed);
  ScatterTo(qp.cur_recv.sges, qp.recv_offset, payload.data(), passed);
}

}  // namespace verbsim::sim
