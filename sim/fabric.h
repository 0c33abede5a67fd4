// The simulated fabric: nodes (simulated HCAs), links between them, and one
// event queue in virtual time. One mutex guards all of it; public calls take
// it once. Progress is driven by the calls that wait or poll (and by the
// explicit RunUntilIdle / RunFor), so a single-threaded test is deterministic.
#ifndef VERBSIM_SIM_FABRIC_H_
#define VERBSIM_SIM_FABRIC_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <queue>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include "absl/time/time.h"
#include "sim/addresses.h"
#include "sim/event_queue.h"
#include "sim/faults.h"
#include "sim/keys.h"
#include "sim/packet.h"
#include "sim/profile.h"
#include "sim/state.h"
#include "sim/thread_state.h"
#include "sim/trace.h"

namespace verbsim::sim {

class Fabric;
class LivenessTable;
class McastPresence;
class UdpSockets;

// A small, fast random source (the splitmix64 sequence) for the draws of
// the weak memory model, which come on every packet of the fast path; it
// meets UniformRandomBitGenerator, so std::shuffle takes it.
class FastRandom {
 public:
  using result_type = uint64_t;
  explicit FastRandom(uint64_t seed) : state_(seed) {}
  void seed(uint64_t seed) { state_ = seed; }
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t{0}; }
  uint64_t operator()() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// A simulated HCA with one port.
struct Node {
  Fabric* fabric = nullptr;
  int index = 0;
  std::string name;  // "sim0", "sim1", ...
  uint32_t ipv4 = 0;  // FabricOptions::address_base + index
  Gid gid{};          // ::ffff:<ipv4>
  KeyTable keys;
  absl::flat_hash_map<uint32_t, QpCore*> qps;
  // The live QP numbered `qpn`, or null (a scheduled event checks that its
  // QP still exists).
  QpCore* FindQp(uint32_t qpn) const {
    auto it = qps.find(qpn);
    return it == qps.end() ? nullptr : it->second;
  }
  uint32_t next_qpn = 17;  // QPNs are never reused within a fabric's life
  uint32_t next_id = 1;    // PD / CQ ids
  // Live objects, counted against the profile's device limits (max_qp,
  // ...; MRs and windows are counted by `keys`).
  int live_qps = 0, live_pds = 0, live_cqs = 0, live_srqs = 0, live_ahs = 0;
  // Multicast groups with a QP of this node in them, and the node's QP
  // attachments over all groups (max_mcast_grp, max_total_mcast_qp_attach).
  int mcast_groups = 0, mcast_attachments = 0;
  bool crashed = false;  // a NodeCrash fault took its HCA away
  bool port_down = false;  // Fabric::SetPortState took port 1 down
  // With the UDP transport: the node lives in another process; here it is
  // only a GID to route to (no QPs, no device).
  bool remote = false;
  // Open contexts, for asynchronous port events.
  std::vector<std::weak_ptr<ContextState>> contexts;
  // Counters.
  uint64_t packets_sent = 0;
  uint64_t packets_received = 0;
  uint64_t packets_dropped = 0;
  uint64_t icrc_errors = 0;
};

// Per-node counters, as read through Fabric::GetNodeStats.
struct NodeStats {
  uint64_t packets_sent = 0;
  uint64_t packets_received = 0;
  uint64_t packets_dropped = 0;
  uint64_t icrc_errors = 0;
};

// One link between two nodes (both directions).
struct LinkModel {
  absl::Duration latency = absl::Microseconds(1);
  double gbit_per_s = 100;
  // The largest payload a packet may carry on this link; a larger packet is
  // dropped (a path MTU above the link's is a misconfiguration, IBA 7.7.5).
  int mtu = 4096;
};

struct FabricOptions {
  int nodes = 2;
  uint64_t seed = 1;
  // Node i's IPv4 address is address_base + i (sim/addresses.h); every
  // node's address must lie in 127.0.0.0/8, or no device of the fabric
  // opens (Fabric::address_status).
  uint32_t address_base = kDefaultAddressBase;
  SimProfile profile;
  // The link model of every node pair without one of its own (RoCE-like: 1 us,
  // 100 Gbit/s, 4096-byte payloads); see Fabric::SetLink for one pair.
  LinkModel link;
  // Extra random delay per packet, uniform in [0, jitter], drawn from the
  // seed's jitter stream. Packets of one QP to one QP keep their order;
  // packets of different QPs and nodes interleave differently per seed.
  absl::Duration jitter = absl::Nanoseconds(200);
  // Randomised placement order of RDMA write data and ACK coalescing
  // (sim/placement.cc, sim/responder.cc), within what the spec allows.
  bool randomize_schedule = true;
  // Faults in the text form of sim/faults.h.
  std::string faults;
  // The UDP link transport (sim/udp_transport.h, docs/udp-transport.md).
  // base_port 0: every node is in this process, time is virtual (default).
  // Otherwise node i is reached at 127.0.0.1:<base_port + i>, the nodes
  // listed in local_nodes live in this process, the others in other
  // processes, and the fabric runs in real time once StartUdp() succeeds.
  struct Udp {
    int base_port = 0;
    std::vector<int> local_nodes;
  } udp;
};

class Fabric {
 public:
  explicit Fabric(FabricOptions options);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  const FabricOptions& options() const { return options_; }
  // OK, or why the nodes' addresses are refused (CheckAddressBase); a
  // fabric with refused addresses opens no device and sends nothing.
  const absl::Status& address_status() const { return address_status_; }
  const SimProfile& profile() const { return options_.profile; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  // Debian's absl is not built for TSan, so the fabric uses std::mutex.
  std::mutex& mu() { return mu_; }

  // The fabric lock as public calls take it: it also counts the threads
  // inside or waiting to get in, so a long wait can make room for them.
  class Lock {
   public:
    explicit Lock(Fabric& fabric) : fabric_(fabric) {
      if (!helper_thread_) {
        // Only "it changed" matters, so a relaxed load and store do (a
        // count lost to a race is harmless): no locked instruction here.
        fabric_.app_calls_.store(
            fabric_.app_calls_.load(std::memory_order_relaxed) + 1,
            std::memory_order_relaxed);
        fabric_.last_app_tid_.store(CurrentThreadTid(),
                                    std::memory_order_relaxed);
      }
      fabric_.TakeLock();
      lock_ = std::unique_lock<std::mutex>(fabric_.mu_, std::adopt_lock);
      if (!helper_thread_) ++fabric_.callers_;
      // In real time (UDP transport) "now" is the wall clock of the call,
      // so that a timer armed by a post runs its full length.
      fabric_.SyncClock();
    }
    ~Lock() {
      if (!lock_.owns_lock()) lock_.lock();  // (every path gives it back)
      if (!helper_thread_) --fabric_.callers_;
      fabric_.NoteLockLeft();
      lock_.unlock();
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    std::unique_lock<std::mutex>& unique_lock() { return lock_; }

   private:
    Fabric& fabric_;
    std::unique_lock<std::mutex> lock_;
  };

  // Takes mu() for a Lock (fabric_lock.cc). In-process, threads take
  // turns: a thread that finds the lock busy with another thread's run of
  // calls that do work waits (up to kLockTurnNs, then it asks for the next
  // turn) instead of slipping in between two of those calls, so the
  // fabric's data stays in one core's cache for a turn rather than moving
  // on every call (docs/performance.md, "Threads"). When the holder stops
  // calling in, or its calls do nothing, the waiting thread takes the lock
  // once it is free. With a progress thread (the UDP transport), and for a
  // helper thread, a plain lock.
  void TakeLock() {
    // The thread that had the lock last takes it again at once unless
    // another asked for a turn.
    const uintptr_t me = CurrentThreadToken();
    // (Never a helper: TakeLockSlow does not record one as the holder.)
    if (lock_holder_.load(std::memory_order_relaxed) == me &&
        lock_turn_.load(std::memory_order_acquire) == 0 && mu_.try_lock()) {
      NoteLockTaken();
      return;
    }
    TakeLockSlow(me);
  }
  void TakeLockSlow(uintptr_t me);
  // NoteLockTaken: the lock was just taken (by a Lock, or again after a
  // wait on cv_); NoteLockLeft: it is about to be given up. They keep
  // lock_state_, which the threads waiting their turn watch, and do nothing
  // while no thread waits: one that starts waiting sees the state change
  // within a look or two.
  void NoteLockTaken() {
    if (lock_waiters_.load(std::memory_order_relaxed) == 0) return;
    lock_state_.store(lock_state_.load(std::memory_order_relaxed) | 1,
                      std::memory_order_relaxed);
  }
  // `to_wait`: given up for a wait on cv_, which is no run of calls.
  void NoteLockLeft(bool to_wait = false) {
    if (lock_waiters_.load(std::memory_order_relaxed) == 0) return;
    // A call that did no work right after one that did (a ReqNotify
    // between two polls) is still part of a run of calls; two in a row
    // (a spin on an empty CQ) are not.
    const uint64_t work = WorkDone();
    const bool did_now = work != lock_work_at_leave_;
    lock_work_at_leave_ = work;
    const uint64_t did = !to_wait && (did_now || lock_did_before_) ? 2 : 0;
    lock_did_before_ = did_now;
    const uint64_t releases =
        (lock_state_.load(std::memory_order_relaxed) >> 2) + 1;
    lock_state_.store(releases << 2 | did, std::memory_order_relaxed);
  }
  // Posts, and events scheduled or run: it changes when a call does work.
  uint64_t WorkDone() const { return posts_ + events_.pushed() + steps_; }
  // Gives up `lock` (a Lock's), yields the processor, and takes it again
  // as TakeLock does: a long drive lets the other threads in.
  void YieldLock(std::unique_lock<std::mutex>& lock);

  // Marks the calling thread as a helper: a thread of a front end (the
  // drop-in's event pumps) that waits for events on behalf of an
  // application, which may meanwhile be blocked on a file descriptor. A
  // helper is not one of the application's threads (the fabric stays
  // single-threaded for a program with one thread), and its blocking waits
  // move the fabric on only once no application thread has called in for
  // kHelperGrace of real time; until then they wait for the application's
  // own calls to produce what they wait for. So a program that polls gets
  // the same run from the same seed, and one that blocks on a completion
  // channel or the async event fd still sees time pass. When the thread
  // that called in last is runnable rather than asleep (the kernel's view,
  // /proc/self/task/TID/stat), it was only preempted or is computing, as a
  // polling loop on a loaded machine is: the helper then waits
  // kHelperGraceRunnable instead, so that such a program keeps its run.
  static void MarkHelperThread() { helper_thread_ = true; }
  static bool IsHelperThread() { return helper_thread_; }
  static constexpr absl::Duration kHelperGrace = absl::Milliseconds(2);
  static constexpr absl::Duration kHelperGraceRunnable =
      absl::Milliseconds(50);

  // --- Public, thread-safe ---------------------------------------------
  // Runs events until none is left or `max_virtual` of virtual time passed.
  // Returns whether the fabric went idle.
  bool RunUntilIdle(absl::Duration max_virtual = absl::Seconds(60))
     ;
  // Runs every event due within `d` of virtual time and advances the clock
  // by `d`.
  void RunFor(absl::Duration d);
  // Virtual time since the fabric was made.
  absl::Duration Now();
  // Gives the link between nodes a and b (both directions) its own model;
  // EINVAL for an unknown node or a model out of range.
  absl::Status SetLink(int a, int b, const LinkModel& model);
  // Takes port 1 of `node` down (its packets are lost both ways, QueryPort
  // says DOWN, every open context gets IBV_EVENT_PORT_ERR) or up again
  // (IBV_EVENT_PORT_ACTIVE). EINVAL for an unknown node.
  absl::Status SetPortState(int node, bool up);
  LinkModel GetLink(int a, int b);
  // Adds fault rules (text form of sim/faults.h); EINVAL naming the column of
  // a bad rule, with nothing added.
  absl::Status AddFaults(absl::string_view text);
  absl::Status AddFaultPlan(FaultPlan plan);
  // Forgets the packet rules, link-down windows and nth-failure rules added
  // so far; timed events already scheduled (crashes, forced errors) stay.
  void ClearFaults();
  // Restarts the fabric's random streams from `seed`: every later draw
  // (jitter, ACK coalescing, placement order, fault probabilities) is the
  // one a fabric made with that seed would take from here.
  void Reseed(uint64_t seed);
  // Freezes virtual time (or lets it run again): while frozen, polls and
  // waits run only the events due now and never move the clock on, so
  // nothing that needs time (a packet's flight, a timer) happens until
  // RunFor or RunUntilIdle moves it. EOPNOTSUPP in real time (UDP).
  absl::Status Freeze(bool frozen);
  // How often each packet rule matched and fired, in the order added.
  std::vector<PacketRule> PacketRules();
  absl::StatusOr<NodeStats> GetNodeStats(int node);
  // The trace: its hash identifies a run; records are kept once asked for.
  uint64_t TraceHash();
  void KeepTrace(bool keep);
  std::vector<TraceRecord> TraceRecords();
  // The kept records as text, one per line.
  std::string TraceText();
  // Keeps a copy of every packet put on a link (headers and payload), with
  // the virtual time it was sent and whether a fault lost it, for packet
  // captures (pcap) and teaching tools.
  struct CapturedPacket {
    int64_t time_ns = 0;
    Packet packet;
    bool lost = false;  // dropped on the wire by a fault or a down link
  };
  // While packets are kept, every payload is read from the sender's buffers
  // at transmit (MemoryModel::gathers_at_post), so the capture has it.
  void KeepPackets(bool keep);
  std::vector<CapturedPacket> CapturedPackets();

  // Binds the sockets of options().udp and starts the progress thread: from
  // then on the clock is real time, packets to remote nodes leave as
  // datagrams, and datagrams for local nodes are delivered by that thread
  // (no caller needs to poll). EINVAL for bad options, EADDRINUSE (naming
  // the port) when a socket cannot be bound; nothing started on failure.
  // Several processes may own a node: each takes the first free process
  // slot, whose number the QPNs it makes carry (sim/udp_transport.h).
  absl::Status StartUdp();
  bool real_time() const { return udp_ != nullptr; }
  // The process slot StartUdp took (0 in-process).
  int process_slot() const { return process_slot_; }
  // Call in the child after fork() (pthread_atfork), with the parent's
  // fabric copied into it: closes the parent's UDP sockets in the child and
  // stops treating the fabric as driven by a progress thread (that thread
  // is the parent's). The fabric must then never be destroyed (its thread
  // object names a thread the child does not have); objects made before the
  // fork stay usable only as a detached copy whose packets no longer leave
  // the process. Safe only with mu() and the receive lock not held by
  // another thread at the fork (LockForFork).
  void AbandonAfterFork();
  // pthread_atfork's prepare and parent handlers: hold the fabric's locks
  // across fork(), so the child's copy is consistent.
  void LockForFork();
  void UnlockAfterFork();
  // pthread_atfork's child handler: UnlockAfterFork, with the lock's turns
  // (TakeLock) forgotten, since they name the parent's threads.
  void UnlockInChildAfterFork();
  // Datagrams the UDP transport refused: malformed or truncated (not a
  // RoCEv2 packet of the sim), or for a node that is not local. A bad ICRC
  // counts as the node's icrc_errors instead.
  uint64_t udp_malformed();
  // Datagrams dropped because no node of the fabric sent them: from an
  // address other than 127.0.0.1, from a port that is no node's, or
  // carrying a packet whose source is another node than its port's.
  uint64_t udp_foreign();

  // --- Under mu() ---------------------------------------------------------
  Node* node(int i) { return nodes_[i].get(); }
  // The node whose GID is `gid`, or -1.
  int NodeByGid(const Gid& gid) const;
  int64_t now_ns() const { return now_ns_; }
  // Runs `fn` at virtual time `at_ns` (events at equal times run in the order
  // they were scheduled).
  void Schedule(int64_t at_ns, std::function<void()> fn);
  // Puts a packet on the link from its src_node to its dst_node; it arrives
  // after the link's latency and serialisation, in order per link.
  // `cache`, when the sender is a QP, remembers the link and flow entries
  // of its packets to one peer QP (QpCore::link_flow).
  void Transmit(Packet&& packet, LinkFlowCache* cache = nullptr);
  // While one lives, the packets that leave the process (the UDP
  // transport) wait and go out when the last one ends: the packets for one
  // port share datagrams of up to 64 KiB (docs/udp-transport.md, "The
  // datagram"). The requester opens one for the packets of a message, the
  // responder for a read's responses. Nothing else changes: each packet
  // went through the link and its faults already. Under mu(), which must
  // not be released while one lives.
  class UdpBatch {
   public:
    explicit UdpBatch(Fabric& fabric) : fabric_(fabric) {
      ++fabric_.udp_batch_depth_;
    }
    ~UdpBatch() {
      if (--fabric_.udp_batch_depth_ == 0 && !fabric_.udp_pending_.empty()) {
        fabric_.FlushUdpBatch();
      }
    }
    UdpBatch(const UdpBatch&) = delete;
    UdpBatch& operator=(const UdpBatch&) = delete;

   private:
    Fabric& fabric_;
  };
  // The latest time an answer (an ACK or NAK) to the packets `src` has put
  // on its link to `dst` so far can be back, when no fault delays them: the
  // link's queue, its latency and jitter both ways, and a microsecond.
  int64_t AnswerDueNs(int src, int dst) const;
  // Runs events until `done()` holds; returns whether it does.
  //  - Non-blocking (a poll): runs the events due now; if that is not
  //    enough, the events of the next moment in virtual time, and stops.
  //    A spinning poller thus walks through time one moment per call and can
  //    see every state in between (`timeout` is unused).
  //  - Blocking (a wait), single-threaded use: the same with `timeout` as the
  //    budget, so a timeout is virtual time and fully deterministic; when no
  //    event is left at all it waits in real time for another thread.
  //  - Blocking, once a second thread has used the fabric (or waits for its
  //    lock meanwhile): `timeout` is real time, and the lock is given up
  //    regularly so the other threads can post while this one drives.
  //  A thread that waits for an async event only (kAsyncEvent) sleeps
  //  through completions (WakeForCompletion) and, with a progress thread,
  //  through posts (WakeForPost): the drop-in's async-event thread would
  //  otherwise take a core and the lock from the application at every
  //  completion.
  enum class WaitFor { kAnything, kAsyncEvent };
  bool DriveUntil(Lock& lock, absl::FunctionRef<bool()> done,
                  absl::Duration timeout, bool blocking,
                  WaitFor wait_for = WaitFor::kAnything) {
    // A poll in process, the commonest call, in a small frame.
    if (!blocking && udp_ == nullptr) {
      NoteThread();
      return RunForPoll(done);
    }
    return Drive(lock, done, timeout, blocking, wait_for);
  }
  // Records the calling thread; from the second distinct thread on, the
  // fabric is in multi-threaded mode (see DriveUntil).
  void NoteThread();
  bool multi_threaded() const { return multi_threaded_; }
  // Whether a progress thread runs the fabric's events (the UDP transport):
  // then no caller needs to drive it to see a completion arrive.
  bool has_progress_thread() const {
    return has_progress_thread_.load(std::memory_order_acquire);
  }
  // Takes the datagrams ready on the local nodes' sockets and delivers them
  // (the UDP transport; false without it or when none were ready). The
  // progress thread calls it after each wait; a poll of an empty CQ calls it
  // with `wait` false, so a program spinning on its CQ receives its packets
  // itself instead of waiting for that thread to be scheduled. Never call it
  // holding the fabric's lock.
  bool PumpUdp(bool wait);
  // The UDP port `qp`'s packets go to: the port of the process that owns
  // its peer (node i listens on base_port + i, as UdpSockets::Send sends).
  // The single place that maps a QP's peer to a port for the liveness
  // table; whatever changes that mapping changes this with it.
  int PeerPort(const QpCore& qp) const;
  // What an RC ACK timer of `qp` that has expired means across processes
  // (docs/udp-transport.md, "Time and progress"; peer_liveness.h). Always
  // kCount in-process, and when the peer is local, dead, or has run since
  // the QP's latest packet left.
  enum class AckTimerVerdict {
    kCount,       // an expiry: retry (or fail) as the spec says
    kDrainFirst,  // this process has not looked at its sockets since the
                  // deadline: look again once it has (an ACK may be there)
    kPeerNotRun,  // the peer's process lives but has not received what was
                  // sent since: not the peer's silence, another period
  };
  AckTimerVerdict JudgeAckTimeout(const QpCore& qp);
  // Wakes every thread waiting in DriveUntil, whatever it waits for (call
  // after anything an async-event waiter may await too).
  // Each wake costs nothing while no thread waits (the counts are kept
  // under mu(), as every wait and every wake runs with it held).
  void Wake() {
    if (cv_waiters_ > 0) cv_.notify_all();
    if (async_cv_waiters_ > 0) async_cv_.notify_all();
  }
  // Work was posted (or a QP modified). In process, a thread that waits
  // for an async event only may be the one thread that will move the
  // fabric on, so it is woken too; with a progress thread (the UDP
  // transport) that thread moves it, and only the threads that wait for
  // anything are woken.
  void WakeForPost() {
    if (cv_waiters_ > 0) cv_.notify_all();
    if (async_cv_waiters_ > 0 && !has_progress_thread()) {
      async_cv_.notify_all();
    }
  }
  // A completion was pushed: wakes the threads that wait for anything, not
  // those that wait for an async event only (an async event the completion
  // raises, a CQ overrun, wakes everyone through Wake).
  void WakeForCompletion() {
    if (cv_waiters_ > 0) cv_.notify_all();
  }
  uint64_t packets_sent() const { return packets_sent_; }
  // "now 1.2ms, 3 events pending, single-threaded": for timeout messages.
  std::string Describe() const;
  Trace& trace() { return trace_; }
  bool keeping_packets() const { return keep_packets_; }
  // The random streams, one per component, each derived from the seed, so
  // that what one component draws (a fault rule's probability, say) moves
  // no other component's draws (docs/faults.md): packet jitter, fault
  // rules, the chunk order of write data, ACK coalescing, and the weak
  // memory model (MemoryModel in sim/profile.h).
  std::mt19937_64& jitter_rng() { return streams_.jitter; }
  std::mt19937_64& fault_rng() { return streams_.faults; }
  std::mt19937_64& placement_rng() { return streams_.placement; }
  std::mt19937_64& ack_rng() { return streams_.acks; }
  FastRandom& memory_rng() { return streams_.memory; }
  // Forced local faults: true when this registration / post must fail.
  bool RegistrationFaultDue(int node);
  bool PostFaultDue(int node, uint32_t qpn);
  // Records a forced local fault in the trace.
  void RecordLocalFault(int node, uint32_t qpn, absl::string_view note);
  // UD multicast groups (ibv_attach_mcast(3)): the (node, QPN) members of
  // `gid`, in attach order. Attach is idempotent; Detach returns whether the
  // QP was attached; McastGroupsOf counts the groups a QP is in; DetachAll
  // forgets a destroyed QP. Attach refuses (the profile's
  // limit_errno.mcast) a group, or an attachment, past the device's
  // max_mcast_grp, max_total_mcast_qp_attach or max_mcast_qp_attach.
  std::vector<std::pair<int, uint32_t>> McastMembers(const Gid& gid) const;
  // Where a datagram to `gid` goes: the members of every process of the
  // fabric (this one's from McastMembers, the others' announced,
  // sim/mcast_presence.h), and the nodes joined to the group at the IP
  // level (JoinMcastIp, in any process).
  struct McastRoute {
    std::vector<std::pair<int, uint32_t>> members;
    std::set<int> ip_joined;
  };
  McastRoute RouteMcast(const Gid& gid) const;
  // Node `node` joins (or leaves) group `gid` at the IP level, as the
  // kernel's CM does for RoCE on rdma_join_multicast (an IGMP join of the
  // netdev): on a profile whose device leaves multicast to the IP stack
  // (SimProfile::delivers_multicast false, rxe), datagrams to the group
  // then reach the node's members. Counted: two joins need two leaves.
  void JoinMcastIp(const Gid& gid, int node, bool join);
  absl::Status AttachMcast(const Gid& gid, int node, uint32_t qpn);
  bool DetachMcast(const Gid& gid, int node, uint32_t qpn);
  int McastGroupsOf(int node, uint32_t qpn) const;
  void DetachAll(int node, uint32_t qpn);
  // Records a packet event (transmit, deliver, drop) at `node`.
  void TracePacket(TraceKind kind, const Packet& p, absl::string_view note = {});

 private:
  bool Step();
  // Puts `packet` on the event queue, to arrive at `at_ns`.
  void ScheduleArrival(int64_t at_ns, Packet&& packet, bool corrupt);
  // Schedule and ScheduleArrival: an event at `at_ns` wakes the UDP
  // transport's progress thread if it would sleep past it.
  void WakeProgressFor(int64_t at_ns);
  void Deliver(Packet&& packet, bool corrupt);
  // Deliver for a local destination, a datagram for a remote one.
  void Arrive(Packet&& packet, bool corrupt);
  // The encoded packet `bytes` to its port: into the open batch's datagram
  // for that port (sent first if the packet would not fit), else at once.
  // The open UdpBatch's datagram from node `src` to node `dst` in process
  // slot `slot`, with `room` bytes left for the next packet: a datagram
  // that has not the room is sent first and begins anew.
  std::vector<uint8_t>& PendingDatagramFor(int src, int dst, int slot,
                                           size_t room);
  // Sends the batch's datagrams; a refused one's packets are traced as
  // dropped.
  void FlushUdpBatch();
  // Sends one datagram of the batch.
  struct PendingDatagram;
  void SendPending(const PendingDatagram& d);
  // Whether `packet` goes to another process: to a node of another process,
  // or to a QP that another process made on a node both own.
  bool LeavesProcess(const Packet& packet) const;
  // UDP mode: the clock follows real time.
  void SyncClock();
  void ProgressLoop();
  // The liveness table (udp_liveness.cc): opened and this process's ports
  // claimed at StartUdp, or left out with one line on stderr.
  void StartLiveness();
  // A drain of the node sockets that began at `began_ns` (MonotonicNs) took
  // every datagram there (`emptied`) and delivered them.
  void NoteDrained(int64_t began_ns, bool emptied);
  // A datagram from the port of node `sender`.
  void ReceiveDatagram(int sender, absl::Span<const uint8_t> bytes);
  // One IPv4 packet of a datagram.
  void ReceivePacket(int sender, const uint8_t* bytes, size_t len);
  // Applies the packet rules to a packet entering a link: whether it goes
  // on, and how late (extra_ns) or how often (copies).
  bool ApplyPacketFaults(const Packet& p, int64_t* extra_ns, int* copies,
                         bool* corrupt, bool* bypass_fifo, std::string* lost);
  void CrashNode(int node);
  void ForceQpError(int node, uint32_t qpn);
  void ForceCqOverflow(const CqOverflow& overflow);

  FabricOptions options_;
  absl::Status address_status_;
  std::mutex mu_;
  // Waiters: those that wait for anything on cv_, those that wait for an
  // async event only on async_cv_ (DriveUntil's WaitFor).
  std::condition_variable cv_;
  std::condition_variable async_cv_;
  // Threads in WaitOn(cv_) and WaitOn(async_cv_), under mu_.
  int cv_waiters_ = 0;
  int async_cv_waiters_ = 0;
  // Waits on `cv` (cv_ or async_cv_) until `until`, counted as a waiter.
  template <typename TimePoint>
  void WaitOn(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
              TimePoint until) {
    int& waiters = &cv == &async_cv_ ? async_cv_waiters_ : cv_waiters_;
    ++waiters;
    cv.wait_until(lock, until);
    --waiters;
  }
  std::vector<std::unique_ptr<Node>> nodes_;
  int64_t now_ns_ = 0;
  EventQueue events_;
  // When each directed link is next free, for in-order serialisation. Node
  // maps: an entry never moves, so a QP may keep its address
  // (LinkFlowCache); no entry is ever removed.
  absl::node_hash_map<std::pair<int, int>, int64_t> link_free_ns_;
  // Links with a model of their own, keyed (min node, max node).
  absl::flat_hash_map<std::pair<int, int>, LinkModel> links_;
  const LinkModel& LinkBetween(int a, int b) const;
  // link.latency in ns (the default link's and the jitter are converted
  // once: options_ does not change after construction).
  int64_t LatencyNs(const LinkModel& link) const;
  const int64_t default_latency_ns_ =
      absl::ToInt64Nanoseconds(options_.link.latency);
  const int64_t jitter_ns_ = absl::ToInt64Nanoseconds(options_.jitter);
  // When each QP-to-QP flow last delivered, so jitter keeps a flow in order.
  absl::node_hash_map<std::tuple<int, uint32_t, int, uint32_t>, int64_t>
      flow_last_ns_;
  struct Streams {
    // Each generator is seeded once, with its own seed: a std::mt19937_64
    // built without one seeds its 312 words of state with the default
    // first, which a new fabric (one per fuzzer input) would pay for twice.
    explicit Streams(uint64_t seed);
    void Reseed(uint64_t seed);
    // The seed of one stream: `seed` mixed with the stream's constant.
    static uint64_t Derive(uint64_t seed, uint64_t stream);
    std::mt19937_64 jitter, faults, placement, acks;
    FastRandom memory;
  };
  Streams streams_;
  bool frozen_ = false;  // Freeze()
  // Nodes crashed plus ports down: while 0, no packet meets either.
  int nodes_down_ = 0;
  std::map<Gid, std::vector<std::pair<int, uint32_t>>> mcast_;
  std::map<std::pair<Gid, int>, int> mcast_ip_joins_;  // (gid, node): count
  // Members and IP joins announced to the other processes (UDP transport).
  std::unique_ptr<McastPresence> mcast_presence_;
  void ForgetMcastMember(int node,
                         const std::vector<std::pair<int, uint32_t>>& left);
  FaultPlan faults_;
  uint64_t registrations_ = 0;
  uint64_t posts_ = 0;
  uint64_t steps_ = 0;  // events run (Step)
  uint64_t packets_sent_ = 0;
  Trace trace_;
  bool keep_packets_ = false;
  std::vector<CapturedPacket> captured_;
  bool have_first_thread_ = false;
  std::thread::id first_thread_;
  bool multi_threaded_ = false;
  std::atomic<bool> has_progress_thread_{false};
  // Turns at the lock (fabric_lock.cc). lock_state_ is written by the
  // holder as it takes and gives up the lock while a thread waits, and read
  // now and then by the waiting threads, on a line of its own: bit 0 is set
  // while held, bit 1 says whether the holder's last call or the one
  // before did work (WorkDone changed), and the bits above count the
  // releases. On a line the holder only reads: lock_turn_ names the thread
  // whose turn is next (0: none; written when a turn is asked for, taken
  // or voided), lock_holder_ the thread that last took the lock through
  // TakeLockSlow, lock_waiters_ counts the threads waiting for a turn, and
  // lock_turns_ counts the turns begun.
  alignas(64) std::atomic<uint64_t> lock_state_{0};
  uint64_t lock_work_at_leave_ = 0;  // under mu_: WorkDone then
  bool lock_did_before_ = false;     // under mu_: the last call did work
  alignas(64) std::atomic<uintptr_t> lock_turn_{0};
  std::atomic<uintptr_t> lock_holder_{0};
  std::atomic<int> lock_waiters_{0};  // threads in WaitForTurn
  std::atomic<int64_t> lock_turn_asked_ns_{0};
  std::atomic<uint64_t> lock_turns_{0};
  void WaitForTurn(uintptr_t me);
  void TakeAskedTurn(uintptr_t me);
  // Application threads inside a call that took the lock (counted under
  // mu_, so without a locked instruction); with lock_waiters_, those
  // waiting for it: AppThreadsInCalls.
  int callers_ = 0;
  int AppThreadsInCalls() const {
    return callers_ + lock_waiters_.load(std::memory_order_relaxed);
  }
  // Counts the application's calls (helpers excluded): a helper sees the
  // application away when no call is in progress (AppThreadsInCalls) and
  // this stays the same for kHelperGrace.
  std::atomic<uint64_t> app_calls_{0};
  // The kernel thread id of the application thread that called in last. In
  // a child after fork(2) it may name the parent's thread (CurrentThreadTid
  // caches it); that thread is not the child's, so the child's helpers
  // keep to kHelperGrace.
  std::atomic<int> last_app_tid_{0};
  static inline thread_local bool helper_thread_ = false;
  // DriveUntil's other cases: a blocking wait, or the UDP transport's
  // real time (fabric.cc).
  bool Drive(Lock& lock, absl::FunctionRef<bool()> done,
             absl::Duration timeout, bool blocking, WaitFor wait_for);
  // A poll's run: what is due now, else the events of the next moment,
  // until `done`.
  bool RunForPoll(absl::FunctionRef<bool()> done);
  // A helper's blocking wait (DriveUntil).
  bool HelperWait(Lock& lock, absl::FunctionRef<bool()> done,
                  absl::Duration timeout, std::condition_variable& cv);
  // The UDP transport (null in-process).
  std::unique_ptr<UdpSockets> udp_;
  int process_slot_ = 0;
  std::mutex rx_mu_;  // PumpUdp: taken before mu_, never after
  std::thread progress_;
  bool stop_ = false;            // under mu_
  int64_t progress_wake_ns_ = 0;  // when the progress thread next looks
  int64_t real_start_ns_ = 0;     // absl::GetCurrentTimeNanos at StartUdp
  uint16_t ip_id_ = 0;
  // The open UdpBatch scopes and the datagrams they hold, one per port.
  struct PendingDatagram {
    int src = 0;
    int dst = 0;
    int dst_slot = 0;
    std::vector<uint8_t> bytes;
  };
  int udp_batch_depth_ = 0;
  std::vector<PendingDatagram> udp_pending_;
  uint64_t udp_malformed_ = 0;
  uint64_t udp_foreign_ = 0;
  // When this process last began a drain that emptied its sockets
  // (MonotonicNs), and the table that tells its peers (null without one).
  // Declared after udp_: the slots are released before the ports close.
  std::atomic<int64_t> udp_drained_ns_{0};
  // When a poll of the application last took datagrams itself (PumpUdp,
  // MonotonicNs); within kAppPumpWindowNs of it the progress thread leaves
  // the sockets to the polls.
  static constexpr int64_t kAppPumpWindowNs = 200'000;
  std::atomic<int64_t> app_pumped_ns_{INT64_MIN / 2};
  std::unique_ptr<LivenessTable> liveness_;
};

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_FABRIC_H_
