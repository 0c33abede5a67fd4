// The responder's decision on a remote RDMA read, write or atomic, shared by
// the RC responder (responder.cc) and the UC responder (uc.cc). Two checks,
// in this order, with whatever the caller checks between them:
//  1. the QP grants the operation (IBV_ACCESS_REMOTE_* in qp_access_flags,
//     ibv_modify_qp(3)); an iWARP profile does not check it (IwarpRules);
//  2. the rkey covers the bytes with the rights asked (CheckAccess,
//     sim/keys.h); a zero-length operation skips it where the profile says
//     so (docs/semantics.md section 2).
#ifndef VERBSIM_SIM_REMOTE_ACCESS_H_
#define VERBSIM_SIM_REMOTE_ACCESS_H_

#include <cstdint>

#include "sim/state.h"

namespace verbsim::sim {

// Whether `qp` lets a remote peer do what `right` names (kAccessRemoteRead,
// kAccessRemoteWrite or kAccessRemoteAtomic).
bool QpGrants(const QpCore& qp, uint32_t right);

// Whether `rkey` grants `rights` over [va, va + len) to a request arriving
// on `qp`.
bool RkeyGrants(const QpCore& qp, uint32_t rkey, uint64_t va, uint64_t len,
                uint32_t rights);

// The checks of one RDMA write packet, RC or UC. A FIRST or ONLY packet
// needs the QP's REMOTE_WRITE and the rkey over the whole write (its RETH),
// and then sets the QP's write target (in_write, write_va, write_left,
// write_len); every packet's payload must fit in what the RETH announced.
enum class WriteCheck { kOk, kQpDenies, kRkeyDenies, kLongerThanRequested };
WriteCheck CheckWritePacket(QpCore& qp, const Packet& p);

// The rights an RDMA READ's source region must have: REMOTE_READ, or none
// where the profile says so (siw checks a READ's source with no permission
// bits: IwarpRules::read_needs_remote_read).
uint32_t ReadSourceRights(const QpCore& qp);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_REMOTE_ACCESS_H_
