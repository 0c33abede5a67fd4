// The sequence harness's completions (sequence_completions.h): the
// tracker that follows each posted WR to its completion, and the steps that
// poll CQs, arm them and wait on their channels, and drain the async
// events (a CQ_ERR only where a CQ of that node may overrun, a QP_FATAL
// only after a forced fault).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/errors.h"
#include "core/names.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/sequence_completions.h"
#include "fuzz/sequence_harness.h"

namespace verbsim::fuzz::seq_harness {

// --- The tracker ------------------------------------------------------------

void CompletionTracker::Track(uint64_t wr_id, int qp, bool recv,
                              bool signaled, WrOpcode op, bool unflushed) {
  const QpObj& q = qps_[qp];
  Rec r;
  r.qp = qp;
  r.recv = recv;
  r.epoch = q.epoch;
  r.signaled = signaled;
  r.op = op;
  r.cq = recv ? q.rcq : q.scq;
  r.unflushed = unflushed;
  CqObj& c = cqs_[r.cq];
  if (c.pending + 1 > c.cqe) c.lossy = true;  // it may overrun
  ++c.pending;
  if (recs_.size() + 1 != wr_id) Violation("harness: wr_id out of step");
  // Room for the WRs of a typical input at the first one, rather than a
  // block for every doubling.
  if (recs_.empty()) recs_.reserve(32);
  recs_.push_back(r);
  std::vector<uint64_t>& order = queues_[qp][recv ? 1 : 0].order;
  if (order.empty()) order.reserve(8);
  order.push_back(wr_id);
}

size_t CompletionTracker::Outstanding(int qp, bool recv) const {
  size_t n = 0;
  for (uint64_t id : queues_[qp][recv ? 1 : 0].order) {
    n += recs_[id - 1].epoch == qps_[qp].epoch;
  }
  return n;
}

bool CompletionTracker::Lenient(const Rec& r) const {
  const QpObj& q = qps_[r.qp];
  return q.gone() || r.epoch != q.epoch || cqs_[r.cq].lossy || r.unflushed;
}

void CompletionTracker::Retire(Rec& r) {
  r.done = true;
  --cqs_[r.cq].pending;
}

void CompletionTracker::OnCompletion(int cq, const WorkCompletion& wc) {
  if (wc.wr_id == 0 || wc.wr_id > recs_.size()) {
    Violation(absl::StrCat("cq ", cq, ": completion for a WR never posted: ",
                           WcString(wc)));
  }
  Rec& r = recs_[wc.wr_id - 1];
  const QpObj& q = qps_[r.qp];
  if (r.done) {
    Violation(absl::StrCat("cq ", cq, ": ", WcString(wc),
                           " completes a WR that already completed, or "
                           "after a later WR of its queue"));
  }
  if (r.cq != cq) {
    Violation(absl::StrCat("cq ", cq, ": ", WcString(wc),
                           " belongs on cq ", r.cq));
  }
  if (wc.qp_num != q.qpn) {
    Violation(absl::StrCat("cq ", cq, ": ", WcString(wc), " names qpn ",
                           wc.qp_num, " but was posted on qpn ", q.qpn));
  }
  QueueTrack& t = queues_[r.qp][r.recv ? 1 : 0];
  if (wc.status == WcStatus::kSuccess) {
    if (!r.recv && !r.signaled) {
      Violation(absl::StrCat("cq ", cq, ": ", WcString(wc),
                             ": an unsignaled WR completed with SUCCESS"));
    }
    const bool opcode_ok =
        r.recv ? (wc.opcode == WcOpcode::kRecv ||
                  wc.opcode == WcOpcode::kRecvRdmaWithImm)
               : wc.opcode == WcOpcodeOf(r.op);
    if (!opcode_ok) {
      Violation(absl::StrCat("cq ", cq, ": ", WcString(wc), " for a ",
                             r.recv ? "receive" : WrOpcodeName(r.op)));
    }
    if (t.errored && t.errored_epoch == r.epoch) {
      Violation(absl::StrCat("cq ", cq, ": ", WcString(wc),
                             " succeeds after an error completion on the "
                             "same queue (no reset in between)"));
    }
  } else {
    t.errored = true;
    t.errored_epoch = r.epoch;
  }
  // In post order: what was posted before it on this queue is finished.
  auto it = std::find(t.order.begin(), t.order.end(), wc.wr_id);
  if (it == t.order.end()) Violation("harness: WR missing from its queue");
  for (auto e = t.order.begin(); e != it; ++e) {
    Rec& earlier = recs_[*e - 1];
    const bool silent_success =
        !earlier.recv && !earlier.signaled && earlier.epoch == r.epoch;
    if (!silent_success && !Lenient(earlier) && earlier.epoch == r.epoch) {
      Violation(absl::StrCat(
          "cq ", cq, ": ", WcString(wc), " completes before wr_id ", *e,
          ", posted earlier on the same ", r.recv ? "receive" : "send",
          " queue of qpn ", q.qpn));
    }
    Retire(earlier);
  }
  t.order.erase(t.order.begin(), it + 1);
  Retire(r);
}

void CompletionTracker::CheckNoneLeft() const {
  for (size_t qp = 0; qp < qps_.size(); ++qp) {
    for (int recv = 0; recv < 2; ++recv) {
      for (uint64_t id : queues_[qp][recv].order) {
        const Rec& r = recs_[id - 1];
        if (r.done || Lenient(r)) continue;
        if (!r.recv && !r.signaled) continue;  // succeeded silently
        Violation(absl::StrCat("wr_id ", id, " (",
                               r.recv ? "receive" : WrOpcodeName(r.op),
                               " on qp ", qp, ", qpn ", qps_[qp].qpn,
                               ") never completed though its QP is in ERR "
                               "and the fabric is idle"));
      }
    }
  }
}

// --- Polling and events -----------------------------------------------------

// Returns how many completions it got.
int SequenceHarness::PollCq(int i, int max) {
  CqObj& c = cqs_[i];
  if (c.dropped) return 0;
  // max is at most 16 (PollOp, Finish): on the stack.
  WorkCompletion wcs[16];
  auto n = c.h->Poll(absl::MakeSpan(wcs, std::min(max, 16)));
  if (c.destroyed) {
    ExpectErrno(n.status(), EINVAL, "Poll of a destroyed CQ");
    return 0;
  }
  ExpectErrno(n.status(), 0, "Poll");
  for (int k = 0; k < *n; ++k) {
    FUZZ_NOTE(absl::StrCat("  cq ", i, ": ", WcString(wcs[k])));
    tracker_.OnCompletion(i, wcs[k]);
  }
  return *n;
}

void SequenceHarness::PollOp() {
  if (cqs_.empty()) return;
  const int i = static_cast<int>(in_.Below(cqs_.size()));
  const int max = 1 + static_cast<int>(in_.Below(16));
  PollCq(i, max);
}

void SequenceHarness::NotifyOp() {
  if (cqs_.empty()) return;
  const int i = static_cast<int>(in_.Below(cqs_.size()));
  const bool solicited = in_.Bool();
  const int64_t us = in_.Below(3) * 2;
  CqObj& c = cqs_[i];
  FUZZ_NOTE(absl::StrCat("notify cq ", i, solicited ? " solicited" : "",
                    ", wait ", us, "us on node ", c.node, "'s channel"));
  if (!c.dropped) {
    ExpectErrno(c.h->ReqNotify(solicited), c.destroyed ? EINVAL : 0,
                "ReqNotify");
  }
  NodeObj& node = nodes_[c.node];
  if (!node.channel_destroyed && node.channel != nullptr) {
    auto ev = node.channel->GetEvent(absl::Microseconds(us));
    if (ev.ok()) {
      // The event names a CQ of this channel whose handle is alive.
      bool known = false;
      for (const CqObj& o : cqs_) {
        known |= o.usable() && o.h.get() == *ev && o.node == c.node &&
                 o.has_channel;
      }
      if (!known) Violation("GetEvent returned a CQ not on this channel");
      node.channel->AckEvents(*ev, 1);
    } else {
      ExpectErrno(ev.status(), ETIMEDOUT, "GetEvent");
    }
  }
  DrainAsyncEvents(c.node);
}

void SequenceHarness::DrainAsyncEvents(int n) {
  NodeObj& node = nodes_[n];
  if (node.ctx == nullptr || node.ctx_destroyed) return;
  while (true) {
    auto ev = node.ctx->GetAsyncEvent(absl::ZeroDuration());
    if (!ev.ok()) {
      ExpectErrno(ev.status(), ETIMEDOUT, "GetAsyncEvent");
      return;
    }
    if (ev->type == AsyncEventType::kCqErr) {
      bool may = false;
      for (const CqObj& c : cqs_) may |= c.node == n && c.lossy;
      if (!may) {
        Violation(absl::StrCat("async CQ_ERR on node ", n,
                               " though no CQ there can overrun"));
      }
    } else if (ev->type == AsyncEventType::kQpFatal) {
      if (!forced_faults_) {
        Violation(absl::StrCat("async QP_FATAL for qpn ", ev->qp_num,
                               " without a forced fault"));
      }
    }
  }
}

}  // namespace verbsim::fuzz::seq_harness
