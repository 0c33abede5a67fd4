// The sim nodes this process owns and their IPv4 addresses.
//
// A sim node's GID is the IPv4-mapped ::ffff:<address>, its address the
// fabric's base + its index, inside 127.0.0.0/8 (sim/addresses.h,
// docs/drop-in.md "Addresses"), so an address names a node. The devices the
// drop-in libibverbs lists are this process's nodes: all of them
// in-process, the `local=` ones with VERBSIM_UDP.
//
// A process makes its nodes' presence known with one abstract datagram
// socket per node, "verbsim-rdmacm/<namespace>/node/<address>" (or, when
// other processes own the node too, that name with "#<k>" for the first
// free k), bound for its whole life: rdma_resolve_addr finds a node of
// another process only while such a socket is bound, as ARP finds a host
// only while it is up.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "core/environment.h"
#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {

void Warn(const std::string& message) {
  std::fprintf(stderr, "librdmacm (verbsim): %s\n", message.c_str());
}

int Fail(int err) {
  errno = err;
  return -1;
}

bool Debug() {
  static const bool debug = env::IsOn(env::kDebug);
  return debug;
}

namespace {

// The CM sockets' namespace: the UDP base port from VERBSIM_UDP, shared by
// the processes of one fabric; else this process alone.
std::string NamespaceFromEnv() {
  if (std::optional<std::string> v = env::Get(env::kUdp)) {
    std::stringstream options(*v);
    std::string item;
    while (std::getline(options, item, ',')) {
      if (item.rfind("udp=", 0) == 0) return "udp" + item.substr(4);
    }
  }
  return "pid" + std::to_string(getpid());
}

// Init runs once per process image: once in the process, and again in a
// child of fork() when the fabric spans processes (ForkChild).
std::mutex& InitMutex() {
  static std::mutex* mu = new std::mutex;  // never destroyed
  return *mu;
}
bool initialized = false;  // under InitMutex
std::vector<Node*>* nodes = nullptr;
// Every node of the fabric, this process's and the others': base + i for i
// in 0..fabric_size-1. Asked of the drop-in libibverbs
// (dropin/verbs/cm_hook.cc); on another libibverbs the fabric is the local
// nodes alone.
uint32_t fabric_base = 0;
int fabric_size = 0;
std::string* socket_namespace = nullptr;
CmTiming* timing = nullptr;

// The abstract name that announces node `ip` in this fabric, the k-th of
// the processes that own it.
constexpr int kPresenceNames = 16;
sockaddr_un PresenceName(uint32_t ip, int k, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  in_addr a{htonl(ip)};
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, text, sizeof(text));
  std::string name = "verbsim-rdmacm/" + *socket_namespace + "/node/" + text;
  if (k > 0) name += "#" + std::to_string(k);
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                name.size());
  return addr;
}

// Binds a presence socket of a node of this process, the first free name
// of the node's; it stays open until the process ends.
void AnnouncePresence(const Node& node) {
  for (int k = 0; k < kPresenceNames; ++k) {
    const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    socklen_t len;
    const sockaddr_un addr = PresenceName(node.ip, k, &len);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0) return;
    const int err = errno;
    close(fd);
    if (err != EADDRINUSE) {
      Warn("cannot announce the node with this process's address " +
           std::string(addr.sun_path + 1) + ": " + std::strerror(err));
      return;
    }
  }
  // Every name is taken: the node is present through the others.
}

void LearnFabric() {
  using Hook = int (*)(uint32_t*, int*);
  const Hook hook = reinterpret_cast<Hook>(
      dlsym(RTLD_DEFAULT, "verbsim_dropin_fabric_addresses"));
  if (hook != nullptr && hook(&fabric_base, &fabric_size) == 0) return;
  fabric_base = 0;
  fabric_size = 0;
}

void Init() {
  nodes = new std::vector<Node*>;
  if (socket_namespace == nullptr) {
    // A child of fork() keeps its parent's: the same fabric.
    socket_namespace = new std::string(NamespaceFromEnv());
  }
  std::string error;
  timing = new CmTiming(CmTimingFromEnv(&error));
  if (!error.empty()) {
    Warn(error + "; rdma_cm calls will fail with ENODEV");
    return;
  }
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr || count == 0) {
    Warn("no sim devices (see the libibverbs line above); rdma_cm calls will "
         "fail with ENODEV");
    if (list != nullptr) ibv_free_device_list(list);
    return;
  }
  // The drop-in lists the nodes of this process only (with VERBSIM_UDP,
  // those of its local= list).
  for (int i = 0; i < count; ++i) {
    ibv_context* verbs = ibv_open_device(list[i]);
    if (verbs == nullptr) {
      Warn(std::string("cannot open ") + ibv_get_device_name(list[i]) + ": " +
           std::strerror(errno));
      continue;
    }
    auto* node = new Node;
    node->verbs = verbs;
    ibv_query_gid(verbs, 1, 0, &node->gid);
    node->ip = (static_cast<uint32_t>(node->gid.raw[12]) << 24) |
               (static_cast<uint32_t>(node->gid.raw[13]) << 16) |
               (static_cast<uint32_t>(node->gid.raw[14]) << 8) |
               node->gid.raw[15];
    ibv_device_attr attr{};
    if (ibv_query_device(verbs, &attr) == 0) {
      node->max_rd_atom = static_cast<uint8_t>(attr.max_qp_rd_atom);
      node->max_init_rd_atom = static_cast<uint8_t>(attr.max_qp_init_rd_atom);
    }
    ibv_port_attr port{};
    if (ibv_query_port(verbs, 1, &port) == 0) node->active_mtu = port.active_mtu;
    nodes->push_back(node);
  }
  // The contexts stay open for the life of the process, as librdmacm's.
  ibv_free_device_list(list);
  LearnFabric();
  for (const Node* node : *nodes) AnnouncePresence(*node);
}

}  // namespace

const std::vector<Node*>& LocalNodes() {
  std::lock_guard<std::mutex> lock(InitMutex());
  if (!initialized) {
    Init();
    initialized = true;
    RegisterForkHandlers();  // after libibverbs' (Init opened the devices)
  }
  return *nodes;
}

void LockNodesForFork() { InitMutex().lock(); }
void UnlockNodesAfterFork() { InitMutex().unlock(); }

void ForgetNodesAfterFork() {
  // The parent's contexts belong to the parent's fabric, which the drop-in
  // libibverbs has left behind in this child: open the devices again on
  // first use. The old Node objects stay allocated (ids may point at them).
  initialized = false;
}

Node* LocalNodeOf(uint32_t ip) {
  const std::vector<Node*>& local = LocalNodes();
  for (Node* n : local) {
    if (n->ip == ip) return n;
  }
  // 127.0.0.1, when no node has it, stands for this process's first node.
  if (ip == 0x7f000001 && !local.empty()) return local.front();
  return nullptr;
}

bool FabricHasIp(uint32_t ip) {
  if (LocalNodeOf(ip) != nullptr) return true;
  return ip >= fabric_base &&
         uint64_t{ip} < uint64_t{fabric_base} + static_cast<uint64_t>(fabric_size);
}

const CmTiming& Timing() {
  LocalNodes();
  return *timing;
}

bool NodePresent(uint32_t ip) {
  if (LocalNodeOf(ip) != nullptr) return true;
  // A datagram socket's connect succeeds exactly when the name is bound;
  // nothing is sent.
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool present = false;
  for (int k = 0; k < kPresenceNames && !present; ++k) {
    socklen_t len;
    const sockaddr_un addr = PresenceName(ip, k, &len);
    present = connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0;
  }
  close(fd);
  return present;
}

const std::string& SocketNamespace() {
  LocalNodes();
  return *socket_namespace;
}

ibv_gid GidOfIp(uint32_t ip) {
  ibv_gid gid{};
  gid.raw[10] = gid.raw[11] = 0xff;
  gid.raw[12] = static_cast<uint8_t>(ip >> 24);
  gid.raw[13] = static_cast<uint8_t>(ip >> 16);
  gid.raw[14] = static_cast<uint8_t>(ip >> 8);
  gid.raw[15] = static_cast<uint8_t>(ip);
  return gid;
}

ibv_pd* DefaultPd(Node* node) {
  std::lock_guard<std::mutex> lock(CmMutex());
  return DefaultPdLocked(node);
}

ibv_pd* DefaultPdLocked(Node* node) {
  if (node->default_pd == nullptr) node->default_pd = ibv_alloc_pd(node->verbs);
  return node->default_pd;
}

}  // namespace verbsim::rdmacm
