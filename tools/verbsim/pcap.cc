#include "tools/verbsim/pcap.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace verbsim::cli {
namespace {

void LePut32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

absl::Status WritePcap(const std::string& path,
                       const std::vector<PcapPacket>& packets,
                       uint32_t address_base) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  auto le32 = [&](uint32_t v) {
    uint8_t b[4];
    LePut32(b, v);
    std::fwrite(b, 1, 4, f);
  };
  auto le16 = [&](uint16_t v) {
    uint8_t b[2] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8)};
    std::fwrite(b, 1, 2, f);
  };
  le32(0xa1b23c4d);  // pcap, nanosecond timestamps
  le16(2);
  le16(4);
  le32(0);
  le32(0);
  le32(65535);
  le32(1);  // LINKTYPE_ETHERNET
  uint16_t id = 1;
  for (const PcapPacket& cp : packets) {
    std::vector<uint8_t> frame = EncodeRoceV2(cp.packet, id++, address_base);
    const int64_t t = cp.time_ns < 0 ? 0 : cp.time_ns;
    le32(static_cast<uint32_t>(t / 1000000000));
    le32(static_cast<uint32_t>(t % 1000000000));
    le32(static_cast<uint32_t>(frame.size()));
    le32(static_cast<uint32_t>(frame.size()));
    std::fwrite(frame.data(), 1, frame.size(), f);
  }
  if (std::fclose(f) != 0) {
    return absl::InternalError(absl::StrCat("error writing ", path));
  }
  return absl::OkStatus();
}

}  // namespace verbsim::cli
