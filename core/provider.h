// The provider interface: what differs between the simulated fabric ("sim")
// and real HCAs through rdma-core ("hw"). A provider is chosen at run time by
// a spec string: "sim", "sim:<profile>", "hw", "hw:<device>"; the environment
// variable VERBSIM_PROVIDER points a whole suite at one.
#ifndef VERBSIM_CORE_PROVIDER_H_
#define VERBSIM_CORE_PROVIDER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/endpoint.h"
#include "core/verbs.h"

namespace verbsim {

// The passive side of a connection (rdma_listen(3) / rdma_get_request(3)).
class Listener {
 public:
  virtual ~Listener() = default;
  virtual std::string address() const = 0;
  // Waits up to `timeout` for a connection request and accepts it
  // (rdma_accept(3)); ETIMEDOUT when none came.
  virtual absl::StatusOr<std::unique_ptr<Endpoint>> Accept(
      absl::Duration timeout) = 0;
};

// A connection the CM made between two QPs that existed before it
// (ConnectQps below). Destroying it ends the connection
// (rdma_destroy_id(3)); it may outlive the QPs.
class QpLink {
 public:
  virtual ~QpLink() = default;
};

class Provider {
 public:
  virtual ~Provider() = default;
  // The spec it was opened with, e.g. "sim" or "hw:rxe0".
  virtual std::string name() const = 0;
  // The devices it can open; an empty list means there are none.
  virtual absl::StatusOr<std::vector<std::string>> ListDevices() = 0;
  virtual absl::StatusOr<std::unique_ptr<Context>> Open(
      absl::string_view device) = 0;
  // rdma_listen(3) on an address ("<device>:<port>" on the sim, "ip:port" on
  // hw). EADDRINUSE when taken.
  virtual absl::StatusOr<std::unique_ptr<Listener>> Listen(
      absl::string_view address, const EndpointAttr& attr) = 0;
  // rdma_connect(3): starts the handshake; the endpoint's WaitConnected()
  // completes once the peer accepted. ECONNREFUSED with no listener.
  virtual absl::StatusOr<std::unique_ptr<Endpoint>> Connect(
      absl::string_view address, const EndpointAttr& attr) = 0;
  // Connects RC QPs `a` and `b`, made by hand on devices of this provider
  // and still in RESET, through the connection manager: `a` connects, `b`
  // accepts, each named by its number (rdma_conn_param.qp_num: librdmacm's
  // "external QP" use). Both reach RTS with attr.qp_access and the path
  // `attr` asks for. On iWARP this is the only way to RTS (a QP connected by
  // hand has no TCP socket); it works on every provider. The connection
  // lasts as long as the returned link.
  virtual absl::StatusOr<std::unique_ptr<QpLink>> ConnectQps(
      Qp* a, Qp* b, const EndpointAttr& attr) = 0;
  // A fresh address on which Listen() then Connect() in this process make a
  // loopback connection (between two distinct devices where there are two).
  virtual absl::StatusOr<std::string> LoopbackAddress() = 0;
};

// A connected pair of endpoints on one provider.
struct EndpointPair {
  std::unique_ptr<Endpoint> client;
  std::unique_ptr<Endpoint> server;
};
// Listen, connect, accept and wait: one call for loopback tests.
absl::StatusOr<EndpointPair> CreateConnectedPair(Provider& provider,
                                                 const EndpointAttr& attr = {});

// Registry. Providers register a factory under their name ("sim", "hw"); the
// part of the spec after ':' is passed to it.
using ProviderFactory = std::function<absl::StatusOr<std::unique_ptr<Provider>>(
    absl::string_view options)>;
bool RegisterProvider(absl::string_view name, ProviderFactory factory);
std::vector<std::string> RegisteredProviders();
absl::StatusOr<std::unique_ptr<Provider>> OpenProvider(absl::string_view spec);
// VERBSIM_PROVIDER, or "sim" when unset or empty.
std::string ProviderSpecFromEnv();

}  // namespace verbsim

#endif  // VERBSIM_CORE_PROVIDER_H_
