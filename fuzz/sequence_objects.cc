// The sequence harness's objects (sequence_harness.h): CQs created (any
// cqe, with or without the node's channel) and destroyed, QPs created with
// any caps and transport attributes, moved through their states (the
// rdma_cm connection, RESET, SQD, ERR, access flags, masks a transition
// does not take) with the model's verdict on each modify, and destroyed;
// MRs registered and deregistered. Every Status is the model's.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/names.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/sequence_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::seq_harness {

// --- CQs --------------------------------------------------------------------

void SequenceHarness::CreateCq() {
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
  FUZZ_EXPECT_ERRNO(cq.status(), expected, "CreateCq(", cqe, ")");
  if (!cq.ok()) return;
  CqObj c;
  c.node = node;
  c.h = *std::move(cq);
  c.cqe = cqe;
  c.has_channel = with_channel;
  c.lossy = overflow_rule_;
  cqs_.push_back(std::move(c));
}

int SequenceHarness::LiveQpsOn(int cq) const {
  int n = 0;
  for (const QpObj& q : qps_) n += !q.gone() && (q.scq == cq || q.rcq == cq);
  return n;
}

void SequenceHarness::DestroyCq() {
  if (cqs_.empty()) return;
  const int i = static_cast<int>(in_.Below(cqs_.size()));
  CheckedDestroyCq(i);
}

void SequenceHarness::CheckedDestroyCq(int i) {
  CqObj& c = cqs_[i];
  if (c.dropped) return;
  const int expected = c.destroyed ? EINVAL : LiveQpsOn(i) > 0 ? EBUSY : 0;
  const absl::Status s = c.h->Destroy();
  FUZZ_NOTE(absl::StrCat("destroy cq ", i, ": ", s.ToString()));
  FUZZ_EXPECT_ERRNO(s, expected, "Cq::Destroy of cq ", i);
  if (s.ok()) {
    c.destroyed = true;
    c.lossy = true;  // whatever was still in it is gone
  }
}

// --- QPs --------------------------------------------------------------------

void SequenceHarness::CreateQp() {
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
  q.attr.qp_access = kFullAccess;
  qps_.push_back(std::move(q));
}

// Whether something other than the program may have moved `q` to ERR.
bool SequenceHarness::MayErrAsync(const QpObj& q) const {
  return forced_faults_ || cqs_[q.scq].lossy || cqs_[q.rcq].lossy ||
         q.user == QpState::kRtr || q.user == QpState::kRts ||
         q.user == QpState::kSqd;
}

// Reads the QP's state and checks it against the program's.
QpState SequenceHarness::Sync(int i) {
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
void SequenceHarness::Modify(int i, QpState to, uint32_t mask, int peer) {
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
  FUZZ_EXPECT_ERRNO(s, expected, "Modify qp ", i, " ", QpStateName(from),
                    " -> ", QpStateName(to), " mask ", QpAttrMaskName(mask));
  if (!s.ok()) return;
  if (mask & kQpState) {
    if (to == QpState::kReset) ++q.epoch;  // queued WRs are discarded
    q.user = to;
  }
  if (to == QpState::kRtr && (mask & kQpAv)) q.peer_node = qps_[peer].node;
}

int SequenceHarness::PickQp() {
  if (qps_.empty()) return -1;
  return static_cast<int>(in_.Below(static_cast<uint32_t>(qps_.size())));
}

void SequenceHarness::Connect() {
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

void SequenceHarness::ModifyOp() {
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

void SequenceHarness::DestroyQp() {
  const int i = PickQp();
  if (i < 0) return;
  QpObj& q = qps_[i];
  if (q.dropped) return;
  const absl::Status s = q.h->Destroy();
  FUZZ_NOTE(absl::StrCat("destroy qp ", i, ": ", s.ToString()));
  FUZZ_EXPECT_ERRNO(s, q.destroyed ? EINVAL : 0, "Qp::Destroy qp ", i);
  q.destroyed = true;
}

// --- MRs --------------------------------------------------------------------

void SequenceHarness::RegMrOp() {
  const int node = static_cast<int>(in_.Below(NumNodes()));
  const int pd = node * kPdsPerNode + static_cast<int>(in_.Below(kPdsPerNode));
  const size_t off = in_.U16() % kArena;
  const size_t len = std::min<size_t>(in_.U16() % (kArena + 1), kArena - off);
  const uint32_t access = WithLocalWriteForRemote(in_.U8() & 0x0f);
  if (mrs_.size() >= kMaxMrs) return;
  // A destroyed PD, then an empty region where the profile registers none
  // there; both are refused before an injected failure can fire.
  const uint64_t addr = reinterpret_cast<uint64_t>(arenas_[node].data() + off);
  int expected = pds_[pd].destroyed                                  ? EINVAL
                 : len == 0 && !EmptyMrRegisters(rules_, addr) ? EINVAL
                                                               : 0;
  if (expected == 0 && registrations_.Count()) expected = ENOMEM;
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

void SequenceHarness::DeregMrOp() {
  if (mrs_.empty()) return;
  MrObj& m = mrs_[in_.Below(static_cast<uint32_t>(mrs_.size()))];
  if (m.h == nullptr) return;
  const absl::Status s = m.h->Destroy();
  ExpectErrno(s, m.live ? 0 : EINVAL, "Mr::Destroy");
  m.live = false;
}

}  // namespace verbsim::fuzz::seq_harness
