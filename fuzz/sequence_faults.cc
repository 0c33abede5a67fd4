// The sequence harness's fault rules (sequence_harness.h), in the text form
// sim/faults parses: packet faults (drop, dup, reorder, corrupt, delay) by
// probability, opcode or count, a link down for a while, a node crash, a
// QP forced to ERR, a CQ overflow, a failed registration or post
// (regfail, postfail), and malformed rules that must be refused. What a
// rule allows is remembered: QPs may go to ERR after a forced fault, every
// CQ may overrun after an overflow rule, and the nth registration or post
// call fails.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/errors.h"
#include "fuzz/harness.h"
#include "fuzz/sequence_harness.h"

namespace verbsim::fuzz::seq_harness {

std::string SequenceHarness::QpnFor(int node) {
  std::vector<uint32_t> here;
  for (const QpObj& q : qps_) {
    if (q.node == node) here.push_back(q.qpn);
  }
  const uint8_t b = in_.U8();
  if (here.empty() || b >= 0xf0) return absl::StrCat(17 + b);
  return absl::StrCat(here[b % here.size()]);
}

void SequenceHarness::FaultOp() {
  static const char* kActions[] = {"drop", "dup", "reorder", "corrupt"};
  static const char* kOps[] = {
      "SEND_ONLY",         "SEND_FIRST",          "SEND_MIDDLE",
      "SEND_LAST",         "RDMA_WRITE_FIRST",    "RDMA_WRITE_MIDDLE",
      "RDMA_WRITE_LAST",   "RDMA_WRITE_ONLY",     "RDMA_READ_REQUEST",
      "RDMA_READ_RESPONSE_FIRST", "RDMA_READ_RESPONSE_MIDDLE",
      "RDMA_READ_RESPONSE_ONLY",  "ACK",         "ATOMIC_ACKNOWLEDGE",
      "COMPARE_SWAP",      "FETCH_ADD"};
  static const char* kProbs[] = {"0.01", "0.05", "0.1", "0.3", "0.5", "1"};
  const uint8_t kind = in_.U8();
  const int64_t now_us = absl::ToInt64Microseconds(fabric_->Now());
  std::string rule;
  int expected = 0;
  bool forced = false;
  uint64_t regfail_nth = 0;   // set by a regfail rule
  uint64_t postfail_nth = 0;  // set by a postfail rule
  // Each byte is read into a named value before the rule is built: the order
  // in which a call's arguments are evaluated is unspecified (gcc goes right
  // to left, clang left to right), and one input must decode alike in both
  // builds. The reads below keep the order the corpora were made with.
  switch (kind % 12) {
    case 0:
    case 1:
    case 2: {
      const char* prob = kProbs[in_.Below(6)];
      const char* action = kActions[in_.Below(4)];
      rule = absl::StrCat(action, " prob=", prob);
      if (in_.Bool()) absl::StrAppend(&rule, " op=", kOps[in_.Below(16)]);
      break;
    }
    case 3: {
      const uint64_t nth = 1 + in_.Below(4);
      const char* op = kOps[in_.Below(16)];
      const char* action = kActions[in_.Below(4)];
      rule = absl::StrCat(action, " op=", op, " nth=", nth);
      break;
    }
    case 4: {
      const char* prob = kProbs[in_.Below(6)];
      const uint64_t us = 1 + in_.Below(200);
      rule = absl::StrCat("delay us=", us, " prob=", prob);
      break;
    }
    case 5: {
      const int a = static_cast<int>(in_.Below(NumNodes()));
      const int b = static_cast<int>(in_.Below(NumNodes()));
      const int64_t from = now_us + in_.Below(50);
      const int64_t until = from + 1 + in_.Below(2000);
      rule = absl::StrCat("linkdown a=", a, " b=", b, " from_us=", from,
                          " until_us=", until);
      break;
    }
    case 6: {
      const int64_t at = now_us + in_.Below(100);
      const uint64_t node = in_.Below(NumNodes());
      rule = absl::StrCat("crash node=", node, " at_us=", at);
      forced = true;
      break;
    }
    case 7: {
      const int node = static_cast<int>(in_.Below(NumNodes()));
      const int64_t at = now_us + in_.Below(100);
      const std::string qp = QpnFor(node);
      rule = absl::StrCat("qperr node=", node, " qp=", qp, " at_us=", at);
      forced = true;
      break;
    }
    case 8: {
      const int node = static_cast<int>(in_.Below(NumNodes()));
      const int64_t at = now_us + in_.Below(100);
      const bool recv = in_.Bool();
      const std::string qp = QpnFor(node);
      rule = absl::StrCat("cqoverflow node=", node, " qp=", qp,
                          recv ? " cq=recv" : "", " at_us=", at);
      forced = true;
      break;
    }
    case 9: {
      const uint64_t nth = registrations_.calls() + 1 + in_.Below(4);
      rule = absl::StrCat("regfail nth=", nth);
      regfail_nth = nth;
      break;
    }
    case 10: {
      const uint64_t nth = posts_.calls() + 1 + in_.Below(6);
      rule = absl::StrCat("postfail nth=", nth);
      postfail_nth = nth;
      break;
    }
    default: {
      static const char* kBad[] = {"drop nth=0", "drop op=WRITE",
                                   "smash prob=1", "delay prob=0.5",
                                   "drop prob=1.5", "crash at_us=3",
                                   "linkdown a=0 b=1 from_us=5 until_us=5",
                                   "crash node=9 at_us=1"};
      rule = kBad[in_.Below(8)];
      expected = EINVAL;
      break;
    }
  }
  const absl::Status s = fabric_->AddFaults(rule);
  FUZZ_NOTE(absl::StrCat("faults \"", rule, "\": ", s.ToString()));
  if (rule == "crash node=9 at_us=1" && NumNodes() > 9) expected = 0;
  FUZZ_EXPECT_ERRNO(s, expected, "AddFaults(\"", rule, "\")");
  if (s.ok()) {
    if (forced) forced_faults_ = true;
    if (kind % 12 == 8) {
      // The overflow rule hits the CQ of whichever QP has that number
      // when it fires, perhaps one made later: every CQ may overrun.
      overflow_rule_ = true;
      for (CqObj& c : cqs_) c.lossy = true;
    }
    if (regfail_nth != 0) registrations_.set_nth(regfail_nth);
    if (postfail_nth != 0) posts_.set_nth(postfail_nth);
  }
}

}  // namespace verbsim::fuzz::seq_harness
