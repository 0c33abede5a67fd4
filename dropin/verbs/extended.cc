// The extended verbs that programs reach through verbs_context and the
// header's inlines: ibv_create_cq_ex with its polling functions
// (ibv_create_cq_ex(3): start_poll / next_poll / end_poll and ibv_wc_read_*),
// and the ibv_wr_* send API of a QP made with send_ops_flags (ibv_wr_post(3)):
// the WRs built between ibv_wr_start and ibv_wr_complete are posted at
// ibv_wr_complete as one ibv_post_send list.
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

#include "dropin/verbs/state.h"

using namespace verbsim;
using namespace verbsim::dropin;

namespace {

// --- ibv_cq_ex ---------------------------------------------------------------

CqWrap* CqOf(ibv_cq_ex* cq) { return reinterpret_cast<CqWrap*>(cq); }

// Takes the next completion into `current`; ENOENT when the CQ is empty.
int TakeOne(ibv_cq_ex* cq) {
  const Ctx* ctx = CtxOf(cq->context);
  const bool checked =
      ctx->profile == nullptr || ctx->profile->recv_and_poll_check_handle;
  ObjectUse use =
      UseObject(cq, ObjectKind::kCq, checked ? &cq->handle : nullptr);
  if (use.error()) return use.error();
  CqWrap* w = CqOf(cq);
  absl::StatusOr<int> n = w->impl->Poll(absl::MakeSpan(&w->current, 1));
  if (!n.ok()) return ErrnoFrom(n.status(), "ibv_start_poll");
  if (*n == 0) return ENOENT;
  cq->wr_id = w->current.wr_id;
  cq->status = static_cast<ibv_wc_status>(w->current.status);
  return 0;
}

int StartPoll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) return EINVAL;
  return TakeOne(cq);
}
int NextPoll(ibv_cq_ex* cq) { return TakeOne(cq); }
void EndPoll(ibv_cq_ex*) {}

ibv_wc_opcode ReadOpcode(ibv_cq_ex* cq) {
  return static_cast<ibv_wc_opcode>(CqOf(cq)->current.opcode);
}
uint32_t ReadVendorErr(ibv_cq_ex* cq) { return CqOf(cq)->current.vendor_err; }
uint32_t ReadByteLen(ibv_cq_ex* cq) { return CqOf(cq)->current.byte_len; }
__be32 ReadImmData(ibv_cq_ex* cq) {
  const WorkCompletion& wc = CqOf(cq)->current;
  // The invalidated rkey shares the field (ibv_wc_read_invalidated_rkey).
  return (wc.wc_flags & IBV_WC_WITH_INV) ? wc.invalidated_rkey
                                          : htonl(wc.imm_data);
}
uint32_t ReadQpNum(ibv_cq_ex* cq) { return CqOf(cq)->current.qp_num; }
uint32_t ReadSrcQp(ibv_cq_ex* cq) { return CqOf(cq)->current.src_qp; }
unsigned int ReadWcFlags(ibv_cq_ex* cq) { return CqOf(cq)->current.wc_flags; }
uint32_t ReadSlid(ibv_cq_ex* cq) { return CqOf(cq)->current.slid; }
uint8_t ReadSl(ibv_cq_ex* cq) { return CqOf(cq)->current.sl; }
uint8_t ReadDlidPathBits(ibv_cq_ex* cq) {
  return CqOf(cq)->current.dlid_path_bits;
}

// --- ibv_qp_ex -------------------------------------------------------------

QpWrap* QpOf(ibv_qp_ex* qp) { return reinterpret_cast<QpWrap*>(qp); }

// Starts the next WR of the batch with the QP's wr_id and wr_flags.
SendWr& Next(ibv_qp_ex* qp, WrOpcode opcode) {
  QpWrap* w = QpOf(qp);
  SendWr wr;
  wr.wr_id = qp->wr_id;
  wr.send_flags = qp->wr_flags;
  wr.opcode = opcode;
  w->batch.push_back(wr);
  w->batch_named.emplace_back();
  return w->batch.back();
}

void WrStart(ibv_qp_ex* qp) {
  QpWrap* w = QpOf(qp);
  w->batch.clear();
  w->batch_named.clear();
  w->batch_sges.clear();
  w->batch_inline.clear();
}

// The AHs, windows and regions the batch names, looked up now that it is
// posted (a WR naming a destroyed one fails the batch with EINVAL) and held
// until the post returns.
int ResolveNamed(QpWrap* w, std::vector<ObjectUse>* held) {
  const ibv_context* context = w->qp.context;
  for (size_t i = 0; i < w->batch.size(); ++i) {
    const QpWrap::Named& n = w->batch_named[i];
    SendWr& wr = w->batch[i];
    if (n.ah != nullptr) {
      held->push_back(UseObject(n.ah, ObjectKind::kAh, nullptr, context));
      if (held->back().error()) return EINVAL;
      wr.ud.ah = WrapOf<AhWrap>(n.ah)->impl.get();
    }
    if (n.mw != nullptr) {
      held->emplace_back();
      wr.bind_mw.mw = LiveMw(n.mw, context, &held->back());
      if (wr.bind_mw.mw == nullptr) return EINVAL;
    }
    if (n.mr != nullptr) {
      held->emplace_back();
      wr.bind_mw.bind_info.mr = LiveMr(n.mr, context, &held->back());
      if (wr.bind_mw.bind_info.mr == nullptr) return EINVAL;
    }
  }
  return 0;
}

int WrComplete(ibv_qp_ex* qp) {
  QpWrap* w = QpOf(qp);
  ObjectUse use = UseObject(&w->qp, ObjectKind::kQp, &w->qp.handle);
  if (use.error()) return use.error();  // the batch stays for wr_abort
  std::vector<ObjectUse> held;
  if (ResolveNamed(w, &held) != 0) {
    WrStart(qp);
    errno = EINVAL;
    return EINVAL;
  }
  int err = 0;
  if (!w->batch.empty()) {
    absl::Status s = w->impl->PostSend(w->batch);
    if (!s.ok()) err = ErrnoFrom(s, "ibv_wr_complete");
  }
  WrStart(qp);
  return err;
}

void WrAbort(ibv_qp_ex* qp) { WrStart(qp); }

void WrSend(ibv_qp_ex* qp) { Next(qp, WrOpcode::kSend); }
void WrSendImm(ibv_qp_ex* qp, __be32 imm) {
  Next(qp, WrOpcode::kSendWithImm).imm_data = ntohl(imm);
}
void WrSendInv(ibv_qp_ex* qp, uint32_t rkey) {
  Next(qp, WrOpcode::kSendWithInv).invalidate_rkey = rkey;
}
void WrLocalInv(ibv_qp_ex* qp, uint32_t rkey) {
  Next(qp, WrOpcode::kLocalInv).invalidate_rkey = rkey;
}
void WrRdmaWrite(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr) {
  SendWr& wr = Next(qp, WrOpcode::kRdmaWrite);
  wr.rdma.rkey = rkey;
  wr.rdma.remote_addr = addr;
}
void WrRdmaWriteImm(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr, __be32 imm) {
  SendWr& wr = Next(qp, WrOpcode::kRdmaWriteWithImm);
  wr.rdma.rkey = rkey;
  wr.rdma.remote_addr = addr;
  wr.imm_data = ntohl(imm);
}
void WrRdmaRead(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr) {
  SendWr& wr = Next(qp, WrOpcode::kRdmaRead);
  wr.rdma.rkey = rkey;
  wr.rdma.remote_addr = addr;
}
void WrCmpSwp(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr, uint64_t compare,
              uint64_t swap) {
  SendWr& wr = Next(qp, WrOpcode::kAtomicCmpAndSwp);
  wr.atomic.rkey = rkey;
  wr.atomic.remote_addr = addr;
  wr.atomic.compare_add = compare;
  wr.atomic.swap = swap;
}
// ibv_wr_bind_mw: a type 2 bind (the sim refuses a type 1 one where the
// profile does, as it executes).
void WrBindMw(ibv_qp_ex* qp, ibv_mw* mw, uint32_t rkey,
              const ibv_mw_bind_info* info) {
  SendWr& wr = Next(qp, WrOpcode::kBindMw);
  QpWrap::Named& named = QpOf(qp)->batch_named.back();
  named.mw = mw;
  named.mr = info->mr;
  wr.bind_mw.rkey = rkey;
  wr.bind_mw.current_rkey = mw->rkey;  // read now, as a provider does
  wr.bind_mw.bind_info.addr = info->addr;
  wr.bind_mw.bind_info.length = info->length;
  wr.bind_mw.bind_info.mw_access_flags = info->mw_access_flags;
}

void WrFetchAdd(ibv_qp_ex* qp, uint32_t rkey, uint64_t addr, uint64_t add) {
  SendWr& wr = Next(qp, WrOpcode::kAtomicFetchAndAdd);
  wr.atomic.rkey = rkey;
  wr.atomic.remote_addr = addr;
  wr.atomic.compare_add = add;
}

// The setters act on the WR the last wr_* call started; before any, they do
// nothing (ibv_wr_post(3) leaves that undefined).
SendWr* Last(ibv_qp_ex* qp) {
  QpWrap* w = QpOf(qp);
  return w->batch.empty() ? nullptr : &w->batch.back();
}

void WrSetUdAddr(ibv_qp_ex* qp, ibv_ah* ah, uint32_t qpn, uint32_t qkey) {
  if (SendWr* wr = Last(qp)) {
    QpOf(qp)->batch_named.back().ah = ah;  // looked up at wr_complete
    wr->ud.remote_qpn = qpn;
    wr->ud.remote_qkey = qkey;
  }
}

void SetSges(ibv_qp_ex* qp, std::vector<Sge> sges) {
  SendWr* wr = Last(qp);
  if (wr == nullptr) return;
  QpWrap* w = QpOf(qp);
  w->batch_sges.push_back(std::move(sges));
  wr->sg_list = absl::MakeConstSpan(w->batch_sges.back());
}

void WrSetSge(ibv_qp_ex* qp, uint32_t lkey, uint64_t addr, uint32_t length) {
  SetSges(qp, {Sge{addr, length, lkey}});
}

void WrSetSgeList(ibv_qp_ex* qp, size_t n, const ibv_sge* list) {
  std::vector<Sge> sges;
  for (size_t i = 0; i < n; ++i) {
    sges.push_back({list[i].addr, list[i].length, list[i].lkey});
  }
  SetSges(qp, std::move(sges));
}

// Inline data is copied now, as the verb allows the buffer to be reused at
// once; it goes out as one inline SGE.
void SetInline(ibv_qp_ex* qp, std::string data) {
  SendWr* wr = Last(qp);
  if (wr == nullptr) return;
  QpWrap* w = QpOf(qp);
  w->batch_inline.push_back(std::move(data));
  const std::string& kept = w->batch_inline.back();
  wr->send_flags |= IBV_SEND_INLINE;
  SetSges(qp, {Sge{reinterpret_cast<uintptr_t>(kept.data()),
                   static_cast<uint32_t>(kept.size()), 0}});
}

void WrSetInlineData(ibv_qp_ex* qp, void* addr, size_t length) {
  SetInline(qp, std::string(static_cast<const char*>(addr), length));
}

void WrSetInlineDataList(ibv_qp_ex* qp, size_t n, const ibv_data_buf* list) {
  std::string data;
  for (size_t i = 0; i < n; ++i) {
    data.append(static_cast<const char*>(list[i].addr), list[i].length);
  }
  SetInline(qp, std::move(data));
}

}  // namespace

namespace verbsim::dropin {

void InitCqEx(CqWrap* w) {
  ibv_cq_ex& c = w->cqx;
  c.start_poll = StartPoll;
  c.next_poll = NextPoll;
  c.end_poll = EndPoll;
  c.read_opcode = ReadOpcode;
  c.read_vendor_err = ReadVendorErr;
  c.read_byte_len = ReadByteLen;
  c.read_imm_data = ReadImmData;
  c.read_qp_num = ReadQpNum;
  c.read_src_qp = ReadSrcQp;
  c.read_wc_flags = ReadWcFlags;
  c.read_slid = ReadSlid;
  c.read_sl = ReadSl;
  c.read_dlid_path_bits = ReadDlidPathBits;
}

void InitQpEx(QpWrap* w) {
  w->extended = true;
  ibv_qp_ex& q = w->qpx;
  q.wr_start = WrStart;
  q.wr_complete = WrComplete;
  q.wr_abort = WrAbort;
  q.wr_send = WrSend;
  q.wr_send_imm = WrSendImm;
  q.wr_send_inv = WrSendInv;
  q.wr_local_inv = WrLocalInv;
  q.wr_rdma_write = WrRdmaWrite;
  q.wr_rdma_write_imm = WrRdmaWriteImm;
  q.wr_rdma_read = WrRdmaRead;
  q.wr_atomic_cmp_swp = WrCmpSwp;
  q.wr_atomic_fetch_add = WrFetchAdd;
  q.wr_bind_mw = WrBindMw;
  q.wr_set_ud_addr = WrSetUdAddr;
  q.wr_set_sge = WrSetSge;
  q.wr_set_sge_list = WrSetSgeList;
  q.wr_set_inline_data = WrSetInlineData;
  q.wr_set_inline_data_list = WrSetInlineDataList;
}

// verbs_context::create_cq_ex: the standard completion fields only
// (IBV_WC_STANDARD_FLAGS); completion timestamps, CVLAN, flow tags and tag
// matching are not covered.
ibv_cq_ex* CreateCqExOp(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  if ((attr->wc_flags & ~uint64_t{IBV_WC_STANDARD_FLAGS}) != 0) {
    Unsupported(
        "ibv_create_cq_ex with wc_flags beyond IBV_WC_STANDARD_FLAGS "
        "(completion timestamps, CVLAN, flow tag, TM)");
    return nullptr;
  }
  if ((attr->comp_mask & ~uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS}) != 0) {
    Unsupported("ibv_create_cq_ex with comp_mask beyond FLAGS");
    return nullptr;
  }
  ibv_cq* cq = ibv_create_cq(context, static_cast<int>(attr->cqe),
                             attr->cq_context, attr->channel,
                             static_cast<int>(attr->comp_vector));
  if (cq == nullptr) return nullptr;
  CqWrap* w = WrapOf<CqWrap>(cq);
  InitCqEx(w);
  return &w->cqx;
}

}  // namespace verbsim::dropin
