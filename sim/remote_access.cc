#include "sim/remote_access.h"

#include "sim/fabric.h"
#include "sim/keys.h"

namespace verbsim::sim {

bool QpGrants(const QpCore& qp, uint32_t right) {
  if (!qp.node->fabric->profile().iwarp.checks_qp_access) return true;
  return (qp.attr.qp_access_flags & right) != 0;
}

bool RkeyGrants(const QpCore& qp, uint32_t rkey, uint64_t va, uint64_t len,
                uint32_t rights) {
  if (len == 0 && qp.node->fabric->profile().zero_length_skips_rkey_check) {
    return true;
  }
  return CheckAccess(qp.node->keys, rkey, KeyKind::kRemote, qp.pd.get(), va,
                     len, rights, nullptr, qp.qpn) == AccessResult::kOk;
}

WriteCheck CheckWritePacket(QpCore& qp, const Packet& p) {
  if (IsFirstOrOnly(p.opcode)) {
    if (!QpGrants(qp, kAccessRemoteWrite)) return WriteCheck::kQpDenies;
    if (!RkeyGrants(qp, p.rkey, p.va, p.dma_len, kAccessRemoteWrite)) {
      return WriteCheck::kRkeyDenies;
    }
    qp.in_write = true;
    qp.write_va = p.va;
    qp.write_left = p.dma_len;
    qp.write_len = p.dma_len;
  }
  if (p.payload.size() > qp.write_left) {
    return WriteCheck::kLongerThanRequested;
  }
  return WriteCheck::kOk;
}

uint32_t ReadSourceRights(const QpCore& qp) {
  return qp.node->fabric->profile().iwarp.read_needs_remote_read
             ? kAccessRemoteRead
             : 0;
}

}  // namespace verbsim::sim
