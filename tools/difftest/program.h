// Generated verb programs for the differential runs (docs/fidelity.md,
// "Differential runs"): a seed gives a short random program over two
// devices of one provider: registrations at random offsets, lengths and
// access flags, RC QPs of random sizes connected through the CM, posts of
// every RC opcode with random SGE lists, keys and flags, moves to ERR, and
// polls. The same program runs on any provider (runner.h), so sim:rxe and
// hw:rxe0 (or sim:siw and hw:siw0) can be compared call by call.
#ifndef VERBSIM_TOOLS_DIFFTEST_PROGRAM_H_
#define VERBSIM_TOOLS_DIFFTEST_PROGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

namespace verbsim::difftest {

// The buffer each side registers from: page aligned, this long.
inline constexpr uint32_t kBufferBytes = 16384;
// The memory behind each side's buffer: a program's offsets and lengths are
// each at most kBufferBytes, so every range it names ends inside this, and
// what the device pins never depends on what the heap holds past it (an
// unmapped page there made ibv_reg_mr answer EFAULT on some runs).
inline constexpr uint32_t kArenaBytes = 2 * kBufferBytes;

enum class OpKind : uint8_t {
  kRegMr,      // side, offset, length, access
  kDeregMr,    // mr
  kCreateQp,   // side, send_wr, recv_wr, send_sge, recv_sge, inline
  kConnect,    // qp on side 0, qp on side 1 (through the CM)
  kModifyErr,  // qp
  kPostRecv,   // qp, sges
  kPostSend,   // qp, opcode, flags, sges, remote mr, remote offset, key
  kPoll,
};

// One SGE: an MR (by the order of successful registrations on the QP's
// side; past the end: a key no MR has), an offset from the MR's start
// (may lie outside it) and a length.
struct SgeSpec {
  uint32_t mr = 0;
  int32_t offset = 0;
  uint32_t length = 0;
};

struct Op {
  OpKind kind = OpKind::kPoll;
  uint32_t side = 0;
  uint32_t a = 0, b = 0, c = 0, d = 0, e = 0;  // kind-specific, see above
  int32_t offset = 0;
  uint32_t length = 0;
  std::vector<SgeSpec> sges;
};

struct Program {
  uint64_t seed = 0;
  std::vector<Op> ops;
};

// The program of `seed`, `ops` operations long (plus the set-up it needs).
Program Generate(uint64_t seed, int ops);

// One line per operation, as the runner names them.
std::string Describe(const Op& op);
std::string Describe(const Program& program);

}  // namespace verbsim::difftest

#endif  // VERBSIM_TOOLS_DIFFTEST_PROGRAM_H_
