// The soak worker's run: traffic until the deadline, then a FIN on every
// stream and the wait for every peer's; progress lines, the watchdog and
// the report.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "sim/fabric.h"
#include "sim/sim_provider.h"
#include "tools/soak/worker.h"

namespace verbsim::soak {
namespace {

// After every stream ended, UD datagrams still on their way get this long.
constexpr absl::Duration kUdGrace = absl::Milliseconds(300);

}  // namespace

uint64_t ResidentKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      uint64_t kb = 0;
      std::string digits;
      for (char c : line) {
        if (c >= '0' && c <= '9') digits += c;
      }
      if (absl::SimpleAtoi(digits, &kb)) return kb;
    }
  }
  return 0;
}

bool Worker::Finished() const {
  auto drained = [this](const Qp* qp) {
    auto it = send_fifo_.find(qp->qp_num());
    return it == send_fifo_.end() || it->second.empty();
  };
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    const OutStream& s = out_[p];
    const InStream& r = in_[p];
    if (!s.fin_sent || !s.fin_acked || !drained(s.qp.get())) return false;
    if (!r.fin_seen || !r.fin_reported || !drained(r.qp.get())) return false;
  }
  return drained(ud_qp_.get());
}

void Worker::Watchdog(absl::Time now) {
  const absl::Duration limit = absl::Seconds(o_.watchdog);
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    const OutStream& s = out_[p];
    const InStream& r = in_[p];
    if (!s.fin_acked && now - s.last_heard > limit) {
      Fail("no-progress",
           absl::StrFormat("no ACK from process %d for %.0f s (posted %u "
                           "messages, %u consumed; %u writes, %u verified)",
                           p, o_.watchdog, s.msgs_posted, s.consumed, s.writes,
                           s.writes_checked));
      stopped_ = true;
    }
    if (!r.fin_seen && now - r.last_heard > limit) {
      Fail("no-progress",
           absl::StrFormat("no message from process %d for %.0f s (%u "
                           "consumed)",
                           p, o_.watchdog, r.consumed));
      stopped_ = true;
    }
  }
}

bool Worker::Run() {
  const absl::Time start = absl::Now();
  const absl::Time stop_at = start + absl::Seconds(o_.seconds);
  const absl::Time warm_at = start + absl::Seconds(o_.warmup);
  const bool me_injects = o_.index == 0;
  const absl::Time stall_at = start + absl::Seconds(o_.seconds / 3);
  absl::Time next_progress = start + absl::Seconds(1);
  absl::Time next_leak = warm_at;
  absl::Time ended_at = absl::InfiniteFuture();
  for (int p = 0; p < o_.procs; ++p) {
    out_[p].last_heard = start;
    in_[p].last_heard = start;
  }
  std::printf("running %d processes for %.0f s\n", o_.procs, o_.seconds);
  std::fflush(stdout);
  bool finishing = false;
  while (!stopped_) {
    const absl::Time now = absl::Now();
    if (!finishing && now >= stop_at) finishing = true;
    if (me_injects && o_.inject == Inject::kStall && now >= stall_at) {
      std::printf("stalling (test-only --inject=stall)\n");
      std::fflush(stdout);
      for (;;) absl::SleepFor(absl::Seconds(1));  // until killed
    }
    if (rss_start_kb_ == 0 && now >= warm_at) {
      rss_start_kb_ = ResidentKb();
      std::printf("rss_start_kb %llu\n",
                  static_cast<unsigned long long>(rss_start_kb_));
    }
    if (me_injects && o_.inject == Inject::kLeak && now >= next_leak) {
      constexpr size_t kLeak = 2 << 20;
      leaked_.emplace_back(new char[kLeak]);
      std::memset(leaked_.back().get(), 1, kLeak);
      next_leak += absl::Milliseconds(100);
    }
    int work = 0;
    for (int p = 0; p < o_.procs; ++p) {
      if (p == o_.index) continue;
      if (!finishing) {
        work += Generate(p);
      } else if (!out_[p].fin_sent && !stopped_) {
        work += PostSend(p, true) ? 1 : 0;
      }
      MaybeAck(p);
    }
    work += Drain();
    if (finishing && Finished()) {
      if (ended_at == absl::InfiniteFuture()) ended_at = now;
      if (now - ended_at >= kUdGrace) break;
    }
    if (now >= next_progress) {
      std::printf("progress %.0f %llu\n", absl::ToDoubleSeconds(now - start),
                  static_cast<unsigned long long>(ops_));
      std::fflush(stdout);
      next_progress += absl::Seconds(1);
    }
    Watchdog(now);
    if (work == 0 && !stopped_) {
      // Nothing to post and nothing completed: sleep until a completion or
      // a few milliseconds (ACK intervals, UD windows) have passed.
      if (!cq_->ReqNotify(false).ok()) continue;
      if (Drain() == 0) {
        absl::StatusOr<Cq*> ev = channel_->GetEvent(absl::Milliseconds(5));
        if (ev.ok()) channel_->AckEvents(*ev, 1);
      }
    }
  }
  // Every process keeps its node until every other one has ended, so that
  // the last ACKs of every stream find their QPs. After a fatal finding the
  // node stays a moment too, so that what its progress thread still sends
  // (a NAK, say) reaches the peers and they see the first cause.
  if (stopped_) {
    absl::SleepFor(absl::Seconds(1));
  } else {
    std::printf("waiting for the others to end\n");
    std::fflush(stdout);
    if (absl::Status st = Barrier("done", absl::Seconds(o_.watchdog));
        !st.ok()) {
      Fail("no-progress", absl::StrCat("at the end: ", st.message()));
    }
  }
  Report();
  return failures_.empty();
}

void Worker::Report() {
  // UD: what each peer said it sent against what came.
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    const InStream& r = in_[p];
    if (r.fin_seen) {
      if (r.ud.distinct() > r.fin.ud_sent) {
        Fail("ud-duplicated",
             absl::StrFormat("%u distinct datagrams of process %d, which sent "
                             "%u",
                             r.ud.distinct(), p, r.fin.ud_sent));
      } else {
        ud_lost_ += r.fin.ud_sent - r.ud.distinct();
      }
    } else {
      // A stream that never ended: what is missing so far counts as lost.
      const uint64_t lost = r.order.Lost(r.order.next() - 1);
      if (lost > 0) {
        Fail("rc-lost", absl::StrFormat("%u messages of process %d never "
                                        "came (the stream did not end)",
                                        lost, p));
      }
    }
  }
  QpCounters sum;
  auto add = [&sum](const Qp* qp) {
    absl::StatusOr<QpCounters> c = qp->QueryCounters();
    if (!c.ok()) return;
    sum.packets_sent += c->packets_sent;
    sum.packets_received += c->packets_received;
    sum.packets_dropped += c->packets_dropped;
    sum.retransmissions += c->retransmissions;
    sum.timeouts += c->timeouts;
    sum.rnr_naks += c->rnr_naks;
    sum.naks_received += c->naks_received;
    sum.naks_sent += c->naks_sent;
    sum.no_recv_drops += c->no_recv_drops;
  };
  add(ud_qp_.get());
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    add(out_[p].qp.get());
    add(in_[p].qp.get());
  }
  sim::Fabric& fabric = sim::AsSimProvider(provider_.get())->fabric();
  uint64_t fired[5] = {};
  for (const sim::PacketRule& rule : fabric.PacketRules()) {
    fired[static_cast<int>(rule.action)] += rule.fired;
  }
  absl::StatusOr<sim::NodeStats> node = fabric.GetNodeStats(o_.index);
  const uint64_t rss_end = ResidentKb();
  auto tally = [](const char* name, const Tally& t) {
    std::printf("stat %s %llu %llu\n", name,
                static_cast<unsigned long long>(t.messages),
                static_cast<unsigned long long>(t.bytes));
  };
  auto number = [](const char* name, uint64_t v) {
    std::printf("count %s %llu\n", name, static_cast<unsigned long long>(v));
  };
  tally("rc_send", rc_send_);
  tally("rc_write", rc_write_);
  tally("rc_write_imm", rc_write_imm_);
  tally("rc_read", rc_read_);
  tally("rc_fin", rc_fin_);
  tally("rc_ack", rc_ack_);
  tally("ud_sent", ud_sent_tally_);
  tally("ud_received", ud_recv_tally_);
  number("ud_lost", ud_lost_);
  number("packets_sent", sum.packets_sent);
  number("packets_received", sum.packets_received);
  number("packets_dropped", sum.packets_dropped);
  number("retransmissions", sum.retransmissions);
  number("ack_timeouts", sum.timeouts);
  number("naks_received", sum.naks_received);
  number("naks_sent", sum.naks_sent);
  number("rnr_naks", sum.rnr_naks);
  number("ud_no_recv_drops", sum.no_recv_drops);
  number("icrc_errors", node.ok() ? node->icrc_errors : 0);
  number("fault_drop", fired[static_cast<int>(sim::FaultAction::kDrop)]);
  number("fault_corrupt", fired[static_cast<int>(sim::FaultAction::kCorrupt)]);
  number("fault_dup", fired[static_cast<int>(sim::FaultAction::kDuplicate)]);
  number("fault_reorder", fired[static_cast<int>(sim::FaultAction::kReorder)]);
  number("fault_delay", fired[static_cast<int>(sim::FaultAction::kDelay)]);
  std::printf("rss_end_kb %llu\n", static_cast<unsigned long long>(rss_end));
  for (const auto& [reason, count] : failures_) {
    std::printf("fail %s %llu %s\n", reason.c_str(),
                static_cast<unsigned long long>(count),
                first_failure_[reason].c_str());
  }
  std::printf("end %s\n", failures_.empty() ? "ok" : "failed");
  std::fflush(stdout);
}

}  // namespace verbsim::soak
