// Internal to the "hw" provider: connection setup through librdmacm.
//
// An endpoint's QP is an ordinary QP of the hw provider, created with
// Endpoint::Create on a Context that wraps the cm_id's ibv_context, and
// given to rdma_cm by number (rdma_conn_param.qp_num): the "external QP" use
// of librdmacm. Its transitions come from rdma_init_qp_attr(3) and are applied
// with ibv_modify_qp, as librdmacm itself does for a QP it owns:
//   active RC (IB/RoCE): INIT before rdma_connect; RTR and RTS on
//     RDMA_CM_EVENT_CONNECT_RESPONSE, then rdma_establish(3).
//   passive RC (IB/RoCE): INIT, RTR, RTS on the connect request, then
//     rdma_accept; RDMA_CM_EVENT_ESTABLISHED follows.
//   RC on iWARP: INIT only; the kernel's iw_cm moves the QP to RTS.
//   UD: INIT from rdma_cm, RTR and RTS by hand (as librdmacm's
//     ucma_init_ud_qp), then SIDR through rdma_connect / rdma_accept.
#ifndef VERBSIM_HW_CM_H_
#define VERBSIM_HW_CM_H_

#include <sys/socket.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/endpoint.h"
#include "core/provider.h"

namespace verbsim {
namespace hw {

// An IPv4 or IPv6 socket address.
struct SockAddr {
  sockaddr_storage storage = {};
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
  const sockaddr* get() const {
    return reinterpret_cast<const sockaddr*>(&storage);
  }
  int port() const;
  void set_port(int port);
};

// "a.b.c.d:port" or "[v6]:port"; without ":port" only if `port_optional`
// (port 0 then).
absl::StatusOr<SockAddr> ParseAddress(absl::string_view address,
                                      bool port_optional = false);
std::string FormatAddress(const sockaddr* addr);

// The address of an RDMA device: an IPv4-mapped GID of one of its ports, or
// else the first IPv4 address of a non-loopback interface that rdma_cm binds
// to that device (rdma_bind_addr(3)). Port 0.
absl::StatusOr<SockAddr> DeviceAddress(absl::string_view device);

// A port free at this moment on `addr`'s host (rdma_bind_addr to port 0).
absl::StatusOr<int> FreshPort(const SockAddr& addr);

// rdma_listen(3) on `address` ("ip:port").
absl::StatusOr<std::unique_ptr<Listener>> CmListen(absl::string_view address,
                                                   const EndpointAttr& attr);

// rdma_resolve_addr/route and rdma_connect(3) to `address`, from `source`
// when not null.
absl::StatusOr<std::unique_ptr<Endpoint>> CmConnect(absl::string_view address,
                                                    const EndpointAttr& attr,
                                                    const SockAddr* source);

// Provider::ConnectQps on hw: two existing RC QPs (each in RESET, on its
// own device or both on one) connected through rdma_cm as librdmacm's
// external QPs, in this thread: listen on b's device address at a port the
// kernel picks, connect from a's device address, accept.
absl::StatusOr<std::unique_ptr<QpLink>> CmConnectQps(Qp* a, Qp* b,
                                                     const EndpointAttr& attr);

}  // namespace hw
}  // namespace verbsim

#endif  // VERBSIM_HW_CM_H_
