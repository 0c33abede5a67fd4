// rdma_getaddrinfo(3) and rdma_freeaddrinfo(3) for IPv4: a node name or
// dotted address and a numeric port become the source (RAI_PASSIVE) or
// destination address, with the port space and QP type filled in. Errors are
// getaddrinfo(3)'s EAI_* codes, which programs print with gai_strerror.
#include <arpa/inet.h>
#include <netdb.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {
namespace {

sockaddr* NewSin(uint32_t ip_be, uint16_t port_be) {
  auto* sin = static_cast<sockaddr_in*>(std::calloc(1, sizeof(sockaddr_in)));
  if (sin == nullptr) return nullptr;
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = ip_be;
  sin->sin_port = port_be;
  return reinterpret_cast<sockaddr*>(sin);
}

// The IPv4 address of `node` in network order; an EAI_* code on failure.
int Lookup(const char* node, int flags, uint32_t* ip_be) {
  in_addr a;
  if (inet_pton(AF_INET, node, &a) == 1) {
    *ip_be = a.s_addr;
    return 0;
  }
  if (flags & RAI_NUMERICHOST) return EAI_NONAME;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (int err = getaddrinfo(node, nullptr, &hints, &found); err != 0) return err;
  *ip_be = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr.s_addr;
  freeaddrinfo(found);
  return 0;
}

// A copy of an IPv4 address of a hint; false when it is not one.
bool CopyHintAddr(const sockaddr* from, socklen_t len, sockaddr** to,
                  socklen_t* to_len) {
  if (from == nullptr || len == 0) return true;
  if (from->sa_family != AF_INET || len < sizeof(sockaddr_in)) return false;
  const auto* sin = reinterpret_cast<const sockaddr_in*>(from);
  *to = NewSin(sin->sin_addr.s_addr, sin->sin_port);
  if (*to != nullptr) *to_len = sizeof(sockaddr_in);
  return true;
}

// rdma_getaddrinfo with no node and no service: librdmacm answers with the
// hints' flags, family, QP type and port space and copies of their
// addresses (libfabric asks so for an address it already has). Only IPv4
// addresses are covered (EAI_FAMILY otherwise, as with a node).
int FromHints(const rdma_addrinfo& hints, rdma_addrinfo** res) {
  if ((hints.ai_family != 0 && hints.ai_family != AF_INET) ||
      (hints.ai_dst_addr != nullptr && hints.ai_dst_len != 0 &&
       hints.ai_dst_addr->sa_family != AF_INET) ||
      (hints.ai_src_addr != nullptr && hints.ai_src_len != 0 &&
       hints.ai_src_addr->sa_family != AF_INET)) {
    Warn("rdma_getaddrinfo: only IPv4 (AF_INET) is covered; ai_family " +
         std::to_string(hints.ai_family));
    return EAI_FAMILY;
  }
  auto* ai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (ai == nullptr) return EAI_MEMORY;
  ai->ai_flags = hints.ai_flags;
  ai->ai_family = hints.ai_family;
  ai->ai_qp_type = hints.ai_qp_type;
  ai->ai_port_space = hints.ai_port_space;
  CopyHintAddr(hints.ai_dst_addr, hints.ai_dst_len, &ai->ai_dst_addr,
               &ai->ai_dst_len);
  CopyHintAddr(hints.ai_src_addr, hints.ai_src_len, &ai->ai_src_addr,
               &ai->ai_src_len);
  if ((hints.ai_dst_len != 0 && ai->ai_dst_addr == nullptr) ||
      (hints.ai_src_len != 0 && ai->ai_src_addr == nullptr)) {
    rdma_freeaddrinfo(ai);
    return EAI_MEMORY;
  }
  *res = ai;
  return 0;
}

}  // namespace
}  // namespace verbsim::rdmacm

extern "C" {

int rdma_getaddrinfo(const char* node, const char* service,
                     const rdma_addrinfo* hints, rdma_addrinfo** res) {
  using verbsim::rdmacm::NewSin;
  if (res == nullptr) return EAI_NONAME;
  if (node == nullptr && service == nullptr) {
    // As librdmacm: with neither, the answer is the hints themselves.
    if (hints == nullptr) {
      errno = EINVAL;
      return -1;
    }
    return verbsim::rdmacm::FromHints(*hints, res);
  }
  const int flags = hints != nullptr ? hints->ai_flags : 0;
  if (hints != nullptr && hints->ai_family != 0 && hints->ai_family != AF_INET) {
    verbsim::rdmacm::Warn("rdma_getaddrinfo: only IPv4 (AF_INET) is covered; "
                          "ai_family " + std::to_string(hints->ai_family));
    return EAI_FAMILY;
  }
  int ps = hints != nullptr ? hints->ai_port_space : 0;
  int qp_type = hints != nullptr ? hints->ai_qp_type : 0;
  if (ps == 0) ps = qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
  if (qp_type == 0) {
    qp_type = (ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB) ? IBV_QPT_UD : IBV_QPT_RC;
  }
  uint16_t port = 0;
  if (service != nullptr) {
    char* end = nullptr;
    const long p = std::strtol(service, &end, 10);
    if (*service == '\0' || *end != '\0' || p < 0 || p > 65535) {
      verbsim::rdmacm::Warn(std::string("rdma_getaddrinfo: service '") + service +
                            "' is not a port number");
      return EAI_SERVICE;
    }
    port = static_cast<uint16_t>(p);
  }
  uint32_t ip_be;
  if (node != nullptr) {
    if (int err = verbsim::rdmacm::Lookup(node, flags, &ip_be); err != 0) return err;
  } else {
    ip_be = htonl((flags & RAI_PASSIVE) ? INADDR_ANY : INADDR_LOOPBACK);
  }
  auto* ai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (ai == nullptr) return EAI_MEMORY;
  ai->ai_flags = flags;
  ai->ai_family = AF_INET;
  ai->ai_qp_type = qp_type;
  ai->ai_port_space = ps;
  sockaddr* addr = NewSin(ip_be, htons(port));
  if (addr == nullptr) {
    std::free(ai);
    return EAI_MEMORY;
  }
  if (flags & RAI_PASSIVE) {
    ai->ai_src_addr = addr;
    ai->ai_src_len = sizeof(sockaddr_in);
  } else {
    ai->ai_dst_addr = addr;
    ai->ai_dst_len = sizeof(sockaddr_in);
    if (hints != nullptr && hints->ai_src_addr != nullptr &&
        hints->ai_src_addr->sa_family == AF_INET) {
      const auto* src = reinterpret_cast<const sockaddr_in*>(hints->ai_src_addr);
      ai->ai_src_addr = NewSin(src->sin_addr.s_addr, src->sin_port);
      ai->ai_src_len = ai->ai_src_addr != nullptr ? sizeof(sockaddr_in) : 0;
    }
  }
  *res = ai;
  return 0;
}

void rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res != nullptr) {
    rdma_addrinfo* next = res->ai_next;
    std::free(res->ai_src_addr);
    std::free(res->ai_dst_addr);
    std::free(res->ai_src_canonname);
    std::free(res->ai_dst_canonname);
    std::free(res->ai_route);
    std::free(res->ai_connect);
    std::free(res);
    res = next;
  }
}

}  // extern "C"
