// ibv_modify_qp / ibv_post_send / ibv_post_recv on a sim QP, under the fabric
// mutex.
#ifndef VERBSIM_SIM_QP_VERBS_H_
#define VERBSIM_SIM_QP_VERBS_H_

#include <cstddef>
#include <memory>

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

// Stores the attributes `mask` names in the QP (no checks).
void ApplyQpAttrs(QpCore& qp, const QpAttr& attr, uint32_t mask);
// The transport state a QP starts RTR and RTS with (PSNs, retry counts).
void StartReceiving(QpCore& qp);
void StartSending(QpCore& qp);

// ibv_modify_qp on a profile whose driver takes only the state and the
// access flags (IwarpRules::takes_state_only, siw): sim/qp_modify_iwarp.cc.
absl::Status ModifyIwarpQp(QpCore& qp, const QpAttr& attr, uint32_t mask);

// The sim objects a send WR names through public handles, resolved by the
// caller: its address handle (UD), its window and the region to bind it to
// (BIND_MW). `bind_verb` marks the WR ibv_bind_mw posts for a type 1 window.
struct ResolvedWr {
  std::shared_ptr<AhState> ah;
  std::shared_ptr<MwState> mw;
  std::shared_ptr<MrState> bind_mr;
  bool bind_verb = false;
};
// `resolved` is empty or has one entry per WR.
absl::Status PostSend(QpCore& qp, absl::Span<const SendWr> wrs,
                      absl::Span<const ResolvedWr> resolved,
                      size_t* bad_index);
absl::Status PostRecv(QpCore& qp, absl::Span<const RecvWr> wrs,
                      size_t* bad_index);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_QP_VERBS_H_
