// The CM's wire: UNIX SOCK_SEQPACKET sockets in the abstract namespace, one
// message per CM MAD. A listener at (address, port) is the socket named
// "verbsim-rdmacm/<namespace>/<address>:<port>"; a connection is one socket
// pair. One service thread waits on all of them and on the CM's timers, and
// hands what arrives, and each timer that runs out, to connect.cc and ids.cc
// under CmMutex; timers first, so that an answer arriving after its
// request's time is up finds the request already given up, as the kernel's
// CM ignores it (cm.c cm_rep_handler: a REP for an id no longer in
// REQ_SENT).
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {

std::mutex& CmMutex() {
  static std::mutex* mu = new std::mutex;  // never destroyed: the thread uses it
  return *mu;
}

namespace {

enum class Kind { kListen, kPending, kConn };
struct Entry {
  Kind kind;
  Id* id;  // the listener (kListen, kPending) or the connection's id
};

std::map<int, Entry>* table = nullptr;  // under CmMutex
std::set<Id*>* timed = nullptr;         // ids with a timer armed; under CmMutex
int wake_fd = -1;

void Wake() {
  const uint64_t one = 1;
  if (wake_fd >= 0) (void)!write(wake_fd, &one, sizeof(one));
}

void ServiceLoop();

void StartService() {
  if (table != nullptr) return;
  table = new std::map<int, Entry>;
  timed = new std::set<Id*>;
  wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  std::thread(ServiceLoop).detach();
}

}  // namespace

void ForgetServiceAfterFork() {
  // The service thread is the parent's; the child starts its own on first
  // use. The parent's table stays allocated: its sockets are the parent's
  // listeners and connections, which the child leaves alone.
  table = nullptr;
  timed = nullptr;
  wake_fd = -1;
}

namespace {

sockaddr_un NameOf(uint32_t ip, uint16_t port, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  in_addr a{htonl(ip)};
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, text, sizeof(text));
  std::string name = "verbsim-rdmacm/" + SocketNamespace() + "/" + text + ":" +
                     std::to_string(port);
  // Abstract namespace: a leading NUL, no file, gone with the last close.
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

// Binds a socket to (ip, port); the fd, or -1 with errno.
int BindName(uint32_t ip, uint16_t port) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  socklen_t len;
  sockaddr_un addr = NameOf(ip, port, &len);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

void Drop(int fd) {
  table->erase(fd);
  close(fd);
}

// Delivers the fabric's datagrams ready on this process's sockets (the
// drop-in libibverbs' verbsim_dropin_take_datagrams; absent on another
// libibverbs). A peer's CM message comes after whatever that peer sent on
// the fabric before it: on a device the ACK of a send is handled as it
// arrives, long before a DREQ reaches the program, so a program that closes
// its connection on DISCONNECTED never sees that send flushed. Here the
// ACK's datagram may still wait in a socket when the message is read, so
// it is taken first. Called without CmMutex: the fabric's locks come after
// it, never before.
void TakeDatagrams() {
  using Hook = int (*)();
  static const Hook hook =
      reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "verbsim_dropin_take_datagrams"));
  if (hook != nullptr) hook();
}

void HandleReadable(int fd) {
  TakeDatagrams();
  std::lock_guard<std::mutex> lock(CmMutex());
  auto it = table->find(fd);
  if (it == table->end()) return;  // closed since the poll
  const Entry entry = it->second;
  if (entry.kind == Kind::kListen) {
    int c = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) (*table)[c] = Entry{Kind::kPending, entry.id};
    return;
  }
  Msg msg;
  ssize_t n = recv(fd, &msg, sizeof(msg), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  const bool whole = n == static_cast<ssize_t>(sizeof(msg));
  if (entry.kind == Kind::kPending) {
    Id* child = nullptr;
    if (whole && (msg.type == MsgType::kReq || msg.type == MsgType::kSidrReq)) {
      child = OnRequest(entry.id, fd, msg);
    }
    if (child == nullptr) {
      Drop(fd);
    } else {
      (*table)[fd] = Entry{Kind::kConn, child};
    }
    return;
  }
  if (whole) {
    OnMessage(entry.id, &msg);
    return;
  }
  // The peer closed its end (or sent something that is not a message).
  Drop(fd);
  entry.id->conn_fd = -1;
  OnMessage(entry.id, nullptr);
}

// Runs the timers that have run out, earliest first; returns how long poll
// may wait for the next one (-1: none armed).
int RunTimers() {
  std::lock_guard<std::mutex> lock(CmMutex());
  for (;;) {
    Id* next = nullptr;
    for (Id* id : *timed) {
      if (next == nullptr || id->deadline < next->deadline) next = id;
    }
    if (next == nullptr) return -1;
    const Clock::time_point now = Clock::now();
    if (next->deadline > now) {
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          next->deadline - now);
      // Rounded up, so the timer is due when poll returns.
      return static_cast<int>(std::min<int64_t>(wait.count() + 1, 1 << 30));
    }
    timed->erase(next);
    next->timer_armed = false;
    if (next->state == State::kAddrQuery) {
      OnAddrTimer(next);
    } else {
      OnTimer(next);
    }
  }
}

void ServiceLoop() {
  std::vector<pollfd> fds;
  for (;;) {
    const int timeout_ms = RunTimers();
    fds.clear();
    fds.push_back(pollfd{wake_fd, POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(CmMutex());
      for (const auto& [fd, entry] : *table) fds.push_back(pollfd{fd, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) continue;
    if (fds[0].revents != 0) {
      uint64_t count;
      (void)!read(wake_fd, &count, sizeof(count));
    }
    // Timers that ran out while poll waited go before the messages.
    RunTimers();
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) HandleReadable(fds[i].fd);
    }
  }
}

}  // namespace

int BindSockets(Id* id) {
  StartService();
  std::vector<Node*> on;
  if (id->node != nullptr) {
    on.push_back(id->node);
  } else {
    on = LocalNodes();
  }
  if (on.empty()) return Fail(EADDRNOTAVAIL);
  uint16_t port = ntohs(id->src.sin_port);
  // Port 0: an ephemeral port, as bind(2), tried until one is free.
  static std::minstd_rand ephemeral(static_cast<unsigned>(getpid()));
  const int attempts = port == 0 ? 64 : 1;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const uint16_t p = port != 0 ? port
                                 : static_cast<uint16_t>(32768 + ephemeral() % 28000);
    std::vector<int> bound;
    for (Node* n : on) {
      int fd = BindName(n->ip, p);
      if (fd < 0) break;
      bound.push_back(fd);
    }
    if (bound.size() == on.size()) {
      id->listen_fds = bound;
      id->src.sin_port = htons(p);
      return 0;
    }
    for (int fd : bound) close(fd);
  }
  return Fail(EADDRINUSE);
}

int ListenSockets(Id* id, int backlog) {
  for (int fd : id->listen_fds) {
    if (listen(fd, backlog > 0 ? backlog : 128) != 0) return -1;
    (*table)[fd] = Entry{Kind::kListen, id};
  }
  Wake();
  return 0;
}

int ConnectSocket(Id* id) {
  StartService();
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  socklen_t len;
  // 127.0.0.1, unless a node has it, is this process's first node (as in
  // FillRoute): its listeners are named by that node's address.
  uint32_t ip = ntohl(id->dst.sin_addr.s_addr);
  if (const Node* local = LocalNodeOf(ip)) ip = local->ip;
  sockaddr_un addr = NameOf(ip, ntohs(id->dst.sin_port), &len);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(fd);
    return Fail(ECONNREFUSED);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  id->conn_fd = fd;
  (*table)[fd] = Entry{Kind::kConn, id};
  Wake();
  return 0;
}

bool SendMsg(Id* id, const Msg& msg) {
  if (id->conn_fd < 0) return false;
  if (Debug()) {
    Warn("send message type " + std::to_string(static_cast<int>(msg.type)) +
         " qpn " + std::to_string(msg.qpn));
  }
  ssize_t n;
  do {
    n = send(id->conn_fd, &msg, sizeof(msg), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof(msg));
}

Msg MsgFrom(const Id* id, MsgType type) {
  Msg m{};
  m.type = type;
  m.qpn = id->qp_num;
  m.psn = id->psn;
  m.src_ip = id->src.sin_addr.s_addr;
  m.dst_ip = id->dst.sin_addr.s_addr;
  m.src_port = id->src.sin_port;
  m.dst_port = id->dst.sin_port;
  if (id->node != nullptr) std::memcpy(m.gid, id->node->gid.raw, 16);
  m.responder_resources = id->responder_resources;
  m.initiator_depth = id->initiator_depth;
  m.retry_count = id->retry_count;
  m.rnr_retry_count = id->rnr_retry_count;
  m.cm_response_timeout = static_cast<uint8_t>(Timing().response_timeout);
  m.max_cm_retries = static_cast<uint8_t>(Timing().max_retries);
  return m;
}

void ArmTimer(Id* id, int64_t after_ms) {
  StartService();
  id->deadline = Clock::now() + std::chrono::milliseconds(after_ms);
  id->timer_armed = true;
  timed->insert(id);
  Wake();
}

void StopTimer(Id* id) {
  if (timed != nullptr) timed->erase(id);
  id->timer_armed = false;
}

void CloseSockets(Id* id) {
  StopTimer(id);
  // Bound but not listening: those sockets are not in the table.
  for (int fd : id->listen_fds) {
    if (table == nullptr || table->count(fd) == 0) close(fd);
  }
  id->listen_fds.clear();
  if (table != nullptr) {
    for (auto it = table->begin(); it != table->end();) {
      if (it->second.id == id) {
        close(it->first);
        it = table->erase(it);
      } else {
        ++it;
      }
    }
    Wake();
  }
  id->conn_fd = -1;
}

int SetPrivateData(Msg* msg, const void* data, int len, int max) {
  if (len < 0 || len > max || (len > 0 && data == nullptr)) return Fail(EINVAL);
  if (len > 0) std::memcpy(msg->private_data, data, len);
  msg->private_data_len = static_cast<uint8_t>(len);
  return 0;
}

}  // namespace verbsim::rdmacm
