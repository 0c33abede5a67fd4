// One soak process (tools/soak.sh; docs/reliability.md "Soak"): it owns one
// node of a sim fabric spread over processes (the UDP transport), and with
// every other process it runs two RC streams (one each way) and UD
// datagrams, checking every message's sequence numbers and hash.
//
// A stream from process A to process B is a pair of RC QPs: A's "sender"
// QP posts sends, RDMA writes (into a ring of slots at B), writes with
// immediate, RDMA reads (of a patterned region at B) and at the end a FIN;
// B's "receiver" QP answers with ACK sends saying what B consumed and
// verified, which is A's flow control. One UD QP per process carries the
// datagrams to and from every peer. All QPs share one CQ and one channel.
#ifndef VERBSIM_TOOLS_SOAK_WORKER_H_
#define VERBSIM_TOOLS_SOAK_WORKER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/provider.h"
#include "core/types.h"
#include "core/verbs.h"
#include "tools/soak/message.h"
#include "tools/soak/options.h"
#include "tools/soak/sequence_check.h"

namespace verbsim::soak {

// Sizes and windows.
inline constexpr uint32_t kMaxMsg = 16384;      // send and write slots
inline constexpr uint32_t kMaxRead = 16384;
inline constexpr uint32_t kReadRegion = 65536;  // what a peer may read
inline constexpr uint32_t kMaxUd = 1024;        // the path MTU
inline constexpr uint32_t kGrh = 40;            // before a UD payload
inline constexpr uint32_t kAckBytes = 128;
inline constexpr int kRecvSlots = 16;   // receives per stream: its credits
inline constexpr int kSendSlots = 16;
inline constexpr int kWriteSlots = 16;  // the ring at the receiver
inline constexpr int kReadSlots = 8;
inline constexpr int kAckSlots = 16;
inline constexpr int kAckRecvs = 64;
inline constexpr int kUdWindow = 16;    // datagrams per peer not yet reported
inline constexpr int kUdSlots = 32;
inline constexpr int kPlainWritesPerCover = 4;

// A work request's id: what it is, for which peer, its slot and number.
enum class Tag : uint8_t {
  kSend = 1, kWrite, kWriteImm, kRead, kFin, kAck, kUd,  // send queues
  kRecvData, kRecvAck, kRecvUd,                          // receive queues
};
inline uint64_t WrId(Tag tag, int peer, int slot, uint64_t seq) {
  return static_cast<uint64_t>(tag) << 56 |
         static_cast<uint64_t>(peer & 0xff) << 48 |
         static_cast<uint64_t>(slot & 0xffff) << 32 | (seq & 0xffffffffu);
}
inline Tag TagOf(uint64_t wr_id) { return static_cast<Tag>(wr_id >> 56); }
inline int PeerOf(uint64_t wr_id) { return (wr_id >> 48) & 0xff; }
inline int SlotOf(uint64_t wr_id) { return (wr_id >> 32) & 0xffff; }
const char* TagName(Tag tag);

// What is counted, per kind, by the side that verified it.
struct Tally {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  void Add(uint64_t n) {
    ++messages;
    bytes += n;
  }
};

// Process `me`'s side of the stream me -> peer.
struct OutStream {
  std::unique_ptr<Qp> qp;
  uint8_t* send_src = nullptr;   // kSendSlots x kMaxMsg
  uint8_t* write_src = nullptr;  // kWriteSlots x kMaxMsg
  uint8_t* read_dst = nullptr;   // kReadSlots x kMaxRead
  uint8_t* ack_recv = nullptr;   // kAckRecvs x kAckBytes
  int send_busy[kSendSlots] = {};
  int write_busy[kWriteSlots] = {};
  int read_busy[kReadSlots] = {};
  uint64_t read_offset[kReadSlots] = {};
  uint32_t read_len[kReadSlots] = {};
  uint64_t sends = 0;         // send slots used
  uint64_t next_msg = 1;      // the next receive-consuming message's number
  uint64_t msgs_posted = 0;   // receive-consuming messages posted
  uint64_t writes = 0;        // last write number posted
  uint64_t reads = 0;
  uint64_t plain_since_cover = 0;
  uint64_t swapped_msg = 0;   // Inject::kReorder: the number held back
  bool corrupted = false;     // Inject::kCorrupt: a send was spoiled
  // From the peer's ACKs.
  RcOrder acks;
  uint64_t consumed = 0;
  uint64_t writes_checked = 0;
  bool fin_sent = false;
  bool fin_acked = false;
  absl::Time last_heard;
  // UD to the peer.
  uint64_t ud_sent = 0;
  uint64_t ud_reported = 0;  // highest the peer reported, or given up on
  absl::Time ud_window_full_since = absl::InfinitePast();
  // The peer's side.
  uint64_t remote_ring = 0;
  uint64_t remote_read = 0;
  uint32_t rkey = 0;
  uint32_t remote_ud_qpn = 0;
  std::unique_ptr<Ah> ah;
};

// Process `me`'s side of the stream peer -> me.
struct InStream {
  std::unique_ptr<Qp> qp;
  uint8_t* recv = nullptr;      // kRecvSlots x kMaxMsg
  uint8_t* ring = nullptr;      // kWriteSlots x kMaxMsg, written by the peer
  uint8_t* read_src = nullptr;  // kReadRegion, read by the peer
  uint8_t* ack_src = nullptr;   // kAckSlots x kAckBytes
  int ack_busy[kAckSlots] = {};
  RcOrder order;
  uint64_t consumed = 0;
  uint64_t writes_checked = 0;
  uint64_t acks_sent = 0;
  uint64_t reported_consumed = 0;
  uint64_t reported_writes = 0;
  uint64_t reported_ud = 0;
  bool fin_seen = false;
  bool fin_reported = false;
  FinBody fin;
  absl::Time last_ack = absl::InfinitePast();
  absl::Time last_heard;
  UdOrder ud;
  uint64_t remote_ud_qpn = 0;
  uint32_t remote_ip = 0;  // the peer's node address, as the GRH has it
};

class Worker {
 public:
  explicit Worker(const Options& options);
  ~Worker();

  // Opens the node, creates the QPs, meets the other processes and
  // connects. A failure here is a setup failure, not a soak finding.
  absl::Status Setup();
  // The traffic, then the end of every stream; returns whether every check
  // held. Prints progress lines while it runs and the report at the end.
  bool Run();

 private:
  // Setup (worker_setup.cc).
  absl::Status CreateObjects();
  std::string InfoText() const;
  absl::Status ConnectTo(int peer, const std::string& info);
  absl::Status AddFaultRules();
  absl::Status Barrier(const std::string& name, absl::Duration timeout);

  // Posting (worker_post.cc).
  int Generate(int peer);
  bool PostSend(int peer, bool fin);
  bool PostWrite(int peer, bool imm);
  bool PostRead(int peer);
  bool PostUd(int peer);
  void MaybeAck(int peer);
  uint64_t NextMsg(int peer);
  bool CanConsume(const OutStream& s, int reserve) const;
  absl::Status PostSendWr(Qp* qp, const SendWr& wr);
  absl::Status Repost(Qp* qp, uint64_t wr_id, uint8_t* at, uint32_t len);

  // Completions (worker_complete.cc).
  int Drain();
  void Complete(const WorkCompletion& wc);
  void TakeData(int peer, int slot, const WorkCompletion& wc);
  void TakeAck(int peer, int slot, const WorkCompletion& wc);
  void TakeUd(int slot, const WorkCompletion& wc);
  void CheckWrites(int peer, uint64_t through);
  void CheckRead(int peer, int slot);
  void Fail(const std::string& what, const std::string& detail);

  // The run (worker_run.cc).
  bool Finished() const;
  void Watchdog(absl::Time now);
  void Report();

  Options o_;
  std::unique_ptr<Provider> provider_;
  std::unique_ptr<Context> context_;
  std::unique_ptr<Pd> pd_;
  std::unique_ptr<CompChannel> channel_;
  std::unique_ptr<Cq> cq_;
  std::unique_ptr<Mr> mr_;
  std::vector<uint8_t> arena_;
  size_t arena_used_ = 0;
  std::unique_ptr<Qp> ud_qp_;
  uint8_t* ud_src_ = nullptr;   // kUdSlots x kMaxUd
  uint8_t* ud_recv_ = nullptr;  // ud_recvs_ x (kGrh + kMaxUd)
  int ud_busy_[kUdSlots] = {};
  int ud_recvs_ = 0;
  uint64_t ud_posted_ = 0;
  Gid gid_{};
  std::vector<OutStream> out_;  // by peer (out_[me] unused)
  std::vector<InStream> in_;
  // Posted, not yet completed WRs per QP and queue, in post order.
  std::map<uint32_t, std::deque<uint64_t>> send_fifo_;
  std::map<uint32_t, std::deque<uint64_t>> recv_fifo_;
  uint64_t rng_ = 0;
  uint64_t ops_ = 0;  // verified events: the progress the watchdog sees
  bool stopped_ = false;  // a fatal finding: the run ends early
  // Findings by reason, with the first example of each.
  std::map<std::string, uint64_t> failures_;
  std::map<std::string, std::string> first_failure_;
  // Tallies.
  Tally rc_send_, rc_write_, rc_write_imm_, rc_read_, rc_fin_, rc_ack_;
  Tally ud_recv_tally_, ud_sent_tally_;
  uint64_t ud_lost_ = 0;
  uint64_t rss_start_kb_ = 0;
  std::vector<std::unique_ptr<char[]>> leaked_;  // Inject::kLeak
};

// The process's resident set in KiB (VmRSS of /proc/self/status).
uint64_t ResidentKb();

}  // namespace verbsim::soak

#endif  // VERBSIM_TOOLS_SOAK_WORKER_H_
