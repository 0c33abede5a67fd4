// Tests of the ibverbs struct conversions that the hw provider and the
// drop-in libibverbs share (hw/ibv_convert.h): every modelled field survives
// a round trip, the fields core does not model go to ibverbs as zero, and
// the byte order and union rules of ibv_wc hold.
#include "hw/ibv_convert.h"

#include <arpa/inet.h>

#include <cstring>

#include "gtest/gtest.h"

namespace verbsim {
namespace {

AhAttr SomeAhAttr() {
  AhAttr a;
  for (size_t i = 0; i < a.dgid.size(); ++i) {
    a.dgid[i] = static_cast<uint8_t>(i + 1);
  }
  a.sgid_index = 3;
  a.hop_limit = 17;
  a.traffic_class = 0x28;
  a.flow_label = 0xabcde;
  a.dlid = 0x1234;
  a.sl = 5;
  a.port_num = 2;
  a.is_global = true;
  return a;
}

void ExpectSameAh(const AhAttr& a, const AhAttr& b) {
  EXPECT_EQ(a.dgid, b.dgid);
  EXPECT_EQ(a.sgid_index, b.sgid_index);
  EXPECT_EQ(a.hop_limit, b.hop_limit);
  EXPECT_EQ(a.traffic_class, b.traffic_class);
  EXPECT_EQ(a.flow_label, b.flow_label);
  EXPECT_EQ(a.dlid, b.dlid);
  EXPECT_EQ(a.sl, b.sl);
  EXPECT_EQ(a.port_num, b.port_num);
  EXPECT_EQ(a.is_global, b.is_global);
}

TEST(IbvConvertTest, AhAttrRoundTripsAndClearsWhatCoreLacks) {
  const AhAttr a = SomeAhAttr();
  ibv_ah_attr raw;
  std::memset(&raw, 0xa5, sizeof(raw));
  AhAttrToIbv(a, &raw);
  EXPECT_EQ(raw.src_path_bits, 0);
  EXPECT_EQ(raw.static_rate, 0);
  EXPECT_EQ(raw.is_global, 1);
  EXPECT_EQ(raw.grh.flow_label, 0xabcdeu);
  ExpectSameAh(AhAttrFromIbv(raw), a);
}

TEST(IbvConvertTest, GidRoundTrips) {
  Gid gid;
  for (size_t i = 0; i < gid.size(); ++i) {
    gid[i] = static_cast<uint8_t>(0xf0 - i);
  }
  ibv_gid raw;
  GidToIbv(gid, &raw);
  EXPECT_EQ(std::memcmp(raw.raw, gid.data(), 16), 0);
  EXPECT_EQ(GidFromIbv(raw), gid);
}

TEST(IbvConvertTest, QpCapWritesOnlyTheCap) {
  ibv_qp_init_attr init;
  std::memset(&init, 0, sizeof(init));
  init.sq_sig_all = 1;
  QpCap cap;
  cap.max_send_wr = 10;
  cap.max_recv_wr = 11;
  cap.max_send_sge = 3;
  cap.max_recv_sge = 4;
  cap.max_inline_data = 64;
  QpCapToIbv(cap, &init.cap);
  EXPECT_EQ(init.sq_sig_all, 1);
  const QpCap back = QpCapFromIbv(init.cap);
  EXPECT_EQ(back.max_send_wr, 10u);
  EXPECT_EQ(back.max_recv_wr, 11u);
  EXPECT_EQ(back.max_send_sge, 3u);
  EXPECT_EQ(back.max_recv_sge, 4u);
  EXPECT_EQ(back.max_inline_data, 64u);
}

TEST(IbvConvertTest, QpAttrRoundTrips) {
  QpAttr a;
  a.qp_state = QpState::kRts;
  a.cur_qp_state = QpState::kRtr;
  a.path_mtu = Mtu::k2048;
  a.qkey = 0x11111111;
  a.rq_psn = 0x123456;
  a.sq_psn = 0x654321;
  a.dest_qp_num = 77;
  a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead;
  a.cap.max_send_wr = 9;
  a.cap.max_inline_data = 32;
  a.ah_attr = SomeAhAttr();
  a.pkey_index = 1;
  a.en_sqd_async_notify = true;
  a.sq_draining = true;
  a.max_rd_atomic = 4;
  a.max_dest_rd_atomic = 5;
  a.min_rnr_timer = 12;
  a.port_num = 1;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 6;
  ibv_qp_attr raw;
  QpAttrToIbv(a, &raw);
  EXPECT_EQ(raw.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(raw.path_mtu, IBV_MTU_2048);
  EXPECT_EQ(raw.alt_port_num, 0);
  const QpAttr b = QpAttrFromIbv(raw);
  EXPECT_EQ(b.qp_state, a.qp_state);
  EXPECT_EQ(b.cur_qp_state, a.cur_qp_state);
  EXPECT_EQ(b.path_mtu, a.path_mtu);
  EXPECT_EQ(b.qkey, a.qkey);
  EXPECT_EQ(b.rq_psn, a.rq_psn);
  EXPECT_EQ(b.sq_psn, a.sq_psn);
  EXPECT_EQ(b.dest_qp_num, a.dest_qp_num);
  EXPECT_EQ(b.qp_access_flags, a.qp_access_flags);
  EXPECT_EQ(b.cap.max_send_wr, a.cap.max_send_wr);
  EXPECT_EQ(b.cap.max_inline_data, a.cap.max_inline_data);
  ExpectSameAh(b.ah_attr, a.ah_attr);
  EXPECT_EQ(b.pkey_index, a.pkey_index);
  EXPECT_EQ(b.en_sqd_async_notify, a.en_sqd_async_notify);
  EXPECT_EQ(b.sq_draining, a.sq_draining);
  EXPECT_EQ(b.max_rd_atomic, a.max_rd_atomic);
  EXPECT_EQ(b.max_dest_rd_atomic, a.max_dest_rd_atomic);
  EXPECT_EQ(b.min_rnr_timer, a.min_rnr_timer);
  EXPECT_EQ(b.port_num, a.port_num);
  EXPECT_EQ(b.timeout, a.timeout);
  EXPECT_EQ(b.retry_cnt, a.retry_cnt);
  EXPECT_EQ(b.rnr_retry, a.rnr_retry);
}

// A program may store any number in an enum field; it arrives as that number.
TEST(IbvConvertTest, QpAttrKeepsOutOfRangeEnumsAsNumbers) {
  ibv_qp_attr raw;
  std::memset(&raw, 0, sizeof(raw));
  const int state = 99;
  const int mtu = 42;
  std::memcpy(&raw.qp_state, &state, sizeof(state));
  std::memcpy(&raw.path_mtu, &mtu, sizeof(mtu));
  const QpAttr a = QpAttrFromIbv(raw);
  EXPECT_EQ(static_cast<int>(a.qp_state), 99);
  EXPECT_EQ(static_cast<int>(a.path_mtu), 42);
  EXPECT_EQ(RawEnum(raw.qp_state), 99);
}

TEST(IbvConvertTest, SrqAttrRoundTrips) {
  SrqAttr a;
  a.max_wr = 100;
  a.max_sge = 2;
  a.srq_limit = 10;
  ibv_srq_attr raw;
  SrqAttrToIbv(a, &raw);
  const SrqAttr b = SrqAttrFromIbv(raw);
  EXPECT_EQ(b.max_wr, 100u);
  EXPECT_EQ(b.max_sge, 2u);
  EXPECT_EQ(b.srq_limit, 10u);
}

TEST(IbvConvertTest, WcImmediateDataIsInNetworkOrderInIbverbs) {
  WorkCompletion wc;
  wc.wr_id = 5;
  wc.status = WcStatus::kSuccess;
  wc.opcode = WcOpcode::kRecvRdmaWithImm;
  wc.byte_len = 8;
  wc.imm_data = 0x01020304;
  wc.wc_flags = kWcWithImm;
  wc.qp_num = 9;
  wc.src_qp = 10;
  wc.slid = 3;
  wc.sl = 1;
  ibv_wc raw;
  WcToIbv(wc, &raw);
  EXPECT_EQ(raw.imm_data, htonl(0x01020304));
  EXPECT_EQ(raw.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  const WorkCompletion back = WcFromIbv(raw);
  EXPECT_EQ(back.wr_id, 5u);
  EXPECT_EQ(back.imm_data, 0x01020304u);
  EXPECT_EQ(back.invalidated_rkey, 0u);
  EXPECT_EQ(back.opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(back.byte_len, 8u);
  EXPECT_EQ(back.qp_num, 9u);
  EXPECT_EQ(back.src_qp, 10u);
  EXPECT_EQ(back.slid, 3);
  EXPECT_EQ(back.sl, 1);
}

TEST(IbvConvertTest, WcUnionFollowsTheFlags) {
  WorkCompletion wc;
  wc.opcode = WcOpcode::kRecv;
  wc.invalidated_rkey = 0xdeadbe00;
  wc.wc_flags = kWcWithInv;
  ibv_wc raw;
  WcToIbv(wc, &raw);
  EXPECT_EQ(raw.invalidated_rkey, 0xdeadbe00u);
  const WorkCompletion back = WcFromIbv(raw);
  EXPECT_EQ(back.invalidated_rkey, 0xdeadbe00u);
  EXPECT_EQ(back.imm_data, 0u);

  // Neither flag: the union is not read.
  raw.wc_flags = 0;
  EXPECT_EQ(WcFromIbv(raw).invalidated_rkey, 0u);
  EXPECT_EQ(WcFromIbv(raw).imm_data, 0u);
}

TEST(IbvConvertTest, DeviceAttrRoundTripsItsLimits) {
  DeviceAttr a;
  a.name = "not converted";
  a.max_mr_size = uint64_t{1} << 40;
  a.page_size_cap = 0xfffff000;
  a.vendor_id = 0x2c9;
  a.vendor_part_id = 7;
  a.max_qp = 1000;
  a.max_qp_wr = 2000;
  a.max_sge = 30;
  a.max_sge_rd = 29;
  a.max_cq = 300;
  a.max_cqe = 4000;
  a.max_mr = 500;
  a.max_pd = 600;
  a.max_qp_rd_atom = 16;
  a.max_qp_init_rd_atom = 15;
  a.max_inline_data = 128;
  a.max_mw = 70;
  a.max_ah = 80;
  a.max_srq = 90;
  a.max_srq_wr = 91;
  a.max_srq_sge = 92;
  a.max_pkeys = 64;
  a.atomic_cap = AtomicCap::kHca;
  a.phys_port_cnt = 2;
  a.device_cap_flags = 0x12345;
  a.max_res_rd_atom = 123;
  a.max_mcast_grp = 8;
  a.max_mcast_qp_attach = 9;
  a.max_total_mcast_qp_attach = 10;
  a.local_ca_ack_delay = 15;
  ibv_device_attr raw;
  std::memset(&raw, 0xa5, sizeof(raw));
  DeviceAttrToIbv(a, &raw);
  EXPECT_EQ(raw.fw_ver[0], 0);
  EXPECT_EQ(raw.node_guid, 0u);
  EXPECT_EQ(raw.max_ee, 0);
  const DeviceAttr b = DeviceAttrFromIbv(raw);
  EXPECT_EQ(b.name, "");
  EXPECT_EQ(b.max_inline_data, 0);
  EXPECT_EQ(b.max_mr_size, a.max_mr_size);
  EXPECT_EQ(b.page_size_cap, a.page_size_cap);
  EXPECT_EQ(b.vendor_id, a.vendor_id);
  EXPECT_EQ(b.vendor_part_id, a.vendor_part_id);
  EXPECT_EQ(b.max_qp, a.max_qp);
  EXPECT_EQ(b.max_qp_wr, a.max_qp_wr);
  EXPECT_EQ(b.max_sge, a.max_sge);
  EXPECT_EQ(b.max_sge_rd, a.max_sge_rd);
  EXPECT_EQ(b.max_cq, a.max_cq);
  EXPECT_EQ(b.max_cqe, a.max_cqe);
  EXPECT_EQ(b.max_mr, a.max_mr);
  EXPECT_EQ(b.max_pd, a.max_pd);
  EXPECT_EQ(b.max_qp_rd_atom, a.max_qp_rd_atom);
  EXPECT_EQ(b.max_qp_init_rd_atom, a.max_qp_init_rd_atom);
  EXPECT_EQ(b.max_mw, a.max_mw);
  EXPECT_EQ(b.max_ah, a.max_ah);
  EXPECT_EQ(b.max_srq, a.max_srq);
  EXPECT_EQ(b.max_srq_wr, a.max_srq_wr);
  EXPECT_EQ(b.max_srq_sge, a.max_srq_sge);
  EXPECT_EQ(b.max_pkeys, a.max_pkeys);
  EXPECT_EQ(b.atomic_cap, a.atomic_cap);
  EXPECT_EQ(b.phys_port_cnt, a.phys_port_cnt);
  EXPECT_EQ(b.device_cap_flags, a.device_cap_flags);
  EXPECT_EQ(b.max_res_rd_atom, a.max_res_rd_atom);
  EXPECT_EQ(b.max_mcast_grp, a.max_mcast_grp);
  EXPECT_EQ(b.max_mcast_qp_attach, a.max_mcast_qp_attach);
  EXPECT_EQ(b.max_total_mcast_qp_attach, a.max_total_mcast_qp_attach);
  EXPECT_EQ(b.local_ca_ack_delay, a.local_ca_ack_delay);
}

TEST(IbvConvertTest, PortAttrRoundTripsWhatCoreModels) {
  PortAttr a;
  a.state = IBV_PORT_DOWN;
  a.max_mtu = Mtu::k4096;
  a.active_mtu = Mtu::k2048;
  a.gid_tbl_len = 16;
  a.pkey_tbl_len = 2;
  a.link_layer = IBV_LINK_LAYER_INFINIBAND;
  a.port_cap_flags = 0x10000;
  a.max_msg_sz = uint64_t{1} << 30;
  a.max_vl_num = 4;
  ibv_port_attr raw;
  std::memset(&raw, 0xa5, sizeof(raw));
  PortAttrToIbv(a, &raw);
  EXPECT_EQ(raw.lid, 0);
  EXPECT_EQ(raw.active_width, 0);
  EXPECT_EQ(raw.phys_state, 0);
  const PortAttr b = PortAttrFromIbv(raw);
  EXPECT_EQ(b.state, a.state);
  EXPECT_EQ(b.max_mtu, a.max_mtu);
  EXPECT_EQ(b.active_mtu, a.active_mtu);
  EXPECT_EQ(b.gid_tbl_len, a.gid_tbl_len);
  EXPECT_EQ(b.pkey_tbl_len, a.pkey_tbl_len);
  EXPECT_EQ(b.link_layer, a.link_layer);
  EXPECT_EQ(b.port_cap_flags, a.port_cap_flags);
  EXPECT_EQ(b.max_msg_sz, a.max_msg_sz);
  EXPECT_EQ(b.max_vl_num, a.max_vl_num);
}

}  // namespace
}  // namespace verbsim
