// The sim's implementations of the verbs object interfaces (core/verbs.h).
// Each holds its internal state (sim/state.h) and the fabric, and takes the
// fabric mutex once per call.
#ifndef VERBSIM_SIM_HANDLES_H_
#define VERBSIM_SIM_HANDLES_H_

#include <memory>
#include <string>

#include "core/verbs.h"
#include "sim/fabric.h"
#include "sim/state.h"

namespace verbsim::sim {

// Opens device `node_index` of `fabric` as a verbs context.
std::unique_ptr<Context> OpenSimContext(std::shared_ptr<Fabric> fabric,
                                        int node_index);

// Counters of a sim QP (false for a QP of another provider); the same as
// Qp::QueryCounters.
using SimQpStats = QpCounters;
bool GetSimQpStats(const Qp* qp, SimQpStats* out);

// The size of a sim SRQ (max_wr, max_sge, limit) even where the profile's
// library cannot query one (siw); false for an SRQ of another provider.
bool GetSimSrqCapacity(const Srq* srq, SrqAttr* out);

// The profile a sim context follows; null for a context of another
// provider.
const SimProfile* GetSimProfile(const Context* context);

// Joins the context's node to multicast group `gid` at the IP level, or
// leaves it (Fabric::JoinMcastIp); false for a context of another provider.
bool JoinSimMcastIp(Context* context, const Gid& gid, bool join);

// Marks a sim QP as connected through the connection manager (an iWARP
// profile lets only such QPs enter RTS); a QP of another provider is left.
void MarkSimQpCmConnected(Qp* qp);

// The state a sim QP is in, whatever its profile lets a query report;
// false for a QP of another provider.
bool GetSimQpState(const Qp* qp, QpState* out);

// The connection manager dropped the QP's connection (siw_cm.c
// siw_qp_cm_drop, siw_qp.c siw_qp_llp_close): it enters ERR and everything
// in its queues is flushed, WRs that waited there while it was in ERR
// included. A QP of another provider is left.
void DropSimQpConnection(Qp* qp);

// The transport state of a sim QP in one line (queues, PSNs, timers), for
// debugging and teaching; empty for a QP of another provider.
std::string SimQpDebugString(const Qp* qp);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_HANDLES_H_
