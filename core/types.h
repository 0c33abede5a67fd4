// Value types of the verbsim API. Every enum mirrors its libibverbs counterpart
// (<infiniband/verbs.h>) value for value, so a status, opcode, state or mask
// converts to and from the ibverbs type with a static_cast and no table.
#ifndef VERBSIM_CORE_TYPES_H_
#define VERBSIM_CORE_TYPES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace verbsim {

// enum ibv_wc_status, same order.
enum class WcStatus : int {
  kSuccess = 0,
  kLocLenErr,
  kLocQpOpErr,
  kLocEecOpErr,
  kLocProtErr,
  kWrFlushErr,
  kMwBindErr,
  kBadRespErr,
  kLocAccessErr,
  kRemInvReqErr,
  kRemAccessErr,
  kRemOpErr,
  kRetryExcErr,
  kRnrRetryExcErr,
  kLocRddViolErr,
  kRemInvRdReqErr,
  kRemAbortErr,
  kInvEecnErr,
  kInvEecStateErr,
  kFatalErr,
  kRespTimeoutErr,
  kGeneralErr,
};
inline constexpr int kNumWcStatus = 22;

// enum ibv_wc_opcode.
enum class WcOpcode : int {
  kSend = 0,
  kRdmaWrite = 1,
  kRdmaRead = 2,
  kCompSwap = 3,
  kFetchAdd = 4,
  kBindMw = 5,
  kLocalInv = 6,
  kRecv = 1 << 7,
  kRecvRdmaWithImm = (1 << 7) + 1,
};

// enum ibv_wr_opcode.
enum class WrOpcode : int {
  kRdmaWrite = 0,
  kRdmaWriteWithImm = 1,
  kSend = 2,
  kSendWithImm = 3,
  kRdmaRead = 4,
  kAtomicCmpAndSwp = 5,
  kAtomicFetchAndAdd = 6,
  kLocalInv = 7,
  kBindMw = 8,
  kSendWithInv = 9,
};

// enum ibv_qp_state.
enum class QpState : int {
  kReset = 0,
  kInit,
  kRtr,
  kRts,
  kSqd,
  kSqe,
  kErr,
  kUnknown,
};

// enum ibv_qp_type (the values libibverbs uses).
enum class QpType : int {
  kRc = 2,
  kUc = 3,
  kUd = 4,
};

// enum ibv_mtu.
enum class Mtu : int {
  k256 = 1,
  k512 = 2,
  k1024 = 3,
  k2048 = 4,
  k4096 = 5,
};
// Bytes of payload per packet for an MTU enum value; 0 for an invalid value.
int MtuBytes(Mtu mtu);

// enum ibv_atomic_cap.
enum class AtomicCap : int {
  kNone = 0,
  kHca = 1,
  kGlob = 2,
};

// enum ibv_event_type (the subset a verbs user meets; same values).
enum class AsyncEventType : int {
  kCqErr = 0,
  kQpFatal = 1,
  kQpReqErr = 2,
  kQpAccessErr = 3,
  kCommEst = 4,
  kSqDrained = 5,
  kPathMig = 6,
  kPathMigErr = 7,
  kDeviceFatal = 8,
  kPortActive = 9,
  kPortErr = 10,
  kLidChange = 11,
  kPkeyChange = 12,
  kSmChange = 13,
  kSrqErr = 14,
  kSrqLimitReached = 15,
  kQpLastWqeReached = 16,
  kClientReregister = 17,
  kGidChange = 18,
};

// IBV_ACCESS_* flags.
enum AccessFlags : uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,
  kAccessRemoteAtomic = 1u << 3,
  kAccessMwBind = 1u << 4,
  kAccessZeroBased = 1u << 5,
  kAccessOnDemand = 1u << 6,
};
// Bits real devices know besides those: IBV_ACCESS_HUGETLB, and the
// optional range (IBV_ACCESS_OPTIONAL_RANGE, bits 20..29: RELAXED_ORDERING is
// bit 20), which libibverbs drops when the device does not support it.
inline constexpr uint32_t kAccessHugeTlb = 1u << 7;
inline constexpr uint32_t kAccessOptionalRange = 0x3ff00000u;
// Every access bit the sim understands; any other bit is rejected (EINVAL)
// unless the profile ignores it (SimProfile::ignored_access_bits).
inline constexpr uint32_t kAccessAllKnown =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
    kAccessRemoteAtomic | kAccessMwBind | kAccessZeroBased | kAccessOnDemand;

// IBV_SEND_* flags.
enum SendFlags : uint32_t {
  kSendFence = 1u << 0,
  kSendSignaled = 1u << 1,
  kSendSolicited = 1u << 2,
  kSendInline = 1u << 3,
};
inline constexpr uint32_t kSendAllKnown =
    kSendFence | kSendSignaled | kSendSolicited | kSendInline;

// IBV_WC_* completion flags.
enum WcFlags : uint32_t {
  kWcGrh = 1u << 0,
  kWcWithImm = 1u << 1,
  kWcWithInv = 1u << 3,
};

// enum ibv_qp_attr_mask.
enum QpAttrMask : uint32_t {
  kQpState = 1u << 0,
  kQpCurState = 1u << 1,
  kQpEnSqdAsyncNotify = 1u << 2,
  kQpAccessFlags = 1u << 3,
  kQpPkeyIndex = 1u << 4,
  kQpPort = 1u << 5,
  kQpQkey = 1u << 6,
  kQpAv = 1u << 7,
  kQpPathMtu = 1u << 8,
  kQpTimeout = 1u << 9,
  kQpRetryCnt = 1u << 10,
  kQpRnrRetry = 1u << 11,
  kQpRqPsn = 1u << 12,
  kQpMaxQpRdAtomic = 1u << 13,
  kQpAltPath = 1u << 14,
  kQpMinRnrTimer = 1u << 15,
  kQpSqPsn = 1u << 16,
  kQpMaxDestRdAtomic = 1u << 17,
  kQpPathMigState = 1u << 18,
  kQpCap = 1u << 19,
  kQpDestQpn = 1u << 20,
};

// A 128-bit GID. The sim gives node i the IPv4-mapped GID of its loopback
// address (127.0.1.(i+1) by default, sim/addresses.h), as RoCEv2 over IPv4
// would.
using Gid = std::array<uint8_t, 16>;
std::string GidToString(const Gid& gid);

// struct ibv_device_attr, the fields verbsim models.
struct DeviceAttr {
  std::string name;
  uint64_t max_mr_size = 0;
  uint64_t page_size_cap = 0;
  uint32_t vendor_id = 0;
  uint32_t vendor_part_id = 0;
  int max_qp = 0;
  int max_qp_wr = 0;
  int max_sge = 0;
  int max_sge_rd = 0;
  int max_cq = 0;
  int max_cqe = 0;
  int max_mr = 0;
  int max_pd = 0;
  int max_qp_rd_atom = 0;
  int max_qp_init_rd_atom = 0;
  int max_inline_data = 0;
  int max_mw = 0;
  int max_ah = 0;
  int max_srq = 0;
  int max_srq_wr = 0;
  int max_srq_sge = 0;
  int max_pkeys = 0;
  AtomicCap atomic_cap = AtomicCap::kNone;
  int phys_port_cnt = 1;
  // struct ibv_device's node_type: 1 (IBV_NODE_CA) for InfiniBand and RoCE,
  // 4 (IBV_NODE_RNIC) for iWARP, whose transport is then IWARP.
  int node_type = 1;
  // What ibv_query_device reports besides the limits above.
  uint32_t device_cap_flags = 0;  // enum ibv_device_cap_flags bits
  uint64_t max_res_rd_atom = 0;
  int max_mcast_grp = 0;
  int max_mcast_qp_attach = 0;
  int max_total_mcast_qp_attach = 0;
  int local_ca_ack_delay = 0;
};

// struct ibv_port_attr, the fields verbsim models.
struct PortAttr {
  int state = 4;  // IBV_PORT_ACTIVE
  Mtu max_mtu = Mtu::k4096;
  Mtu active_mtu = Mtu::k1024;
  int gid_tbl_len = 1;
  int pkey_tbl_len = 1;
  int link_layer = 2;  // IBV_LINK_LAYER_ETHERNET
  uint32_t port_cap_flags = 0x10000;  // IBV_PORT_CM_SUP
  uint64_t max_msg_sz = uint64_t{1} << 31;
  int max_vl_num = 1;
};

// struct ibv_sge.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

class Ah;
class Mr;
class Mw;

// enum ibv_mw_type.
enum class MwType : int {
  kType1 = 1,
  kType2 = 2,
};

// struct ibv_mw_bind_info: what a bind puts in a memory window. A zero
// length unbinds a type 1 window (ibv_bind_mw(3)).
struct MwBindInfo {
  Mr* mr = nullptr;
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t mw_access_flags = 0;
};

// struct ibv_mw_bind: the arguments of ibv_bind_mw(3) (type 1 windows).
struct MwBind {
  uint64_t wr_id = 0;
  uint32_t send_flags = 0;
  MwBindInfo bind_info;
  // The window's rkey as the caller names it (ibv_mw::rkey under the
  // libibverbs ABI); unset: Mw::rkey(). The bind gives the window the next
  // key after it, and fails (MW_BIND_ERR) when it is not the window's rkey
  // as the bind executes, as after an earlier bind that failed: the verb
  // moves the key on at once, the window keeps its old one (ibv_bind_mw(3);
  // rdma-core's rxe and the kernel's rxe_bind_mw).
  std::optional<uint32_t> current_rkey;
};

// ibv_inc_rkey(3): the next rkey of a memory window; only the low 8 bits
// (the key the consumer owns) change.
inline uint32_t IncRkey(uint32_t rkey) {
  return (rkey & 0xffffff00u) | ((rkey + 1) & 0xffu);
}

// IBV_REREG_MR_* flags of ibv_rereg_mr(3).
enum ReregFlags : uint32_t {
  kReregChangeTranslation = 1u << 0,
  kReregChangePd = 1u << 1,
  kReregChangeAccess = 1u << 2,
};
inline constexpr uint32_t kReregAllKnown =
    kReregChangeTranslation | kReregChangePd | kReregChangeAccess;

// The multicast QPN of a UD send to a multicast group (IBA 10.5.2.5).
inline constexpr uint32_t kMulticastQpn = 0xffffff;

// struct ibv_send_wr, without the linked-list pointer (lists are spans).
struct SendWr {
  uint64_t wr_id = 0;
  absl::Span<const Sge> sg_list;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t send_flags = 0;
  uint32_t imm_data = 0;         // kSendWithImm / kRdmaWriteWithImm
  uint32_t invalidate_rkey = 0;  // kSendWithInv / kLocalInv
  struct {
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
  } rdma;
  struct {
    uint64_t remote_addr = 0;
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    uint32_t rkey = 0;
  } atomic;
  struct {
    Ah* ah = nullptr;
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;
  } ud;
  // kBindMw (type 2 windows): the window, the rkey it gets (ibv_inc_rkey of
  // its current one) and what it is bound to.
  struct {
    Mw* mw = nullptr;
    uint32_t rkey = 0;
    MwBindInfo bind_info;
    // The window's rkey as the poster names it, where it names one: the
    // libibverbs ABI carries ibv_mw::rkey, which ibv_post_send(3) leaves to
    // the application to update after each bind. A bind whose named rkey is
    // not the window's when it executes fails (MW_BIND_ERR), as rdma-core's
    // rxe and the kernel's rxe_bind_mw answer. Unset: the window is named by
    // its object alone (Mw::rkey() is always current).
    std::optional<uint32_t> current_rkey;
  } bind_mw;
};

// struct ibv_recv_wr, without the linked-list pointer.
struct RecvWr {
  uint64_t wr_id = 0;
  absl::Span<const Sge> sg_list;
};

// struct ibv_wc. On an error completion only wr_id, status, qp_num and
// vendor_err are valid (ibv_poll_cq(3)).
struct WorkCompletion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  uint32_t vendor_err = 0;
  uint32_t byte_len = 0;
  uint32_t imm_data = 0;  // host order here; ibverbs keeps network order
  uint32_t invalidated_rkey = 0;
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;
  uint32_t wc_flags = 0;
  uint16_t pkey_index = 0;
  uint16_t slid = 0;
  uint8_t sl = 0;
  uint8_t dlid_path_bits = 0;
};

// struct ibv_qp_cap.
struct QpCap {
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline_data = 0;
};

// struct ibv_ah_attr (RoCE form: always global).
struct AhAttr {
  Gid dgid{};
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;
  uint16_t dlid = 0;
  uint8_t sl = 0;
  uint8_t port_num = 1;
  bool is_global = true;
};

class Cq;
class Srq;

// struct ibv_srq_attr.
struct SrqAttr {
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  // IBV_EVENT_SRQ_LIMIT_REACHED fires once when fewer WRs than this remain;
  // 0: not armed.
  uint32_t srq_limit = 0;
};

// enum ibv_srq_attr_mask.
enum SrqAttrMask : uint32_t {
  kSrqMaxWr = 1u << 0,
  kSrqLimit = 1u << 1,
};

// What a provider counts for one QP (Qp::QueryCounters). The sim counts all
// of these; a device counts per port, not per QP, and reports none.
struct QpCounters {
  uint64_t packets_sent = 0;
  uint64_t packets_received = 0;
  uint64_t packets_dropped = 0;
  uint64_t retransmissions = 0;  // WQEs sent again after a go-back
  uint64_t timeouts = 0;         // local ACK timer expiries counted
  uint64_t rnr_naks = 0;         // RNR NAKs received
  uint64_t naks_received = 0;    // other NAKs received
  uint64_t naks_sent = 0;        // NAKs of every kind sent
  uint64_t no_recv_drops = 0;    // UD/UC messages dropped: no receive posted
  uint64_t qkey_drops = 0;       // UD datagrams dropped: Q_Key mismatch
  uint64_t msg_drops = 0;        // UC messages dropped (gap, rkey, access)
  // Sim across processes: ACK timer expiries not counted because the peer's
  // process had not run since the QP's latest packet left
  // (docs/udp-transport.md, "Time and progress").
  uint64_t timeouts_held = 0;
};

// struct ibv_qp_init_attr.
struct QpInitAttr {
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  // Receives come from this shared receive queue (cap.max_recv_wr and
  // max_recv_sge are then ignored, as ibv_create_qp(3) says).
  Srq* srq = nullptr;
  QpCap cap;
  QpType qp_type = QpType::kRc;
  bool sq_sig_all = false;
};

// struct ibv_qp_attr.
struct QpAttr {
  QpState qp_state = QpState::kReset;
  QpState cur_qp_state = QpState::kReset;
  Mtu path_mtu = Mtu::k1024;
  uint32_t qkey = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint32_t dest_qp_num = 0;
  uint32_t qp_access_flags = 0;
  QpCap cap;
  AhAttr ah_attr;
  uint16_t pkey_index = 0;
  bool en_sqd_async_notify = false;
  bool sq_draining = false;
  uint8_t max_rd_atomic = 0;
  uint8_t max_dest_rd_atomic = 0;
  uint8_t min_rnr_timer = 0;
  uint8_t port_num = 0;
  uint8_t timeout = 0;
  uint8_t retry_cnt = 0;
  uint8_t rnr_retry = 0;
};

// An asynchronous event (struct ibv_async_event): which object it concerns
// is given by number (qp_num / cq handle), since the object may be gone.
struct AsyncEvent {
  AsyncEventType type = AsyncEventType::kCqErr;
  uint32_t qp_num = 0;
  uint32_t cq_id = 0;
  uint32_t srq_id = 0;
  uint8_t port_num = 0;
};

// Whether `gid` is a multicast GID: ff00::/8, or an IPv4-mapped address in
// 224.0.0.0/4 (RoCEv2 over IPv4).
bool IsMulticastGid(const Gid& gid);

}  // namespace verbsim

#endif  // VERBSIM_CORE_TYPES_H_
