// The VERBSIM_* environment, read in one place with one set of rules
// (docs/environment.md lists every variable):
//  - a variable that is unset or empty is not given;
//  - a number that does not parse, or lies outside its range, is an error
//    naming the variable and the value (never a silent default);
//  - a switch is on when given and not "0".
// Header-only and free of other libraries, so that the drop-in librdmacm can
// use it too.
#ifndef VERBSIM_CORE_ENVIRONMENT_H_
#define VERBSIM_CORE_ENVIRONMENT_H_

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace verbsim::env {

// What programs and tests read.
inline constexpr char kProvider[] = "VERBSIM_PROVIDER";  // provider spec
inline constexpr char kSeed[] = "VERBSIM_SEED";          // the sim's seed
inline constexpr char kFaults[] = "VERBSIM_FAULTS";      // sim/faults.h text
inline constexpr char kAddressBase[] = "VERBSIM_ADDR_BASE";
inline constexpr char kUdp[] = "VERBSIM_UDP";            // udp=<port>,...
inline constexpr char kHwAddress[] = "VERBSIM_HW_ADDRESS";
// What the drop-in libraries read.
inline constexpr char kNodes[] = "VERBSIM_NODES";
inline constexpr char kProfile[] = "VERBSIM_PROFILE";
inline constexpr char kKeep[] = "VERBSIM_KEEP";
inline constexpr char kDebug[] = "VERBSIM_DEBUG";
// The sysfs view's tree (dropin/sysfs): read by libverbsim_sysfs.so, set by
// `verbsim exec`.
inline constexpr char kSysfs[] = "VERBSIM_SYSFS";
// The CM's timeouts and retries (core/cm_timing.h): the drop-in librdmacm
// and the sim provider.
inline constexpr char kCmResponseTimeout[] = "VERBSIM_CM_RESPONSE_TIMEOUT";
inline constexpr char kCmRetries[] = "VERBSIM_CM_RETRIES";
inline constexpr char kCmMraTimeout[] = "VERBSIM_CM_MRA_TIMEOUT";
inline constexpr char kCmPacketLifetime[] = "VERBSIM_CM_PACKET_LIFETIME";
// What the tools, fuzzers and benchmarks read.
inline constexpr char kDropinDir[] = "VERBSIM_DROPIN_DIR";
inline constexpr char kFuzzVerbose[] = "VERBSIM_FUZZ_VERBOSE";
inline constexpr char kFuzzStrict[] = "VERBSIM_FUZZ_STRICT";
inline constexpr char kBenchIterations[] = "VERBSIM_BENCH_ITERATIONS";
// What the RC property test reads (sim/tests/rc_property_test.cc).
inline constexpr char kPropertyMessages[] = "VERBSIM_PROPERTY_MESSAGES";
inline constexpr char kPropertyTrace[] = "VERBSIM_PROPERTY_TRACE";

// The value of `name`; nullopt when it is unset or empty.
inline std::optional<std::string> Get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// Whether switch `name` is on: given, and not "0".
inline bool IsOn(const char* name) {
  const std::optional<std::string> value = Get(name);
  return value && *value != "0";
}

// A number read from the environment: `value` when given and valid; `error`
// (naming the variable and its value) when given and not valid; neither when
// not given.
template <typename T>
struct Number {
  std::optional<T> value;
  std::string error;
  bool ok() const { return error.empty(); }
};

// `name` as a decimal integer in [min, max].
template <typename T>
Number<T> GetNumber(const char* name, T min, T max) {
  Number<T> n;
  const std::optional<std::string> text = Get(name);
  if (!text) return n;
  T v{};
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || ptr != end || v < min || v > max) {
    n.error = std::string(name) + "='" + *text + "' is not a number in " +
              std::to_string(min) + ".." + std::to_string(max);
    return n;
  }
  n.value = v;
  return n;
}

}  // namespace verbsim::env

#endif  // VERBSIM_CORE_ENVIRONMENT_H_
