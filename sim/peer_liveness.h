// Which processes of fabrics spread over processes (the UDP transport,
// docs/udp-transport.md "Time and progress") have run lately: a small
// shared-memory table with one slot per UDP port of the machine.
//
// A real HCA keeps answering while its host's process sleeps; in the sim the
// peer's "HCA" is its process. So before an RC requester counts an ACK
// timeout against a peer in another process, it asks the slot of the port
// it sends to whether that port's process has received and delivered what
// was sent to it since the requester's last packet left. If it has not (it
// has not had the CPU), the expiry is not the peer's failure to answer.
//
// Each slot holds its owner's pid and the CLOCK_MONOTONIC time at which the
// owner last began a drain of its sockets that emptied them: every datagram
// that reached the owner before that time has been delivered. The owner
// holds a POSIX record lock on its slot for as long as it owns it; the
// kernel drops that lock when the process exits or is killed (before it is
// reaped) and when it execs (the descriptor is close-on-exec), and a forked
// child does not inherit it. So a slot whose lock nobody holds belongs to no
// live process, and a recycled pid is never taken for the owner.
//
// A port is bound by one process at a time, so one table serves every
// fabric of a user: a file under /dev/shm (shm_open), mode 0600, named after
// the user, 2 MiB at most (tmpfs holds only the pages of slots in use).
// Programs often end without closing their devices, or are killed, so a
// table per fabric would pile up; this one is a single file. Every process
// that has it open holds a read lock on its first byte, and the last one to
// close it removes it.
#ifndef VERBSIM_SIM_PEER_LIVENESS_H_
#define VERBSIM_SIM_PEER_LIVENESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace verbsim::sim {

namespace liveness_internal {
struct Mapping;  // the process's open of one table (peer_liveness.cc)
struct Slot;
}  // namespace liveness_internal

// CLOCK_MONOTONIC in nanoseconds: the clock every process of the machine
// shares, the time base of the table.
int64_t MonotonicNs();

class LivenessTable {
 public:
  // A slot for each UDP port, 0 .. 65535.
  static constexpr int kSlots = 65536;

  // The shm_open name of the calling user's table: /verbsim-liveness-<uid>,
  // or what a test set for its process (and the children it forks).
  static std::string DefaultName();
  static void SetDefaultNameForTesting(const std::string& name);

  // Opens the table `name` (creating it). An error says why not (a file of
  // another user or open to others, one of another layout, no shared
  // memory); the caller then goes on without.
  static absl::StatusOr<std::unique_ptr<LivenessTable>> Open(
      const std::string& name);

  // Releases the slots this object claimed; the last user of the table on
  // the machine removes it.
  ~LivenessTable();
  LivenessTable(const LivenessTable&) = delete;
  LivenessTable& operator=(const LivenessTable&) = delete;

  // Makes the slot of `port` this process's: its pid, its lock, no drain
  // yet. An error when the port is not one (0 .. 65535) or another live
  // process holds it.
  absl::Status Claim(int port);
  // Gives a claimed slot up (the destructor does it for every one left).
  void Release(int port);

  // This process drained the sockets of every port this object claimed:
  // each datagram that reached them before `drained_ns` (MonotonicNs) has
  // been delivered. A plain store per port, no system call.
  void Beat(int64_t drained_ns);

  enum class Peer {
    kGone,         // no live process owns the port (or it is not one)
    kRanSince,     // its owner drained at or after the time asked about
    kNotRunSince,  // its owner lives but has not drained since then
  };
  // What the owner of `port` did since `since_ns` (MonotonicNs). One
  // fcntl(F_GETLK) when the owner is another process.
  Peer Check(int port, int64_t since_ns) const;

 private:
  explicit LivenessTable(std::shared_ptr<liveness_internal::Mapping> mapping);
  liveness_internal::Slot* SlotOf(int port) const;

  std::shared_ptr<liveness_internal::Mapping> mapping_;
  std::vector<int> claimed_;
  pid_t claimer_ = 0;  // the process that claimed them
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_PEER_LIVENESS_H_
