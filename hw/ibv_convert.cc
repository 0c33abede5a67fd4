// Conversions between the ibverbs structs and the core value types (see
// hw/ibv_convert.h), and the compile-time proof that core's enums and flag
// bits are ibverbs' own, which lets both users convert those with a cast.
#include "hw/ibv_convert.h"

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>

namespace verbsim {
namespace {

// ---------------------------------------------------------------------------
// core/types.h mirrors <infiniband/verbs.h> value for value.

template <typename Core, typename Ibv>
constexpr bool Same(Core core, Ibv ibv) {
  return static_cast<int64_t>(core) == static_cast<int64_t>(ibv);
}

static_assert(Same(WcStatus::kSuccess, IBV_WC_SUCCESS));
static_assert(Same(WcStatus::kLocLenErr, IBV_WC_LOC_LEN_ERR));
static_assert(Same(WcStatus::kLocQpOpErr, IBV_WC_LOC_QP_OP_ERR));
static_assert(Same(WcStatus::kLocEecOpErr, IBV_WC_LOC_EEC_OP_ERR));
static_assert(Same(WcStatus::kLocProtErr, IBV_WC_LOC_PROT_ERR));
static_assert(Same(WcStatus::kWrFlushErr, IBV_WC_WR_FLUSH_ERR));
static_assert(Same(WcStatus::kMwBindErr, IBV_WC_MW_BIND_ERR));
static_assert(Same(WcStatus::kBadRespErr, IBV_WC_BAD_RESP_ERR));
static_assert(Same(WcStatus::kLocAccessErr, IBV_WC_LOC_ACCESS_ERR));
static_assert(Same(WcStatus::kRemInvReqErr, IBV_WC_REM_INV_REQ_ERR));
static_assert(Same(WcStatus::kRemAccessErr, IBV_WC_REM_ACCESS_ERR));
static_assert(Same(WcStatus::kRemOpErr, IBV_WC_REM_OP_ERR));
static_assert(Same(WcStatus::kRetryExcErr, IBV_WC_RETRY_EXC_ERR));
static_assert(Same(WcStatus::kRnrRetryExcErr, IBV_WC_RNR_RETRY_EXC_ERR));
static_assert(Same(WcStatus::kLocRddViolErr, IBV_WC_LOC_RDD_VIOL_ERR));
static_assert(Same(WcStatus::kRemInvRdReqErr, IBV_WC_REM_INV_RD_REQ_ERR));
static_assert(Same(WcStatus::kRemAbortErr, IBV_WC_REM_ABORT_ERR));
static_assert(Same(WcStatus::kInvEecnErr, IBV_WC_INV_EECN_ERR));
static_assert(Same(WcStatus::kInvEecStateErr, IBV_WC_INV_EEC_STATE_ERR));
static_assert(Same(WcStatus::kFatalErr, IBV_WC_FATAL_ERR));
static_assert(Same(WcStatus::kRespTimeoutErr, IBV_WC_RESP_TIMEOUT_ERR));
static_assert(Same(WcStatus::kGeneralErr, IBV_WC_GENERAL_ERR));
static_assert(kNumWcStatus == IBV_WC_GENERAL_ERR + 1);

static_assert(Same(WcOpcode::kSend, IBV_WC_SEND));
static_assert(Same(WcOpcode::kRdmaWrite, IBV_WC_RDMA_WRITE));
static_assert(Same(WcOpcode::kRdmaRead, IBV_WC_RDMA_READ));
static_assert(Same(WcOpcode::kCompSwap, IBV_WC_COMP_SWAP));
static_assert(Same(WcOpcode::kFetchAdd, IBV_WC_FETCH_ADD));
static_assert(Same(WcOpcode::kBindMw, IBV_WC_BIND_MW));
static_assert(Same(WcOpcode::kLocalInv, IBV_WC_LOCAL_INV));
static_assert(Same(WcOpcode::kRecv, IBV_WC_RECV));
static_assert(Same(WcOpcode::kRecvRdmaWithImm, IBV_WC_RECV_RDMA_WITH_IMM));

static_assert(Same(WrOpcode::kRdmaWrite, IBV_WR_RDMA_WRITE));
static_assert(Same(WrOpcode::kRdmaWriteWithImm, IBV_WR_RDMA_WRITE_WITH_IMM));
static_assert(Same(WrOpcode::kSend, IBV_WR_SEND));
static_assert(Same(WrOpcode::kSendWithImm, IBV_WR_SEND_WITH_IMM));
static_assert(Same(WrOpcode::kRdmaRead, IBV_WR_RDMA_READ));
static_assert(Same(WrOpcode::kAtomicCmpAndSwp, IBV_WR_ATOMIC_CMP_AND_SWP));
static_assert(Same(WrOpcode::kAtomicFetchAndAdd, IBV_WR_ATOMIC_FETCH_AND_ADD));
static_assert(Same(WrOpcode::kLocalInv, IBV_WR_LOCAL_INV));
static_assert(Same(WrOpcode::kBindMw, IBV_WR_BIND_MW));
static_assert(Same(WrOpcode::kSendWithInv, IBV_WR_SEND_WITH_INV));

static_assert(Same(QpState::kReset, IBV_QPS_RESET));
static_assert(Same(QpState::kInit, IBV_QPS_INIT));
static_assert(Same(QpState::kRtr, IBV_QPS_RTR));
static_assert(Same(QpState::kRts, IBV_QPS_RTS));
static_assert(Same(QpState::kSqd, IBV_QPS_SQD));
static_assert(Same(QpState::kSqe, IBV_QPS_SQE));
static_assert(Same(QpState::kErr, IBV_QPS_ERR));
static_assert(Same(QpState::kUnknown, IBV_QPS_UNKNOWN));

static_assert(Same(QpType::kRc, IBV_QPT_RC));
static_assert(Same(QpType::kUc, IBV_QPT_UC));
static_assert(Same(QpType::kUd, IBV_QPT_UD));

static_assert(Same(Mtu::k256, IBV_MTU_256));
static_assert(Same(Mtu::k512, IBV_MTU_512));
static_assert(Same(Mtu::k1024, IBV_MTU_1024));
static_assert(Same(Mtu::k2048, IBV_MTU_2048));
static_assert(Same(Mtu::k4096, IBV_MTU_4096));

static_assert(Same(AtomicCap::kNone, IBV_ATOMIC_NONE));
static_assert(Same(AtomicCap::kHca, IBV_ATOMIC_HCA));
static_assert(Same(AtomicCap::kGlob, IBV_ATOMIC_GLOB));

static_assert(Same(AsyncEventType::kCqErr, IBV_EVENT_CQ_ERR));
static_assert(Same(AsyncEventType::kQpFatal, IBV_EVENT_QP_FATAL));
static_assert(Same(AsyncEventType::kQpReqErr, IBV_EVENT_QP_REQ_ERR));
static_assert(Same(AsyncEventType::kQpAccessErr, IBV_EVENT_QP_ACCESS_ERR));
static_assert(Same(AsyncEventType::kCommEst, IBV_EVENT_COMM_EST));
static_assert(Same(AsyncEventType::kSqDrained, IBV_EVENT_SQ_DRAINED));
static_assert(Same(AsyncEventType::kPathMig, IBV_EVENT_PATH_MIG));
static_assert(Same(AsyncEventType::kPathMigErr, IBV_EVENT_PATH_MIG_ERR));
static_assert(Same(AsyncEventType::kDeviceFatal, IBV_EVENT_DEVICE_FATAL));
static_assert(Same(AsyncEventType::kPortActive, IBV_EVENT_PORT_ACTIVE));
static_assert(Same(AsyncEventType::kPortErr, IBV_EVENT_PORT_ERR));
static_assert(Same(AsyncEventType::kLidChange, IBV_EVENT_LID_CHANGE));
static_assert(Same(AsyncEventType::kPkeyChange, IBV_EVENT_PKEY_CHANGE));
static_assert(Same(AsyncEventType::kSmChange, IBV_EVENT_SM_CHANGE));
static_assert(Same(AsyncEventType::kSrqErr, IBV_EVENT_SRQ_ERR));
static_assert(Same(AsyncEventType::kSrqLimitReached,
                   IBV_EVENT_SRQ_LIMIT_REACHED));
static_assert(Same(AsyncEventType::kQpLastWqeReached,
                   IBV_EVENT_QP_LAST_WQE_REACHED));
static_assert(Same(AsyncEventType::kClientReregister,
                   IBV_EVENT_CLIENT_REREGISTER));
static_assert(Same(AsyncEventType::kGidChange, IBV_EVENT_GID_CHANGE));

static_assert(Same(MwType::kType1, IBV_MW_TYPE_1));
static_assert(Same(MwType::kType2, IBV_MW_TYPE_2));

static_assert(Same(kAccessLocalWrite, IBV_ACCESS_LOCAL_WRITE));
static_assert(Same(kAccessRemoteWrite, IBV_ACCESS_REMOTE_WRITE));
static_assert(Same(kAccessRemoteRead, IBV_ACCESS_REMOTE_READ));
static_assert(Same(kAccessRemoteAtomic, IBV_ACCESS_REMOTE_ATOMIC));
static_assert(Same(kAccessMwBind, IBV_ACCESS_MW_BIND));
static_assert(Same(kAccessZeroBased, IBV_ACCESS_ZERO_BASED));
static_assert(Same(kAccessOnDemand, IBV_ACCESS_ON_DEMAND));
static_assert(Same(kAccessHugeTlb, IBV_ACCESS_HUGETLB));
static_assert(Same(kAccessOptionalRange, IBV_ACCESS_OPTIONAL_RANGE));

static_assert(Same(kSendFence, IBV_SEND_FENCE));
static_assert(Same(kSendSignaled, IBV_SEND_SIGNALED));
static_assert(Same(kSendSolicited, IBV_SEND_SOLICITED));
static_assert(Same(kSendInline, IBV_SEND_INLINE));

static_assert(Same(kWcGrh, IBV_WC_GRH));
static_assert(Same(kWcWithImm, IBV_WC_WITH_IMM));
static_assert(Same(kWcWithInv, IBV_WC_WITH_INV));

static_assert(Same(kQpState, IBV_QP_STATE));
static_assert(Same(kQpCurState, IBV_QP_CUR_STATE));
static_assert(Same(kQpEnSqdAsyncNotify, IBV_QP_EN_SQD_ASYNC_NOTIFY));
static_assert(Same(kQpAccessFlags, IBV_QP_ACCESS_FLAGS));
static_assert(Same(kQpPkeyIndex, IBV_QP_PKEY_INDEX));
static_assert(Same(kQpPort, IBV_QP_PORT));
static_assert(Same(kQpQkey, IBV_QP_QKEY));
static_assert(Same(kQpAv, IBV_QP_AV));
static_assert(Same(kQpPathMtu, IBV_QP_PATH_MTU));
static_assert(Same(kQpTimeout, IBV_QP_TIMEOUT));
static_assert(Same(kQpRetryCnt, IBV_QP_RETRY_CNT));
static_assert(Same(kQpRnrRetry, IBV_QP_RNR_RETRY));
static_assert(Same(kQpRqPsn, IBV_QP_RQ_PSN));
static_assert(Same(kQpMaxQpRdAtomic, IBV_QP_MAX_QP_RD_ATOMIC));
static_assert(Same(kQpAltPath, IBV_QP_ALT_PATH));
static_assert(Same(kQpMinRnrTimer, IBV_QP_MIN_RNR_TIMER));
static_assert(Same(kQpSqPsn, IBV_QP_SQ_PSN));
static_assert(Same(kQpMaxDestRdAtomic, IBV_QP_MAX_DEST_RD_ATOMIC));
static_assert(Same(kQpPathMigState, IBV_QP_PATH_MIG_STATE));
static_assert(Same(kQpCap, IBV_QP_CAP));
static_assert(Same(kQpDestQpn, IBV_QP_DEST_QPN));

static_assert(Same(kSrqMaxWr, IBV_SRQ_MAX_WR));
static_assert(Same(kSrqLimit, IBV_SRQ_LIMIT));

static_assert(Same(kReregChangeTranslation, IBV_REREG_MR_CHANGE_TRANSLATION));
static_assert(Same(kReregChangePd, IBV_REREG_MR_CHANGE_PD));
static_assert(Same(kReregChangeAccess, IBV_REREG_MR_CHANGE_ACCESS));
static_assert(Same(kReregAllKnown, IBV_REREG_MR_FLAGS_SUPPORTED));

static_assert(sizeof(Gid) == sizeof(ibv_gid::raw));

}  // namespace

// ---------------------------------------------------------------------------
// Structs.

Gid GidFromIbv(const ibv_gid& in) {
  Gid out;
  std::memcpy(out.data(), in.raw, out.size());
  return out;
}

void GidToIbv(const Gid& in, ibv_gid* out) {
  std::memcpy(out->raw, in.data(), in.size());
}

AhAttr AhAttrFromIbv(const ibv_ah_attr& in) {
  AhAttr out;
  out.dgid = GidFromIbv(in.grh.dgid);
  out.flow_label = in.grh.flow_label;
  out.sgid_index = in.grh.sgid_index;
  out.hop_limit = in.grh.hop_limit;
  out.traffic_class = in.grh.traffic_class;
  out.dlid = in.dlid;
  out.sl = in.sl;
  out.is_global = in.is_global != 0;
  out.port_num = in.port_num;
  return out;
}

void AhAttrToIbv(const AhAttr& in, ibv_ah_attr* out) {
  std::memset(out, 0, sizeof(*out));
  GidToIbv(in.dgid, &out->grh.dgid);
  out->grh.flow_label = in.flow_label;
  out->grh.sgid_index = in.sgid_index;
  out->grh.hop_limit = in.hop_limit;
  out->grh.traffic_class = in.traffic_class;
  out->dlid = in.dlid;
  out->sl = in.sl;
  out->is_global = in.is_global ? 1 : 0;
  out->port_num = in.port_num;
}

QpCap QpCapFromIbv(const ibv_qp_cap& in) {
  QpCap out;
  out.max_send_wr = in.max_send_wr;
  out.max_recv_wr = in.max_recv_wr;
  out.max_send_sge = in.max_send_sge;
  out.max_recv_sge = in.max_recv_sge;
  out.max_inline_data = in.max_inline_data;
  return out;
}

void QpCapToIbv(const QpCap& in, ibv_qp_cap* out) {
  out->max_send_wr = in.max_send_wr;
  out->max_recv_wr = in.max_recv_wr;
  out->max_send_sge = in.max_send_sge;
  out->max_recv_sge = in.max_recv_sge;
  out->max_inline_data = in.max_inline_data;
}

QpAttr QpAttrFromIbv(const ibv_qp_attr& in) {
  QpAttr out;
  out.qp_state = static_cast<QpState>(RawEnum(in.qp_state));
  out.cur_qp_state = static_cast<QpState>(RawEnum(in.cur_qp_state));
  out.path_mtu = static_cast<Mtu>(RawEnum(in.path_mtu));
  out.qkey = in.qkey;
  out.rq_psn = in.rq_psn;
  out.sq_psn = in.sq_psn;
  out.dest_qp_num = in.dest_qp_num;
  out.qp_access_flags = in.qp_access_flags;
  out.cap = QpCapFromIbv(in.cap);
  out.ah_attr = AhAttrFromIbv(in.ah_attr);
  out.pkey_index = in.pkey_index;
  out.en_sqd_async_notify = in.en_sqd_async_notify != 0;
  out.sq_draining = in.sq_draining != 0;
  out.max_rd_atomic = in.max_rd_atomic;
  out.max_dest_rd_atomic = in.max_dest_rd_atomic;
  out.min_rnr_timer = in.min_rnr_timer;
  out.port_num = in.port_num;
  out.timeout = in.timeout;
  out.retry_cnt = in.retry_cnt;
  out.rnr_retry = in.rnr_retry;
  return out;
}

void QpAttrToIbv(const QpAttr& in, ibv_qp_attr* out) {
  std::memset(out, 0, sizeof(*out));
  out->qp_state = static_cast<ibv_qp_state>(in.qp_state);
  out->cur_qp_state = static_cast<ibv_qp_state>(in.cur_qp_state);
  out->path_mtu = static_cast<ibv_mtu>(in.path_mtu);
  out->qkey = in.qkey;
  out->rq_psn = in.rq_psn;
  out->sq_psn = in.sq_psn;
  out->dest_qp_num = in.dest_qp_num;
  out->qp_access_flags = in.qp_access_flags;
  QpCapToIbv(in.cap, &out->cap);
  AhAttrToIbv(in.ah_attr, &out->ah_attr);
  out->pkey_index = in.pkey_index;
  out->en_sqd_async_notify = in.en_sqd_async_notify ? 1 : 0;
  out->sq_draining = in.sq_draining ? 1 : 0;
  out->max_rd_atomic = in.max_rd_atomic;
  out->max_dest_rd_atomic = in.max_dest_rd_atomic;
  out->min_rnr_timer = in.min_rnr_timer;
  out->port_num = in.port_num;
  out->timeout = in.timeout;
  out->retry_cnt = in.retry_cnt;
  out->rnr_retry = in.rnr_retry;
}

SrqAttr SrqAttrFromIbv(const ibv_srq_attr& in) {
  SrqAttr out;
  out.max_wr = in.max_wr;
  out.max_sge = in.max_sge;
  out.srq_limit = in.srq_limit;
  return out;
}

void SrqAttrToIbv(const SrqAttr& in, ibv_srq_attr* out) {
  std::memset(out, 0, sizeof(*out));
  out->max_wr = in.max_wr;
  out->max_sge = in.max_sge;
  out->srq_limit = in.srq_limit;
}

WorkCompletion WcFromIbv(const ibv_wc& in) {
  WorkCompletion out;
  out.wr_id = in.wr_id;
  out.status = static_cast<WcStatus>(in.status);
  out.opcode = static_cast<WcOpcode>(in.opcode);
  out.vendor_err = in.vendor_err;
  out.byte_len = in.byte_len;
  if (in.wc_flags & IBV_WC_WITH_IMM) out.imm_data = ntohl(in.imm_data);
  if (in.wc_flags & IBV_WC_WITH_INV) out.invalidated_rkey = in.invalidated_rkey;
  out.qp_num = in.qp_num;
  out.src_qp = in.src_qp;
  out.wc_flags = in.wc_flags;
  out.pkey_index = in.pkey_index;
  out.slid = in.slid;
  out.sl = in.sl;
  out.dlid_path_bits = in.dlid_path_bits;
  return out;
}

void WcToIbv(const WorkCompletion& in, ibv_wc* out) {
  std::memset(out, 0, sizeof(*out));
  out->wr_id = in.wr_id;
  out->status = static_cast<ibv_wc_status>(in.status);
  out->opcode = static_cast<ibv_wc_opcode>(in.opcode);
  out->vendor_err = in.vendor_err;
  out->byte_len = in.byte_len;
  if (in.wc_flags & IBV_WC_WITH_INV) {
    out->invalidated_rkey = in.invalidated_rkey;
  } else {
    out->imm_data = htonl(in.imm_data);
  }
  out->qp_num = in.qp_num;
  out->src_qp = in.src_qp;
  out->wc_flags = in.wc_flags;
  out->pkey_index = in.pkey_index;
  out->slid = in.slid;
  out->sl = in.sl;
  out->dlid_path_bits = in.dlid_path_bits;
}

DeviceAttr DeviceAttrFromIbv(const ibv_device_attr& in) {
  DeviceAttr out;
  out.max_mr_size = in.max_mr_size;
  out.page_size_cap = in.page_size_cap;
  out.vendor_id = in.vendor_id;
  out.vendor_part_id = in.vendor_part_id;
  out.max_qp = in.max_qp;
  out.max_qp_wr = in.max_qp_wr;
  out.max_sge = in.max_sge;
  out.max_sge_rd = in.max_sge_rd;
  out.max_cq = in.max_cq;
  out.max_cqe = in.max_cqe;
  out.max_mr = in.max_mr;
  out.max_pd = in.max_pd;
  out.max_qp_rd_atom = in.max_qp_rd_atom;
  out.max_qp_init_rd_atom = in.max_qp_init_rd_atom;
  out.max_mw = in.max_mw;
  out.max_ah = in.max_ah;
  out.max_srq = in.max_srq;
  out.max_srq_wr = in.max_srq_wr;
  out.max_srq_sge = in.max_srq_sge;
  out.max_pkeys = in.max_pkeys;
  out.atomic_cap = static_cast<AtomicCap>(in.atomic_cap);
  out.phys_port_cnt = in.phys_port_cnt;
  out.device_cap_flags = in.device_cap_flags;
  out.max_res_rd_atom = static_cast<uint64_t>(in.max_res_rd_atom);
  out.max_mcast_grp = in.max_mcast_grp;
  out.max_mcast_qp_attach = in.max_mcast_qp_attach;
  out.max_total_mcast_qp_attach = in.max_total_mcast_qp_attach;
  out.local_ca_ack_delay = in.local_ca_ack_delay;
  return out;
}

void DeviceAttrToIbv(const DeviceAttr& in, ibv_device_attr* out) {
  std::memset(out, 0, sizeof(*out));
  out->max_mr_size = in.max_mr_size;
  out->page_size_cap = in.page_size_cap;
  out->vendor_id = in.vendor_id;
  out->vendor_part_id = in.vendor_part_id;
  out->max_qp = in.max_qp;
  out->max_qp_wr = in.max_qp_wr;
  out->max_sge = in.max_sge;
  out->max_sge_rd = in.max_sge_rd;
  out->max_cq = in.max_cq;
  out->max_cqe = in.max_cqe;
  out->max_mr = in.max_mr;
  out->max_pd = in.max_pd;
  out->max_qp_rd_atom = in.max_qp_rd_atom;
  out->max_qp_init_rd_atom = in.max_qp_init_rd_atom;
  out->max_mw = in.max_mw;
  out->max_ah = in.max_ah;
  out->max_srq = in.max_srq;
  out->max_srq_wr = in.max_srq_wr;
  out->max_srq_sge = in.max_srq_sge;
  out->max_pkeys = static_cast<uint16_t>(in.max_pkeys);
  out->atomic_cap = static_cast<ibv_atomic_cap>(in.atomic_cap);
  out->phys_port_cnt = static_cast<uint8_t>(in.phys_port_cnt);
  out->device_cap_flags = in.device_cap_flags;
  out->max_res_rd_atom = static_cast<int>(in.max_res_rd_atom);
  out->max_mcast_grp = in.max_mcast_grp;
  out->max_mcast_qp_attach = in.max_mcast_qp_attach;
  out->max_total_mcast_qp_attach = in.max_total_mcast_qp_attach;
  out->local_ca_ack_delay = static_cast<uint8_t>(in.local_ca_ack_delay);
}

PortAttr PortAttrFromIbv(const ibv_port_attr& in) {
  PortAttr out;
  out.state = in.state;
  out.max_mtu = static_cast<Mtu>(in.max_mtu);
  out.active_mtu = static_cast<Mtu>(in.active_mtu);
  out.gid_tbl_len = in.gid_tbl_len;
  out.pkey_tbl_len = in.pkey_tbl_len;
  out.link_layer = in.link_layer;
  out.port_cap_flags = in.port_cap_flags;
  out.max_msg_sz = in.max_msg_sz;
  out.max_vl_num = in.max_vl_num;
  return out;
}

void PortAttrToIbv(const PortAttr& in, ibv_port_attr* out) {
  std::memset(out, 0, sizeof(*out));
  out->state = static_cast<ibv_port_state>(in.state);
  out->max_mtu = static_cast<ibv_mtu>(in.max_mtu);
  out->active_mtu = static_cast<ibv_mtu>(in.active_mtu);
  out->gid_tbl_len = in.gid_tbl_len;
  out->pkey_tbl_len = static_cast<uint16_t>(in.pkey_tbl_len);
  out->link_layer = static_cast<uint8_t>(in.link_layer);
  out->port_cap_flags = in.port_cap_flags;
  out->max_msg_sz = static_cast<uint32_t>(in.max_msg_sz);
  out->max_vl_num = static_cast<uint8_t>(in.max_vl_num);
}

}  // namespace verbsim
