// Sim profiles: the one place where the simulated device's behaviour differs
// by the implementation it models. "ibta" follows the spec and what
// rdma-unit-test expects of hardware; "rxe" follows kernel rxe where it
// deviates (semantics.md sections 2 and 6).
#ifndef VERBSIM_SIM_PROFILE_H_
#define VERBSIM_SIM_PROFILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"

namespace verbsim::sim {

struct SimProfile {
  std::string name;
  // What ibv_query_device reports; limits the sim enforces.
  DeviceAttr device;
  PortAttr port;
  // Status of a send/write/read/atomic whose local SGE has a bad lkey.
  WcStatus bad_lkey_status = WcStatus::kLocProtErr;
  // Status of the receive whose buffer failed the local access check (bad
  // lkey, outside its MR, MR without LOCAL_WRITE). The sender sees REM_OP_ERR.
  WcStatus recv_access_status = WcStatus::kLocProtErr;
  // Status of the receive whose buffer is too small for the message. The
  // sender sees REM_INV_REQ_ERR either way.
  WcStatus recv_too_small_status = WcStatus::kLocLenErr;
  // Whether a zero-length RDMA read/write skips the rkey check (rxe: yes; the
  // spec allows either).
  bool zero_length_skips_rkey_check = true;
  // Requester status when the responder QP lacks the REMOTE_* access flag the
  // opcode needs (NAK invalid request on rxe).
  WcStatus qp_access_denied_status = WcStatus::kRemInvReqErr;
};

// The built-in profiles by name; "" means "ibta".
absl::StatusOr<SimProfile> ProfileByName(absl::string_view name);
std::vector<std::string> ProfileNames();

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_PROFILE_H_
