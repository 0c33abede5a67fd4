// ibv_init_ah_from_wc(3) and ibv_create_ah_from_wc(3): the address handle
// that answers a received UD datagram, from its work completion and the
// 40 bytes the receive put first in its buffer.
//
// On RoCEv2 over IPv4 (every sim node's GID is IPv4-mapped) those 40 bytes
// are 20 unused bytes and then the packet's IPv4 header, as rxe writes them
// (docs/semantics.md section 5); otherwise they are an IPv6-format GRH. The
// reply goes to the sender's address from our GID that it was sent to.
#include <cerrno>
#include <cstring>

#include "dropin/verbs/state.h"

namespace {

// Whether the last 20 bytes are an IPv4 header (version 4, IHL 5, a valid
// checksum) after 20 unused ones, as on RoCEv2 over IPv4.
bool IsIpv4Grh(const uint8_t* g) {
  const uint8_t* ip = g + 20;
  if (ip[0] != 0x45) return false;
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += (ip[i] << 8) | ip[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

void MappedGid(const uint8_t* ipv4, ibv_gid* gid) {
  std::memset(gid, 0, sizeof(*gid));
  gid->raw[10] = gid->raw[11] = 0xff;
  std::memcpy(&gid->raw[12], ipv4, 4);
}

}  // namespace

extern "C" {

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc,
                        ibv_grh* grh, ibv_ah_attr* ah_attr) {
  if (context == nullptr || wc == nullptr || ah_attr == nullptr) {
    errno = EINVAL;
    return EINVAL;
  }
  std::memset(ah_attr, 0, sizeof(*ah_attr));
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port_num;
  if (!(wc->wc_flags & IBV_WC_GRH)) return 0;
  if (grh == nullptr) {
    errno = EINVAL;
    return EINVAL;
  }
  const auto* g = reinterpret_cast<const uint8_t*>(grh);
  ibv_gid ours;
  ah_attr->is_global = 1;
  if (IsIpv4Grh(g)) {
    MappedGid(g + 20 + 12, &ah_attr->grh.dgid);  // the sender
    MappedGid(g + 20 + 16, &ours);
    ah_attr->grh.traffic_class = g[20 + 1];
  } else {
    ah_attr->grh.dgid = grh->sgid;
    ours = grh->dgid;
    const uint32_t vtf = be32toh(grh->version_tclass_flow);
    ah_attr->grh.flow_label = vtf & 0xfffff;
    ah_attr->grh.traffic_class = (vtf >> 20) & 0xff;
  }
  ah_attr->grh.hop_limit = 0xff;
  // The GID index of the address the datagram was sent to (ibv_query_gid
  // fails past the end of the table).
  ibv_gid gid;
  for (int i = 0; i < 256 && ibv_query_gid(context, port_num, i, &gid) == 0; ++i) {
    if (std::memcmp(&gid, &ours, sizeof(gid)) == 0) {
      ah_attr->grh.sgid_index = static_cast<uint8_t>(i);
      return 0;
    }
  }
  errno = ENOENT;  // sent to a GID this port does not have
  return ENOENT;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh,
                              uint8_t port_num) {
  if (pd == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_ah_attr attr;
  if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0) {
    return nullptr;
  }
  return ibv_create_ah(pd, &attr);
}

}  // extern "C"
