// The context ops table: the header's inline ibv_post_send, ibv_post_recv,
// ibv_post_srq_recv, ibv_poll_cq and ibv_req_notify_cq call these through
// ibv_context::ops. Polling a CQ is what advances the sim (sim/fabric.h).
#include <arpa/inet.h>

#include <cerrno>
#include <vector>

#include "dropin/verbs/state.h"

using namespace verbsim;

namespace verbsim::dropin {

int PollCq(ibv_cq* cq, int num, ibv_wc* wc) {
  if (num <= 0) return 0;
  std::vector<WorkCompletion> out(static_cast<size_t>(num));
  absl::StatusOr<int> n = WrapOf<CqWrap>(cq)->impl->Poll(absl::MakeSpan(out));
  if (!n.ok()) {
    ErrnoFrom(n.status(), "ibv_poll_cq");
    return -1;  // ibv_poll_cq(3): a negative value on failure
  }
  for (int i = 0; i < *n; ++i) FillWc(out[i], &wc[i]);
  return *n;
}

int ReqNotifyCq(ibv_cq* cq, int solicited_only) {
  absl::Status s = WrapOf<CqWrap>(cq)->impl->ReqNotify(solicited_only != 0);
  return s.ok() ? 0 : ErrnoFrom(s, "ibv_req_notify_cq");
}

namespace {

// The sim's work requests for a list of ibverbs ones; `sges` keeps the SGE
// arrays alive while the sim copies them at post time.
template <typename In>
std::vector<std::vector<Sge>> CopySges(In* wr) {
  std::vector<std::vector<Sge>> sges;
  for (; wr != nullptr; wr = wr->next) {
    std::vector<Sge> list;
    for (int i = 0; i < wr->num_sge; ++i) {
      list.push_back({wr->sg_list[i].addr, wr->sg_list[i].length,
                      wr->sg_list[i].lkey});
    }
    sges.push_back(std::move(list));
  }
  return sges;
}

template <typename In>
In* Nth(In* wr, size_t n) {
  while (n-- > 0 && wr != nullptr) wr = wr->next;
  return wr;
}

std::vector<RecvWr> RecvWrs(ibv_recv_wr* wr,
                            const std::vector<std::vector<Sge>>& sges) {
  std::vector<RecvWr> wrs;
  for (size_t i = 0; wr != nullptr; wr = wr->next, ++i) {
    RecvWr r;
    r.wr_id = wr->wr_id;
    r.sg_list = absl::MakeConstSpan(sges[i]);
    wrs.push_back(r);
  }
  return wrs;
}

}  // namespace

int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  std::vector<std::vector<Sge>> sges = CopySges(wr);
  std::vector<SendWr> wrs;
  size_t i = 0;
  for (ibv_send_wr* w = wr; w != nullptr; w = w->next, ++i) {
    const int opcode = RawEnum(w->opcode);
    if (opcode == IBV_WR_BIND_MW || opcode == IBV_WR_TSO ||
        opcode == IBV_WR_DRIVER1 || w->num_sge < 0) {
      if (bad) *bad = w;
      if (w->num_sge < 0) return EINVAL;
      return Unsupported("ibv_post_send with this opcode (bind/TSO/driver)");
    }
    SendWr s;
    s.wr_id = w->wr_id;
    s.sg_list = absl::MakeConstSpan(sges[i]);
    s.opcode = static_cast<WrOpcode>(opcode);
    s.send_flags = w->send_flags;
    if (opcode == IBV_WR_SEND_WITH_INV || opcode == IBV_WR_LOCAL_INV) {
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
    } else if (RawEnum(qp->qp_type) == IBV_QPT_UD) {
      s.ud.ah = w->wr.ud.ah ? WrapOf<AhWrap>(w->wr.ud.ah)->impl.get() : nullptr;
      s.ud.remote_qpn = w->wr.ud.remote_qpn;
      s.ud.remote_qkey = w->wr.ud.remote_qkey;
    } else {
      s.rdma.remote_addr = w->wr.rdma.remote_addr;
      s.rdma.rkey = w->wr.rdma.rkey;
    }
    wrs.push_back(s);
  }
  size_t bad_index = 0;
  absl::Status st = WrapOf<QpWrap>(qp)->impl->PostSend(wrs, &bad_index);
  if (st.ok()) return 0;
  if (bad) *bad = Nth(wr, bad_index);
  return ErrnoFrom(st, "ibv_post_send");
}

int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  std::vector<std::vector<Sge>> sges = CopySges(wr);
  std::vector<RecvWr> wrs = RecvWrs(wr, sges);
  size_t bad_index = 0;
  absl::Status st = WrapOf<QpWrap>(qp)->impl->PostRecv(wrs, &bad_index);
  if (st.ok()) return 0;
  if (bad) *bad = Nth(wr, bad_index);
  return ErrnoFrom(st, "ibv_post_recv");
}

int PostSrqRecv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  std::vector<std::vector<Sge>> sges = CopySges(wr);
  std::vector<RecvWr> wrs = RecvWrs(wr, sges);
  size_t bad_index = 0;
  absl::Status st = WrapOf<SrqWrap>(srq)->impl->PostRecv(wrs, &bad_index);
  if (st.ok()) return 0;
  if (bad) *bad = Nth(wr, bad_index);
  return ErrnoFrom(st, "ibv_post_srq_recv");
}

}  // namespace verbsim::dropin
