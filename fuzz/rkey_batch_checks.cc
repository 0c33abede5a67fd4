// What the rkey harness expects of a batch (rkey_harness.h) and the checks
// after it runs: the model's verdict on each accepted WR in order (flushes
// after an error, receives consumed, windows invalidated), its effects on
// the shadows of the target, the client's buffers and the receive buffers,
// the completions on all four CQs, the memory, and both QP states.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/names.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/rkey_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::rkey_harness {

BatchExpectation RkeyHarness::ModelBatch(const std::vector<BatchWr>& wrs,
                                         size_t accepted) {
  BatchExpectation e;
  e.touches.resize(accepted);
  // At most one send completion a WR: one block, not one per doubling.
  e.want_send.reserve(accepted);
  for (size_t i = 0; i < accepted; ++i) {
    const BatchWr& b = wrs[i];
    const WcOpcode op = WcOpcodeOf(b.wr.opcode);
    if (e.requester_error) {
      e.want_send.push_back(
          {b.wr.wr_id, {WcStatus::kWrFlushErr}, op, 0, false, 0});
      continue;
    }
    if (e.responder_error) {
      // The responder went to ERR without NAKing the requester (rxe's
      // failed SEND_WITH_INV): it drops what arrives, so this WR's
      // retries run out and the rest are flushed; unless this WR is fenced
      // and its retry waits for READs that wait for it.
      if (RetryStalls(wrs, i, accepted)) {
        FUZZ_NOTE(absl::StrCat("  model: wr ", b.wr.wr_id,
                               " -> its retry stalls behind READ credits;"
                               " nothing more completes"));
        e.requester_stalled = true;
        break;
      }
      e.want_send.push_back(
          {b.wr.wr_id, {WcStatus::kRetryExcErr}, op, 0, false, 0});
      e.requester_error = true;
      continue;
    }
    RemoteRequest req;
    req.kind = b.kind;
    const bool atomic = IsAtomic(b.kind);
    req.addr = atomic ? b.wr.atomic.remote_addr : b.wr.rdma.remote_addr;
    req.rkey = atomic ? b.wr.atomic.rkey : b.wr.rdma.rkey;
    req.length = b.length;
    req.path_mtu = path_mtu_;
    PostedRecv recv;
    const bool have_recv = !rq_.empty();
    if (have_recv) recv = rq_.front();
    req.recv_capacity = recv.capacity;
    ResponderView rv{1, kServerPd, server_access_, kServerQp};
    RemoteOutcome out = PredictRemote(req, rv, keys_, rules_);
    if ((b.wr.send_flags & kSendInline) &&
        ((b.kind == RemoteKind::kRead && b.length > 0) || atomic) &&
        !rules_.post_send.inline_needs_send_or_write &&
        out.requester.IsSuccessOnly()) {
      // rxe: an inline READ or atomic is posted with its SGE list replaced
      // by the inline bytes, so a response with bytes has nowhere to land
      // (rxe_comp.c): the responder executed it, the requester fails it.
      // A zero-length READ places nothing and succeeds.
      out.requester = rules_.bad_lkey;
    }
    if (out.consumes_recv) {
      if (!have_recv) Violation("harness: no receive for a consuming WR");
      rq_.pop_front();
      free_slices_.push_back(recv.slice);
      e.want_recv.push_back({recv.wr_id, out.receiver,
                             b.kind == RemoteKind::kWriteImm
                                 ? WcOpcode::kRecvRdmaWithImm
                                 : WcOpcode::kRecv,
                             static_cast<uint32_t>(b.length),
                             b.kind == RemoteKind::kWriteImm, b.wr.imm_data,
                             out.invalidates >= 0 && rules_.reports_with_inv,
                             req.rkey});
      if (out.invalidates >= 0) {
        // Delivered: the payload is in the receive buffer, and the
        // window is dead from here on.
        const std::vector<uint8_t> msg = Message(b);
        if (!msg.empty()) {
          std::memcpy(recv_->shadow().data() + recv.slice * kSliceSize,
                      msg.data(), msg.size());
        }
        keys_.Invalidate(out.invalidates);
      } else if (b.kind == RemoteKind::kSendInv) {
        // The payload may land before the invalidation fails: the
        // receive buffer's content is undefined after an error.
        e.undefined_recv.push_back({recv.slice * kSliceSize, recv.capacity});
      }
    }
    FUZZ_NOTE(absl::StrCat("  model: wr ", b.wr.wr_id, " -> ",
                      out.requester.ToString(),
                      out.consumes_recv
                          ? absl::StrCat(", recv ", recv.wr_id, " -> ",
                                         out.receiver.ToString())
                          : "",
                      out.responder_error ? ", responder to ERR" : ""));
    if (out.executes) Apply(b, req);
    e.touches[i] = Touch{out.executes && b.kind == RemoteKind::kRead,
                         out.executes && b.kind != RemoteKind::kRead &&
                             b.kind != RemoteKind::kSendInv,
                         (b.wr.send_flags & kSendFence) != 0, req.addr,
                         req.length};
    if (!out.requester.IsSuccessOnly() || b.signaled) {
      e.want_send.push_back({b.wr.wr_id, out.requester, op,
                             static_cast<uint32_t>(b.length), false, 0});
    }
    if (!out.requester.IsSuccessOnly()) {
      e.requester_error = true;
      // The local buffer of a failed read or atomic is undefined.
      if (b.kind == RemoteKind::kRead || atomic) AcceptLocalSges(b);
    }
    if (out.responder_error) {
      e.responder_error = true;
      FlushPostedRecvs(&e.want_recv);
    }
  }
  return e;
}

bool RkeyHarness::RetryStalls(const std::vector<BatchWr>& wrs, size_t first,
                              size_t accepted) const {
  if (!rules_.fence_waits_for_later_reads_on_retry ||
      !(wrs[first].wr.send_flags & kSendFence)) {
    return false;
  }
  // The WRs sent before the retry timer fires: every earlier READ and
  // atomic has its response by then, so from `first` on they go out in
  // order until a fenced one finds a READ or atomic in flight or the
  // initiator depth is used up. The harness's local SGEs are always valid,
  // so none fails at transmit.
  size_t in_flight = 0;
  for (size_t j = first; j < accepted; ++j) {
    if ((wrs[j].wr.send_flags & kSendFence) && in_flight > 0) break;
    const bool rd_atomic =
        wrs[j].kind == RemoteKind::kRead || IsAtomic(wrs[j].kind);
    if (!rd_atomic) continue;
    if (in_flight == pair_->client_attr.max_rd_atomic) break;
    ++in_flight;
  }
  return in_flight > 0;
}

void RkeyHarness::CheckBatch(const std::vector<BatchWr>& wrs,
                             const BatchExpectation& e) {
  pair_->fabric->RunUntilIdle();

  // Read relaxed ordering (docs/ordering.md rule R3): a read may return
  // the bytes of a later write or atomic of the batch to the same place,
  // unless a fence stands between them; its sink is then one of several
  // values, taken as it is.
  if (rules_.reads_may_see_later_writes) {
    const std::vector<Touch>& touches = e.touches;
    for (size_t i = 0; i < touches.size(); ++i) {
      if (!touches[i].read) continue;
      for (size_t j = i + 1; j < touches.size(); ++j) {
        if (touches[j].fenced) break;
        const bool overlaps =
            touches[j].addr < touches[i].addr + touches[i].length &&
            touches[i].addr < touches[j].addr + touches[j].length;
        if (touches[j].writes && overlaps) {
          AcceptLocalSges(wrs[i]);
          break;
        }
      }
    }
  }

  CompareCq(pair_->client().send_cq(), e.want_send, "client send CQ");
  CompareCq(pair_->server().recv_cq(), e.want_recv, "server recv CQ");
  CompareCq(pair_->client().recv_cq(), {}, "client recv CQ");
  CompareCq(pair_->server().send_cq(), {}, "server send CQ");

  for (const auto& [offset, len] : e.undefined_recv) {
    recv_->AcceptActual(offset, len);
  }
  target_->Check("target memory after a batch");
  local_->Check("client memory after a batch");
  recv_->Check("server receive buffers after a batch");

  const QpState cs = pair_->client().qp()->state();
  const QpState ss = pair_->server().qp()->state();
  // A stalled requester stays in RTS (requester_error is unset then).
  const QpState want_cs = e.requester_error ? QpState::kErr : QpState::kRts;
  const QpState want_ss = e.responder_error ? QpState::kErr : QpState::kRts;
  if (cs != want_cs || ss != want_ss) {
    Violation(absl::StrCat("QP states after the batch: client ",
                           QpStateName(cs), " server ", QpStateName(ss),
                           ", expected ", QpStateName(want_cs), " and ",
                           QpStateName(want_ss)));
  }
  if (e.requester_error || e.responder_error) {
    // RESET discards posted receives without completions.
    for (const PostedRecv& r : rq_) free_slices_.push_back(r.slice);
    rq_.clear();
    pair_->Reconnect();
    FUZZ_NOTE("reconnected");
  }
}

void RkeyHarness::CompareCq(Cq* cq, const std::vector<ExpectedWc>& want,
                            const char* what) {
  const Completions got = DrainCq(cq);
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    if (i >= got.size()) {
      Violation(absl::StrCat(what, ": completion ", i, " (wr_id ",
                             want[i].wr_id, ", ", want[i].status.ToString(),
                             ") missing; got ", got.size(), " completions"));
    }
    const WorkCompletion& wc = got[i];
    if (i >= want.size()) {
      Violation(absl::StrCat(what, ": unexpected completion ", WcString(wc)));
    }
    const ExpectedWc& w = want[i];
    if (wc.wr_id != w.wr_id || !w.status.Contains(wc.status)) {
      Violation(absl::StrCat(what, ": completion ", i, " is ", WcString(wc),
                             ", expected wr_id ", w.wr_id, " with ",
                             w.status.ToString()));
    }
    if (wc.status == WcStatus::kSuccess) {
      // byte_len is defined for receives, reads and atomics only
      // (ibv_poll_cq(3)).
      const bool has_len =
          w.opcode == WcOpcode::kRecv ||
          w.opcode == WcOpcode::kRecvRdmaWithImm ||
          w.opcode == WcOpcode::kRdmaRead ||
          w.opcode == WcOpcode::kCompSwap || w.opcode == WcOpcode::kFetchAdd;
      if (wc.opcode != w.opcode || (has_len && wc.byte_len != w.byte_len)) {
        Violation(absl::StrCat(what, ": completion ", WcString(wc),
                               ", expected opcode ", WcOpcodeName(w.opcode),
                               " len ", w.byte_len));
      }
      if (w.with_inv &&
          (!(wc.wc_flags & kWcWithInv) || wc.invalidated_rkey != w.inv_rkey)) {
        Violation(absl::StrCat(what, ": completion ", WcString(wc),
                               " lacks IBV_WC_WITH_INV of rkey 0x",
                               absl::Hex(w.inv_rkey)));
      }
      if (w.with_imm &&
          (!(wc.wc_flags & kWcWithImm) || wc.imm_data != w.imm)) {
        Violation(absl::StrCat(what, ": completion ", WcString(wc),
                               " lacks the immediate 0x", absl::Hex(w.imm)));
      }
    }
  }
}

void RkeyHarness::FlushPostedRecvs(std::vector<ExpectedWc>* want) {
  for (const PostedRecv& r : rq_) {
    want->push_back(
        {r.wr_id, {WcStatus::kWrFlushErr}, WcOpcode::kRecv, 0, false, 0});
    free_slices_.push_back(r.slice);
  }
  rq_.clear();
}

std::vector<uint8_t> RkeyHarness::Message(const BatchWr& b) const {
  std::vector<uint8_t> msg;
  for (const Sge& s : b.sges) {
    const uint8_t* p = local_->shadow().data() + local_->Offset(s.addr);
    msg.insert(msg.end(), p, p + s.length);
  }
  return msg;
}

void RkeyHarness::AcceptLocalSges(const BatchWr& b) {
  for (const Sge& s : b.sges) {
    local_->AcceptActual(local_->Offset(s.addr), s.length);
  }
}

void RkeyHarness::Apply(const BatchWr& b, const RemoteRequest& req) {
  // A send touches the receive buffer only (the caller's business).
  if (b.kind == RemoteKind::kSendInv) return;
  if (b.length == 0 && !IsAtomic(b.kind)) {
    return;  // nothing moves (and addr/rkey may be anything)
  }
  if (!target_->Holds(req.addr, IsAtomic(b.kind) ? 8 : b.length)) {
    Violation(absl::StrCat("model: a successful access at 0x",
                           absl::Hex(req.addr), " outside the target buffer"));
  }
  uint8_t* t = target_->shadow().data() + target_->Offset(req.addr);
  // The first `len` bytes of the message into the local SGEs.
  auto scatter = [&](const uint8_t* data, size_t len) {
    size_t at = 0;
    for (const Sge& s : b.sges) {
      const size_t n = std::min<size_t>(s.length, len - at);
      std::memcpy(local_->shadow().data() + local_->Offset(s.addr),
                  data + at, n);
      at += n;
      if (at == len) break;
    }
  };
  switch (b.kind) {
    case RemoteKind::kWrite:
    case RemoteKind::kWriteImm: {
      const std::vector<uint8_t> msg = Message(b);
      std::memcpy(t, msg.data(), msg.size());
      break;
    }
    case RemoteKind::kRead:
      scatter(t, b.length);
      break;
    case RemoteKind::kCmpSwap:
    case RemoteKind::kFetchAdd: {
      uint64_t orig;
      std::memcpy(&orig, t, 8);
      const uint64_t now = AtomicResult(b.kind, orig, b.wr.atomic.compare_add,
                                        b.wr.atomic.swap);
      std::memcpy(t, &now, 8);
      // The original value lands in the first 8 bytes of the SGE list
      // (rxe takes any list of 8 bytes or more: rxe_comp.c copy_data).
      uint8_t bytes[8];
      std::memcpy(bytes, &orig, 8);
      scatter(bytes, 8);
      break;
    }
    case RemoteKind::kSendInv:
      break;
  }
}

}  // namespace verbsim::fuzz::rkey_harness
