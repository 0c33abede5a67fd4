// Memory windows of the drop-in libibverbs (ibv_alloc_mw(3), ibv_bind_mw(3),
// ibv_dealloc_mw(3)): the context ops the header's inline verbs call, over
// the sim's windows (core/verbs.h Mw). The header checks a type 1 bind's
// window type, region and PD before calling in; the sim makes the rest of
// the checks, at the bind (EINVAL, ENOMEM) or as it executes (MW_BIND_ERR).
// A device without windows (max_mw 0: siw) refuses the allocation with
// EOPNOTSUPP, as libibverbs does for a provider that has no alloc_mw.
#include <cerrno>

#include "dropin/verbs/state.h"

namespace verbsim::dropin {

ibv_mw* AllocMwOp(ibv_pd* pd, ibv_mw_type type) {
  // A provider without windows has no alloc_mw: libibverbs answers before
  // anything is looked up.
  if (CtxOf(pd->context)->impl->device_attr().max_mw == 0) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  ObjectUse use = UseObject(pd, ObjectKind::kPd, &pd->handle);
  if (use.error()) return nullptr;
  absl::StatusOr<std::unique_ptr<Mw>> mw =
      WrapOf<PdWrap>(pd)->impl->AllocMw(static_cast<MwType>(RawEnum(type)));
  if (!mw.ok()) {
    ErrnoFrom(mw.status(), "ibv_alloc_mw");
    return nullptr;
  }
  auto* w = new MwWrap{};
  w->impl = *std::move(mw);
  w->mw.context = pd->context;
  w->mw.pd = pd;
  w->mw.rkey = w->impl->rkey();
  w->mw.type = type;
  w->mw.handle = RegisterObject(&w->mw, ObjectKind::kMw, pd->context);
  return &w->mw;
}

int DeallocMwOp(ibv_mw* mw) {
  if (int err = BeginDestroy(mw, ObjectKind::kMw, &mw->handle)) return err;
  auto* w = WrapOf<MwWrap>(mw);
  absl::Status s = w->impl->Destroy();
  if (!s.ok()) {
    AbortDestroy(mw);
    return ErrnoFrom(s, "ibv_dealloc_mw");
  }
  Retire(w, mw);
  return 0;
}

Mw* LiveMw(ibv_mw* mw, const ibv_context* context, ObjectUse* use) {
  *use = UseObject(mw, ObjectKind::kMw, nullptr, context);
  return use->error() ? nullptr : WrapOf<MwWrap>(mw)->impl.get();
}

Mr* LiveMr(ibv_mr* mr, const ibv_context* context, ObjectUse* use) {
  if (mr == nullptr) return nullptr;
  *use = UseObject(mr, ObjectKind::kMr, nullptr, context);
  return use->error() ? nullptr : WrapOf<MrWrap>(mr)->impl.get();
}

// ibv_bind_mw(3): a type 1 bind through `qp`'s send queue. The window's new
// rkey is known at once (ibv_inc_rkey of the old one); the bind completes
// on the send CQ.
int BindMwOp(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
  ObjectUse qp_use = UseObject(qp, ObjectKind::kQp, &qp->handle);
  if (qp_use.error()) return qp_use.error();
  ObjectUse mw_use, mr_use;
  Mw* window = LiveMw(mw, qp->context, &mw_use);
  if (window == nullptr) return mw_use.error();
  const ibv_mw_bind_info& info = bind->bind_info;
  MwBind b;
  b.wr_id = bind->wr_id;
  b.send_flags = bind->send_flags;
  b.current_rkey = mw->rkey;
  b.bind_info.mr = LiveMr(info.mr, qp->context, &mr_use);
  if (info.mr != nullptr && b.bind_info.mr == nullptr) return mr_use.error();
  b.bind_info.addr = info.addr;
  b.bind_info.length = info.length;
  b.bind_info.mw_access_flags = info.mw_access_flags;
  absl::Status s = WrapOf<QpWrap>(qp)->impl->BindMw(window, b);
  if (!s.ok()) return ErrnoFrom(s, "ibv_bind_mw");
  mw->rkey = window->rkey();
  return 0;
}

}  // namespace verbsim::dropin
