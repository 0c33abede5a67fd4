// The RDMA devices of this machine for the "hw" provider: listing them,
// opening one (or wrapping the ibv_context of an rdma_cm id) as a Context,
// and what the device tells of itself.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/errors.h"
#include "hw/ibv_convert.h"
#include "hw/objects.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {
namespace {

// max_inline_data is not among the attributes ibv_query_device(3) reports;
// the device tells it only through the caps ibv_create_qp(3) accepts and
// returns. Binary search with small RC QPs.
int ProbeMaxInlineData(ibv_context* ctx) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (pd == nullptr) return 0;
  ibv_cq* cq = ibv_create_cq(ctx, 1, nullptr, nullptr, 0);
  if (cq == nullptr) {
    ibv_dealloc_pd(pd);
    return 0;
  }
  // Creates a QP asking for `size` inline bytes; *granted is what the
  // device gave (at least `size`).
  auto fits = [&](uint32_t size, uint32_t* granted) {
    ibv_qp_init_attr init = {};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 1;
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = size;
    ibv_qp* qp = ibv_create_qp(pd, &init);
    if (qp == nullptr) return false;
    *granted = init.cap.max_inline_data;
    ibv_destroy_qp(qp);
    return true;
  };
  uint32_t granted = 0;
  uint32_t lo = 0;         // known to fit
  uint32_t hi = 1u << 16;  // not known to fit until tried
  if (fits(0, &granted)) {
    lo = std::min(granted, hi - 1);
    if (fits(hi, &granted)) {
      lo = granted;
      hi = lo + 1;
    }
    while (hi - lo > 1) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (fits(mid, &granted)) {
        lo = std::min(std::max(mid, granted), hi - 1);
      } else {
        hi = mid;
      }
    }
  }
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  return static_cast<int>(std::min<uint32_t>(lo, INT_MAX));
}

absl::StatusOr<DeviceAttr> QueryDeviceAttr(ibv_context* ctx) {
  const std::string name = ibv_get_device_name(ctx->device);
  ibv_device_attr da = {};
  int ret = ibv_query_device(ctx, &da);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_query_device(%s)", name));
  }
  // The probe costs a few QP creations: do it once per device and process.
  static absl::Mutex mu(absl::kConstInit);
  static auto* inline_cache = new std::map<std::string, int>();
  int max_inline = 0;
  {
    absl::MutexLock lock(&mu);
    const std::string key = absl::StrCat(name, "/", da.node_guid);
    auto it = inline_cache->find(key);
    if (it == inline_cache->end()) {
      it = inline_cache->emplace(key, ProbeMaxInlineData(ctx)).first;
    }
    max_inline = it->second;
  }
  DeviceAttr a = DeviceAttrFromIbv(da);
  a.name = name;
  a.node_type = ctx->device->node_type;
  a.max_inline_data = max_inline;
  return a;
}

// Builds a Context over `ctx`; closes it on failure when `owned`.
absl::StatusOr<std::unique_ptr<Context>> MakeContext(ibv_context* ctx,
                                                     bool owned,
                                                     std::shared_ptr<CmId> cm) {
  auto res = std::make_shared<DeviceRes>();
  res->ctx = ctx;
  res->owned = owned;
  res->cm = std::move(cm);
  absl::StatusOr<DeviceAttr> attr = QueryDeviceAttr(ctx);
  if (!attr.ok()) return attr.status();  // res closes what it owns
  res->name = attr->name;
  return std::unique_ptr<Context>(new HwContext(std::move(res), *attr));
}

// ibv_get_device_list, with "no RDMA in this kernel" (NULL with ENOSYS, or
// ENODEV) as an empty list.
absl::StatusOr<std::vector<ibv_device*>> DeviceList(ibv_device*** list) {
  int num = 0;
  errno = 0;
  *list = ibv_get_device_list(&num);
  if (*list == nullptr) {
    if (errno == ENOSYS || errno == ENODEV || errno == ENOENT || errno == 0) {
      return std::vector<ibv_device*>();
    }
    return SysError(errno, "ibv_get_device_list");
  }
  return std::vector<ibv_device*>(*list, *list + std::max(num, 0));
}

// The device called `name` among `devices`, or null; `names` gets the names
// of them all.
ibv_device* FindDevice(const std::vector<ibv_device*>& devices,
                       absl::string_view name,
                       std::vector<std::string>* names) {
  ibv_device* found = nullptr;
  for (ibv_device* device : devices) {
    names->push_back(ibv_get_device_name(device));
    if (names->back() == name) found = device;
  }
  return found;
}

absl::Status NoSuchDevice(absl::string_view name,
                          const std::vector<std::string>& names) {
  return Errno(ENODEV, "no RDMA device named '%s' (%s)", name,
               names.empty() ? std::string("this machine has none")
                             : "devices: " + absl::StrJoin(names, ", "));
}

}  // namespace

CmId::~CmId() {
  if (id != nullptr) rdma_destroy_id(id);
  if (channel != nullptr) rdma_destroy_event_channel(channel);
}

absl::StatusOr<std::vector<std::string>> DeviceNames() {
  ibv_device** list = nullptr;
  absl::StatusOr<std::vector<ibv_device*>> devices = DeviceList(&list);
  if (!devices.ok()) return devices.status();
  std::vector<std::string> names;
  for (ibv_device* device : *devices) {
    names.push_back(ibv_get_device_name(device));
  }
  if (list != nullptr) ibv_free_device_list(list);
  return names;
}

absl::StatusOr<std::vector<std::string>> DevicesLike(absl::string_view name) {
  ibv_device** list = nullptr;
  absl::StatusOr<std::vector<ibv_device*>> devices = DeviceList(&list);
  if (!devices.ok()) return devices.status();
  // What tells two devices of one driver apart from others: the transport
  // and the vendor id (ibv_query_device needs an open context). Not the part
  // id: siw numbers its devices with it (siw_main.c, vendor_part_id =
  // dev_id++).
  struct Kind {
    int transport = -1;
    uint32_t vendor_id = 0;
    bool known = false;
    bool operator==(const Kind& o) const {
      return known && o.known && transport == o.transport &&
             vendor_id == o.vendor_id;
    }
  };
  auto kind_of = [](ibv_device* device) {
    Kind kind;
    kind.transport = static_cast<int>(device->transport_type);
    ibv_context* ctx = ibv_open_device(device);
    if (ctx == nullptr) return kind;
    ibv_device_attr attr = {};
    if (ibv_query_device(ctx, &attr) == 0) {
      kind.vendor_id = attr.vendor_id;
      kind.known = true;
    }
    ibv_close_device(ctx);
    return kind;
  };
  std::vector<std::string> names;
  ibv_device* chosen = FindDevice(*devices, name, &names);
  if (chosen == nullptr) {
    if (list != nullptr) ibv_free_device_list(list);
    return NoSuchDevice(name, names);
  }
  const Kind want = kind_of(chosen);
  std::vector<std::string> out = {std::string(name)};
  for (ibv_device* device : *devices) {
    if (device == chosen) continue;
    if (kind_of(device) == want) out.push_back(ibv_get_device_name(device));
  }
  ibv_free_device_list(list);
  return out;
}

absl::StatusOr<std::unique_ptr<Context>> OpenDevice(absl::string_view name) {
  ibv_device** list = nullptr;
  absl::StatusOr<std::vector<ibv_device*>> devices = DeviceList(&list);
  if (!devices.ok()) return devices.status();
  std::vector<std::string> names;
  ibv_device* found = FindDevice(*devices, name, &names);
  if (found == nullptr) {
    if (list != nullptr) ibv_free_device_list(list);
    return NoSuchDevice(name, names);
  }
  ibv_context* ctx = ibv_open_device(found);
  const int err = errno;
  ibv_free_device_list(list);  // an opened context stays valid
  if (ctx == nullptr) {
    return SysError(err, absl::StrFormat("ibv_open_device(%s)", name));
  }
  return MakeContext(ctx, /*owned=*/true, nullptr);
}

absl::StatusOr<std::unique_ptr<Context>> WrapCmContext(
    std::shared_ptr<CmId> cm) {
  if (cm == nullptr || cm->id == nullptr || cm->id->verbs == nullptr) {
    return Errno(EINVAL, "the cm_id is not bound to an RDMA device");
  }
  ibv_context* ctx = cm->id->verbs;
  return MakeContext(ctx, /*owned=*/false, std::move(cm));
}

}  // namespace hw
}  // namespace verbsim
