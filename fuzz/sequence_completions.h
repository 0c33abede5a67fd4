// The completion tracker of the sequence harness: every WR the program
// posts, followed to its completion. Each completes exactly once, on the CQ
// and QP it was posted to, with the opcode it was posted with when it
// succeeds, in post order per queue, and none succeeds after an error of
// its queue until a reset; an unsignaled WR completes only with an error.
// Where a WR may vanish instead (its QP reset or destroyed, its CQ lossy, a
// receive a profile never flushes), it completes at most once.
#ifndef VERBSIM_FUZZ_SEQUENCE_COMPLETIONS_H_
#define VERBSIM_FUZZ_SEQUENCE_COMPLETIONS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/types.h"
#include "fuzz/programs.h"
#include "fuzz/sequence_objects.h"

namespace verbsim::fuzz::seq_harness {

struct Rec {
  int qp = 0;
  bool recv = false;
  uint32_t epoch = 0;
  bool signaled = true;
  WrOpcode op = WrOpcode::kSend;
  int cq = 0;
  bool done = false;  // completed, or known to be finished without one
  // Posted to a receive queue in ERR on a profile that never flushes such
  // receives (rxe 6.1: ProfileRules::flushes_recv_posted_in_err).
  bool unflushed = false;
};

struct QueueTrack {
  // wr_ids not yet done, in post order. (A vector: it allocates nothing
  // until a WR is posted, where a deque took two blocks for each of the
  // 16 queues of every input; the queues are short.)
  std::vector<uint64_t> order;
  bool errored = false;        // an error completion in `errored_epoch`
  uint32_t errored_epoch = 0;
};

class CompletionTracker {
 public:
  // Follows the WRs of the QPs in `qps`; counts each against the room of
  // its CQ in `cqs`, marking a CQ lossy when it may overrun.
  CompletionTracker(const std::vector<QpObj>& qps, std::vector<CqObj>& cqs)
      : qps_(qps), cqs_(cqs) {}

  // How many WRs were posted: the next wr_id is one more.
  size_t size() const { return recs_.size(); }
  // Records a posted WR and checks its CQ's room. `unflushed`: a receive
  // posted in ERR on a profile that never flushes it.
  void Track(uint64_t wr_id, int qp, bool recv, bool signaled, WrOpcode op,
             bool unflushed = false);
  // The WRs of a queue of `qp` posted since its last reset, not done yet.
  size_t Outstanding(int qp, bool recv) const;
  // Checks one completion polled from CQ `cq` and retires its WR, and the
  // WRs posted before it on its queue.
  void OnCompletion(int cq, const WorkCompletion& wc);
  // With every QP in ERR, the fabric idle and every CQ drained: a
  // violation for a WR that had to complete and did not.
  void CheckNoneLeft() const;

 private:
  bool Lenient(const Rec& r) const;
  void Retire(Rec& r);

  const std::vector<QpObj>& qps_;
  std::vector<CqObj>& cqs_;
  std::vector<Rec> recs_;
  QueueTrack queues_[seq_program::kMaxQps][2];
};

}  // namespace verbsim::fuzz::seq_harness

#endif  // VERBSIM_FUZZ_SEQUENCE_COMPLETIONS_H_
