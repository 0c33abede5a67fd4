#include "sim/wire.h"

#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/crc32.h"

namespace verbsim::sim {
namespace {

constexpr size_t kIpLen = 20;
constexpr size_t kUdpLen = 8;
constexpr size_t kBthLen = 12;
constexpr size_t kIcrcLen = 4;

// Writes big-endian header fields one after another into a buffer the
// caller sized for the longest header.
class HeaderWriter {
 public:
  explicit HeaderWriter(uint8_t* at) : start_(at), at_(at) {}
  void Put8(uint8_t v) { *at_++ = v; }
  void Put16(uint16_t v) {
    Put8(static_cast<uint8_t>(v >> 8));
    Put8(static_cast<uint8_t>(v));
  }
  void Put24(uint32_t v) {
    Put8(static_cast<uint8_t>(v >> 16));
    Put16(static_cast<uint16_t>(v));
  }
  void Put32(uint32_t v) {
    Put16(static_cast<uint16_t>(v >> 16));
    Put16(static_cast<uint16_t>(v));
  }
  void Put64(uint64_t v) {
    Put32(static_cast<uint32_t>(v >> 32));
    Put32(static_cast<uint32_t>(v));
  }
  // Locally administered MAC: 02:00 then the IPv4 address.
  void PutMac(uint32_t ip) {
    Put8(0x02);
    Put8(0x00);
    Put32(ip);
  }
  size_t written() const { return static_cast<size_t>(at_ - start_); }

 private:
  uint8_t* start_;
  uint8_t* at_;
};

void LePut32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t LeGet32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
uint16_t Get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t Get24(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 16 | static_cast<uint32_t>(p[1]) << 8 |
         p[2];
}
uint32_t Get32(const uint8_t* p) {
  return static_cast<uint32_t>(Get16(p)) << 16 | Get16(p + 2);
}
uint64_t Get64(const uint8_t* p) {
  return static_cast<uint64_t>(Get32(p)) << 32 | Get32(p + 4);
}

// Which extended headers follow the BTH (IBA 9.2, table 38). UC uses the RC
// opcodes it has with the same headers; UD has SEND_ONLY and
// SEND_ONLY_WITH_IMMEDIATE only, each with a DETH and no RETH or AETH.
struct Headers {
  bool deth = false, reth = false, aeth = false, atomic_eth = false,
       atomic_ack = false, immdt = false, ieth = false;
  size_t length() const {
    return (deth ? 8 : 0) + (reth ? 16 : 0) + (aeth ? 4 : 0) +
           (atomic_eth ? 28 : 0) + (atomic_ack ? 8 : 0) +
           (immdt || ieth ? 4 : 0);
  }
};
Headers HeadersOf(QpType transport, RcOp op) {
  Headers h;
  if (transport == QpType::kUd) {
    h.deth = true;
    h.immdt = op == RcOp::kSendOnlyImm;
    return h;
  }
  switch (op) {
    case RcOp::kSendLastImm:
    case RcOp::kSendOnlyImm:
    case RcOp::kWriteLastImm:
      h.immdt = true;
      break;
    case RcOp::kWriteFirst:
    case RcOp::kWriteOnly:
    case RcOp::kReadRequest:
      h.reth = true;
      break;
    case RcOp::kWriteOnlyImm:
      h.reth = true;
      h.immdt = true;
      break;
    case RcOp::kReadResponseFirst:
    case RcOp::kReadResponseLast:
    case RcOp::kReadResponseOnly:
    case RcOp::kAcknowledge:
      h.aeth = true;
      break;
    case RcOp::kAtomicAcknowledge:
      h.aeth = true;
      h.atomic_ack = true;
      break;
    case RcOp::kCompareSwap:
    case RcOp::kFetchAdd:
      h.atomic_eth = true;
      break;
    case RcOp::kSendLastInv:
    case RcOp::kSendOnlyInv:
      h.ieth = true;
      break;
    default:
      break;
  }
  return h;
}

// Whether `low5` is an opcode of `transport` (IBA 9.2 table 38; UC has the
// sends and writes without invalidate, UD the two SEND_ONLY forms).
bool ValidOpcode(QpType transport, uint8_t low5) {
  const RcOp op = static_cast<RcOp>(low5);
  switch (transport) {
    case QpType::kUd:
      return op == RcOp::kSendOnly || op == RcOp::kSendOnlyImm;
    case QpType::kUc:
      return low5 <= static_cast<uint8_t>(RcOp::kWriteOnlyImm);
    default:
      return low5 <= static_cast<uint8_t>(RcOp::kFetchAdd) ||
             op == RcOp::kSendLastInv || op == RcOp::kSendOnlyInv;
  }
}

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed RoCEv2 packet: ", what));
}

}  // namespace

namespace {

// BTH .. payload, pad: the bytes after the UDP header but the ICRC.
size_t IbLength(const Packet& p, const Headers& h) {
  const size_t pad = (4 - p.payload.size() % 4) % 4;
  return kBthLen + h.length() + p.payload.size() + pad;
}

// Appends the frame (with `ethernet`) or IPv4 packet of `p` to `out`: its
// headers are written in a buffer on the stack, then they, the payload, the
// pad and the ICRC go to the end of `out`, each byte once. Returns the
// number of bytes appended.
size_t Encode(const Packet& p, uint16_t ip_id, uint32_t address_base,
              bool ethernet, std::vector<uint8_t>* out) {
  const uint32_t src_ip = NodeIpv4(address_base, p.src_node);
  const uint32_t dst_ip = NodeIpv4(address_base, p.dst_node);
  const Headers h = HeadersOf(p.transport, p.opcode);
  const size_t pad = (4 - p.payload.size() % 4) % 4;
  const size_t ib_len = IbLength(p, h);
  const uint16_t udp_len = static_cast<uint16_t>(kUdpLen + ib_len + kIcrcLen);
  // Ethernet, IPv4, UDP, BTH and the longest extended headers (Headers).
  uint8_t header[kEthHeaderLen + kIpLen + kUdpLen + kBthLen + 72];
  HeaderWriter w(header);
  if (ethernet) {
    w.PutMac(dst_ip);
    w.PutMac(src_ip);
    w.Put16(0x0800);
  }
  const size_t ip = w.written();
  w.Put8(0x45);
  w.Put8(p.traffic_class);  // DSCP/ECN: a UD AH's traffic class
  w.Put16(static_cast<uint16_t>(kIpLen + udp_len));
  w.Put16(ip_id);
  w.Put16(0x4000);  // don't fragment
  w.Put8(p.hop_limit);  // TTL: a UD AH's hop limit (64 otherwise)
  w.Put8(17);       // UDP
  w.Put16(0);       // checksum, below
  w.Put32(src_ip);
  w.Put32(dst_ip);
  const uint16_t checksum = Ipv4Checksum(header + ip, kIpLen);
  header[ip + 10] = static_cast<uint8_t>(checksum >> 8);
  header[ip + 11] = static_cast<uint8_t>(checksum);
  // UDP: the source port carries flow entropy (here from the QP numbers);
  // the checksum is 0 (none), as RoCEv2 senders do over IPv4.
  w.Put16(static_cast<uint16_t>(0xc000 | ((p.src_qpn ^ p.dst_qpn) & 0x3fff)));
  w.Put16(kRoceV2Port);
  w.Put16(udp_len);
  w.Put16(0);
  // BTH (IBA 9.2): opcode; SE, M, PadCnt, TVer; P_Key; resv8a; DestQP;
  // AckReq and resv7; PSN.
  w.Put8(BthOpcode(p.transport, p.opcode));
  w.Put8(static_cast<uint8_t>((p.solicited ? 0x80 : 0) | (pad << 4)));
  w.Put16(0xffff);  // default P_Key
  w.Put8(0);
  w.Put24(p.dst_qpn & 0xffffff);
  w.Put8(p.ack_req ? 0x80 : 0);
  w.Put24(p.psn & 0xffffff);
  if (h.deth) {
    // DETH (IBA 9.3.3): Q_Key; 8 reserved bits; the source QP.
    w.Put32(p.qkey);
    w.Put8(0);
    w.Put24(p.src_qpn & 0xffffff);
  }
  if (h.reth) {
    w.Put64(p.va);
    w.Put32(p.rkey);
    w.Put32(p.dma_len);
  }
  if (h.atomic_eth) {
    w.Put64(p.va);
    w.Put32(p.rkey);
    w.Put64(p.swap_add);
    w.Put64(p.compare);
  }
  if (h.aeth) {
    w.Put8(p.syndrome);
    w.Put24(p.msn & 0xffffff);
  }
  if (h.atomic_ack) w.Put64(p.atomic_orig);
  if (h.immdt || h.ieth) w.Put32(p.imm);

  std::vector<uint8_t>& f = *out;
  const size_t start = f.size();
  const size_t length = w.written() + p.payload.size() + pad + kIcrcLen;
  f.reserve(start + length);
  f.insert(f.end(), header, header + w.written());
  f.insert(f.end(), p.payload.begin(), p.payload.end());
  f.insert(f.end(), pad + kIcrcLen, 0);
  const uint32_t icrc = RoceV2IcrcIp(f.data() + start + ip, length - ip);
  LePut32(f.data() + f.size() - kIcrcLen, icrc);
  return length;
}

}  // namespace

std::vector<uint8_t> EncodeRoceV2(const Packet& p, uint16_t ip_id,
                                  uint32_t address_base) {
  std::vector<uint8_t> f;
  Encode(p, ip_id, address_base, /*ethernet=*/true, &f);
  return f;
}

std::vector<uint8_t> EncodeRoceV2Ip(const Packet& p, uint16_t ip_id,
                                    uint32_t address_base) {
  std::vector<uint8_t> f;
  Encode(p, ip_id, address_base, /*ethernet=*/false, &f);
  return f;
}

size_t AppendRoceV2Ip(const Packet& p, uint16_t ip_id, uint32_t address_base,
                      std::vector<uint8_t>* out) {
  return Encode(p, ip_id, address_base, /*ethernet=*/false, out);
}

size_t RoceV2IpLength(const Packet& p) {
  return kIpLen + kUdpLen + IbLength(p, HeadersOf(p.transport, p.opcode)) +
         kIcrcLen;
}

uint32_t RoceV2IcrcIp(const uint8_t* ip, size_t ip_len) {
  // Pseudo header: IPv4 + UDP + BTH with the variant fields masked.
  uint8_t ps[kIpLen + kUdpLen + kBthLen];
  std::memcpy(ps, ip, sizeof(ps));
  ps[1] = 0xff;                 // TOS (DSCP and ECN)
  ps[8] = 0xff;                 // TTL
  ps[10] = ps[11] = 0xff;       // header checksum
  ps[kIpLen + 6] = ps[kIpLen + 7] = 0xff;  // UDP checksum
  ps[kIpLen + kUdpLen + 4] = 0xff;         // BTH resv8a
  uint32_t reg = 0xffffffffu;
  const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  reg = Crc32Update(reg, lrh, sizeof(lrh));
  reg = Crc32Update(reg, ps, sizeof(ps));
  reg = Crc32Update(reg, ip + sizeof(ps), ip_len - sizeof(ps) - kIcrcLen);
  return ~reg;
}

uint32_t RoceV2Icrc(const uint8_t* frame, size_t frame_len) {
  return RoceV2IcrcIp(frame + kEthHeaderLen, frame_len - kEthHeaderLen);
}

absl::StatusOr<Packet> DecodeRoceV2Ip(const uint8_t* d, size_t len,
                                      uint32_t address_base) {
  if (len < kIpLen + kUdpLen + kBthLen + kIcrcLen) {
    return Malformed(absl::StrFormat("%d bytes, shorter than the %d of the "
                                     "IPv4, UDP, BTH and ICRC headers",
                                     len, kIpLen + kUdpLen + kBthLen + kIcrcLen));
  }
  if (d[0] != 0x45) {
    return Malformed(absl::StrFormat("IPv4 version/IHL byte 0x%02x, want 0x45",
                                     d[0]));
  }
  if (Get16(d + 2) != len) {
    return Malformed(absl::StrFormat("IPv4 total length %d, datagram has %d",
                                     Get16(d + 2), len));
  }
  if ((Get16(d + 6) & 0x3fff) != 0) return Malformed("IPv4 fragment");
  if (d[9] != 17) {
    return Malformed(absl::StrFormat("IPv4 protocol %d, want 17 (UDP)", d[9]));
  }
  if (Ipv4Checksum(d, kIpLen) != 0) return Malformed("bad IPv4 checksum");
  const int src_node = NodeOfIpv4(address_base, Get32(d + 12));
  const int dst_node = NodeOfIpv4(address_base, Get32(d + 16));
  if (src_node < 0 || dst_node < 0) {
    return Malformed(absl::StrFormat(
        "IPv4 address %s -> %s: not a sim node (base %s)",
        Ipv4ToString(Get32(d + 12)), Ipv4ToString(Get32(d + 16)),
        Ipv4ToString(address_base)));
  }
  const uint8_t* u = d + kIpLen;
  if (Get16(u + 2) != kRoceV2Port) {
    return Malformed(absl::StrFormat("UDP port %d, want %d", Get16(u + 2),
                                     kRoceV2Port));
  }
  if (Get16(u + 4) != len - kIpLen) {
    return Malformed(absl::StrFormat("UDP length %d, datagram has %d",
                                     Get16(u + 4), len - kIpLen));
  }
  if (LeGet32(d + len - kIcrcLen) != RoceV2IcrcIp(d, len)) {
    return absl::DataLossError("RoCEv2 packet with a bad ICRC");
  }
  const uint8_t* b = u + kUdpLen;
  Packet p;
  p.src_node = src_node;
  p.dst_node = dst_node;
  p.traffic_class = d[1];
  p.hop_limit = d[8];
  const uint8_t prefix = b[0] & 0xe0;
  const uint8_t low5 = b[0] & 0x1f;
  if (prefix == 0x00) {
    p.transport = QpType::kRc;
  } else if (prefix == 0x20) {
    p.transport = QpType::kUc;
  } else if (prefix == 0x60) {
    p.transport = QpType::kUd;
  } else {
    return Malformed(absl::StrFormat("BTH opcode 0x%02x: transport not RC, "
                                     "UC or UD", b[0]));
  }
  if (!ValidOpcode(p.transport, low5)) {
    return Malformed(absl::StrFormat("BTH opcode 0x%02x is not an opcode of "
                                     "its transport", b[0]));
  }
  p.opcode = static_cast<RcOp>(low5);
  p.solicited = (b[1] & 0x80) != 0;
  const size_t pad = (b[1] >> 4) & 3;
  if ((b[1] & 0x0f) != 0) return Malformed("BTH TVer is not 0");
  if (Get16(b + 2) != 0xffff) {
    return Malformed(absl::StrFormat("P_Key 0x%04x, the sim uses 0xffff",
                                     Get16(b + 2)));
  }
  p.dst_qpn = Get24(b + 5);
  p.ack_req = (b[8] & 0x80) != 0;
  p.psn = Get24(b + 9);
  const Headers h = HeadersOf(p.transport, p.opcode);
  const size_t ib_len = len - kIpLen - kUdpLen - kIcrcLen;
  if (ib_len < kBthLen + h.length() + pad) {
    return Malformed(absl::StrFormat(
        "%s needs %d bytes of headers and pad, the packet has %d",
        RcOpName(p.opcode), kBthLen + h.length() + pad, ib_len));
  }
  const uint8_t* x = b + kBthLen;
  if (h.deth) {
    p.qkey = Get32(x);
    p.src_qpn = Get24(x + 5);
    x += 8;
  }
  if (h.reth) {
    p.va = Get64(x);
    p.rkey = Get32(x + 8);
    p.dma_len = Get32(x + 12);
    x += 16;
  }
  if (h.atomic_eth) {
    p.va = Get64(x);
    p.rkey = Get32(x + 8);
    p.swap_add = Get64(x + 12);
    p.compare = Get64(x + 20);
    x += 28;
  }
  if (h.aeth) {
    p.syndrome = x[0];
    p.msn = Get24(x + 1);
    x += 4;
  }
  if (h.atomic_ack) {
    p.atomic_orig = Get64(x);
    x += 8;
  }
  if (h.immdt || h.ieth) {
    p.imm = Get32(x);
    x += 4;
  }
  const size_t payload = ib_len - kBthLen - h.length() - pad;
  p.payload.Set(x, payload);
  return p;
}

absl::StatusOr<Packet> DecodeRoceV2(const uint8_t* data, size_t len,
                                    uint32_t address_base) {
  if (len < kEthHeaderLen) {
    return Malformed(absl::StrFormat("%d bytes, shorter than an Ethernet "
                                     "header", len));
  }
  if (Get16(data + 12) != 0x0800) {
    return Malformed(absl::StrFormat("EtherType 0x%04x, want 0x0800 (IPv4)",
                                     Get16(data + 12)));
  }
  return DecodeRoceV2Ip(data + kEthHeaderLen, len - kEthHeaderLen,
                        address_base);
}

Packet OnWire(const Packet& p) {
  const Headers h = HeadersOf(p.transport, p.opcode);
  Packet w;
  w.src_node = p.src_node;
  w.dst_node = p.dst_node;
  w.transport = p.transport;
  w.opcode = p.opcode;
  w.dst_qpn = p.dst_qpn & 0xffffff;
  w.psn = p.psn & 0xffffff;
  w.ack_req = p.ack_req;
  w.solicited = p.solicited;
  w.traffic_class = p.traffic_class;
  w.hop_limit = p.hop_limit;
  if (h.deth) {
    w.qkey = p.qkey;
    w.src_qpn = p.src_qpn & 0xffffff;
  }
  if (h.reth || h.atomic_eth) {
    w.va = p.va;
    w.rkey = p.rkey;
  }
  if (h.reth) w.dma_len = p.dma_len;
  if (h.atomic_eth) {
    w.swap_add = p.swap_add;
    w.compare = p.compare;
  }
  if (h.aeth) {
    w.syndrome = p.syndrome;
    w.msn = p.msn & 0xffffff;
  }
  if (h.atomic_ack) w.atomic_orig = p.atomic_orig;
  if (h.immdt || h.ieth) w.imm = p.imm;
  w.payload = p.payload;
  return w;
}

}  // namespace verbsim::sim
