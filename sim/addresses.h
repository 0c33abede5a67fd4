// The IPv4 addresses of the sim's nodes.
//
// Node i has the address base + i, and its RoCE GID 0 is the IPv4-mapped
// form ::ffff:<address> (RoCEv2 over IPv4). The default base is 127.0.1.1,
// so sim0 is 127.0.1.1, sim1 127.0.1.2, and so on.
//
// Every node address lies inside the loopback range 127.0.0.0/8. Real
// programs use one address for two things: the device (rdma_cm, the GID)
// and a TCP or UDP side channel of their own (perftest without -R, fabtests,
// ucx_perftest, MPI launchers). On Linux the whole of 127.0.0.0/8 is local,
// so a side channel to a sim address reaches a server bound to 0.0.0.0 on
// this host and never leaves it. A base that would put any node outside
// that range is refused (docs/drop-in.md, "Addresses").
#ifndef VERBSIM_SIM_ADDRESSES_H_
#define VERBSIM_SIM_ADDRESSES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"

namespace verbsim::sim {

// 127.0.1.1, host byte order.
inline constexpr uint32_t kDefaultAddressBase = 0x7f000101u;

// "a.b.c.d" (decimal, four parts, each 0..255) in host byte order; anything
// else is INVALID_ARGUMENT naming the text (callers add the errno and what
// the text was for).
absl::StatusOr<uint32_t> ParseIpv4(absl::string_view text);
std::string Ipv4ToString(uint32_t ip);

// OK when the addresses of `nodes` nodes from `base` all lie in
// 127.0.0.1 .. 127.255.255.254 (the loopback range without its network and
// broadcast addresses); otherwise EINVAL naming the base and the rule.
absl::Status CheckAddressBase(uint32_t base, int nodes);

// Node `node`'s address.
inline uint32_t NodeIpv4(uint32_t base, int node) {
  return base + static_cast<uint32_t>(node);
}

// The index of the node with address `ip` (base + index), or -1 when `ip`
// is below the base or outside 127.0.0.0/8. The caller checks the index
// against its number of nodes.
int NodeOfIpv4(uint32_t base, uint32_t ip);

// ::ffff:<ip>, the GID of a RoCEv2 port with IPv4 address `ip`.
Gid Ipv4MappedGid(uint32_t ip);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_ADDRESSES_H_
