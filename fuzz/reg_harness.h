// The registration harness (reg_fuzzer.cc states what it checks): its
// objects and its state. Its steps are defined by concern in
// reg_fuzzer.cc (setup, registration, re-registration, PDs),
// reg_probes.cc (keys used by the client's and the server's work requests)
// and reg_windows.cc (memory windows).
#ifndef VERBSIM_FUZZ_REG_HARNESS_H_
#define VERBSIM_FUZZ_REG_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/provider.h"
#include "core/verbs.h"
#include "fuzz/bytes.h"
#include "fuzz/harness.h"
#include "fuzz/model.h"
#include "fuzz/programs.h"
#include "fuzz/verbs_ops.h"

namespace verbsim::fuzz::reg_harness {

using namespace reg_program;  // NOLINT: the op and field encodings

constexpr size_t kGuard = 64;
constexpr int kClientNode = 0;
constexpr int kServerNode = 1;
constexpr int kServerPdId = 1000;  // the server's PD, in the model's ids
constexpr int kClientQp = 0;       // the model's id of the client QP

struct PdSlot {
  Pd* pd = nullptr;             // not owned for the endpoint's PD
  std::unique_ptr<Pd> owned;
  bool alive = true;
  bool has_qp = false;
};

struct MrSlot {
  std::unique_ptr<Mr> handle;  // null once dropped
  int model = -1;
};

struct MwSlot {
  std::unique_ptr<Mw> handle;  // null once dropped
  int model = -1;
};

class RegHarness {
 public:
  explicit RegHarness(ByteReader& in) : in_(in) {}

  void Run();

 private:
  // --- Setup and registration (reg_fuzzer.cc) ---
  void Setup();
  uint64_t DecodeAddr();
  uint64_t DecodeLength(uint64_t addr);
  uint32_t DecodeAccess();
  void Register();
  void Deregister();
  void Drop();
  void AllocPd();
  void DestroyPd();
  void Rereg();

  // --- Probes (reg_probes.cc) ---
  uint32_t DecodeKey();
  // A place in the client's buffer (guards included) for `len` bytes.
  uint64_t DecodeProbeAddr(uint64_t len);
  // Runs the fabric and checks the requester's single completion, the other
  // CQs and the QP states.
  // With `completes` false (an unsignaled WR that succeeds), nothing may
  // complete; with `opcode`, a successful completion must have it.
  void Finish(Endpoint& requester, uint64_t wr_id, const StatusSet& want,
              bool responder_error, bool completes = true,
              const WcOpcode* opcode = nullptr);
  void ProbeLocal();
  void ProbeRemote();

  // --- Memory windows (reg_windows.cc) ---
  void AllocMw();
  void DeallocMw();
  uint64_t DecodeWindowAddr(const ModelMr* mr);
  uint64_t DecodeWindowLength(const ModelMr* mr, uint64_t addr);
  void BindMw();
  void LocalInv();

  ByteReader& in_;
  std::string profile_;
  ProfileRules rules_;
  RegLimits limits_;
  int max_mw_ = 0;
  NthCallFault registrations_;  // counted as `regfail nth=` counts them
  uint64_t next_wr_id_ = 1;
  // Unsignaled WRs posted on the client's QP since its last completion was
  // polled. A program must signal one every so often: on a profile where a
  // completed WR holds its slot until a completion of its queue is polled
  // (SimProfile::sq_slots_held_until_polled, as mlx5), a run of unsignaled
  // WRs as long as the queue fills it (ibv_post_send(3)). The harness
  // signals the WR that would make the run kMaxUnsignaledRun long.
  static constexpr int kMaxUnsignaledRun = 32;
  int unsignaled_run_ = 0;
  // Whether the next WR is signaled: as the input says, unless the run of
  // unsignaled ones is as long as it may get.
  bool Signaled(bool asked) const {
    return asked || unsignaled_run_ + 1 >= kMaxUnsignaledRun;
  }
  // Counts a WR posted on the client's QP: `completes` (signaled, or
  // failing) ends the run, as its completion is polled.
  void CountPosted(bool completes) {
    unsignaled_run_ = completes ? 0 : unsignaled_run_ + 1;
  }
  // Declared before the fabric's objects, so they outlive them.
  std::unique_ptr<ShadowedBuffer> arena_;
  std::unique_ptr<ShadowedBuffer> peer_;
  std::unique_ptr<SimPair> pair_;
  std::unique_ptr<Mr> peer_mr_;
  std::vector<PdSlot> pds_;
  std::vector<MrSlot> mrs_;
  KeyModel keys_;
  std::vector<MwSlot> mws_;
};

}  // namespace verbsim::fuzz::reg_harness

#endif  // VERBSIM_FUZZ_REG_HARNESS_H_
