// Harness for the RoCEv2 decoder of the UDP link transport (sim/wire.h): the
// input is a datagram (an IPv4 packet) as it could arrive on the socket.
//
// Invariants:
//  - decoding never reads out of bounds or crashes, whatever the bytes (the
//    same bytes are also tried as an Ethernet frame);
//  - a decoded packet re-encodes to a packet that decodes to the same
//    fields (Decode(Encode(p)) == OnWire(p)), so nothing the decoder accepts
//    is lost or invented.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "sim/wire.h"

namespace {

bool Same(const verbsim::sim::Packet& a, const verbsim::sim::Packet& b) {
  return a.src_node == b.src_node && a.dst_node == b.dst_node &&
         a.src_qpn == b.src_qpn && a.dst_qpn == b.dst_qpn &&
         a.transport == b.transport && a.opcode == b.opcode &&
         a.psn == b.psn && a.ack_req == b.ack_req &&
         a.solicited == b.solicited && a.va == b.va && a.rkey == b.rkey &&
         a.dma_len == b.dma_len && a.swap_add == b.swap_add &&
         a.compare == b.compare && a.imm == b.imm && a.qkey == b.qkey &&
         a.traffic_class == b.traffic_class && a.hop_limit == b.hop_limit &&
         a.syndrome == b.syndrome && a.msn == b.msn &&
         a.atomic_orig == b.atomic_orig && a.payload == b.payload;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using verbsim::sim::DecodeRoceV2;
  using verbsim::sim::DecodeRoceV2Ip;
  using verbsim::sim::EncodeRoceV2Ip;
  using verbsim::sim::OnWire;
  constexpr uint32_t kBase = verbsim::sim::kDefaultAddressBase;
  // A copy of exactly `size` bytes, so that ASan sees any overread.
  std::vector<uint8_t> in(data, data + size);
  (void)DecodeRoceV2(in.data(), in.size(), kBase);
  auto p = DecodeRoceV2Ip(in.data(), in.size(), kBase);
  if (!p.ok()) return 0;
  const std::vector<uint8_t> again = EncodeRoceV2Ip(*p, 1, kBase);
  auto q = DecodeRoceV2Ip(again.data(), again.size(), kBase);
  if (!q.ok() || !Same(OnWire(*p), *q) || !Same(*p, OnWire(*p))) std::abort();
  return 0;
}
