// The "sim" provider: a simulated fabric of N nodes in this process.
// Spec: "sim[:<profile>][,nodes=<n>][,seed=<s>]", e.g. "sim", "sim:rxe",
// "sim:ibta,nodes=4". Devices are "sim0" .. "sim<n-1>"; addresses for
// Listen/Connect are "<device>:<port>".
#ifndef VERBSIM_SIM_SIM_PROVIDER_H_
#define VERBSIM_SIM_SIM_PROVIDER_H_

#include <memory>
#include <string>
#include <vector>

#include "core/provider.h"
#include "sim/fabric.h"

namespace verbsim::sim {

class SimProvider : public Provider {
 public:
  static absl::StatusOr<std::unique_ptr<SimProvider>> Create(
      absl::string_view options);
  explicit SimProvider(FabricOptions options);
  ~SimProvider() override;

  std::string name() const override { return name_; }
  absl::StatusOr<std::vector<std::string>> ListDevices() override;
  absl::StatusOr<std::unique_ptr<Context>> Open(
      absl::string_view device) override;
  absl::StatusOr<std::unique_ptr<Listener>> Listen(
      absl::string_view address, const EndpointAttr& attr) override;
  absl::StatusOr<std::unique_ptr<Endpoint>> Connect(
      absl::string_view address, const EndpointAttr& attr) override;
  absl::StatusOr<std::unique_ptr<QpLink>> ConnectQps(
      Qp* a, Qp* b, const EndpointAttr& attr) override;
  absl::StatusOr<std::string> LoopbackAddress() override;

  // The fabric, for progress control in tests (RunUntilIdle, RunFor, Now).
  Fabric& fabric() { return *fabric_; }

  // Listeners and connection handshakes, shared with the listeners and
  // connections it made (they may outlive it).
  struct CmState;

 private:
  absl::StatusOr<int> DeviceIndex(absl::string_view device) const;
  friend class SimConnectionAccess;

  std::string name_;
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<CmState> cm_;
};

// The sim provider behind a Provider pointer, or null.
SimProvider* AsSimProvider(Provider* provider);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_SIM_PROVIDER_H_
