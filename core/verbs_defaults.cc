// The defaults of verbs a provider may not implement: EOPNOTSUPP, naming the
// verb.
#include "core/errors.h"
#include "core/verbs.h"

namespace verbsim {

absl::Status Mr::Rereg(uint32_t, Pd*, void*, size_t, uint32_t) {
  return Errno(EOPNOTSUPP, "ibv_rereg_mr is not supported by this provider");
}

absl::Status Cq::Resize(int) {
  return Errno(EOPNOTSUPP, "ibv_resize_cq is not supported by this provider");
}

absl::Status Qp::BindMw(Mw*, const MwBind&) {
  return Errno(EOPNOTSUPP, "ibv_bind_mw is not supported by this provider");
}

absl::Status Qp::AttachMcast(const Gid&, uint16_t) {
  return Errno(EOPNOTSUPP,
               "ibv_attach_mcast is not supported by this provider");
}

absl::Status Qp::DetachMcast(const Gid&, uint16_t) {
  return Errno(EOPNOTSUPP,
               "ibv_detach_mcast is not supported by this provider");
}

absl::StatusOr<QpCounters> Qp::QueryCounters() const {
  return Errno(EOPNOTSUPP, "this provider keeps no per-QP counters");
}

absl::StatusOr<std::unique_ptr<Mw>> Pd::AllocMw(MwType) {
  return Errno(EOPNOTSUPP, "ibv_alloc_mw is not supported by this provider");
}

absl::StatusOr<std::unique_ptr<Srq>> Pd::CreateSrq(const SrqAttr&) {
  return Errno(EOPNOTSUPP,
               "ibv_create_srq is not supported by this provider");
}

}  // namespace verbsim
