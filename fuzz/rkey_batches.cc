// The rkey harness's batches (rkey_harness.h): the remote operations of a
// batch decoded from the input (kind, rkey, remote address, length, flags,
// source bytes), the receives they need, and the one post of them all,
// checked against the model's per-WR post rules.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/names.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/rkey_harness.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::rkey_harness {

uint32_t RkeyHarness::DecodeRkey() {
  const uint8_t mode = in_.U8();
  const int n = keys_.size();
  if (mode % 9 >= 6 && keys_.mw_count() > 0) {
    const ModelMw& w = keys_.mw(in_.Below(keys_.mw_count()));
    switch (mode % 9) {
      case 6: return w.rkey;
      case 7: return StaleRkey(w.rkey);
      default: return w.rkey ^ (1u << in_.U8() % 32);              // forged
    }
  }
  switch (mode % 9) {
    case 0:
    case 1:  // the rkey of some MR, live or dead
      return keys_.mr(in_.Below(n)).rkey;
    case 2:  // an lkey: the wrong kind of key
      return keys_.mr(in_.Below(n)).lkey;
    case 3: {  // an rkey with one bit flipped
      // One read, then the other (the operands of ^ are unsequenced).
      const uint32_t rkey = keys_.mr(in_.Below(n)).rkey;
      return rkey ^ (1u << (in_.U8() % 32));
    }
    case 4:
      return in_.U32();
    default:  // the newest MR's rkey
      return keys_.mr(n - 1).rkey;
  }
}

uint64_t RkeyHarness::DecodeRemoteAddr() {
  const uint8_t mode = in_.U8();
  if (mode % 8 >= 6 && keys_.mw_count() > 0) {
    // Around a window's last binding (the model keeps it until rebound).
    const ModelMw& w = keys_.mw(in_.Below(keys_.mw_count()));
    const uint64_t base = w.bound ? w.addr : target_->addr();
    const uint64_t len = w.bound ? w.length : 0;
    return mode % 8 == 6 ? base + static_cast<int8_t>(in_.U8())
                         : base + len - in_.U8() % 16;
  }
  switch (mode % 8) {
    case 0: {  // inside or around an MR
      const ModelMr& m = keys_.mr(in_.Below(keys_.size()));
      return m.addr + static_cast<int16_t>(in_.U16());
    }
    case 1: {  // near the end of an MR
      const ModelMr& m = keys_.mr(in_.Below(keys_.size()));
      return m.addr + m.length - in_.U8();
    }
    case 2: {  // a region's start plus a little
      const size_t r = in_.Below(kRegions);
      return target_->addr() + region_off_[r] + in_.U8() % 64;
    }
    case 3:
      return in_.U64();
    case 4:  // wrapping
      return UINT64_MAX - in_.U16();
    default:  // anywhere in the target buffer
      return target_->addr() + in_.U16() % kTargetSize;
  }
}

uint64_t RkeyHarness::DecodeLength() {
  static const uint16_t kLengths[] = {0,   1,    7,    8,    63,   64,
                                      65,  200,  255,  256,  257,  1023,
                                      1024, 1025, 2048, 4096};
  const uint8_t mode = in_.U8();
  if (mode < 0xc0) return kLengths[mode % 16];
  return in_.U16() % 4097;
}

// A batch of WRs in one post. With `dereg_after_post` >= 0, that target MR
// (an index, modulo their number) is deregistered right after the post,
// before anything reaches the server: its rkey is dead when checked.
void RkeyHarness::Batch(int dereg_after_post) {
  const std::vector<BatchWr> wrs = DecodeBatch();
  size_t consuming = 0;
  for (const BatchWr& b : wrs) consuming += ConsumesRecv(b.kind);

  // Receives for the WRs that consume one (only as many as are missing,
  // so the queue stays short).
  while (rq_.size() < consuming) PostOneRecv(wrs, rq_.size());

  const size_t accepted = PostBatch(wrs);
  if (dereg_after_post >= 0 && !mrs_.empty()) {
    TargetMr& t = mrs_[dereg_after_post % mrs_.size()];
    DeregisterTarget(t, "Mr::Destroy with WRs in flight");
  }

  const BatchExpectation e = ModelBatch(wrs, accepted);
  CheckBatch(wrs, e);
}

std::vector<BatchWr> RkeyHarness::DecodeBatch() {
  const size_t n = in_.Below(kMaxBatch) + 1;
  std::vector<BatchWr> wrs(n);
  for (size_t i = 0; i < n; ++i) {
    BatchWr& b = wrs[i];
    b.slice = i;
    const uint8_t kind = in_.U8() % 6;
    b.kind = static_cast<RemoteKind>(kind);
    const uint32_t rkey = DecodeRkey();
    const uint64_t raddr = DecodeRemoteAddr();
    const uint8_t flags = in_.U8();
    const bool atomic = IsAtomic(b.kind);
    b.length = atomic ? ((flags & kFlagBadAtomicLen) ? in_.U8() % 17 : 8)
                      : DecodeLength();
    b.signaled = (flags & kFlagUnsignaled) == 0;
    // Fresh source bytes for this WR.
    const size_t base = i * kSliceSize;
    const uint64_t fill = in_.U16() + 7919 * batches_;
    const size_t off = in_.U16() % (kSliceSize - b.length + 1);
    local_->Refill(base + off, std::min<size_t>(b.length + 16, kSliceSize - off),
                   fill);
    const uint64_t laddr = local_->addr() + base + off;
    if ((flags & kFlagTwoSges) && !atomic && b.length >= 2 &&
        off + b.length + 16 <= kSliceSize) {
      const uint32_t first = static_cast<uint32_t>(b.length / 2);
      b.sges.push_back(Sge{laddr, first, local_mr_->lkey()});
      b.sges.push_back(Sge{laddr + first + 16,
                           static_cast<uint32_t>(b.length - first),
                           local_mr_->lkey()});
    } else {
      b.sges.push_back(
          Sge{laddr, static_cast<uint32_t>(b.length), local_mr_->lkey()});
    }
    SendWr& w = b.wr;
    w.wr_id = next_wr_id_++;
    w.send_flags = b.signaled ? kSendSignaled : 0;
    // On rxe an inline READ or atomic fails only when its response
    // arrives, after the WRs behind it have reached the responder (whose
    // effects this oracle does not follow): there it is the batch's last.
    const bool fails_on_arrival =
        (b.kind == RemoteKind::kRead || atomic) &&
        !rules_.post_send.inline_needs_send_or_write;
    if ((flags & kFlagInline) && (!fails_on_arrival || i + 1 == n)) {
      w.send_flags |= kSendInline;
    }
    if (flags & kFlagFence) w.send_flags |= kSendFence;
    w.opcode = WrOpcodeFor(b.kind);
    if (b.kind == RemoteKind::kWriteImm) w.imm_data = in_.U32();
    if (b.kind == RemoteKind::kSendInv) {
      w.invalidate_rkey = rkey;
      b.recv_capacity = in_.U16() % 4097;
    }
    SetRemoteTarget(w, raddr, rkey);
    if (atomic) {
      w.atomic.compare_add = in_.Bool() ? in_.U64() : ReadTarget(raddr);
      w.atomic.swap = in_.U64();
    }
  }
  for (BatchWr& b : wrs) b.wr.sg_list = absl::MakeConstSpan(b.sges);
  ++batches_;
  return wrs;
}

size_t RkeyHarness::PostBatch(const std::vector<BatchWr>& wrs) {
  const size_t n = wrs.size();
  // The model: which WRs the post accepts.
  size_t bad = n;
  int post_errno = 0;
  for (size_t i = 0; i < n; ++i) {
    post_errno = SendWrErrno(wrs[i].wr, caps_, rules_.post_send);
    if (post_errno != 0) {
      bad = i;
      break;
    }
  }
  absl::InlinedVector<SendWr, kMaxBatch> list;
  for (const BatchWr& b : wrs) list.push_back(b.wr);
  size_t bad_index = 0;
  for (const BatchWr& b : wrs) {
    FUZZ_NOTE(absl::StrCat("  wr ", b.wr.wr_id, " ", WrOpcodeName(b.wr.opcode),
                      " len ", b.length, " sges ", b.sges.size(), " flags 0x",
                      absl::Hex(b.wr.send_flags), " raddr 0x",
                      absl::Hex(IsAtomic(b.kind) ? b.wr.atomic.remote_addr
                                                 : b.wr.rdma.remote_addr),
                      " rkey 0x",
                      absl::Hex(IsAtomic(b.kind) ? b.wr.atomic.rkey
                                                 : b.wr.rdma.rkey),
                      b.kind == RemoteKind::kSendInv
                          ? absl::StrCat(" recv cap ", b.recv_capacity)
                          : ""));
  }
  absl::Status posted = pair_->client().qp()->PostSend(list, &bad_index);
  FUZZ_NOTE(absl::StrCat("post ", n, " WRs: ", posted.ok() ? "OK" : posted.ToString()));
  ExpectErrno(posted, post_errno, "PostSend of a batch");
  if (!posted.ok() && bad_index != bad) {
    Violation(absl::StrCat("PostSend: bad_index ", bad_index, ", expected ",
                           bad));
  }
  return bad;
}

void RkeyHarness::PostOneRecv(const std::vector<BatchWr>& wrs,
                              size_t nth_consumer) {
  // The capacity the nth consuming WR of the batch asked for.
  uint64_t capacity = 4096;
  size_t seen = 0;
  for (const BatchWr& b : wrs) {
    if (!ConsumesRecv(b.kind)) continue;
    if (seen++ == nth_consumer) {
      if (b.kind == RemoteKind::kSendInv) capacity = b.recv_capacity;
      break;
    }
  }
  if (free_slices_.empty()) Violation("harness: out of receive slices");
  PostedRecv r;
  r.wr_id = next_wr_id_++;
  r.slice = free_slices_.front();
  free_slices_.pop_front();
  r.capacity = capacity;
  Sge sge{recv_->addr() + r.slice * kSliceSize,
          static_cast<uint32_t>(capacity), recv_mr_->lkey()};
  RecvWr wr;
  wr.wr_id = r.wr_id;
  wr.sg_list = absl::MakeConstSpan(&sge, 1);
  ExpectErrno(pair_->server().qp()->PostRecv(wr), 0, "PostRecv");
  rq_.push_back(r);
  FUZZ_NOTE(absl::StrCat("post recv ", r.wr_id, " capacity ", capacity));
}

uint64_t RkeyHarness::ReadTarget(uint64_t addr) {
  uint64_t v = 0;
  if (target_->Holds(addr, 8)) {
    std::memcpy(&v, target_->shadow().data() + target_->Offset(addr), 8);
  }
  return v;
}

}  // namespace verbsim::fuzz::rkey_harness
