// Conversions between the structs of <infiniband/verbs.h> and the value types
// of core/types.h. Two libraries need them: the hw provider (hw/), which
// hands core values to the real libibverbs and reads its answers back, and
// the drop-in libibverbs (dropin/verbs/), which reads a program's ibv_*
// structs for the sim and writes the sim's answers into them. Each needs
// both directions (hw: ibv_modify_qp takes an ibv_qp_attr made from a QpAttr,
// ibv_query_qp answers with one to convert back; the drop-in the other way
// round), so each conversion is written here once, in both directions.
//
// This code uses the libibverbs headers only and calls no ibv_* function:
// the drop-in, which replaces libibverbs, links it without the real library.
//
// Enums, statuses, opcodes, states and flag bits need no function: core
// mirrors them value for value and they convert with a static_cast, which
// ibv_convert.cc checks against the header at compile time.
//
// A ...ToIbv function clears the whole ibverbs struct first (QpCapToIbv
// excepted, see there), so the fields core does not model, and any padding,
// read as zero.
#ifndef VERBSIM_HW_IBV_CONVERT_H_
#define VERBSIM_HW_IBV_CONVERT_H_

#include <infiniband/verbs.h>

#include <cstring>

#include "core/types.h"

namespace verbsim {

// The value of an enum field of an ibverbs struct, read as its bytes. A
// program may store any number there (a bad opcode or state, say), and
// loading an out-of-range value as the enum type is undefined (UBSan flags
// it); as an int it reaches the checks that refuse it.
template <typename E>
int RawEnum(const E& field) {
  static_assert(sizeof(E) == sizeof(int), "ibverbs enums are int-sized");
  int value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

// union ibv_gid.
Gid GidFromIbv(const ibv_gid& in);
void GidToIbv(const Gid& in, ibv_gid* out);

// struct ibv_ah_attr: the GRH fields, dlid, sl, is_global and port_num.
// src_path_bits and static_rate are not modelled (0 going to ibverbs).
AhAttr AhAttrFromIbv(const ibv_ah_attr& in);
void AhAttrToIbv(const AhAttr& in, ibv_ah_attr* out);

// struct ibv_qp_cap. Writes only its five fields: `out` may be the cap
// member of a struct the caller filled (ibv_create_qp's init attr).
QpCap QpCapFromIbv(const ibv_qp_cap& in);
void QpCapToIbv(const QpCap& in, ibv_qp_cap* out);

// struct ibv_qp_attr, every field QpAttr has (no alternate path, no
// migration state). The states and the MTU are read as raw numbers, so a
// program's out-of-range value arrives as it is, to be refused. sq_draining
// is an answer of ibv_query_qp; ibv_modify_qp does not read it.
QpAttr QpAttrFromIbv(const ibv_qp_attr& in);
void QpAttrToIbv(const QpAttr& in, ibv_qp_attr* out);

// struct ibv_srq_attr.
SrqAttr SrqAttrFromIbv(const ibv_srq_attr& in);
void SrqAttrToIbv(const SrqAttr& in, ibv_srq_attr* out);

// struct ibv_wc. ibverbs keeps the immediate data in network order, core in
// host order; imm_data and invalidated_rkey share one union in ibv_wc. The
// two directions treat the union differently on purpose:
//   From ibverbs (the hw provider, reading a device's completion): a field
//   is taken only when its wc_flags bit says the union holds it
//   (IBV_WC_WITH_IMM / IBV_WC_WITH_INV), since a device leaves the union
//   undefined otherwise; the other field stays 0.
//   To ibverbs (the drop-in, writing the sim's completion for a program):
//   the union holds the invalidated rkey under IBV_WC_WITH_INV, else the
//   immediate data whatever the flags, so a completion without either
//   carries the sim's 0 there rather than anything left in the program's
//   array.
WorkCompletion WcFromIbv(const ibv_wc& in);
void WcToIbv(const WorkCompletion& in, ibv_wc* out);

// struct ibv_device_attr: the limits and capabilities DeviceAttr models.
// Not converted, since they do not live in ibv_device_attr or core has no
// field for them: the name, node type and max_inline_data of DeviceAttr,
// and fw_ver, node_guid, sys_image_guid, hw_ver and the EE, RDD, raw QP and
// FMR limits of ibv_device_attr (0 going to ibverbs).
DeviceAttr DeviceAttrFromIbv(const ibv_device_attr& in);
void DeviceAttrToIbv(const DeviceAttr& in, ibv_device_attr* out);

// struct ibv_port_attr: the fields PortAttr models. The LIDs, the SM, the
// counters, the link width, speed and physical state are not converted (0
// going to ibverbs).
PortAttr PortAttrFromIbv(const ibv_port_attr& in);
void PortAttrToIbv(const PortAttr& in, ibv_port_attr* out);

}  // namespace verbsim

#endif  // VERBSIM_HW_IBV_CONVERT_H_
