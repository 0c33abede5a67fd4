// The QP handle: ibv_modify_qp(3), ibv_query_qp(3), posting (the
// semantics are qp_verbs.cc's), ibv_bind_mw(3), multicast attach and
// detach, and the sim's debugging and counter queries.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/names.h"
#include "sim/handle_factories.h"
#include "sim/handles.h"
#include "sim/qp_verbs.h"
#include "sim/transport.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;
// The sim state of the handles a post's WRs name (UD address handles,
// BIND_MW windows and regions); a short list stays on the stack.
using ResolvedWrs = absl::InlinedVector<ResolvedWr, 4>;

class SimQp : public Qp {
 public:
  SimQp(std::shared_ptr<Fabric> fabric, std::unique_ptr<QpCore> st, Pd* pd,
        Cq* send_cq, Cq* recv_cq, QpInitAttr init)
      : fabric_(std::move(fabric)),
        st_(std::move(st)),
        pd_(pd),
        send_cq_(send_cq),
        recv_cq_(recv_cq),
        init_(init) {}
  ~SimQp() override {
    Lock lock(*fabric_);
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "qp %u is destroyed", st_->qpn);
    // The kernel's uverbs destroy_qp refuses a QP still in a group.
    if (int groups = fabric_->McastGroupsOf(st_->node->index, st_->qpn);
        groups > 0) {
      return Errno(EBUSY, "qp %u is attached to %d multicast group(s): "
                   "detach it first", st_->qpn, groups);
    }
    Release();
    return absl::OkStatus();
  }
  uint32_t qp_num() const override { return st_->qpn; }
  QpType type() const override { return st_->type; }
  verbsim::QpState state() const override {
    Lock lock(*fabric_);
    // What ibv_query_qp says (siw: never the state; see Query()).
    if (!fabric_->profile().iwarp.query_reports_qp_attrs) {
      return verbsim::QpState::kReset;
    }
    return st_->state;
  }
  Pd* pd() const override { return pd_; }
  Cq* send_cq() const override { return send_cq_; }
  Cq* recv_cq() const override { return recv_cq_; }
  QpInitAttr init_attr() const override { return init_; }
  absl::Status Modify(const QpAttr& attr, uint32_t mask) override {
    // A path_mtu outside enum Mtu (ibv_mtu) is refused on every profile, as
    // the hw provider refuses it before any driver sees it.
    if ((mask & kQpPathMtu) && MtuBytes(attr.path_mtu) == 0) {
      return Errno(EINVAL, "qp %u: path_mtu %d is not an MTU value",
                   st_->qpn, static_cast<int>(attr.path_mtu));
    }
    Lock lock(*fabric_);
    absl::Status s = ModifyQp(*st_, attr, mask);
    fabric_->WakeForPost();
    return s;
  }
  absl::StatusOr<QpAttr> Query() const override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "qp %u is destroyed", st_->qpn);
    QpAttr a = st_->attr;
    a.qp_state = st_->state;
    a.cur_qp_state = st_->state;
    a.cap = st_->cap;
    const SimProfile& profile = fabric_->profile();
    if (!profile.iwarp.query_reports_qp_attrs) {
      // siw_verbs.c siw_query_qp fills the caps, the netdev's MTU, the
      // inbound and outbound read depths and fixed access flags; the rest
      // stays zero (state RESET, no PSNs, no destination).
      QpAttr q;
      q.cap = st_->cap;
      q.cap.max_inline_data =
          static_cast<uint32_t>(profile.device.max_inline_data);
      q.path_mtu = profile.port.active_mtu;
      q.max_rd_atomic = a.max_dest_rd_atomic;       // irq_size
      q.max_dest_rd_atomic = a.max_rd_atomic;       // orq_size
      q.qp_access_flags =
          kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
      return q;
    }
    return a;
  }
  absl::Status PostSend(absl::Span<const SendWr> wrs,
                        size_t* bad_index) override {
    Lock lock(*fabric_);
    // Only UD sends and BIND_MW name handles; a list without them leaves
    // `resolved` empty (sim::PostSend reads that as nothing to resolve).
    ResolvedWrs resolved;
    const bool names_handles =
        std::any_of(wrs.begin(), wrs.end(), [](const SendWr& wr) {
          return wr.ud.ah != nullptr || wr.opcode == WrOpcode::kBindMw;
        });
    for (size_t i = 0; names_handles && i < wrs.size(); ++i) {
      if (absl::Status s = Resolve(wrs[i], &resolved, wrs.size()); !s.ok()) {
        if (bad_index != nullptr) *bad_index = 0;
        return s;
      }
    }
    fabric_->NoteThread();
    if (fabric_->PostFaultDue(st_->node->index, st_->qpn)) {
      if (bad_index != nullptr) *bad_index = 0;
      return Errno(ENOMEM, "injected fault: post_send on qp %u fails",
                   st_->qpn);
    }
    absl::Status s = sim::PostSend(*st_, wrs, resolved, bad_index);
    fabric_->WakeForPost();
    return s;
  }
  absl::Status BindMw(Mw* mw, const MwBind& bind) override {
    Lock lock(*fabric_);
    std::shared_ptr<MwState> mw_state = MwStateOf(mw);
    if (mw_state == nullptr) {
      return Errno(EINVAL, "ibv_bind_mw: not a memory window of this provider");
    }
    MwState& m = *mw_state;
    if (m.dead) return Errno(EINVAL, "ibv_bind_mw: the window is deallocated");
    if (m.type != MwType::kType1) {
      return Errno(EINVAL, "ibv_bind_mw: type 2 windows are bound by a "
                   "BIND_MW work request");
    }
    const MwBindInfo& b = bind.bind_info;
    if (b.mr == nullptr && (b.addr != 0 || b.length != 0)) {
      return Errno(EINVAL, "ibv_bind_mw: addr 0x%x length %u without a region",
                   b.addr, b.length);
    }
    SendWr wr;
    wr.wr_id = bind.wr_id;
    wr.opcode = WrOpcode::kBindMw;
    wr.send_flags = bind.send_flags;
    wr.bind_mw.mw = mw;
    const uint32_t named = bind.current_rkey.value_or(m.posted_rkey);
    wr.bind_mw.rkey = IncRkey(named);
    wr.bind_mw.current_rkey = named;
    wr.bind_mw.bind_info = b;
    ResolvedWrs resolved;
    if (absl::Status s = Resolve(wr, &resolved, 1); !s.ok()) return s;
    resolved[0].bind_verb = true;
    // libibverbs ibv_bind_mw: the region and the window share a PD.
    if (resolved[0].bind_mr != nullptr && resolved[0].bind_mr->pd != m.pd) {
      return Errno(EPERM, "ibv_bind_mw: the region is of another PD than "
                   "the window");
    }
    fabric_->NoteThread();
    absl::Status s = sim::PostSend(*st_, {&wr, 1}, resolved, nullptr);
    // ibv_bind_mw(3): on success the window's rkey is the new one.
    if (s.ok()) m.posted_rkey = wr.bind_mw.rkey;
    fabric_->WakeForPost();
    return s;
  }
  absl::Status AttachMcast(const Gid& gid, uint16_t lid) override {
    Lock lock(*fabric_);
    if (absl::Status s = CheckMcast(gid, lid); !s.ok()) return s;
    return fabric_->AttachMcast(gid, st_->node->index, st_->qpn);
  }
  absl::Status DetachMcast(const Gid& gid, uint16_t lid) override {
    Lock lock(*fabric_);
    if (absl::Status s = CheckMcast(gid, lid); !s.ok()) return s;
    if (!fabric_->DetachMcast(gid, st_->node->index, st_->qpn)) {
      return Errno(EINVAL, "qp %u is not attached to %s", st_->qpn,
                   GidToString(gid));
    }
    return absl::OkStatus();
  }
  absl::Status PostRecv(absl::Span<const RecvWr> wrs,
                        size_t* bad_index) override {
    Lock lock(*fabric_);
    fabric_->NoteThread();
    if (fabric_->PostFaultDue(st_->node->index, st_->qpn)) {
      if (bad_index != nullptr) *bad_index = 0;
      return Errno(ENOMEM, "injected fault: post_recv on qp %u fails",
                   st_->qpn);
    }
    absl::Status s = sim::PostRecv(*st_, wrs, bad_index);
    fabric_->WakeForPost();
    return s;
  }
  std::string DebugString() const {
    Lock lock(*fabric_);
    const QpCore& q = *st_;
    std::string sq;
    for (const SendWqe& w : q.sq) {
      absl::StrAppend(&sq, w.phase == SendWqe::Phase::kPosted    ? "P"
                           : w.phase == SendWqe::Phase::kInFlight ? "F"
                                                                  : "D");
      if (w.phase != SendWqe::Phase::kPosted) absl::StrAppend(&sq, w.first_psn);
      absl::StrAppend(&sq, " ");
    }
    return absl::StrCat(
        "qp ", q.qpn, " ", QpStateName(q.state), " sq[", q.sq.size(),
        "]={", sq, "} req_next=", q.req_next, " req_psn=", q.req_psn,
        " halted=", q.req_halted, " rnr_waiting=", q.rnr_waiting,
        " timer_armed=", q.timer_armed, " timer_event=", q.timer_event_pending,
        " retry_left=", q.retry_left, " rq=", q.rq.size(), " epsn=", q.epsn,
        " nak_sent=", q.nak_sent, " ack_pending=", q.ack_pending,
        " placements=", q.placements.size(), " | ", fabric_->Describe());
  }
  // Resolves the public handles `wr` names into sim state (appended to
  // `out`); EINVAL for a handle of another provider.
  static absl::Status Resolve(const SendWr& wr, ResolvedWrs* out,
                              size_t reserve) {
    if (out->empty()) out->reserve(reserve);
    ResolvedWr r;
    if (wr.ud.ah != nullptr) {
      r.ah = AhStateOf(wr.ud.ah);
      if (r.ah == nullptr) {
        return Errno(EINVAL, "wr_id %u: address handle of another provider",
                     wr.wr_id);
      }
    }
    if (wr.opcode == WrOpcode::kBindMw) {
      if (wr.bind_mw.mw != nullptr) {
        r.mw = MwStateOf(wr.bind_mw.mw);
        if (r.mw == nullptr) {
          return Errno(EINVAL, "wr_id %u: memory window of another provider",
                       wr.wr_id);
        }
      }
      if (wr.bind_mw.bind_info.mr != nullptr) {
        r.bind_mr = MrStateOf(wr.bind_mw.bind_info.mr);
        if (r.bind_mr == nullptr) {
          return Errno(EINVAL, "wr_id %u: region of another provider",
                       wr.wr_id);
        }
      }
    }
    out->push_back(std::move(r));
    return absl::OkStatus();
  }
  absl::Status CheckMcast(const Gid& gid, uint16_t lid) const {
    if (st_->dead) return Errno(EINVAL, "qp %u is destroyed", st_->qpn);
    if (st_->type != QpType::kUd) {
      return Errno(EINVAL, "qp %u is %s: only UD QPs join multicast groups",
                   st_->qpn, QpTypeName(st_->type));
    }
    if (!IsMulticastGid(gid)) {
      return Errno(EINVAL, "gid %s is not a multicast GID", GidToString(gid));
    }
    (void)lid;  // RoCE: the LID is unused
    return absl::OkStatus();
  }
  absl::StatusOr<QpCounters> QueryCounters() const override {
    return Stats();
  }
  void MarkCmConnected() {
    Lock lock(*fabric_);
    st_->cm_connected = true;
  }
  verbsim::QpState TrueState() const {
    Lock lock(*fabric_);
    return st_->state;
  }
  void DropConnection() {
    Lock lock(*fabric_);
    EnterError(*st_);
  }
  SimQpStats Stats() const {
    Lock lock(*fabric_);
    SimQpStats s;
    s.packets_sent = st_->packets_sent;
    s.packets_received = st_->packets_received;
    s.packets_dropped = st_->packets_dropped;
    s.retransmissions = st_->retransmissions;
    s.timeouts = st_->timeouts;
    s.timeouts_held = st_->timeouts_held;
    s.rnr_naks = st_->rnr_naks;
    s.naks_received = st_->naks_received;
    s.naks_sent = st_->naks_sent;
    s.no_recv_drops = st_->no_recv_drops;
    s.qkey_drops = st_->qkey_drops;
    s.msg_drops = st_->msg_drops;
    return s;
  }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    st_->node->qps.erase(st_->qpn);
    --st_->node->live_qps;
    st_->send_cq->qps.erase(st_.get());
    st_->recv_cq->qps.erase(st_.get());
    --st_->pd->qps;
    if (st_->srq != nullptr) --st_->srq->qps;
    fabric_->DetachAll(st_->node->index, st_->qpn);
    ++st_->timer_generation;
  }
  std::shared_ptr<Fabric> fabric_;
  std::unique_ptr<QpCore> st_;
  Pd* pd_;
  Cq* send_cq_;
  Cq* recv_cq_;
  QpInitAttr init_;
};

}  // namespace

std::unique_ptr<Qp> NewSimQp(std::shared_ptr<Fabric> fabric,
                             std::unique_ptr<QpCore> state, Pd* pd,
                             Cq* send_cq, Cq* recv_cq,
                             const QpInitAttr& reported) {
  return std::make_unique<SimQp>(std::move(fabric), std::move(state), pd,
                                 send_cq, recv_cq, reported);
}

std::string SimQpDebugString(const Qp* qp) {
  const auto* sim_qp = dynamic_cast<const SimQp*>(qp);
  return sim_qp == nullptr ? std::string() : sim_qp->DebugString();
}

void MarkSimQpCmConnected(Qp* qp) {
  auto* sim_qp = dynamic_cast<SimQp*>(qp);
  if (sim_qp != nullptr) sim_qp->MarkCmConnected();
}

bool GetSimQpState(const Qp* qp, verbsim::QpState* out) {
  const auto* sim_qp = dynamic_cast<const SimQp*>(qp);
  if (sim_qp == nullptr) return false;
  *out = sim_qp->TrueState();
  return true;
}

void DropSimQpConnection(Qp* qp) {
  auto* sim_qp = dynamic_cast<SimQp*>(qp);
  if (sim_qp != nullptr) sim_qp->DropConnection();
}

bool GetSimQpStats(const Qp* qp, SimQpStats* out) {
  const auto* sim_qp = dynamic_cast<const SimQp*>(qp);
  if (sim_qp == nullptr) return false;
  *out = sim_qp->Stats();
  return true;
}

}  // namespace verbsim::sim
