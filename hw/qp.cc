// QPs of the "hw" provider, all but posting (hw/post.cc): creation, the
// state machine through ibv_modify_qp, queries and multicast; and the
// address handles that UD QPs send to.
#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/errors.h"
#include "core/names.h"
#include "hw/ibv_convert.h"
#include "hw/objects.h"
#include "hw/verbs.h"

namespace verbsim {
namespace hw {
namespace {

constexpr uint32_t kAllQpAttrMask = (1u << 21) - 1;

}  // namespace

// --- Creation ---------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Qp>> HwPd::CreateQp(const QpInitAttr& attr) {
  if (absl::Status s = Check(); !s.ok()) return s;
  if (attr.qp_type != QpType::kRc && attr.qp_type != QpType::kUc &&
      attr.qp_type != QpType::kUd) {
    return Errno(EINVAL, "CreateQp: qp_type %d is not RC, UC or UD",
                 static_cast<int>(attr.qp_type));
  }
  std::shared_ptr<CqRes> cqs[2];
  const char* names[2] = {"send_cq", "recv_cq"};
  Cq* given[2] = {attr.send_cq, attr.recv_cq};
  for (int i = 0; i < 2; ++i) {
    if (given[i] == nullptr) {
      return Errno(EINVAL, "CreateQp: %s is null", names[i]);
    }
    auto* hw = dynamic_cast<HwCq*>(given[i]);
    if (hw == nullptr) {
      return Errno(EINVAL, "CreateQp: %s is not an hw CQ", names[i]);
    }
    if (hw->res() == nullptr) {
      return Errno(EINVAL, "CreateQp: %s was destroyed", names[i]);
    }
    if (hw->res()->dev != res_->dev) {
      return Errno(EINVAL, "CreateQp: %s belongs to another context", names[i]);
    }
    cqs[i] = hw->res();
  }
  std::shared_ptr<SrqRes> srq;
  if (attr.srq != nullptr) {
    auto* hw = dynamic_cast<HwSrq*>(attr.srq);
    if (hw == nullptr || hw->res() == nullptr) {
      return Errno(EINVAL, "CreateQp: srq is not a live hw SRQ");
    }
    if (hw->res()->pd->dev != res_->dev) {
      return Errno(EINVAL, "CreateQp: srq belongs to another context");
    }
    srq = hw->res();
  }
  // With an SRQ the receive caps are ignored (ibv_create_qp(3)).
  const uint32_t recv_wr = srq != nullptr ? 0 : attr.cap.max_recv_wr;
  const uint32_t recv_sge = srq != nullptr ? 0 : attr.cap.max_recv_sge;
  const DeviceAttr& dev = context_->device_attr();
  const struct {
    const char* name;
    uint32_t value;
    int max;
  } caps[] = {
      {"max_send_wr", attr.cap.max_send_wr, dev.max_qp_wr},
      {"max_recv_wr", recv_wr, dev.max_qp_wr},
      {"max_send_sge", attr.cap.max_send_sge, dev.max_sge},
      {"max_recv_sge", recv_sge, dev.max_sge},
      {"max_inline_data", attr.cap.max_inline_data, dev.max_inline_data},
  };
  for (const auto& cap : caps) {
    if (cap.value > static_cast<uint32_t>(std::max(cap.max, 0))) {
      return Errno(EINVAL, "CreateQp: %s %u exceeds the device limit %d of %s",
                   cap.name, cap.value, cap.max, dev.name);
    }
  }
  ibv_qp_init_attr init = {};
  init.send_cq = cqs[0]->cq;
  init.recv_cq = cqs[1]->cq;
  QpCapToIbv(attr.cap, &init.cap);
  init.cap.max_recv_wr = recv_wr;
  init.cap.max_recv_sge = recv_sge;
  init.srq = srq != nullptr ? srq->srq : nullptr;
  init.qp_type = static_cast<ibv_qp_type>(attr.qp_type);
  init.sq_sig_all = attr.sq_sig_all ? 1 : 0;
  auto res = std::make_shared<QpRes>();
  res->qp = ibv_create_qp(res_->pd, &init);
  if (res->qp == nullptr) {
    return SysError(
        errno,
        absl::StrFormat("ibv_create_qp(%s, send_wr %u, recv_wr %u, "
                        "send_sge %u, recv_sge %u, inline %u)",
                        QpTypeName(attr.qp_type), attr.cap.max_send_wr,
                        attr.cap.max_recv_wr, attr.cap.max_send_sge,
                        attr.cap.max_recv_sge, attr.cap.max_inline_data));
  }
  res->pd = res_;
  res->send_cq = cqs[0];
  res->recv_cq = cqs[1];
  res->srq = std::move(srq);
  // The caps the device actually granted (ibv_create_qp(3) writes them back).
  QpInitAttr actual = attr;
  actual.cap = QpCapFromIbv(init.cap);
  return std::unique_ptr<Qp>(
      new HwQp(std::move(res), this, actual, dev.phys_port_cnt));
}

// --- Qp ---------------------------------------------------------------------

absl::Status HwQp::Check() const {
  return res_ != nullptr ? absl::OkStatus()
                         : Dead(absl::StrFormat("qp %u", qp_num_));
}

absl::Status HwQp::Destroy() {
  if (res_ == nullptr) return Dead(absl::StrFormat("qp %u", qp_num_));
  int ret = ibv_destroy_qp(res_->qp);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_destroy_qp(qp %u)", qp_num_));
  }
  res_->qp = nullptr;
  res_.reset();
  return absl::OkStatus();
}

QpState HwQp::state() const {
  if (res_ == nullptr) return QpState::kUnknown;
  ibv_qp_attr attr = {};
  ibv_qp_init_attr init = {};
  if (ibv_query_qp(res_->qp, &attr, IBV_QP_STATE, &init) != 0) {
    return QpState::kUnknown;
  }
  return static_cast<QpState>(attr.qp_state);
}

absl::Status HwQp::Modify(const QpAttr& attr, uint32_t mask) {
  if (absl::Status s = Check(); !s.ok()) return s;
  if ((mask & ~kAllQpAttrMask) != 0) {
    // What ibv_modify_qp answers (rdma-core ibv_cmd_modify_qp).
    return Errno(EOPNOTSUPP, "Modify qp %u: mask bits 0x%x past "
                 "IBV_QP_DEST_QPN", qp_num_, mask & ~kAllQpAttrMask);
  }
  if ((mask & (kQpAltPath | kQpPathMigState)) != 0) {
    return Errno(EINVAL,
                 "Modify qp %u: %s not supported (QpAttr has no alternate "
                 "path or migration state)",
                 qp_num_,
                 QpAttrMaskName(mask & (kQpAltPath | kQpPathMigState)));
  }
  auto valid_state = [](QpState s) {
    return s >= QpState::kReset && s <= QpState::kErr;
  };
  if ((mask & kQpState) && !valid_state(attr.qp_state)) {
    return Errno(EINVAL, "Modify qp %u: qp_state %d is not a QP state", qp_num_,
                 static_cast<int>(attr.qp_state));
  }
  if ((mask & kQpCurState) && !valid_state(attr.cur_qp_state)) {
    return Errno(EINVAL, "Modify qp %u: cur_qp_state %d is not a QP state",
                 qp_num_, static_cast<int>(attr.cur_qp_state));
  }
  if ((mask & kQpPathMtu) && MtuBytes(attr.path_mtu) == 0) {
    return Errno(EINVAL, "Modify qp %u: path_mtu %d is not an MTU value",
                 qp_num_, static_cast<int>(attr.path_mtu));
  }
  if ((mask & kQpPort) &&
      (attr.port_num < 1 || attr.port_num > phys_port_cnt_)) {
    return Errno(EINVAL, "Modify qp %u: port_num %d out of range 1..%d",
                 qp_num_, attr.port_num, phys_port_cnt_);
  }
  if ((mask & kQpAv) &&
      (attr.ah_attr.port_num < 1 || attr.ah_attr.port_num > phys_port_cnt_)) {
    return Errno(EINVAL, "Modify qp %u: ah_attr.port_num %d out of range 1..%d",
                 qp_num_, attr.ah_attr.port_num, phys_port_cnt_);
  }
  ibv_qp_attr a;
  QpAttrToIbv(attr, &a);
  return ModifyRaw(&a, static_cast<int>(mask), "Modify");
}

absl::Status HwQp::ModifyRaw(ibv_qp_attr* attr, int mask,
                             absl::string_view why) {
  if (absl::Status s = Check(); !s.ok()) return s;
  const QpState from = state();
  int ret = ibv_modify_qp(res_->qp, attr, mask);
  if (ret != 0) {
    std::string to =
        (mask & IBV_QP_STATE)
            ? std::string(QpStateName(static_cast<QpState>(attr->qp_state)))
            : std::string(QpStateName(from));
    return SysError(
        ErrnoFromReturn(ret),
        absl::StrFormat("%s: ibv_modify_qp(qp %u, %s -> %s, mask "
                        "%s)",
                        why, qp_num_, QpStateName(from), to,
                        QpAttrMaskName(static_cast<uint32_t>(mask))));
  }
  return absl::OkStatus();
}

absl::StatusOr<QpAttr> HwQp::Query() const {
  if (absl::Status s = Check(); !s.ok()) return s;
  ibv_qp_attr a = {};
  ibv_qp_init_attr init = {};
  int ret = ibv_query_qp(
      res_->qp, &a,
      static_cast<int>(kAllQpAttrMask & ~(kQpAltPath | kQpPathMigState)),
      &init);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_query_qp(qp %u)", qp_num_));
  }
  return QpAttrFromIbv(a);
}

absl::Status HwQp::AttachMcast(const Gid& gid, uint16_t lid) {
  if (absl::Status s = Check(); !s.ok()) return s;
  ibv_gid g;
  GidToIbv(gid, &g);
  int ret = ibv_attach_mcast(res_->qp, &g, lid);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_attach_mcast(qp %u, %s, lid %u)",
                                    qp_num_, GidToString(gid), lid));
  }
  return absl::OkStatus();
}

absl::Status HwQp::DetachMcast(const Gid& gid, uint16_t lid) {
  if (absl::Status s = Check(); !s.ok()) return s;
  ibv_gid g;
  GidToIbv(gid, &g);
  int ret = ibv_detach_mcast(res_->qp, &g, lid);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret),
                    absl::StrFormat("ibv_detach_mcast(qp %u, %s, lid %u)",
                                    qp_num_, GidToString(gid), lid));
  }
  return absl::OkStatus();
}

absl::Status ModifyRawQp(Qp* qp, ibv_qp_attr* attr, int mask,
                         absl::string_view why) {
  auto* hw = dynamic_cast<HwQp*>(qp);
  if (hw == nullptr) return Errno(EINVAL, "%s: not an hw QP", why);
  return hw->ModifyRaw(attr, mask, why);
}

// --- Ah ---------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Ah>> HwPd::CreateAh(const AhAttr& attr) {
  if (absl::Status s = Check(); !s.ok()) return s;
  absl::StatusOr<PortAttr> port = context_->QueryPort(attr.port_num);
  if (!port.ok()) return port.status();
  if (attr.is_global && attr.sgid_index >= port->gid_tbl_len) {
    return Errno(EINVAL, "CreateAh: sgid_index %d out of range 0..%d",
                 attr.sgid_index, port->gid_tbl_len - 1);
  }
  ibv_ah_attr raw;
  AhAttrToIbv(attr, &raw);
  auto res = std::make_shared<AhRes>();
  res->ah = ibv_create_ah(res_->pd, &raw);
  if (res->ah == nullptr) {
    return SysError(errno,
                    absl::StrFormat("ibv_create_ah(dgid %s, port %d)",
                                    GidToString(attr.dgid), attr.port_num));
  }
  res->pd = res_;
  return std::unique_ptr<Ah>(new HwAh(std::move(res), attr, this));
}

absl::Status HwAh::Destroy() {
  if (res_ == nullptr) return Dead("ah");
  int ret = ibv_destroy_ah(res_->ah);
  if (ret != 0) {
    return SysError(ErrnoFromReturn(ret), "ibv_destroy_ah");
  }
  res_->ah = nullptr;
  res_.reset();
  return absl::OkStatus();
}

}  // namespace hw
}  // namespace verbsim
