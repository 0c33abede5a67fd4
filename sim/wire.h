// The RoCEv2 wire encoding of the sim's packets, shared by the pcap writer
// (tools/verbsim/pcap.cc) and the UDP link transport (sim/udp_transport.cc).
//
// A packet becomes IPv4 / UDP (destination port 4791) / BTH / the extended
// headers of its opcode (DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt or
// IETH; IBA 9.2 table 38) / payload / pad / ICRC. Node i has the IPv4
// address base + i (sim/addresses.h), as in its IPv4-mapped GID; every
// encoder and decoder call names the fabric's base.
// The pcap output puts an Ethernet header in front (EncodeRoceV2); the UDP
// transport carries the IPv4 packet (EncodeRoceV2Ip).
#ifndef VERBSIM_SIM_WIRE_H_
#define VERBSIM_SIM_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/addresses.h"
#include "sim/packet.h"

namespace verbsim::sim {

constexpr uint16_t kRoceV2Port = 4791;
constexpr size_t kEthHeaderLen = 14;

// The Ethernet frame for `p` (Ethernet header through ICRC; no FCS), with
// locally administered MACs 02:00:<IPv4>. `ip_id` fills the IPv4
// identification field; node i's address is address_base + i.
std::vector<uint8_t> EncodeRoceV2(const Packet& p, uint16_t ip_id,
                                  uint32_t address_base);
// The same without the Ethernet header: the IPv4 packet.
std::vector<uint8_t> EncodeRoceV2Ip(const Packet& p, uint16_t ip_id,
                                    uint32_t address_base);
// The IPv4 packet appended to `out` (the datagram of the UDP transport
// that carries several back to back), and its length, which
// RoceV2IpLength(p) gives beforehand.
size_t AppendRoceV2Ip(const Packet& p, uint16_t ip_id, uint32_t address_base,
                      std::vector<uint8_t>* out);
size_t RoceV2IpLength(const Packet& p);

// The RoCEv2 ICRC of a frame laid out as EncodeRoceV2 does (IPv4, no VLAN):
// CRC-32 over 8 bytes of 0xff (the masked LRH), the IPv4 header with TOS,
// TTL and checksum set to ones, the UDP header with its checksum set to
// ones, the BTH with its reserved byte (resv8a) set to ones, then the rest
// of the transport headers, the payload and the pad.
uint32_t RoceV2Icrc(const uint8_t* frame, size_t frame_len);
// The same for an IPv4 packet (no Ethernet header).
uint32_t RoceV2IcrcIp(const uint8_t* ip, size_t ip_len);

// Decodes an IPv4 packet as EncodeRoceV2Ip makes it. Every length, the IPv4
// header checksum, the UDP port, the opcode of its transport and the ICRC
// are checked: a bad ICRC is DATA_LOSS, anything else malformed or truncated
// is INVALID_ARGUMENT naming what is wrong. On success src_node and dst_node
// come from the IPv4 addresses (address - address_base; an address below the
// base or outside 127.0.0.0/8 is malformed); src_qpn comes from the DETH of
// a UD packet and is 0 otherwise (RC and UC carry only the destination QP on
// the wire). Fields that the opcode does not carry are left at their
// defaults.
absl::StatusOr<Packet> DecodeRoceV2Ip(const uint8_t* data, size_t len,
                                      uint32_t address_base);
// The same for an Ethernet frame (EtherType IPv4).
absl::StatusOr<Packet> DecodeRoceV2(const uint8_t* data, size_t len,
                                    uint32_t address_base);

// Splits a UDP datagram of the sim's UDP transport into its IPv4 packets,
// laid back to back, each as long as its header's total length says:
// calls `fn(ip, len)` for each. Returns false when the rest cannot be split
// (a total length shorter than an IPv4 header or past the end), after the
// packets before it.
template <typename Fn>
bool ForEachPacketOfDatagram(absl::Span<const uint8_t> bytes, Fn&& fn) {
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 20) return false;
    const size_t len = size_t{bytes[at + 2]} << 8 | bytes[at + 3];
    if (len < 20 || len > bytes.size() - at) return false;
    fn(bytes.data() + at, len);
    at += len;
  }
  return true;
}

// Which fields of `p` the wire carries for its transport and opcode: a copy
// with the others reset, so that Decode(Encode(p)) == OnWire(p) field by
// field (src_qpn kept for UD only).
Packet OnWire(const Packet& p);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_WIRE_H_
