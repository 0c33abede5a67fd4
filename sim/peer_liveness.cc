#include "sim/peer_liveness.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/errors.h"

namespace verbsim::sim {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

namespace liveness_internal {
namespace {

// The file: a 64-byte header, then the slots. The magic names the layout
// (version 1: a slot of 32 bytes for each of the 65536 ports); a fresh file
// is all zeros and its first user writes it.
constexpr uint64_t kMagic = 0x76736c6976650001ull;  // "vslive", version 1
constexpr size_t kHeaderBytes = 64;

}  // namespace

struct Slot {
  std::atomic<int32_t> pid;         // the owner; 0: none
  int32_t reserved0;
  std::atomic<int64_t> drained_ns;  // the owner's last complete drain
  int64_t reserved1[2];
};
static_assert(sizeof(Slot) == 32);
static_assert(std::atomic<int32_t>::is_always_lock_free &&
                  std::atomic<int64_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "the table's atomics must work between processes");

namespace {

constexpr size_t kBytes = kHeaderBytes + LivenessTable::kSlots * sizeof(Slot);

// The byte the owner of `port`'s slot locks; byte 0 is the users' read lock.
off_t LockByte(int port) {
  return static_cast<off_t>(kHeaderBytes + port * sizeof(Slot));
}

int Lock(int fd, int cmd, short type, off_t at) {
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = at;
  l.l_len = 1;
  return fcntl(fd, cmd, &l);
}

}  // namespace

// One open of the table per name and process, shared by the process's
// fabrics: POSIX record locks belong to the process, and closing any
// descriptor of the file would drop them all.
struct Mapping {
  std::string name;
  int fd = -1;
  void* base = nullptr;
  pid_t opener = 0;    // a forked child opens its own
  bool valid = false;  // the layout is ours
  std::mutex mu;
  std::set<int> owned;  // the ports this process claimed through it

  ~Mapping() {
    // The last user of the table (no other process holds the read lock)
    // removes it. A forked child's copy holds no lock of its own and
    // removes nothing, nor does anyone a file of another layout.
    if (valid && opener == getpid() && Lock(fd, F_SETLK, F_WRLCK, 0) == 0) {
      shm_unlink(name.c_str());
    }
    if (base != nullptr) munmap(base, kBytes);
    close(fd);  // drops this process's locks on the file
  }

  std::atomic<uint64_t>& magic() const {
    return *static_cast<std::atomic<uint64_t>*>(base);
  }
  Slot* slot(int port) const {
    return reinterpret_cast<Slot*>(static_cast<char*>(base) + kHeaderBytes) +
           port;
  }

  static absl::StatusOr<std::shared_ptr<Mapping>> Open(const std::string& name);
};

absl::StatusOr<std::shared_ptr<Mapping>> Mapping::Open(
    const std::string& name) {
  const std::string path = absl::StrCat("/dev/shm", name);
  auto fail = [&](int fd, int err, absl::string_view what) {
    if (fd >= 0) close(fd);
    return Errno(err, "%s: %s: %s", path, what, std::strerror(err));
  };
  // A table being removed by its last user is opened again, new.
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return fail(-1, errno, "shm_open");
    struct stat st {};
    if (fstat(fd, &st) != 0) return fail(fd, errno, "fstat");
    // Only the user's own table, writable by nobody else: what it says
    // decides whether a timer counts.
    if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
      close(fd);
      return Errno(EACCES, "%s: owned by uid %d with mode %o, not ours alone",
                   path, static_cast<int>(st.st_uid),
                   static_cast<int>(st.st_mode & 0777));
    }
    // The users' read lock: held while the table is open here; waits only
    // while a last user removes it.
    while (Lock(fd, F_SETLKW, F_RDLCK, 0) != 0) {
      if (errno != EINTR) return fail(fd, errno, "read lock");
    }
    if (fstat(fd, &st) != 0) return fail(fd, errno, "fstat");
    if (st.st_nlink == 0) {
      close(fd);  // removed meanwhile: a new one
      continue;
    }
    if (st.st_size < static_cast<off_t>(kBytes) &&
        ftruncate(fd, static_cast<off_t>(kBytes)) != 0) {
      return fail(fd, errno, "ftruncate");
    }
    void* base =
        mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return fail(fd, errno, "mmap");
    auto m = std::make_shared<Mapping>();
    m->name = name;
    m->fd = fd;
    m->base = base;
    m->opener = getpid();
    uint64_t seen = 0;
    if (!m->magic().compare_exchange_strong(seen, kMagic) && seen != kMagic) {
      // m's destructor unmaps and closes.
      return Errno(EPROTO, "%s: not a table of this layout (magic %#x)", path,
                   seen);
    }
    m->valid = true;
    return m;
  }
  return Errno(EAGAIN, "%s: removed each time it was opened", path);
}

}  // namespace liveness_internal

using liveness_internal::Mapping;
using liveness_internal::Slot;
using liveness_internal::LockByte;

namespace {
std::mutex& NameMu() {
  static std::mutex* const mu = new std::mutex;
  return *mu;
}
std::string& NameForTesting() {
  static std::string* const name = new std::string;
  return *name;
}
}  // namespace

std::string LivenessTable::DefaultName() {
  std::lock_guard<std::mutex> lock(NameMu());
  if (!NameForTesting().empty()) return NameForTesting();
  return absl::StrCat("/verbsim-liveness-", geteuid());
}

void LivenessTable::SetDefaultNameForTesting(const std::string& name) {
  std::lock_guard<std::mutex> lock(NameMu());
  NameForTesting() = name;
}

absl::StatusOr<std::unique_ptr<LivenessTable>> LivenessTable::Open(
    const std::string& name) {
  static std::mutex* const registry_mu = new std::mutex;
  static auto* const registry =
      new std::map<std::string, std::weak_ptr<Mapping>>;
  std::lock_guard<std::mutex> lock(*registry_mu);
  std::shared_ptr<Mapping> m = (*registry)[name].lock();
  if (m == nullptr || m->opener != getpid()) {
    absl::StatusOr<std::shared_ptr<Mapping>> opened = Mapping::Open(name);
    if (!opened.ok()) return opened.status();
    m = *std::move(opened);
    (*registry)[name] = m;
  }
  return std::unique_ptr<LivenessTable>(new LivenessTable(std::move(m)));
}

LivenessTable::LivenessTable(std::shared_ptr<Mapping> mapping)
    : mapping_(std::move(mapping)) {}

LivenessTable::~LivenessTable() {
  while (!claimed_.empty()) Release(claimed_.back());
}

Slot* LivenessTable::SlotOf(int port) const {
  if (port < 0 || port >= kSlots) return nullptr;
  return mapping_->slot(port);
}

absl::Status LivenessTable::Claim(int port) {
  Slot* s = SlotOf(port);
  if (s == nullptr) {
    return Errno(ERANGE, "%d is not a UDP port", port);
  }
  if (liveness_internal::Lock(mapping_->fd, F_SETLK, F_WRLCK,
                             LockByte(port)) != 0) {
    const int err = errno;
    return Errno(err == EAGAIN || err == EACCES ? EBUSY : err,
                 "the slot of port %d is held by process %d", port,
                 s->pid.load(std::memory_order_acquire));
  }
  claimer_ = getpid();
  s->drained_ns.store(0, std::memory_order_relaxed);
  s->pid.store(static_cast<int32_t>(claimer_), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mapping_->mu);
    mapping_->owned.insert(port);
  }
  claimed_.push_back(port);
  return absl::OkStatus();
}

void LivenessTable::Release(int port) {
  auto it = std::find(claimed_.begin(), claimed_.end(), port);
  if (it == claimed_.end()) return;
  claimed_.erase(it);
  // A forked child's copy of a table: the slot is its parent's still.
  if (getpid() != claimer_) return;
  Slot* s = SlotOf(port);
  {
    std::lock_guard<std::mutex> lock(mapping_->mu);
    mapping_->owned.erase(port);
  }
  s->pid.store(0, std::memory_order_release);
  liveness_internal::Lock(mapping_->fd, F_SETLK, F_UNLCK, LockByte(port));
}

void LivenessTable::Beat(int64_t drained_ns) {
  // Release: a peer that sees the time sees the drain done (what it sent
  // was delivered, and the answers left through the kernel before this).
  for (int port : claimed_) {
    SlotOf(port)->drained_ns.store(drained_ns, std::memory_order_release);
  }
}

LivenessTable::Peer LivenessTable::Check(int port, int64_t since_ns) const {
  const Slot* s = SlotOf(port);
  if (s == nullptr) return Peer::kGone;
  const int32_t pid = s->pid.load(std::memory_order_acquire);
  if (pid == 0) return Peer::kGone;
  bool ours;
  {
    std::lock_guard<std::mutex> lock(mapping_->mu);
    ours = mapping_->owned.count(port) != 0;
  }
  // Another fabric of this process owns it, or whoever holds its lock: the
  // pid is not compared (F_GETLK does not see our own locks, and a pid may
  // be recycled, or be another PID namespace's).
  if (!ours) {
    struct flock l {};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    l.l_start = LockByte(port);
    l.l_len = 1;
    if (fcntl(mapping_->fd, F_GETLK, &l) != 0 || l.l_type == F_UNLCK) {
      return Peer::kGone;  // its owner exited, was killed or exec'd
    }
  }
  return s->drained_ns.load(std::memory_order_acquire) >= since_ns
             ? Peer::kRanSince
             : Peer::kNotRunSince;
}

}  // namespace verbsim::sim
