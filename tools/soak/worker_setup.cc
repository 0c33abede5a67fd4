// The soak worker's setup: its node of the fabric, its QPs and memory, the
// meeting with the other processes and the fault rules.
#include <cstdio>
#include <cstring>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "sim/fabric.h"
#include "sim/sim_provider.h"
#include "tools/soak/rendezvous.h"
#include "tools/soak/worker.h"

namespace verbsim::soak {
namespace {

constexpr absl::Duration kMeetTimeout = absl::Seconds(60);

// The first PSN of the stream a -> b, forward (requests) or back (ACK
// sends): close below 2^24, so that every stream's PSNs wrap early.
uint32_t FirstPsn(int a, int b, bool back) {
  return 0xffffff - 64 * static_cast<uint32_t>(a * 32 + b * 2 + (back ? 1 : 0));
}

EndpointAttr QpAttrs() {
  EndpointAttr attr;
  // 4.096 us x 2^16 = 268 ms, seven retries: a peer may be silent for about
  // 2 s before RETRY_EXC_ERR. Across processes the ACK timer runs on the wall
  // clock (docs/udp-transport.md), and on a loaded machine, beside the load
  // the run adds, a process can be descheduled for far longer than 67 ms x 8.
  attr.timeout = 16;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;   // never an error
  attr.path_mtu = Mtu::k1024;
  return attr;
}

std::string GidHex(const Gid& gid) {
  std::string s;
  for (uint8_t b : gid) absl::StrAppendFormat(&s, "%02x", b);
  return s;
}

bool ParseGid(const std::string& hex, Gid* gid) {
  if (hex.size() != 2 * gid->size()) return false;
  for (size_t i = 0; i < gid->size(); ++i) {
    unsigned v = 0;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    (*gid)[i] = static_cast<uint8_t>(v);
  }
  return true;
}

}  // namespace

const char* TagName(Tag tag) {
  switch (tag) {
    case Tag::kSend: return "send";
    case Tag::kWrite: return "write";
    case Tag::kWriteImm: return "write_imm";
    case Tag::kRead: return "read";
    case Tag::kFin: return "fin";
    case Tag::kAck: return "ack";
    case Tag::kUd: return "ud";
    case Tag::kRecvData: return "recv(data)";
    case Tag::kRecvAck: return "recv(ack)";
    case Tag::kRecvUd: return "recv(ud)";
  }
  return "unknown";
}

Worker::Worker(const Options& options)
    : o_(options), out_(options.procs), in_(options.procs) {
  rng_ = options.seed * 0x9e3779b97f4a7c15ull + options.index;
}

Worker::~Worker() = default;

absl::Status Worker::CreateObjects() {
  // The fabric's options in the spec: the same as VERBSIM_UDP's
  // (docs/udp-transport.md), which tools/soak.sh leaves unset.
  auto provider = OpenProvider(
      absl::StrCat("sim:nodes=", o_.procs, ",udp=", o_.port,
                   ",local=", o_.index, ",seed=", o_.seed + o_.index));
  if (!provider.ok()) return provider.status();
  provider_ = *std::move(provider);
  auto context = provider_->Open(absl::StrCat("sim", o_.index));
  if (!context.ok()) return context.status();
  context_ = *std::move(context);
  auto gid = context_->QueryGid(1, 0);
  if (!gid.ok()) return gid.status();
  gid_ = *gid;
  auto pd = context_->AllocPd();
  if (!pd.ok()) return pd.status();
  pd_ = *std::move(pd);
  auto channel = context_->CreateCompChannel();
  if (!channel.ok()) return channel.status();
  channel_ = *std::move(channel);
  auto cq = context_->CreateCq(8192, channel_.get());
  if (!cq.ok()) return cq.status();
  cq_ = *std::move(cq);

  // One arena for every buffer, registered once, touched now so that the
  // resident set holds it from the start.
  const int peers = o_.procs - 1;
  ud_recvs_ = 2 * kUdWindow * peers;
  const size_t per_out = size_t{kSendSlots} * kMaxMsg +
                         size_t{kWriteSlots} * kMaxMsg +
                         size_t{kReadSlots} * kMaxRead + kAckRecvs * kAckBytes;
  const size_t per_in = size_t{kRecvSlots} * kMaxMsg +
                        size_t{kWriteSlots} * kMaxMsg + kReadRegion +
                        kAckSlots * kAckBytes;
  const size_t ud = size_t{kUdSlots} * kMaxUd +
                    static_cast<size_t>(ud_recvs_) * (kGrh + kMaxUd);
  arena_.assign(peers * (per_out + per_in) + ud, 0);
  auto take = [this](size_t n) {
    uint8_t* p = arena_.data() + arena_used_;
    arena_used_ += n;
    return p;
  };
  auto mr = pd_->RegMr(arena_.data(), arena_.size(),
                       kAccessLocalWrite | kAccessRemoteWrite |
                           kAccessRemoteRead);
  if (!mr.ok()) return mr.status();
  mr_ = *std::move(mr);

  const EndpointAttr attr = QpAttrs();
  auto make_qp = [&](QpType type, uint32_t send, uint32_t recv)
      -> absl::StatusOr<std::unique_ptr<Qp>> {
    QpInitAttr init;
    init.send_cq = cq_.get();
    init.recv_cq = cq_.get();
    init.qp_type = type;
    init.cap = {send, recv, 1, 1, 0};
    auto qp = pd_->CreateQp(init);
    if (!qp.ok()) return qp.status();
    if (absl::Status st = ModifyQpToInit(qp->get(), attr); !st.ok()) return st;
    return qp;
  };
  // The UD QP first, in every process: so its number is the same
  // everywhere and below every RC QP's (AddFaultRules relies on it).
  auto ud_qp = make_qp(QpType::kUd, kUdSlots + 4, ud_recvs_);
  if (!ud_qp.ok()) return ud_qp.status();
  ud_qp_ = *std::move(ud_qp);
  ud_src_ = take(size_t{kUdSlots} * kMaxUd);
  ud_recv_ = take(static_cast<size_t>(ud_recvs_) * (kGrh + kMaxUd));
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    OutStream& s = out_[p];
    auto qp = make_qp(QpType::kRc, 64, kAckRecvs);
    if (!qp.ok()) return qp.status();
    s.qp = *std::move(qp);
    s.send_src = take(size_t{kSendSlots} * kMaxMsg);
    s.write_src = take(size_t{kWriteSlots} * kMaxMsg);
    s.read_dst = take(size_t{kReadSlots} * kMaxRead);
    s.ack_recv = take(kAckRecvs * kAckBytes);
    InStream& r = in_[p];
    qp = make_qp(QpType::kRc, kAckSlots + 4, kRecvSlots);
    if (!qp.ok()) return qp.status();
    r.qp = *std::move(qp);
    r.recv = take(size_t{kRecvSlots} * kMaxMsg);
    r.ring = take(size_t{kWriteSlots} * kMaxMsg);
    r.read_src = take(kReadRegion);
    r.ack_src = take(kAckSlots * kAckBytes);
    const uint32_t stream = static_cast<uint32_t>(p * 256 + o_.index);
    for (uint32_t i = 0; i < kReadRegion; ++i) {
      r.read_src[i] = PatternByte(stream, i);
    }
  }
  return absl::OkStatus();
}

std::string Worker::InfoText() const {
  std::string text = absl::StrCat("gid ", GidHex(gid_), "\nud ",
                                  ud_qp_->qp_num(), "\n");
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    const InStream& r = in_[p];
    absl::StrAppend(&text, "peer ", p, " ", out_[p].qp->qp_num(), " ",
                    r.qp->qp_num(), " ", reinterpret_cast<uint64_t>(r.ring),
                    " ", reinterpret_cast<uint64_t>(r.read_src), " ",
                    mr_->rkey(), "\n");
  }
  return text;
}

absl::Status Worker::ConnectTo(int peer, const std::string& info) {
  std::istringstream in(info);
  std::string word, gid_hex;
  uint32_t ud_qpn = 0;
  in >> word >> gid_hex;
  Gid gid{};
  if (word != "gid" || !ParseGid(gid_hex, &gid)) {
    return Errno(EINVAL, "process %d's info has no gid", peer);
  }
  in >> word >> ud_qpn;
  if (word != "ud") return Errno(EINVAL, "process %d's info has no ud", peer);
  bool found = false;
  int p = 0;
  uint32_t s_qpn = 0, r_qpn = 0, rkey = 0;
  uint64_t ring = 0, read = 0;
  while (in >> word >> p >> s_qpn >> r_qpn >> ring >> read >> rkey) {
    if (word == "peer" && p == o_.index) {
      found = true;
      break;
    }
  }
  if (!found) return Errno(EINVAL, "process %d's info lacks us", peer);
  const EndpointAttr attr = QpAttrs();
  OutStream& s = out_[peer];
  InStream& r = in_[peer];
  // Our sender talks to the peer's receiver of our stream, and the other
  // way round.
  if (absl::Status st = ModifyQpToRtr(s.qp.get(), attr, r_qpn, gid,
                                      FirstPsn(o_.index, peer, true));
      !st.ok()) {
    return st;
  }
  if (absl::Status st =
          ModifyQpToRts(s.qp.get(), attr, FirstPsn(o_.index, peer, false));
      !st.ok()) {
    return st;
  }
  if (absl::Status st = ModifyQpToRtr(r.qp.get(), attr, s_qpn, gid,
                                      FirstPsn(peer, o_.index, false));
      !st.ok()) {
    return st;
  }
  if (absl::Status st =
          ModifyQpToRts(r.qp.get(), attr, FirstPsn(peer, o_.index, true));
      !st.ok()) {
    return st;
  }
  s.remote_ring = ring;
  s.remote_read = read;
  s.rkey = rkey;
  s.remote_ud_qpn = ud_qpn;
  r.remote_ud_qpn = ud_qpn;
  std::memcpy(&r.remote_ip, gid.data() + 12, 4);
  AhAttr ah;
  ah.dgid = gid;
  auto made = pd_->CreateAh(ah);
  if (!made.ok()) return made.status();
  s.ah = *std::move(made);
  return absl::OkStatus();
}

absl::Status Worker::AddFaultRules() {
  if (!o_.faults) return absl::OkStatus();
  // Loss (drop; corrupt, which the receiver's ICRC check turns into a
  // loss) on every packet that leaves this process, UD included: UD may
  // lose datagrams. Duplicates, reordering and delay only on this
  // process's RC QPs (a rule's qp= matches the sending or the receiving
  // QP): so a UD datagram that arrives twice or out of order is a finding.
  std::string rules = "drop prob=0.005; corrupt prob=0.002";
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    for (const Qp* qp : {out_[p].qp.get(), in_[p].qp.get()}) {
      const uint32_t qpn = qp->qp_num();
      for (int q = 0; q < o_.procs; ++q) {
        if (q != o_.index && out_[q].remote_ud_qpn == qpn) {
          return Errno(EINVAL,
                       "RC QP %u has the number of process %d's UD QP: "
                       "a qp= rule would match UD too",
                       qpn, q);
        }
      }
      absl::StrAppend(&rules, "; dup qp=", qpn, " prob=0.005; reorder qp=",
                      qpn, " prob=0.005; delay qp=", qpn,
                      " us=500 prob=0.002");
    }
  }
  return sim::AsSimProvider(provider_.get())->fabric().AddFaults(rules);
}

absl::Status Worker::Barrier(const std::string& name,
                             absl::Duration timeout) {
  if (!PublishFile(o_.dir, absl::StrCat(name, ".", o_.index), name)) {
    return Errno(EIO, "cannot write %s/%s.%d", o_.dir, name, o_.index);
  }
  for (int p = 0; p < o_.procs; ++p) {
    std::string text;
    if (!AwaitFile(o_.dir, absl::StrCat(name, ".", p), timeout, &text)) {
      return Errno(ETIMEDOUT, "process %d did not reach '%s' in %s", p, name,
                   absl::FormatDuration(timeout));
    }
  }
  return absl::OkStatus();
}

absl::Status Worker::Setup() {
  if (absl::Status st = CreateObjects(); !st.ok()) return st;
  if (!PublishFile(o_.dir, absl::StrCat("info.", o_.index), InfoText())) {
    return Errno(EIO, "cannot write %s/info.%d", o_.dir, o_.index);
  }
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    std::string info;
    if (!AwaitFile(o_.dir, absl::StrCat("info.", p), kMeetTimeout, &info)) {
      return Errno(ETIMEDOUT, "process %d published nothing in %s", p,
                   absl::FormatDuration(kMeetTimeout));
    }
    if (absl::Status st = ConnectTo(p, info); !st.ok()) return st;
  }
  if (absl::Status st = AddFaultRules(); !st.ok()) return st;
  // UD to RTS, then every receive posted.
  const EndpointAttr attr = QpAttrs();
  if (absl::Status st = ModifyQpToRtr(ud_qp_.get(), attr, 0, Gid{}, 0);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = ModifyQpToRts(ud_qp_.get(), attr, 0); !st.ok()) {
    return st;
  }
  for (int i = 0; i < ud_recvs_; ++i) {
    if (absl::Status st = Repost(ud_qp_.get(), WrId(Tag::kRecvUd, 0, i, 0),
                                 ud_recv_ + static_cast<size_t>(i) * (kGrh + kMaxUd),
                                 kGrh + kMaxUd);
        !st.ok()) {
      return st;
    }
  }
  for (int p = 0; p < o_.procs; ++p) {
    if (p == o_.index) continue;
    for (int i = 0; i < kAckRecvs; ++i) {
      if (absl::Status st =
              Repost(out_[p].qp.get(), WrId(Tag::kRecvAck, p, i, 0),
                     out_[p].ack_recv + i * kAckBytes, kAckBytes);
          !st.ok()) {
        return st;
      }
    }
    for (int i = 0; i < kRecvSlots; ++i) {
      if (absl::Status st =
              Repost(in_[p].qp.get(), WrId(Tag::kRecvData, p, i, 0),
                     in_[p].recv + static_cast<size_t>(i) * kMaxMsg, kMaxMsg);
          !st.ok()) {
        return st;
      }
    }
  }
  // Nobody sends before every process is ready to receive.
  return Barrier("ready", kMeetTimeout);
}

}  // namespace verbsim::soak
