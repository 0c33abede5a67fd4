#include "sim/addresses.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/errors.h"

namespace verbsim::sim {

namespace {

constexpr uint32_t kLoopbackNet = 0x7f000000u;  // 127.0.0.0/8
constexpr uint32_t kLoopbackFirst = kLoopbackNet + 1;
constexpr uint32_t kLoopbackLast = 0x7ffffffeu;  // below the broadcast

}  // namespace

absl::StatusOr<uint32_t> ParseIpv4(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  uint32_t ip = 0;
  bool ok = parts.size() == 4;
  for (size_t i = 0; ok && i < parts.size(); ++i) {
    const absl::string_view p = parts[i];
    uint32_t v = 0;
    // Decimal octets without leading zeros, as inet_pton(3) takes them: a
    // "027" that inet_aton(3) would read as octal 23 is refused, not guessed.
    ok = !p.empty() && p.size() <= 3 && (p.size() == 1 || p[0] != '0') &&
         p.find_first_not_of("0123456789") == absl::string_view::npos &&
         absl::SimpleAtoi(p, &v) && v <= 255;
    ip = ip << 8 | v;
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is not an IPv4 address (a.b.c.d)", text));
  }
  return ip;
}

std::string Ipv4ToString(uint32_t ip) {
  return absl::StrFormat("%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff,
                         (ip >> 8) & 0xff, ip & 0xff);
}

absl::Status CheckAddressBase(uint32_t base, int nodes) {
  const uint64_t last = uint64_t{base} + static_cast<uint64_t>(nodes) - 1;
  if (nodes < 1 || base < kLoopbackFirst || last > kLoopbackLast) {
    return Errno(EINVAL,
                 "sim address base %s with %d node(s) puts a node outside "
                 "the loopback range: every sim node address must lie in "
                 "127.0.0.1..127.255.255.254, because programs open their "
                 "own sockets to it",
                 Ipv4ToString(base), nodes);
  }
  return absl::OkStatus();
}

int NodeOfIpv4(uint32_t base, uint32_t ip) {
  if ((ip >> 24) != (kLoopbackNet >> 24) || ip < base) return -1;
  return static_cast<int>(ip - base);
}

Gid Ipv4MappedGid(uint32_t ip) {
  Gid gid{};
  gid[10] = 0xff;
  gid[11] = 0xff;
  gid[12] = static_cast<uint8_t>(ip >> 24);
  gid[13] = static_cast<uint8_t>(ip >> 16);
  gid[14] = static_cast<uint8_t>(ip >> 8);
  gid[15] = static_cast<uint8_t>(ip);
  return gid;
}

}  // namespace verbsim::sim
