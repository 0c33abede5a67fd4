// Devices and contexts of the drop-in libibverbs: the sim fabric's nodes,
// configured by the environment (docs/drop-in.md):
//   VERBSIM_NODES    number of devices, 1..64 (default 2)
//   VERBSIM_PROFILE  sim profile (sim/profile.h: ibta, rxe, ...; default ibta)
//   VERBSIM_SEED, VERBSIM_FAULTS  read by the sim provider (sim/faults.h)
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/environment.h"
#include "core/errors.h"
#include "dropin/verbs/state.h"
#include "sim/handles.h"
#include "sim/sim_provider.h"

namespace verbsim::dropin {

void Warn(const std::string& message) {
  std::fprintf(stderr, "libibverbs (verbsim): %s\n", message.c_str());
}

int Unsupported(const char* function) {
  static std::mutex mu;
  static std::set<std::string>* said = new std::set<std::string>;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (said->insert(function).second) {
      Warn(absl::StrCat(function,
                        " is not supported by the verbsim drop-in library "
                        "(EOPNOTSUPP)"));
    }
  }
  errno = EOPNOTSUPP;
  return EOPNOTSUPP;
}

int ErrnoFrom(const absl::Status& status, const char* function) {
  int err = ErrnoOf(status);
  if (err == 0) err = EINVAL;
  if (env::IsOn(env::kDebug)) {
    Warn(absl::StrCat(function, ": ", status.message()));
  }
  errno = err;
  return err;
}

namespace {

std::vector<Device*>* devices = nullptr;
Provider* provider = nullptr;

// The provider spec from the environment, or an error naming the variable.
absl::StatusOr<std::string> SpecFromEnv() {
  const env::Number<int> nodes = env::GetNumber(env::kNodes, 1, 64);
  if (!nodes.ok()) return absl::InvalidArgumentError(nodes.error);
  const std::string profile = env::Get(env::kProfile).value_or("ibta");
  if (profile.find_first_of(",=:") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        env::kProfile, "='", profile, "' is not a profile name"));
  }
  return absl::StrCat("sim:", profile, ",nodes=", nodes.value.value_or(2));
}

void Init() {
  // Again in a child of fork(): the parent's devices stay (the program may
  // hold them, and the environment that named them is the same).
  const bool again = devices != nullptr;
  if (!again) devices = new std::vector<Device*>;
  absl::StatusOr<std::string> spec = SpecFromEnv();
  if (!spec.ok()) {
    Warn(absl::StrCat(spec.status().message(), "; no devices"));
    return;
  }
  absl::StatusOr<std::unique_ptr<Provider>> opened = OpenProvider(*spec);
  if (!opened.ok()) {
    const std::optional<std::string> profile = env::Get(env::kProfile);
    Warn(absl::StrCat("cannot make the sim fabric",
                      profile ? absl::StrCat(" (", env::kProfile, "='",
                                             *profile, "')")
                              : "",
                      ": ", opened.status().message(), "; no devices"));
    return;
  }
  // VERBSIM_KEEP=1: the trace and the packets are kept from the start, for
  // verbsim_write_trace and verbsim_write_pcap (dropin/control).
  if (env::IsOn(env::kKeep)) {
    if (auto* sim = dynamic_cast<sim::SimProvider*>(opened->get())) {
      sim->fabric().KeepTrace(true);
      sim->fabric().KeepPackets(true);
    }
  }
  absl::StatusOr<std::vector<std::string>> names = (*opened)->ListDevices();
  if (!names.ok()) {
    Warn(absl::StrCat("cannot list devices: ", names.status().message()));
    return;
  }
  provider = opened->release();  // lives as long as the process
  for (size_t i = 0; i < names->size() && !again; ++i) {
    auto* d = new Device{};
    d->index = static_cast<int>(i);
    const std::string& name = (*names)[i];
    std::snprintf(d->dev.name, sizeof(d->dev.name), "%s", name.c_str());
    std::snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%zu", i);
    std::snprintf(d->dev.dev_path, sizeof(d->dev.dev_path),
                  "/sys/class/infiniband_verbs/uverbs%zu", i);
    std::snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path),
                  "/sys/class/infiniband/%s", name.c_str());
    // What kind of device the profile is (an iWARP one for siw), as the
    // kernel tells libibverbs through sysfs.
    int node_type = IBV_NODE_CA;
    if (absl::StatusOr<std::unique_ptr<Context>> probe = provider->Open(name);
        probe.ok()) {
      node_type = (*probe)->device_attr().node_type;
    }
    d->dev.node_type = static_cast<ibv_node_type>(node_type);
    d->dev.transport_type = node_type == IBV_NODE_RNIC ? IBV_TRANSPORT_IWARP
                                                       : IBV_TRANSPORT_IB;
    devices->push_back(d);
  }
}

// Init runs once per process image: once in the process, and once more in
// a child of fork() whose parent's fabric spans processes (ForkChild).
std::mutex& InitMutex() {
  static std::mutex* mu = new std::mutex;  // never destroyed
  return *mu;
}
bool initialized = false;  // under InitMutex

sim::Fabric* SimFabric() {
  auto* sim = dynamic_cast<sim::SimProvider*>(provider);
  return sim != nullptr ? &sim->fabric() : nullptr;
}

// fork(): the fabric's locks are held across it, so the child's copy is
// consistent. A fabric that spans processes (VERBSIM_UDP) belongs to the
// parent: its sockets are the parent's ports and its progress thread runs
// in the parent only. The child therefore gets a fabric of its own on
// first use, in a process slot of its own, as a child process opens the
// HCA again (docs/udp-transport.md, "Processes sharing a node"); the
// device list it had stays valid, since a device is opened by name. An
// in-process fabric is copied into the child as the rest of its memory.
void ForkPrepare() {
  InitMutex().lock();
  if (sim::Fabric* f = SimFabric()) f->LockForFork();
}
void ForkParent() {
  if (sim::Fabric* f = SimFabric()) f->UnlockAfterFork();
  InitMutex().unlock();
}
void ForkChild() {
  if (sim::Fabric* f = SimFabric()) {
    f->UnlockInChildAfterFork();
    if (f->real_time()) {
      f->AbandonAfterFork();
      provider = nullptr;  // the parent's; never destroyed here
      initialized = false;
    }
  }
  InitMutex().unlock();
}

}  // namespace

Provider* GetProvider() {
  std::lock_guard<std::mutex> lock(InitMutex());
  if (!initialized) {
    static const bool handlers =
        pthread_atfork(ForkPrepare, ForkParent, ForkChild) == 0;
    (void)handlers;
    Init();
    initialized = true;
  }
  return provider;
}

uint64_t NodeGuid(int index) {
  // A locally administered EUI-64 per node; returned in network order.
  uint64_t guid = 0x02000a00fe000000ull | static_cast<uint64_t>(index + 1);
  return __builtin_bswap64(guid);
}

}  // namespace verbsim::dropin

using namespace verbsim;
using namespace verbsim::dropin;

namespace {

int QueryPortOp(ibv_context* context, uint8_t port_num, ibv_port_attr* attr,
                size_t /*len*/) {
  Ctx* ctx = CtxOf(context);
  absl::StatusOr<PortAttr> port = ctx->impl->QueryPort(port_num);
  if (!port.ok()) return ErrnoFrom(port.status(), "ibv_query_port");
  FillPortAttr(*port, attr);
  return 0;
}

int QueryDeviceExOp(ibv_context* context,
                    const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) {
  if (input != nullptr && input->comp_mask != 0) {
    errno = EINVAL;
    return EINVAL;
  }
  if (attr_size < sizeof(attr->orig_attr)) return EINVAL;
  std::memset(attr, 0, attr_size);
  Ctx* ctx = CtxOf(context);
  FillDeviceAttr(ctx->impl->device_attr(), *context->device,
                 WrapOf<Device>(context->device)->index, &attr->orig_attr);
  // The extension, as far as the caller's struct reaches: the kernel
  // repeats the capability flags (64 bits wide here) and the port count;
  // the sim offers none of the optional features the rest describes.
  if (attr_size >= offsetof(ibv_device_attr_ex, device_cap_flags_ex) +
                   sizeof(attr->device_cap_flags_ex)) {
    attr->device_cap_flags_ex = attr->orig_attr.device_cap_flags;
  }
  if (attr_size >= offsetof(ibv_device_attr_ex, phys_port_cnt_ex) +
                   sizeof(attr->phys_port_cnt_ex)) {
    attr->phys_port_cnt_ex = attr->orig_attr.phys_port_cnt;
  }
  return 0;
}

}  // namespace

namespace verbsim::dropin {
ibv_qp* CreateQpExOp(ibv_context* context, ibv_qp_init_attr_ex* attr);
ibv_cq_ex* CreateCqExOp(ibv_context* context, ibv_cq_init_attr_ex* attr);
}

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  GetProvider();
  auto** list = static_cast<ibv_device**>(
      std::calloc(devices->size() + 1, sizeof(ibv_device*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < devices->size(); ++i) list[i] = &(*devices)[i]->dev;
  if (num_devices != nullptr) *num_devices = static_cast<int>(devices->size());
  return list;
}

void ibv_free_device_list(ibv_device** list) { std::free(list); }

const char* ibv_get_device_name(ibv_device* device) { return device->name; }

__be64 ibv_get_device_guid(ibv_device* device) {
  return NodeGuid(WrapOf<Device>(device)->index);
}

int ibv_get_device_index(ibv_device* device) {
  return WrapOf<Device>(device)->index;
}

ibv_context* ibv_open_device(ibv_device* device) {
  Provider* p = GetProvider();
  if (p == nullptr) {
    errno = ENODEV;
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<Context>> opened = p->Open(device->name);
  if (!opened.ok()) {
    ErrnoFrom(opened.status(), "ibv_open_device");
    return nullptr;
  }
  auto* ctx = new Ctx{};
  ctx->impl = *std::move(opened);
  ctx->profile = sim::GetSimProfile(ctx->impl.get());
  if (!ctx->async_pipe.Open()) {
    int err = errno;
    delete ctx;
    errno = err;
    return nullptr;
  }
  verbs_context& v = ctx->vctx;
  v.sz = sizeof(verbs_context);
  v.query_port = QueryPortOp;
  v.query_device_ex = QueryDeviceExOp;
  v.create_cq_ex = CreateCqExOp;
  v.create_qp_ex = CreateQpExOp;
  ibv_context& c = v.context;
  c.device = device;
  c.ops.poll_cq = PollCq;
  c.ops.req_notify_cq = ReqNotifyCq;
  c.ops.post_send = PostSend;
  c.ops.post_recv = PostRecv;
  c.ops.post_srq_recv = PostSrqRecv;
  c.ops.alloc_mw = AllocMwOp;
  c.ops.dealloc_mw = DeallocMwOp;
  c.ops.bind_mw = BindMwOp;
  // The uverbs command fd of a device context: programs dup it to share the
  // context (pyverbs' shared-PD tests) or print it. A memfd named after the
  // device stands for it: a real descriptor, closed with the context.
  c.cmd_fd = memfd_create(("verbsim-uverbs-" + std::string(device->name)).c_str(),
                          MFD_CLOEXEC);
  c.async_fd = ctx->async_pipe.read_fd;
  c.num_comp_vectors = 1;
  pthread_mutex_init(&c.mutex, nullptr);
  c.abi_compat = __VERBS_ABI_IS_EXTENDED;
  StartAsyncPump(ctx);
  return &c;
}

int ibv_close_device(ibv_context* context) {
  Ctx* ctx = CtxOf(context);
  StopAsyncPump(ctx);
  ctx->async_pipe.Close();
  if (context->cmd_fd >= 0) close(context->cmd_fd);
  delete ctx;
  return 0;
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  Ctx* ctx = CtxOf(context);
  FillDeviceAttr(ctx->impl->device_attr(), *context->device,
                 WrapOf<Device>(context->device)->index, attr);
  return 0;
}

// The exported form; the header's inline ibv_query_port reaches QueryPortOp
// through verbs_context first.
int ibv_query_port(ibv_context* context, uint8_t port_num,
                   struct _compat_ibv_port_attr* attr) {
  return QueryPortOp(context, port_num,
                     reinterpret_cast<ibv_port_attr*>(attr),
                     sizeof(ibv_port_attr));
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index,
                  ibv_gid* gid) {
  absl::StatusOr<Gid> g = CtxOf(context)->impl->QueryGid(port_num, index);
  if (!g.ok()) {
    ErrnoFrom(g.status(), "ibv_query_gid");
    return -1;
  }
  GidToIbv(*g, gid);
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num,
                      uint32_t gid_index, ibv_gid_entry* entry,
                      uint32_t flags, size_t /*entry_size*/) {
  if (flags != 0) return EINVAL;
  absl::StatusOr<Gid> g = CtxOf(context)->impl->QueryGid(port_num, gid_index);
  if (!g.ok()) return ErrnoFrom(g.status(), "ibv_query_gid_ex");
  // An empty entry of the table (rdma-core's ibv_query_gid_ex: ENODATA).
  if (gid_index != 0 && *g == Gid{}) return ENODATA;
  std::memset(entry, 0, sizeof(*entry));
  GidToIbv(*g, &entry->gid);
  entry->gid_index = gid_index;
  entry->port_num = port_num;
  entry->gid_type = IBV_GID_TYPE_ROCE_V2;
  entry->ndev_ifindex = 0;
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries,
                             size_t max_entries, uint32_t flags,
                             size_t /*entry_size*/) {
  if (flags != 0) {
    errno = EINVAL;
    return -EINVAL;
  }
  Ctx* ctx = CtxOf(context);
  size_t n = 0;
  for (int port = 1; port <= ctx->impl->device_attr().phys_port_cnt; ++port) {
    absl::StatusOr<PortAttr> pa = ctx->impl->QueryPort(port);
    if (!pa.ok()) continue;
    for (int i = 0; i < pa->gid_tbl_len; ++i) {
      // A table that does not fit is EINVAL (the kernel's
      // rdma_query_gid_table), whatever the buffer holds so far.
      if (n == max_entries) {
        errno = EINVAL;
        return -EINVAL;
      }
      if (_ibv_query_gid_ex(context, port, i, &entries[n], 0,
                            sizeof(ibv_gid_entry)) == 0) ++n;
    }
  }
  return static_cast<ssize_t>(n);
}

// IBVERBS_PRIVATE_34, declared in <infiniband/driver.h> with an enum whose
// IBV_GID_TYPE_SYSFS_ROCE_V2 is 1; ibv_devinfo calls it.
int ibv_query_gid_type(ibv_context* context, uint8_t port_num,
                       unsigned int index, int* type) {
  absl::StatusOr<Gid> g = CtxOf(context)->impl->QueryGid(port_num, index);
  if (!g.ok()) return ErrnoFrom(g.status(), "ibv_query_gid_type");
  // The sim's GIDs are RoCEv2 (IPv4-mapped, core/types.h).
  *type = 1;  // IBV_GID_TYPE_SYSFS_ROCE_V2
  return 0;
}

int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index,
                   __be16* pkey) {
  absl::StatusOr<PortAttr> pa = CtxOf(context)->impl->QueryPort(port_num);
  if (!pa.ok()) return ErrnoFrom(pa.status(), "ibv_query_pkey");
  if (index < 0 || index >= pa->pkey_tbl_len) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htobe16(0xffff);  // the default full-member P_Key
  return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  __be16 p;
  if (ibv_query_pkey(context, port_num, 0, &p) == 0 && p == pkey) return 0;
  errno = ENOENT;
  return -1;
}

// No device reads the process's pages by DMA here: a child's copy-on-write
// pages can never be what a region of the parent points at, so fork safety
// is not needed, as libibverbs reports on kernels with copy-on-fork for
// pinned pages (ibv_fork_init(3): IBV_FORK_UNNEEDED).
int ibv_fork_init(void) { return 0; }

enum ibv_fork_status ibv_is_fork_initialized(void) {
  return IBV_FORK_UNNEEDED;
}

// Reads DIR/FILE into buf as libibverbs does: without its final newline,
// NUL-terminated; -1 with errno when it cannot be read or does not fit.
// There is no sysfs behind the sim's devices; under the sysfs view
// (dropin/sysfs, `verbsim exec`) their directories read as the view says.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf,
                        size_t size) {
  const std::string path = absl::StrCat(dir, "/", file);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t len = read(fd, buf, size);
  const int err = errno;
  close(fd);
  if (len < 0) {
    errno = err;
    return -1;
  }
  size_t n = static_cast<size_t>(len);
  if (n > 0 && buf[n - 1] == '\n') {
    buf[--n] = '\0';
  } else if (n < size) {
    buf[n] = '\0';
  } else {
    errno = EOVERFLOW;  // no room for the terminating NUL
    return -1;
  }
  return static_cast<int>(n);
}

}  // extern "C"
