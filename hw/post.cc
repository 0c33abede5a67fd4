// Posting on the "hw" provider's queues: ibv_post_send (with the checks of
// what ibv_send_wr cannot express), ibv_post_recv and ibv_post_srq_recv, and
// ibv_bind_mw.
#include <arpa/inet.h>

#include <cerrno>
#include <climits>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_format.h"
#include "core/errors.h"
#include "core/names.h"
#include "hw/objects.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {
namespace {

// Posts `wrs` as one linked list of `RawWr` (ibv_send_wr or ibv_recv_wr).
// `fill(i, wr, &raw)` checks WR i and fills `raw` but for sg_list and next;
// the first WR it refuses ends the list there, and the WRs before it are
// posted, as ibv_post_send(3) posts those before a bad one. `post(list,
// &bad)` is the ibverbs call; `describe(index)` names the WR it refused in
// the error. *posted: how many WRs ibverbs took (none when it refused one).
template <typename RawWr, typename Wr, typename Fill, typename Post,
          typename Describe>
absl::Status PostList(absl::Span<const Wr> wrs, size_t* bad_index, Fill fill,
                      Post post, Describe describe, size_t* posted) {
  *posted = 0;
  if (wrs.empty()) return absl::OkStatus();
  size_t total_sge = 0;
  for (const Wr& wr : wrs) total_sge += wr.sg_list.size();
  absl::InlinedVector<RawWr, 4> raw(wrs.size());
  absl::InlinedVector<ibv_sge, 8> sges(total_sge);
  size_t valid = 0;
  absl::Status invalid;
  size_t next_sge = 0;
  for (; valid < wrs.size(); ++valid) {
    const Wr& wr = wrs[valid];
    invalid = fill(valid, wr, &raw[valid]);
    if (!invalid.ok()) break;
    ibv_sge* list = sges.data() + next_sge;
    for (const Sge& sge : wr.sg_list) {
      sges[next_sge++] = ibv_sge{sge.addr, sge.length, sge.lkey};
    }
    raw[valid].sg_list = wr.sg_list.empty() ? nullptr : list;
    if (valid > 0) raw[valid - 1].next = &raw[valid];
  }
  if (valid > 0) {
    RawWr* bad = nullptr;
    int ret = post(raw.data(), &bad);
    if (ret != 0) {
      size_t index = 0;
      if (bad >= raw.data() && bad < raw.data() + valid)
        index = bad - raw.data();
      if (bad_index != nullptr) *bad_index = index;
      return SysError(ErrnoFromReturn(ret), describe(index));
    }
  }
  *posted = valid;
  if (!invalid.ok() && bad_index != nullptr) *bad_index = valid;
  return invalid;
}

// ibv_post_recv / ibv_post_srq_recv over `wrs`: `post` takes the linked
// list and returns the ibverbs result and the bad WR; `who` names the queue
// ("qp 5 in RTS") in errors.
template <typename PostFn>
absl::Status PostRecvList(absl::Span<const RecvWr> wrs, size_t* bad_index,
                          const std::string& who, PostFn post) {
  auto fill = [&who](size_t i, const RecvWr& wr, ibv_recv_wr* out) {
    if (wr.sg_list.size() > static_cast<size_t>(INT_MAX)) {
      return Errno(EINVAL, "PostRecv %s: wr %zu (wr_id %u) has %zu SGEs", who,
                   i, wr.wr_id, wr.sg_list.size());
    }
    *out = {};
    out->wr_id = wr.wr_id;
    out->num_sge = static_cast<int>(wr.sg_list.size());
    return absl::OkStatus();
  };
  auto describe = [&](size_t index) {
    return absl::StrFormat("post recv (%s): wr %zu (wr_id %u, %zu sge)", who,
                           index, wrs[index].wr_id, wrs[index].sg_list.size());
  };
  size_t posted = 0;
  return PostList<ibv_recv_wr>(wrs, bad_index, fill, post, describe, &posted);
}

}  // namespace

// Checks what ibv_send_wr cannot express and fills `out` (all but sg_list
// and next).
absl::Status HwQp::CheckSendWr(size_t i, const SendWr& wr,
                               ibv_send_wr* out) const {
  const int op = static_cast<int>(wr.opcode);
  if (op < static_cast<int>(WrOpcode::kRdmaWrite) ||
      op > static_cast<int>(WrOpcode::kSendWithInv)) {
    return Errno(EINVAL, "PostSend qp %u: wr %zu (wr_id %u) opcode %d unknown",
                 qp_num_, i, wr.wr_id, op);
  }
  ibv_mw* bind_mw = nullptr;
  ibv_mr* bind_mr = nullptr;
  if (wr.opcode == WrOpcode::kBindMw) {
    auto* mw = dynamic_cast<HwMw*>(wr.bind_mw.mw);
    if (mw == nullptr || mw->raw() == nullptr) {
      return Errno(EINVAL,
                   "PostSend qp %u: wr %zu (wr_id %u) BIND_MW needs a live hw "
                   "memory window",
                   qp_num_, i, wr.wr_id);
    }
    bind_mw = mw->raw();
    if (wr.bind_mw.bind_info.mr != nullptr) {
      auto* mr = dynamic_cast<HwMr*>(wr.bind_mw.bind_info.mr);
      if (mr == nullptr || mr->raw() == nullptr) {
        return Errno(EINVAL,
                     "PostSend qp %u: wr %zu (wr_id %u) BIND_MW needs a live "
                     "hw memory region",
                     qp_num_, i, wr.wr_id);
      }
      bind_mr = mr->raw();
    }
  }
  if ((wr.send_flags & ~kSendAllKnown) != 0) {
    return Errno(EINVAL,
                 "PostSend qp %u: wr %zu (wr_id %u) unknown send_flags 0x%x",
                 qp_num_, i, wr.wr_id, wr.send_flags & ~kSendAllKnown);
  }
  if (wr.sg_list.size() > static_cast<size_t>(INT_MAX)) {
    return Errno(EINVAL, "PostSend qp %u: wr %zu (wr_id %u) has %zu SGEs",
                 qp_num_, i, wr.wr_id, wr.sg_list.size());
  }
  *out = {};
  out->wr_id = wr.wr_id;
  out->num_sge = static_cast<int>(wr.sg_list.size());
  out->opcode = static_cast<ibv_wr_opcode>(wr.opcode);
  out->send_flags = wr.send_flags;
  switch (wr.opcode) {
    case WrOpcode::kSendWithImm:
    case WrOpcode::kRdmaWriteWithImm:
      out->imm_data = htonl(wr.imm_data);
      break;
    case WrOpcode::kSendWithInv:
    case WrOpcode::kLocalInv:
      out->invalidate_rkey = wr.invalidate_rkey;
      break;
    default:
      break;
  }
  switch (wr.opcode) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
    case WrOpcode::kRdmaRead:
      out->wr.rdma.remote_addr = wr.rdma.remote_addr;
      out->wr.rdma.rkey = wr.rdma.rkey;
      break;
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd:
      out->wr.atomic.remote_addr = wr.atomic.remote_addr;
      out->wr.atomic.compare_add = wr.atomic.compare_add;
      out->wr.atomic.swap = wr.atomic.swap;
      out->wr.atomic.rkey = wr.atomic.rkey;
      break;
    case WrOpcode::kBindMw:
      out->bind_mw.mw = bind_mw;
      out->bind_mw.rkey = wr.bind_mw.rkey;
      out->bind_mw.bind_info.mr = bind_mr;
      out->bind_mw.bind_info.addr = wr.bind_mw.bind_info.addr;
      out->bind_mw.bind_info.length = wr.bind_mw.bind_info.length;
      out->bind_mw.bind_info.mw_access_flags =
          wr.bind_mw.bind_info.mw_access_flags;
      break;
    default:
      break;
  }
  if (init_.qp_type == QpType::kUd) {
    auto* ah = dynamic_cast<HwAh*>(wr.ud.ah);
    if (ah == nullptr || ah->raw() == nullptr) {
      return Errno(EINVAL,
                   "PostSend qp %u: wr %zu (wr_id %u) UD send needs a live hw "
                   "address handle (ah %p)",
                   qp_num_, i, wr.wr_id, static_cast<void*>(wr.ud.ah));
    }
    out->wr.ud.ah = ah->raw();
    out->wr.ud.remote_qpn = wr.ud.remote_qpn;
    out->wr.ud.remote_qkey = wr.ud.remote_qkey;
  }
  return absl::OkStatus();
}

absl::Status HwQp::PostSend(absl::Span<const SendWr> wrs, size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (absl::Status s = Check(); !s.ok()) return s;
  if (wrs.empty()) return absl::OkStatus();
  auto fill = [this](size_t i, const SendWr& wr, ibv_send_wr* out) {
    return CheckSendWr(i, wr, out);
  };
  ibv_qp* qp = res_->qp;
  auto post = [qp](ibv_send_wr* list, ibv_send_wr** bad) {
    return ibv_post_send(qp, list, bad);
  };
  auto describe = [&](size_t index) {
    const SendWr& wr = wrs[index];
    return absl::StrFormat(
        "ibv_post_send(qp %u in %s): wr %zu (wr_id %u, %s, %zu sge, flags "
        "0x%x)",
        qp_num_, QpStateName(state()), index, wr.wr_id,
        WrOpcodeName(wr.opcode), wr.sg_list.size(), wr.send_flags);
  };
  size_t valid = 0;
  absl::Status status =
      PostList<ibv_send_wr>(wrs, bad_index, fill, post, describe, &valid);
  // Posted BIND_MW requests give their windows the rkey they name.
  for (size_t k = 0; k < valid; ++k) {
    if (wrs[k].opcode == WrOpcode::kBindMw) {
      if (auto* mw = dynamic_cast<HwMw*>(wrs[k].bind_mw.mw); mw != nullptr) {
        mw->set_rkey(wrs[k].bind_mw.rkey);
      }
    }
  }
  return status;
}

absl::Status HwQp::PostRecv(absl::Span<const RecvWr> wrs, size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (absl::Status s = Check(); !s.ok()) return s;
  if (wrs.empty()) return absl::OkStatus();
  ibv_qp* qp = res_->qp;
  if (qp->srq != nullptr) {
    // ibv_create_qp(3): a QP on an SRQ has no receive queue of its own.
    // Refused here because libsiw would not survive it: siw.c
    // siw_post_recv indexes its ring modulo the receive queue's size, 0.
    return Errno(EINVAL,
                 "ibv_post_recv, qp %u: the QP takes its receives from an "
                 "SRQ", qp_num_);
  }
  return PostRecvList(
      wrs, bad_index,
      absl::StrFormat("ibv_post_recv, qp %u in %s", qp_num_,
                      QpStateName(state())),
      [qp](ibv_recv_wr* list, ibv_recv_wr** bad) {
        return ibv_post_recv(qp, list, bad);
      });
}

absl::Status HwSrq::PostRecv(absl::Span<const RecvWr> wrs, size_t* bad_index) {
  if (bad_index != nullptr) *bad_index = 0;
  if (res_ == nullptr) return Dead(absl::StrFormat("srq %u", id_));
  ibv_srq* srq = res_->srq;
  return PostRecvList(wrs, bad_index,
                      absl::StrFormat("ibv_post_srq_recv, srq %u", id_),
                      [srq](ibv_recv_wr* list, ibv_recv_wr** bad) {
                        return ibv_post_srq_recv(srq, list, bad);
                      });
}

absl::Status HwQp::BindMw(Mw* mw, const MwBind& bind) {
  if (absl::Status s = Check(); !s.ok()) return s;
  auto* hw_mw = dynamic_cast<HwMw*>(mw);
  if (hw_mw == nullptr || hw_mw->raw() == nullptr) {
    return Errno(EINVAL, "BindMw qp %u: not a live hw memory window", qp_num_);
  }
  ibv_mr* mr = nullptr;
  if (bind.bind_info.mr != nullptr) {
    auto* hw_mr = dynamic_cast<HwMr*>(bind.bind_info.mr);
    if (hw_mr == nullptr || hw_mr->raw() == nullptr) {
      return Errno(EINVAL, "BindMw qp %u: not a live hw memory region",
                   qp_num_);
    }
    mr = hw_mr->raw();
  }
  ibv_mw_bind b = {};
  b.wr_id = bind.wr_id;
  b.send_flags = bind.send_flags;
  b.bind_info.mr = mr;
  b.bind_info.addr = bind.bind_info.addr;
  b.bind_info.length = bind.bind_info.length;
  b.bind_info.mw_access_flags = bind.bind_info.mw_access_flags;
  // ibv_bind_mw (verbs.h) refuses a type 2 window and a length without a
  // region (EINVAL) and a region of another PD (EPERM) itself.
  int ret = ibv_bind_mw(res_->qp, hw_mw->raw(), &b);
  if (ret != 0) {
    return SysError(
        ErrnoFromReturn(ret),
        absl::StrFormat("ibv_bind_mw(qp %u, rkey 0x%x, addr 0x%x, length %u, "
                        "%s)",
                        qp_num_, hw_mw->rkey(), bind.bind_info.addr,
                        bind.bind_info.length,
                        AccessFlagsName(bind.bind_info.mw_access_flags)));
  }
  hw_mw->set_rkey(hw_mw->raw()->rkey);
  return absl::OkStatus();
}

}  // namespace hw
}  // namespace verbsim
