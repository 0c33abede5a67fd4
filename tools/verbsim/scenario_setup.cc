// The objects a scenario names: endpoints, MRs and their bytes, address
// handles, memory windows, fault rules; connect and modify move QPs through
// their states.
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/errors.h"
#include "core/names.h"
#include "tools/verbsim/scenario_runner.h"
#include "tools/verbsim/scenario_values.h"

namespace verbsim::cli::scenario_internal {
namespace {

Mtu MtuOf(uint64_t bytes) {
  switch (bytes) {
    case 256: return Mtu::k256;
    case 512: return Mtu::k512;
    case 2048: return Mtu::k2048;
    case 4096: return Mtu::k4096;
    default: return Mtu::k1024;
  }
}

// The attributes of `endpoint NAME DEVICE key=value...`.
EndpointAttr EndpointAttrOf(const Command& c) {
  EndpointAttr a;
  a.path_mtu = MtuOf(KeyU64(c, "mtu", 1024));
  const std::string type = KeyValue(c, "type");
  a.qp_type = type == "ud"   ? QpType::kUd
              : type == "uc" ? QpType::kUc
                             : QpType::kRc;
  a.qkey = static_cast<uint32_t>(KeyU64(c, "qkey", a.qkey));
  if (std::string v = KeyValue(c, "access"); !v.empty()) {
    ParseAccess(v, &a.qp_access);
  }
  a.timeout = static_cast<uint8_t>(KeyU64(c, "timeout", a.timeout));
  a.retry_cnt = static_cast<uint8_t>(KeyU64(c, "retry_cnt", a.retry_cnt));
  a.rnr_retry = static_cast<uint8_t>(KeyU64(c, "rnr_retry", a.rnr_retry));
  a.min_rnr_timer =
      static_cast<uint8_t>(KeyU64(c, "min_rnr_timer", a.min_rnr_timer));
  a.max_rd_atomic =
      static_cast<uint8_t>(KeyU64(c, "max_rd_atomic", a.max_rd_atomic));
  a.max_dest_rd_atomic = static_cast<uint8_t>(
      KeyU64(c, "max_dest_rd_atomic", a.max_dest_rd_atomic));
  a.sq_psn = static_cast<uint32_t>(KeyU64(c, "sq_psn", a.sq_psn));
  const uint32_t depth = static_cast<uint32_t>(KeyU64(c, "depth", 64));
  a.cap.max_send_wr = depth;
  a.cap.max_recv_wr = depth;
  a.cq_depth = static_cast<int>(depth * 2);
  return a;
}

}  // namespace

std::string Runner::DeviceName(int node) const {
  return sim_ ? absl::StrCat("sim", node)
              : devices_[static_cast<size_t>(node) % devices_.size()];
}

uint32_t Runner::Rkey(const std::string& v) {
  if (auto it = mws_.find(v); it != mws_.end()) return it->second.mw->rkey();
  uint64_t n = 0;
  ParseU64(v, &n);
  return static_cast<uint32_t>(n);
}

uint32_t Runner::Qpn(const std::string& v) {
  if (auto it = eps_.find(v); it != eps_.end()) {
    return it->second.ep->qp()->qp_num();
  }
  uint64_t n = 0;
  ParseU64(v, &n);
  return static_cast<uint32_t>(n);
}

absl::Status Runner::Faults(const Command& c) {
  if (sim_ == nullptr) {
    return Fail(c.line, "fault rules need the sim provider");
  }
  if (absl::Status s = fabric().AddFaults(c.rest); !s.ok()) {
    return Fail(c.line, s.message());
  }
  Row(TimelineRow::kAction, -1, 0, absl::StrCat("faults: ", c.rest));
  return absl::OkStatus();
}

absl::Status Runner::CreateEndpoint(const Command& c) {
  EpState e;
  ParseDevice(c.words[2].text, &e.node);
  e.attr = EndpointAttrOf(c);
  const std::string device = DeviceName(e.node);
  e.attr.device = device;
  auto ctx = provider_->Open(device);
  if (!ctx.ok()) return Fail(c.line, ctx.status().message());
  auto ep = Endpoint::Create(*std::move(ctx), e.attr);
  if (!ep.ok()) return Fail(c.line, ep.status().message());
  e.ep = *std::move(ep);
  const uint32_t qpn = e.ep->qp()->qp_num();
  result_.transports[{e.node, qpn}] = e.attr.qp_type;
  result_.qp_names[{e.node, qpn}] = c.words[1].text;
  EpRow(e, absl::StrFormat("%s: PD, CQs, %s qp %u in %s on %s",
                           c.words[1].text, TransportName(e.attr.qp_type), qpn,
                           QpStateName(e.ep->qp()->state()), device));
  eps_[c.words[1].text] = std::move(e);
  return absl::OkStatus();
}

absl::Status Runner::RegisterMr(const Command& c) {
  EpState& e = eps_[c.words[2].text];
  MrState m;
  ParseU64(c.words[3].text, &m.size);
  m.words.assign((m.size + 7) / 8, 0);
  m.ep = c.words[2].text;
  uint32_t access = kAccessLocalWrite;
  if (std::string v = KeyValue(c, "access"); !v.empty()) {
    ParseAccess(v, &access);
  }
  auto mr = e.ep->RegMr(m.data(), m.size, access);
  if (!mr.ok()) {
    EpRow(e, absl::StrCat("reg_mr ", c.words[1].text, " failed: ",
                          mr.status().message()));
    mrs_[c.words[1].text] = std::move(m);
    return Defer(c.line, mr.status());
  }
  m.mr = *std::move(mr);
  EpRow(e, absl::StrFormat("reg_mr %s %uB %s lkey 0x%x rkey 0x%x",
                           c.words[1].text, m.size, AccessFlagsName(access),
                           m.mr->lkey(), m.mr->rkey()));
  mrs_[c.words[1].text] = std::move(m);
  return absl::OkStatus();
}

absl::Status Runner::CreateAh(const Command& c) {
  EpState& e = eps_[c.words[2].text];
  int node = 0;
  ParseDevice(c.words[3].text, &node);
  const std::string device = DeviceName(node);
  auto ctx = provider_->Open(device);
  if (!ctx.ok()) return Fail(c.line, ctx.status().message());
  auto gid = (*ctx)->QueryGid(1, 0);
  if (!gid.ok()) return Fail(c.line, gid.status().message());
  AhAttr attr;
  attr.dgid = *gid;
  attr.hop_limit = static_cast<uint8_t>(KeyU64(c, "hop_limit", 64));
  attr.traffic_class = static_cast<uint8_t>(KeyU64(c, "traffic_class", 0));
  auto ah = e.ep->pd()->CreateAh(attr);
  if (!ah.ok()) return Fail(c.line, ah.status().message());
  ahs_[c.words[1].text] = *std::move(ah);
  EpRow(e, absl::StrFormat("create_ah %s: to %s (GID %s), hop limit %d",
                           c.words[1].text, device, GidToString(*gid),
                           attr.hop_limit));
  return absl::OkStatus();
}

absl::Status Runner::AllocMw(const Command& c) {
  EpState& e = eps_[c.words[2].text];
  MwState w;
  w.type = static_cast<int>(KeyU64(c, "type", 1));
  auto mw = e.ep->pd()->AllocMw(static_cast<MwType>(w.type));
  if (!mw.ok()) {
    EpRow(e, absl::StrCat("alloc_mw ", c.words[1].text, " failed: ",
                          ErrnoName(ErrnoOf(mw.status()))));
    return Defer(c.line, mw.status());
  }
  w.mw = *std::move(mw);
  EpRow(e, absl::StrFormat("alloc_mw %s: type %d, rkey 0x%x (not bound)",
                           c.words[1].text, w.type, w.mw->rkey()));
  mws_[c.words[1].text] = std::move(w);
  return absl::OkStatus();
}

absl::Status Runner::Fill(const Command& c) {
  MrState& m = mrs_[c.words[1].text];
  const uint64_t off = KeyU64(c, "offset", 0);
  if (c.words.size() > 2 && !absl::StrContains(c.words[2].text, '=')) {
    std::memcpy(m.data() + off, c.words[2].text.data(),
                c.words[2].text.size());
  } else if (!KeyValue(c, "u64").empty()) {
    const uint64_t v = KeyU64(c, "u64", 0);
    std::memcpy(m.data() + off, &v, 8);
  } else {
    std::memset(m.data() + off, static_cast<int>(KeyU64(c, "byte", 0)),
                m.size - off);
  }
  return absl::OkStatus();
}

// connect A B: both to INIT, RTR (each the other's peer) and RTS, in turn.
absl::Status Runner::Connect(const Command& c) {
  EpState& a = eps_[c.words[1].text];
  EpState& b = eps_[c.words[2].text];
  for (QpState to : {QpState::kInit, QpState::kRtr, QpState::kRts}) {
    for (auto [x, peer] : {std::pair(&a, &b), std::pair(&b, &a)}) {
      if (absl::Status s = Modify(c.line, *x, to, peer); !s.ok()) return s;
      if (pending_error_.has_value()) return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status Runner::ModifyQp(const Command& c) {
  EpState& e = eps_[c.words[1].text];
  const QpState to = *StateByName(c.words[2].text);
  std::string peer = KeyValue(c, "peer");
  return Modify(c.line, e, to, peer.empty() ? nullptr : &eps_[peer]);
}

absl::Status Runner::Modify(int line, EpState& e, QpState to, EpState* peer) {
  const QpState from = e.ep->qp()->state();
  absl::Status s;
  switch (to) {
    case QpState::kInit:
      s = ModifyQpToInit(e.ep->qp(), e.attr);
      break;
    case QpState::kRtr: {
      if (peer == nullptr) {  // UD: no destination
        s = ModifyQpToRtr(e.ep->qp(), e.attr, 0, Gid{}, 0);
        break;
      }
      auto gid = peer->ep->context()->QueryGid(1, 0);
      if (!gid.ok()) return Fail(line, gid.status().message());
      s = ModifyQpToRtr(e.ep->qp(), e.attr, peer->ep->qp()->qp_num(), *gid,
                        peer->attr.sq_psn);
      break;
    }
    case QpState::kRts:
      s = ModifyQpToRts(e.ep->qp(), e.attr, e.attr.sq_psn);
      break;
    default: {
      QpAttr a;
      a.qp_state = to;
      s = e.ep->qp()->Modify(a, kQpState);
      break;
    }
  }
  if (!s.ok()) {
    EpRow(e, absl::StrCat("modify ", QpStateName(from), " -> ",
                          QpStateName(to), " failed: ", ErrnoName(ErrnoOf(s))));
    return Defer(line, s);
  }
  std::string text =
      absl::StrCat("qp ", QpStateName(from), " -> ", QpStateName(to));
  if (to == QpState::kRtr && peer != nullptr) {
    absl::StrAppend(&text, " (dest qp ", peer->ep->qp()->qp_num(), ", rq_psn ",
                    peer->attr.sq_psn, ")");
  } else if (to == QpState::kInit && e.attr.qp_type == QpType::kUd) {
    absl::StrAppendFormat(&text, " (qkey 0x%x)", e.attr.qkey);
  } else if (to == QpState::kRts) {
    absl::StrAppend(&text, " (sq_psn ", e.attr.sq_psn, ")");
  }
  EpRow(e, text);
  return absl::OkStatus();
}

}  // namespace verbsim::cli::scenario_internal
