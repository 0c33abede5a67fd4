#include "sim/sim_provider.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/cm_timing.h"
#include "core/environment.h"
#include "core/errors.h"
#include "core/names.h"
#include "sim/handles.h"

namespace verbsim::sim {

// A connection request from Connect() waiting for Accept().
struct ConnRequest {
  EndpointAttr attr;
  Qp* client_qp = nullptr;
  Gid client_gid{};
  bool client_alive = true;
  bool established = false;
  bool rejected = false;
  // When the connecting side's CM gives the request up if nobody accepted
  // it: the listener's CM answers the repeated REQ with an MRA, so the
  // request lives its first try and every MRA-stretched retry
  // (core/cm_timing.h UnansweredReqMs; the drop-in librdmacm's model).
  // Decided from this time alone, so it does not depend on who waits.
  std::chrono::steady_clock::time_point expires =
      std::chrono::steady_clock::time_point::max();
  bool Expired() const {
    return !established && !rejected &&
           std::chrono::steady_clock::now() >= expires;
  }
};

struct ListenerState {
  std::string address;
  int device = 0;
  EndpointAttr attr;
  std::deque<std::shared_ptr<ConnRequest>> pending;
};

// The rdma_cm of the sim: connection setup is in-process, so the REQ/REP/RTU
// exchange is the listener bringing both QPs to RTS in Accept().
struct SimProvider::CmState {
  std::mutex mu;  // taken before the fabric mutex, never after
  std::condition_variable cv;
  CmTiming timing;  // the kernel's, or VERBSIM_CM_*
  std::map<std::string, std::shared_ptr<ListenerState>> listeners;
  int next_port = 1;
};

namespace {

class SimConnection : public Endpoint::Connection {
 public:
  SimConnection(std::shared_ptr<SimProvider::CmState> cm,
                std::shared_ptr<ConnRequest> request)
      : cm_(std::move(cm)), request_(std::move(request)) {}
  ~SimConnection() override {
    std::lock_guard<std::mutex> lock(cm_->mu);
    request_->client_alive = false;
  }
  absl::Status WaitEstablished(absl::Duration timeout) override {
    std::unique_lock<std::mutex> lock(cm_->mu);
    const auto caller_deadline = std::chrono::steady_clock::now() +
                                 absl::ToChronoNanoseconds(timeout);
    cm_->cv.wait_until(lock, std::min(caller_deadline, request_->expires), [&] {
      return request_->established || request_->rejected;
    });
    if (request_->established) return absl::OkStatus();
    if (request_->rejected) {
      return Errno(ECONNREFUSED, "the listener went away before accepting");
    }
    if (request_->Expired()) {
      // rdma_cm's UNREACHABLE -ETIMEDOUT (cma.c cma_ib_handler,
      // IB_CM_REQ_ERROR).
      return Errno(ETIMEDOUT,
                   "connection request not accepted: the CM gave it up after "
                   "%d tries (%d ms)",
                   cm_->timing.max_retries + 1,
                   static_cast<int>(UnansweredReqMs(cm_->timing)));
    }
    return Errno(ETIMEDOUT, "not accepted within %s",
                 absl::FormatDuration(timeout));
  }

 private:
  std::shared_ptr<SimProvider::CmState> cm_;
  std::shared_ptr<ConnRequest> request_;
};

class SimListener : public Listener {
 public:
  SimListener(std::shared_ptr<SimProvider::CmState> cm,
              std::shared_ptr<Fabric> fabric,
              std::shared_ptr<ListenerState> st)
      : cm_(std::move(cm)), fabric_(std::move(fabric)), st_(std::move(st)) {}
  ~SimListener() override {
    std::lock_guard<std::mutex> lock(cm_->mu);
    cm_->listeners.erase(st_->address);
    for (auto& r : st_->pending) r->rejected = true;
    st_->pending.clear();
    cm_->cv.notify_all();
  }
  std::string address() const override { return st_->address; }

  absl::StatusOr<std::unique_ptr<Endpoint>> Accept(
      absl::Duration timeout) override {
    std::unique_lock<std::mutex> lock(cm_->mu);
    const auto deadline = absl::ToChronoTime(absl::Now() + timeout);
    while (true) {
      if (!cm_->cv.wait_until(lock, deadline,
                              [&] { return !st_->pending.empty(); })) {
        return Errno(ETIMEDOUT, "no connection request on %s within %s",
                     st_->address, absl::FormatDuration(timeout));
      }
      std::shared_ptr<ConnRequest> req = st_->pending.front();
      st_->pending.pop_front();
      if (!req->client_alive) continue;  // the connecting side went away
      // Given up by the connecting side's CM: a late answer is ignored.
      if (req->Expired()) continue;
      absl::StatusOr<std::unique_ptr<Endpoint>> server =
          Endpoint::Create(OpenSimContext(fabric_, st_->device), st_->attr);
      if (!server.ok()) {
        req->rejected = true;
        cm_->cv.notify_all();
        return server.status();
      }
      Qp* sqp = (*server)->qp();
      Qp* cqp = req->client_qp;
      auto server_gid = (*server)->context()->QueryGid(1, 0);
      if (!server_gid.ok()) return server_gid.status();
      // Both sides to RTS; each side's rq_psn is the other's sq_psn.
      MarkSimQpCmConnected(sqp);
      MarkSimQpCmConnected(cqp);
      absl::Status s = ModifyQpToInit(sqp, st_->attr);
      if (s.ok()) {
        s = ModifyQpToRtr(sqp, st_->attr, cqp->qp_num(), req->client_gid,
                          req->attr.sq_psn);
      }
      if (s.ok()) s = ModifyQpToRts(sqp, st_->attr, st_->attr.sq_psn);
      if (s.ok()) {
        s = ModifyQpToRtr(cqp, req->attr, sqp->qp_num(), *server_gid,
                          st_->attr.sq_psn);
      }
      if (s.ok()) s = ModifyQpToRts(cqp, req->attr, req->attr.sq_psn);
      if (!s.ok()) {
        req->rejected = true;
        cm_->cv.notify_all();
        return s;
      }
      req->established = true;
      cm_->cv.notify_all();
      auto server_side = std::make_shared<ConnRequest>();
      server_side->established = true;
      (*server)->set_connection(
          std::make_unique<SimConnection>(cm_, server_side));
      return server;
    }
  }

 private:
  std::shared_ptr<SimProvider::CmState> cm_;
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<ListenerState> st_;
};

// "<device>:<port>".
absl::Status SplitAddress(absl::string_view address, absl::string_view* device,
                          int* port) {
  std::vector<absl::string_view> parts = absl::StrSplit(address, ':');
  if (parts.size() != 2 || parts[0].empty() ||
      !absl::SimpleAtoi(parts[1], port) || *port < 0 || *port > 65535) {
    return Errno(EINVAL, "address '%s' is not <device>:<port>", address);
  }
  *device = parts[0];
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SimProvider>> SimProvider::Create(
    absl::string_view options) {
  FabricOptions fo;
  // VERBSIM_SEED and VERBSIM_FAULTS reach a test binary without recompiling;
  // a seed= option in the spec wins over the environment.
  const env::Number<uint64_t> seed =
      env::GetNumber<uint64_t>(env::kSeed, 0, UINT64_MAX);
  if (!seed.ok()) return Errno(EINVAL, "%s", seed.error);
  if (seed.value) fo.seed = *seed.value;
  if (std::optional<std::string> faults = env::Get(env::kFaults)) {
    fo.faults = *faults;
  }
  // VERBSIM_ADDR_BASE moves the nodes' addresses (sim/addresses.h); an
  // addr_base= option in the spec wins over it.
  if (std::optional<std::string> base = env::Get(env::kAddressBase)) {
    absl::StatusOr<uint32_t> ip = ParseIpv4(*base);
    if (!ip.ok()) {
      return Errno(EINVAL, "%s: %s", env::kAddressBase, ip.status().message());
    }
    fo.address_base = *ip;
  }
  std::string profile_name;
  // VERBSIM_UDP adds UDP transport options ("udp=<port>,local=<i>") to the
  // spec, so that an unmodified program can run on one node of a fabric
  // spread over processes (docs/udp-transport.md).
  std::string all_options(options);
  if (std::optional<std::string> udp = env::Get(env::kUdp)) {
    absl::StrAppend(&all_options, ",", *udp);
  }
  bool local_all = false;
  for (absl::string_view part :
       absl::StrSplit(all_options, ',', absl::SkipEmpty())) {
    if (absl::StartsWith(part, "nodes=")) {
      if (!absl::SimpleAtoi(part.substr(6), &fo.nodes) || fo.nodes < 1 ||
          fo.nodes > 4096) {
        return Errno(EINVAL, "sim option '%s': nodes must be 1..4096", part);
      }
    } else if (absl::StartsWith(part, "seed=")) {
      if (!absl::SimpleAtoi(part.substr(5), &fo.seed)) {
        return Errno(EINVAL, "sim option '%s': seed must be a number", part);
      }
    } else if (absl::StartsWith(part, "addr_base=")) {
      absl::StatusOr<uint32_t> ip = ParseIpv4(part.substr(10));
      if (!ip.ok()) {
        return Errno(EINVAL, "sim option '%s': %s", part,
                     ip.status().message());
      }
      fo.address_base = *ip;
    } else if (absl::StartsWith(part, "udp=")) {
      if (!absl::SimpleAtoi(part.substr(4), &fo.udp.base_port) ||
          fo.udp.base_port < 1 || fo.udp.base_port > 65535) {
        return Errno(EINVAL, "sim option '%s': udp wants a port 1..65535",
                     part);
      }
    } else if (part == "local=all") {
      // Every node is this process's; other processes may own them too
      // (each in its own process slot, sim/udp_transport.h).
      local_all = true;
    } else if (absl::StartsWith(part, "local=")) {
      for (absl::string_view n : absl::StrSplit(part.substr(6), '+')) {
        int i = 0;
        if (!absl::SimpleAtoi(n, &i) || i < 0) {
          return Errno(EINVAL,
                       "sim option '%s': local wants node numbers like 0+2",
                       part);
        }
        fo.udp.local_nodes.push_back(i);
      }
    } else if (part.find('=') == absl::string_view::npos &&
               profile_name.empty()) {
      profile_name = std::string(part);
    } else {
      return Errno(EINVAL,
                   "sim option '%s' unknown (want <profile>, nodes=N, seed=S, "
                   "addr_base=127.A.B.C, udp=PORT, local=I or all)",
                   part);
    }
  }
  if (absl::Status s = CheckAddressBase(fo.address_base, fo.nodes); !s.ok()) {
    return s;
  }
  absl::StatusOr<SimProfile> profile = ProfileByName(profile_name);
  if (!profile.ok()) return profile.status();
  fo.profile = *std::move(profile);
  absl::StatusOr<FaultPlan> faults = ParseFaults(fo.faults);
  if (!faults.ok()) {
    return Errno(EINVAL, "VERBSIM_FAULTS: %s", faults.status().message());
  }
  if (local_all) {
    if (!fo.udp.local_nodes.empty()) {
      return Errno(EINVAL, "sim option local=all and local=<nodes> together");
    }
    for (int i = 0; i < fo.nodes; ++i) fo.udp.local_nodes.push_back(i);
  }
  if (fo.udp.base_port == 0 && !fo.udp.local_nodes.empty()) {
    return Errno(EINVAL, "sim option local= needs udp=<port>");
  }
  if (fo.udp.base_port != 0 && fo.udp.local_nodes.empty()) {
    fo.udp.local_nodes.push_back(0);
  }
  std::string cm_error;
  const CmTiming timing = CmTimingFromEnv(&cm_error);
  if (!cm_error.empty()) return Errno(EINVAL, "%s", cm_error);
  auto provider = std::make_unique<SimProvider>(std::move(fo));
  provider->cm_->timing = timing;
  if (absl::Status s = provider->fabric().AddFaultPlan(*std::move(faults));
      !s.ok()) {
    return s;
  }
  if (provider->fabric().options().udp.base_port != 0) {
    if (absl::Status s = provider->fabric().StartUdp(); !s.ok()) return s;
  }
  provider->name_ = options.empty() ? "sim" : absl::StrCat("sim:", options);
  return provider;
}

SimProvider::SimProvider(FabricOptions options)
    : name_("sim"),
      fabric_(std::make_shared<Fabric>(std::move(options))),
      cm_(std::make_shared<CmState>()) {}

SimProvider::~SimProvider() = default;

absl::StatusOr<std::vector<std::string>> SimProvider::ListDevices() {
  std::vector<std::string> names;
  for (int i = 0; i < fabric_->num_nodes(); ++i) {
    if (!fabric_->node(i)->remote) names.push_back(fabric_->node(i)->name);
  }
  return names;
}

absl::StatusOr<int> SimProvider::DeviceIndex(absl::string_view device) const {
  // Nothing opens on a fabric whose addresses a real socket could leave the
  // host by (sim/addresses.h).
  if (!fabric_->address_status().ok()) return fabric_->address_status();
  for (int i = 0; i < fabric_->num_nodes(); ++i) {
    if (fabric_->node(i)->name != device) continue;
    if (fabric_->node(i)->remote) {
      return Errno(ENODEV, "sim device '%s' lives in another process (UDP "
                   "transport)", device);
    }
    return i;
  }
  return Errno(ENODEV, "no sim device '%s' (devices are sim0..sim%d)", device,
               fabric_->num_nodes() - 1);
}

absl::StatusOr<std::unique_ptr<Context>> SimProvider::Open(
    absl::string_view device) {
  absl::StatusOr<int> index = DeviceIndex(device);
  if (!index.ok()) return index.status();
  return OpenSimContext(fabric_, *index);
}

absl::StatusOr<std::unique_ptr<Listener>> SimProvider::Listen(
    absl::string_view address, const EndpointAttr& attr) {
  absl::string_view device;
  int port = 0;
  if (absl::Status s = SplitAddress(address, &device, &port); !s.ok()) return s;
  absl::StatusOr<int> index = DeviceIndex(device);
  if (!index.ok()) return index.status();
  if (attr.qp_type == QpType::kUd) {
    return Errno(EOPNOTSUPP,
                 "sim connections are RC or UC; make UD QPs with CreateQp");
  }
  std::lock_guard<std::mutex> lock(cm_->mu);
  const std::string key(address);
  if (cm_->listeners.count(key) > 0) {
    return Errno(EADDRINUSE, "address %s is already listened on", address);
  }
  auto st = std::make_shared<ListenerState>();
  st->address = key;
  st->device = *index;
  st->attr = attr;
  cm_->listeners[key] = st;
  return std::unique_ptr<Listener>(new SimListener(cm_, fabric_, st));
}

absl::StatusOr<std::unique_ptr<Endpoint>> SimProvider::Connect(
    absl::string_view address, const EndpointAttr& attr) {
  absl::string_view device;
  int port = 0;
  if (absl::Status s = SplitAddress(address, &device, &port); !s.ok()) return s;
  absl::StatusOr<int> target = DeviceIndex(device);
  if (!target.ok()) return target.status();
  int local = *target == 0 && fabric_->num_nodes() > 1 ? 1 : 0;
  if (!attr.device.empty()) {
    absl::StatusOr<int> chosen = DeviceIndex(attr.device);
    if (!chosen.ok()) return chosen.status();
    local = *chosen;
  }
  if (attr.qp_type == QpType::kUd) {
    return Errno(EOPNOTSUPP,
                 "sim connections are RC or UC; make UD QPs with CreateQp");
  }
  absl::StatusOr<std::unique_ptr<Endpoint>> ep =
      Endpoint::Create(OpenSimContext(fabric_, local), attr);
  if (!ep.ok()) return ep.status();
  if (absl::Status s = ModifyQpToInit((*ep)->qp(), attr); !s.ok()) return s;
  auto gid = (*ep)->context()->QueryGid(1, 0);
  if (!gid.ok()) return gid.status();
  std::lock_guard<std::mutex> lock(cm_->mu);
  auto it = cm_->listeners.find(std::string(address));
  if (it == cm_->listeners.end()) {
    return Errno(ECONNREFUSED, "no listener on %s", address);
  }
  auto req = std::make_shared<ConnRequest>();
  req->expires = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(UnansweredReqMs(cm_->timing));
  req->attr = attr;
  req->client_qp = (*ep)->qp();
  req->client_gid = *gid;
  it->second->pending.push_back(req);
  (*ep)->set_connection(std::make_unique<SimConnection>(cm_, req));
  cm_->cv.notify_all();
  return ep;
}

namespace {
// The sim's CM moves both QPs at once; nothing is left to tear down but the
// QPs themselves.
class SimQpLink final : public QpLink {};
}  // namespace

namespace {

// Where only the CM brings a QP to RTS (iWARP), a query never says a QP is
// in ERR, so ConnectQps is given one. siw checks the state as the
// connection is set up and refuses a QP beyond RTR with EINVAL: the
// passive side's accept first (siw_cm.c siw_accept), then the active side
// when the MPA reply arrives (siw_proc_mpareply), by which time the
// passive side has accepted. Each side whose connection had begun is
// dropped (siw_qp_cm_drop): it enters ERR and its queues are flushed. Seen
// on siw0: the WRs waiting in either QP's rings complete WR_FLUSH_ERR, a
// passive QP in ERR alone is left as it was.
absl::Status RefuseQpInError(Qp* a, Qp* b) {
  const SimProfile* profile = GetSimProfile(a->pd()->context());
  if (profile == nullptr || !profile->iwarp.rts_needs_cm) {
    return absl::OkStatus();
  }
  QpState sa = QpState::kReset;
  QpState sb = QpState::kReset;
  GetSimQpState(a, &sa);
  GetSimQpState(b, &sb);
  if (sb == QpState::kErr) {
    DropSimQpConnection(a);
    return Errno(EINVAL, "qp %u is in ERR: the passive side's accept "
                 "refuses it; qp %u's connection is dropped", b->qp_num(),
                 a->qp_num());
  }
  if (sa == QpState::kErr) {
    DropSimQpConnection(b);
    DropSimQpConnection(a);
    return Errno(EINVAL, "qp %u is in ERR: the active side refuses the "
                 "MPA reply; both connections are dropped", a->qp_num());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<QpLink>> SimProvider::ConnectQps(
    Qp* a, Qp* b, const EndpointAttr& attr) {
  if (a == nullptr || b == nullptr || a == b) {
    return Errno(EINVAL, "ConnectQps needs two distinct QPs");
  }
  for (Qp* qp : {a, b}) {
    const SimProfile* profile = GetSimProfile(qp->pd()->context());
    if (profile == nullptr) {
      return Errno(EINVAL, "qp %u is not a QP of the sim provider",
                   qp->qp_num());
    }
    if (qp->type() == QpType::kUd) {
      return Errno(EINVAL, "qp %u is UD: the CM connects RC and UC QPs",
                   qp->qp_num());
    }
    if (qp->state() != QpState::kReset) {
      return Errno(EINVAL, "qp %u is in %s: ConnectQps takes QPs in RESET",
                   qp->qp_num(), QpStateName(qp->state()));
    }
  }
  if (absl::Status s = RefuseQpInError(a, b); !s.ok()) return s;
  absl::StatusOr<Gid> ga = a->pd()->context()->QueryGid(1, 0);
  if (!ga.ok()) return ga.status();
  absl::StatusOr<Gid> gb = b->pd()->context()->QueryGid(1, 0);
  if (!gb.ok()) return gb.status();
  EndpointAttr path = attr;
  path.qp_type = a->type();
  path.sgid_index = 0;
  // As the listener's accept does: the QPs are the CM's, so an iWARP
  // profile lets them reach RTS.
  MarkSimQpCmConnected(a);
  MarkSimQpCmConnected(b);
  absl::Status s = ModifyQpToInit(a, path);
  if (s.ok()) s = ModifyQpToInit(b, path);
  if (s.ok()) s = ModifyQpToRtr(b, path, a->qp_num(), *ga, path.sq_psn);
  if (s.ok()) s = ModifyQpToRts(b, path, path.sq_psn);
  if (s.ok()) s = ModifyQpToRtr(a, path, b->qp_num(), *gb, path.sq_psn);
  if (s.ok()) s = ModifyQpToRts(a, path, path.sq_psn);
  if (!s.ok()) return s;
  return std::unique_ptr<QpLink>(new SimQpLink());
}

absl::StatusOr<std::string> SimProvider::LoopbackAddress() {
  std::lock_guard<std::mutex> lock(cm_->mu);
  const int device = fabric_->num_nodes() > 1 ? 1 : 0;
  return absl::StrCat("sim", device, ":", cm_->next_port++);
}

SimProvider* AsSimProvider(Provider* provider) {
  return dynamic_cast<SimProvider*>(provider);
}

namespace {
const bool kRegistered = RegisterProvider(
    "sim",
    [](absl::string_view options) -> absl::StatusOr<std::unique_ptr<Provider>> {
      auto provider = SimProvider::Create(options);
      if (!provider.ok()) return provider.status();
      return std::unique_ptr<Provider>(*std::move(provider));
    });
}  // namespace

}  // namespace verbsim::sim
