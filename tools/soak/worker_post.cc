// The soak worker's posts: the mix of RC operations and UD datagrams to a
// peer within the windows its ACKs open, and the ACKs it sends back.
#include <cstring>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "tools/soak/worker.h"

namespace verbsim::soak {
namespace {

constexpr uint32_t kQkey = 0x01234567;  // EndpointAttr's default
constexpr int kInjectAt = 20;           // the message an Inject spoils
constexpr absl::Duration kAckInterval = absl::Milliseconds(2);
// A full UD window whose datagrams the peer never reported is given up
// after this long (all of them lost): the window opens again.
constexpr absl::Duration kUdGiveUp = absl::Milliseconds(200);

}  // namespace

absl::Status Worker::PostSendWr(Qp* qp, const SendWr& wr) {
  absl::Status st = qp->PostSend(wr);
  if (st.ok()) send_fifo_[qp->qp_num()].push_back(wr.wr_id);
  return st;
}

absl::Status Worker::Repost(Qp* qp, uint64_t wr_id, uint8_t* at,
                            uint32_t len) {
  const Sge sge{reinterpret_cast<uint64_t>(at), len, mr_->lkey()};
  RecvWr wr;
  wr.wr_id = wr_id;
  wr.sg_list = absl::MakeConstSpan(&sge, 1);
  absl::Status st = qp->PostRecv(wr);
  if (st.ok()) recv_fifo_[qp->qp_num()].push_back(wr_id);
  return st;
}

bool Worker::CanConsume(const OutStream& s, int reserve) const {
  return s.msgs_posted - s.consumed < static_cast<uint64_t>(kRecvSlots - reserve);
}

uint64_t Worker::NextMsg(int peer) {
  OutStream& s = out_[peer];
  const bool target = o_.index == 0 && peer == 1;
  if (target && s.swapped_msg != 0) {  // the one held back by kReorder
    const uint64_t n = s.swapped_msg;
    s.swapped_msg = 0;
    return n;
  }
  const uint64_t n = s.next_msg;
  if (target && s.msgs_posted + 1 == kInjectAt) {
    switch (o_.inject) {
      case Inject::kSkip:  // n is never sent
        s.next_msg += 2;
        return n + 1;
      case Inject::kRepeat:  // n - 1 again
        return n - 1;
      case Inject::kReorder:  // n + 1 now, n next
        s.swapped_msg = n;
        s.next_msg += 2;
        return n + 1;
      default:
        break;
    }
  }
  ++s.next_msg;
  return n;
}

bool Worker::PostSend(int peer, bool fin) {
  OutStream& s = out_[peer];
  if (!CanConsume(s, fin ? 0 : 1)) return false;
  const int slot = static_cast<int>(s.sends % kSendSlots);
  if (s.send_busy[slot] != 0) return false;
  uint8_t* buf = s.send_src + static_cast<size_t>(slot) * kMaxMsg;
  Header h;
  h.kind = fin ? Kind::kFin : Kind::kSend;
  h.src = static_cast<uint8_t>(o_.index);
  h.dst = static_cast<uint8_t>(peer);
  h.msg_seq = NextMsg(peer);
  h.write_seq = s.writes;
  if (fin) {
    FinBody body;
    body.messages = h.msg_seq;
    body.writes = s.writes;
    body.ud_sent = s.ud_sent;
    std::memcpy(buf + kHeaderBytes, &body, sizeof(body));
    h.len = kHeaderBytes + sizeof(body);
  } else {
    h.len = RandomSize(&rng_, 64, kMaxMsg);
    FillRandom(buf + kHeaderBytes, h.len - kHeaderBytes, &rng_);
  }
  Seal(h, buf);
  // The first send from the kInjectAt-th message on (that message itself
  // may be a write with immediate, which this path does not post).
  if (o_.inject == Inject::kCorrupt && o_.index == 0 && peer == 1 && !fin &&
      !s.corrupted && s.msgs_posted + 1 >= kInjectAt) {
    buf[h.len - 1] ^= 0x40;
    s.corrupted = true;
  }
  const Sge sge{reinterpret_cast<uint64_t>(buf), h.len, mr_->lkey()};
  SendWr wr;
  wr.wr_id = WrId(fin ? Tag::kFin : Tag::kSend, peer, slot, h.msg_seq);
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = kSendSignaled;
  wr.sg_list = absl::MakeConstSpan(&sge, 1);
  if (absl::Status st = PostSendWr(s.qp.get(), wr); !st.ok()) {
    Fail("post-failed", absl::StrFormat("send to process %d: %s", peer,
                                        st.ToString()));
    stopped_ = true;
    return false;
  }
  s.send_busy[slot] = 1;
  ++s.sends;
  ++s.msgs_posted;
  s.plain_since_cover = 0;
  if (fin) s.fin_sent = true;
  return true;
}

bool Worker::PostWrite(int peer, bool imm) {
  OutStream& s = out_[peer];
  if (!imm && s.plain_since_cover >= kPlainWritesPerCover) return false;
  if (imm && !CanConsume(s, 1)) return false;
  const uint64_t w = s.writes + 1;
  // The ring slot's last write must be verified before it is written again.
  if (w - s.writes_checked > kWriteSlots) return false;
  const int slot = static_cast<int>(w % kWriteSlots);
  if (s.write_busy[slot] != 0) return false;
  uint8_t* buf = s.write_src + static_cast<size_t>(slot) * kMaxMsg;
  Header h;
  h.kind = imm ? Kind::kWriteImm : Kind::kWrite;
  h.src = static_cast<uint8_t>(o_.index);
  h.dst = static_cast<uint8_t>(peer);
  h.msg_seq = imm ? NextMsg(peer) : 0;
  h.write_seq = w;
  h.len = RandomSize(&rng_, 64, kMaxMsg);
  FillRandom(buf + kHeaderBytes, h.len - kHeaderBytes, &rng_);
  Seal(h, buf);
  const Sge sge{reinterpret_cast<uint64_t>(buf), h.len, mr_->lkey()};
  SendWr wr;
  wr.wr_id = WrId(imm ? Tag::kWriteImm : Tag::kWrite, peer, slot, w);
  wr.opcode = imm ? WrOpcode::kRdmaWriteWithImm : WrOpcode::kRdmaWrite;
  wr.send_flags = kSendSignaled;
  wr.imm_data = static_cast<uint32_t>(w);
  wr.sg_list = absl::MakeConstSpan(&sge, 1);
  wr.rdma.remote_addr = s.remote_ring + static_cast<size_t>(slot) * kMaxMsg;
  wr.rdma.rkey = s.rkey;
  if (o_.inject == Inject::kError && o_.index == 0 && peer == 1 &&
      w == kInjectAt) {
    wr.rdma.rkey ^= 0x1000;  // a key the peer never gave out
  }
  if (absl::Status st = PostSendWr(s.qp.get(), wr); !st.ok()) {
    Fail("post-failed", absl::StrFormat("write to process %d: %s", peer,
                                        st.ToString()));
    stopped_ = true;
    return false;
  }
  s.write_busy[slot] = 1;
  s.writes = w;
  if (imm) {
    ++s.msgs_posted;
    s.plain_since_cover = 0;
  } else {
    ++s.plain_since_cover;
  }
  return true;
}

bool Worker::PostRead(int peer) {
  OutStream& s = out_[peer];
  const int slot = static_cast<int>(s.reads % kReadSlots);
  if (s.read_busy[slot] != 0) return false;
  const uint32_t len = RandomSize(&rng_, 1, kMaxRead);
  const uint64_t offset = Random(&rng_) % (kReadRegion - len + 1);
  uint8_t* dst = s.read_dst + static_cast<size_t>(slot) * kMaxRead;
  // Poison: every byte differs from what the read must bring.
  const uint32_t stream = static_cast<uint32_t>(o_.index * 256 + peer);
  for (uint32_t i = 0; i < len; ++i) {
    dst[i] = PatternByte(stream, offset + i) ^ 0x5a;
  }
  const Sge sge{reinterpret_cast<uint64_t>(dst), len, mr_->lkey()};
  SendWr wr;
  wr.wr_id = WrId(Tag::kRead, peer, slot, s.reads + 1);
  wr.opcode = WrOpcode::kRdmaRead;
  wr.send_flags = kSendSignaled;
  wr.sg_list = absl::MakeConstSpan(&sge, 1);
  wr.rdma.remote_addr = s.remote_read + offset;
  wr.rdma.rkey = s.rkey;
  if (absl::Status st = PostSendWr(s.qp.get(), wr); !st.ok()) {
    Fail("post-failed", absl::StrFormat("read from process %d: %s", peer,
                                        st.ToString()));
    stopped_ = true;
    return false;
  }
  s.read_busy[slot] = 1;
  s.read_offset[slot] = offset;
  s.read_len[slot] = len;
  ++s.reads;
  return true;
}

bool Worker::PostUd(int peer) {
  OutStream& s = out_[peer];
  if (s.ud_sent - s.ud_reported >= kUdWindow) {
    const absl::Time now = absl::Now();
    if (s.ud_window_full_since == absl::InfinitePast()) {
      s.ud_window_full_since = now;
    } else if (now - s.ud_window_full_since > kUdGiveUp) {
      s.ud_reported = s.ud_sent;
      s.ud_window_full_since = absl::InfinitePast();
    }
    return false;
  }
  s.ud_window_full_since = absl::InfinitePast();
  const int slot = static_cast<int>(ud_posted_ % kUdSlots);
  if (ud_busy_[slot] != 0) return false;
  uint8_t* buf = ud_src_ + static_cast<size_t>(slot) * kMaxUd;
  Header h;
  h.kind = Kind::kUd;
  h.src = static_cast<uint8_t>(o_.index);
  h.dst = static_cast<uint8_t>(peer);
  h.msg_seq = s.ud_sent + 1;
  h.len = RandomSize(&rng_, 64, kMaxUd);
  FillRandom(buf + kHeaderBytes, h.len - kHeaderBytes, &rng_);
  Seal(h, buf);
  const bool target =
      o_.index == 0 && peer == 1 && h.msg_seq == static_cast<uint64_t>(kInjectAt);
  int to = peer;
  int copies = 1;
  if (target && o_.inject == Inject::kUdCorrupt) buf[h.len - 1] ^= 0x40;
  if (target && o_.inject == Inject::kUdRepeat) copies = 2;
  if (target && o_.inject == Inject::kUdMisdeliver && o_.procs > 2) to = 2;
  const Sge sge{reinterpret_cast<uint64_t>(buf), h.len, mr_->lkey()};
  SendWr wr;
  wr.wr_id = WrId(Tag::kUd, peer, slot, h.msg_seq);
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = kSendSignaled;
  wr.sg_list = absl::MakeConstSpan(&sge, 1);
  wr.ud.ah = out_[to].ah.get();
  wr.ud.remote_qpn = out_[to].remote_ud_qpn;
  wr.ud.remote_qkey = kQkey;
  for (int c = 0; c < copies; ++c) {
    if (absl::Status st = PostSendWr(ud_qp_.get(), wr); !st.ok()) {
      Fail("post-failed", absl::StrFormat("UD to process %d: %s", peer,
                                          st.ToString()));
      stopped_ = true;
      return false;
    }
    ++ud_busy_[slot];
  }
  ++ud_posted_;
  ++s.ud_sent;
  ud_sent_tally_.Add(h.len);
  return true;
}

int Worker::Generate(int peer) {
  if (out_[peer].fin_sent || stopped_) return 0;
  int posted = 0;
  for (int attempt = 0; attempt < 8 && posted < 4 && !stopped_; ++attempt) {
    const uint64_t r = Random(&rng_) % 100;
    bool ok = false;
    if (r < 35) {
      ok = PostSend(peer, false);
    } else if (r < 60) {
      ok = PostWrite(peer, false);
    } else if (r < 70) {
      ok = PostWrite(peer, true);
    } else if (r < 88) {
      ok = PostRead(peer);
    } else {
      ok = PostUd(peer);
    }
    posted += ok ? 1 : 0;
  }
  return posted;
}

void Worker::MaybeAck(int peer) {
  InStream& r = in_[peer];
  const bool fin_news = r.fin_seen && !r.fin_reported;
  const bool news = r.consumed != r.reported_consumed ||
                    r.writes_checked != r.reported_writes ||
                    r.ud.highest() != r.reported_ud || fin_news;
  if (!news) return;
  const absl::Time now = absl::Now();
  if (r.consumed - r.reported_consumed < 4 && !fin_news &&
      now - r.last_ack < kAckInterval) {
    return;
  }
  const int slot = static_cast<int>(r.acks_sent % kAckSlots);
  if (r.ack_busy[slot] != 0) return;
  uint8_t* buf = r.ack_src + slot * kAckBytes;
  AckBody body;
  body.consumed = r.consumed;
  body.writes_checked = r.writes_checked;
  body.ud_highest = r.ud.highest();
  body.fin_seen = r.fin_seen ? 1 : 0;
  std::memcpy(buf + kHeaderBytes, &body, sizeof(body));
  Header h;
  h.kind = Kind::kAck;
  h.src = static_cast<uint8_t>(o_.index);
  h.dst = static_cast<uint8_t>(peer);
  h.len = kHeaderBytes + sizeof(body);
  h.msg_seq = r.acks_sent + 1;
  Seal(h, buf);
  const Sge sge{reinterpret_cast<uint64_t>(buf), h.len, mr_->lkey()};
  SendWr wr;
  wr.wr_id = WrId(Tag::kAck, peer, slot, h.msg_seq);
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = kSendSignaled;
  wr.sg_list = absl::MakeConstSpan(&sge, 1);
  if (absl::Status st = PostSendWr(r.qp.get(), wr); !st.ok()) {
    Fail("post-failed", absl::StrFormat("ACK to process %d: %s", peer,
                                        st.ToString()));
    stopped_ = true;
    return;
  }
  r.ack_busy[slot] = 1;
  ++r.acks_sent;
  r.reported_consumed = r.consumed;
  r.reported_writes = r.writes_checked;
  r.reported_ud = r.ud.highest();
  r.fin_reported = r.fin_seen;
  r.last_ack = now;
}

}  // namespace verbsim::soak
