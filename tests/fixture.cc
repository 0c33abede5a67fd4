#include "tests/fixture.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/environment.h"
#include "core/errors.h"
#include "core/names.h"
#include "sim/fabric.h"
#include "sim/sim_provider.h"
#include "tests/observed.h"

namespace verbsim {
namespace testing {

std::vector<std::string> ProviderSpecs() {
  if (std::optional<std::string> spec = env::Get(env::kProvider)) {
    return {*spec};
  }
  // The sim with its default (ibta) profile and with the rxe profile, which
  // reproduces kernel 6.1 rxe's deviations; then real devices.
  return {"sim", "sim:rxe", "sim:siw", "hw"};
}

std::string SanitizeParamName(const std::string& text) {
  // Alphanumerics kept; every run of other characters becomes one '_',
  // none at either end: "(Write, FirstByte)" -> "Write_FirstByte".
  std::string out;
  bool pending = false;
  for (char c : text) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9');
    if (!alnum) {
      pending = true;
      continue;
    }
    if (pending && !out.empty()) out.push_back('_');
    pending = false;
    out.push_back(c);
  }
  if (out.empty()) out = "empty";
  return out;
}

// ---------------------------------------------------------------------------
// Buffer

namespace {
constexpr size_t kAlign = 4096;
}  // namespace

void Buffer::Free::operator()(uint8_t* p) const {
  ::operator delete[](p, std::align_val_t(kAlign));
}

Buffer::Buffer(size_t size) : size_(size) {
  const size_t bytes = size == 0 ? kAlign : size;
  data_.reset(static_cast<uint8_t*>(
      ::operator new[](bytes, std::align_val_t(kAlign))));
  std::memset(data_.get(), 0, bytes);
}

std::vector<uint8_t> Pattern(uint8_t seed, size_t length) {
  std::vector<uint8_t> out(length);
  uint32_t x = 0x9e3779b9u * (seed + 1u);
  for (size_t i = 0; i < length; ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

void Buffer::FillPattern(uint8_t seed, size_t offset, size_t length) {
  if (length == SIZE_MAX) length = size_ - offset;
  std::vector<uint8_t> p = Pattern(seed, length);
  if (length > 0) std::memcpy(data_.get() + offset, p.data(), length);
}

void Buffer::Set(uint8_t value) {
  if (size_ > 0) std::memset(data_.get(), value, size_);
}

std::vector<uint8_t> Buffer::Bytes(size_t offset, size_t length) const {
  return std::vector<uint8_t>(data_.get() + offset,
                              data_.get() + offset + length);
}

uint64_t Buffer::Load64(size_t offset) const {
  uint64_t v;
  std::memcpy(&v, data_.get() + offset, sizeof(v));
  return v;
}

void Buffer::Store64(size_t offset, uint64_t value) {
  std::memcpy(data_.get() + offset, &value, sizeof(value));
}

// ---------------------------------------------------------------------------
// Work requests

Sge SgeOf(const Mr& mr, size_t offset, uint32_t length) {
  Sge sge;
  sge.addr = reinterpret_cast<uint64_t>(mr.addr()) + offset;
  sge.length = length;
  sge.lkey = mr.lkey();
  return sge;
}

SendWr MakeWr(WrOpcode opcode, uint64_t wr_id, absl::Span<const Sge> sgl,
              uint32_t flags) {
  SendWr wr;
  wr.opcode = opcode;
  wr.wr_id = wr_id;
  wr.sg_list = sgl;
  wr.send_flags = flags;
  return wr;
}

// ---------------------------------------------------------------------------
// QP state steps

QpStep ResetToInitStep(uint32_t access) {
  QpStep s;
  s.attr.qp_state = QpState::kInit;
  s.attr.pkey_index = 0;
  s.attr.port_num = 1;
  s.attr.qp_access_flags = access;
  s.mask = kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags;
  return s;
}

QpStep InitToRtrStep(uint32_t dest_qpn, const Gid& dgid) {
  QpStep s;
  s.attr.qp_state = QpState::kRtr;
  s.attr.path_mtu = Mtu::k1024;
  s.attr.dest_qp_num = dest_qpn;
  s.attr.rq_psn = 0;
  s.attr.ah_attr.dgid = dgid;
  s.attr.ah_attr.port_num = 1;
  s.attr.ah_attr.is_global = true;
  s.attr.max_dest_rd_atomic = 1;
  s.attr.min_rnr_timer = 12;
  s.mask = kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
           kQpMaxDestRdAtomic | kQpMinRnrTimer;
  return s;
}

QpStep RtrToRtsStep() {
  QpStep s;
  s.attr.qp_state = QpState::kRts;
  s.attr.sq_psn = 0;
  s.attr.max_rd_atomic = 1;
  s.attr.retry_cnt = 7;
  s.attr.rnr_retry = 7;
  s.attr.timeout = 14;
  s.mask = kQpState | kQpSqPsn | kQpMaxQpRdAtomic | kQpRetryCnt |
           kQpRnrRetry | kQpTimeout;
  return s;
}

QpStep ToStateStep(QpState state) {
  QpStep s;
  s.attr.qp_state = state;
  s.mask = kQpState;
  return s;
}

absl::Status BringQpTo(RawQp& raw, QpState state) {
  Qp* qp = raw.qp.get();
  auto step = [qp](const QpStep& s) { return qp->Modify(s.attr, s.mask); };
  if (state == QpState::kReset) return absl::OkStatus();
  absl::Status status = step(ResetToInitStep());
  // ERR by way of INIT: RESET -> ERR is not a transition (qp_state_table).
  if (!status.ok() || state == QpState::kErr) {
    return status.ok() ? step(ToStateStep(QpState::kErr)) : status;
  }
  if (!status.ok() || state == QpState::kInit) return status;
  status = step(InitToRtrStep(qp->qp_num(), raw.gid));
  if (!status.ok() || state == QpState::kRtr) return status;
  status = step(RtrToRtsStep());
  if (!status.ok() || state == QpState::kRts) return status;
  if (state == QpState::kSqd) return step(ToStateStep(QpState::kSqd));
  return Errno(EINVAL, "BringQpTo: no path to %s", QpStateName(state));
}

// ---------------------------------------------------------------------------
// Completions

absl::StatusOr<WorkCompletion> Await(Cq* cq, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  WorkCompletion wc;
  while (true) {
    absl::StatusOr<int> n = cq->Poll({&wc, 1});
    if (!n.ok()) return n.status();
    if (*n == 1) {
      NoteCompletionStatus(wc.status);
      return wc;
    }
    if (absl::Now() > deadline) {
      return Errno(ETIMEDOUT, "no completion within %s",
                   absl::FormatDuration(timeout));
    }
    std::this_thread::yield();
  }
}

absl::StatusOr<std::vector<WorkCompletion>> AwaitN(Cq* cq, int n,
                                                   absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<WorkCompletion> out;
  std::vector<WorkCompletion> wcs(16);
  while (static_cast<int>(out.size()) < n) {
    const int want = std::min<int>(n - static_cast<int>(out.size()),
                                   static_cast<int>(wcs.size()));
    absl::StatusOr<int> got =
        cq->Poll(absl::MakeSpan(wcs.data(), static_cast<size_t>(want)));
    if (!got.ok()) return got.status();
    for (int i = 0; i < *got; ++i) NoteCompletionStatus(wcs[i].status);
    out.insert(out.end(), wcs.begin(), wcs.begin() + *got);
    if (*got > 0) continue;
    if (absl::Now() > deadline) {
      return Errno(ETIMEDOUT, "%d of %d completions within %s",
                   static_cast<int>(out.size()), n,
                   absl::FormatDuration(timeout));
    }
    std::this_thread::yield();
  }
  return out;
}

std::vector<WorkCompletion> Drain(Cq* cq, absl::Duration quiet) {
  const absl::Time deadline = absl::Now() + quiet;
  std::vector<WorkCompletion> out;
  WorkCompletion wc;
  while (absl::Now() < deadline) {
    absl::StatusOr<int> n = cq->Poll({&wc, 1});
    if (!n.ok()) break;
    if (*n == 1) {
      NoteCompletionStatus(wc.status);
      out.push_back(wc);
    } else {
      std::this_thread::yield();
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Harness

void Harness::Init(const std::string& spec) {
  spec_ = spec;
  const std::string name = spec.substr(0, spec.find(':'));
  const bool hardware = name == "hw";
  absl::StatusOr<std::unique_ptr<Provider>> provider = OpenProvider(spec);
  if (!provider.ok()) {
    if (hardware) {
      GTEST_SKIP() << kNoHardwareReason << " (" << provider.status() << ")";
    }
    FAIL() << "OpenProvider(\"" << spec << "\"): " << provider.status();
  }
  provider_ = *std::move(provider);
  absl::StatusOr<std::vector<std::string>> devices = provider_->ListDevices();
  if (!devices.ok() || devices->empty()) {
    const std::string why = devices.ok() ? std::string("no devices listed")
                                         : devices.status().ToString();
    if (hardware) GTEST_SKIP() << kNoHardwareReason << " (" << why << ")";
    FAIL() << "ListDevices() of \"" << spec << "\": " << why;
  }
  devices_ = *std::move(devices);
  expect_ = ExpectationsFor(spec, devices_[0]);
}

void Harness::ExpectQpState(const Qp* qp, QpState state) const {
  const QpState reported =
      expect_.query_reports_qp_attrs ? state : QpState::kReset;
  EXPECT_EQ(qp->state(), reported) << "expected " << QpStateName(state);
  absl::StatusOr<QpAttr> attr = qp->Query();
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->qp_state, reported) << "expected " << QpStateName(state);
}

void Harness::LetTimePass(absl::Duration d) const {
  if (sim::SimProvider* sim = sim::AsSimProvider(provider_.get())) {
    sim->fabric().RunFor(d);
  } else {
    absl::SleepFor(d);
  }
}

absl::StatusOr<std::unique_ptr<Context>> Harness::OpenDevice(
    int index) const {
  if (index < 0 || index >= static_cast<int>(devices_.size())) {
    return Errno(ENODEV, "device index %d of %d", index,
                 static_cast<int>(devices_.size()));
  }
  return provider_->Open(devices_[index]);
}

EndpointAttr Harness::DefaultAttr() { return EndpointAttr(); }

uint32_t Harness::FullAccess() const {
  uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
  if (expect_.has_atomics) access |= kAccessRemoteAtomic;
  return access;
}

absl::StatusOr<EndpointPair> Harness::Connect(const EndpointAttr& attr) const {
  return CreateConnectedPair(*provider_, attr);
}

absl::StatusOr<std::unique_ptr<RcPair>> Harness::MakePair(
    size_t buffer_size, const EndpointAttr& attr, uint32_t access) const {
  if (access == 0) access = FullAccess();
  auto pair = std::make_unique<RcPair>();
  absl::StatusOr<EndpointPair> eps = Connect(attr);
  if (!eps.ok()) return eps.status();
  pair->eps = *std::move(eps);
  pair->cbuf = Buffer(buffer_size);
  pair->sbuf = Buffer(buffer_size);
  absl::StatusOr<std::unique_ptr<Mr>> cmr =
      pair->client().RegMr(pair->cbuf.data(), buffer_size, access);
  if (!cmr.ok()) return cmr.status();
  pair->cmr = *std::move(cmr);
  absl::StatusOr<std::unique_ptr<Mr>> smr =
      pair->server().RegMr(pair->sbuf.data(), buffer_size, access);
  if (!smr.ok()) return smr.status();
  pair->smr = *std::move(smr);
  return pair;
}

absl::StatusOr<std::unique_ptr<RawQp>> Harness::MakeRawQp(
    const QpCap& cap, int device_index, bool sq_sig_all) const {
  auto raw = std::make_unique<RawQp>();
  absl::StatusOr<std::unique_ptr<Context>> context = OpenDevice(device_index);
  if (!context.ok()) return context.status();
  raw->context = *std::move(context);
  absl::StatusOr<Gid> gid = raw->context->QueryGid(1, 0);
  if (!gid.ok()) return gid.status();
  raw->gid = *gid;
  absl::StatusOr<std::unique_ptr<Pd>> pd = raw->context->AllocPd();
  if (!pd.ok()) return pd.status();
  raw->pd = *std::move(pd);
  absl::StatusOr<std::unique_ptr<Cq>> cq = raw->context->CreateCq(512, nullptr);
  if (!cq.ok()) return cq.status();
  raw->cq = *std::move(cq);
  QpInitAttr init;
  init.send_cq = raw->cq.get();
  init.recv_cq = raw->cq.get();
  init.cap = cap;
  init.qp_type = QpType::kRc;
  init.sq_sig_all = sq_sig_all;
  absl::StatusOr<std::unique_ptr<Qp>> qp = raw->pd->CreateQp(init);
  if (!qp.ok()) return qp.status();
  raw->qp = *std::move(qp);
  return raw;
}

absl::Status Harness::ConnectQps(Qp* a, const Gid& ga, Qp* b, const Gid& gb,
                                 uint32_t access) const {
  if (expect_.hand_connected_qps) {
    return testing::ConnectQps(a, ga, b, gb, access);
  }
  EndpointAttr attr;
  attr.qp_type = a->type();
  attr.qp_access = access;
  absl::StatusOr<std::unique_ptr<QpLink>> link =
      provider_->ConnectQps(a, b, attr);
  if (!link.ok()) return link.status();
  links_.push_back(*std::move(link));
  return absl::OkStatus();
}

absl::Status Harness::BringQpTo(RawQp& raw, QpState state) const {
  if (expect_.hand_connected_qps ||
      (state != QpState::kRts && state != QpState::kSqd)) {
    return testing::BringQpTo(raw, state);
  }
  const int other = devices_.size() > 1 ? 1 : 0;
  absl::StatusOr<std::unique_ptr<RawQp>> peer =
      MakeRawQp(raw.qp->init_attr().cap, other);
  if (!peer.ok()) return peer.status();
  EndpointAttr attr;
  attr.qp_access = FullAccess();
  absl::StatusOr<std::unique_ptr<QpLink>> link =
      provider_->ConnectQps(raw.qp.get(), (*peer)->qp.get(), attr);
  if (!link.ok()) return link.status();
  raw.peer = *std::move(peer);
  raw.link = *std::move(link);
  if (state == QpState::kSqd) {
    const QpStep sqd = ToStateStep(QpState::kSqd);
    return raw.qp->Modify(sqd.attr, sqd.mask);
  }
  return absl::OkStatus();
}

int StateOnlyModifyErrno(QpState from, const QpAttr& attr, uint32_t mask) {
  // Not an ibv_mtu: refused by the API on every provider.
  if ((mask & kQpPathMtu) && MtuBytes(attr.path_mtu) == 0) return EINVAL;
  if ((mask & kQpPort) && attr.port_num != 1) return EINVAL;
  if (mask & kQpAv) {
    if (attr.ah_attr.port_num != 1) return EINVAL;
    // A fresh QP has port 0 until RESET -> INIT gives it one.
    if ((mask & kQpState) && attr.qp_state == QpState::kRtr &&
        from == QpState::kReset) {
      return EINVAL;
    }
  }
  const bool idle = from == QpState::kReset || from == QpState::kInit ||
                    from == QpState::kRtr;
  if ((mask & kQpState) && attr.qp_state == QpState::kRts && idle) {
    return EINVAL;
  }
  return 0;
}

absl::StatusOr<std::unique_ptr<Side>> Harness::OpenSide(
    int device_index) const {
  auto side = std::make_unique<Side>();
  absl::StatusOr<std::unique_ptr<Context>> context = OpenDevice(device_index);
  if (!context.ok()) return context.status();
  side->context = *std::move(context);
  side->gid_index = RoceV4GidIndex(side->context.get());
  absl::StatusOr<Gid> gid = side->context->QueryGid(1, side->gid_index);
  if (!gid.ok()) return gid.status();
  side->gid = *gid;
  absl::StatusOr<std::unique_ptr<Pd>> pd = side->context->AllocPd();
  if (!pd.ok()) return pd.status();
  side->pd = *std::move(pd);
  absl::StatusOr<std::unique_ptr<Cq>> cq =
      side->context->CreateCq(1024, nullptr);
  if (!cq.ok()) return cq.status();
  side->cq = *std::move(cq);
  return side;
}

absl::StatusOr<std::unique_ptr<Qp>> CreateQpOn(Side& side, QpType type,
                                               const QpCap& cap, Srq* srq,
                                               bool sq_sig_all) {
  QpInitAttr init;
  init.send_cq = side.cq.get();
  init.recv_cq = side.cq.get();
  init.srq = srq;
  init.cap = cap;
  init.qp_type = type;
  init.sq_sig_all = sq_sig_all;
  return side.pd->CreateQp(init);
}

absl::Status ConnectQps(Qp* a, const Gid& ga, Qp* b, const Gid& gb,
                        uint32_t access) {
  EndpointAttr attr;
  attr.qp_type = a->type();
  attr.qp_access = access;
  for (Qp* qp : {a, b}) {
    if (absl::Status s = ModifyQpToInit(qp, attr); !s.ok()) return s;
  }
  // Each side's path leaves from its IPv4-mapped GID, as the GIDs given are.
  attr.sgid_index = RoceV4GidIndex(a->pd()->context());
  if (absl::Status s = ModifyQpToRtr(a, attr, b->qp_num(), gb, 0); !s.ok()) {
    return s;
  }
  attr.sgid_index = RoceV4GidIndex(b->pd()->context());
  if (absl::Status s = ModifyQpToRtr(b, attr, a->qp_num(), ga, 0); !s.ok()) {
    return s;
  }
  for (Qp* qp : {a, b}) {
    if (absl::Status s = ModifyQpToRts(qp, attr, 0); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status BringUdQpToRts(Qp* qp, uint32_t qkey) {
  EndpointAttr attr;
  attr.qp_type = QpType::kUd;
  attr.qkey = qkey;
  if (absl::Status s = ModifyQpToInit(qp, attr); !s.ok()) return s;
  if (absl::Status s = ModifyQpToRtr(qp, attr, 0, Gid{}, 0); !s.ok()) return s;
  return ModifyQpToRts(qp, attr, 0);
}

uint8_t RoceV4GidIndex(Context* context) {
  absl::StatusOr<PortAttr> port = context->QueryPort(1);
  const int n = port.ok() ? std::min(port->gid_tbl_len, 8) : 1;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<Gid> gid = context->QueryGid(1, i);
    if (!gid.ok()) continue;
    bool v4 = (*gid)[10] == 0xff && (*gid)[11] == 0xff;
    for (int b = 0; b < 10 && v4; ++b) v4 = (*gid)[b] == 0;
    if (v4) return static_cast<uint8_t>(i);
  }
  return 0;
}

absl::StatusOr<std::unique_ptr<Ah>> CreateAhTo(Pd* pd, const Gid& dgid,
                                               uint8_t sgid_index) {
  AhAttr attr;
  attr.dgid = dgid;
  attr.sgid_index = sgid_index;
  attr.port_num = 1;
  attr.is_global = true;
  return pd->CreateAh(attr);
}

absl::Status MoveToErr(Qp* qp) {
  QpAttr err;
  err.qp_state = QpState::kErr;
  return qp->Modify(err, kQpState);
}

}  // namespace testing
}  // namespace verbsim
