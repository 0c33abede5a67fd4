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

namespace verbsim::cli {

// Node i's IPv4 address, 10.0.0.(i+1) (as the sim's IPv4-mapped GIDs).
uint32_t NodeIpv4(int node);

// The frame for `p` (Ethernet header through ICRC; no FCS). `ip_id` fills
// the IPv4 identification field.
std::vector<uint8_t> EncodeRoceV2(const sim::Packet& p, uint16_t ip_id);

// The RoCEv2 ICRC of a frame laid out as EncodeRoceV2 does (IPv4, no VLAN):
// CRC-32 over 8 bytes of 0xff (the masked LRH), the IPv4 header with TOS,
// TTL and checksum set to ones, the UDP header with its checksum set to
// ones, the BTH with its reserved byte (resv8a) set to ones, then the rest
// of the transport headers, the payload and the pad.
uint32_t RoceV2Icrc(const uint8_t* frame, size_t frame_len);

// Writes the packets as a pcap file (link type Ethernet, nanosecond
// resolution).
struct PcapPacket {
  int64_t time_ns = 0;
  sim::Packet packet;
};
absl::Status WritePcap(const std::string& path,
                       const std::vector<PcapPacket>& packets);

}  // namespace verbsim::cli

#endif  // VERBSIM_TOOLS_VERBSIM_PCAP_H_
