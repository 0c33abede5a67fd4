// Fault injection: rules that act on packets as they enter a link, link and
// node failures in windows of virtual time, and forced local faults. Every
// fault that fires is recorded in the trace. Probabilities draw from the
// fabric's one seeded random source, so a seed replays a run exactly.
//
// Text form (docs/faults.md): rules separated by ';', each an action and
// key=value pairs, e.g.
//   drop op=RDMA_WRITE_MIDDLE nth=3; dup prob=0.05; delay us=20 prob=0.1;
//   reorder prob=0.1; corrupt op=ACKNOWLEDGE nth=1;
//   linkdown a=0 b=1 from_us=10 until_us=500; crash node=1 at_us=100;
//   qperr node=0 qp=17 at_us=5; cqoverflow node=1 qp=17 cq=recv;
//   regfail nth=2; postfail nth=4
#ifndef VERBSIM_SIM_FAULTS_H_
#define VERBSIM_SIM_FAULTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace verbsim::sim {

enum class FaultAction {
  kDrop,       // the packet is lost
  kDuplicate,  // it arrives twice
  kDelay,      // it arrives `delay_ns` later (may overtake nothing; others may overtake it)
  kReorder,    // it is held back behind the packets sent after it
  kCorrupt,    // it arrives with a bad ICRC: the receiver drops and counts it
};

// A rule on packets. -1 (or an empty opcode) matches anything.
struct PacketRule {
  FaultAction action = FaultAction::kDrop;
  int src_node = -1;
  int dst_node = -1;
  int64_t qpn = -1;    // the sending or the receiving QP
  int opcode = -1;     // a BTH opcode (RcOp)
  int64_t psn = -1;
  uint64_t nth = 0;    // act only on the nth match (1-based); 0: every match
  double probability = 1.0;
  int64_t delay_ns = 0;
  // Counters.
  uint64_t matched = 0;
  uint64_t fired = 0;
};

// Packets between nodes a and b (both directions) are lost in [from, until).
struct LinkDown {
  int a = 0;
  int b = 0;
  int64_t from_ns = 0;
  int64_t until_ns = 0;
};

// Node `node` fails at `at_ns`: its HCA goes away, its QPs are fatal (QP to
// ERR, IBV_EVENT_QP_FATAL) and nothing reaches it or leaves it any more.
struct NodeCrash {
  int node = 0;
  int64_t at_ns = 0;
};

// QP `qpn` of node `node` is forced to ERR at `at_ns` (IBV_EVENT_QP_FATAL).
struct QpError {
  int node = 0;
  uint32_t qpn = 0;
  int64_t at_ns = 0;
};

// The send (or receive) CQ of QP `qpn` of node `node` overflows at `at_ns`:
// the CQ is in error (IBV_EVENT_CQ_ERR) and its QPs go to ERR.
struct CqOverflow {
  int node = 0;
  uint32_t qpn = 0;
  bool recv_cq = false;
  int64_t at_ns = 0;
};

struct FaultPlan {
  std::vector<PacketRule> packets;
  std::vector<LinkDown> links;
  std::vector<NodeCrash> crashes;
  std::vector<QpError> qp_errors;
  std::vector<CqOverflow> cq_overflows;
  uint64_t regfail_nth = 0;   // the nth ibv_reg_mr of the fabric fails ENOMEM
  uint64_t postfail_nth = 0;  // the nth post call of the fabric fails ENOMEM
};

// Parses the text form. A bad rule gets an error naming the column and what
// was expected there.
absl::StatusOr<FaultPlan> ParseFaults(absl::string_view text);
// Appends `more` to `plan`.
void MergeFaults(FaultPlan& plan, FaultPlan more);

absl::string_view FaultActionName(FaultAction action);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_FAULTS_H_
