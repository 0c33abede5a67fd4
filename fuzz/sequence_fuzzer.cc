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
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/provider.h"
#include "fuzz/bytes.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/programs.h"
#include "sim/sim_provider.h"

namespace verbsim::fuzz {
namespace {

using namespace seq_program;  // NOLINT: the op encodings

constexpr int kPdsPerNode = 2;

struct NodeObj {
  std::unique_ptr<Context> ctx;
  bool ctx_destroyed = false;
  std::unique_ptr<CompChannel> channel;
  bool channel_destroyed = false;
  Gid gid{};
};

struct PdObj {
  int node = 0;
  std::unique_ptr<Pd> h;
  bool destroyed = false;
};

struct CqObj {
  int node = 0;
  std::unique_ptr<Cq> h;
  bool destroyed = false;
  bool dropped = false;
  bool has_channel = false;
  int cqe = 0;
  bool lossy = false;  // it may have overrun, or its handle is gone
  int pending = 0;     // WRs that may still complete here
  bool usable() const { return !destroyed && !dropped; }
};

struct MrObj {
  int node = 0;
  int pd = 0;
  std::unique_ptr<Mr> h;
  bool live = true;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

struct QpObj {
  int node = 0;
  int pd = 0;
  int scq = 0;
  int rcq = 0;
  std::unique_ptr<Qp> h;
  bool destroyed = false;
  bool dropped = false;
  uint32_t qpn = 0;
  QpCaps caps;
  bool sq_sig_all = false;
  EndpointAttr attr;
  QpState user = QpState::kReset;  // what the program last moved it to
  int peer_node = -1;
  uint32_t epoch = 0;  // bumped by RESET: older WRs are abandoned
  bool gone() const { return destroyed || dropped; }
};

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
  std::deque<uint64_t> order;  // wr_ids not yet done, in post order
  bool errored = false;        // an error completion in `errored_epoch`
  uint32_t errored_epoch = 0;
};

class SequenceHarness {
 public:
  explicit SequenceHarness(ByteReader& in) : in_(in) {}

  void Run() {
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

 private:
  // --- Setup ------------------------------------------------------------------

  void Setup() {
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

  int NumNodes() const { return static_cast<int>(nodes_.size()); }

  // --- CQs ----------------------------------------------------------------------

  void CreateCq() {
    const int node = static_cast<int>(in_.Below(NumNodes()));
    static const int kCqes[] = {1, 2, 4, 8, 16, 64, 256, 1024, 0, 40000};
    const int cqe = kCqes[in_.Below(10)];
    const bool with_channel = in_.Bool();
    if (cqs_.size() >= kMaxCqs) return;
    const int expected = (cqe < 1 || cqe > max_cqe_) ? EINVAL : 0;
    auto cq = nodes_[node].ctx->CreateCq(
        cqe, with_channel ? nodes_[node].channel.get() : nullptr);
    FUZZ_NOTE(absl::StrCat("create cq on node ", node, " cqe ", cqe,
                      with_channel ? " with channel" : "", ": ",
                      cq.ok() ? absl::StrCat("cq ", cqs_.size())
                              : cq.status().ToString()));
    ExpectErrno(cq.status(), expected, absl::StrCat("CreateCq(", cqe, ")"));
    if (!cq.ok()) return;
    CqObj c;
    c.node = node;
    c.h = *std::move(cq);
    c.cqe = cqe;
    c.has_channel = with_channel;
    c.lossy = overflow_rule_;
    cqs_.push_back(std::move(c));
  }

  int LiveQpsOn(int cq) const {
    int n = 0;
    for (const QpObj& q : qps_) n += !q.gone() && (q.scq == cq || q.rcq == cq);
    return n;
  }

  void DestroyCq() {
    if (cqs_.empty()) return;
    const int i = static_cast<int>(in_.Below(cqs_.size()));
    CheckedDestroyCq(i);
  }

  void CheckedDestroyCq(int i) {
    CqObj& c = cqs_[i];
    if (c.dropped) return;
    const int expected = c.destroyed ? EINVAL : LiveQpsOn(i) > 0 ? EBUSY : 0;
    const absl::Status s = c.h->Destroy();
    FUZZ_NOTE(absl::StrCat("destroy cq ", i, ": ", s.ToString()));
    ExpectErrno(s, expected, absl::StrCat("Cq::Destroy of cq ", i));
    if (s.ok()) {
      c.destroyed = true;
      c.lossy = true;  // whatever was still in it is gone
    }
  }

  // --- QPs ----------------------------------------------------------------------

  void CreateQp() {
    const int node = static_cast<int>(in_.Below(NumNodes()));
    const int pd = node * kPdsPerNode + static_cast<int>(in_.Below(kPdsPerNode));
    const uint8_t caps_mode = in_.U8();
    const uint8_t attr_mode = in_.U8();
    const uint8_t more = in_.U8();
    if (cqs_.empty() || qps_.size() >= kMaxQps) return;
    // The CQs: mostly of this node (another node's is refused).
    auto pick_cq = [&](uint8_t b) {
      std::vector<int> mine;
      for (int i = 0; i < static_cast<int>(cqs_.size()); ++i) {
        if (!cqs_[i].dropped && (cqs_[i].node == node || (b & 0x80))) {
          mine.push_back(i);
        }
      }
      return mine.empty() ? -1 : mine[b % mine.size()];
    };
    const int scq = pick_cq(in_.U8());
    const int rcq = pick_cq(in_.U8());
    if (scq < 0 || rcq < 0) return;

    QpInitAttr init;
    init.send_cq = cqs_[scq].h.get();
    init.recv_cq = cqs_[rcq].h.get();
    init.qp_type = QpType::kRc;
    init.sq_sig_all = (more & 1) != 0;
    static const uint32_t kWrs[] = {1, 4, 16, 64, 0, 2000000};
    static const uint32_t kSges[] = {1, 2, 4, 33};
    static const uint32_t kInline[] = {0, 64, 256, 300};
    init.cap.max_send_wr = kWrs[caps_mode % 6];
    init.cap.max_recv_wr = kWrs[(caps_mode >> 3) % 6];
    init.cap.max_send_sge = kSges[(more >> 1) % 4];
    init.cap.max_recv_sge = kSges[(more >> 3) % 4];
    init.cap.max_inline_data = kInline[(more >> 5) % 4];
    // Rare bad caps only when the byte says so, so most QPs are usable.
    if ((caps_mode & 0xc0) != 0xc0) {
      init.cap.max_send_wr = std::min<uint32_t>(init.cap.max_send_wr, 64);
      init.cap.max_recv_wr = std::min<uint32_t>(init.cap.max_recv_wr, 64);
      init.cap.max_send_sge = std::min<uint32_t>(init.cap.max_send_sge, 4);
      init.cap.max_recv_sge = std::min<uint32_t>(init.cap.max_recv_sge, 4);
      init.cap.max_inline_data = std::min<uint32_t>(init.cap.max_inline_data, 256);
    }
    int expected = 0;
    if (pds_[pd].destroyed || cqs_[scq].destroyed || cqs_[rcq].destroyed ||
        cqs_[scq].node != node || cqs_[rcq].node != node ||
        init.cap.max_send_wr > static_cast<uint32_t>(dev_.max_qp_wr) ||
        init.cap.max_recv_wr > static_cast<uint32_t>(dev_.max_qp_wr) ||
        init.cap.max_send_sge > static_cast<uint32_t>(dev_.max_sge) ||
        init.cap.max_recv_sge > static_cast<uint32_t>(dev_.max_sge) ||
        init.cap.max_inline_data > static_cast<uint32_t>(dev_.max_inline_data)) {
      expected = EINVAL;
    }
    auto qp = pds_[pd].h->CreateQp(init);
    FUZZ_NOTE(absl::StrCat("create qp node ", node, " pd ", pd, " scq ", scq,
                      " rcq ", rcq, " wr ", init.cap.max_send_wr, "/",
                      init.cap.max_recv_wr, " sge ", init.cap.max_send_sge, "/",
                      init.cap.max_recv_sge, " inline ",
                      init.cap.max_inline_data, ": ",
                      qp.ok() ? absl::StrCat("qp ", qps_.size(), " qpn ",
                                             (*qp)->qp_num())
                              : qp.status().ToString()));
    ExpectErrno(qp.status(), expected, "CreateQp");
    if (!qp.ok()) return;
    QpObj q;
    q.node = node;
    q.pd = pd;
    q.scq = scq;
    q.rcq = rcq;
    q.h = *std::move(qp);
    q.qpn = q.h->qp_num();
    // What the queues hold, as ibv_query_qp says: a profile may grant more
    // than was asked (rxe rounds the queues and sizes SGEs and inline data
    // from one WQE size).
    QpCap held = init.cap;
    if (absl::StatusOr<QpAttr> a = q.h->Query(); a.ok()) held = a->cap;
    q.caps.max_send_wr = held.max_send_wr;
    q.caps.max_recv_wr = held.max_recv_wr;
    q.caps.max_send_sge = held.max_send_sge;
    q.caps.max_recv_sge = held.max_recv_sge;
    q.caps.max_inline_data = held.max_inline_data;
    q.sq_sig_all = init.sq_sig_all;
    // Transport attributes for its connections.
    static const uint8_t kTimeouts[] = {1, 4, 8, 12, 14, 0};
    static const uint8_t kRnrTimers[] = {1, 4, 12};
    static const uint8_t kRnrRetry[] = {0, 1, 3, 7};
    static const Mtu kMtus[] = {Mtu::k256, Mtu::k1024, Mtu::k4096, Mtu::k512};
    static const uint32_t kPsns[] = {0, 0xfffff8, 100, 0x7fffff};
    q.attr.timeout = kTimeouts[attr_mode % 6];
    q.attr.retry_cnt = (attr_mode >> 3) % 8;
    q.attr.rnr_retry = kRnrRetry[(attr_mode >> 6) % 4];
    q.attr.min_rnr_timer = kRnrTimers[(more >> 2) % 3];
    q.attr.path_mtu = kMtus[(caps_mode >> 2) % 4];
    q.attr.max_rd_atomic = 1 + (attr_mode % 4);
    q.attr.max_dest_rd_atomic = 1 + ((attr_mode >> 2) % 4);
    q.attr.sq_psn = kPsns[(more >> 4) % 4];
    q.attr.qp_access = kAccessLocalWrite | kAccessRemoteWrite |
                       kAccessRemoteRead | kAccessRemoteAtomic;
    qps_.push_back(std::move(q));
  }

  // Whether something other than the program may have moved `q` to ERR.
  bool MayErrAsync(const QpObj& q) const {
    return forced_faults_ || cqs_[q.scq].lossy || cqs_[q.rcq].lossy ||
           q.user == QpState::kRtr || q.user == QpState::kRts ||
           q.user == QpState::kSqd;
  }

  // Reads the QP's state and checks it against the program's.
  QpState Sync(int i) {
    QpObj& q = qps_[i];
    const QpState actual = q.h->state();
    if (actual != q.user) {
      if (actual == QpState::kErr && MayErrAsync(q)) {
        q.user = QpState::kErr;
      } else {
        Violation(absl::StrCat("qp ", i, " (qpn ", q.qpn, ") is in ",
                               QpStateName(actual), ", expected ",
                               QpStateName(q.user)));
      }
    }
    return actual;
  }

  // One modify with the model's verdict; updates the program's state.
  void Modify(int i, QpState to, uint32_t mask, int peer) {
    QpObj& q = qps_[i];
    if (q.dropped) return;
    if (q.destroyed) {
      QpAttr a;
      a.qp_state = to;
      ExpectErrno(q.h->Modify(a, kQpState), EINVAL, "Modify of a destroyed QP");
      return;
    }
    const QpState from = Sync(i);
    const int expected = ModifyErrno(from, to, mask);
    absl::Status s;
    if (to == QpState::kInit && mask == InitMask()) {
      s = ModifyQpToInit(q.h.get(), q.attr);
    } else if (to == QpState::kRtr && mask == RtrMask()) {
      const QpObj& p = qps_[peer];
      s = ModifyQpToRtr(q.h.get(), q.attr, p.qpn, nodes_[p.node].gid,
                        p.attr.sq_psn);
    } else if (to == QpState::kRts && mask == RtsMask()) {
      s = ModifyQpToRts(q.h.get(), q.attr, q.attr.sq_psn);
    } else {
      QpAttr a;
      a.qp_state = to;
      a.qp_access_flags = q.attr.qp_access;
      s = q.h->Modify(a, mask);
    }
    FUZZ_NOTE(absl::StrCat("modify qp ", i, " ", QpStateName(from), " -> ",
                      QpStateName(to), " mask ", QpAttrMaskName(mask), ": ",
                      s.ToString()));
    ExpectErrno(s, expected,
                absl::StrCat("Modify qp ", i, " ", QpStateName(from), " -> ",
                             QpStateName(to), " mask ", QpAttrMaskName(mask)));
    if (!s.ok()) return;
    if (mask & kQpState) {
      if (to == QpState::kReset) ++q.epoch;  // queued WRs are discarded
      q.user = to;
    }
    if (to == QpState::kRtr && (mask & kQpAv)) q.peer_node = qps_[peer].node;
  }

  int PickQp() {
    if (qps_.empty()) return -1;
    return static_cast<int>(in_.Below(static_cast<uint32_t>(qps_.size())));
  }

  void Connect() {
    const int a = PickQp();
    const int b = PickQp();
    if (a < 0 || b < 0) return;
    // The rdma_cm dance: both to INIT, both to RTR naming each other, both
    // to RTS. A QP may be connected to itself (loopback).
    Modify(a, QpState::kInit, InitMask(), -1);
    if (b != a) Modify(b, QpState::kInit, InitMask(), -1);
    Modify(a, QpState::kRtr, RtrMask(), b);
    if (b != a) Modify(b, QpState::kRtr, RtrMask(), a);
    Modify(a, QpState::kRts, RtsMask(), -1);
    if (b != a) Modify(b, QpState::kRts, RtsMask(), -1);
  }

  void ModifyOp() {
    const int i = PickQp();
    const uint8_t what = in_.U8();
    const int peer = PickQp();
    if (i < 0) return;
    switch (what % 9) {
      case 0: Modify(i, QpState::kReset, kQpState, -1); break;
      case 1: Modify(i, QpState::kInit, InitMask(), -1); break;
      case 2: Modify(i, QpState::kRtr, RtrMask(), peer); break;
      case 3: Modify(i, QpState::kRts, RtsMask(), -1); break;
      case 4: Modify(i, QpState::kRts, kQpState, -1); break;  // RTS/SQD -> RTS
      case 5: Modify(i, QpState::kSqd, kQpState, -1); break;
      case 6: Modify(i, QpState::kErr, kQpState, -1); break;
      case 7: {  // the access flags alone (no state change)
        qps_[i].attr.qp_access = (what >> 4) & 0x0f;
        Modify(i, qps_[i].user, kQpAccessFlags, -1);
        break;
      }
      default:  // a mask the transition does not take
        Modify(i, QpState::kRtr, kQpState | kQpSqPsn, -1);
        break;
    }
  }

  void DestroyQp() {
    const int i = PickQp();
    if (i < 0) return;
    QpObj& q = qps_[i];
    if (q.dropped) return;
    const absl::Status s = q.h->Destroy();
    FUZZ_NOTE(absl::StrCat("destroy qp ", i, ": ", s.ToString()));
    ExpectErrno(s, q.destroyed ? EINVAL : 0, absl::StrCat("Qp::Destroy qp ", i));
    q.destroyed = true;
  }

  // --- MRs ----------------------------------------------------------------------

  void RegMrOp() {
    const int node = static_cast<int>(in_.Below(NumNodes()));
    const int pd = node * kPdsPerNode + static_cast<int>(in_.Below(kPdsPerNode));
    const size_t off = in_.U16() % kArena;
    const size_t len = std::min<size_t>(in_.U16() % (kArena + 1), kArena - off);
    uint32_t access = in_.U8() & 0x0f;
    if (access & (kAccessRemoteWrite | kAccessRemoteAtomic)) {
      access |= kAccessLocalWrite;
    }
    if (mrs_.size() >= kMaxMrs) return;
    // A destroyed PD, then an empty region where the profile registers none
    // (rxe); both are refused before an injected failure can fire.
    int expected = pds_[pd].destroyed                       ? EINVAL
                   : len == 0 && !rules_.zero_length_mr ? EINVAL
                                                            : 0;
    if (expected == 0) {
      ++registrations_;
      if (registrations_ == regfail_nth_) expected = ENOMEM;
    }
    auto mr = pds_[pd].h->RegMr(arenas_[node].data() + off, len, access);
    FUZZ_NOTE(absl::StrCat("reg mr node ", node, " pd ", pd, " [", off, ", +", len,
                      ") ", AccessFlagsName(access), ": ",
                      mr.ok() ? absl::StrCat("mr ", mrs_.size(), " lkey 0x",
                                             absl::Hex((*mr)->lkey()))
                              : mr.status().ToString()));
    ExpectErrno(mr.status(), expected, "RegMr");
    if (!mr.ok()) return;
    MrObj m;
    m.node = node;
    m.pd = pd;
    m.lkey = (*mr)->lkey();
    m.rkey = (*mr)->rkey();
    m.h = *std::move(mr);
    mrs_.push_back(std::move(m));
  }

  void DeregMrOp() {
    if (mrs_.empty()) return;
    MrObj& m = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
    if (m.h == nullptr) return;
    const absl::Status s = m.h->Destroy();
    ExpectErrno(s, m.live ? 0 : EINVAL, "Mr::Destroy");
    m.live = false;
  }

  // --- Posting ------------------------------------------------------------------

  // A key for an access on `node`: mostly an lkey/rkey of an MR there.
  uint32_t PickKey(int node, bool remote) {
    const uint8_t mode = in_.U8();
    std::vector<const MrObj*> here;
    for (const MrObj& m : mrs_) {
      if (m.node == node) here.push_back(&m);
    }
    if (here.empty() || mode >= 0xe0) return in_.U32();
    const MrObj& m = *here[mode % here.size()];
    return (mode & 0x40) ? (remote ? m.lkey : m.rkey) : (remote ? m.rkey : m.lkey);
  }

  uint32_t PickLength() {
    static const uint32_t kLens[] = {0, 1, 8, 64, 100, 1000, 1024, 3000};
    const uint8_t mode = in_.U8();
    return mode < 0xf0 ? kLens[mode % 8] : in_.U16() % 9000;
  }

  // The model's answer for one post call: a definite errno per WR (0 when
  // none) and whether the queue may be full at that WR.
  void CheckPost(const absl::Status& s, size_t bad_index, size_t n,
                 int whole_call_errno, const std::vector<int>& definite,
                 const std::vector<bool>& may_be_full, bool full_first,
                 const char* what, size_t* accepted) {
    const int got = ErrnoOf(s);
    if (whole_call_errno != 0) {
      if (got != whole_call_errno) {
        Violation(absl::StrCat(what, ": expected ",
                               ErrnoName(whole_call_errno), ", got ",
                               s.ToString()));
      }
      *accepted = 0;
      return;
    }
    size_t first_definite = n;
    for (size_t i = 0; i < n; ++i) {
      if (definite[i] != 0) {
        first_definite = i;
        break;
      }
    }
    if (s.ok()) {
      if (first_definite != n) {
        Violation(absl::StrCat(what, ": WR ", first_definite,
                               " must be refused with ",
                               ErrnoName(definite[first_definite]),
                               ", but the post succeeded"));
      }
      *accepted = n;
      return;
    }
    const bool definite_here =
        bad_index == first_definite && got == definite[first_definite];
    const bool full_here = bad_index <= first_definite && bad_index < n &&
                           got == ENOMEM && may_be_full[bad_index] &&
                           (bad_index < first_definite ||
                            definite[bad_index] == 0 || full_first);
    if (!definite_here && !full_here) {
      Violation(absl::StrCat(
          what, ": refused WR ", bad_index, " with ", s.ToString(),
          first_definite == n
              ? std::string("; the model accepts every WR")
              : absl::StrCat("; the model refuses WR ", first_definite,
                             " with ", ErrnoName(definite[first_definite]))));
    }
    *accepted = bad_index;
  }

  // postfail: whether this post call is the one that must fail.
  bool PostFailDue(bool /*is_send*/) {
    ++posts_;
    return postfail_nth_ != 0 && posts_ == postfail_nth_;
  }

  // Records a posted WR and checks its CQ's room.
  void Track(uint64_t wr_id, int qp, bool recv, bool signaled, WrOpcode op) {
    QpObj& q = qps_[qp];
    Rec r;
    r.qp = qp;
    r.recv = recv;
    r.epoch = q.epoch;
    r.signaled = signaled;
    r.op = op;
    r.cq = recv ? q.rcq : q.scq;
    CqObj& c = cqs_[r.cq];
    if (c.pending + 1 > c.cqe) c.lossy = true;  // it may overrun
    ++c.pending;
    if (recs_.size() + 1 != wr_id) Violation("harness: wr_id out of step");
    recs_.push_back(r);
    queues_[qp][recv ? 1 : 0].order.push_back(wr_id);
  }

  size_t Outstanding(int qp, bool recv) const {
    size_t n = 0;
    for (uint64_t id : queues_[qp][recv ? 1 : 0].order) {
      n += recs_[id - 1].epoch == qps_[qp].epoch;
    }
    return n;
  }

  void PostSendOp() {
    const int i = PickQp();
    const size_t n = 1 + in_.Below(3);
    if (i < 0) return;
    QpObj& q = qps_[i];
    if (q.dropped) return;
    const int peer_node = q.peer_node >= 0 ? q.peer_node : q.node;
    std::vector<SendWr> wrs(n);
    std::vector<std::vector<Sge>> sges(n);
    static const WrOpcode kOps[] = {
        WrOpcode::kSend,          WrOpcode::kSendWithImm,
        WrOpcode::kRdmaWrite,     WrOpcode::kRdmaWriteWithImm,
        WrOpcode::kRdmaRead,      WrOpcode::kAtomicCmpAndSwp,
        WrOpcode::kAtomicFetchAndAdd, WrOpcode::kSendWithInv,
        WrOpcode::kLocalInv,      WrOpcode::kBindMw,
        static_cast<WrOpcode>(12),    WrOpcode::kRdmaWrite};
    for (size_t k = 0; k < n; ++k) {
      SendWr& w = wrs[k];
      w.wr_id = next_wr_id_ + k;
      w.opcode = kOps[in_.Below(12)];
      const uint8_t flags = in_.U8();
      w.send_flags = flags & (kSendFence | kSendSignaled | kSendSolicited);
      if ((flags & 0x30) == 0x30) w.send_flags |= kSendInline;
      if (flags == 0xff) w.send_flags |= 0x100;  // an unknown flag
      const bool atomic = w.opcode == WrOpcode::kAtomicCmpAndSwp ||
                          w.opcode == WrOpcode::kAtomicFetchAndAdd;
      const uint8_t nsge_mode = in_.U8();
      size_t nsge = atomic ? 1 : nsge_mode % 3;
      if (nsge_mode >= 0xf8) nsge = 5;  // more than most QPs take
      for (size_t g = 0; g < nsge; ++g) {
        const uint32_t key = PickKey(q.node, false);
        uint32_t len = atomic && nsge_mode < 0xf0 ? 8 : PickLength();
        len = std::min<uint32_t>(len, kArena);
        const size_t off = in_.U16() % (kArena - len + 1);
        sges[k].push_back(
            Sge{reinterpret_cast<uint64_t>(arenas_[q.node].data() + off), len,
                key});
      }
      w.sg_list = absl::MakeConstSpan(sges[k]);
      const uint32_t rkey = PickKey(peer_node, true);
      size_t roff = in_.U16() % (kArena - 8);
      if (atomic && (in_.U8() & 7) != 0) roff &= ~size_t{7};
      // A remote range inside the peer's arena for the message's length.
      uint64_t total = 0;
      for (const Sge& s : sges[k]) total += s.length;
      roff = std::min<uint64_t>(roff, kArena - std::min<uint64_t>(total, kArena));
      const uint64_t raddr =
          reinterpret_cast<uint64_t>(arenas_[peer_node].data() + roff);
      const uint64_t operand = in_.U64();
      if (atomic) {
        w.atomic.remote_addr = raddr;
        w.atomic.rkey = rkey;
        w.atomic.compare_add = operand;
        w.atomic.swap = ~operand;
      } else {
        w.rdma.remote_addr = raddr;
        w.rdma.rkey = rkey;
      }
      w.imm_data = static_cast<uint32_t>(operand);
      w.invalidate_rkey = rkey;
    }
    // The model.
    int whole = 0;
    if (PostFailDue(/*is_send=*/true)) {
      whole = ENOMEM;
    } else if (q.destroyed) {
      whole = EINVAL;
    } else if (SendQueueClosed(Sync(i))) {
      whole = EINVAL;
    }
    std::vector<int> definite(n);
    std::vector<bool> may_full(n);
    const size_t out = q.destroyed ? 0 : Outstanding(i, false);
    for (size_t k = 0; k < n; ++k) {
      definite[k] = SendWrErrno(wrs[k], q.caps, rules_.post_send);
      may_full[k] = out + k >= q.caps.max_send_wr;
    }
    size_t bad_index = 0;
    const absl::Status s = q.h->PostSend(wrs, &bad_index);
    std::string desc;
    for (const SendWr& w : wrs) {
      absl::StrAppend(&desc, " [", w.wr_id, " ", WrOpcodeName(w.opcode),
                      " flags 0x", absl::Hex(w.send_flags), " sges ",
                      w.sg_list.size(), "]");
    }
    FUZZ_NOTE(absl::StrCat("post send qp ", i, desc, ": ", s.ToString(),
                      s.ok() ? "" : absl::StrCat(" bad_index ", bad_index)));
    size_t accepted = 0;
    // A send WR is checked before the queue's room (rxe post_one_send);
    // a receive after it (rxe_post_one_recv): a full receive queue answers
    // ENOMEM even for a WR with too many SGEs.
    CheckPost(s, bad_index, n, whole, definite, may_full, false, "PostSend",
              &accepted);
    for (size_t k = 0; k < accepted; ++k) {
      const bool signaled =
          q.sq_sig_all || (wrs[k].send_flags & kSendSignaled) != 0;
      Track(next_wr_id_++, i, false, signaled, wrs[k].opcode);
    }
    next_wr_id_ = recs_.size() + 1;
  }

  void PostRecvOp() {
    const int i = PickQp();
    const size_t n = 1 + in_.Below(2);
    if (i < 0) return;
    QpObj& q = qps_[i];
    if (q.dropped) return;
    std::vector<RecvWr> wrs(n);
    std::vector<std::vector<Sge>> sges(n);
    for (size_t k = 0; k < n; ++k) {
      const uint8_t nsge_mode = in_.U8();
      const size_t nsge = nsge_mode >= 0xf8 ? 5 : nsge_mode % 3;
      for (size_t g = 0; g < nsge; ++g) {
        const uint32_t key = PickKey(q.node, false);
        const uint32_t len = std::min<uint32_t>(PickLength(), kArena);
        const size_t off = in_.U16() % (kArena - len + 1);
        sges[k].push_back(
            Sge{reinterpret_cast<uint64_t>(arenas_[q.node].data() + off), len,
                key});
      }
      wrs[k].wr_id = next_wr_id_ + k;
      wrs[k].sg_list = absl::MakeConstSpan(sges[k]);
    }
    int whole = 0;
    if (PostFailDue(/*is_send=*/false)) {
      whole = ENOMEM;
    } else if (q.destroyed) {
      whole = EINVAL;
    } else if (RecvQueueClosed(Sync(i))) {
      whole = EINVAL;
    }
    std::vector<int> definite(n);
    std::vector<bool> may_full(n);
    const size_t out = q.destroyed ? 0 : Outstanding(i, true);
    for (size_t k = 0; k < n; ++k) {
      definite[k] = wrs[k].sg_list.size() > q.caps.max_recv_sge ? EINVAL : 0;
      may_full[k] = out + k >= q.caps.max_recv_wr;
    }
    size_t bad_index = 0;
    const absl::Status s = q.h->PostRecv(wrs, &bad_index);
    FUZZ_NOTE(absl::StrCat("post recv qp ", i, " x", n, " (wr_id ", next_wr_id_,
                      "..): ", s.ToString()));
    size_t accepted = 0;
    CheckPost(s, bad_index, n, whole, definite, may_full, true, "PostRecv",
              &accepted);
    const bool unflushed = accepted > 0 && !rules_.flushes_recv_posted_in_err &&
                           q.h->state() == QpState::kErr;
    for (size_t k = 0; k < accepted; ++k) {
      Track(next_wr_id_++, i, true, true, WrOpcode::kSend);
      recs_.back().unflushed = unflushed;
    }
    next_wr_id_ = recs_.size() + 1;
  }

  // --- Completions --------------------------------------------------------------

  bool Lenient(const Rec& r) const {
    const QpObj& q = qps_[r.qp];
    return q.gone() || r.epoch != q.epoch || cqs_[r.cq].lossy || r.unflushed;
  }

  void Retire(Rec& r) {
    r.done = true;
    --cqs_[r.cq].pending;
  }

  void OnCompletion(int cq, const WorkCompletion& wc) {
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

  // Returns how many completions it got.
  int PollCq(int i, int max) {
    CqObj& c = cqs_[i];
    if (c.dropped) return 0;
    std::vector<WorkCompletion> wcs(max);
    auto n = c.h->Poll(absl::MakeSpan(wcs));
    if (c.destroyed) {
      ExpectErrno(n.status(), EINVAL, "Poll of a destroyed CQ");
      return 0;
    }
    ExpectErrno(n.status(), 0, "Poll");
    for (int k = 0; k < *n; ++k) {
      FUZZ_NOTE(absl::StrCat("  cq ", i, ": ", WcString(wcs[k])));
      OnCompletion(i, wcs[k]);
    }
    return *n;
  }

  void PollOp() {
    if (cqs_.empty()) return;
    const int i = static_cast<int>(in_.Below(cqs_.size()));
    const int max = 1 + static_cast<int>(in_.Below(16));
    PollCq(i, max);
  }

  void RunOp() {
    static const int64_t kUs[] = {0, 1, 5, 20, 100, 1000};
    const int64_t us = kUs[in_.Below(6)];
    FUZZ_NOTE(absl::StrCat("run ", us, "us"));
    fabric_->RunFor(absl::Microseconds(us));
  }

  void NotifyOp() {
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

  void DrainAsyncEvents(int n) {
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

  // --- Faults -------------------------------------------------------------------

  std::string QpnFor(int node) {
    std::vector<uint32_t> here;
    for (const QpObj& q : qps_) {
      if (q.node == node) here.push_back(q.qpn);
    }
    const uint8_t b = in_.U8();
    if (here.empty() || b >= 0xf0) return absl::StrCat(17 + b);
    return absl::StrCat(here[b % here.size()]);
  }

  void FaultOp() {
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
    switch (kind % 12) {
      case 0:
      case 1:
      case 2: {
        rule = absl::StrCat(kActions[in_.Below(4)], " prob=",
                            kProbs[in_.Below(6)]);
        if (in_.Bool()) absl::StrAppend(&rule, " op=", kOps[in_.Below(16)]);
        break;
      }
      case 3:
        rule = absl::StrCat(kActions[in_.Below(4)], " op=", kOps[in_.Below(16)],
                            " nth=", 1 + in_.Below(4));
        break;
      case 4:
        rule = absl::StrCat("delay us=", 1 + in_.Below(200), " prob=",
                            kProbs[in_.Below(6)]);
        break;
      case 5: {
        const int a = static_cast<int>(in_.Below(NumNodes()));
        const int b = static_cast<int>(in_.Below(NumNodes()));
        const int64_t from = now_us + in_.Below(50);
        rule = absl::StrCat("linkdown a=", a, " b=", b, " from_us=", from,
                            " until_us=", from + 1 + in_.Below(2000));
        break;
      }
      case 6:
        rule = absl::StrCat("crash node=", in_.Below(NumNodes()),
                            " at_us=", now_us + in_.Below(100));
        forced = true;
        break;
      case 7: {
        const int node = static_cast<int>(in_.Below(NumNodes()));
        rule = absl::StrCat("qperr node=", node, " qp=", QpnFor(node),
                            " at_us=", now_us + in_.Below(100));
        forced = true;
        break;
      }
      case 8: {
        const int node = static_cast<int>(in_.Below(NumNodes()));
        rule = absl::StrCat("cqoverflow node=", node, " qp=", QpnFor(node),
                            in_.Bool() ? " cq=recv" : "",
                            " at_us=", now_us + in_.Below(100));
        forced = true;
        break;
      }
      case 9: {
        const uint64_t nth = registrations_ + 1 + in_.Below(4);
        rule = absl::StrCat("regfail nth=", nth);
        regfail_pending_ = nth;
        break;
      }
      case 10: {
        const uint64_t nth = posts_ + 1 + in_.Below(6);
        rule = absl::StrCat("postfail nth=", nth);
        postfail_pending_ = nth;
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
    ExpectErrno(s, expected, absl::StrCat("AddFaults(\"", rule, "\")"));
    if (s.ok()) {
      if (forced) forced_faults_ = true;
      if (kind % 12 == 8) {
        // The overflow rule hits the CQ of whichever QP has that number
        // when it fires, perhaps one made later: every CQ may overrun.
        overflow_rule_ = true;
        for (CqObj& c : cqs_) c.lossy = true;
      }
      if (regfail_pending_ != 0) regfail_nth_ = regfail_pending_;
      if (postfail_pending_ != 0) postfail_nth_ = postfail_pending_;
    }
    regfail_pending_ = postfail_pending_ = 0;
  }

  // --- Dropping handles while in use --------------------------------------------

  void DropHandleOp() {
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

  // --- The end ------------------------------------------------------------------

  void Finish() {
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
    Teardown();
  }

  // Checked destroys in an order from the input (twice over, so what was
  // busy the first time may go the second), then every handle dropped in
  // another order, the provider among them.
  void Teardown() {
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
  std::vector<Rec> recs_;
  QueueTrack queues_[kMaxQps][2];
  uint64_t next_wr_id_ = 1;
  uint64_t registrations_ = 0;
  uint64_t regfail_nth_ = 0;
  uint64_t regfail_pending_ = 0;
  uint64_t posts_ = 0;
  uint64_t postfail_nth_ = 0;
  uint64_t postfail_pending_ = 0;
  bool forced_faults_ = false;
  bool overflow_rule_ = false;  // a cqoverflow rule was added
};

}  // namespace
}  // namespace verbsim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  verbsim::fuzz::ResetNotes();
  verbsim::fuzz::ByteReader in(data, size);
  {
    verbsim::fuzz::SequenceHarness harness(in);
    harness.Run();
  }
  return 0;
}
