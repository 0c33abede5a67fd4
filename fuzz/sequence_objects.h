// The objects of a sequence program (sequence_fuzzer.cc): per node a
// context, a completion channel and its PDs; the CQs, MRs and QPs the
// program makes, each with what the program knows of it. Handles are
// dropped (reset) while the program runs as well as at its end.
#ifndef VERBSIM_FUZZ_SEQUENCE_OBJECTS_H_
#define VERBSIM_FUZZ_SEQUENCE_OBJECTS_H_

#include <cstdint>
#include <memory>

#include "core/provider.h"
#include "core/types.h"
#include "core/verbs.h"
#include "fuzz/model.h"

namespace verbsim::fuzz::seq_harness {

constexpr int kPdsPerNode = 2;

struct NodeObj {
  std::unique_ptr<Context> ctx;
  bool ctx_destroyed = false;
  std::unique_ptr<CompChannel> channel;
  bool channel_destroyed = false;
  Gid gid{};
};

struct PdObj {
  int node = 0;
  std::unique_ptr<Pd> h;
  bool destroyed = false;
};

struct CqObj {
  int node = 0;
  std::unique_ptr<Cq> h;
  bool destroyed = false;
  bool dropped = false;
  bool has_channel = false;
  int cqe = 0;
  bool lossy = false;  // it may have overrun, or its handle is gone
  int pending = 0;     // WRs that may still complete here
  bool usable() const { return !destroyed && !dropped; }
};

struct MrObj {
  int node = 0;
  int pd = 0;
  std::unique_ptr<Mr> h;
  bool live = true;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

struct QpObj {
  int node = 0;
  int pd = 0;
  int scq = 0;
  int rcq = 0;
  std::unique_ptr<Qp> h;
  bool destroyed = false;
  bool dropped = false;
  uint32_t qpn = 0;
  QpCaps caps;
  bool sq_sig_all = false;
  EndpointAttr attr;
  QpState user = QpState::kReset;  // what the program last moved it to
  int peer_node = -1;
  uint32_t epoch = 0;  // bumped by RESET: older WRs are abandoned
  bool gone() const { return destroyed || dropped; }
};

}  // namespace verbsim::fuzz::seq_harness

#endif  // VERBSIM_FUZZ_SEQUENCE_OBJECTS_H_
