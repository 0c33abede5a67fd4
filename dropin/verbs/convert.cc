// Conversions between the ibverbs structs of <infiniband/verbs.h> and the
// verbsim value types (core/types.h mirrors the enums value for value).
#include <arpa/inet.h>

#include <cstring>

#include "dropin/verbs/state.h"

namespace verbsim::dropin {

void FillDeviceAttr(const DeviceAttr& in, const ibv_device& dev, int index,
                    ibv_device_attr* out) {
  std::memset(out, 0, sizeof(*out));
  std::snprintf(out->fw_ver, sizeof(out->fw_ver), "verbsim");
  out->node_guid = NodeGuid(index);
  out->sys_image_guid = NodeGuid(index);
  out->max_mr_size = in.max_mr_size;
  out->page_size_cap = in.page_size_cap;
  out->vendor_id = in.vendor_id;
  out->vendor_part_id = in.vendor_part_id;
  out->max_qp = in.max_qp;
  out->max_qp_wr = in.max_qp_wr;
  out->device_cap_flags = in.device_cap_flags;
  out->max_sge = in.max_sge;
  out->max_sge_rd = in.max_sge_rd;
  out->max_cq = in.max_cq;
  out->max_cqe = in.max_cqe;
  out->max_mr = in.max_mr;
  out->max_pd = in.max_pd;
  out->max_qp_rd_atom = in.max_qp_rd_atom;
  out->max_qp_init_rd_atom = in.max_qp_init_rd_atom;
  out->max_res_rd_atom = static_cast<int>(in.max_res_rd_atom);
  out->max_mcast_grp = in.max_mcast_grp;
  out->max_mcast_qp_attach = in.max_mcast_qp_attach;
  out->max_total_mcast_qp_attach = in.max_total_mcast_qp_attach;
  out->local_ca_ack_delay = static_cast<uint8_t>(in.local_ca_ack_delay);
  out->atomic_cap = static_cast<ibv_atomic_cap>(in.atomic_cap);
  out->max_mw = in.max_mw;
  out->max_ah = in.max_ah;
  out->max_srq = in.max_srq;
  out->max_srq_wr = in.max_srq_wr;
  out->max_srq_sge = in.max_srq_sge;
  out->max_pkeys = static_cast<uint16_t>(in.max_pkeys);
  out->phys_port_cnt = static_cast<uint8_t>(in.phys_port_cnt);
  (void)dev;
}

void FillPortAttr(const PortAttr& in, ibv_port_attr* out) {
  std::memset(out, 0, sizeof(*out));
  out->state = static_cast<ibv_port_state>(in.state);
  out->max_mtu = static_cast<ibv_mtu>(in.max_mtu);
  out->active_mtu = static_cast<ibv_mtu>(in.active_mtu);
  out->gid_tbl_len = in.gid_tbl_len;
  out->pkey_tbl_len = static_cast<uint16_t>(in.pkey_tbl_len);
  out->link_layer = static_cast<uint8_t>(in.link_layer);
  out->max_msg_sz = static_cast<uint32_t>(in.max_msg_sz);
  out->port_cap_flags = in.port_cap_flags;
  out->active_width = 2;  // 4X
  out->active_speed = 32; // EDR (25 Gb/s per lane)
  out->phys_state = in.state == IBV_PORT_ACTIVE ? 5 /* LinkUp */ : 3;
  out->max_vl_num = static_cast<uint8_t>(in.max_vl_num);
}

AhAttr ToAhAttr(const ibv_ah_attr& in) {
  AhAttr out;
  std::memcpy(out.dgid.data(), in.grh.dgid.raw, 16);
  out.sgid_index = in.grh.sgid_index;
  out.hop_limit = in.grh.hop_limit;
  out.traffic_class = in.grh.traffic_class;
  out.flow_label = in.grh.flow_label;
  out.dlid = in.dlid;
  out.sl = in.sl;
  out.port_num = in.port_num;
  out.is_global = in.is_global != 0;
  return out;
}

void FromAhAttr(const AhAttr& in, ibv_ah_attr* out) {
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->grh.dgid.raw, in.dgid.data(), 16);
  out->grh.sgid_index = in.sgid_index;
  out->grh.hop_limit = in.hop_limit;
  out->grh.traffic_class = in.traffic_class;
  out->grh.flow_label = in.flow_label;
  out->dlid = in.dlid;
  out->sl = in.sl;
  out->port_num = in.port_num;
  out->is_global = in.is_global ? 1 : 0;
}

void FillWc(const WorkCompletion& in, ibv_wc* out) {
  std::memset(out, 0, sizeof(*out));
  out->wr_id = in.wr_id;
  out->status = static_cast<ibv_wc_status>(in.status);
  out->opcode = static_cast<ibv_wc_opcode>(in.opcode);
  out->vendor_err = in.vendor_err;
  out->byte_len = in.byte_len;
  out->qp_num = in.qp_num;
  out->src_qp = in.src_qp;
  out->wc_flags = in.wc_flags;
  // ibv_wc keeps immediate data in network order; verbsim in host order.
  if (in.wc_flags & IBV_WC_WITH_INV) {
    out->invalidated_rkey = in.invalidated_rkey;
  } else {
    out->imm_data = htonl(in.imm_data);
  }
  out->pkey_index = in.pkey_index;
  out->slid = in.slid;
  out->sl = in.sl;
  out->dlid_path_bits = in.dlid_path_bits;
}

}  // namespace verbsim::dropin
