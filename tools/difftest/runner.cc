#include "tools/difftest/runner.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/types.h"
#include "core/verbs.h"
#include "sim/sim_provider.h"

namespace verbsim::difftest {
namespace {

// A key no region has (outside the low key range both rxe and the sim use
// first).
constexpr uint32_t kNoKey = 0x5a5a5a00;

std::string Result(const absl::Status& status) {
  if (status.ok()) return "ok";
  return std::string(ErrnoName(ErrnoOf(status)));
}

struct Region {
  std::unique_ptr<Mr> mr;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  int32_t offset = 0;  // in the side's buffer
  uint32_t length = 0;
};

struct Side {
  std::unique_ptr<Context> context;
  std::unique_ptr<Pd> pd;
  std::unique_ptr<Cq> cq;
  uint8_t* buffer = nullptr;
  std::vector<Region> regions;  // every successful registration
};

// [begin, end) of a side's buffer.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
};

struct QpEntry {
  int side = 0;
  int index = 0;  // in creation order over both sides
  std::unique_ptr<Qp> qp;
  int peer = -1;  // the QP it is connected to
};

class Run {
 public:
  Run(const Program& program, const RunOptions& options)
      : program_(program), options_(options) {}
  ~Run() {
    links_.clear();
    for (QpEntry& q : qps_) q.qp.reset();
    for (Side& s : sides_) {
      s.regions.clear();
      s.cq.reset();
      s.pd.reset();
      s.context.reset();
      std::free(s.buffer);
    }
  }

  absl::StatusOr<Trace> Go(const std::string& spec) {
    absl::StatusOr<std::unique_ptr<Provider>> provider = OpenProvider(spec);
    if (!provider.ok()) return provider.status();
    provider_ = *std::move(provider);
    sim_ = sim::AsSimProvider(provider_.get());
    siw_ = absl::StrContains(spec, "siw");
    if (sim_ != nullptr) {
      // Time moves only in Settle, as much as a device gets.
      if (absl::Status s = sim_->fabric().Freeze(true); !s.ok()) return s;
    }
    absl::StatusOr<std::vector<std::string>> devices =
        provider_->ListDevices();
    if (!devices.ok()) return devices.status();
    if (devices->empty()) {
      return Errno(ENODEV, "provider %s has no device", spec);
    }
    for (int i = 0; i < 2; ++i) {
      Side& s = sides_[i];
      const std::string& device = (*devices)[devices->size() > 1 ? i : 0];
      absl::StatusOr<std::unique_ptr<Context>> context =
          provider_->Open(device);
      if (!context.ok()) return context.status();
      s.context = *std::move(context);
      absl::StatusOr<std::unique_ptr<Pd>> pd = s.context->AllocPd();
      if (!pd.ok()) return pd.status();
      s.pd = *std::move(pd);
      absl::StatusOr<std::unique_ptr<Cq>> cq =
          s.context->CreateCq(1024, nullptr);
      if (!cq.ok()) return cq.status();
      s.cq = *std::move(cq);
      s.buffer = static_cast<uint8_t*>(std::aligned_alloc(4096, kArenaBytes));
      if (s.buffer == nullptr) return Errno(ENOMEM, "buffer");
      for (uint32_t b = 0; b < kArenaBytes; ++b) {
        s.buffer[b] = static_cast<uint8_t>(b * 7 + i * 101 + program_.seed);
      }
    }
    for (size_t i = 0; i < program_.ops.size(); ++i) {
      const Op& op = program_.ops[i];
      const std::string said = Execute(op, i);
      trace_.calls.push_back(absl::StrCat(i, " ", Describe(op), " -> ", said));
      Settle();
    }
    FinalPoll();
    for (int i = 0; i < 2; ++i) {
      trace_.bytes[i].assign(sides_[i].buffer, sides_[i].buffer + kArenaBytes);
      for (const Range& r : unmatched_[i]) {
        const int64_t end = std::min<int64_t>(r.end, kArenaBytes);
        for (int64_t b = std::max<int64_t>(r.begin, 0); b < end; ++b) {
          trace_.bytes[i][b] = 0;
        }
      }
    }
    return trace_;
  }

 private:
  std::string Execute(const Op& op, size_t index) {
    switch (op.kind) {
      case OpKind::kRegMr: return RegMr(op);
      case OpKind::kDeregMr: return DeregMr(op);
      case OpKind::kCreateQp: return CreateQp(op);
      case OpKind::kConnect: return Connect(op);
      case OpKind::kModifyErr: return ModifyErr(op);
      case OpKind::kPostRecv: return PostRecv(op, index);
      case OpKind::kPostSend: return PostSend(op, index);
      case OpKind::kPoll: Drain(); return "polled";
    }
    return "?";
  }

  std::string RegMr(const Op& op) {
    Side& s = sides_[op.side];
    absl::StatusOr<std::unique_ptr<Mr>> mr =
        s.pd->RegMr(s.buffer + op.offset, op.length, op.a);
    if (!mr.ok()) return Result(mr.status());
    Region r;
    r.lkey = (*mr)->lkey();
    r.rkey = (*mr)->rkey();
    r.offset = op.offset;
    r.length = op.length;
    r.mr = *std::move(mr);
    s.regions.push_back(std::move(r));
    return absl::StrCat("ok mr", s.regions.size() - 1);
  }

  std::string DeregMr(const Op& op) {
    Side& s = sides_[op.side];
    if (op.a >= s.regions.size()) return "no such mr";
    Region& r = s.regions[op.a];
    if (r.mr == nullptr) return "already gone";
    absl::Status status = r.mr->Destroy();
    if (status.ok()) r.mr.reset();  // its keys stay: stale keys are a case
    return Result(status);
  }

  std::string CreateQp(const Op& op) {
    Side& s = sides_[op.side];
    QpInitAttr init;
    init.send_cq = s.cq.get();
    init.recv_cq = s.cq.get();
    init.qp_type = QpType::kRc;
    init.cap = {op.a, op.b, op.c, op.d, op.e};
    absl::StatusOr<std::unique_ptr<Qp>> qp = s.pd->CreateQp(init);
    if (!qp.ok()) return Result(qp.status());
    const QpCap cap = (*qp)->init_attr().cap;
    QpEntry q;
    q.side = static_cast<int>(op.side);
    q.index = static_cast<int>(qps_.size());
    q.qp = *std::move(qp);
    qpn_to_index_[{q.side, q.qp->qp_num()}] = q.index;
    qps_.push_back(std::move(q));
    return absl::StrFormat("ok qp%d caps %u/%u/%u/%u/%u", qps_.back().index,
                           cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge,
                           cap.max_recv_sge, cap.max_inline_data);
  }

  // The `n`th QP of `side` (modulo), or null.
  QpEntry* QpOfSide(int side, uint32_t n) {
    std::vector<QpEntry*> of;
    for (QpEntry& q : qps_) {
      if (q.side == side) of.push_back(&q);
    }
    return of.empty() ? nullptr : of[n % of.size()];
  }
  QpEntry* AnyQp(uint32_t n) {
    return qps_.empty() ? nullptr : &qps_[n % qps_.size()];
  }

  std::string Connect(const Op& op) {
    QpEntry* a = QpOfSide(0, op.a);
    QpEntry* b = QpOfSide(1, op.b);
    if (a == nullptr || b == nullptr) return "no qp";
    if (a->peer >= 0 || b->peer >= 0) return "already connected";
    EndpointAttr attr;
    attr.qp_access = kAccessLocalWrite | kAccessRemoteWrite |
                     kAccessRemoteRead | kAccessRemoteAtomic;
    // 67 ms: no retry runs out while the program runs (its operations take
    // a settle time each), only in the last poll.
    attr.timeout = 14;
    attr.retry_cnt = 2;
    attr.rnr_retry = 2;
    // 61.44 ms (IBA table 45): no RNR retry runs out while the program
    // runs either; and rxe waits at least one jiffy, however short the
    // timer (rxe_comp.c rnrnak_jiffies), which a longer timer makes moot.
    attr.min_rnr_timer = 25;
    // The sim's CM runs its handshake in virtual time.
    if (sim_ != nullptr) (void)sim_->fabric().Freeze(false);
    absl::StatusOr<std::unique_ptr<QpLink>> link =
        provider_->ConnectQps(a->qp.get(), b->qp.get(), attr);
    if (sim_ != nullptr) (void)sim_->fabric().Freeze(true);
    if (!link.ok()) return Result(link.status());
    links_.push_back(*std::move(link));
    a->peer = b->index;
    b->peer = a->index;
    return absl::StrFormat("ok qp%d-qp%d", a->index, b->index);
  }

  std::string ModifyErr(const Op& op) {
    QpEntry* q = AnyQp(op.a);
    if (q == nullptr) return "no qp";
    QpAttr attr;
    attr.qp_state = QpState::kErr;
    return absl::StrCat("qp", q->index, " ",
                        Result(q->qp->Modify(attr, kQpState)));
  }

  // The SGEs of `op` over `side`'s regions.
  std::vector<Sge> Sges(const Op& op, int side) {
    std::vector<Sge> out;
    Side& s = sides_[side];
    for (const SgeSpec& spec : op.sges) {
      Sge sge;
      if (spec.mr < s.regions.size()) {
        const Region& r = s.regions[spec.mr];
        sge.addr = reinterpret_cast<uint64_t>(s.buffer) + r.offset +
                   spec.offset;
        sge.lkey = r.lkey;
      } else {
        sge.addr = reinterpret_cast<uint64_t>(s.buffer) + spec.offset;
        sge.lkey = kNoKey;
      }
      sge.length = spec.length;
      out.push_back(sge);
    }
    return out;
  }

  std::string PostRecv(const Op& op, size_t index) {
    QpEntry* q = AnyQp(op.a);
    if (q == nullptr) return "no qp";
    std::vector<Sge> sges = Sges(op, q->side);
    RecvWr wr;
    wr.wr_id = index;
    wr.sg_list = sges;
    return absl::StrCat("qp", q->index, " ", Result(q->qp->PostRecv(wr)));
  }

  std::string PostSend(const Op& op, size_t index) {
    QpEntry* q = AnyQp(op.a);
    if (q == nullptr) return "no qp";
    std::vector<Sge> sges = Sges(op, q->side);
    SendWr wr;
    wr.wr_id = index;
    wr.sg_list = sges;
    wr.opcode = static_cast<WrOpcode>(op.b);
    wr.send_flags = op.c;
    wr.imm_data = 0x1234;
    // The remote region: on the peer's side (the other side when not
    // connected).
    const int remote_side = 1 - q->side;
    Side& rs = sides_[remote_side];
    uint64_t raddr = reinterpret_cast<uint64_t>(rs.buffer) + op.offset;
    uint32_t rkey = kNoKey;
    if (op.d < rs.regions.size()) {
      const Region& r = rs.regions[op.d];
      raddr += r.offset;
      rkey = op.e == 0 ? r.rkey : (op.e == 2 ? r.lkey : kNoKey);
    }
    wr.rdma.remote_addr = raddr;
    wr.rdma.rkey = rkey;
    wr.atomic.remote_addr = raddr;
    wr.atomic.rkey = rkey;
    wr.atomic.compare_add = 3;
    wr.atomic.swap = 0x0102030405060708ull;
    if (siw_ && CrashesSiw(wr)) {
      return absl::StrCat("qp", q->index,
                          " not posted: siw0 does not return from it");
    }
    if (siw_ && ReadsAStaleSge(wr)) {
      return absl::StrCat("qp", q->index,
                          " not posted: siw reads through a stale SGE");
    }
    std::string said = Result(q->qp->PostSend(wr));
    if (siw_ && said == "ok" && op.d < rs.regions.size() && op.e == 0) {
      if (std::optional<Range> placed =
              PlacedBeforeOverrun(wr, rs.regions[op.d], op.offset)) {
        unmatched_[remote_side].push_back(*placed);
        said += " (overruns its region: the bytes in it are not compared)";
      }
    }
    return absl::StrCat("qp", q->index, " ", said);
  }

  // The part inside its region of an RDMA WRITE that starts in the region
  // and runs past its end, in the peer's buffer. siw checks such a WRITE
  // piece by piece as the socket hands its FPDU over (siw_qp_rx.c
  // siw_proc_write: siw_check_mem over the bytes at hand), so how much of
  // that part it places before the failing piece depends on how the TCP
  // segments arrived: the bytes cannot be matched (docs/fidelity.md,
  // "Differential runs").
  static std::optional<Range> PlacedBeforeOverrun(const SendWr& wr,
                                                  const Region& r,
                                                  int32_t offset) {
    if (wr.opcode != WrOpcode::kRdmaWrite &&
        wr.opcode != WrOpcode::kRdmaWriteWithImm) {
      return std::nullopt;
    }
    int64_t length = 0;
    for (const Sge& sge : wr.sg_list) length += sge.length;
    const int64_t start = int64_t{r.offset} + offset;
    const int64_t region_end = int64_t{r.offset} + r.length;
    if (start < r.offset || start >= region_end ||
        start + length <= region_end) {
      return std::nullopt;
    }
    return Range{start, region_end};
  }

  // A SEND or WRITE (not inline) whose SGE list holds a zero-length SGE
  // beside others: on Debian's 6.1 kernel siw0 oopses in siw_tx_hdt as
  // siw_post_send starts it and the call never returns (docs/fidelity.md,
  // "Differential runs"). Not posted on either side of a siw comparison.
  static bool CrashesSiw(const SendWr& wr) {
    const bool payload = wr.opcode == WrOpcode::kSend ||
                         wr.opcode == WrOpcode::kSendWithImm ||
                         wr.opcode == WrOpcode::kSendWithInv ||
                         wr.opcode == WrOpcode::kRdmaWrite ||
                         wr.opcode == WrOpcode::kRdmaWriteWithImm;
    if (!payload || (wr.send_flags & kSendInline) || wr.sg_list.size() < 2) {
      return false;
    }
    for (const Sge& sge : wr.sg_list) {
      if (sge.length == 0) return true;
    }
    return false;
  }

  // A READ without SGEs: libsiw writes no SGE into the send ring's slot
  // (push_send_wqe copies num_sge of them), and the kernel reads a READ
  // into sge[0] whatever its count (siw_qp.c siw_activate_tx_from_sq sets
  // it to 1), so the READ asks for the length, and lands at the address,
  // of the last SGE that slot held: the WR posted there a ring's length
  // earlier, or inline bytes. Not posted on either side of a siw
  // comparison (docs/fidelity.md, "Differential runs").
  static bool ReadsAStaleSge(const SendWr& wr) {
    return wr.opcode == WrOpcode::kRdmaRead && wr.sg_list.empty();
  }

  void Settle() {
    if (sim_ != nullptr) {
      sim_->fabric().RunFor(options_.settle);
    } else {
      absl::SleepFor(options_.settle);
    }
  }

  // Takes every completion there is now; false if a poll failed.
  bool Drain() {
    WorkCompletion wcs[16];
    while (true) {
      bool any = false;
      for (int side = 0; side < 2; ++side) {
        absl::StatusOr<int> n =
            sides_[side].cq->Poll(absl::MakeSpan(wcs, 16));
        if (!n.ok()) {
          trace_.calls.push_back(absl::StrCat("poll failed: ",
                                              Result(n.status())));
          return false;
        }
        for (int i = 0; i < *n; ++i) Note(side, wcs[i]);
        any = any || *n > 0;
      }
      if (!any) return true;
    }
  }

  // The end: a sim runs until nothing is left to happen; a device is
  // polled until it stays quiet for final_quiet.
  void FinalPoll() {
    if (sim_ != nullptr) {
      (void)sim_->fabric().Freeze(false);
      sim_->fabric().RunUntilIdle();
      Drain();
      return;
    }
    absl::Time last = absl::Now();
    while (absl::Now() - last < options_.final_quiet) {
      const size_t before = CompletionCount();
      if (!Drain()) return;
      if (CompletionCount() != before) {
        last = absl::Now();
      } else {
        absl::SleepFor(absl::Microseconds(200));
      }
    }
  }

  size_t CompletionCount() const {
    size_t n = 0;
    for (const auto& [k, v] : trace_.completions) n += v.size();
    return n;
  }

  void Note(int side, const WorkCompletion& wc) {
    auto it = qpn_to_index_.find({side, wc.qp_num});
    const std::string qp =
        it == qpn_to_index_.end() ? "qp?" : absl::StrCat("qp", it->second);
    // Every WR's id is the index of the operation that posted it.
    const bool recv = wc.wr_id < program_.ops.size() &&
                      program_.ops[wc.wr_id].kind == OpKind::kPostRecv;
    std::string line = absl::StrFormat("wr %u %s", wc.wr_id,
                                       WcStatusName(wc.status));
    // Opcode and length are defined for successful completions only
    // (ibv_poll_cq(3)); a send's byte_len is not defined at all.
    if (wc.status == WcStatus::kSuccess) {
      absl::StrAppend(&line, " ", WcOpcodeName(wc.opcode));
      if (recv) absl::StrAppend(&line, " len ", wc.byte_len);
      if (wc.opcode == WcOpcode::kRecvRdmaWithImm ||
          (recv && (wc.wc_flags & kWcWithImm))) {
        absl::StrAppendFormat(&line, " imm 0x%x", wc.imm_data);
      }
    }
    trace_.completions[absl::StrCat(qp, recv ? " recv" : " send")].push_back(
        line);
  }

  const Program& program_;
  RunOptions options_;
  std::unique_ptr<Provider> provider_;
  sim::SimProvider* sim_ = nullptr;  // provider_, when it is a sim
  bool siw_ = false;                 // a siw device or the sim's siw profile
  std::vector<Range> unmatched_[2];  // per side: bytes not compared
  Side sides_[2];
  std::vector<QpEntry> qps_;
  std::vector<std::unique_ptr<QpLink>> links_;
  // (side, QP number): two devices may number their QPs alike.
  std::map<std::pair<int, uint32_t>, int> qpn_to_index_;
  Trace trace_;
};

}  // namespace

absl::StatusOr<Trace> RunProgram(const Program& program,
                                 const std::string& spec,
                                 const RunOptions& options) {
  Run run(program, options);
  return run.Go(spec);
}

namespace {

// The completions of `queue` in `t`; empty when it has none.
const std::vector<std::string>& CompletionsOf(const Trace& t,
                                              const std::string& queue) {
  static const std::vector<std::string> kNone;
  const auto it = t.completions.find(queue);
  return it == t.completions.end() ? kNone : it->second;
}

// Every queue that has completions in either trace.
std::set<std::string> QueuesOf(const Trace& a, const Trace& b) {
  std::set<std::string> queues;
  for (const auto& [queue, lines] : a.completions) queues.insert(queue);
  for (const auto& [queue, lines] : b.completions) queues.insert(queue);
  return queues;
}

}  // namespace

std::vector<std::string> Compare(const Trace& a, const Trace& b,
                                 const std::string& name_a,
                                 const std::string& name_b) {
  std::vector<std::string> out;
  const size_t n = std::max(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string ca = i < a.calls.size() ? a.calls[i] : "(none)";
    const std::string cb = i < b.calls.size() ? b.calls[i] : "(none)";
    if (ca != cb) {
      out.push_back(absl::StrFormat("call: %s: %s | %s: %s", name_a, ca,
                                    name_b, cb));
    }
  }
  for (const std::string& k : QueuesOf(a, b)) {
    const std::vector<std::string>& va = CompletionsOf(a, k);
    const std::vector<std::string>& vb = CompletionsOf(b, k);
    if (va != vb) {
      out.push_back(absl::StrFormat(
          "completions of %s: %s: [%s] | %s: [%s]", k, name_a,
          absl::StrJoin(va, ", "), name_b, absl::StrJoin(vb, ", ")));
    }
  }
  for (int side = 0; side < 2; ++side) {
    if (a.bytes[side] == b.bytes[side]) continue;
    size_t first = 0;
    while (first < a.bytes[side].size() && first < b.bytes[side].size() &&
           a.bytes[side][first] == b.bytes[side][first]) {
      ++first;
    }
    out.push_back(absl::StrFormat("bytes of side%d differ from offset %u",
                                  side, first));
  }
  return out;
}

namespace {

// "wr 8 REM_ACCESS_ERR" -> ("wr 8", "REM_ACCESS_ERR"); a success has more
// words and no error class.
bool SplitErrorCompletion(const std::string& line, std::string* wr,
                          std::string* status) {
  const std::vector<std::string> words = absl::StrSplit(line, ' ');
  if (words.size() != 3 || words[0] != "wr") return false;
  *wr = absl::StrCat(words[0], " ", words[1]);
  *status = words[2];
  return true;
}

bool IsLocalError(const std::string& s) {
  return s == "LOC_PROT_ERR" || s == "LOC_QP_OP_ERR";
}

bool IsRemoteError(const std::string& s) {
  return s == "REM_ACCESS_ERR" || s == "REM_OP_ERR" || s == "REM_INV_REQ_ERR";
}

}  // namespace

bool LocalOrRemoteErrorRace(const Trace& a, const Trace& b) {
  if (a.calls != b.calls || a.bytes[0] != b.bytes[0] ||
      a.bytes[1] != b.bytes[1] || a.completions.size() != b.completions.size()) {
    return false;
  }
  int raced = 0;
  for (const auto& [queue, va] : a.completions) {
    const auto it = b.completions.find(queue);
    if (it == b.completions.end()) return false;
    const std::vector<std::string>& vb = it->second;
    if (va == vb) continue;
    if (va.size() != vb.size() || !absl::EndsWith(queue, " send")) {
      return false;
    }
    for (size_t i = 0; i < va.size(); ++i) {
      if (va[i] == vb[i]) continue;
      std::string wa, sa, wb, sb;
      if (!SplitErrorCompletion(va[i], &wa, &sa) ||
          !SplitErrorCompletion(vb[i], &wb, &sb) || wa != wb) {
        return false;
      }
      if (!((IsLocalError(sa) && IsRemoteError(sb)) ||
            (IsRemoteError(sa) && IsLocalError(sb)))) {
        return false;
      }
      ++raced;
    }
  }
  return raced == 1;
}

namespace {

// Whether `cut` is `whole` with one WR's completion turned into
// LOC_QP_OP_ERR: in place of its SUCCESS, or added where an unsignaled
// WR's success said nothing.
bool OneWrCutShort(const std::vector<std::string>& cut,
                   const std::vector<std::string>& whole) {
  for (size_t i = 0; i < cut.size(); ++i) {
    std::string wr, status;
    if (!SplitErrorCompletion(cut[i], &wr, &status) ||
        status != "LOC_QP_OP_ERR") {
      continue;
    }
    std::vector<std::string> without = cut;
    without.erase(without.begin() + i);
    if (without == whole) return true;
    if (cut.size() == whole.size() &&
        absl::StartsWith(whole[i], absl::StrCat(wr, " SUCCESS "))) {
      without.insert(without.begin() + i, whole[i]);
      if (without == whole) return true;
    }
  }
  return false;
}

}  // namespace

bool TransmitCutByTerminateRace(const Trace& a, const Trace& b) {
  if (a.calls != b.calls || a.bytes[0] != b.bytes[0] ||
      a.bytes[1] != b.bytes[1]) {
    return false;
  }
  int cut = 0;
  for (const std::string& queue : QueuesOf(a, b)) {
    const std::vector<std::string>& va = CompletionsOf(a, queue);
    const std::vector<std::string>& vb = CompletionsOf(b, queue);
    if (va == vb) continue;
    if (!absl::EndsWith(queue, " send") ||
        !(OneWrCutShort(va, vb) || OneWrCutShort(vb, va))) {
      return false;
    }
    ++cut;
  }
  return cut == 1;
}

namespace {

// One error, then flushes only: what the QP completes when it is not
// wedged.
bool OneErrorThenFlushes(const std::vector<std::string>& send) {
  for (size_t i = 0; i < send.size(); ++i) {
    std::string wr, status;
    if (!SplitErrorCompletion(send[i], &wr, &status)) return false;
    if ((i == 0) == (status == "WR_FLUSH_ERR")) return false;
  }
  return !send.empty();
}

bool OnlyFlushes(const std::vector<std::string>& recv) {
  for (const std::string& line : recv) {
    std::string wr, status;
    if (!SplitErrorCompletion(line, &wr, &status) ||
        status != "WR_FLUSH_ERR") {
      return false;
    }
  }
  return true;
}

// Whether `wedged` has no completion of `qp` and `done` has one error and
// then flushes on its send queue and at most flushes on its receive queue.
bool WedgedIn(const std::string& qp, const Trace& wedged, const Trace& done) {
  return CompletionsOf(wedged, qp + " send").empty() &&
         CompletionsOf(wedged, qp + " recv").empty() &&
         OneErrorThenFlushes(CompletionsOf(done, qp + " send")) &&
         OnlyFlushes(CompletionsOf(done, qp + " recv"));
}

}  // namespace

bool WedgedRequesterRace(const Trace& a, const Trace& b) {
  if (a.calls != b.calls || a.bytes[0] != b.bytes[0] ||
      a.bytes[1] != b.bytes[1]) {
    return false;
  }
  std::string qp;  // the one QP whose queues differ
  for (const std::string& queue : QueuesOf(a, b)) {
    if (CompletionsOf(a, queue) == CompletionsOf(b, queue)) continue;
    const std::string name = queue.substr(0, queue.find(' '));
    if (!qp.empty() && qp != name) return false;
    qp = name;
  }
  return !qp.empty() && (WedgedIn(qp, a, b) || WedgedIn(qp, b, a));
}

std::string Format(const Trace& trace) {
  std::string out;
  for (const std::string& c : trace.calls) absl::StrAppend(&out, "  ", c, "\n");
  for (const auto& [k, v] : trace.completions) {
    absl::StrAppend(&out, "  ", k, ": ", absl::StrJoin(v, ", "), "\n");
  }
  return out;
}

}  // namespace verbsim::difftest
