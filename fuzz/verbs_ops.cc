#include "fuzz/verbs_ops.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/harness.h"

namespace verbsim::fuzz {

WrOpcode WrOpcodeFor(RemoteKind kind) {
  switch (kind) {
    case RemoteKind::kWrite: return WrOpcode::kRdmaWrite;
    case RemoteKind::kWriteImm: return WrOpcode::kRdmaWriteWithImm;
    case RemoteKind::kRead: return WrOpcode::kRdmaRead;
    case RemoteKind::kCmpSwap: return WrOpcode::kAtomicCmpAndSwp;
    case RemoteKind::kFetchAdd: return WrOpcode::kAtomicFetchAndAdd;
    case RemoteKind::kSendInv: return WrOpcode::kSendWithInv;
  }
  return WrOpcode::kRdmaWrite;
}

void SetRemoteTarget(SendWr& wr, uint64_t addr, uint32_t rkey) {
  if (wr.opcode == WrOpcode::kAtomicCmpAndSwp ||
      wr.opcode == WrOpcode::kAtomicFetchAndAdd) {
    wr.atomic.remote_addr = addr;
    wr.atomic.rkey = rkey;
  } else {
    wr.rdma.remote_addr = addr;
    wr.rdma.rkey = rkey;
  }
}

uint64_t AtomicResult(RemoteKind kind, uint64_t orig, uint64_t compare_add,
                      uint64_t swap) {
  if (kind == RemoteKind::kCmpSwap) return orig == compare_add ? swap : orig;
  return orig + compare_add;
}

ModelMw NewModelMw(int node, int pd, MwType type, uint32_t rkey) {
  ModelMw m;
  m.node = node;
  m.pd = pd;
  m.type = type;
  m.rkey = m.handle_rkey = rkey;
  return m;
}

absl::Status PostBind(Qp& qp, Mw* mw, Mr* region, const BindCall& call,
                      uint64_t wr_id, bool signaled) {
  MwBindInfo info;
  info.mr = region;
  info.addr = call.addr;
  info.length = call.length;
  info.mw_access_flags = call.access;
  if (call.verb) {
    MwBind bind;
    bind.wr_id = wr_id;
    bind.send_flags = signaled ? kSendSignaled : 0;
    bind.bind_info = info;
    return qp.BindMw(mw, bind);
  }
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = WrOpcode::kBindMw;
  wr.send_flags = signaled ? kSendSignaled : 0;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = call.wr_rkey;
  wr.bind_mw.bind_info = info;
  return qp.PostSend(wr);
}

void PostLocalInv(Qp& qp, uint64_t wr_id, uint32_t rkey, bool signaled) {
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = WrOpcode::kLocalInv;
  wr.send_flags = signaled ? kSendSignaled : 0;
  wr.invalidate_rkey = rkey;
  ExpectErrno(qp.PostSend(wr), 0, "PostSend (LOCAL_INV)");
}

void CheckWindowRkey(const Mw& mw, const KeyModel& keys, int model,
                     size_t index) {
  if (mw.rkey() != keys.mw(model).handle_rkey) {
    Violation(absl::StrCat("window ", index, " reports rkey 0x",
                           absl::Hex(mw.rkey()), ", the model 0x",
                           absl::Hex(keys.mw(model).handle_rkey)));
  }
}

void CheckKeyCollisions(const KeyModel& keys) {
  const std::string collision = keys.FindCollision();
  if (!collision.empty()) Violation(collision);
}

}  // namespace verbsim::fuzz
