// How the sim's verbs handles (the implementations of core/verbs.h's
// interfaces) reach each other. Each handle lives in its own file beside the
// checks of the verb that creates it:
//   context_handle.cc  SimContext: ports, GIDs, PDs, channels, CQs, events
//   pd_handle.cc       SimPd: forwards each creation to the files below
//   mr_handle.cc       SimMr and ibv_reg_mr / ibv_rereg_mr's checks
//   cq_handle.cc       SimCq, SimChannel and ibv_create_cq's checks
//   srq_handle.cc      SimSrq and ibv_create_srq / ibv_modify_srq's checks
//   qp_init.cc         ibv_create_qp's checks of the QP's init attributes
//   qp_handle.cc       SimQp: modify, query, posts (semantics in qp_verbs.cc)
//   mw_handle.cc       SimMw and ibv_alloc_mw's checks (semantics in mw.cc)
//   ah_handle.cc       SimAh and ibv_create_ah's checks
// Every function here is called with the fabric mutex held. The *StateOf
// functions return null for a handle of another provider.
#ifndef VERBSIM_SIM_HANDLE_FACTORIES_H_
#define VERBSIM_SIM_HANDLE_FACTORIES_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/verbs.h"
#include "sim/fabric.h"
#include "sim/state.h"

namespace verbsim::sim {

// pd_handle.cc
absl::StatusOr<std::unique_ptr<Pd>> CreateSimPd(
    const std::shared_ptr<Fabric>& fabric,
    const std::shared_ptr<ContextState>& context, Context* handle);
std::shared_ptr<PdState> PdStateOf(Pd* pd);

// mr_handle.cc
absl::StatusOr<std::unique_ptr<Mr>> RegisterSimMr(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, void* addr, size_t length, uint32_t access);
std::shared_ptr<MrState> MrStateOf(Mr* mr);

// cq_handle.cc
absl::StatusOr<std::unique_ptr<CompChannel>> CreateSimChannel(
    const std::shared_ptr<Fabric>& fabric,
    const std::shared_ptr<ContextState>& context);
absl::StatusOr<std::unique_ptr<Cq>> CreateSimCq(
    const std::shared_ptr<Fabric>& fabric,
    const std::shared_ptr<ContextState>& context, const DeviceAttr& device,
    int cqe, CompChannel* channel);
std::shared_ptr<CqState> CqStateOf(Cq* cq);

// srq_handle.cc
absl::StatusOr<std::unique_ptr<Srq>> CreateSimSrq(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, const SrqAttr& attr);
std::shared_ptr<SrqState> SrqStateOf(Srq* srq);

// qp_init.cc: checks `init` and builds the QP's state.
absl::StatusOr<std::unique_ptr<Qp>> CreateSimQp(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, const QpInitAttr& init);

// qp_handle.cc: the handle of a QP whose state CreateSimQp built.
std::unique_ptr<Qp> NewSimQp(std::shared_ptr<Fabric> fabric,
                             std::unique_ptr<QpCore> state, Pd* pd,
                             Cq* send_cq, Cq* recv_cq,
                             const QpInitAttr& reported);

// mw_handle.cc
absl::StatusOr<std::unique_ptr<Mw>> AllocSimMw(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, MwType type);
std::shared_ptr<MwState> MwStateOf(Mw* mw);

// ah_handle.cc
absl::StatusOr<std::unique_ptr<Ah>> CreateSimAh(
    const std::shared_ptr<Fabric>& fabric, const std::shared_ptr<PdState>& pd,
    Pd* pd_handle, const AhAttr& attr);
std::shared_ptr<AhState> AhStateOf(Ah* ah);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_HANDLE_FACTORIES_H_
