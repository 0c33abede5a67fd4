// The context ops table: the header's inline ibv_post_send, ibv_post_recv,
// ibv_post_srq_recv, ibv_poll_cq and ibv_req_notify_cq call these through
// ibv_context::ops. Polling a CQ is what advances the sim (sim/fabric.h).
#include <arpa/inet.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "dropin/verbs/state.h"
#include "sim/handles.h"

using namespace verbsim;

namespace verbsim::dropin {

namespace {

// The handle field to check for a verb a provider may run without the
// kernel (`checked` false: only the pointer is looked up).
const uint32_t* HandleIf(bool checked, const uint32_t* handle) {
  return checked ? handle : nullptr;
}

bool RecvAndPollCheckHandle(ibv_context* context) {
  const Ctx* ctx = CtxOf(context);
  return ctx->profile == nullptr || ctx->profile->recv_and_poll_check_handle;
}

}  // namespace

int PollCq(ibv_cq* cq, int num, ibv_wc* wc) {
  ObjectUse use =
      UseObject(cq, ObjectKind::kCq,
                HandleIf(RecvAndPollCheckHandle(cq->context), &cq->handle));
  if (use.error()) return -1;  // ibv_poll_cq(3): negative on failure
  if (num <= 0) return 0;
  std::vector<WorkCompletion> out(static_cast<size_t>(num));
  absl::StatusOr<int> n = WrapOf<CqWrap>(cq)->impl->Poll(absl::MakeSpan(out));
  if (!n.ok()) {
    ErrnoFrom(n.status(), "ibv_poll_cq");
    return -1;  // ibv_poll_cq(3): a negative value on failure
  }
  for (int i = 0; i < *n; ++i) WcToIbv(out[i], &wc[i]);
  return *n;
}

int ReqNotifyCq(ibv_cq* cq, int solicited_only) {
  const Ctx* ctx = CtxOf(cq->context);
  const bool checked =
      ctx->profile == nullptr || ctx->profile->notify_checks_handle;
  ObjectUse use =
      UseObject(cq, ObjectKind::kCq, HandleIf(checked, &cq->handle));
  if (use.error()) return use.error();
  absl::Status s = WrapOf<CqWrap>(cq)->impl->ReqNotify(solicited_only != 0);
  return s.ok() ? 0 : ErrnoFrom(s, "ibv_req_notify_cq");
}

namespace {

// A program's work-request list as the sim takes it. The list is walked at
// most `max_wrs` entries, the most the queue could take plus one, and an
// SGE array is read only when its count is within `max_sge`: a list longer
// than the queue's free slots (a cyclic or corrupted one included) reaches a
// WR the queue refuses with ENOMEM, and an SGE count above the queue's
// maximum is refused with EINVAL, before anything past them is read. rxe's post loops stop the same
// way (rdma-core providers/rxe/rxe.c: ENOMEM on a full queue, EINVAL on
// num_sge > max_sge, bad_wr naming the WR).
template <typename In>
struct WrList {
  std::vector<In*> wrs;                 // the WRs taken, in list order
  std::vector<std::vector<Sge>> sges;   // their SGE lists
  In* rest = nullptr;                   // the first WR not taken, if any
};

template <typename In>
WrList<In> TakeWrs(In* wr, size_t max_wrs, uint32_t max_sge) {
  WrList<In> list;
  for (; wr != nullptr && list.wrs.size() < max_wrs; wr = wr->next) {
    std::vector<Sge> sges;
    if (wr->num_sge > 0 && static_cast<uint32_t>(wr->num_sge) > max_sge) {
      // Too many: the queue refuses the count itself, so the program's
      // array is not read (it may be shorter than num_sge says).
      sges.resize(size_t{max_sge} + 1);
    } else {
      for (int i = 0; i < wr->num_sge; ++i) {
        sges.push_back({wr->sg_list[i].addr, wr->sg_list[i].length,
                        wr->sg_list[i].lkey});
      }
    }
    list.wrs.push_back(wr);
    list.sges.push_back(std::move(sges));
  }
  list.rest = wr;
  return list;
}

// How many WRs of a list to take for a queue of `capacity` slots.
size_t Bound(uint32_t capacity) { return size_t{capacity} + 1; }

std::vector<RecvWr> RecvWrs(const WrList<ibv_recv_wr>& list) {
  std::vector<RecvWr> wrs;
  for (size_t i = 0; i < list.wrs.size(); ++i) {
    RecvWr r;
    r.wr_id = list.wrs[i]->wr_id;
    r.sg_list = absl::MakeConstSpan(list.sges[i]);
    wrs.push_back(r);
  }
  return wrs;
}

// The result of posting a taken list: the sim's error with bad_wr at the WR
// it names; or, when the list went on past what was taken (only possible if
// the queue held more than its capacity said), ENOMEM at the first WR not
// taken.
template <typename In>
int Finish(const absl::Status& st, size_t bad_index, const WrList<In>& list,
           In** bad, const char* function) {
  if (st.ok() && list.rest == nullptr) return 0;
  if (!st.ok()) {
    if (bad) *bad = bad_index < list.wrs.size() ? list.wrs[bad_index] : nullptr;
    return ErrnoFrom(st, function);
  }
  if (bad) *bad = list.rest;
  errno = ENOMEM;
  return ENOMEM;
}

}  // namespace

// No bad_wr to report through, or no list: EINVAL, nothing posted (rdma-core
// providers/rxe/rxe.c rxe_post_send and rxe_post_recv).
template <typename In>
bool RefuseList(In* wr, In** bad) {
  if (bad != nullptr) *bad = nullptr;
  if (bad == nullptr || wr == nullptr) {
    errno = EINVAL;
    return true;
  }
  return false;
}

int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  if (RefuseList(wr, bad)) return EINVAL;
  // The doorbell names the QP by handle (rxe, siw): nothing is posted when
  // it names none.
  ObjectUse use = UseObject(qp, ObjectKind::kQp, &qp->handle);
  if (use.error()) {
    *bad = wr;
    return use.error();
  }
  // The AHs, windows and regions the WRs name, held until posted.
  std::vector<ObjectUse> held;
  QpWrap* q = WrapOf<QpWrap>(qp);
  const QpCap& cap = q->held;
  WrList<ibv_send_wr> list =
      TakeWrs(wr, Bound(cap.max_send_wr), cap.max_send_sge);
  std::vector<SendWr> wrs;
  for (size_t i = 0; i < list.wrs.size(); ++i) {
    ibv_send_wr* w = list.wrs[i];
    const int opcode = RawEnum(w->opcode);
    if (opcode == IBV_WR_TSO || opcode == IBV_WR_DRIVER1 || w->num_sge < 0) {
      if (bad) *bad = w;
      if (w->num_sge < 0) return EINVAL;
      return Unsupported("ibv_post_send with this opcode (TSO/driver)");
    }
    SendWr s;
    s.wr_id = w->wr_id;
    s.sg_list = absl::MakeConstSpan(list.sges[i]);
    s.opcode = static_cast<WrOpcode>(opcode);
    s.send_flags = w->send_flags;
    if (opcode == IBV_WR_BIND_MW) {
      // The window and the region are read from their structs (rxe
      // convert_send_wr): a destroyed one makes the WR bad (EINVAL).
      held.emplace_back();
      s.bind_mw.mw = LiveMw(w->bind_mw.mw, qp->context, &held.back());
      held.emplace_back();
      const ibv_mw_bind_info& info = w->bind_mw.bind_info;
      s.bind_mw.bind_info.mr = LiveMr(info.mr, qp->context, &held.back());
      if (s.bind_mw.mw == nullptr ||
          (info.mr != nullptr && s.bind_mw.bind_info.mr == nullptr)) {
        *bad = w;
        errno = EINVAL;
        return EINVAL;
      }
      s.bind_mw.rkey = w->bind_mw.rkey;
      s.bind_mw.current_rkey = w->bind_mw.mw->rkey;
      s.bind_mw.bind_info.addr = info.addr;
      s.bind_mw.bind_info.length = info.length;
      s.bind_mw.bind_info.mw_access_flags = info.mw_access_flags;
    } else if (opcode == IBV_WR_SEND_WITH_INV || opcode == IBV_WR_LOCAL_INV) {
      s.invalidate_rkey = w->invalidate_rkey;
    } else {
      s.imm_data = ntohl(w->imm_data);  // network order in ibv_send_wr
    }
    if (opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
        opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      s.atomic.remote_addr = w->wr.atomic.remote_addr;
      s.atomic.compare_add = w->wr.atomic.compare_add;
      s.atomic.swap = w->wr.atomic.swap;
      s.atomic.rkey = w->wr.atomic.rkey;
    } else if (RawEnum(qp->qp_type) == IBV_QPT_UD &&
               (opcode == IBV_WR_SEND || opcode == IBV_WR_SEND_WITH_IMM)) {
      // wr.ud shares its storage with wr.rdma: read only for the opcodes
      // UD carries; any other fails as it executes (LOC_QP_OP_ERR).
      // The provider reads the AH's address vector from its struct, so
      // only a destroyed AH is refused (EINVAL: the WR is bad).
      if (ibv_ah* ah = w->wr.ud.ah; ah != nullptr) {
        held.push_back(UseObject(ah, ObjectKind::kAh, nullptr, qp->context));
        if (held.back().error()) {
          *bad = w;
          errno = EINVAL;
          return EINVAL;
        }
        s.ud.ah = WrapOf<AhWrap>(ah)->impl.get();
      }
      s.ud.remote_qpn = w->wr.ud.remote_qpn;
      s.ud.remote_qkey = w->wr.ud.remote_qkey;
    } else {
      s.rdma.remote_addr = w->wr.rdma.remote_addr;
      s.rdma.rkey = w->wr.rdma.rkey;
    }
    wrs.push_back(s);
  }
  size_t bad_index = 0;
  absl::Status st = q->impl->PostSend(wrs, &bad_index);
  return Finish(st, bad_index, list, bad, "ibv_post_send");
}

int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  if (RefuseList(wr, bad)) return EINVAL;
  ObjectUse use =
      UseObject(qp, ObjectKind::kQp,
                HandleIf(RecvAndPollCheckHandle(qp->context), &qp->handle));
  if (use.error()) {
    *bad = wr;
    return use.error();
  }
  QpWrap* q = WrapOf<QpWrap>(qp);
  const QpCap& cap = q->held;
  WrList<ibv_recv_wr> list =
      TakeWrs(wr, Bound(cap.max_recv_wr), cap.max_recv_sge);
  std::vector<RecvWr> wrs = RecvWrs(list);
  size_t bad_index = 0;
  absl::Status st = q->impl->PostRecv(wrs, &bad_index);
  return Finish(st, bad_index, list, bad, "ibv_post_recv");
}

int PostSrqRecv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  ObjectUse use =
      UseObject(srq, ObjectKind::kSrq,
                HandleIf(RecvAndPollCheckHandle(srq->context), &srq->handle));
  if (use.error()) {
    if (bad) *bad = wr;
    return use.error();
  }
  SrqWrap* w = WrapOf<SrqWrap>(srq);
  SrqAttr attr;
  if (!sim::GetSimSrqCapacity(w->impl.get(), &attr)) {
    if (bad) *bad = wr;
    errno = EINVAL;
    return EINVAL;
  }
  WrList<ibv_recv_wr> list = TakeWrs(wr, Bound(attr.max_wr), attr.max_sge);
  std::vector<RecvWr> wrs = RecvWrs(list);
  size_t bad_index = 0;
  absl::Status st = w->impl->PostRecv(wrs, &bad_index);
  return Finish(st, bad_index, list, bad, "ibv_post_srq_recv");
}

}  // namespace verbsim::dropin
