// Harness for the VERBSIM_* variables' values (docs/environment.md): the
// first byte picks a variable, the rest is its value (up to the first NUL,
// which no environment value can hold), set with setenv and read by the
// code that reads it in a program:
//  - VERBSIM_SEED, VERBSIM_FAULTS, VERBSIM_ADDR_BASE: opening a sim
//    provider (sim/sim_provider.cc);
//  - VERBSIM_CM_*: the connection manager's timing (core/cm_timing.h);
//  - the numbers of the tests and benchmarks (VERBSIM_PROPERTY_MESSAGES,
//    VERBSIM_BENCH_ITERATIONS): env::GetNumber.
// VERBSIM_PROVIDER, VERBSIM_NODES and VERBSIM_PROFILE become a provider
// spec, which provider_spec_fuzzer covers; VERBSIM_UDP would bind sockets.
//
// Invariants: reading never crashes; a refusal is EINVAL (or, for a number,
// an error) whose message names the variable or its value (a bad fault
// rule's names its column instead, docs/faults.md); an accepted address base keeps every node
// in 127.0.0.0/8; an accepted number is in its range.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"

#include "core/cm_timing.h"
#include "core/environment.h"
#include "core/errors.h"
#include "core/provider.h"
#include "sim/sim_provider.h"

namespace {

using verbsim::ErrnoOf;

void Check(bool ok) {
  if (!ok) std::abort();
}

void ReadProvider(const char* name, const std::string& value) {
  auto provider = verbsim::OpenProvider("sim:nodes=4");
  if (!provider.ok()) {
    Check(ErrnoOf(provider.status()) == EINVAL);
    const absl::string_view message = provider.status().message();
    Check(message.find(name) != absl::string_view::npos ||
          message.find(value) != absl::string_view::npos ||
          std::string(name) == verbsim::env::kFaults);
    return;
  }
  auto* sim = dynamic_cast<verbsim::sim::SimProvider*>(provider->get());
  Check(sim != nullptr);
  const uint32_t base = sim->fabric().options().address_base;
  Check((base >> 24) == 127 && ((base + 3) >> 24) == 127);
}

void ReadCmTiming() {
  std::string error;
  const verbsim::CmTiming t = verbsim::CmTimingFromEnv(&error);
  if (!error.empty()) {
    Check(error.find("VERBSIM_CM_") != std::string::npos);
    return;
  }
  Check(t.response_timeout >= 0 && t.response_timeout <= 31);
  Check(t.max_retries >= 0 && t.max_retries <= 15);
  Check(t.mra_timeout >= 0 && t.mra_timeout <= 31);
  Check(t.packet_life_time >= 0 && t.packet_life_time <= 30);
}

void ReadNumber(const char* name, const std::string& value) {
  const auto n = verbsim::env::GetNumber<uint64_t>(name, 1, UINT64_MAX);
  if (!n.ok()) {
    Check(n.error.find(name) != std::string::npos && !n.value);
    return;
  }
  // An empty value is no value (env::Get).
  Check(n.value.has_value() ? *n.value >= 1 : value.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace env = verbsim::env;
  if (size == 0) return 0;
  static const char* const kVariables[] = {
      env::kSeed,
      env::kFaults,
      env::kAddressBase,
      env::kCmResponseTimeout,
      env::kCmRetries,
      env::kCmMraTimeout,
      env::kCmPacketLifetime,
      env::kPropertyMessages,
      env::kBenchIterations,
  };
  constexpr size_t kCount = sizeof(kVariables) / sizeof(kVariables[0]);
  const char* name = kVariables[data[0] % kCount];
  std::string value(reinterpret_cast<const char*>(data + 1), size - 1);
  value = value.substr(0, value.find('\0'));
  // putenv of one buffer of our own, not setenv: glibc keeps every string
  // setenv ever made (it cannot know which a caller still holds), so a
  // million different values would grow without bound.
  static char entry[16384];
  const std::string text = std::string(name) + "=" + value;
  if (text.size() >= sizeof(entry)) return 0;
  std::memcpy(entry, text.c_str(), text.size() + 1);
  putenv(entry);
  switch (data[0] % kCount) {
    case 0:
    case 1:
    case 2:
      ReadProvider(name, value);
      break;
    case 3:
    case 4:
    case 5:
    case 6:
      ReadCmTiming();
      break;
    default:
      ReadNumber(name, value);
      break;
  }
  unsetenv(name);
  return 0;
}
