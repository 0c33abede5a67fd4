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
  for (int fd : fds_) close(fd);
  if (wake_fd_ >= 0) close(wake_fd_);
}

absl::Status UdpSockets::Open(int base_port,
                              const std::vector<int>& local_nodes) {
  base_port_ = base_port;
  std::vector<int> fds;
  auto fail = [&](int err, int port) {
    for (int fd : fds) close(fd);
    return Errno(err, "UDP transport: cannot bind 127.0.0.1:%d: %s", port,
                 std::strerror(err));
  };
  for (int n : local_nodes) {
    const int port = base_port + n;
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(errno, port);
    fds.push_back(fd);
    // Room for a burst of full-MTU packets (a window of a bandwidth test):
    // a full receive buffer drops datagrams, which RC then retransmits.
    // SO_RCVBUFFORCE passes net.core.rmem_max when we may (CAP_NET_ADMIN);
    // otherwise the kernel caps SO_RCVBUF there.
    const int buf = 4 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) != 0) {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) != 0) {
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    }
    const sockaddr_in a = LoopbackAddress(port);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
      return fail(errno, port);
    }
  }
  const int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) return fail(errno, 0);
  fds_ = std::move(fds);
  nodes_ = local_nodes;
  wake_fd_ = wake;
  return absl::OkStatus();
}

bool UdpSockets::Send(int src, int dst, const std::vector<uint8_t>& bytes) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i] != src) continue;
    const sockaddr_in a = LoopbackAddress(base_port_ + dst);
    const ssize_t n =
        sendto(fds_[i], bytes.data(), bytes.size(), 0,
               reinterpret_cast<const sockaddr*>(&a), sizeof(a));
    return n == static_cast<ssize_t>(bytes.size());
  }
  return false;
}

void UdpSockets::Wake() {
  const uint64_t one = 1;
  // A full counter still wakes the poller; nothing to do on failure.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

void UdpSockets::WaitReadable(int64_t timeout_ns) {
  std::vector<pollfd> pfds;
  for (int fd : fds_) pfds.push_back({fd, POLLIN, 0});
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

void UdpSockets::Drain(int fabric_nodes, std::vector<Datagram>* out) {
  static thread_local std::vector<uint8_t> buf(65536);
  for (int fd : fds_) {
    // Each recv is one datagram; at most a batch a socket.
    for (int k = 0; k < kDrainBatch; ++k) {
      sockaddr_in from{};
      socklen_t from_len = sizeof(from);
      const ssize_t n =
          recvfrom(fd, buf.data(), buf.size(), MSG_DONTWAIT,
                   reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 0) break;
      // Only the fabric's own nodes send to it: 127.0.0.1 and a node's port
      // (docs/udp-transport.md, "Trust").
      const int node = static_cast<int>(ntohs(from.sin_port)) - base_port_;
      if (from_len < sizeof(from) || from.sin_family != AF_INET ||
          from.sin_addr.s_addr != htonl(INADDR_LOOPBACK) || node < 0 ||
          node >= fabric_nodes) {
        ++foreign_;
        continue;
      }
      out->push_back({node, std::vector<uint8_t>(buf.begin(), buf.begin() + n)});
    }
  }
}

}  // namespace verbsim::sim
