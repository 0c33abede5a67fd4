// ibv_modify_qp / ibv_post_send / ibv_post_recv on a sim QP, under the fabric
// mutex.
#ifndef VERBSIM_SIM_QP_VERBS_H_
#define VERBSIM_SIM_QP_VERBS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/types.h"
#include "sim/state.h"

namespace verbsim::sim {

// The attribute masks of one transition (ibv_modify_qp(3), IBA 11.2.4.2 and
// the kernel's qp_state_table).
struct TransitionRule {
  bool valid = false;
  uint32_t required = 0;
  uint32_t optional = 0;
};
TransitionRule RuleFor(QpType type, verbsim::QpState from,
                       verbsim::QpState to);

absl::Status ModifyQp(QpCore& qp, const QpAttr& attr, uint32_t mask);
absl::Status PostSend(QpCore& qp, absl::Span<const SendWr> wrs,
                      size_t* bad_index);
absl::Status PostRecv(QpCore& qp, absl::Span<const RecvWr> wrs,
                      size_t* bad_index);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_QP_VERBS_H_
