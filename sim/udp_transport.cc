#include "sim/udp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/errors.h"

namespace verbsim::sim {

sockaddr_in LoopbackAddress(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

UdpSockets::~UdpSockets() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
  if (wake_fd_ >= 0) close(wake_fd_);
}

namespace {

// Binds 127.0.0.1:`port` for UDP, with room for a burst of full-MTU packets
// (a window of a bandwidth test): a full receive buffer drops datagrams,
// which RC then retransmits, and a fabric of RoCE is lossless (the loss of
// a go-back-N window costs far more than the buffer). 16 MiB holds the
// window of perftest's defaults (128 writes of 64 KiB, 8 MiB) with the
// kernel's overhead per datagram while the receiving process is off the
// CPU; with 4 MiB, runs of ib_write_bw lost up to 1,800 datagrams each
// (docs/performance.md, "Across processes: a window in the socket buffer,
// the wire form written once"). SO_RCVBUFFORCE passes net.core.rmem_max when we may
// (CAP_NET_ADMIN); otherwise the kernel caps SO_RCVBUF there. The memory
// is taken only while datagrams wait. Returns the socket, or -1 with errno.
int BindPort(int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int buf = 16 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
  }
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  }
  const sockaddr_in a = LoopbackAddress(port);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

}  // namespace

absl::Status UdpSockets::Open(int base_port, int fabric_nodes,
                              const std::vector<int>& local_nodes) {
  base_port_ = base_port;
  fabric_nodes_ = fabric_nodes;
  int last_port = 0;
  for (int slot = 0; slot < kMaxProcessSlots; ++slot) {
    std::vector<int> fds;
    int err = 0;
    for (int n : local_nodes) {
      last_port = SlotPort(base_port, fabric_nodes, n, slot);
      if (last_port > 65535) {
        err = EADDRNOTAVAIL;
        break;
      }
      const int fd = BindPort(last_port);
      if (fd < 0) {
        err = errno;
        break;
      }
      fds.push_back(fd);
    }
    if (err == 0) {
      const int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (wake < 0) {
        err = errno;
        for (int fd : fds) close(fd);
        return Errno(err, "UDP transport: eventfd: %s", std::strerror(err));
      }
      fds_ = std::move(fds);
      nodes_ = local_nodes;
      wake_fd_ = wake;
      slot_ = slot;
      return absl::OkStatus();
    }
    for (int fd : fds) close(fd);
    // A port in use belongs to another process of the fabric (or to
    // anyone): the next slot. Any other error ends the search.
    if (err != EADDRINUSE) {
      return Errno(err, "UDP transport: cannot bind 127.0.0.1:%d: %s",
                   last_port, std::strerror(err));
    }
  }
  return Errno(EADDRINUSE,
               "UDP transport: cannot bind 127.0.0.1:%d: %s (all %d process "
               "slots of base port %d are taken)",
               last_port, std::strerror(EADDRINUSE), kMaxProcessSlots,
               base_port);
}

bool UdpSockets::Send(int src, int dst, int dst_slot,
                      const std::vector<uint8_t>& bytes) {
  if (dst_slot < 0 || dst_slot >= kMaxProcessSlots) return false;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i] != src) continue;
    const sockaddr_in a =
        LoopbackAddress(SlotPort(base_port_, fabric_nodes_, dst, dst_slot));
    const ssize_t n =
        sendto(fds_[i], bytes.data(), bytes.size(), 0,
               reinterpret_cast<const sockaddr*>(&a), sizeof(a));
    return n == static_cast<ssize_t>(bytes.size());
  }
  return false;
}

void UdpSockets::CloseAfterFork() {
  for (int& fd : fds_) {
    close(fd);
    fd = -1;
  }
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
}

void UdpSockets::Wake() {
  const uint64_t one = 1;
  // A full counter still wakes the poller; nothing to do on failure.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void UdpSockets::WaitReadable(int64_t timeout_ns, bool sockets) {
  std::vector<pollfd> pfds;
  if (sockets) {
    for (int fd : fds_) pfds.push_back({fd, POLLIN, 0});
  }
  pfds.push_back({wake_fd_, POLLIN, 0});
  timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000);
  ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000);
  if (ppoll(pfds.data(), pfds.size(), &ts, nullptr) <= 0) return;
  if (pfds.back().revents & POLLIN) {
    uint64_t v;
    [[maybe_unused]] ssize_t n = read(wake_fd_, &v, sizeof(v));
  }
}

void UdpSockets::Drain(std::vector<Datagram>* out) {
  // A receive buffer per thread, as long as any datagram. A datagram of at
  // least kHandOverBytes takes the buffer itself and a new one (not
  // zero-filled) replaces it, so its bytes are not copied again; a shorter
  // one is copied out, so that a burst of ACKs does not hold a 64 KiB block
  // each (a handed-over block is at most twice its datagram).
  constexpr size_t kBufferBytes = 65536;
  constexpr size_t kHandOverBytes = kBufferBytes / 2;
  static thread_local std::unique_ptr<uint8_t[]> buf;
  for (int fd : fds_) {
    // Each recv is one datagram; at most a batch a socket.
    for (int k = 0; k < kDrainBatch; ++k) {
      if (buf == nullptr) buf.reset(new uint8_t[kBufferBytes]);
      sockaddr_in from{};
      socklen_t from_len = sizeof(from);
      const ssize_t n =
          recvfrom(fd, buf.get(), kBufferBytes, MSG_DONTWAIT,
                   reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 0) break;
      // Only the fabric's own nodes send to it: 127.0.0.1 and the port of a
      // node in some process slot (docs/udp-transport.md, "Trust").
      const int offset = static_cast<int>(ntohs(from.sin_port)) - base_port_;
      if (from_len < sizeof(from) || from.sin_family != AF_INET ||
          from.sin_addr.s_addr != htonl(INADDR_LOOPBACK) || offset < 0 ||
          offset >= fabric_nodes_ * kMaxProcessSlots) {
        ++foreign_;
        continue;
      }
      Datagram d;
      d.src_node = offset % fabric_nodes_;
      d.size = static_cast<size_t>(n);
      if (d.size >= kHandOverBytes) {
        d.data = std::move(buf);  // replaced at the next receive
      } else {
        d.data.reset(new uint8_t[d.size]);
        std::memcpy(d.data.get(), buf.get(), d.size);
      }
      out->push_back(std::move(d));
    }
  }
}

}  // namespace verbsim::sim
