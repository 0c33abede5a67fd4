// RoCEv2 packet captures of the sim's packets: each packet becomes an
// Ethernet / IPv4 / UDP (port 4791) frame carrying the InfiniBand transport
// headers (BTH with the opcode byte of its transport, RC, UC or UD, and the
// extended headers of its opcode: DETH for UD), the payload, the pad and a
// valid ICRC, in a pcap file with nanosecond timestamps.
#ifndef VERBSIM_TOOLS_VERBSIM_PCAP_H_
#define VERBSIM_TOOLS_VERBSIM_PCAP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sim/fabric.h"
#include "sim/packet.h"
#include "sim/wire.h"

namespace verbsim::cli {

// The encoding lives in sim/wire.h (shared with the UDP link transport).
using sim::EncodeRoceV2;
using sim::RoceV2Icrc;

// Writes the packets as a pcap file (link type Ethernet, nanosecond
// resolution); node i's IPv4 address is address_base + i.
struct PcapPacket {
  int64_t time_ns = 0;
  sim::Packet packet;
};
absl::Status WritePcap(const std::string& path,
                       const std::vector<PcapPacket>& packets,
                       uint32_t address_base);

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_PCAP_H_
