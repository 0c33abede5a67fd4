// The sequence harness (sequence_fuzzer.cc states what it checks): its
// state and its steps, defined by concern in sequence_fuzzer.cc (the
// driver: setup, dropped handles, the end), sequence_objects.cc (CQs, QPs
// and their transitions, MRs), sequence_posts.cc (posting),
// sequence_completions.cc (the completion tracker, polling, events) and
// sequence_faults.cc (fault rules).
#ifndef VERBSIM_FUZZ_SEQUENCE_HARNESS_H_
#define VERBSIM_FUZZ_SEQUENCE_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/provider.h"
#include "core/types.h"
#include "fuzz/bytes.h"
#include "fuzz/model.h"
#include "fuzz/programs.h"
#include "fuzz/sequence_completions.h"
#include "fuzz/sequence_objects.h"
#include "fuzz/verbs_ops.h"
#include "sim/fabric.h"

namespace verbsim::fuzz::seq_harness {

using namespace seq_program;  // NOLINT: the op encodings

class SequenceHarness {
 public:
  explicit SequenceHarness(ByteReader& in) : in_(in) {}

  void Run();

 private:
  // --- The driver (sequence_fuzzer.cc) ---
  void Setup();
  int NumNodes() const { return static_cast<int>(nodes_.size()); }
  void RunOp();
  void DropHandleOp();
  void Finish();
  void Teardown();

  // --- Objects (sequence_objects.cc) ---
  void CreateCq();
  int LiveQpsOn(int cq) const;
  void DestroyCq();
  void CheckedDestroyCq(int i);
  void CreateQp();
  bool MayErrAsync(const QpObj& q) const;
  QpState Sync(int i);
  void Modify(int i, QpState to, uint32_t mask, int peer);
  int PickQp();
  void Connect();
  void ModifyOp();
  void DestroyQp();
  void RegMrOp();
  void DeregMrOp();

  // --- Posting (sequence_posts.cc) ---
  uint32_t PickKey(int node, bool remote);
  uint32_t PickLength();
  Sge PickSge(int node, bool eight_bytes);
  int PostCallErrno(int i, bool recv);
  void CheckPost(const absl::Status& s, size_t bad_index, size_t n,
                 int whole_call_errno, absl::Span<const int> definite,
                 absl::Span<const bool> may_be_full, bool full_first,
                 const char* what, size_t* accepted);
  void PostSendOp();
  void PostRecvOp();

  // --- Completions and events (sequence_completions.cc) ---
  int PollCq(int i, int max);
  void PollOp();
  void NotifyOp();
  void DrainAsyncEvents(int n);

  // --- Faults (sequence_faults.cc) ---
  // A qp number on `node`: mostly one of its QPs', sometimes none.
  std::string QpnFor(int node);
  void FaultOp();

  ByteReader& in_;
  std::string profile_;
  ProfileRules rules_;
  // Declared first, so the memory outlives every object of the fabric.
  std::vector<std::vector<uint8_t>> arenas_;
  std::unique_ptr<Provider> provider_;
  sim::Fabric* fabric_ = nullptr;
  DeviceAttr dev_;
  int max_cqe_ = 0;
  std::vector<NodeObj> nodes_;
  std::vector<PdObj> pds_;
  std::vector<CqObj> cqs_;
  std::vector<MrObj> mrs_;
  std::vector<QpObj> qps_;
  CompletionTracker tracker_{qps_, cqs_};
  uint64_t next_wr_id_ = 1;
  NthCallFault registrations_;  // what a `regfail nth=` rule counts
  NthCallFault posts_;          // what a `postfail nth=` rule counts
  bool forced_faults_ = false;
  bool overflow_rule_ = false;  // a cqoverflow rule was added
};

}  // namespace verbsim::fuzz::seq_harness

#endif  // VERBSIM_FUZZ_SEQUENCE_HARNESS_H_
