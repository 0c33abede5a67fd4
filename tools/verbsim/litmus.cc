#include "tools/verbsim/litmus.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/endpoint.h"
#include "core/errors.h"
#include "core/names.h"
#include "core/provider.h"
#include "sim/profile.h"
#include "sim/sim_provider.h"

namespace verbsim::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kMaxLooks = 200000;  // CPU looks before an await gives up

const char kLitmusHelp[] =
    R"(usage: verbsim litmus FILE... [options]

Runs each litmus test (docs/litmus/*.litmus; the format is in docs/cli.md)
once per seed and prints the histogram of outcomes, each marked with what
docs/ordering.md says of it: strong (every device), weak (allowed by the
rule named, reached on a profile that takes the weak choice), or FORBIDDEN.
Exit 1 when an outcome is forbidden, when a weak outcome shows on a profile
that does not allow it, or when a weak outcome the profile allows was not
reached in the seeds run.

options:
  --profile=P[,P..] sim profiles to run on: ibta (default), rxe, siw, or all
  --seeds=N         seeds 1..N per profile (default 200)
  --seed=S          run seed S only and print its timeline: the program's
                    steps with their virtual times, then every packet and
                    completion
  --quiet           print only failures and one summary line per file

Example:
  verbsim litmus docs/litmus/mp-flag.litmus --profile=ibta,rxe --seeds=200
  verbsim litmus docs/litmus/mp-flag.litmus --profile=ibta --seed=7
)";

// --- Parsing ------------------------------------------------------------

// Splits a line into words: '#' starts a comment, "..." is one word.
absl::StatusOr<std::vector<std::string>> Words(absl::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#') {
      break;
    } else if (c == '"') {
      const size_t end = line.find('"', i + 1);
      if (end == absl::string_view::npos) {
        return absl::InvalidArgumentError("a quote is not closed");
      }
      words.emplace_back(line.substr(i + 1, end - i - 1));
      i = end + 1;
    } else {
      size_t end = i;
      while (end < line.size() && line[end] != ' ' && line[end] != '\t' &&
             line[end] != '\r') {
        ++end;
      }
      words.emplace_back(line.substr(i, end - i));
      i = end;
    }
  }
  return words;
}

int NodeIndex(absl::string_view name) {
  if (name.size() != 1 || name[0] < 'A' || name[0] > 'C') return -1;
  return name[0] - 'A';
}

// What the parser knows while it checks a file.
struct Checker {
  const LitmusTest &test;
  std::map<std::string, int> bufs;  // "B.data" -> node
  std::map<std::string, uint64_t> buf_sizes;
  std::map<std::string, std::pair<int, int>> qps;  // name -> (from, to)
  std::vector<std::string> observed;               // names, in order

  absl::Status Error(int line, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(test.file, ":", line, ": ", what));
  }
  absl::Status Buf(int line, const std::string &name, int node) const {
    auto it = bufs.find(name);
    if (it == bufs.end()) {
      return Error(line, absl::StrCat("no buffer '", name,
                                      "' (declare it with buf first)"));
    }
    if (node >= 0 && it->second != node) {
      return Error(line, absl::StrCat("buffer '", name, "' is on node ",
                                      std::string(1, 'A' + it->second),
                                      ", not ", std::string(1, 'A' + node)));
    }
    return absl::OkStatus();
  }
};

bool ParseU64(absl::string_view s, uint64_t *v) {
  return absl::SimpleAtoi(s, v);
}

// The MTU enum of `bytes` (256 .. 4096), or nothing.
std::optional<Mtu> MtuFromBytes(uint64_t bytes) {
  for (Mtu m : {Mtu::k256, Mtu::k512, Mtu::k1024, Mtu::k2048, Mtu::k4096}) {
    if (static_cast<uint64_t>(MtuBytes(m)) == bytes) return m;
  }
  return std::nullopt;
}

absl::Status CheckStep(Checker &c, const LitmusStep &s) {
  const auto &w = s.words;
  const std::string &verb = w[0];
  auto need = [&](size_t n, absl::string_view form) -> absl::Status {
    if (w.size() < n) {
      return c.Error(s.line, absl::StrCat("expected: ", form));
    }
    return absl::OkStatus();
  };
  if (verb == "qp") {
    if (auto st = need(4, "qp NAME FROM TO [mtu=N]"); !st.ok()) return st;
    const int from = NodeIndex(w[2]), to = NodeIndex(w[3]);
    if (from < 0 || to < 0 || from >= c.test.nodes || to >= c.test.nodes ||
        from == to) {
      return c.Error(
          s.line,
          absl::StrCat("qp '", w[1], "': nodes '", w[2], "' and '", w[3],
                       "' must be two different nodes of "
                       "A..",
                       std::string(1, 'A' + c.test.nodes - 1)));
    }
    if (!c.qps.emplace(w[1], std::make_pair(from, to)).second) {
      return c.Error(s.line, absl::StrCat("qp '", w[1], "' declared twice"));
    }
    for (size_t i = 4; i < w.size(); ++i) {
      uint64_t mtu = 0;
      if (!absl::StartsWith(w[i], "mtu=") || !ParseU64(w[i].substr(4), &mtu) ||
          !MtuFromBytes(mtu).has_value()) {
        return c.Error(s.line, absl::StrCat("unexpected '", w[i],
                                            "' (mtu=256|512|1024|2048|4096)"));
      }
    }
    return absl::OkStatus();
  }
  if (verb == "buf") {
    uint64_t size = 0, value = 0;
    if (w.size() != 5 || w[3] != "=" || !ParseU64(w[2], &size) || size == 0 ||
        size > (1u << 24) || !ParseU64(w[4], &value) || value > 255) {
      return c.Error(s.line,
                     "expected: buf NODE.NAME SIZE = BYTE (SIZE 1..16M, BYTE "
                     "0..255)");
    }
    std::vector<std::string> parts = absl::StrSplit(w[1], '.');
    const int node = parts.size() == 2 ? NodeIndex(parts[0]) : -1;
    if (node < 0 || node >= c.test.nodes || parts[1].empty()) {
      return c.Error(s.line, absl::StrCat("buffer '", w[1],
                                          "' must be NODE.NAME, e.g. B.data"));
    }
    if (!c.bufs.emplace(w[1], node).second) {
      return c.Error(s.line,
                     absl::StrCat("buffer '", w[1], "' declared twice"));
    }
    c.buf_sizes[w[1]] = size;
    return absl::OkStatus();
  }
  if (verb == "post") {
    if (auto st = need(4, "post QP OP ..."); !st.ok()) return st;
    auto q = c.qps.find(w[1]);
    if (q == c.qps.end()) {
      return c.Error(s.line, absl::StrCat("no qp '", w[1], "'"));
    }
    const int from = q->second.first, to = q->second.second;
    const std::string &op = w[2];
    size_t flags_at = 0;
    if (op == "write" || op == "send") {
      if (auto st = need(6, absl::StrCat("post QP ", op, " SRC -> DST"));
          !st.ok() || w[4] != "->") {
        return c.Error(s.line, absl::StrCat("expected: post QP ", op,
                                            " SRC -> DST [flags]"));
      }
      if (auto st = c.Buf(s.line, w[3], from); !st.ok()) return st;
      if (auto st = c.Buf(s.line, w[5], to); !st.ok()) return st;
      if (c.buf_sizes[w[5]] < c.buf_sizes[w[3]]) {
        return c.Error(
            s.line, absl::StrCat("'", w[5], "' is smaller than '", w[3], "'"));
      }
      flags_at = 6;
    } else if (op == "read" || op == "fadd") {
      if (w.size() < 6 || w[4] != "<-") {
        return c.Error(s.line,
                       absl::StrCat("expected: post QP ", op, " DST <- SRC",
                                    op == "fadd" ? " ADD" : "", " [flags]"));
      }
      if (auto st = c.Buf(s.line, w[3], from); !st.ok()) return st;
      if (auto st = c.Buf(s.line, w[5], to); !st.ok()) return st;
      if (c.buf_sizes[w[3]] < c.buf_sizes[w[5]] && op == "read") {
        return c.Error(
            s.line, absl::StrCat("'", w[3], "' is smaller than '", w[5], "'"));
      }
      flags_at = 6;
      if (op == "fadd") {
        uint64_t add = 0;
        if (w.size() < 7 || !ParseU64(w[6], &add)) {
          return c.Error(s.line, "expected: post QP fadd DST <- SRC ADD");
        }
        if (c.buf_sizes[w[3]] < 8 || c.buf_sizes[w[5]] < 8) {
          return c.Error(s.line, "fadd needs 8-byte buffers");
        }
        flags_at = 7;
      }
    } else {
      return c.Error(s.line, absl::StrCat("unknown operation '", op,
                                          "' (write, send, read, fadd)"));
    }
    for (size_t i = flags_at; i < w.size(); ++i) {
      uint64_t imm = 0;
      if (w[i] == "fence" || w[i] == "inline" ||
          (absl::StartsWith(w[i], "imm=") && op == "write" &&
           ParseU64(w[i].substr(4), &imm))) {
        continue;
      }
      return c.Error(s.line, absl::StrCat("unexpected '", w[i],
                                          "' (flags: fence, inline, imm=N)"));
    }
    return absl::OkStatus();
  }
  if (verb == "store") {
    uint64_t v = 0;
    if (w.size() != 4 || w[2] != "=" || !ParseU64(w[3], &v) || v > 255) {
      return c.Error(s.line, "expected: store BUF = BYTE");
    }
    return c.Buf(s.line, w[1], -1);
  }
  if (verb == "await") {
    uint64_t v = 0;
    const bool u64 = w.size() == 5 && w[2] == "u64";
    if (!(w.size() == 4 || u64) || w[w.size() - 2] != "==" ||
        !ParseU64(w.back(), &v) || (!u64 && v > 255)) {
      return c.Error(s.line,
                     "expected: await BUF == BYTE or await BUF u64 == N");
    }
    return c.Buf(s.line, w[1], -1);
  }
  if (verb == "wait" || verb == "awaitrecv") {
    if (w.size() != 2 || c.qps.count(w[1]) == 0) {
      return c.Error(s.line, absl::StrCat("expected: ", verb, " QP"));
    }
    return absl::OkStatus();
  }
  if (verb == "run") {
    if (w.size() != 1) return c.Error(s.line, "expected: run");
    return absl::OkStatus();
  }
  if (verb == "observe") {
    if (w.size() < 4 || w[2] != "=") {
      return c.Error(s.line,
                     "expected: observe NAME = BUF [u64] or observe NAME = "
                     "order QP");
    }
    for (const std::string &o : c.observed) {
      if (o == w[1]) {
        return c.Error(s.line, absl::StrCat("'", w[1], "' observed twice"));
      }
    }
    c.observed.push_back(w[1]);
    if (w[3] == "order") {
      if (w.size() != 5 || c.qps.count(w[4]) == 0) {
        return c.Error(s.line, "expected: observe NAME = order QP");
      }
      return absl::OkStatus();
    }
    if (w.size() == 5 && w[4] != "u64") {
      return c.Error(s.line, absl::StrCat("unexpected '", w[4], "'"));
    }
    if (w.size() > 5) return c.Error(s.line, "too many words");
    return c.Buf(s.line, w[3], -1);
  }
  return c.Error(s.line, absl::StrCat("unknown command '", verb, "'"));
}

// --- Running --------------------------------------------------------------

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

// The MemoryModel field that makes a rule's weak outcomes reachable.
absl::StatusOr<bool> RuleIsWeak(const sim::SimProfile &p,
                                const std::string &rule) {
  if (rule == "B1") return !p.memory.gathers_at_post;
  if (rule == "W2") return !p.memory.places_messages_in_order;
  if (rule == "R3") return !p.memory.fetches_reads_in_order;
  return absl::InvalidArgumentError(
      absl::StrCat("no weak behaviour is governed by rule '", rule,
                   "' (weak outcomes name B1, W2 or R3 of docs/ordering.md)"));
}

// What a file needs of the device (`needs atomics`, `needs imm`): "" when
// the profile has it, else why the file is skipped there.
std::string Missing(const LitmusTest &t, const sim::SimProfile &p) {
  for (const LitmusStep &s : t.steps) {
    for (const std::string &w : s.words) {
      if (s.words[0] != "post") break;
      if (w == "fadd" && p.device.atomic_cap == AtomicCap::kNone) {
        return "the device has no atomics";
      }
      if (absl::StartsWith(w, "imm=") &&
          (p.post_send.refused_opcodes &
           (1u << static_cast<int>(WrOpcode::kRdmaWriteWithImm)))) {
        return "the device has no RDMA write with immediate";
      }
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<LitmusTest> ParseLitmus(absl::string_view file,
                                       absl::string_view text) {
  LitmusTest t;
  t.file = std::string(file);
  Checker c{t, {}, {}, {}, {}};
  int line_no = 0;
  std::vector<LitmusStep> program;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::StatusOr<std::vector<std::string>> words = Words(line);
    if (!words.ok()) return c.Error(line_no, words.status().message());
    if (words->empty()) continue;
    const std::vector<std::string> &w = *words;
    if (w[0] == "litmus") {
      if (w.size() != 2) return c.Error(line_no, "expected: litmus NAME");
      t.name = w[1];
    } else if (w[0] == "about") {
      t.about = absl::StrJoin(w.begin() + 1, w.end(), " ");
    } else if (w[0] == "nodes") {
      if (w.size() != 2 || (w[1] != "2" && w[1] != "3") || !program.empty()) {
        return c.Error(line_no, "expected: nodes 2|3, before the program");
      }
      t.nodes = std::stoi(w[1]);
    } else if (w[0] == "outcome") {
      LitmusOutcome o;
      o.line = line_no;
      size_t i = 1;
      std::vector<std::string> obs;
      while (i < w.size() && absl::StrContains(w[i], '='))
        obs.push_back(w[i++]);
      if (obs.empty() || i >= w.size() ||
          (w[i] != "strong" && w[i] != "weak")) {
        return c.Error(line_no,
                       "expected: outcome NAME=VALUE... strong|weak [RULE] "
                       "\"what it means\"");
      }
      o.observed = absl::StrJoin(obs, " ");
      o.weak = w[i++] == "weak";
      if (o.weak) {
        if (i >= w.size())
          return c.Error(line_no, "a weak outcome names its rule");
        o.rule = w[i++];
      }
      if (i < w.size()) o.about = w[i++];
      if (i < w.size()) {
        return c.Error(line_no, absl::StrCat("unexpected '", w[i], "'"));
      }
      t.outcomes.push_back(std::move(o));
    } else {
      LitmusStep s;
      s.line = line_no;
      s.words = w;
      program.push_back(std::move(s));
    }
  }
  if (t.name.empty()) return c.Error(1, "the file starts with: litmus NAME");
  for (const LitmusStep &s : program) {
    if (absl::Status st = CheckStep(c, s); !st.ok()) return st;
  }
  if (c.observed.empty()) return c.Error(line_no, "nothing is observed");
  if (t.outcomes.empty()) return c.Error(line_no, "no outcome is listed");
  std::set<std::string> listed;
  for (const LitmusOutcome &o : t.outcomes) {
    std::vector<std::string> names;
    for (absl::string_view kv : absl::StrSplit(o.observed, ' ')) {
      names.emplace_back(kv.substr(0, kv.find('=')));
    }
    if (names != c.observed) {
      return c.Error(o.line, absl::StrCat("an outcome names every observation "
                                          "in program order: ",
                                          absl::StrJoin(c.observed, " ")));
    }
    if (!listed.insert(o.observed).second) {
      return c.Error(o.line,
                     absl::StrCat("outcome '", o.observed, "' listed twice"));
    }
    if (o.weak) {
      sim::SimProfile p;
      if (absl::StatusOr<bool> r = RuleIsWeak(p, o.rule); !r.ok()) {
        return c.Error(o.line, r.status().message());
      }
    }
  }
  t.steps = std::move(program);
  return t;
}

absl::StatusOr<LitmusRun> RunLitmus(const LitmusTest &test,
                                    const std::string &profile, uint64_t seed,
                                    bool timeline) {
  Runner runner(test, profile, seed, timeline);
  return runner.Run();
}

absl::StatusOr<bool> ProfileAllowsRule(const std::string &profile,
                                       const std::string &rule) {
  absl::StatusOr<sim::SimProfile> p = sim::ProfileByName(profile);
  if (!p.ok()) return p.status();
  return RuleIsWeak(*p, rule);
}

const char *LitmusHelp() { return kLitmusHelp; }

namespace {

int Usage(const std::string &message) {
  std::fprintf(stderr, "verbsim litmus: %s\n(see verbsim help litmus)\n",
               message.c_str());
  return kExitUsage;
}

struct Row {
  int count = 0;
  uint64_t first_seed = 0;
};

// Runs one file on one profile over `seeds` seeds; prints the histogram.
// Returns whether the model held.
absl::StatusOr<bool> Sweep(const LitmusTest &t, const std::string &profile,
                           uint64_t seeds, bool quiet) {
  absl::StatusOr<sim::SimProfile> p = sim::ProfileByName(profile);
  if (!p.ok()) return p.status();
  if (const std::string why = Missing(t, *p); !why.empty()) {
    std::printf("%s on sim:%s: skipped, %s\n", t.name.c_str(), profile.c_str(),
                why.c_str());
    return true;
  }
  std::map<std::string, Row> seen;
  std::vector<std::string> order;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    absl::StatusOr<LitmusRun> run = RunLitmus(t, profile, seed, false);
    if (!run.ok()) return run.status();
    Row &row = seen[run->outcome];
    if (row.count++ == 0) {
      row.first_seed = seed;
      order.push_back(run->outcome);
    }
  }
  std::vector<std::string> failures;
  std::vector<std::string> lines;
  auto describe = [&](const std::string &outcome) -> const LitmusOutcome * {
    for (const LitmusOutcome &o : t.outcomes) {
      if (o.observed == outcome) return &o;
    }
    return nullptr;
  };
  for (const LitmusOutcome &o : t.outcomes) {
    const bool allowed_here = !o.weak || *RuleIsWeak(*p, o.rule);
    auto it = seen.find(o.observed);
    const int count = it == seen.end() ? 0 : it->second.count;
    std::string mark = o.weak ? absl::StrCat("weak ", o.rule) : "strong";
    if (o.weak && !allowed_here && count > 0) {
      mark = absl::StrCat("weak ", o.rule, ", NOT ON THIS PROFILE");
      failures.push_back(absl::StrCat("'", o.observed, "' is weak (rule ",
                                      o.rule, ") and sim:", profile,
                                      " does not take that choice"));
    } else if (o.weak && allowed_here && count == 0) {
      mark = absl::StrCat("weak ", o.rule, ", NOT REACHED");
      failures.push_back(absl::StrCat("'", o.observed, "' (rule ", o.rule,
                                      ") was not reached in ", seeds,
                                      " seeds"));
    } else if (count == 0) {
      mark += o.weak ? " (not on this profile)" : " (not reached)";
    }
    lines.push_back(absl::StrFormat(
        "  %6d  %-14s %-30s %s%s", count, o.observed, mark, o.about,
        count > 0 ? absl::StrCat("  [first seed ", it->second.first_seed, "]")
                  : ""));
  }
  for (const std::string &outcome : order) {
    if (describe(outcome) != nullptr) continue;
    const Row &row = seen[outcome];
    lines.push_back(absl::StrFormat("  %6d  %-14s %-30s [first seed %d]",
                                    row.count, outcome, "FORBIDDEN",
                                    row.first_seed));
    failures.push_back(absl::StrCat("'", outcome, "' is forbidden (first seed ",
                                    row.first_seed, ")"));
  }
  const bool held = failures.empty();
  if (!quiet || !held) {
    std::printf("%s on sim:%s, %llu seeds (%s)\n", t.name.c_str(),
                profile.c_str(), static_cast<unsigned long long>(seeds),
                t.file.c_str());
    if (!quiet && !t.about.empty()) std::printf("  %s\n", t.about.c_str());
    std::printf("  %6s  %-14s %-30s %s\n", "count", "outcome", "class",
                "meaning");
    for (const std::string &l : lines) std::printf("%s\n", l.c_str());
  }
  if (held) {
    std::printf(
        "  held: nothing forbidden; every weak outcome sim:%s allows "
        "was reached\n",
        profile.c_str());
  } else {
    for (const std::string &f : failures) {
      std::printf("  FAILED: %s\n", f.c_str());
    }
  }
  if (!quiet) {
    uint64_t replay = 0;
    for (const std::string &outcome : order) {
      const LitmusOutcome *o = describe(outcome);
      if (o == nullptr || o->weak) {
        replay = seen[outcome].first_seed;
        break;
      }
    }
    if (replay != 0) {
      std::printf(
          "  replay as a timeline: verbsim litmus %s --profile=%s "
          "--seed=%llu\n",
          t.file.c_str(), profile.c_str(),
          static_cast<unsigned long long>(replay));
    }
    std::printf("\n");
  }
  return held;
}

}  // namespace

int Litmus(int argc, char **argv, int first) {
  std::vector<std::string> files, profiles = {"ibta"};
  uint64_t seeds = 200, one_seed = 0;
  bool quiet = false;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::printf("%s", kLitmusHelp);
      return kExitOk;
    }
    if (absl::StartsWith(arg, "--profile=")) {
      const std::string v = arg.substr(10);
      profiles = v == "all" ? sim::ProfileNames()
                            : std::vector<std::string>(absl::StrSplit(v, ','));
      for (const std::string &p : profiles) {
        if (!sim::ProfileByName(p).ok()) {
          return Usage(absl::StrCat("no profile '", p, "' (",
                                    absl::StrJoin(sim::ProfileNames(), ", "),
                                    ", all)"));
        }
      }
    } else if (absl::StartsWith(arg, "--seeds=")) {
      if (!absl::SimpleAtoi(arg.substr(8), &seeds) || seeds == 0 ||
          seeds > 1000000) {
        return Usage(absl::StrCat("--seeds wants 1..1000000, not '",
                                  arg.substr(8), "'"));
      }
    } else if (absl::StartsWith(arg, "--seed=")) {
      if (!absl::SimpleAtoi(arg.substr(7), &one_seed) || one_seed == 0) {
        return Usage(absl::StrCat("--seed wants a positive number, not '",
                                  arg.substr(7), "'"));
      }
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (absl::StartsWith(arg, "-")) {
      return Usage(absl::StrCat("unknown option '", arg, "'"));
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) return Usage("which litmus file?");
  std::vector<LitmusTest> tests;
  for (const std::string &f : files) {
    std::ifstream in(f);
    if (!in) return Usage(absl::StrCat("cannot read ", f));
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<LitmusTest> t = ParseLitmus(f, text.str());
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", std::string(t.status().message()).c_str());
      return kExitUsage;
    }
    tests.push_back(*std::move(t));
  }
  bool held = true;
  for (const LitmusTest &t : tests) {
    for (const std::string &profile : profiles) {
      if (one_seed != 0) {
        absl::StatusOr<LitmusRun> run = RunLitmus(t, profile, one_seed, true);
        if (!run.ok()) {
          std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
          return kExitFailed;
        }
        std::printf("%s on sim:%s, seed %llu\n%s\n", t.name.c_str(),
                    profile.c_str(), static_cast<unsigned long long>(one_seed),
                    run->timeline.c_str());
        continue;
      }
      absl::StatusOr<bool> ok = Sweep(t, profile, seeds, quiet);
      if (!ok.ok()) {
        std::fprintf(stderr, "%s\n", ok.status().ToString().c_str());
        return kExitFailed;
      }
      held = held && *ok;
    }
  }
  return held ? kExitOk : kExitFailed;
}

}  // namespace verbsim::cli
