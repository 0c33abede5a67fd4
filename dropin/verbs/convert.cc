// What the drop-in answers besides the shared conversions of
// hw/ibv_convert.h: the fields of ibv_device_attr and ibv_port_attr that core
// does not model. The hw provider reads those from a real device; a sim
// device has none to read, so they are made up here.
#include <cstdio>

#include "dropin/verbs/state.h"

namespace verbsim::dropin {

void FillDeviceAttr(const DeviceAttr& in, const ibv_device& dev, int index,
                    ibv_device_attr* out) {
  DeviceAttrToIbv(in, out);
  std::snprintf(out->fw_ver, sizeof(out->fw_ver), "verbsim");
  out->node_guid = NodeGuid(index);
  out->sys_image_guid = NodeGuid(index);
  (void)dev;
}

void FillPortAttr(const PortAttr& in, ibv_port_attr* out) {
  PortAttrToIbv(in, out);
  // The link of a sim port: 4X EDR, physically up while the port is active.
  out->active_width = 2;  // 4X
  out->active_speed = 32; // EDR (25 Gb/s per lane)
  out->phys_state = in.state == IBV_PORT_ACTIVE ? 5 /* LinkUp */ : 3;
}

}  // namespace verbsim::dropin
