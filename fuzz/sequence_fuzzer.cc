// Harness for verb sequences. The input decodes to a program over
// two or three sim nodes: create, modify (connect, RESET, SQD, ERR, access
// flags) and destroy QPs and CQs, post sends (every opcode, inline, fenced,
// unsignaled, good and bad keys) and receives on every queue, poll, arm CQs
// and wait on channels, register and deregister MRs, drop handles while
// objects are in use, let virtual time pass, and add fault rules in the text
// form (drop, dup, delay, reorder, corrupt, linkdown, crash, qperr,
// cqoverflow, regfail, postfail; some deliberately malformed). At the end
// every QP is moved to ERR, the fabric runs until idle, every CQ is drained,
// every object is destroyed (checked, in an order taken from the input) and
// every handle dropped (in another such order), the provider among them.
//
// Invariants:
//  - no crash and no sanitizer report (ASan, UBSan, LeakSanitizer: nothing
//    is left after the fabric is destroyed);
//  - every posted WR completes exactly once (success, error or flush) unless
//    its QP was reset or destroyed or its CQ may have overflowed or was
//    dropped: then at most once. An unsignaled WR completes only with an
//    error. A completion names a WR that was posted, on the CQ and QP it was
//    posted to, with the opcode it was posted with when it succeeds;
//  - completions of one queue come in post order (per send queue and per
//    receive queue), and after an error none succeeds until a reset;
//  - a QP is in the state it was last moved to, or in ERR when something
//    may have put it there (a connection, a forced fault, a CQ overrun);
//  - an async CQ_ERR event only comes when a CQ of that node may overrun;
//    QP_FATAL only with a forced fault;
//  - the Status of every call is the model's (fuzz/model.h): post before
//    RTS, bad opcodes, flags, SGE counts and inline sizes, queue full only
//    when the queue may be full, forced post and registration failures,
//    EBUSY destroys, malformed fault rules.
//
// The harness's state is in sequence_harness.h, its objects in
// sequence_objects.h and its completion tracker in sequence_completions.h.
// This file holds the driver: setup, the op loop, time passing, dropped
// handles and the end; sequence_objects.cc, sequence_posts.cc,
// sequence_completions.cc and sequence_faults.cc hold the other steps.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/errors.h"
#include "core/provider.h"
#include "fuzz/bytes.h"
#include "fuzz/harness.h"
#include "fuzz/sequence_harness.h"
#include "sim/sim_provider.h"

namespace verbsim::fuzz::seq_harness {

void SequenceHarness::Run() {
  Setup();
  int steps = 0;
  while (!in_.empty() && steps++ < kMaxSteps) {
    switch (in_.Below(kNumOps)) {
      case kOpCreateCq: CreateCq(); break;
      case kOpDestroyCq: DestroyCq(); break;
      case kOpCreateQp: CreateQp(); break;
      case kOpConnect: Connect(); break;
      case kOpModify: ModifyOp(); break;
      case kOpDestroyQp: DestroyQp(); break;
      case kOpPostSend:
      case kOpPostSend2: PostSendOp(); break;
      case kOpPostRecv: PostRecvOp(); break;
      case kOpPoll:
      case kOpPoll2: PollOp(); break;
      case kOpRun: RunOp(); break;
      case kOpRegMr: RegMrOp(); break;
      case kOpDeregMr: DeregMrOp(); break;
      case kOpFault: FaultOp(); break;
      case kOpNotify: NotifyOp(); break;
      default: DropHandleOp(); break;
    }
  }
  Finish();
}

// --- Setup ------------------------------------------------------------------

void SequenceHarness::Setup() {
  const int nodes = 2 + static_cast<int>(in_.Below(2));
  profile_ = (in_.U8() & 1) ? "rxe" : "ibta";
  rules_ = RulesFor(profile_);
  const uint64_t seed = in_.U8();
  auto provider = OpenProvider(
      absl::StrCat("sim:", profile_, ",nodes=", nodes, ",seed=", seed));
  if (!provider.ok()) Violation(provider.status().ToString());
  provider_ = *std::move(provider);
  fabric_ = &sim::AsSimProvider(provider_.get())->fabric();
  for (int n = 0; n < nodes; ++n) {
    arenas_.emplace_back(kArena);
    FillPattern(arenas_.back().data(), kArena, seed + n);
    NodeObj node;
    auto ctx = provider_->Open(absl::StrCat("sim", n));
    if (!ctx.ok()) Violation(ctx.status().ToString());
    node.ctx = *std::move(ctx);
    auto gid = node.ctx->QueryGid(1, 0);
    if (!gid.ok()) Violation(gid.status().ToString());
    node.gid = *gid;
    auto ch = node.ctx->CreateCompChannel();
    if (!ch.ok()) Violation(ch.status().ToString());
    node.channel = *std::move(ch);
    for (int k = 0; k < kPdsPerNode; ++k) {
      auto pd = node.ctx->AllocPd();
      if (!pd.ok()) Violation(pd.status().ToString());
      PdObj p;
      p.node = n;
      p.h = *std::move(pd);
      pds_.push_back(std::move(p));
    }
    nodes_.push_back(std::move(node));
  }
  max_cqe_ = nodes_[0].ctx->device_attr().max_cqe;
  dev_ = nodes_[0].ctx->device_attr();
  FUZZ_NOTE(absl::StrCat("setup: ", nodes, " nodes, profile ", profile_,
                    ", seed ", seed));
}

void SequenceHarness::RunOp() {
  static const int64_t kUs[] = {0, 1, 5, 20, 100, 1000};
  const int64_t us = kUs[in_.Below(6)];
  FUZZ_NOTE(absl::StrCat("run ", us, "us"));
  fabric_->RunFor(absl::Microseconds(us));
}

// --- Dropping handles while in use ------------------------------------------

void SequenceHarness::DropHandleOp() {
  const uint8_t what = in_.U8();
  const uint8_t idx = in_.U8();
  switch (what % 3) {
    case 0:
      if (!mrs_.empty()) {
        MrObj& m = mrs_[idx % mrs_.size()];
        FUZZ_NOTE(absl::StrCat("drop mr ", idx % mrs_.size()));
        m.h.reset();
        m.live = false;
      }
      break;
    case 1:
      if (!cqs_.empty()) {
        CqObj& c = cqs_[idx % cqs_.size()];
        FUZZ_NOTE(absl::StrCat("drop cq ", idx % cqs_.size()));
        if (!c.dropped) {
          c.h.reset();
          c.dropped = true;
          c.lossy = true;
        }
      }
      break;
    default:
      if (!qps_.empty()) {
        QpObj& q = qps_[idx % qps_.size()];
        FUZZ_NOTE(absl::StrCat("drop qp ", idx % qps_.size()));
        q.h.reset();
        q.dropped = true;
      }
      break;
  }
}

// --- The end ----------------------------------------------------------------

void SequenceHarness::Finish() {
  // Everything to ERR: every outstanding WR must complete now.
  for (int i = 0; i < static_cast<int>(qps_.size()); ++i) {
    if (!qps_[i].gone()) Modify(i, QpState::kErr, kQpState, -1);
  }
  if (!fabric_->RunUntilIdle()) {
    Violation("the fabric does not go idle with every QP in ERR");
  }
  for (int i = 0; i < static_cast<int>(cqs_.size()); ++i) {
    if (!cqs_[i].usable()) continue;
    while (PollCq(i, 16) > 0) {
    }
  }
  for (int n = 0; n < NumNodes(); ++n) DrainAsyncEvents(n);
  // Exactly once: what is left must be excused.
  tracker_.CheckNoneLeft();
  Teardown();
}

// Checked destroys in an order from the input (twice over, so what was
// busy the first time may go the second), then every handle dropped in
// another order, the provider among them.
void SequenceHarness::Teardown() {
  enum Kind { kQp, kMr, kCq, kChannel, kPd, kCtx, kProvider };
  std::vector<std::pair<Kind, int>> objs;
  for (int i = 0; i < static_cast<int>(qps_.size()); ++i) objs.push_back({kQp, i});
  for (int i = 0; i < static_cast<int>(mrs_.size()); ++i) objs.push_back({kMr, i});
  for (int i = 0; i < static_cast<int>(cqs_.size()); ++i) objs.push_back({kCq, i});
  for (int i = 0; i < NumNodes(); ++i) objs.push_back({kChannel, i});
  for (int i = 0; i < static_cast<int>(pds_.size()); ++i) objs.push_back({kPd, i});
  for (int i = 0; i < NumNodes(); ++i) objs.push_back({kCtx, i});
  auto shuffle = [&](std::vector<std::pair<Kind, int>>& v) {
    for (size_t k = v.size(); k > 1; --k) {
      std::swap(v[k - 1], v[in_.Below(static_cast<uint32_t>(k))]);
    }
  };
  shuffle(objs);
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [kind, i] : objs) {
      switch (kind) {
        case kQp: {
          QpObj& q = qps_[i];
          if (q.dropped || q.destroyed) break;
          ExpectErrno(q.h->Destroy(), 0, "teardown: Qp::Destroy");
          q.destroyed = true;
          break;
        }
        case kMr: {
          MrObj& m = mrs_[i];
          if (m.h == nullptr) break;
          ExpectErrno(m.h->Destroy(), m.live ? 0 : EINVAL,
                      "teardown: Mr::Destroy");
          m.live = false;
          break;
        }
        case kCq:
          CheckedDestroyCq(i);
          break;
        case kChannel: {
          NodeObj& node = nodes_[i];
          if (node.channel == nullptr) break;
          int users = 0;
          for (const CqObj& c : cqs_) {
            users += c.node == i && c.has_channel && c.usable();
          }
          const int expected =
              node.channel_destroyed ? EINVAL : users > 0 ? EBUSY : 0;
          ExpectErrno(node.channel->Destroy(), expected,
                      "teardown: CompChannel::Destroy");
          if (expected == 0) node.channel_destroyed = true;
          break;
        }
        case kPd: {
          PdObj& p = pds_[i];
          int users = 0;
          for (const MrObj& m : mrs_) users += m.pd == i && m.live;
          for (const QpObj& q : qps_) users += q.pd == i && !q.gone();
          const int expected = p.destroyed ? EINVAL : users > 0 ? EBUSY : 0;
          ExpectErrno(p.h->Destroy(), expected, "teardown: Pd::Destroy");
          if (expected == 0) p.destroyed = true;
          break;
        }
        case kCtx: {
          NodeObj& node = nodes_[i];
          int users = 0;
          for (const PdObj& p : pds_) users += p.node == i && !p.destroyed;
          for (const CqObj& c : cqs_) users += c.node == i && c.usable();
          users += !node.channel_destroyed;
          const int expected =
              node.ctx_destroyed ? EINVAL : users > 0 ? EBUSY : 0;
          ExpectErrno(node.ctx->Destroy(), expected,
                      "teardown: Context::Destroy");
          if (expected == 0) node.ctx_destroyed = true;
          break;
        }
        case kProvider:
          break;
      }
    }
  }
  // Drop every handle, in another order, the provider included.
  objs.push_back({kProvider, 0});
  shuffle(objs);
  for (const auto& [kind, i] : objs) {
    switch (kind) {
      case kQp: qps_[i].h.reset(); break;
      case kMr: mrs_[i].h.reset(); break;
      case kCq: cqs_[i].h.reset(); break;
      case kChannel: nodes_[i].channel.reset(); break;
      case kPd: pds_[i].h.reset(); break;
      case kCtx: nodes_[i].ctx.reset(); break;
      case kProvider:
        fabric_ = nullptr;
        provider_.reset();
        break;
    }
  }
}

}  // namespace verbsim::fuzz::seq_harness

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return verbsim::fuzz::RunOneInput<
      verbsim::fuzz::seq_harness::SequenceHarness>(data, size);
}
