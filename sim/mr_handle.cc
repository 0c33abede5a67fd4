// Memory regions: the handle (deregistration, re-registration, its
// attributes) and ibv_reg_mr(3)'s checks of the access flags and the range.
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/names.h"
#include "sim/handle_factories.h"
#include "sim/keys.h"

namespace verbsim::sim {
namespace {

using Lock = Fabric::Lock;

// ibv_reg_mr(3)'s checks of the access flags, shared by RegMr and Rereg.
absl::Status CheckMrAccess(const SimProfile& profile, uint32_t access) {
  if (access & ~(kAccessAllKnown | profile.ignored_access_bits)) {
    return Errno(EINVAL, "access 0x%x has unknown bits", access);
  }
  // ibv_reg_mr(3): remote write or atomic access needs local write.
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) &&
      !(access & kAccessLocalWrite)) {
    return Errno(EINVAL, "access %s needs LOCAL_WRITE with remote write or atomic",
                 AccessFlagsName(access));
  }
  if ((access & kAccessZeroBased) && !profile.accepts_zero_based) {
    return Errno(EINVAL, "access ZERO_BASED needs ibv_reg_mr_iova");
  }
  if (access & kAccessOnDemand) {
    return Errno(profile.on_demand_errno,
                 "access ON_DEMAND: the device has no on-demand paging");
  }
  return absl::OkStatus();
}

// ibv_reg_mr(3)'s checks of the range.
absl::Status CheckMrRange(const SimProfile& profile, const void* addr,
                          size_t length) {
  const DeviceAttr& dev = profile.device;
  if (length == 0) {
    // x86's page size, as the kernel's ib_umem_get counts pages.
    constexpr uint64_t kPage = 4096;
    const bool inside_a_page = reinterpret_cast<uint64_t>(addr) % kPage != 0;
    if (profile.zero_length_mr == ZeroLengthMr::kRefused) {
      return Errno(EINVAL, "length 0: the device registers no empty region");
    }
    if (!inside_a_page) {
      return Errno(EINVAL, "length 0 at %p: an empty region at a page "
                   "boundary touches no page", addr);
    }
  }
  if (addr == nullptr && length > 0) {
    return Errno(EINVAL, "null address with length %zu", length);
  }
  const uint64_t start = reinterpret_cast<uint64_t>(addr);
  if (start + length < start) {
    return Errno(profile.wrapping_range_errno,
                 "range [0x%x, +%zu) wraps the address space", start, length);
  }
  if (length > dev.max_mr_size) {
    return Errno(EINVAL, "length %zu exceeds max_mr_size", length);
  }
  return absl::OkStatus();
}

class SimMr : public Mr {
 public:
  SimMr(std::shared_ptr<Fabric> fabric, std::shared_ptr<MrState> st, Pd* pd)
      : fabric_(std::move(fabric)), st_(std::move(st)), pd_(pd) {}
  const std::shared_ptr<MrState>& state() const { return st_; }
  ~SimMr() override {
    Lock lock(*fabric_);
    Release();
  }
  absl::Status Destroy() override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "mr lkey 0x%x is already deregistered", st_->lkey);
    if (st_->mws_bound > 0) {
      return Errno(fabric_->profile().dereg_bound_mr_errno,
                   "mr lkey 0x%x has %d memory windows bound", st_->lkey,
                   st_->mws_bound);
    }
    Release();
    return absl::OkStatus();
  }
  absl::Status Rereg(uint32_t flags, Pd* pd, void* addr, size_t length,
                     uint32_t access) override {
    Lock lock(*fabric_);
    if (st_->dead) return Errno(EINVAL, "mr lkey 0x%x is deregistered", st_->lkey);
    if (!fabric_->profile().supports_rereg) {
      return Errno(EOPNOTSUPP, "ibv_rereg_mr: %s has no re-registration",
                   fabric_->profile().name);
    }
    if (flags & ~kReregAllKnown) {
      return Errno(EINVAL, "rereg flags 0x%x has unknown bits", flags);
    }
    // libibverbs: access is given only with CHANGE_ACCESS.
    if (access != 0 && !(flags & kReregChangeAccess)) {
      return Errno(EINVAL, "rereg access 0x%x without CHANGE_ACCESS", access);
    }
    if (st_->mws_bound > 0) {
      return Errno(EBUSY, "mr lkey 0x%x has %d memory windows bound",
                   st_->lkey, st_->mws_bound);
    }
    std::shared_ptr<PdState> new_pd = st_->pd;
    if (flags & kReregChangePd) {
      new_pd = PdStateOf(pd);
      if (new_pd == nullptr) {
        return Errno(EINVAL, "rereg CHANGE_PD to a PD of another provider");
      }
      if (new_pd->dead) return Errno(EINVAL, "rereg CHANGE_PD to a destroyed PD");
      if (new_pd->context != st_->pd->context) {
        return Errno(EINVAL, "rereg CHANGE_PD to a PD of another context");
      }
    }
    if (flags & kReregChangeTranslation) {
      // ibv_rereg_mr(3): a new translation needs an address and a length.
      if (addr == nullptr || length == 0) {
        return Errno(EINVAL, "rereg CHANGE_TRANSLATION needs an address and "
                     "a length (got %p, %zu)", addr, length);
      }
      if (absl::Status s = CheckMrRange(fabric_->profile(), addr, length);
          !s.ok()) {
        return s;
      }
    }
    if (flags & kReregChangeAccess) {
      if (absl::Status s = CheckMrAccess(fabric_->profile(), access); !s.ok()) {
        return s;
      }
    }
    // Applied only once every argument passed.
    if (flags & kReregChangePd) {
      --st_->pd->mrs;
      st_->pd = new_pd;
      ++new_pd->mrs;
      pd_ = pd;
    }
    if (flags & kReregChangeTranslation) {
      st_->addr = reinterpret_cast<uint64_t>(addr);
      st_->length = length;
    }
    if (flags & kReregChangeAccess) st_->access = access;
    st_->node->keys.NoteChange();
    // The keys stay (rdma-unit-test ReregMrChangeAccess: the old rkey still
    // works); what they grant is the new PD, range and access.
    return absl::OkStatus();
  }
  void* addr() const override {
    Lock lock(*fabric_);
    return reinterpret_cast<void*>(st_->addr);
  }
  uint64_t length() const override {
    Lock lock(*fabric_);
    return st_->length;
  }
  uint32_t lkey() const override {
    Lock lock(*fabric_);
    return st_->lkey;
  }
  uint32_t rkey() const override {
    Lock lock(*fabric_);
    return st_->rkey;
  }
  uint32_t access() const override {
    Lock lock(*fabric_);
    return st_->access;
  }
  Pd* pd() const override {
    Lock lock(*fabric_);
    return pd_;
  }

 private:
  void Release() {
    if (st_->dead) return;
    st_->dead = true;
    st_->node->keys.Remove(*st_);
    --st_->pd->mrs;
  }
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<MrState> st_;
  Pd* pd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Mr>> RegisterSimMr(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, void* addr, size_t length, uint32_t access) {
  if (pd->dead) return Errno(EINVAL, "pd %u is destroyed", pd->id);
  Node* node = pd->context->node;
  const SimProfile& profile = fabric->profile();
  const DeviceAttr& dev = profile.device;
  if (absl::Status s = CheckMrAccess(profile, access); !s.ok()) return s;
  if (absl::Status s = CheckMrRange(profile, addr, length); !s.ok()) return s;
  const uint64_t start = reinterpret_cast<uint64_t>(addr);
  if (fabric->RegistrationFaultDue(node->index)) {
    return Errno(ENOMEM, "injected fault: registration %zu bytes at 0x%x fails",
                 length, start);
  }
  if (node->keys.live() >= static_cast<size_t>(dev.max_mr)) {
    return Errno(profile.limit_errno.mr, "max_mr %d reached", dev.max_mr);
  }
  auto mr = std::make_shared<MrState>();
  mr->node = node;
  mr->pd = pd;
  mr->addr = start;
  mr->length = length;
  mr->access = access;
  node->keys.Insert(mr);
  ++pd->mrs;
  return std::unique_ptr<Mr>(new SimMr(fabric, mr, pd_handle));
}

std::shared_ptr<MrState> MrStateOf(Mr* mr) {
  auto* sim_mr = dynamic_cast<SimMr*>(mr);
  return sim_mr == nullptr ? nullptr : sim_mr->state();
}

}  // namespace verbsim::sim
