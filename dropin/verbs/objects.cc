// Protection domains, memory regions, CQs, QPs, address handles and SRQs of
// the drop-in libibverbs: each ibv_* object wraps the sim's verbsim object.
// Failures return NULL or the errno, as ibverbs does, with the object state
// unchanged (the sim checks the arguments before it changes anything).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <string>

#include "core/environment.h"
#include "core/errors.h"
#include "dropin/verbs/state.h"

using namespace verbsim;
using namespace verbsim::dropin;

namespace {

template <typename T>
void Erase(std::mutex& mu, std::vector<T*>& v, T* x) {
  std::lock_guard<std::mutex> lock(mu);
  v.erase(std::remove(v.begin(), v.end(), x), v.end());
}

// Access that lets the device write the pages (the kernel's
// ib_access_writable).
bool Writable(int access) {
  return (access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)) != 0;
}

ibv_qp* CreateQp(ibv_pd* pd, ibv_qp_init_attr* in) {
  ObjectUse pd_use = UseObject(pd, ObjectKind::kPd, &pd->handle);
  if (pd_use.error()) return nullptr;
  if (in == nullptr || in->send_cq == nullptr || in->recv_cq == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  // The CQs and the SRQ are looked up in the PD's context.
  ObjectUse send_cq = UseObject(in->send_cq, ObjectKind::kCq,
                                &in->send_cq->handle, pd->context);
  if (send_cq.error()) return nullptr;
  ObjectUse recv_cq = UseObject(in->recv_cq, ObjectKind::kCq,
                                &in->recv_cq->handle, pd->context);
  if (recv_cq.error()) return nullptr;
  ObjectUse srq;
  if (in->srq != nullptr) {
    srq = UseObject(in->srq, ObjectKind::kSrq, &in->srq->handle, pd->context);
    if (srq.error()) return nullptr;
  }
  const int qp_type = RawEnum(in->qp_type);
  if (qp_type != IBV_QPT_RC && qp_type != IBV_QPT_UC && qp_type != IBV_QPT_UD) {
    Unsupported("ibv_create_qp with a QP type other than RC, UC or UD");
    return nullptr;
  }
  QpInitAttr attr;
  attr.send_cq = WrapOf<CqWrap>(in->send_cq)->impl.get();
  attr.recv_cq = WrapOf<CqWrap>(in->recv_cq)->impl.get();
  attr.srq = in->srq ? WrapOf<SrqWrap>(in->srq)->impl.get() : nullptr;
  attr.cap = QpCapFromIbv(in->cap);
  attr.qp_type = static_cast<QpType>(qp_type);
  attr.sq_sig_all = in->sq_sig_all != 0;
  absl::StatusOr<std::unique_ptr<Qp>> qp =
      WrapOf<PdWrap>(pd)->impl->CreateQp(attr);
  if (!qp.ok()) {
    ErrnoFrom(qp.status(), "ibv_create_qp");
    return nullptr;
  }
  auto* w = new QpWrap{};
  std::memset(&w->qpx, 0, sizeof(w->qpx));
  w->impl = *std::move(qp);
  ibv_qp& q = w->qp;
  q.context = pd->context;
  q.qp_context = in->qp_context;
  q.pd = pd;
  q.send_cq = in->send_cq;
  q.recv_cq = in->recv_cq;
  q.srq = in->srq;
  q.handle = RegisterObject(&q, ObjectKind::kQp, pd->context);
  q.qp_num = w->impl->qp_num();
  q.state = IBV_QPS_RESET;
  q.qp_type = in->qp_type;
  pthread_mutex_init(&q.mutex, nullptr);
  pthread_cond_init(&q.cond, nullptr);
  // ibv_create_qp(3): the caps the QP got are returned in the init attr.
  QpCapToIbv(w->impl->init_attr().cap, &in->cap);
  absl::StatusOr<QpAttr> held = w->impl->Query();
  w->held = held.ok() ? held->cap : w->impl->init_attr().cap;
  Ctx* ctx = CtxOf(pd->context);
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->qps.push_back(w);
  return &q;
}

}  // namespace

namespace verbsim::dropin {

// verbs_context::create_qp_ex: an RC, UC or UD QP of a PD, with the
// ibv_wr_* send API when send_ops_flags asks for it (ibv_create_qp_ex(3));
// XRC, RSS, TSO, creation flags and the rest are not covered.
ibv_qp* CreateQpExOp(ibv_context* context, ibv_qp_init_attr_ex* ex) {
  (void)context;
  const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
                         IBV_QP_INIT_ATTR_CREATE_FLAGS;
  if ((ex->comp_mask & ~known) != 0 || ex->pd == nullptr) {
    Unsupported(
        "ibv_create_qp_ex (comp_mask beyond PD, SEND_OPS_FLAGS and "
        "CREATE_FLAGS)");
    return nullptr;
  }
  // No creation flag is supported, as on rxe (rxe_create_qp refuses any);
  // the mask bit with no flag set is accepted.
  if ((ex->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) != 0 &&
      ex->create_flags != 0) {
    Unsupported("ibv_create_qp_ex with create_flags");
    return nullptr;
  }
  const uint64_t ops_known =
      IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
      IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
      IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
      IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW;
  const bool with_ops = (ex->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
  if (with_ops && (ex->send_ops_flags & ~ops_known) != 0) {
    Unsupported(
        "ibv_create_qp_ex with send_ops_flags TSO or ATOMIC_WRITE");
    return nullptr;
  }
  ibv_qp_init_attr attr{};
  attr.qp_context = ex->qp_context;
  attr.send_cq = ex->send_cq;
  attr.recv_cq = ex->recv_cq;
  attr.srq = ex->srq;
  attr.cap = ex->cap;
  attr.qp_type = ex->qp_type;
  attr.sq_sig_all = ex->sq_sig_all;
  ibv_qp* qp = CreateQp(ex->pd, &attr);
  if (qp == nullptr) return nullptr;
  ex->cap = attr.cap;
  if (with_ops) InitQpEx(WrapOf<QpWrap>(qp));
  return qp;
}

}  // namespace verbsim::dropin

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  absl::StatusOr<std::unique_ptr<Pd>> pd = CtxOf(context)->impl->AllocPd();
  if (!pd.ok()) {
    ErrnoFrom(pd.status(), "ibv_alloc_pd");
    return nullptr;
  }
  auto* w = new PdWrap{};
  w->impl = *std::move(pd);
  w->pd.context = context;
  w->pd.handle = RegisterObject(&w->pd, ObjectKind::kPd, context);
  return &w->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  if (int err = BeginDestroy(pd, ObjectKind::kPd, &pd->handle)) {
    return err;
  }
  auto* w = WrapOf<PdWrap>(pd);
  absl::Status s = w->impl->Destroy();
  if (!s.ok()) {
    AbortDestroy(pd);
    return ErrnoFrom(s, "ibv_dealloc_pd");
  }
  Retire(w, pd);
  return 0;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  ObjectUse use = UseObject(pd, ObjectKind::kPd, &pd->handle);
  if (use.error()) return nullptr;
  absl::StatusOr<std::unique_ptr<Mr>> mr =
      WrapOf<PdWrap>(pd)->impl->RegMr(addr, length, access);
  if (!mr.ok()) {
    ErrnoFrom(mr.status(), "ibv_reg_mr");
    return nullptr;
  }
  // The kernel pins the pages once the flags are checked (ib_umem_get):
  // memory the process cannot access, or cannot write when the device may,
  // is refused with EFAULT and nothing is registered.
  if (int err = CheckPinnable(addr, length, Writable(access)); err != 0) {
    (void)(*mr)->Destroy();
    errno = err;
    return nullptr;
  }
  auto* w = new MrWrap{};
  w->impl = *std::move(mr);
  w->mr.context = pd->context;
  w->mr.pd = pd;
  w->mr.addr = w->impl->addr();
  w->mr.length = w->impl->length();
  w->mr.lkey = w->impl->lkey();
  w->mr.rkey = w->impl->rkey();
  w->mr.handle = RegisterObject(&w->mr, ObjectKind::kMr, pd->context);
  return &w->mr;
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  if (iova != reinterpret_cast<uintptr_t>(addr)) {
    Unsupported("ibv_reg_mr_iova2 with an iova other than the address");
    return nullptr;
  }
  // The optional range is the device's to ignore (ibv_reg_mr(3)).
  return ibv_reg_mr(pd, addr, length,
                    static_cast<int>(access & ~IBV_ACCESS_OPTIONAL_RANGE));
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                        int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  if (int err = BeginDestroy(mr, ObjectKind::kMr, &mr->handle)) {
    return err;
  }
  auto* w = WrapOf<MrWrap>(mr);
  absl::Status s = w->impl->Destroy();
  if (!s.ok()) {
    AbortDestroy(mr);
    return ErrnoFrom(s, "ibv_dereg_mr");
  }
  Retire(w, mr);
  return 0;
}

int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length,
                 int access) {
  // rdma-core's own checks of the arguments come first: IBV_REREG_MR_ERR_INPUT
  // with errno EINVAL; what the device refuses is IBV_REREG_MR_ERR_CMD with
  // its errno (verbs.c ibv_rereg_mr, ibv_rereg_mr(3)).
  if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
      ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
      (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
    ErrnoFrom(Errno(EINVAL,
                    "flags 0x%x with access 0x%x, addr %p, length %u: "
                    "unknown flags, a new translation without an address "
                    "or length, or access without CHANGE_ACCESS",
                    flags, access, addr, length),
              "ibv_rereg_mr");
    return IBV_REREG_MR_ERR_INPUT;
  }
  // A device that re-registers nothing says so before the lookup.
  const sim::SimProfile* profile = ProfileOf(mr);
  if (profile != nullptr && !profile->supports_rereg) {
    errno = EOPNOTSUPP;
    return IBV_REREG_MR_ERR_CMD;
  }
  ObjectUse use = UseObject(mr, ObjectKind::kMr, &mr->handle);
  if (use.error()) return IBV_REREG_MR_ERR_CMD;
  ObjectUse pd_use;
  if ((flags & IBV_REREG_MR_CHANGE_PD) && pd != nullptr) {
    pd_use = UseObject(pd, ObjectKind::kPd, &pd->handle, mr->context);
    if (pd_use.error()) return IBV_REREG_MR_ERR_CMD;
  }
  auto* w = WrapOf<MrWrap>(mr);
  if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
    const int new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS)
                               ? access
                               : static_cast<int>(w->impl->access());
    if (int err = CheckPinnable(addr, length, Writable(new_access)); err) {
      errno = err;
      return IBV_REREG_MR_ERR_CMD;
    }
  }
  Pd* new_pd = pd ? WrapOf<PdWrap>(pd)->impl.get() : nullptr;
  absl::Status s = w->impl->Rereg(flags, new_pd, addr, length, access);
  if (!s.ok()) {
    ErrnoFrom(s, "ibv_rereg_mr");
    return IBV_REREG_MR_ERR_CMD;
  }
  if (flags & IBV_REREG_MR_CHANGE_PD) w->mr.pd = pd;
  w->mr.addr = w->impl->addr();
  w->mr.length = w->impl->length();
  w->mr.lkey = w->impl->lkey();
  w->mr.rkey = w->impl->rkey();
  return 0;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  // NULL for a QP made without send_ops_flags, as rdma-core does.
  QpWrap* w = WrapOf<QpWrap>(qp);
  return w->extended ? &w->qpx : nullptr;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context,
                      ibv_comp_channel* channel, int comp_vector) {
  Ctx* ctx = CtxOf(context);
  // The kernel takes the vector as unsigned and refuses any at or past the
  // device's count (uverbs create_cq: comp_vector >= num_comp_vectors).
  if (comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
    if (env::IsOn(env::kDebug)) {
      Warn("ibv_create_cq: comp_vector " + std::to_string(comp_vector) +
           " is not in 0.." + std::to_string(context->num_comp_vectors - 1));
    }
    errno = EINVAL;
    return nullptr;
  }
  ChannelWrap* ch = channel ? WrapOf<ChannelWrap>(channel) : nullptr;
  absl::StatusOr<std::unique_ptr<Cq>> cq =
      ctx->impl->CreateCq(cqe, ch ? ch->impl.get() : nullptr);
  if (!cq.ok()) {
    ErrnoFrom(cq.status(), "ibv_create_cq");
    return nullptr;
  }
  auto* w = new CqWrap{};
  std::memset(&w->cqx, 0, sizeof(w->cqx));
  w->impl = *std::move(cq);
  w->channel = ch;
  w->cq.context = context;
  w->cq.channel = channel;
  w->cq.cq_context = cq_context;
  w->cq.cqe = w->impl->cqe();
  w->cq.handle = RegisterObject(&w->cq, ObjectKind::kCq, context);
  pthread_mutex_init(&w->cq.mutex, nullptr);
  pthread_cond_init(&w->cq.cond, nullptr);
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->cqs.push_back(w);
  return &w->cq;
}

int ibv_destroy_cq(ibv_cq* cq) {
  if (int err = BeginDestroy(cq, ObjectKind::kCq, &cq->handle)) return err;
  auto* w = WrapOf<CqWrap>(cq);
  Ctx* ctx = CtxOf(cq->context);
  absl::Status s = w->impl->Destroy();
  if (!s.ok()) {
    AbortDestroy(cq);
    return ErrnoFrom(s, "ibv_destroy_cq");
  }
  Erase(ctx->mu, ctx->cqs, w);
  if (w->channel != nullptr) {
    // Events of this CQ not yet taken are dropped with it.
    std::lock_guard<std::mutex> lock(w->channel->mu);
    auto& ev = w->channel->events;
    ev.erase(std::remove(ev.begin(), ev.end(), w->impl.get()), ev.end());
  }
  Retire(w, cq);
  return 0;
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  // A device without resize says so before the lookup (libsiw).
  const sim::SimProfile* profile = ProfileOf(cq);
  if (profile != nullptr && !profile->resizes_cq) {
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
  }
  ObjectUse use = UseObject(cq, ObjectKind::kCq, &cq->handle);
  if (use.error()) return use.error();
  auto* w = WrapOf<CqWrap>(cq);
  if (absl::Status s = w->impl->Resize(cqe); !s.ok()) {
    return ErrnoFrom(s, "ibv_resize_cq");
  }
  // ibv_cmd_resize_cq gives the new size back in cq->cqe.
  cq->cqe = w->impl->cqe();
  return 0;
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  return CreateQp(pd, attr);
}

int ibv_destroy_qp(ibv_qp* qp) {
  if (int err = BeginDestroy(qp, ObjectKind::kQp, &qp->handle)) return err;
  auto* w = WrapOf<QpWrap>(qp);
  Ctx* ctx = CtxOf(qp->context);
  absl::Status s = w->impl->Destroy();
  if (!s.ok()) {
    AbortDestroy(qp);
    return ErrnoFrom(s, "ibv_destroy_qp");
  }
  Erase(ctx->mu, ctx->qps, w);
  Retire(w, qp);
  return 0;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* in, int mask) {
  ObjectUse use = UseObject(qp, ObjectKind::kQp, &qp->handle);
  if (use.error()) return use.error();
  const QpAttr attr = QpAttrFromIbv(*in);
  absl::Status s = WrapOf<QpWrap>(qp)->impl->Modify(attr, mask);
  if (!s.ok()) return ErrnoFrom(s, "ibv_modify_qp");
  if (mask & IBV_QP_STATE) qp->state = in->qp_state;
  return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* out, int mask,
                 ibv_qp_init_attr* init) {
  (void)mask;  // every attribute is returned, as providers do
  ObjectUse use = UseObject(qp, ObjectKind::kQp, &qp->handle);
  if (use.error()) return use.error();
  auto* w = WrapOf<QpWrap>(qp);
  absl::StatusOr<QpAttr> a = w->impl->Query();
  if (!a.ok()) return ErrnoFrom(a.status(), "ibv_query_qp");
  QpAttrToIbv(*a, out);
  if (init != nullptr) {
    std::memset(init, 0, sizeof(*init));
    init->qp_context = qp->qp_context;
    init->send_cq = qp->send_cq;
    init->recv_cq = qp->recv_cq;
    init->srq = qp->srq;
    QpCapToIbv(a->cap, &init->cap);  // the kernel answers both from one cap
    init->qp_type = qp->qp_type;
    init->sq_sig_all = w->impl->init_attr().sq_sig_all;
  }
  qp->state = out->qp_state;
  return 0;
}

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  ObjectUse use = UseObject(pd, ObjectKind::kPd, &pd->handle);
  if (use.error()) return nullptr;
  absl::StatusOr<std::unique_ptr<Ah>> ah =
      WrapOf<PdWrap>(pd)->impl->CreateAh(AhAttrFromIbv(*attr));
  if (!ah.ok()) {
    ErrnoFrom(ah.status(), "ibv_create_ah");
    return nullptr;
  }
  auto* w = new AhWrap{};
  w->impl = *std::move(ah);
  w->ah.context = pd->context;
  w->ah.pd = pd;
  w->ah.handle = RegisterObject(&w->ah, ObjectKind::kAh, pd->context);
  return &w->ah;
}

int ibv_destroy_ah(ibv_ah* ah) {
  if (int err = BeginDestroy(ah, ObjectKind::kAh, &ah->handle)) {
    return err;
  }
  auto* w = WrapOf<AhWrap>(ah);
  absl::Status s = w->impl->Destroy();
  if (!s.ok()) {
    AbortDestroy(ah);
    return ErrnoFrom(s, "ibv_destroy_ah");
  }
  Retire(w, ah);
  return 0;
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* in) {
  ObjectUse use = UseObject(pd, ObjectKind::kPd, &pd->handle);
  if (use.error()) return nullptr;
  absl::StatusOr<std::unique_ptr<Srq>> srq =
      WrapOf<PdWrap>(pd)->impl->CreateSrq(SrqAttrFromIbv(in->attr));
  if (!srq.ok()) {
    ErrnoFrom(srq.status(), "ibv_create_srq");
    return nullptr;
  }
  auto* w = new SrqWrap{};
  w->impl = *std::move(srq);
  w->srq.context = pd->context;
  w->srq.srq_context = in->srq_context;
  w->srq.pd = pd;
  w->srq.handle = RegisterObject(&w->srq, ObjectKind::kSrq, pd->context);
  pthread_mutex_init(&w->srq.mutex, nullptr);
  pthread_cond_init(&w->srq.cond, nullptr);
  Ctx* ctx = CtxOf(pd->context);
  std::lock_guard<std::mutex> lock(ctx->mu);
  ctx->srqs.push_back(w);
  return &w->srq;
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* in, int mask) {
  ObjectUse use = UseObject(srq, ObjectKind::kSrq, &srq->handle);
  if (use.error()) return use.error();
  absl::Status s =
      WrapOf<SrqWrap>(srq)->impl->Modify(SrqAttrFromIbv(*in), mask);
  return s.ok() ? 0 : ErrnoFrom(s, "ibv_modify_srq");
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* out) {
  // A device that cannot query an SRQ says so before the lookup (libsiw).
  const sim::SimProfile* profile = ProfileOf(srq);
  if (profile != nullptr && !profile->queries_srq) {
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
  }
  ObjectUse use = UseObject(srq, ObjectKind::kSrq, &srq->handle);
  if (use.error()) return use.error();
  absl::StatusOr<SrqAttr> a = WrapOf<SrqWrap>(srq)->impl->Query();
  if (!a.ok()) return ErrnoFrom(a.status(), "ibv_query_srq");
  SrqAttrToIbv(*a, out);
  return 0;
}

int ibv_destroy_srq(ibv_srq* srq) {
  if (int err = BeginDestroy(srq, ObjectKind::kSrq, &srq->handle)) {
    return err;
  }
  auto* w = WrapOf<SrqWrap>(srq);
  Ctx* ctx = CtxOf(srq->context);
  absl::Status s = w->impl->Destroy();
  if (!s.ok()) {
    AbortDestroy(srq);
    return ErrnoFrom(s, "ibv_destroy_srq");
  }
  Erase(ctx->mu, ctx->srqs, w);
  Retire(w, srq);
  return 0;
}

int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  ObjectUse use = UseObject(qp, ObjectKind::kQp, &qp->handle);
  if (use.error()) return use.error();
  absl::Status s =
      WrapOf<QpWrap>(qp)->impl->AttachMcast(GidFromIbv(*gid), lid);
  return s.ok() ? 0 : ErrnoFrom(s, "ibv_attach_mcast");
}

int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  ObjectUse use = UseObject(qp, ObjectKind::kQp, &qp->handle);
  if (use.error()) return use.error();
  absl::Status s =
      WrapOf<QpWrap>(qp)->impl->DetachMcast(GidFromIbv(*gid), lid);
  return s.ok() ? 0 : ErrnoFrom(s, "ibv_detach_mcast");
}

}  // extern "C"
