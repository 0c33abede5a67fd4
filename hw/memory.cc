// Protection domains, memory regions and memory windows of the "hw"
// provider. (What else a PD makes: QPs and address handles in hw/qp.cc,
// SRQs in hw/srq.cc.)
#include <cerrno>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/errors.h"
#include "core/names.h"
#include "hw/objects.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {
namespace {

// Remote write and remote atomic access need local write too
// (ibv_reg_mr(3)); the device is not asked.
bool LacksLocalWrite(uint32_t access) {
  return (access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
         (access & kAccessLocalWrite) == 0;
}

}  // namespace

// --- Pd ---------------------------------------------------------------------

Context* HwPd::context() const { return context_; }

absl::Status HwPd::Destroy() {
  if (absl::Status s = Check(); !s.ok()) return s;
  int ret = ibv_dealloc_pd(res_->pd);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    "ibv_dealloc_pd: MRs, QPs or AHs still use the pd");
  }
  res_->pd = nullptr;
  res_.reset();
  return absl::OkStatus();
}

// --- Mr ---------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Mr>> HwPd::RegMr(void* addr, size_t length,
                                                uint32_t access) {
  if (absl::Status s = Check(); !s.ok()) return s;
  // Bits verbsim does not name go to the device, which decides: kernel 6.1
  // accepts HUGETLB and rdma-core drops the optional range (bits 20..29),
  // the rest is EINVAL from ib_check_mr_access.
  if (LacksLocalWrite(access)) {
    return Errno(EINVAL, "RegMr: access %s needs LOCAL_WRITE",
                 AccessFlagsName(access));
  }
  if (addr == nullptr && length != 0) {
    return Errno(EINVAL, "RegMr: null address with length %zu", length);
  }
  // A range that wraps goes to the device, which decides (ib_umem_get:
  // EINVAL; siw_umem_get: EFAULT).
  const DeviceAttr& dev = context_->device_attr();
  if (length > dev.max_mr_size) {
    return Errno(EINVAL, "RegMr: length %zu exceeds max_mr_size %u of %s",
                 length, dev.max_mr_size, dev.name);
  }
  auto res = std::make_shared<MrRes>();
  res->mr = ibv_reg_mr(res_->pd, addr, length, static_cast<int>(access));
  if (res->mr == nullptr) {
    return SysError(errno, absl::StrFormat("ibv_reg_mr(%p, %zu, %s)", addr,
                                           length, AccessFlagsName(access)));
  }
  res->pd = res_;
  return std::unique_ptr<Mr>(new HwMr(std::move(res), this, access));
}

absl::Status HwMr::Destroy() {
  if (res_ == nullptr) return Dead(absl::StrFormat("mr lkey 0x%x", lkey_));
  int ret = ibv_dereg_mr(res_->mr);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_dereg_mr(lkey 0x%x)", lkey_));
  }
  res_->mr = nullptr;
  res_.reset();
  return absl::OkStatus();
}

absl::Status HwMr::Rereg(uint32_t flags, Pd* pd, void* addr, size_t length,
                         uint32_t access) {
  if (res_ == nullptr) return Dead(absl::StrFormat("mr lkey 0x%x", lkey_));
  if (flags == 0 || (flags & ~kReregAllKnown) != 0) {
    return Errno(EINVAL, "Rereg mr lkey 0x%x: flags 0x%x (known: 0x%x)", lkey_,
                 flags, kReregAllKnown);
  }
  std::shared_ptr<PdRes> new_pd;
  if (flags & kReregChangePd) {
    auto* hw_pd = dynamic_cast<HwPd*>(pd);
    if (hw_pd == nullptr || hw_pd->res() == nullptr) {
      return Errno(EINVAL, "Rereg mr lkey 0x%x: not a live hw pd", lkey_);
    }
    new_pd = hw_pd->res();
  }
  // Unnamed bits go to the device, as for RegMr.
  if ((flags & kReregChangeAccess) && LacksLocalWrite(access)) {
    return Errno(EINVAL, "Rereg mr lkey 0x%x: access %s needs LOCAL_WRITE",
                 lkey_, AccessFlagsName(access));
  }
  errno = 0;
  int ret = ibv_rereg_mr(res_->mr, static_cast<int>(flags),
                         new_pd != nullptr ? new_pd->pd : nullptr, addr,
                         length, static_cast<int>(access));
  if (ret != 0) {
    // IBV_REREG_MR_ERR_INPUT (-1): bad arguments; the others leave errno.
    const int err = ret == IBV_REREG_MR_ERR_INPUT ? EINVAL
                    : errno != 0                  ? errno
                                                  : EIO;
    return SysError(err, absl::StrFormat("ibv_rereg_mr(lkey 0x%x, flags 0x%x) "
                                         "returned %d",
                                         lkey_, flags, ret));
  }
  ibv_mr* mr = res_->mr;
  lkey_ = mr->lkey;
  rkey_ = mr->rkey;
  if (flags & kReregChangeTranslation) {
    addr_ = addr;
    length_ = length;
  }
  if (flags & kReregChangeAccess) access_ = access;
  if (new_pd != nullptr) {
    res_->pd = std::move(new_pd);
    pd_ = pd;
  }
  return absl::OkStatus();
}

// --- Mw ---------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Mw>> HwPd::AllocMw(MwType type) {
  if (absl::Status s = Check(); !s.ok()) return s;
  if (type != MwType::kType1 && type != MwType::kType2) {
    return Errno(EINVAL, "AllocMw: type %d is neither 1 nor 2",
                 static_cast<int>(type));
  }
  auto res = std::make_shared<MwRes>();
  res->mw = ibv_alloc_mw(res_->pd, static_cast<ibv_mw_type>(type));
  if (res->mw == nullptr) {
    return SysError(errno != 0 ? errno : EOPNOTSUPP,
                    absl::StrFormat("ibv_alloc_mw(type %d)",
                                    static_cast<int>(type)));
  }
  res->pd = res_;
  return std::unique_ptr<Mw>(new HwMw(std::move(res), type, this));
}

absl::Status HwMw::Destroy() {
  if (res_ == nullptr) return Dead(absl::StrFormat("mw rkey 0x%x", rkey_));
  int ret = ibv_dealloc_mw(res_->mw);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_dealloc_mw(rkey 0x%x)", rkey_));
  }
  res_->mw = nullptr;
  res_.reset();
  return absl::OkStatus();
}

}  // namespace hw
}  // namespace verbsim
