#include <string>

#include "absl/strings/str_format.h"
#include "core/types.h"

namespace verbsim {

int MtuBytes(Mtu mtu) {
  switch (mtu) {
    case Mtu::k256: return 256;
    case Mtu::k512: return 512;
    case Mtu::k1024: return 1024;
    case Mtu::k2048: return 2048;
    case Mtu::k4096: return 4096;
  }
  return 0;
}

std::string GidToString(const Gid& g) {
  // IPv4-mapped GIDs (RoCEv2 over IPv4) print as the IPv4 address.
  bool v4_mapped = g[10] == 0xff && g[11] == 0xff;
  for (int i = 0; i < 10 && v4_mapped; ++i) v4_mapped = g[i] == 0;
  if (v4_mapped) {
    return absl::StrFormat("::ffff:%d.%d.%d.%d", g[12], g[13], g[14], g[15]);
  }
  std::string out;
  for (int i = 0; i < 16; i += 2) {
    if (i > 0) out += ':';
    absl::StrAppendFormat(&out, "%02x%02x", g[i], g[i + 1]);
  }
  return out;
}

bool IsMulticastGid(const Gid& g) {
  if (g[0] == 0xff) return true;
  bool v4_mapped = g[10] == 0xff && g[11] == 0xff;
  for (int i = 0; i < 10 && v4_mapped; ++i) v4_mapped = g[i] == 0;
  return v4_mapped && (g[12] & 0xf0) == 0xe0;
}

}  // namespace verbsim
