// Shared receive queues of the "hw" provider, all but posting (hw/post.cc).
#include <algorithm>
#include <cerrno>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/errors.h"
#include "hw/ibv_convert.h"
#include "hw/objects.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {

absl::StatusOr<std::unique_ptr<Srq>> HwPd::CreateSrq(const SrqAttr& attr) {
  if (absl::Status s = Check(); !s.ok()) return s;
  const DeviceAttr& dev = context_->device_attr();
  if (dev.max_srq <= 0) {
    return Errno(EOPNOTSUPP, "CreateSrq: %s has no shared receive queues",
                 dev.name);
  }
  if (attr.max_wr < 1 ||
      attr.max_wr > static_cast<uint32_t>(std::max(dev.max_srq_wr, 0)) ||
      attr.max_sge > static_cast<uint32_t>(std::max(dev.max_srq_sge, 0))) {
    return Errno(EINVAL,
                 "CreateSrq: max_wr %u, max_sge %u outside 1..%d, 0..%d of %s",
                 attr.max_wr, attr.max_sge, dev.max_srq_wr, dev.max_srq_sge,
                 dev.name);
  }
  ibv_srq_init_attr init = {};
  SrqAttrToIbv(attr, &init.attr);
  auto res = std::make_shared<SrqRes>();
  errno = 0;
  res->srq = ibv_create_srq(res_->pd, &init);
  if (res->srq == nullptr) {
    return SysError(errno != 0 ? errno : EOPNOTSUPP,
                    absl::StrFormat("ibv_create_srq(max_wr %u, max_sge %u)",
                                    attr.max_wr, attr.max_sge));
  }
  res->pd = res_;
  return std::unique_ptr<Srq>(new HwSrq(std::move(res), this));
}

absl::Status HwSrq::Destroy() {
  if (res_ == nullptr) return Dead(absl::StrFormat("srq %u", id_));
  // QPs on this SRQ hold its SrqRes: refuse as the kernel would, before a
  // provider library can tear down its ring (see HwCq::Destroy).
  if (res_.use_count() > 1) {
    return Errno(EBUSY, "destroy srq %u: QPs still use it", id_);
  }
  int ret = ibv_destroy_srq(res_->srq);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_destroy_srq(srq %u)", id_));
  }
  res_->srq = nullptr;
  res_.reset();
  return absl::OkStatus();
}

absl::Status HwSrq::Modify(const SrqAttr& attr, uint32_t mask) {
  if (res_ == nullptr) return Dead(absl::StrFormat("srq %u", id_));
  if ((mask & ~static_cast<uint32_t>(kSrqMaxWr | kSrqLimit)) != 0) {
    return Errno(EINVAL, "ModifySrq %u: unknown mask bits 0x%x", id_,
                 mask & ~static_cast<uint32_t>(kSrqMaxWr | kSrqLimit));
  }
  ibv_srq_attr a;
  SrqAttrToIbv(attr, &a);
  int ret = ibv_modify_srq(res_->srq, &a, static_cast<int>(mask));
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_modify_srq(srq %u, max_wr %u, "
                                    "limit %u, mask 0x%x)",
                                    id_, attr.max_wr, attr.srq_limit, mask));
  }
  return absl::OkStatus();
}

absl::StatusOr<SrqAttr> HwSrq::Query() const {
  if (res_ == nullptr) return Dead(absl::StrFormat("srq %u", id_));
  ibv_srq_attr a = {};
  int ret = ibv_query_srq(res_->srq, &a);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_query_srq(srq %u)", id_));
  }
  return SrqAttrFromIbv(a);
}

}  // namespace hw
}  // namespace verbsim
