// Running a litmus test once: the buffers and QPs on a fresh simulated
// fabric, then the program's steps, CPU looks included, and what it
// observed.
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/provider.h"
#include "sim/sim_provider.h"
#include "tools/verbsim/litmus.h"
#include "tools/verbsim/litmus_internal.h"

namespace verbsim::cli {
namespace {

using litmus_internal::MtuFromBytes;
using litmus_internal::NodeIndex;

constexpr int kMaxLooks = 200000;  // CPU looks before an await gives up

struct Buffer {
  int node = 0;
  uint64_t size = 0;
  std::unique_ptr<uint8_t, decltype(&std::free)> bytes{nullptr, &std::free};
};

struct QpEnds {
  int from = 0, to = 0;
  std::unique_ptr<Endpoint> client;  // on `from`
  std::unique_ptr<Endpoint> server;  // on `to`
  std::map<std::string, std::unique_ptr<Mr>> client_mrs, server_mrs;
  uint64_t posted = 0;
  std::deque<WorkCompletion> send_done;  // polled, not yet taken by `wait`
  std::deque<WorkCompletion> recv_done;
  std::vector<uint64_t> order;  // wr_ids in completion order
  uint64_t completed = 0;
  std::string error;  // the first failed completion
};

std::string BytesValue(const Buffer &b) {
  std::set<int> seen;
  for (uint64_t i = 0; i < b.size; ++i) seen.insert(b.bytes.get()[i]);
  return absl::StrJoin(seen, "/");
}

uint64_t U64Value(const Buffer &b) {
  uint64_t v = 0;
  std::memcpy(&v, b.bytes.get(), std::min<uint64_t>(8, b.size));
  return v;
}

class Runner {
 public:
  Runner(const LitmusTest &test, const std::string &profile, uint64_t seed,
         bool timeline)
      : test_(test), profile_(profile), seed_(seed), timeline_(timeline) {}

  absl::StatusOr<LitmusRun> Run() {
    absl::StatusOr<std::unique_ptr<sim::SimProvider>> provider =
        sim::SimProvider::Create(
            absl::StrCat(profile_, ",nodes=", test_.nodes, ",seed=", seed_));
    if (!provider.ok()) return provider.status();
    provider_ = *std::move(provider);
    std::vector<std::string> outcome;
    bool program_started = false;
    // Buffers first, then the QPs (each registers every buffer of its
    // nodes), then the program.
    std::vector<const LitmusStep *> steps;
    for (const char *kind : {"buf", "qp", ""}) {
      for (const LitmusStep &s : test_.steps) {
        const bool declared = s.words[0] == "buf" || s.words[0] == "qp";
        if (*kind != '\0' ? s.words[0] == kind : !declared) {
          steps.push_back(&s);
        }
      }
    }
    for (const LitmusStep *step : steps) {
      const LitmusStep &s = *step;
      const std::string &verb = s.words[0];
      if (verb != "qp" && verb != "buf" && !program_started) {
        program_started = true;
        if (timeline_) provider_->fabric().KeepTrace(true);
        start_ns_ = NowNs();
      }
      if (timeline_ && program_started) {
        absl::StrAppendFormat(&steps_, "%12.3fus  line %-3d %s\n",
                              (NowNs() - start_ns_) / 1000.0, s.line,
                              absl::StrJoin(s.words, " "));
      }
      absl::StatusOr<std::string> seen = Step(s);
      if (!seen.ok()) {
        return absl::Status(seen.status().code(),
                            absl::StrCat(test_.file, ":", s.line, ": ",
                                         seen.status().message()));
      }
      if (!seen->empty()) {
        outcome.push_back(*seen);
        if (timeline_)
          absl::StrAppend(&steps_, "                        ", *seen, "\n");
      }
    }
    provider_->fabric().RunUntilIdle(absl::Seconds(1));
    LitmusRun run;
    run.outcome = absl::StrJoin(outcome, " ");
    for (auto &[name, q] : qps_) {
      if (!q.error.empty()) {
        run.outcome = absl::StrCat("error: ", q.error);
        break;
      }
    }
    if (timeline_) {
      run.timeline = absl::StrCat("program (times from its first step):\n",
                                  steps_, "\npackets and completions:\n",
                                  provider_->fabric().TraceText(),
                                  "\noutcome: ", run.outcome, "\n");
    }
    // Objects go before the buffers they name, the MRs before their PDs.
    for (auto &[name, q] : qps_) {
      q.client_mrs.clear();
      q.server_mrs.clear();
    }
    qps_.clear();
    return run;
  }

 private:
  int64_t NowNs() {
    return absl::ToInt64Nanoseconds(provider_->fabric().Now());
  }

  absl::StatusOr<std::string> Step(const LitmusStep &s) {
    const auto &w = s.words;
    const std::string &verb = w[0];
    if (verb == "buf") return MakeBuf(w);
    if (verb == "qp") return Connect(w);
    if (verb == "post") return Post(w);
    if (verb == "store") {
      Buffer &b = bufs_.at(w[1]);
      std::memset(b.bytes.get(), std::stoi(w[3]), b.size);
      return std::string();
    }
    if (verb == "await") {
      const uint64_t want = std::stoull(w.back());
      const bool u64 = w.size() == 5;
      Buffer &b = bufs_.at(w[1]);
      auto holds = [&] {
        if (u64) return U64Value(b) == want;
        for (uint64_t i = 0; i < b.size; ++i) {
          if (b.bytes.get()[i] != want) return false;
        }
        return true;
      };
      for (int look = 0; !holds(); ++look) {
        if (look == kMaxLooks) return std::string("await=timeout");
        Look();
      }
      return std::string();
    }
    if (verb == "wait") {
      QpEnds &q = qps_.at(w[1]);
      for (int look = 0; q.completed < q.posted; ++look) {
        if (look == kMaxLooks) return std::string("wait=timeout");
        Look(&q);
        while (!q.send_done.empty()) {
          const WorkCompletion wc = q.send_done.front();
          q.send_done.pop_front();
          ++q.completed;
          q.order.push_back(wc.wr_id);
          if (wc.status != WcStatus::kSuccess && q.error.empty()) {
            q.error = absl::StrCat(w[1], " wr ", wc.wr_id, " ",
                                   WcStatusName(wc.status));
          }
        }
      }
      return std::string();
    }
    if (verb == "awaitrecv") {
      QpEnds &q = qps_.at(w[1]);
      for (int look = 0; q.recv_done.empty(); ++look) {
        if (look == kMaxLooks) return std::string("awaitrecv=timeout");
        Look(&q, /*recv=*/true);
      }
      q.recv_done.pop_front();
      return std::string();
    }
    if (verb == "run") {
      provider_->fabric().RunUntilIdle(absl::Seconds(1));
      Look();
      return std::string();
    }
    if (verb == "observe") {
      if (w[3] == "order") {
        return absl::StrCat(w[1], "=", absl::StrJoin(qps_.at(w[4]).order, ","));
      }
      const Buffer &b = bufs_.at(w[3]);
      return absl::StrCat(
          w[1], "=", w.size() == 5 ? absl::StrCat(U64Value(b)) : BytesValue(b));
    }
    return absl::InternalError(absl::StrCat("no step '", verb, "'"));
  }

  // One look by a CPU: one CQ polled once (when it finds nothing, the sim
  // moves virtual time on to its next moment). Completions are kept for the
  // `wait` or `awaitrecv` that wants them. A CPU spinning on memory polls the
  // first QP's send CQ.
  void Look(QpEnds *q = nullptr, bool recv = false) {
    if (q == nullptr) q = &qps_.begin()->second;
    WorkCompletion wcs[16];
    Cq *cq = recv ? q->server->recv_cq() : q->client->send_cq();
    absl::StatusOr<int> n = cq->Poll(wcs);
    for (int i = 0; n.ok() && i < *n; ++i) {
      (recv ? q->recv_done : q->send_done).push_back(wcs[i]);
    }
  }

  absl::StatusOr<std::string> MakeBuf(const std::vector<std::string> &w) {
    Buffer b;
    b.node = NodeIndex(w[1].substr(0, 1));
    b.size = std::stoull(w[2]);
    const uint64_t rounded = (b.size + 4095) / 4096 * 4096;
    b.bytes.reset(static_cast<uint8_t *>(std::aligned_alloc(4096, rounded)));
    if (b.bytes == nullptr) return Errno(ENOMEM, "buffer of %d bytes", b.size);
    std::memset(b.bytes.get(), std::stoi(w[4]), rounded);
    bufs_.emplace(w[1], std::move(b));
    return std::string();
  }

  // Registers every buffer of `node` on `ep`.
  absl::Status RegisterAll(Endpoint &ep, int node,
                           std::map<std::string, std::unique_ptr<Mr>> &mrs) {
    for (auto &[name, b] : bufs_) {
      if (b.node != node) continue;
      const uint32_t base =
          kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
      absl::StatusOr<std::unique_ptr<Mr>> mr =
          ep.RegMr(b.bytes.get(), b.size, base | kAccessRemoteAtomic);
      if (!mr.ok()) mr = ep.RegMr(b.bytes.get(), b.size, base);  // no atomics
      if (!mr.ok()) return mr.status();
      mrs[name] = *std::move(mr);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Connect(const std::vector<std::string> &w) {
    QpEnds q;
    q.from = NodeIndex(w[2]);
    q.to = NodeIndex(w[3]);
    EndpointAttr attr;
    attr.cap.max_send_wr = 64;
    attr.cap.max_inline_data = 64;
    for (size_t i = 4; i < w.size(); ++i) {
      attr.path_mtu = *MtuFromBytes(std::stoull(w[i].substr(4)));
    }
    attr.device = absl::StrCat("sim", q.from);
    EndpointAttr server_attr = attr;
    server_attr.device = absl::StrCat("sim", q.to);
    const std::string address =
        absl::StrCat("sim", q.to, ":", 18000 + qps_.size());
    absl::StatusOr<std::unique_ptr<Listener>> listener =
        provider_->Listen(address, server_attr);
    if (!listener.ok()) return listener.status();
    absl::StatusOr<std::unique_ptr<Endpoint>> client =
        provider_->Connect(address, attr);
    if (!client.ok()) return client.status();
    absl::StatusOr<std::unique_ptr<Endpoint>> server =
        (*listener)->Accept(absl::Seconds(10));
    if (!server.ok()) return server.status();
    q.client = *std::move(client);
    q.server = *std::move(server);
    if (auto s = q.client->WaitConnected(); !s.ok()) return s;
    if (auto s = q.server->WaitConnected(); !s.ok()) return s;
    if (auto s = RegisterAll(*q.client, q.from, q.client_mrs); !s.ok())
      return s;
    if (auto s = RegisterAll(*q.server, q.to, q.server_mrs); !s.ok()) return s;
    qps_.emplace(w[1], std::move(q));
    return std::string();
  }

  absl::StatusOr<std::string> Post(const std::vector<std::string> &w) {
    QpEnds &q = qps_.at(w[1]);
    const std::string &op = w[2];
    const bool to_remote = op == "write" || op == "send";
    const std::string &local = to_remote ? w[3] : w[3];
    const std::string &remote = w[5];
    Buffer &lb = bufs_.at(local);
    Buffer &rb = bufs_.at(remote);
    Sge sge;
    sge.addr = reinterpret_cast<uint64_t>(lb.bytes.get());
    sge.length = static_cast<uint32_t>(op == "read"   ? rb.size
                                       : op == "fadd" ? 8
                                                      : lb.size);
    sge.lkey = q.client_mrs.at(local)->lkey();
    SendWr wr;
    wr.wr_id = ++q.posted;
    wr.sg_list = {&sge, 1};
    wr.send_flags = kSendSignaled;
    const size_t flags_at = op == "fadd" ? 7 : 6;
    uint32_t imm = 0;
    bool with_imm = false;
    for (size_t i = flags_at; i < w.size(); ++i) {
      if (w[i] == "fence") wr.send_flags |= kSendFence;
      if (w[i] == "inline") wr.send_flags |= kSendInline;
      if (absl::StartsWith(w[i], "imm=")) {
        with_imm = true;
        imm = static_cast<uint32_t>(std::stoul(w[i].substr(4)));
      }
    }
    const uint32_t rkey = q.server_mrs.at(remote)->rkey();
    const uint64_t raddr = reinterpret_cast<uint64_t>(rb.bytes.get());
    if (op == "write") {
      wr.opcode = with_imm ? WrOpcode::kRdmaWriteWithImm : WrOpcode::kRdmaWrite;
      wr.imm_data = imm;
      wr.rdma.remote_addr = raddr;
      wr.rdma.rkey = rkey;
      if (with_imm) {
        RecvWr r;
        r.wr_id = wr.wr_id;
        if (auto s = q.server->qp()->PostRecv(r); !s.ok()) return s;
      }
    } else if (op == "send") {
      wr.opcode = WrOpcode::kSend;
      Sge rsge;
      rsge.addr = raddr;
      rsge.length = static_cast<uint32_t>(rb.size);
      rsge.lkey = q.server_mrs.at(remote)->lkey();
      RecvWr r;
      r.wr_id = wr.wr_id;
      r.sg_list = {&rsge, 1};
      if (auto s = q.server->qp()->PostRecv(r); !s.ok()) return s;
    } else if (op == "read") {
      wr.opcode = WrOpcode::kRdmaRead;
      wr.rdma.remote_addr = raddr;
      wr.rdma.rkey = rkey;
    } else {
      wr.opcode = WrOpcode::kAtomicFetchAndAdd;
      wr.atomic.remote_addr = raddr;
      wr.atomic.rkey = rkey;
      wr.atomic.compare_add = std::stoull(w[6]);
    }
    if (auto s = q.client->qp()->PostSend(wr); !s.ok()) return s;
    return std::string();
  }

  const LitmusTest &test_;
  const std::string profile_;
  const uint64_t seed_;
  const bool timeline_;
  std::unique_ptr<sim::SimProvider> provider_;
  std::map<std::string, Buffer> bufs_;  // before qps_: outlives the MRs
  std::map<std::string, QpEnds> qps_;
  std::string steps_;
  int64_t start_ns_ = 0;
};

}  // namespace

absl::StatusOr<LitmusRun> RunLitmus(const LitmusTest &test,
                                    const std::string &profile, uint64_t seed,
                                    bool timeline) {
  Runner runner(test, profile, seed, timeline);
  return runner.Run();
}

}  // namespace verbsim::cli
