// Harness for the provider spec ("sim:<profile>,nodes=N,seed=S,...",
// core/provider.h), which comes from VERBSIM_PROVIDER, the drop-in's
// VERBSIM_PROFILE and VERBSIM_NODES, and the CLI's --provider: the input is
// the text after "sim:".
//
// Invariants:
//  - opening never crashes, whatever the bytes, and an accepted spec makes
//    a fabric of 1 to 4096 devices whose addresses are loopback ones (node
//    addresses never leave 127.0.0.0/8);
//  - a refusal is EINVAL (or ENOENT for an unknown profile).
// Specs that name the UDP transport ("udp=", "local=") are skipped: they
// would bind sockets.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/errors.h"
#include "core/provider.h"
#include "sim/sim_provider.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string options(reinterpret_cast<const char*>(data), size);
  if (options.find("udp") != std::string::npos ||
      options.find("local") != std::string::npos) {
    return 0;
  }
  auto provider = verbsim::OpenProvider("sim:" + options);
  if (!provider.ok()) {
    const int err = verbsim::ErrnoOf(provider.status());
    if (err != EINVAL && err != ENOENT) std::abort();
    return 0;
  }
  auto devices = (*provider)->ListDevices();
  if (!devices.ok() || devices->empty() || devices->size() > 4096) std::abort();
  auto* sim = dynamic_cast<verbsim::sim::SimProvider*>(provider->get());
  if (sim == nullptr) std::abort();
  const uint32_t base = sim->fabric().options().address_base;
  const uint32_t last = base + static_cast<uint32_t>(devices->size()) - 1;
  if ((base >> 24) != 127 || (last >> 24) != 127 || last < base) std::abort();
  return 0;
}
