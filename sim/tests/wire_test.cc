// The RoCEv2 codec of sim/wire.h: every opcode the sim emits survives a
// round trip, and malformed or truncated packets are refused, never read
// out of bounds.
#include "sim/wire.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace verbsim::sim {
namespace {

constexpr uint32_t kBase = kDefaultAddressBase;  // 127.0.1.1

Packet Sample(QpType transport, RcOp op, size_t payload) {
  Packet p;
  p.src_node = 0;
  p.dst_node = 1;
  p.src_qpn = 0x123456;
  p.dst_qpn = 0x00abcd;
  p.transport = transport;
  p.opcode = op;
  p.psn = 0xfffffe;
  p.ack_req = true;
  p.solicited = true;
  p.va = 0x1122334455667788ull;
  p.rkey = 0xdeadbeef;
  p.dma_len = 4096;
  p.swap_add = 0x0102030405060708ull;
  p.compare = 0x1112131415161718ull;
  p.imm = 0xcafef00d;
  p.qkey = 0x11111111;
  p.traffic_class = 0x28;
  p.hop_limit = 7;
  p.syndrome = NakSyndrome(NakCode::kRemoteAccessError);
  p.msn = 0x654321;
  p.atomic_orig = 0x2122232425262728ull;
  for (size_t i = 0; i < payload; ++i) p.payload.push_back(uint8_t(i * 7));
  return p;
}

void ExpectSame(const Packet& a, const Packet& b) {
  EXPECT_EQ(a.src_node, b.src_node);
  EXPECT_EQ(a.dst_node, b.dst_node);
  EXPECT_EQ(a.src_qpn, b.src_qpn);
  EXPECT_EQ(a.dst_qpn, b.dst_qpn);
  EXPECT_EQ(a.transport, b.transport);
  EXPECT_EQ(a.opcode, b.opcode);
  EXPECT_EQ(a.psn, b.psn);
  EXPECT_EQ(a.ack_req, b.ack_req);
  EXPECT_EQ(a.solicited, b.solicited);
  EXPECT_EQ(a.va, b.va);
  EXPECT_EQ(a.rkey, b.rkey);
  EXPECT_EQ(a.dma_len, b.dma_len);
  EXPECT_EQ(a.swap_add, b.swap_add);
  EXPECT_EQ(a.compare, b.compare);
  EXPECT_EQ(a.imm, b.imm);
  EXPECT_EQ(a.qkey, b.qkey);
  EXPECT_EQ(a.traffic_class, b.traffic_class);
  EXPECT_EQ(a.hop_limit, b.hop_limit);
  EXPECT_EQ(a.syndrome, b.syndrome);
  EXPECT_EQ(a.msn, b.msn);
  EXPECT_EQ(a.atomic_orig, b.atomic_orig);
  EXPECT_EQ(a.payload, b.payload);
}

struct Case {
  QpType transport;
  RcOp op;
};

std::vector<Case> EveryOpcode() {
  std::vector<Case> cases;
  for (int op = 0; op <= 0x17; ++op) {
    if (op == 0x15) continue;  // reserved in IBA table 38
    cases.push_back({QpType::kRc, static_cast<RcOp>(op)});
    if (op <= static_cast<int>(RcOp::kWriteOnlyImm)) {
      cases.push_back({QpType::kUc, static_cast<RcOp>(op)});
    }
  }
  cases.push_back({QpType::kUd, RcOp::kSendOnly});
  cases.push_back({QpType::kUd, RcOp::kSendOnlyImm});
  return cases;
}

TEST(WireTest, EveryOpcodeRoundTripsWithEveryPad) {
  int checked = 0;
  for (const Case& c : EveryOpcode()) {
    for (size_t payload : {0, 1, 2, 3, 4, 257}) {
      SCOPED_TRACE(testing::Message() << RcOpName(c.op) << " transport "
                                      << static_cast<int>(c.transport)
                                      << " payload " << payload);
      const Packet p = Sample(c.transport, c.op, payload);
      const std::vector<uint8_t> ip = EncodeRoceV2Ip(p, 9, kBase);
      EXPECT_EQ(ip.size() % 4, 0u);
      absl::StatusOr<Packet> back = DecodeRoceV2Ip(ip.data(), ip.size(), kBase);
      ASSERT_TRUE(back.ok()) << back.status();
      ExpectSame(*back, OnWire(p));
      // The Ethernet frame decodes to the same packet.
      const std::vector<uint8_t> frame = EncodeRoceV2(p, 9, kBase);
      absl::StatusOr<Packet> back2 = DecodeRoceV2(frame.data(), frame.size(), kBase);
      ASSERT_TRUE(back2.ok()) << back2.status();
      ExpectSame(*back2, OnWire(p));
      ++checked;
    }
  }
  EXPECT_EQ(checked, (23 + 12 + 2) * 6);
}

std::string Hex(const std::vector<uint8_t>& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

// Three packets byte for byte: the Ethernet, IPv4 and UDP headers, the BTH
// and extended headers (IBA 9.2, 9.3), the pad and the ICRC. Any change to
// the encoder that moves a byte shows here, not only in a round trip that
// would carry a mistake both ways.
TEST(WireTest, KnownPacketsEncodeToTheirBytes) {
  Packet write;
  write.transport = QpType::kRc;
  write.opcode = RcOp::kWriteOnly;
  write.src_node = 0;
  write.dst_node = 1;
  write.src_qpn = 0x11;
  write.dst_qpn = 0x12;
  write.psn = 0x123456;
  write.ack_req = true;
  write.va = 0x1122334455667788ull;
  write.rkey = 0xabcdef01;
  write.dma_len = 5;
  for (uint8_t b = 1; b <= 5; ++b) write.payload.push_back(b);  // pad 3
  // MACs 02:00:<IPv4>, EtherType 0x0800; IPv4 127.0.1.1 -> 127.0.1.2, id
  // 0x0102, DF, TTL 64, UDP; UDP 0xc003 -> 4791, checksum 0; BTH opcode
  // 0x0a (RC RDMA WRITE Only), PadCnt 3, P_Key 0xffff, QP 0x12, AckReq,
  // PSN 0x123456; RETH; 5 bytes, 3 of pad; ICRC.
  EXPECT_EQ(Hex(EncodeRoceV2(write, 0x0102, kBase)),
            "02007f00010202007f00010108004500004401024000401139a47f0001017f00"
            "0102c00312b7003000000a30ffff00000012801234561122334455667788abcd"
            "ef010000000501020304050000007bf952ac");

  Packet ud;
  ud.transport = QpType::kUd;
  ud.opcode = RcOp::kSendOnlyImm;
  ud.src_node = 2;
  ud.dst_node = 0;
  ud.src_qpn = 0x21;
  ud.dst_qpn = 0x22;
  ud.psn = 7;
  ud.qkey = 0x11111111;
  ud.imm = 0xdeadbeef;
  ud.solicited = true;
  ud.traffic_class = 0x28;
  ud.hop_limit = 3;
  for (uint8_t b = 9; b >= 2; --b) ud.payload.push_back(b);
  // TOS 0x28 and TTL 3 from the address handle; BTH opcode 0x65 (UD SEND
  // Only with Immediate), SE; DETH (Q_Key, source QP); ImmDt.
  EXPECT_EQ(Hex(EncodeRoceV2(ud, 0xfffe, kBase)),
            "02007f00010102007f000103080045280040fffe4000031177827f0001037f00"
            "0101c00312b7002c00006580ffff00000022000000071111111100000021dead"
            "beef0908070605040302b8f5e798");

  Packet ack;
  ack.transport = QpType::kRc;
  ack.opcode = RcOp::kAcknowledge;
  ack.src_node = 1;
  ack.dst_node = 0;
  ack.src_qpn = 0x12;
  ack.dst_qpn = 0x11;
  ack.psn = 0x123456;
  ack.syndrome = 0x1f;
  ack.msn = 9;
  // BTH opcode 0x11 (Acknowledge); AETH syndrome 0x1f, MSN 9.
  const std::vector<uint8_t> frame = EncodeRoceV2(ack, 3, kBase);
  EXPECT_EQ(Hex(frame),
            "02007f00010102007f0001020800450000300003400040113ab77f0001027f00"
            "0101c00312b7001c00001100ffff00000011001234561f000009b2e0b99d");
  // The UDP transport's form is the same without the Ethernet header.
  EXPECT_EQ(EncodeRoceV2Ip(ack, 3, kBase),
            std::vector<uint8_t>(frame.begin() + kEthHeaderLen, frame.end()));
}

// A datagram of the UDP transport: packets appended back to back, each as
// EncodeRoceV2Ip gives it, each of the length RoceV2IpLength says, and
// split again by ForEachPacketOfDatagram.
TEST(WireTest, AppendedPacketsAreTheEncodedOnesBackToBack) {
  std::vector<uint8_t> datagram = {0xaa};  // what was there stays
  std::vector<uint8_t> expected = datagram;
  uint16_t ip_id = 40;
  for (const Case& c : EveryOpcode()) {
    for (size_t payload : {0u, 1u, 3u, 4u, 1024u}) {
      const Packet p = Sample(c.transport, c.op, payload);
      const std::vector<uint8_t> one = EncodeRoceV2Ip(p, ip_id, kBase);
      EXPECT_EQ(RoceV2IpLength(p), one.size());
      EXPECT_EQ(AppendRoceV2Ip(p, ip_id, kBase, &datagram), one.size());
      expected.insert(expected.end(), one.begin(), one.end());
      ++ip_id;
    }
  }
  ASSERT_EQ(datagram, expected);
  size_t packets = 0;
  EXPECT_TRUE(ForEachPacketOfDatagram(
      absl::MakeConstSpan(datagram).subspan(1),
      [&](const uint8_t* ip, size_t len) {
        EXPECT_TRUE(DecodeRoceV2Ip(ip, len, kBase).ok()) << "packet " << packets;
        ++packets;
      }));
  EXPECT_EQ(packets, EveryOpcode().size() * 5);
}

TEST(WireTest, OnWireDropsWhatTheOpcodeDoesNotCarry) {
  const Packet w = OnWire(Sample(QpType::kRc, RcOp::kSendMiddle, 8));
  EXPECT_EQ(w.src_qpn, 0u);  // RC carries only the destination QP
  EXPECT_EQ(w.rkey, 0u);
  EXPECT_EQ(w.imm, 0u);
  EXPECT_EQ(w.syndrome, 0u);
  const Packet r = OnWire(Sample(QpType::kRc, RcOp::kReadRequest, 0));
  EXPECT_EQ(r.rkey, 0xdeadbeefu);
  EXPECT_EQ(r.dma_len, 4096u);
}

TEST(WireTest, LargeNodeIndicesMapToTheirAddresses) {
  Packet p = Sample(QpType::kRc, RcOp::kAcknowledge, 0);
  p.src_node = 4095;
  p.dst_node = 300;
  const std::vector<uint8_t> ip = EncodeRoceV2Ip(p, 1, kBase);
  absl::StatusOr<Packet> back = DecodeRoceV2Ip(ip.data(), ip.size(), kBase);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->src_node, 4095);
  EXPECT_EQ(back->dst_node, 300);
  // IPv4 source and destination: 127.0.1.1 + 4095 and 127.0.1.1 + 300.
  EXPECT_EQ(Ipv4ToString(uint32_t{ip[12]} << 24 | ip[13] << 16 | ip[14] << 8 |
                         ip[15]),
            "127.0.17.0");
  EXPECT_EQ(Ipv4ToString(uint32_t{ip[16]} << 24 | ip[17] << 16 | ip[18] << 8 |
                         ip[19]),
            "127.0.2.45");
}

TEST(WireTest, AddressesFollowTheFabricsBase) {
  Packet p = Sample(QpType::kRc, RcOp::kAcknowledge, 0);
  p.src_node = 0;
  p.dst_node = 1;
  const uint32_t other = 0x7f050001;  // 127.5.0.1
  const std::vector<uint8_t> ip = EncodeRoceV2Ip(p, 1, other);
  EXPECT_EQ(ip[12], 127);
  EXPECT_EQ(ip[13], 5);
  EXPECT_EQ(ip[15], 1);
  absl::StatusOr<Packet> same = DecodeRoceV2Ip(ip.data(), ip.size(), other);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->src_node, 0);
  EXPECT_EQ(same->dst_node, 1);
  // Decoded with the default base, 127.5.0.1 is some higher node; below the
  // base it is no node of the fabric at all.
  absl::StatusOr<Packet> below =
      DecodeRoceV2Ip(ip.data(), ip.size(), 0x7f060001);
  ASSERT_FALSE(below.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(below.status()));
  EXPECT_NE(below.status().message().find("127.5.0.1 -> 127.5.0.2"),
            std::string::npos)
      << below.status();
}

TEST(WireTest, AnAddressOutsideLoopbackIsNoNode) {
  Packet p = Sample(QpType::kRc, RcOp::kAcknowledge, 0);
  std::vector<uint8_t> ip = EncodeRoceV2Ip(p, 1, kBase);
  ip[12] = 10;  // source 10.0.1.1: not loopback, so never a sim node
  ip[10] = ip[11] = 0;
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += ip[i] << 8 | ip[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = static_cast<uint8_t>(~sum >> 8);
  ip[11] = static_cast<uint8_t>(~sum);
  absl::StatusOr<Packet> d = DecodeRoceV2Ip(ip.data(), ip.size(), kBase);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not a sim node"), std::string::npos)
      << d.status();
}

TEST(WireTest, EveryTruncationIsRefused) {
  const Packet p = Sample(QpType::kRc, RcOp::kCompareSwap, 0);
  const std::vector<uint8_t> ip = EncodeRoceV2Ip(p, 1, kBase);
  for (size_t n = 0; n < ip.size(); ++n) {
    std::vector<uint8_t> cut(ip.begin(), ip.begin() + n);
    absl::StatusOr<Packet> d = DecodeRoceV2Ip(cut.data(), cut.size(), kBase);
    EXPECT_FALSE(d.ok()) << n << " bytes";
  }
}

TEST(WireTest, AFlippedBitIsABadIcrcOrMalformed) {
  const Packet p = Sample(QpType::kRc, RcOp::kWriteOnly, 64);
  const std::vector<uint8_t> ip = EncodeRoceV2Ip(p, 1, kBase);
  int icrc = 0;
  for (size_t i = 0; i < ip.size(); ++i) {
    // TOS (1), TTL (8) and the UDP checksum (26, 27) are outside the ICRC
    // and do not break decoding; resv8a (20+8+4) is masked too.
    if (i == 1 || i == 8 || i == 26 || i == 27 || i == 32) continue;
    std::vector<uint8_t> bad = ip;
    bad[i] ^= 0x01;
    absl::StatusOr<Packet> d = DecodeRoceV2Ip(bad.data(), bad.size(), kBase);
    ASSERT_FALSE(d.ok()) << "byte " << i;
    if (absl::IsDataLoss(d.status())) ++icrc;
  }
  // Every flip past the UDP header fails the ICRC.
  EXPECT_GE(icrc, static_cast<int>(ip.size()) - 28 - 1);
}

TEST(WireTest, MalformedHeadersNameTheProblem) {
  std::vector<uint8_t> ip =
      EncodeRoceV2Ip(Sample(QpType::kUd, RcOp::kSendOnly, 4), 1, kBase);
  std::vector<uint8_t> bad = ip;
  bad[0] = 0x46;
  EXPECT_NE(DecodeRoceV2Ip(bad.data(), bad.size(), kBase).status().message().find(
                "version/IHL"),
            std::string::npos);
  bad = ip;
  bad[22] = 0x12;  // UDP destination port
  bad[10] = bad[11] = 0;
  EXPECT_FALSE(DecodeRoceV2Ip(bad.data(), bad.size(), kBase).ok());
  const uint8_t junk[3] = {1, 2, 3};
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeRoceV2Ip(junk, 3, kBase).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeRoceV2(junk, 3, kBase).status()));
}

TEST(WireTest, AnOpcodeOutsideItsTransportIsRefused) {
  // A UD packet whose opcode is a write: re-encode with a valid ICRC so the
  // opcode check is what refuses it.
  Packet p = Sample(QpType::kUd, RcOp::kSendOnly, 0);
  std::vector<uint8_t> ip = EncodeRoceV2Ip(p, 1, kBase);
  ip[28] = 0x6a;  // UD RDMA_WRITE_ONLY does not exist
  const uint32_t icrc = RoceV2IcrcIp(ip.data(), ip.size());
  for (int i = 0; i < 4; ++i) {
    ip[ip.size() - 4 + i] = static_cast<uint8_t>(icrc >> (8 * i));
  }
  absl::StatusOr<Packet> d = DecodeRoceV2Ip(ip.data(), ip.size(), kBase);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not an opcode"), std::string::npos)
      << d.status();
}

}  // namespace
}  // namespace verbsim::sim
