// Addresses for the "hw" provider's connection setup (see hw/cm.h): parsing
// and printing them, the address of an RDMA device, and a free port.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/errors.h"
#include "hw/cm.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {

int SockAddr::port() const {
  if (storage.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
}

void SockAddr::set_port(int port) {
  const uint16_t p = htons(static_cast<uint16_t>(port));
  if (storage.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = p;
  } else {
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = p;
  }
}

absl::StatusOr<SockAddr> ParseAddress(absl::string_view address,
                                      bool port_optional) {
  absl::string_view host = address;
  absl::string_view port;
  bool has_port = false;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos) {
      return Errno(EINVAL, "address '%s': missing ']'", address);
    }
    host = address.substr(1, close - 1);
    absl::string_view rest = address.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Errno(EINVAL, "address '%s': expected ':port' after ']'",
                     address);
      }
      port = rest.substr(1);
      has_port = true;
    }
  } else if (const size_t colon = address.rfind(':');
             colon != absl::string_view::npos) {
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    has_port = true;
    if (host.find(':') != absl::string_view::npos) {
      return Errno(EINVAL, "address '%s': write an IPv6 address as [addr]:port",
                   address);
    }
  }
  if (!has_port && !port_optional) {
    return Errno(EINVAL, "address '%s' has no port (expected ip:port)",
                 address);
  }
  int port_num = 0;
  if (has_port && (!absl::SimpleAtoi(port, &port_num) || port_num < 0 ||
                   port_num > 65535)) {
    return Errno(EINVAL, "address '%s': port '%s' is not a number 0..65535",
                 address, port);
  }
  const std::string host_str(host);
  SockAddr out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
  if (inet_pton(AF_INET, host_str.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
  } else if (inet_pton(AF_INET6, host_str.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
  } else {
    return Errno(EINVAL, "address '%s': '%s' is not an IPv4 or IPv6 address",
                 address, host);
  }
  out.set_port(port_num);
  return out;
}

std::string FormatAddress(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    return absl::StrFormat("[%s]:%d", text, ntohs(v6->sin6_port));
  }
  const auto* v4 = reinterpret_cast<const sockaddr_in*>(addr);
  inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
  return absl::StrFormat("%s:%d", text, ntohs(v4->sin_port));
}

namespace {

// A synchronous cm_id (no event channel) bound to `addr`; null on failure,
// with errno set.
rdma_cm_id* BindSync(const SockAddr& addr) {
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) != 0) return nullptr;
  SockAddr copy = addr;
  if (rdma_bind_addr(id, copy.get()) != 0) {
    const int err = errno;
    rdma_destroy_id(id);
    errno = err;
    return nullptr;
  }
  return id;
}

}  // namespace

absl::StatusOr<SockAddr> DeviceAddress(absl::string_view device) {
  absl::StatusOr<std::unique_ptr<Context>> context = OpenDevice(device);
  if (!context.ok()) return context.status();
  // RoCE: the GID table holds the IPv4-mapped GIDs of the netdev's addresses.
  // (rxe's table is long and mostly empty: the first entries suffice.)
  for (int port = 1; port <= (*context)->device_attr().phys_port_cnt; ++port) {
    absl::StatusOr<PortAttr> attr = (*context)->QueryPort(port);
    if (!attr.ok()) continue;
    for (int index = 0; index < std::min(attr->gid_tbl_len, 64); ++index) {
      absl::StatusOr<Gid> gid = (*context)->QueryGid(port, index);
      if (!gid.ok()) continue;
      const Gid& g = *gid;
      bool v4_mapped = g[10] == 0xff && g[11] == 0xff;
      for (int i = 0; i < 10 && v4_mapped; ++i) v4_mapped = g[i] == 0;
      if (!v4_mapped) continue;
      SockAddr out;
      auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
      v4->sin_family = AF_INET;
      std::memcpy(&v4->sin_addr, &g[12], 4);
      return out;
    }
  }
  context->reset();
  // iWARP and others: the interface address rdma_cm maps to the device.
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return SysError(errno, "getifaddrs");
  absl::StatusOr<SockAddr> found =
      Errno(ENODEV,
            "RDMA device %s has no IPv4 address (set VERBSIM_HW_ADDRESS to "
            "ip or ip:port)",
            device);
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET ||
        (ifa->ifa_flags & IFF_LOOPBACK) != 0 ||
        (ifa->ifa_flags & IFF_UP) == 0) {
      continue;
    }
    SockAddr addr;
    std::memcpy(&addr.storage, ifa->ifa_addr, sizeof(sockaddr_in));
    addr.set_port(0);
    rdma_cm_id* id = BindSync(addr);
    if (id == nullptr) continue;
    const bool match = id->verbs != nullptr &&
                       device == ibv_get_device_name(id->verbs->device);
    rdma_destroy_id(id);
    if (match) {
      found = addr;
      break;
    }
  }
  freeifaddrs(list);
  return found;
}

absl::StatusOr<int> FreshPort(const SockAddr& addr) {
  SockAddr any = addr;
  any.set_port(0);
  rdma_cm_id* id = BindSync(any);
  if (id == nullptr) {
    return SysError(
        errno, absl::StrFormat("rdma_bind_addr(%s)", FormatAddress(any.get())));
  }
  const int port = ntohs(rdma_get_src_port(id));
  rdma_destroy_id(id);
  return port;
}

}  // namespace hw
}  // namespace verbsim
