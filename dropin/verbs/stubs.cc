// The exported functions of libibverbs.so.1 that the verbsim drop-in does
// not cover. Each one exists (the dynamic loader refuses to start a program
// that imports a missing versioned symbol), says once on stderr which
// function was called, and fails as ibverbs reports failure: NULL with errno
// EOPNOTSUPP where the verb returns an object, EOPNOTSUPP (with errno set)
// where it returns a status. Most IBVERBS_PRIVATE_34 names are the provider
// (driver) interface, which only rdma-core's own provider libraries call.
//
// This file declares them without their prototypes on purpose: it includes
// no ibverbs header, and a caller only sees the return register, which
// holds 0 (NULL) or EOPNOTSUPP.
#include <cerrno>

namespace verbsim::dropin {
int Unsupported(const char* function);
}  // namespace verbsim::dropin

#define VERBSIM_STUB_PTR(name)                 \
  extern "C" void* name() {                    \
    verbsim::dropin::Unsupported(#name);       \
    return nullptr;                            \
  }
#define VERBSIM_STUB_INT(name)                 \
  extern "C" int name() { return verbsim::dropin::Unsupported(#name); }

VERBSIM_STUB_INT(ibv_copy_path_rec_from_kern)  // IBVERBS_1.0
VERBSIM_STUB_INT(ibv_copy_path_rec_to_kern)  // IBVERBS_1.0
VERBSIM_STUB_INT(ibv_copy_qp_attr_from_kern)  // IBVERBS_1.0
VERBSIM_STUB_PTR(ibv_get_sysfs_path)  // IBVERBS_1.0
VERBSIM_STUB_INT(ibv_copy_ah_attr_from_kern)  // IBVERBS_1.1
VERBSIM_STUB_INT(ibv_resolve_eth_l2_from_gid)  // IBVERBS_1.1
VERBSIM_STUB_PTR(ibv_import_device)  // IBVERBS_1.10
VERBSIM_STUB_PTR(ibv_import_mr)  // IBVERBS_1.10
VERBSIM_STUB_PTR(ibv_import_pd)  // IBVERBS_1.10
VERBSIM_STUB_INT(ibv_query_ece)  // IBVERBS_1.10
VERBSIM_STUB_INT(ibv_set_ece)  // IBVERBS_1.10
VERBSIM_STUB_INT(ibv_unimport_mr)  // IBVERBS_1.10
VERBSIM_STUB_INT(ibv_unimport_pd)  // IBVERBS_1.10
VERBSIM_STUB_PTR(ibv_reg_dmabuf_mr)  // IBVERBS_1.12
VERBSIM_STUB_PTR(ibv_import_dm)  // IBVERBS_1.13
VERBSIM_STUB_INT(ibv_unimport_dm)  // IBVERBS_1.13
VERBSIM_STUB_INT(__ioctl_final_num_attrs)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_PTR(_verbs_init_and_alloc_context)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(execute_ioctl)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_advise_mr)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_alloc_dm)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_alloc_mw)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_alloc_pd)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_attach_mcast)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_close_xrcd)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_ah)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_counters)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_cq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_cq_ex)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_flow)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_flow_action_esp)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_qp)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_qp_ex)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_qp_ex2)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_rwq_ind_table)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_srq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_srq_ex)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_create_wq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_dealloc_mw)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_dealloc_pd)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_dereg_mr)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_ah)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_counters)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_cq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_flow)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_flow_action)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_qp)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_rwq_ind_table)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_srq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_destroy_wq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_detach_mcast)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_free_dm)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_get_context)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_modify_cq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_modify_flow_action_esp)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_modify_qp)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_modify_qp_ex)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_modify_srq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_modify_wq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_open_qp)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_open_xrcd)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_poll_cq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_post_recv)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_post_send)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_post_srq_recv)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_query_context)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_query_device_any)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_query_mr)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_query_port)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_query_qp)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_query_srq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_read_counters)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_reg_dm_mr)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_reg_dmabuf_mr)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_reg_mr)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_req_notify_cq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_rereg_mr)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_cmd_resize_cq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(ibv_read_ibdev_sysfs_file)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(verbs_init_cq)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_PTR(verbs_open_device)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(verbs_set_ops)  // IBVERBS_PRIVATE_34
VERBSIM_STUB_INT(verbs_uninit_context)  // IBVERBS_PRIVATE_34

// Fork protection pins nothing here: the sim's memory is ordinary memory, so
// these succeed (ibv_fork_init(3)).
extern "C" int ibv_dontfork_range(void*, unsigned long) { return 0; }
extern "C" int ibv_dofork_range(void*, unsigned long) { return 0; }

// No in-order guarantee is promised beyond the verbs' own (0: none), which
// is always a correct answer (ibv_query_qp_data_in_order(3)).
extern "C" int ibv_query_qp_data_in_order(void*, int, unsigned int) { return 0; }

// rdma-core's provider libraries register themselves from their
// constructors when a program links one (perftest links libmlx5 and libefa);
// the sim's devices are the only ones here, so the registration is taken and
// ignored, without a word (IBVERBS_PRIVATE_34).
extern "C" void verbs_register_driver_34(const void*) {}

// Read by rdma-core's providers; nothing here reads it.
extern "C" {
bool verbs_allow_disassociate_destroy = false;
}
