#include "sim/mcast_presence.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace verbsim::sim {
namespace {

// Binds an abstract datagram socket named `name`; the fd, or -1.
int BindAbstract(const std::string& name) {
  sockaddr_un addr{};
  if (name.size() + 1 > sizeof(addr.sun_path)) return -1;
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

McastPresence::~McastPresence() {
  for (const auto& [key, fd] : members_) close(fd);
  for (const auto& [key, fd_count] : joins_) close(fd_count.first);
}

std::string McastPresence::Prefix(const Gid& gid) const {
  std::string hex;
  for (uint8_t b : gid) absl::StrAppend(&hex, absl::Hex(b, absl::kZeroPad2));
  return absl::StrCat("verbsim-mcast/", ns_, "/", hex, "/");
}

void McastPresence::AnnounceMember(const Gid& gid, int node, uint32_t qpn) {
  const auto key = std::make_tuple(gid, node, qpn);
  if (members_.count(key) != 0) return;
  const int fd = BindAbstract(absl::StrCat(Prefix(gid), "m/", node, "/", qpn));
  // A name that cannot be bound leaves the member local to this process.
  if (fd >= 0) members_[key] = fd;
}

void McastPresence::WithdrawMember(const Gid& gid, int node, uint32_t qpn) {
  auto it = members_.find(std::make_tuple(gid, node, qpn));
  if (it == members_.end()) return;
  close(it->second);
  members_.erase(it);
}

void McastPresence::AnnounceIpJoin(const Gid& gid, int node) {
  auto& [fd, count] = joins_[{gid, node}];
  if (count++ == 0) {
    fd = BindAbstract(absl::StrCat(Prefix(gid), "j/", node, "/", getpid()));
  }
}

void McastPresence::WithdrawIpJoin(const Gid& gid, int node) {
  auto it = joins_.find({gid, node});
  if (it == joins_.end()) return;
  if (--it->second.second == 0) {
    if (it->second.first >= 0) close(it->second.first);
    joins_.erase(it);
  }
}

McastPresence::View McastPresence::Scan(const Gid& gid) const {
  View view;
  // /proc/net/unix lists every bound socket; an abstract name shows with a
  // leading '@' as the last field.
  std::ifstream in("/proc/net/unix");
  const std::string want = "@" + Prefix(gid);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.rfind(' ');
    if (at == std::string::npos) continue;
    const absl::string_view name = absl::string_view(line).substr(at + 1);
    if (!absl::StartsWith(name, want)) continue;
    const std::vector<absl::string_view> parts =
        absl::StrSplit(name.substr(want.size()), '/');
    int node = 0;
    uint32_t value = 0;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[1], &node) ||
        !absl::SimpleAtoi(parts[2], &value)) {
      continue;
    }
    if (parts[0] == "m") view.members.emplace_back(node, value);
    if (parts[0] == "j") view.ip_joined.insert(node);
  }
  return view;
}

void McastPresence::ForgetAfterFork() {
  for (const auto& [key, fd] : members_) close(fd);
  for (const auto& [key, fd_count] : joins_) {
    if (fd_count.first >= 0) close(fd_count.first);
  }
  members_.clear();
  joins_.clear();
}

}  // namespace verbsim::sim
