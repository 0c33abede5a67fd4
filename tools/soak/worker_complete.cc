// The soak worker's completions: each is checked against what was posted
// (in order, once, successful), and each message received against its
// stream's sequence numbers and its hash.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/names.h"
#include "tools/soak/worker.h"

namespace verbsim::soak {
namespace {

// The finding an RC arrival is, or empty when it is in order. A gap is no
// finding yet: what is missing may still come (then it was reordered) or
// not (then it was lost, counted when the stream ends).
std::string RcFinding(Arrival a) {
  switch (a) {
    case Arrival::kNext:
    case Arrival::kGap:
      return "";
    case Arrival::kLate:
      return "rc-reordered";
    case Arrival::kDuplicate:
      return "rc-duplicated";
    case Arrival::kInvalid:
      return "rc-corrupted";
  }
  return "rc-corrupted";
}

}  // namespace

void Worker::Fail(const std::string& what, const std::string& detail) {
  if (failures_[what]++ == 0) {
    first_failure_[what] = detail;
    std::printf("finding %s: %s\n", what.c_str(), detail.c_str());
    std::fflush(stdout);
  }
}

int Worker::Drain() {
  WorkCompletion wcs[32];
  int total = 0;
  while (total < 512 && !stopped_) {
    absl::StatusOr<int> n = cq_->Poll(absl::MakeSpan(wcs));
    if (!n.ok()) {
      Fail("poll-failed", n.status().ToString());
      stopped_ = true;
      break;
    }
    if (*n == 0) break;
    for (int i = 0; i < *n; ++i) Complete(wcs[i]);
    total += *n;
  }
  return total;
}

void Worker::Complete(const WorkCompletion& wc) {
  const Tag tag = TagOf(wc.wr_id);
  const int peer = PeerOf(wc.wr_id);
  const int slot = SlotOf(wc.wr_id);
  const bool recv = tag >= Tag::kRecvData;
  const std::string what = absl::StrFormat(
      "%s #%u of peer %d on qp %u", TagName(tag),
      static_cast<uint32_t>(wc.wr_id), peer, wc.qp_num);
  // Every WR completes once, in post order per queue.
  std::deque<uint64_t>& fifo = (recv ? recv_fifo_ : send_fifo_)[wc.qp_num];
  if (!fifo.empty() && fifo.front() == wc.wr_id) {
    fifo.pop_front();
  } else {
    auto it = std::find(fifo.begin(), fifo.end(), wc.wr_id);
    Fail("completion-order",
         absl::StrCat(what, it == fifo.end() ? ": never posted (or twice)"
                                             : ": out of post order"));
    if (it != fifo.end()) fifo.erase(it);
    return;
  }
  if (wc.status != WcStatus::kSuccess) {
    Fail("error-completion", absl::StrCat(what, ": ", WcStatusName(wc.status)));
    stopped_ = true;
    return;
  }
  ++ops_;
  switch (tag) {
    case Tag::kSend:
    case Tag::kFin:
      out_[peer].send_busy[slot] = 0;
      break;
    case Tag::kWrite:
    case Tag::kWriteImm:
      out_[peer].write_busy[slot] = 0;
      break;
    case Tag::kRead:
      CheckRead(peer, slot);
      out_[peer].read_busy[slot] = 0;
      break;
    case Tag::kAck:
      in_[peer].ack_busy[slot] = 0;
      break;
    case Tag::kUd:
      --ud_busy_[slot];
      break;
    case Tag::kRecvData:
      TakeData(peer, slot, wc);
      break;
    case Tag::kRecvAck:
      TakeAck(peer, slot, wc);
      break;
    case Tag::kRecvUd:
      TakeUd(slot, wc);
      break;
  }
}

void Worker::CheckRead(int peer, int slot) {
  OutStream& s = out_[peer];
  const uint8_t* got = s.read_dst + static_cast<size_t>(slot) * kMaxRead;
  const uint32_t stream = static_cast<uint32_t>(o_.index * 256 + peer);
  for (uint32_t i = 0; i < s.read_len[slot]; ++i) {
    if (got[i] != PatternByte(stream, s.read_offset[slot] + i)) {
      Fail("rc-corrupted",
           absl::StrFormat("read of %u bytes at offset %u from process %d: "
                           "byte %u differs",
                           s.read_len[slot], s.read_offset[slot], peer, i));
      return;
    }
  }
  rc_read_.Add(s.read_len[slot]);
}

// Verifies the ring slots of writes (checked, through] of the stream
// peer -> me: each must hold its own write, intact.
void Worker::CheckWrites(int peer, uint64_t through) {
  InStream& r = in_[peer];
  if (through > r.writes_checked + kWriteSlots) {
    Fail("rc-corrupted",
         absl::StrFormat("process %d: a message covers write %u, but only "
                         "%u were verified (the ring has %d slots)",
                         peer, through, r.writes_checked, kWriteSlots));
    through = r.writes_checked + kWriteSlots;
  }
  for (uint64_t w = r.writes_checked + 1; w <= through; ++w) {
    const uint8_t* at = r.ring + (w % kWriteSlots) * size_t{kMaxMsg};
    Header h;
    const std::string bad = Open(at, kMaxMsg, &h);
    if (!bad.empty()) {
      Fail("rc-corrupted", absl::StrFormat("write %u from process %d: %s", w,
                                           peer, bad));
    } else if (h.write_seq != w) {
      Fail(h.write_seq < w ? "rc-lost" : "rc-corrupted",
           absl::StrFormat("write %u from process %d: its slot holds write %u",
                           w, peer, h.write_seq));
    } else if (h.src != peer || h.dst != o_.index) {
      Fail("rc-misdelivered",
           absl::StrFormat("write %u from process %d says %d -> %d", w, peer,
                           h.src, h.dst));
    } else if (h.kind == Kind::kWrite) {
      rc_write_.Add(h.len);
      ++ops_;
    }
  }
  r.writes_checked = std::max(r.writes_checked, through);
}

void Worker::TakeData(int peer, int slot, const WorkCompletion& wc) {
  InStream& r = in_[peer];
  r.last_heard = absl::Now();
  ++r.consumed;
  uint8_t* recv_at = r.recv + static_cast<size_t>(slot) * kMaxMsg;
  Header h;
  std::string bad;
  const uint8_t* at = recv_at;
  Kind want = Kind::kSend;
  uint64_t imm_write = 0;
  if (wc.opcode == WcOpcode::kRecvRdmaWithImm) {
    // The immediate is the write's number, low 32 bits.
    imm_write = (r.writes_checked & ~uint64_t{0xffffffff}) | wc.imm_data;
    if (imm_write <= r.writes_checked) imm_write += uint64_t{1} << 32;
    CheckWrites(peer, imm_write - 1);
    at = r.ring + (imm_write % kWriteSlots) * size_t{kMaxMsg};
    want = Kind::kWriteImm;
  } else if (wc.opcode != WcOpcode::kRecv) {
    bad = absl::StrCat("opcode ", WcOpcodeName(wc.opcode));
  }
  if (bad.empty()) bad = Open(at, kMaxMsg, &h);
  if (bad.empty() && h.len != wc.byte_len) {
    bad = absl::StrFormat("%u bytes arrived, the header says %u", wc.byte_len,
                          h.len);
  }
  if (bad.empty() && !(h.kind == want || (want == Kind::kSend &&
                                          h.kind == Kind::kFin))) {
    bad = absl::StrCat("a ", KindName(h.kind), " where a ", KindName(want),
                       " belongs");
  }
  if (bad.empty() && want == Kind::kWriteImm && h.write_seq != imm_write) {
    bad = absl::StrFormat("write with immediate %u holds write %u", imm_write,
                          h.write_seq);
  }
  if (!bad.empty()) {
    Fail("rc-corrupted",
         absl::StrFormat("message from process %d: %s", peer, bad));
  } else if (h.src != peer || h.dst != o_.index) {
    Fail("rc-misdelivered",
         absl::StrFormat("process %d's stream carried %d -> %d", peer, h.src,
                         h.dst));
  } else {
    const std::string finding = RcFinding(r.order.Take(h.msg_seq));
    if (!finding.empty()) {
      Fail(finding, absl::StrFormat("%s number %u from process %d, expected "
                                    "%u",
                                    KindName(h.kind), h.msg_seq, peer,
                                    r.order.next()));
    }
    if (h.kind == Kind::kWriteImm) {
      r.writes_checked = imm_write;
      rc_write_imm_.Add(h.len);
    } else {
      if (h.write_seq < r.writes_checked) {
        Fail("rc-reordered",
             absl::StrFormat("%s from process %d covers writes to %u, %u "
                             "were verified before",
                             KindName(h.kind), peer, h.write_seq,
                             r.writes_checked));
      }
      CheckWrites(peer, h.write_seq);
      if (h.kind == Kind::kFin) {
        std::memcpy(&r.fin, at + kHeaderBytes, sizeof(r.fin));
        r.fin_seen = true;
        rc_fin_.Add(h.len);
        const uint64_t lost = r.order.Lost(r.fin.messages);
        if (lost > 0) {
          Fail("rc-lost", absl::StrFormat("%u of process %d's %u messages "
                                          "never came",
                                          lost, peer, r.fin.messages));
        }
      } else {
        rc_send_.Add(h.len);
      }
    }
  }
  if (absl::Status st = Repost(r.qp.get(), WrId(Tag::kRecvData, peer, slot, 0),
                               recv_at, kMaxMsg);
      !st.ok()) {
    Fail("post-failed", st.ToString());
    stopped_ = true;
  }
}

void Worker::TakeAck(int peer, int slot, const WorkCompletion& wc) {
  OutStream& s = out_[peer];
  s.last_heard = absl::Now();
  uint8_t* at = s.ack_recv + slot * kAckBytes;
  Header h;
  std::string bad = Open(at, kAckBytes, &h);
  if (bad.empty() && (h.kind != Kind::kAck || h.len != wc.byte_len ||
                      h.len != kHeaderBytes + sizeof(AckBody))) {
    bad = absl::StrFormat("a %s of %u bytes (%u arrived) where an ACK belongs",
                          KindName(h.kind), h.len, wc.byte_len);
  }
  if (!bad.empty()) {
    Fail("rc-corrupted", absl::StrFormat("ACK from process %d: %s", peer, bad));
  } else if (h.src != peer || h.dst != o_.index) {
    Fail("rc-misdelivered", absl::StrFormat("ACK stream of process %d carried "
                                            "%d -> %d",
                                            peer, h.src, h.dst));
  } else {
    const std::string finding = RcFinding(s.acks.Take(h.msg_seq));
    if (!finding.empty()) {
      Fail(finding, absl::StrFormat("ACK number %u from process %d, expected "
                                    "%u",
                                    h.msg_seq, peer, s.acks.next()));
    }
    AckBody b;
    std::memcpy(&b, at + kHeaderBytes, sizeof(b));
    if (b.consumed < s.consumed || b.consumed > s.msgs_posted ||
        b.writes_checked < s.writes_checked || b.writes_checked > s.writes) {
      Fail("rc-corrupted",
           absl::StrFormat("ACK from process %d: consumed %u of %u posted, "
                           "writes %u of %u (before: %u, %u)",
                           peer, b.consumed, s.msgs_posted, b.writes_checked,
                           s.writes, s.consumed, s.writes_checked));
    } else {
      s.consumed = b.consumed;
      s.writes_checked = b.writes_checked;
    }
    s.ud_reported = std::max(s.ud_reported, std::min(b.ud_highest, s.ud_sent));
    if (b.fin_seen != 0 && s.fin_sent) s.fin_acked = true;
    rc_ack_.Add(h.len);
  }
  if (absl::Status st = Repost(s.qp.get(), WrId(Tag::kRecvAck, peer, slot, 0),
                               at, kAckBytes);
      !st.ok()) {
    Fail("post-failed", st.ToString());
    stopped_ = true;
  }
}

void Worker::TakeUd(int slot, const WorkCompletion& wc) {
  uint8_t* at = ud_recv_ + static_cast<size_t>(slot) * (kGrh + kMaxUd);
  const uint8_t* payload = at + kGrh;
  Header h;
  std::string bad;
  if (wc.byte_len < kGrh + kHeaderBytes) {
    bad = absl::StrFormat("%u bytes", wc.byte_len);
  } else {
    bad = Open(payload, wc.byte_len - kGrh, &h);
    if (bad.empty() && (h.kind != Kind::kUd || h.len != wc.byte_len - kGrh)) {
      bad = absl::StrFormat("a %s of %u bytes (%u arrived)", KindName(h.kind),
                            h.len, wc.byte_len - kGrh);
    }
  }
  if (!bad.empty()) {
    Fail("ud-corrupted", absl::StrFormat("datagram from qp %u: %s", wc.src_qp,
                                         bad));
  } else if (h.dst != o_.index || h.src >= o_.procs || h.src == o_.index) {
    Fail("ud-misdelivered",
         absl::StrFormat("datagram %u of %d -> %d arrived at process %d",
                         h.msg_seq, h.src, h.dst, o_.index));
  } else {
    InStream& r = in_[h.src];
    uint32_t ip = 0;
    std::memcpy(&ip, at + 20 + 12, 4);  // the GRH's IPv4 source address
    if (wc.src_qp != r.remote_ud_qpn || ip != r.remote_ip) {
      Fail("ud-misdelivered",
           absl::StrFormat("datagram %u of process %d came from qp %u (its UD "
                           "QP is %u) or another node",
                           h.msg_seq, h.src, wc.src_qp, r.remote_ud_qpn));
    } else {
      const Arrival a = r.ud.Take(h.msg_seq);
      if (a == Arrival::kDuplicate) {
        Fail("ud-duplicated", absl::StrFormat("datagram %u of process %d",
                                              h.msg_seq, h.src));
      } else if (a == Arrival::kLate) {
        Fail("ud-reordered",
             absl::StrFormat("datagram %u of process %d after %u", h.msg_seq,
                             h.src, r.ud.highest()));
      } else if (a == Arrival::kInvalid) {
        Fail("ud-corrupted",
             absl::StrFormat("datagram number %u of process %d (highest %u)",
                             h.msg_seq, h.src, r.ud.highest()));
      } else {
        ud_recv_tally_.Add(h.len);
      }
    }
  }
  if (absl::Status st = Repost(ud_qp_.get(), WrId(Tag::kRecvUd, 0, slot, 0),
                               at, kGrh + kMaxUd);
      !st.ok()) {
    Fail("post-failed", st.ToString());
    stopped_ = true;
  }
}

}  // namespace verbsim::soak
