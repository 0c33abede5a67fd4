// The sequence harness's posts (sequence_harness.h): one to three send WRs
// of every opcode (inline, fenced, unsignaled, an unknown flag, too many
// SGEs, good and bad keys, remote ranges in the peer's arena) or one or two
// receives in one call on any QP, each call checked against the model: the
// errno of the whole call, the first WR it must refuse, a full queue only
// where the queue may be full. The accepted WRs go to the completion
// tracker.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/errors.h"
#include "core/names.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/sequence_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::seq_harness {

// A key for an access on `node`: mostly an lkey/rkey of an MR there.
uint32_t SequenceHarness::PickKey(int node, bool remote) {
  const uint8_t mode = in_.U8();
  // The (mode % count)-th MR of the node, counted without a list of them
  // (a post picks several keys, and each list was an allocation).
  size_t here = 0;
  for (const MrObj& m : mrs_) here += m.node == node;
  if (here == 0 || mode >= 0xe0) return in_.U32();
  size_t pick = mode % here;
  const MrObj* chosen = nullptr;
  for (const MrObj& m : mrs_) {
    if (m.node == node && pick-- == 0) {
      chosen = &m;
      break;
    }
  }
  const MrObj& m = *chosen;
  return (mode & 0x40) ? (remote ? m.lkey : m.rkey) : (remote ? m.rkey : m.lkey);
}

uint32_t SequenceHarness::PickLength() {
  static const uint32_t kLens[] = {0, 1, 8, 64, 100, 1000, 1024, 3000};
  const uint8_t mode = in_.U8();
  return mode < 0xf0 ? kLens[mode % 8] : in_.U16() % 9000;
}

// A local SGE in `node`'s arena with a key picked for it: 8 bytes long
// with `eight_bytes` (an atomic's), else of a length picked too.
Sge SequenceHarness::PickSge(int node, bool eight_bytes) {
  const uint32_t key = PickKey(node, false);
  const uint32_t len =
      std::min<uint32_t>(eight_bytes ? 8 : PickLength(), kArena);
  const size_t off = in_.U16() % (kArena - len + 1);
  return Sge{reinterpret_cast<uint64_t>(arenas_[node].data() + off), len,
             key};
}

// The errno a post call on QP `i` fails with as a whole, before any WR is
// looked at (0: none): the one a `postfail` rule fails (this call counts
// for it), one on a destroyed QP, one on a queue its state keeps closed.
int SequenceHarness::PostCallErrno(int i, bool recv) {
  if (posts_.Count()) return ENOMEM;
  if (qps_[i].destroyed) return EINVAL;
  const QpState state = Sync(i);
  return (recv ? RecvQueueClosed(state) : SendQueueClosed(state)) ? EINVAL
                                                                  : 0;
}

// The model's answer for one post call: a definite errno per WR (0 when
// none) and whether the queue may be full at that WR.
void SequenceHarness::CheckPost(const absl::Status& s, size_t bad_index,
                                size_t n, int whole_call_errno,
                                absl::Span<const int> definite,
                                absl::Span<const bool> may_be_full,
                                bool full_first, const char* what,
                                size_t* accepted) {
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

void SequenceHarness::PostSendOp() {
  const int i = PickQp();
  const size_t n = 1 + in_.Below(3);
  if (i < 0) return;
  QpObj& q = qps_[i];
  if (q.dropped) return;
  const int peer_node = q.peer_node >= 0 ? q.peer_node : q.node;
  // At most 3 WRs of at most 5 SGEs: all on the stack.
  absl::InlinedVector<SendWr, 3> wrs(n);
  absl::InlinedVector<Sge, 5> sges[3];
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
      sges[k].push_back(PickSge(q.node, atomic && nsge_mode < 0xf0));
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
    SetRemoteTarget(w, raddr, rkey);
    if (atomic) {
      w.atomic.compare_add = operand;
      w.atomic.swap = ~operand;
    }
    w.imm_data = static_cast<uint32_t>(operand);
    w.invalidate_rkey = rkey;
  }
  // The model.
  const int whole = PostCallErrno(i, /*recv=*/false);
  int definite[3] = {};
  bool may_full[3] = {};
  const size_t out = q.destroyed ? 0 : tracker_.Outstanding(i, false);
  for (size_t k = 0; k < n; ++k) {
    definite[k] = SendWrErrno(wrs[k], q.caps, rules_.post_send);
    may_full[k] = out + k >= q.caps.max_send_wr;
  }
  size_t bad_index = 0;
  const absl::Status s = q.h->PostSend(wrs, &bad_index);
  if (Verbose()) {
    std::string desc;
    for (const SendWr& w : wrs) {
      absl::StrAppend(&desc, " [", w.wr_id, " ", WrOpcodeName(w.opcode),
                      " flags 0x", absl::Hex(w.send_flags), " sges ",
                      w.sg_list.size(), "]");
    }
    Note(absl::StrCat("post send qp ", i, desc, ": ", s.ToString(),
                      s.ok() ? "" : absl::StrCat(" bad_index ", bad_index)));
  }
  size_t accepted = 0;
  const bool kept_before_rts = whole == EINVAL && !q.destroyed &&
                               rules_.post_send.keeps_wrs_posted_before_rts &&
                               SendQueueClosed(Sync(i));
  if (kept_before_rts) {
    // EINVAL whatever the WRs were; those before the first bad or the
    // first without a slot are in the queue (PostSendRules). Nothing
    // completes before RTS, so the room is known exactly.
    size_t kept = 0;
    while (kept < n && definite[kept] == 0 && !may_full[kept]) ++kept;
    if (ErrnoOf(s) != EINVAL || bad_index != kept) {
      Violation(absl::StrCat("PostSend before RTS: expected EINVAL with ",
                             kept, " WRs kept, got ", s.ToString(),
                             " bad_index ", bad_index));
    }
    accepted = kept;
  } else {
    // A send WR is checked before the queue's room (rxe post_one_send);
    // a receive after it (rxe_post_one_recv): a full receive queue
    // answers ENOMEM even for a WR with too many SGEs.
    CheckPost(s, bad_index, n, whole, absl::MakeConstSpan(definite, n),
              absl::MakeConstSpan(may_full, n), false, "PostSend", &accepted);
  }
  for (size_t k = 0; k < accepted; ++k) {
    const bool signaled =
        q.sq_sig_all || (wrs[k].send_flags & kSendSignaled) != 0;
    // A WR kept before RTS goes only if the QP reaches RTS and is posted
    // to again, or is flushed: it may never complete.
    tracker_.Track(next_wr_id_++, i, false, signaled, wrs[k].opcode,
                   /*unflushed=*/kept_before_rts);
  }
  next_wr_id_ = tracker_.size() + 1;
}

void SequenceHarness::PostRecvOp() {
  const int i = PickQp();
  const size_t n = 1 + in_.Below(2);
  if (i < 0) return;
  QpObj& q = qps_[i];
  if (q.dropped) return;
  // At most 2 WRs of at most 5 SGEs: all on the stack.
  absl::InlinedVector<RecvWr, 2> wrs(n);
  absl::InlinedVector<Sge, 5> sges[2];
  for (size_t k = 0; k < n; ++k) {
    const uint8_t nsge_mode = in_.U8();
    const size_t nsge = nsge_mode >= 0xf8 ? 5 : nsge_mode % 3;
    for (size_t g = 0; g < nsge; ++g) {
      sges[k].push_back(PickSge(q.node, false));
    }
    wrs[k].wr_id = next_wr_id_ + k;
    wrs[k].sg_list = absl::MakeConstSpan(sges[k]);
  }
  const int whole = PostCallErrno(i, /*recv=*/true);
  int definite[2] = {};
  bool may_full[2] = {};
  const size_t out = q.destroyed ? 0 : tracker_.Outstanding(i, true);
  for (size_t k = 0; k < n; ++k) {
    definite[k] = wrs[k].sg_list.size() > q.caps.max_recv_sge ? EINVAL : 0;
    may_full[k] = out + k >= q.caps.max_recv_wr;
  }
  size_t bad_index = 0;
  const absl::Status s = q.h->PostRecv(wrs, &bad_index);
  FUZZ_NOTE(absl::StrCat("post recv qp ", i, " x", n, " (wr_id ", next_wr_id_,
                    "..): ", s.ToString()));
  size_t accepted = 0;
  CheckPost(s, bad_index, n, whole, absl::MakeConstSpan(definite, n),
            absl::MakeConstSpan(may_full, n), true, "PostRecv", &accepted);
  const bool unflushed = accepted > 0 && !rules_.flushes_recv_posted_in_err &&
                         q.h->state() == QpState::kErr;
  for (size_t k = 0; k < accepted; ++k) {
    tracker_.Track(next_wr_id_++, i, true, true, WrOpcode::kSend, unflushed);
  }
  next_wr_id_ = tracker_.size() + 1;
}

}  // namespace verbsim::fuzz::seq_harness
