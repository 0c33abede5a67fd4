// The "hw" provider: real RDMA devices through rdma-core (libibverbs for the
// verbs objects, librdmacm for connections). Spec "hw" uses the first device
// where one must be chosen and lists them all; "hw:<device>" names it and
// lists it first, followed only by the other devices of its kind (rxe1 for
// rxe0), so that a test needing two devices gets two of one provider.
//
// Environment: VERBSIM_HW_ADDRESS ("ip" or "ip:port") replaces the address
// LoopbackAddress() derives from the device.
#include "core/provider.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/environment.h"
#include "core/errors.h"
#include "hw/cm.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {
namespace {

constexpr char kNoDevice[] =
    "no RDMA device: run the rxe/siw guest harness (tools/) to test hw";

class HwProvider final : public Provider {
 public:
  explicit HwProvider(std::string device) : device_(std::move(device)) {}

  std::string name() const override {
    return device_.empty() ? "hw" : absl::StrCat("hw:", device_);
  }

  absl::StatusOr<std::vector<std::string>> ListDevices() override {
    if (device_.empty()) return DeviceNames();
    return DevicesLike(device_);
  }

  absl::StatusOr<std::unique_ptr<Context>> Open(
      absl::string_view device) override {
    if (device.empty()) {
      absl::StatusOr<std::string> chosen = DefaultDevice();
      if (!chosen.ok()) return chosen.status();
      return OpenDevice(*chosen);
    }
    return OpenDevice(device);
  }

  absl::StatusOr<std::unique_ptr<Listener>> Listen(
      absl::string_view address, const EndpointAttr& attr) override {
    EndpointAttr a = attr;
    if (a.device.empty()) a.device = device_;
    return CmListen(address, a);
  }

  absl::StatusOr<std::unique_ptr<Endpoint>> Connect(
      absl::string_view address, const EndpointAttr& attr) override {
    EndpointAttr a = attr;
    if (a.device.empty()) a.device = device_;
    if (a.device.empty()) return CmConnect(address, a, nullptr);
    // Leave from the chosen device's address.
    absl::StatusOr<SockAddr> source = DeviceAddress(a.device);
    if (!source.ok()) return source.status();
    return CmConnect(address, a, &*source);
  }

  absl::StatusOr<std::unique_ptr<QpLink>> ConnectQps(
      Qp* a, Qp* b, const EndpointAttr& attr) override {
    return CmConnectQps(a, b, attr);
  }

  absl::StatusOr<std::string> LoopbackAddress() override {
    const std::optional<std::string> env = env::Get(env::kHwAddress);
    absl::StatusOr<SockAddr> addr;
    if (env) {
      addr = ParseAddress(*env, /*port_optional=*/true);
      if (!addr.ok()) {
        return Errno(EINVAL, "%s: %s", env::kHwAddress,
                     addr.status().message());
      }
      if (addr->port() != 0) return *env;
    } else {
      absl::StatusOr<std::string> device = DefaultDevice();
      if (!device.ok()) return device.status();
      addr = DeviceAddress(*device);
      if (!addr.ok()) return addr.status();
    }
    absl::StatusOr<int> port = FreshPort(*addr);
    if (!port.ok()) return port.status();
    addr->set_port(*port);
    return FormatAddress(addr->get());
  }

 private:
  absl::StatusOr<std::string> DefaultDevice() {
    if (!device_.empty()) return device_;
    absl::StatusOr<std::vector<std::string>> names = DeviceNames();
    if (!names.ok()) return names.status();
    if (names->empty()) return Errno(ENODEV, "%s", kNoDevice);
    return names->front();
  }

  std::string device_;
};

absl::StatusOr<std::unique_ptr<Provider>> MakeHwProvider(
    absl::string_view options) {
  if (!options.empty()) {
    absl::StatusOr<std::vector<std::string>> names = DeviceNames();
    if (!names.ok()) return names.status();
    bool found = false;
    for (const std::string& name : *names) found = found || name == options;
    if (!found) {
      return Errno(ENODEV, "hw: no RDMA device named '%s' (%s)", options,
                   names->empty() ? std::string("this machine has none")
                                  : "devices: " + absl::StrJoin(*names, ", "));
    }
  }
  return std::unique_ptr<Provider>(new HwProvider(std::string(options)));
}

[[maybe_unused]] const bool kRegistered =
    RegisterProvider("hw", MakeHwProvider);

}  // namespace
}  // namespace hw
}  // namespace verbsim
