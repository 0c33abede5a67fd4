// verbsim_sysfs_tree DIR: writes the sysfs view of the devices the
// libibverbs it runs on lists (the drop-in, through LD_LIBRARY_PATH) into
// DIR, for libverbsim_sysfs.so to show under /sys and /dev
// (docs/drop-in.md, "The sysfs view"). Every value comes from the verbs
// (ibv_query_device, ibv_query_port, ibv_query_gid_ex, ibv_query_pkey), in
// the kernel's text formats (drivers/infiniband/core/sysfs.c), so the view
// says what ibv_devinfo -v says. Layout, for each device NAME with uverbs
// node uverbsN:
//
//   sys/class/infiniband/NAME -> ../../devices/verbsim/NAME/infiniband/NAME
//   sys/class/infiniband_verbs/uverbsN -> .../NAME/infiniband_verbs/uverbsN
//   sys/devices/verbsim/NAME/          the HCA: vendor, device, numa_node,
//                                      net/lo -> /sys/devices/virtual/net/lo
//   sys/devices/verbsim/NAME/infiniband/NAME/   node_type, node_guid, ...,
//                                      ports/P/..., device -> the HCA
//   dev/infiniband/uverbsN             the device node (an empty file)
//
// Exit status 0, or 1 with a line on stderr naming what failed.
#include <infiniband/verbs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The netdev every sim device stands on: the only one an unprivileged user
// has (docs/drop-in.md, "The sysfs view").
constexpr char kNetdev[] = "lo";

std::string root;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "verbsim_sysfs_tree: %s\n", what.c_str());
  std::exit(1);
}

void MakeDirs(const std::string& path) {
  for (size_t slash = root.size() + 1; slash != std::string::npos;) {
    slash = path.find('/', slash + 1);
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      Die(dir + ": " + std::strerror(errno));
    }
  }
}

std::string Parent(const std::string& path) {
  return path.substr(0, path.rfind('/'));
}

// Writes `text` to root/`path`, making its directories.
void Write(const std::string& path, const std::string& text,
           mode_t mode = 0444) {
  const std::string full = root + "/" + path;
  MakeDirs(Parent(full));
  FILE* f = std::fopen(full.c_str(), "w");
  if (f == nullptr) Die(full + ": " + std::strerror(errno));
  std::fputs(text.c_str(), f);
  if (std::fclose(f) != 0) Die(full + ": " + std::strerror(errno));
  chmod(full.c_str(), mode);
}

void Link(const std::string& path, const std::string& target) {
  const std::string full = root + "/" + path;
  MakeDirs(Parent(full));
  if (symlink(target.c_str(), full.c_str()) != 0) {
    Die(full + ": " + std::strerror(errno));
  }
}

template <typename... Args>
std::string Format(const char* format, Args... args) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), format, args...);
  return buf;
}

// A GUID as sysfs prints it: four groups of four hex digits.
std::string Guid(__be64 guid) {
  const uint64_t g = be64toh(guid);
  return Format("%04x:%04x:%04x:%04x\n", static_cast<unsigned>(g >> 48),
                static_cast<unsigned>(g >> 32 & 0xffff),
                static_cast<unsigned>(g >> 16 & 0xffff),
                static_cast<unsigned>(g & 0xffff));
}

// A GID as sysfs prints it (%pI6: eight groups, none left out).
std::string GidText(const ibv_gid& gid) {
  std::string s;
  for (int i = 0; i < 16; i += 2) {
    s += Format(i == 0 ? "%02x%02x" : ":%02x%02x", gid.raw[i], gid.raw[i + 1]);
  }
  return s + "\n";
}

std::string NodeType(ibv_node_type type) {
  switch (type) {
    case IBV_NODE_CA: return "1: CA\n";
    case IBV_NODE_SWITCH: return "2: switch\n";
    case IBV_NODE_ROUTER: return "3: router\n";
    case IBV_NODE_RNIC: return "4: RNIC\n";
    case IBV_NODE_USNIC: return "5: usNIC\n";
    case IBV_NODE_USNIC_UDP: return "6: usNIC UDP\n";
    default: return "7: unspecified\n";
  }
}

std::string PortState(ibv_port_state state) {
  static const char* const kNames[] = {"NOP", "DOWN", "INIT", "ARMED",
                                       "ACTIVE", "ACTIVE_DEFER"};
  const unsigned s = state;
  return Format("%u: %s\n", s, s < 6 ? kNames[s] : "UNKNOWN");
}

std::string PhysState(uint8_t state) {
  static const char* const kNames[] = {
      "<unknown>", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
      "LinkUp", "LinkErrorRecovery", "Phy Test"};
  return Format("%u: %s\n", state, state < 8 ? kNames[state] : "<unknown>");
}

// The port's rate as sysfs's rate file says it: "100 Gb/sec (4X EDR)".
std::string Rate(uint8_t speed, uint8_t width) {
  const char* name = " SDR";
  int rate = 25;  // tenths of Gb/s per lane
  switch (speed) {
    case 2: name = " DDR"; rate = 50; break;
    case 4: name = " QDR"; rate = 100; break;
    case 8: name = " FDR10"; rate = 100; break;
    case 16: name = " FDR"; rate = 140; break;
    case 32: name = " EDR"; rate = 250; break;
    case 64: name = " HDR"; rate = 500; break;
    case 128: name = " NDR"; rate = 1000; break;
    default: break;
  }
  int lanes = 1;
  switch (width) {
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: break;
  }
  rate *= lanes;
  return Format("%d%s Gb/sec (%dX%s)\n", rate / 10, rate % 10 ? ".5" : "",
                lanes, name);
}

std::string GidType(uint32_t type) {
  return type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2\n" : "IB/RoCE v1\n";
}

void WritePort(ibv_context* ctx, const std::string& ib, uint8_t port) {
  ibv_port_attr pa;
  if (int rc = ibv_query_port(ctx, port, &pa); rc != 0) {
    Die(Format("ibv_query_port(%s, %u): %s", ibv_get_device_name(ctx->device),
               port, std::strerror(rc)));
  }
  const std::string dir = ib + Format("/ports/%u", port);
  Write(dir + "/state", PortState(pa.state));
  Write(dir + "/phys_state", PhysState(pa.phys_state));
  const bool ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  Write(dir + "/link_layer", ethernet ? "Ethernet\n" : "InfiniBand\n");
  Write(dir + "/rate", Rate(pa.active_speed, pa.active_width));
  Write(dir + "/lid", Format("0x%x\n", pa.lid));
  Write(dir + "/sm_lid", Format("0x%x\n", pa.sm_lid));
  Write(dir + "/lmc", Format("%u\n", pa.lmc));
  Write(dir + "/sm_sl", Format("%u\n", pa.sm_sl));
  Write(dir + "/cap_mask", Format("0x%08x\n", pa.port_cap_flags));
  for (int i = 0; i < pa.gid_tbl_len; ++i) {
    ibv_gid gid;
    if (ibv_query_gid(ctx, port, i, &gid) != 0) {
      Die(Format("ibv_query_gid(%s, %u, %d): %s",
                 ibv_get_device_name(ctx->device), port, i,
                 std::strerror(errno)));
    }
    Write(dir + Format("/gids/%d", i), GidText(gid));
    // An empty entry has no attributes (reading them is EINVAL in sysfs;
    // here the files are absent).
    ibv_gid_entry entry;
    if (ibv_query_gid_ex(ctx, port, i, &entry, 0) != 0) continue;
    Write(dir + Format("/gid_attrs/types/%d", i), GidType(entry.gid_type));
    if (ethernet) Write(dir + Format("/gid_attrs/ndevs/%d", i),
                        std::string(kNetdev) + "\n");
  }
  for (int i = 0; i < pa.pkey_tbl_len; ++i) {
    __be16 pkey;
    if (ibv_query_pkey(ctx, port, i, &pkey) != 0) continue;
    Write(dir + Format("/pkeys/%d", i), Format("0x%04x\n", be16toh(pkey)));
  }
}

void WriteDevice(ibv_device* device) {
  const std::string name = ibv_get_device_name(device);
  const std::string uverbs = device->dev_name;
  ibv_context* ctx = ibv_open_device(device);
  if (ctx == nullptr) {
    Die("ibv_open_device(" + name + "): " + std::strerror(errno));
  }
  ibv_device_attr attr;
  if (int rc = ibv_query_device(ctx, &attr); rc != 0) {
    Die("ibv_query_device(" + name + "): " + std::strerror(rc));
  }
  // The HCA itself, where a PCI function would be.
  const std::string hca = "sys/devices/verbsim/" + name;
  Write(hca + "/vendor", Format("0x%04x\n", attr.vendor_id));
  Write(hca + "/device", Format("0x%04x\n", attr.vendor_part_id));
  Write(hca + "/numa_node", "-1\n");
  Link(hca + "/net/" + kNetdev, std::string("/sys/devices/virtual/net/") +
                                    kNetdev);
  // Its RDMA device.
  const std::string ib = hca + "/infiniband/" + name;
  Write(ib + "/node_type", NodeType(device->node_type));
  Write(ib + "/node_guid", Guid(attr.node_guid));
  Write(ib + "/sys_image_guid", Guid(attr.sys_image_guid));
  Write(ib + "/node_desc", name + "\n");
  Write(ib + "/fw_ver", std::string(attr.fw_ver) + "\n");
  Write(ib + "/hca_type", "verbsim\n");
  Write(ib + "/hw_rev", Format("0x%x\n", attr.hw_ver));
  Write(ib + "/parent", std::string(kNetdev) + "\n");
  Link(ib + "/device", "../../../" + name);
  Link(ib + "/subsystem", "../../../../../class/infiniband");
  for (uint8_t port = 1; port <= attr.phys_port_cnt; ++port) {
    WritePort(ctx, ib, port);
  }
  // Its uverbs character device, numbered as the kernel numbers them.
  unsigned n = 0;
  if (std::sscanf(uverbs.c_str(), "uverbs%u", &n) != 1) {
    Die(name + ": device node name '" + uverbs + "' is not uverbsN");
  }
  const std::string uv = hca + "/infiniband_verbs/" + uverbs;
  Write(uv + "/ibdev", name + "\n");
  Write(uv + "/abi_version", "1\n");
  Write(uv + "/dev", Format("231:%u\n", 192 + n));
  Link(uv + "/device", "../../../" + name);
  Link("sys/class/infiniband/" + name,
       "../../devices/verbsim/" + name + "/infiniband/" + name);
  Link("sys/class/infiniband_verbs/" + uverbs,
       "../../devices/verbsim/" + name + "/infiniband_verbs/" + uverbs);
  Write("dev/infiniband/" + uverbs, "", 0666);
  ibv_close_device(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: verbsim_sysfs_tree DIR\n");
    return 2;
  }
  root = argv[1];
  struct stat st;
  if (stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    Die(root + " is not a directory");
  }
  // The classes exist even with no device, as on a host with the modules.
  MakeDirs(root + "/sys/class/infiniband");
  MakeDirs(root + "/sys/devices/verbsim");
  MakeDirs(root + "/dev/infiniband");
  Write("sys/class/infiniband_verbs/abi_version", "6\n");
  int num = 0;
  ibv_device** list = ibv_get_device_list(&num);
  if (list == nullptr) {
    // A machine without RDMA devices (the real library, not the drop-in).
    if (errno == ENOSYS) return 0;
    Die(std::string("ibv_get_device_list: ") + std::strerror(errno));
  }
  for (int i = 0; i < num; ++i) WriteDevice(list[i]);
  ibv_free_device_list(list);
  return 0;
}
