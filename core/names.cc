#include "core/names.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace verbsim {
namespace {

struct StatusText {
  absl::string_view name;
  absl::string_view description;
};

// Indexed by WcStatus; descriptions follow the wording of
// ibv_wc_status_str(3).
constexpr StatusText kStatusText[kNumWcStatus] = {
    {"SUCCESS", "success"},
    {"LOC_LEN_ERR", "local length error"},
    {"LOC_QP_OP_ERR", "local QP operation error"},
    {"LOC_EEC_OP_ERR", "local EE context operation error"},
    {"LOC_PROT_ERR", "local protection error"},
    {"WR_FLUSH_ERR", "Work Request Flushed Error"},
    {"MW_BIND_ERR", "memory management operation error"},
    {"BAD_RESP_ERR", "bad response error"},
    {"LOC_ACCESS_ERR", "local access error"},
    {"REM_INV_REQ_ERR", "remote invalid request error"},
    {"REM_ACCESS_ERR", "remote access error"},
    {"REM_OP_ERR", "remote operation error"},
    {"RETRY_EXC_ERR", "transport retry counter exceeded"},
    {"RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
    {"LOC_RDD_VIOL_ERR", "local RDD violation error"},
    {"REM_INV_RD_REQ_ERR", "remote invalid RD request"},
    {"REM_ABORT_ERR", "aborted error"},
    {"INV_EECN_ERR", "invalid EE context number"},
    {"INV_EEC_STATE_ERR", "invalid EE context state"},
    {"FATAL_ERR", "fatal error"},
    {"RESP_TIMEOUT_ERR", "response timeout error"},
    {"GENERAL_ERR", "general error"},
};

template <typename Enum>
std::string Unknown(Enum v) {
  return absl::StrFormat("UNKNOWN(%d)", static_cast<int>(v));
}

std::string FlagsName(uint32_t bits,
                      const std::vector<std::pair<uint32_t, const char*>>& table) {
  if (bits == 0) return "0";
  std::vector<std::string> parts;
  for (const auto& [bit, name] : table) {
    if (bits & bit) {
      parts.push_back(name);
      bits &= ~bit;
    }
  }
  if (bits != 0) parts.push_back(absl::StrFormat("0x%x", bits));
  return absl::StrJoin(parts, "|");
}

}  // namespace

absl::string_view WcStatusName(WcStatus status) {
  int i = static_cast<int>(status);
  if (i < 0 || i >= kNumWcStatus) return "UNKNOWN_STATUS";
  return kStatusText[i].name;
}

absl::string_view WcStatusDescription(WcStatus status) {
  int i = static_cast<int>(status);
  if (i < 0 || i >= kNumWcStatus) return "unknown";
  return kStatusText[i].description;
}

absl::string_view WcOpcodeName(WcOpcode opcode) {
  switch (opcode) {
    case WcOpcode::kSend: return "SEND";
    case WcOpcode::kRdmaWrite: return "RDMA_WRITE";
    case WcOpcode::kRdmaRead: return "RDMA_READ";
    case WcOpcode::kCompSwap: return "COMP_SWAP";
    case WcOpcode::kFetchAdd: return "FETCH_ADD";
    case WcOpcode::kBindMw: return "BIND_MW";
    case WcOpcode::kLocalInv: return "LOCAL_INV";
    case WcOpcode::kRecv: return "RECV";
    case WcOpcode::kRecvRdmaWithImm: return "RECV_RDMA_WITH_IMM";
  }
  return "UNKNOWN_WC_OPCODE";
}

absl::string_view WrOpcodeName(WrOpcode opcode) {
  switch (opcode) {
    case WrOpcode::kRdmaWrite: return "RDMA_WRITE";
    case WrOpcode::kRdmaWriteWithImm: return "RDMA_WRITE_WITH_IMM";
    case WrOpcode::kSend: return "SEND";
    case WrOpcode::kSendWithImm: return "SEND_WITH_IMM";
    case WrOpcode::kRdmaRead: return "RDMA_READ";
    case WrOpcode::kAtomicCmpAndSwp: return "ATOMIC_CMP_AND_SWP";
    case WrOpcode::kAtomicFetchAndAdd: return "ATOMIC_FETCH_AND_ADD";
    case WrOpcode::kLocalInv: return "LOCAL_INV";
    case WrOpcode::kBindMw: return "BIND_MW";
    case WrOpcode::kSendWithInv: return "SEND_WITH_INV";
  }
  return "UNKNOWN_WR_OPCODE";
}

absl::string_view QpStateName(QpState state) {
  switch (state) {
    case QpState::kReset: return "RESET";
    case QpState::kInit: return "INIT";
    case QpState::kRtr: return "RTR";
    case QpState::kRts: return "RTS";
    case QpState::kSqd: return "SQD";
    case QpState::kSqe: return "SQE";
    case QpState::kErr: return "ERR";
    case QpState::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN_QP_STATE";
}

absl::string_view QpTypeName(QpType type) {
  switch (type) {
    case QpType::kRc: return "RC";
    case QpType::kUc: return "UC";
    case QpType::kUd: return "UD";
  }
  return "UNKNOWN_QP_TYPE";
}

absl::string_view AsyncEventTypeName(AsyncEventType type) {
  static constexpr absl::string_view kNames[] = {
      "CQ_ERR",          "QP_FATAL",        "QP_REQ_ERR",     "QP_ACCESS_ERR",
      "COMM_EST",        "SQ_DRAINED",      "PATH_MIG",       "PATH_MIG_ERR",
      "DEVICE_FATAL",    "PORT_ACTIVE",     "PORT_ERR",       "LID_CHANGE",
      "PKEY_CHANGE",     "SM_CHANGE",       "SRQ_ERR",        "SRQ_LIMIT_REACHED",
      "QP_LAST_WQE_REACHED", "CLIENT_REREGISTER", "GID_CHANGE"};
  int i = static_cast<int>(type);
  if (i < 0 || i >= static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) {
    return "UNKNOWN_EVENT";
  }
  return kNames[i];
}

std::string AccessFlagsName(uint32_t access) {
  return FlagsName(access, {{kAccessLocalWrite, "LOCAL_WRITE"},
                            {kAccessRemoteWrite, "REMOTE_WRITE"},
                            {kAccessRemoteRead, "REMOTE_READ"},
                            {kAccessRemoteAtomic, "REMOTE_ATOMIC"},
                            {kAccessMwBind, "MW_BIND"},
                            {kAccessZeroBased, "ZERO_BASED"},
                            {kAccessOnDemand, "ON_DEMAND"}});
}

std::string QpAttrMaskName(uint32_t mask) {
  return FlagsName(mask, {{kQpState, "STATE"},
                          {kQpCurState, "CUR_STATE"},
                          {kQpEnSqdAsyncNotify, "EN_SQD_ASYNC_NOTIFY"},
                          {kQpAccessFlags, "ACCESS_FLAGS"},
                          {kQpPkeyIndex, "PKEY_INDEX"},
                          {kQpPort, "PORT"},
                          {kQpQkey, "QKEY"},
                          {kQpAv, "AV"},
                          {kQpPathMtu, "PATH_MTU"},
                          {kQpTimeout, "TIMEOUT"},
                          {kQpRetryCnt, "RETRY_CNT"},
                          {kQpRnrRetry, "RNR_RETRY"},
                          {kQpRqPsn, "RQ_PSN"},
                          {kQpMaxQpRdAtomic, "MAX_QP_RD_ATOMIC"},
                          {kQpAltPath, "ALT_PATH"},
                          {kQpMinRnrTimer, "MIN_RNR_TIMER"},
                          {kQpSqPsn, "SQ_PSN"},
                          {kQpMaxDestRdAtomic, "MAX_DEST_RD_ATOMIC"},
                          {kQpPathMigState, "PATH_MIG_STATE"},
                          {kQpCap, "CAP"},
                          {kQpDestQpn, "DEST_QPN"}});
}

std::ostream& operator<<(std::ostream& os, WcStatus v) {
  return os << WcStatusName(v);
}
std::ostream& operator<<(std::ostream& os, WcOpcode v) {
  return os << WcOpcodeName(v);
}
std::ostream& operator<<(std::ostream& os, WrOpcode v) {
  return os << WrOpcodeName(v);
}
std::ostream& operator<<(std::ostream& os, MwType v) {
  return os << (v == MwType::kType1   ? "TYPE_1"
                : v == MwType::kType2 ? "TYPE_2"
                                      : "TYPE_?");
}
std::ostream& operator<<(std::ostream& os, QpState v) {
  return os << QpStateName(v);
}
std::ostream& operator<<(std::ostream& os, QpType v) {
  return os << QpTypeName(v);
}
std::ostream& operator<<(std::ostream& os, AsyncEventType v) {
  return os << AsyncEventTypeName(v);
}
std::ostream& operator<<(std::ostream& os, const WorkCompletion& wc) {
  os << "{wr_id=" << wc.wr_id << " status=" << wc.status
     << " opcode=" << wc.opcode << " qp_num=" << wc.qp_num;
  if (wc.status == WcStatus::kSuccess) {
    os << " byte_len=" << wc.byte_len;
    if (wc.wc_flags & kWcWithImm) os << " imm=" << wc.imm_data;
  }
  return os << "}";
}

}  // namespace verbsim
