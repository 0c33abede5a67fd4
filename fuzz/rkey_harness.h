// The rkey harness (rkey_fuzzer.cc states what it checks): its objects,
// what it expects of a batch, and its state. Its steps are defined by
// concern in rkey_fuzzer.cc (setup, target MRs, the server QP's access),
// rkey_windows.cc (memory windows over the target), rkey_batches.cc
// (decoding and posting a batch) and rkey_batch_checks.cc (the model's
// run of a batch and the checks after it).
#ifndef VERBSIM_FUZZ_RKEY_HARNESS_H_
#define VERBSIM_FUZZ_RKEY_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "core/provider.h"
#include "core/verbs.h"
#include "fuzz/bytes.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/programs.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::rkey_harness {

using namespace rkey_program;  // NOLINT: the op and field encodings

constexpr int kServerPd = 0;  // the server QP's PD
constexpr int kOtherPd = 1;   // another PD on the server
constexpr int kClientPd = 2;  // the client's PD (its MR lives on node 0)

constexpr size_t kTargetSize = 4096;
constexpr size_t kGuard = 64;
constexpr size_t kSliceSize = 4096 + 64;  // one client slice per WR of a batch
constexpr size_t kRecvSlices = 8;

struct TargetMr {
  std::unique_ptr<Mr> handle;
  int model = -1;  // index in the KeyModel
};

struct Window {
  std::unique_ptr<Mw> handle;
  int model = -1;
};

constexpr int kServerQp = 1;  // the model's id of the server QP

struct PostedRecv {
  uint64_t wr_id = 0;
  size_t slice = 0;
  uint64_t capacity = 0;
};

// A completion the model expects.
struct ExpectedWc {
  uint64_t wr_id;
  StatusSet status;
  WcOpcode opcode;
  uint32_t byte_len;
  bool with_imm;
  uint32_t imm;
  bool with_inv = false;
  uint32_t inv_rkey = 0;
};

// One decoded work request of a batch and what the model says of it.
struct BatchWr {
  RemoteKind kind = RemoteKind::kWrite;
  SendWr wr;
  // wr.sg_list points into these, set once the batch's vector is full
  // (DecodeBatch): a BatchWr is not moved after that.
  absl::InlinedVector<Sge, 2> sges;
  uint64_t length = 0;
  size_t slice = 0;
  bool signaled = true;
  uint16_t recv_capacity = 0;
};

// Whether a WR of this kind consumes a receive of the server's.
inline bool ConsumesRecv(RemoteKind kind) {
  return kind == RemoteKind::kWriteImm || kind == RemoteKind::kSendInv;
}

// What a WR of a batch did to the target, for read relaxed ordering.
struct Touch {
  bool read = false, writes = false, fenced = false;
  uint64_t addr = 0, length = 0;
};

// What the model says the WRs of a batch the post accepted do, in order.
struct BatchExpectation {
  std::vector<ExpectedWc> want_send;  // the client's send CQ
  std::vector<ExpectedWc> want_recv;  // the server's receive CQ
  std::vector<std::pair<size_t, size_t>> undefined_recv;  // offset, len
  std::vector<Touch> touches;  // one per accepted WR
  bool requester_error = false;
  bool responder_error = false;
  // The requester's retry stalls (ProfileRules::
  // fence_waits_for_later_reads_on_retry): the WRs left never complete and
  // the client QP stays in RTS.
  bool requester_stalled = false;
};

class RkeyHarness {
 public:
  explicit RkeyHarness(ByteReader& in) : in_(in) {}

  void Run();

 private:
  // --- Setup, target MRs and access (rkey_fuzzer.cc) ---
  void Setup();
  void Register();
  void Deregister();
  // ibv_dereg_mr: EINVAL when dead, the profile's errno while windows are
  // bound to it.
  void DeregisterTarget(TargetMr& t, const char* what);
  void SetQpAccess();

  // --- Windows (rkey_windows.cc) ---
  void AllocWindow();
  void DeallocWindow();
  // Runs the fabric after a bind or LOCAL_INV of the server and checks its
  // one completion (none for an unsignaled success); on an error the server
  // QP is in ERR, its receives flush, and the pair is reconnected.
  void FinishServerOp(uint64_t wr_id, const StatusSet& want, bool completes,
                      WcOpcode opcode);
  void BindWindow();
  void InvalidateWindow();

  // --- Batches (rkey_batches.cc) ---
  uint32_t DecodeRkey();
  uint64_t DecodeRemoteAddr();
  uint64_t DecodeLength();
  // A batch of WRs in one post. With `dereg_after_post` >= 0, that target MR
  // (an index, modulo their number) is deregistered right after the post,
  // before anything reaches the server: its rkey is dead when checked.
  void Batch(int dereg_after_post);
  // Decodes the WRs of a batch, with fresh source bytes in their slices.
  std::vector<BatchWr> DecodeBatch();
  // Posts the batch in one call, checks the Status and bad_index against
  // the model's, and returns how many WRs the post accepted.
  size_t PostBatch(const std::vector<BatchWr>& wrs);
  void PostOneRecv(const std::vector<BatchWr>& wrs, size_t nth_consumer);
  uint64_t ReadTarget(uint64_t addr);

  // --- What a batch does (rkey_batch_checks.cc) ---
  // Runs the first `accepted` WRs through the model, in order, and applies
  // their effects to the shadows.
  // Whether the retry of wrs[first], the first WR after the responder
  // went to ERR silently, stalls under
  // ProfileRules::fence_waits_for_later_reads_on_retry.
  bool RetryStalls(const std::vector<BatchWr>& wrs, size_t first,
                   size_t accepted) const;
  BatchExpectation ModelBatch(const std::vector<BatchWr>& wrs,
                              size_t accepted);
  // Runs the fabric and checks the CQs, the memory and the QP states
  // against `e`; after an error the pair is reconnected.
  void CheckBatch(const std::vector<BatchWr>& wrs, const BatchExpectation& e);
  void CompareCq(Cq* cq, const std::vector<ExpectedWc>& want,
                 const char* what);
  // The server QP went to ERR: its posted receives complete flushed, in
  // order (added to `want`), and their slices are free again.
  void FlushPostedRecvs(std::vector<ExpectedWc>* want);
  // The message as the local SGEs of `b` hold it (shadow = current content).
  std::vector<uint8_t> Message(const BatchWr& b) const;
  // Takes whatever the client's buffer holds in the SGEs of `b` as right.
  void AcceptLocalSges(const BatchWr& b);
  // The effect of a successful operation on the shadows.
  void Apply(const BatchWr& b, const RemoteRequest& req);

  ByteReader& in_;
  std::string profile_;
  ProfileRules rules_;
  uint32_t server_access_ = 0;
  uint64_t path_mtu_ = 4096;  // bytes, from the QP attributes Setup chose
  QpCaps caps_;
  // Declared before the fabric's objects, so they outlive them.
  std::unique_ptr<ShadowedBuffer> target_;
  std::unique_ptr<ShadowedBuffer> local_;
  std::unique_ptr<ShadowedBuffer> recv_;
  std::unique_ptr<SimPair> pair_;
  std::unique_ptr<Pd> other_pd_;
  std::vector<size_t> region_len_;
  std::vector<size_t> region_off_;
  KeyModel keys_;
  std::unique_ptr<Mr> local_mr_;
  std::unique_ptr<Mr> recv_mr_;
  std::vector<TargetMr> mrs_;
  std::vector<Window> windows_;
  std::deque<PostedRecv> rq_;
  std::deque<size_t> free_slices_;
  uint64_t next_wr_id_ = 1;
  uint64_t batches_ = 0;
};

}  // namespace verbsim::fuzz::rkey_harness

#endif  // VERBSIM_FUZZ_RKEY_HARNESS_H_
