// Work requests: `post` (receives, sends, RDMA, atomics, LOCAL_INV) and
// `bind` (memory windows), each a timeline row and, when it went through,
// a slice of the JSON trace.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/errors.h"
#include "core/names.h"
#include "tools/verbsim/scenario_runner.h"
#include "tools/verbsim/scenario_values.h"

namespace verbsim::cli::scenario_internal {

PostedWr Runner::NewWr(const EpState& e, uint64_t wr_id) {
  PostedWr pw;
  pw.post_ns = std::max<int64_t>(Now(), 0);
  pw.trace_index = trace_seen_;
  pw.node = e.node;
  pw.qpn = e.ep->qp()->qp_num();
  pw.wr_id = wr_id;
  return pw;
}

absl::Status Runner::Posted(const Command& c, const EpState& e,
                            const absl::Status& s, const std::string& text,
                            const PostedWr& wr) {
  if (!s.ok()) {
    EpRow(e, absl::StrCat(text, ": failed, ", ErrnoName(ErrnoOf(s))));
    return Defer(c.line, s);
  }
  EpRow(e, text);
  result_.wrs.push_back(wr);
  return absl::OkStatus();
}

absl::Status Runner::Post(const Command& c) {
  const std::string& kind = c.words[1].text;
  EpState& e = eps_[c.words[2].text];
  MrState& m = mrs_[KeyValue(c, "mr")];
  const uint64_t wr_id = KeyU64(c, "wr", 0);
  const uint64_t off = KeyU64(c, "offset", 0);
  const bool atomic = kind == "cas" || kind == "fadd";
  const uint64_t len = kind == "local_inv" ? 0
                       : atomic            ? 8
                                           : KeyU64(c, "len", m.size - off);
  Sge sge;
  sge.addr = reinterpret_cast<uint64_t>(m.data() + off);
  sge.length = static_cast<uint32_t>(len);
  sge.lkey = m.mr ? m.mr->lkey() : 0;
  PostedWr pw = NewWr(e, wr_id);
  if (kind == "recv") {
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = {&sge, 1};
    pw.recv = true;
    pw.what = absl::StrFormat("RECV %u bytes", len);
    return Posted(c, e, e.ep->qp()->PostRecv(wr),
                  absl::StrFormat("post RECV wr %u, buffer %u bytes", wr_id,
                                  len),
                  pw);
  }
  const SendWr wr = SendWrOf(c, e, sge);
  const absl::Status s = e.ep->Post(wr);
  pw.what = kind == "local_inv"
                ? "LOCAL_INV"
                : absl::StrFormat("%s %u bytes", WrOpcodeName(wr.opcode), len);
  return Posted(c, e, s, SendText(c, wr, len), pw);
}

// The send work request of `post KIND EP ...` (every kind but recv).
SendWr Runner::SendWrOf(const Command& c, const EpState& e, const Sge& sge) {
  const std::string& kind = c.words[1].text;
  SendWr wr;
  wr.wr_id = KeyU64(c, "wr", 0);
  wr.sg_list = {&sge, 1};
  if (!HasFlag(c, "unsignaled")) wr.send_flags |= kSendSignaled;
  if (HasFlag(c, "fence")) wr.send_flags |= kSendFence;
  if (HasFlag(c, "solicited")) wr.send_flags |= kSendSolicited;
  if (HasFlag(c, "inline")) wr.send_flags |= kSendInline;
  const bool imm = !KeyValue(c, "imm").empty();
  wr.imm_data = static_cast<uint32_t>(KeyU64(c, "imm", 0));
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  const std::string remote = KeyValue(c, "remote");
  const std::string rkey_name = KeyValue(c, "rkey");
  if (!remote.empty()) {
    MrState& r = mrs_[remote];
    raddr = reinterpret_cast<uint64_t>(r.data() + KeyU64(c, "roffset", 0));
    rkey = r.mr ? r.mr->rkey() : 0;
    if (!rkey_name.empty()) rkey = Rkey(rkey_name);
  }
  const std::string inv = KeyValue(c, "inv");
  const std::string ah = KeyValue(c, "ah");
  if (kind == "local_inv") {
    wr.opcode = WrOpcode::kLocalInv;
    wr.sg_list = {};
    wr.invalidate_rkey = Rkey(rkey_name);
  } else if (kind == "send" && !inv.empty()) {
    wr.opcode = WrOpcode::kSendWithInv;
    wr.invalidate_rkey = Rkey(inv);
  } else if (kind == "send") {
    wr.opcode = imm ? WrOpcode::kSendWithImm : WrOpcode::kSend;
    if (!ah.empty()) {
      wr.ud.ah = ahs_[ah].get();
      wr.ud.remote_qpn = Qpn(KeyValue(c, "dest"));
      wr.ud.remote_qkey = static_cast<uint32_t>(KeyU64(c, "qkey", e.attr.qkey));
    }
  } else if (kind == "write") {
    wr.opcode = imm ? WrOpcode::kRdmaWriteWithImm : WrOpcode::kRdmaWrite;
  } else if (kind == "read") {
    wr.opcode = WrOpcode::kRdmaRead;
  } else if (kind == "cas") {
    wr.opcode = WrOpcode::kAtomicCmpAndSwp;
    wr.atomic.compare_add = KeyU64(c, "compare", 0);
    wr.atomic.swap = KeyU64(c, "swap", 0);
  } else {
    wr.opcode = WrOpcode::kAtomicFetchAndAdd;
    wr.atomic.compare_add = KeyU64(c, "add", 0);
  }
  if (kind == "cas" || kind == "fadd") {
    wr.atomic.remote_addr = raddr;
    wr.atomic.rkey = rkey;
  } else {
    wr.rdma.remote_addr = raddr;
    wr.rdma.rkey = rkey;
  }
  return wr;
}

// The timeline row of a send work request: its opcode and length, then
// what it points at, the names the scenario gave, and its flags.
std::string Runner::SendText(const Command& c, const SendWr& wr,
                             uint64_t len) {
  const std::string& kind = c.words[1].text;
  const std::string rkey_name = KeyValue(c, "rkey");
  std::string text;
  if (kind == "local_inv") {
    text = absl::StrFormat("post LOCAL_INV wr %u, rkey 0x%x", wr.wr_id,
                           wr.invalidate_rkey);
    if (mws_.count(rkey_name)) absl::StrAppend(&text, " (", rkey_name, ")");
  } else {
    text = absl::StrFormat("post %s wr %u, %u bytes", WrOpcodeName(wr.opcode),
                           wr.wr_id, len);
  }
  if (const std::string remote = KeyValue(c, "remote"); !remote.empty()) {
    const bool atomic = kind == "cas" || kind == "fadd";
    absl::StrAppendFormat(&text, ", %s rkey 0x%x", remote,
                          atomic ? wr.atomic.rkey : wr.rdma.rkey);
    if (mws_.count(rkey_name)) {
      absl::StrAppend(&text, " (window ", rkey_name, ")");
    }
  }
  if (const std::string inv = KeyValue(c, "inv"); !inv.empty()) {
    absl::StrAppendFormat(&text, ", invalidate rkey 0x%x", wr.invalidate_rkey);
    if (mws_.count(inv)) absl::StrAppend(&text, " (", inv, ")");
  }
  if (const std::string ah = KeyValue(c, "ah"); !ah.empty()) {
    const std::string dest = KeyValue(c, "dest");
    absl::StrAppendFormat(&text, ", to qp %u", wr.ud.remote_qpn);
    if (eps_.count(dest)) absl::StrAppend(&text, " (", dest, ")");
    absl::StrAppendFormat(&text, " via %s, qkey 0x%x", ah, wr.ud.remote_qkey);
  }
  if (!KeyValue(c, "imm").empty()) {
    absl::StrAppendFormat(&text, ", imm 0x%x", wr.imm_data);
  }
  if (kind == "cas") {
    absl::StrAppendFormat(&text, ", compare %u swap %u", wr.atomic.compare_add,
                          wr.atomic.swap);
  } else if (kind == "fadd") {
    absl::StrAppendFormat(&text, ", add %u", wr.atomic.compare_add);
  }
  if (!(wr.send_flags & kSendSignaled)) absl::StrAppend(&text, ", unsignaled");
  return text;
}

// bind MW EP ...: ibv_bind_mw(3) for a type 1 window, a BIND_MW work
// request with the window's next rkey (ibv_inc_rkey) for type 2.
absl::Status Runner::Bind(const Command& c) {
  auto it = mws_.find(c.words[1].text);
  if (it == mws_.end()) {
    return Fail(c.line, absl::StrCat("no window ", c.words[1].text));
  }
  MwState& w = it->second;
  EpState& e = eps_[c.words[2].text];
  MrState& m = mrs_[KeyValue(c, "mr")];
  const uint64_t wr_id = KeyU64(c, "wr", 0);
  const uint64_t off = KeyU64(c, "offset", 0);
  const uint64_t len = KeyU64(c, "len", m.size - off);
  MwBindInfo info;
  info.mr = m.mr.get();
  info.addr = reinterpret_cast<uint64_t>(m.data() + off);
  info.length = len;
  ParseAccess(KeyValue(c, "access"), &info.mw_access_flags);
  const uint32_t flags = HasFlag(c, "unsignaled") ? 0 : kSendSignaled;
  PostedWr pw = NewWr(e, wr_id);
  pw.what = "BIND_MW";
  absl::Status s;
  uint32_t new_rkey = 0;
  if (w.type == 1) {
    MwBind bind;
    bind.wr_id = wr_id;
    bind.send_flags = flags;
    bind.bind_info = info;
    s = e.ep->qp()->BindMw(w.mw.get(), bind);
    new_rkey = w.mw->rkey();
  } else {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::kBindMw;
    wr.send_flags = flags;
    wr.bind_mw.mw = w.mw.get();
    wr.bind_mw.rkey = new_rkey = IncRkey(w.mw->rkey());
    wr.bind_mw.bind_info = info;
    s = e.ep->Post(wr);
  }
  std::string text = absl::StrFormat(
      "post BIND_MW wr %u (%s): %s = %s[%u, %u) %s, rkey 0x%x", wr_id,
      w.type == 1 ? "ibv_bind_mw, type 1" : "work request, type 2",
      c.words[1].text, KeyValue(c, "mr"), off, off + len,
      AccessFlagsName(info.mw_access_flags), new_rkey);
  if (!(flags & kSendSignaled)) absl::StrAppend(&text, ", unsignaled");
  return Posted(c, e, s, text, pw);
}

}  // namespace verbsim::cli::scenario_internal
