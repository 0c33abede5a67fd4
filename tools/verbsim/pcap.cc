#include "tools/verbsim/pcap.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace verbsim::cli {
namespace {

using sim::Packet;
using sim::RcOp;
using sim::Ipv4Checksum;

constexpr size_t kEthLen = 14;
constexpr size_t kIpLen = 20;
constexpr size_t kUdpLen = 8;
constexpr size_t kBthLen = 12;
constexpr uint16_t kRoceV2Port = 4791;

// Reflected CRC-32 (polynomial 0xedb88320), table-driven; the register is
// passed in and out without the final inversion so that it can be chained.
const std::array<uint32_t, 256>& CrcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

uint32_t CrcUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  const auto& t = CrcTable();
  for (size_t i = 0; i < n; ++i) reg = t[(reg ^ p[i]) & 0xff] ^ (reg >> 8);
  return reg;
}

void Put8(std::vector<uint8_t>& b, uint8_t v) { b.push_back(v); }
void Put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void Put24(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v >> 16));
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void Put32(std::vector<uint8_t>& b, uint32_t v) {
  Put16(b, static_cast<uint16_t>(v >> 16));
  Put16(b, static_cast<uint16_t>(v));
}
void Put64(std::vector<uint8_t>& b, uint64_t v) {
  Put32(b, static_cast<uint32_t>(v >> 32));
  Put32(b, static_cast<uint32_t>(v));
}
void Set16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

void PutMac(std::vector<uint8_t>& b, int node) {
  const uint32_t ip = NodeIpv4(node);
  // Locally administered: 02:00 then the IPv4 address.
  Put8(b, 0x02);
  Put8(b, 0x00);
  Put32(b, ip);
}

// Which extended headers follow the BTH (IBA 9.2, table 38). UC uses the RC
// opcodes it has with the same headers; UD has SEND_ONLY and
// SEND_ONLY_WITH_IMMEDIATE only, each with a DETH and no RETH or AETH.
struct Headers {
  bool deth = false, reth = false, aeth = false, atomic_eth = false,
       atomic_ack = false, immdt = false, ieth = false;
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

void LePut32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

uint32_t NodeIpv4(int node) {
  const uint32_t n = static_cast<uint32_t>(node + 1);
  return 10u << 24 | (n & 0xffffff);
}

std::vector<uint8_t> EncodeRoceV2(const Packet& p, uint16_t ip_id) {
  const Headers h = HeadersOf(p.transport, p.opcode);
  std::vector<uint8_t> ib;  // BTH .. payload, pad
  const size_t pad = (4 - p.payload.size() % 4) % 4;
  // BTH (IBA 9.2): opcode; SE, M, PadCnt, TVer; P_Key; resv8a; DestQP;
  // AckReq and resv7; PSN.
  Put8(ib, sim::BthOpcode(p.transport, p.opcode));
  Put8(ib, static_cast<uint8_t>((p.solicited ? 0x80 : 0) | (pad << 4)));
  Put16(ib, 0xffff);  // default P_Key
  Put8(ib, 0);
  Put24(ib, p.dst_qpn & 0xffffff);
  Put8(ib, p.ack_req ? 0x80 : 0);
  Put24(ib, p.psn & 0xffffff);
  if (h.deth) {
    // DETH (IBA 9.3.3): Q_Key; 8 reserved bits; the source QP.
    Put32(ib, p.qkey);
    Put8(ib, 0);
    Put24(ib, p.src_qpn & 0xffffff);
  }
  if (h.reth) {
    Put64(ib, p.va);
    Put32(ib, p.rkey);
    Put32(ib, p.dma_len);
  }
  if (h.atomic_eth) {
    Put64(ib, p.va);
    Put32(ib, p.rkey);
    Put64(ib, p.swap_add);
    Put64(ib, p.compare);
  }
  if (h.aeth) {
    Put8(ib, p.syndrome);
    Put24(ib, p.msn & 0xffffff);
  }
  if (h.atomic_ack) Put64(ib, p.atomic_orig);
  if (h.immdt || h.ieth) Put32(ib, p.imm);
  ib.insert(ib.end(), p.payload.begin(), p.payload.end());
  ib.insert(ib.end(), pad, 0);

  std::vector<uint8_t> f;
  f.reserve(kEthLen + kIpLen + kUdpLen + ib.size() + 4);
  PutMac(f, p.dst_node);
  PutMac(f, p.src_node);
  Put16(f, 0x0800);
  const size_t ip = f.size();
  const uint16_t udp_len = static_cast<uint16_t>(kUdpLen + ib.size() + 4);
  Put8(f, 0x45);
  Put8(f, p.traffic_class);  // DSCP/ECN: a UD AH's traffic class
  Put16(f, static_cast<uint16_t>(kIpLen + udp_len));
  Put16(f, ip_id);
  Put16(f, 0x4000);  // don't fragment
  Put8(f, p.hop_limit);  // TTL: a UD AH's hop limit (64 otherwise)
  Put8(f, 17);       // UDP
  Put16(f, 0);       // checksum, below
  Put32(f, NodeIpv4(p.src_node));
  Put32(f, NodeIpv4(p.dst_node));
  Set16(f, ip + 10, Ipv4Checksum(f.data() + ip, kIpLen));
  // UDP: the source port carries flow entropy (here from the QP numbers);
  // the checksum is 0 (none), as RoCEv2 senders do over IPv4.
  Put16(f, static_cast<uint16_t>(0xc000 | ((p.src_qpn ^ p.dst_qpn) & 0x3fff)));
  Put16(f, kRoceV2Port);
  Put16(f, udp_len);
  Put16(f, 0);
  f.insert(f.end(), ib.begin(), ib.end());
  f.insert(f.end(), 4, 0);
  const uint32_t icrc = RoceV2Icrc(f.data(), f.size());
  LePut32(f.data() + f.size() - 4, icrc);
  return f;
}

uint32_t RoceV2Icrc(const uint8_t* frame, size_t frame_len) {
  // Pseudo header: IPv4 + UDP + BTH with the variant fields masked.
  uint8_t ps[kIpLen + kUdpLen + kBthLen];
  std::memcpy(ps, frame + kEthLen, sizeof(ps));
  ps[1] = 0xff;                 // TOS (DSCP and ECN)
  ps[8] = 0xff;                 // TTL
  ps[10] = ps[11] = 0xff;       // header checksum
  ps[kIpLen + 6] = ps[kIpLen + 7] = 0xff;  // UDP checksum
  ps[kIpLen + kUdpLen + 4] = 0xff;         // BTH resv8a
  uint32_t reg = 0xffffffffu;
  const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  reg = CrcUpdate(reg, lrh, sizeof(lrh));
  reg = CrcUpdate(reg, ps, sizeof(ps));
  const size_t rest = kEthLen + sizeof(ps);
  reg = CrcUpdate(reg, frame + rest, frame_len - rest - 4);
  return ~reg;
}

absl::Status WritePcap(const std::string& path,
                       const std::vector<PcapPacket>& packets) {
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
    std::vector<uint8_t> frame = EncodeRoceV2(cp.packet, id++);
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
