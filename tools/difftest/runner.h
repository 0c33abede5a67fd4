// Runs a generated program (program.h) on one provider and writes what it
// saw as a normalized trace: every call's errno, every completion, and the
// bytes of both buffers at the end. Keys, QP numbers and addresses appear
// only as the program's own indices, so two providers' traces compare
// field by field.
#ifndef VERBSIM_TOOLS_DIFFTEST_RUNNER_H_
#define VERBSIM_TOOLS_DIFFTEST_RUNNER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/provider.h"
#include "tools/difftest/program.h"

namespace verbsim::difftest {

struct Trace {
  // One line per operation: what it was and what the call returned.
  std::vector<std::string> calls;
  // Completions in arrival order per queue ("qp2 send", "qp0 recv").
  std::map<std::string, std::vector<std::string>> completions;
  // Both buffers at the end.
  std::vector<uint8_t> bytes[2];
};

struct RunOptions {
  // After every operation the devices get this long to act on it: the
  // runner sleeps on hardware, and moves a sim fabric's virtual time on by
  // as much (time is frozen otherwise, so a poll never fast-forwards it).
  // Without it a sim, whose time stands still between calls, and a device,
  // which works while the program runs, see a remote error before or after
  // the next post by chance.
  absl::Duration settle = absl::Microseconds(500);
  // The last poll ends after this long without a completion (hardware);
  // a sim runs until nothing is left to happen.
  // Longer than a device's retries take to run out: the runner connects
  // with timeout 14 and retry_cnt 2 (3 x 67 ms), and an RNR timer of
  // 61.44 ms with rnr_retry 2 (2 waits).
  absl::Duration final_quiet = absl::Milliseconds(300);
};

// Runs `program` on `spec`'s provider (its first two devices, or one twice).
absl::StatusOr<Trace> RunProgram(const Program& program,
                                 const std::string& spec,
                                 const RunOptions& options = RunOptions());

// Where two traces differ, one line each; empty when they agree.
std::vector<std::string> Compare(const Trace& a, const Trace& b,
                                 const std::string& name_a,
                                 const std::string& name_b);

// Whether two traces differ only where rxe0 answers either way: one WR of
// one send queue ends with a local error (LOC_PROT_ERR, LOC_QP_OP_ERR) in
// one trace and a remote one (REM_ACCESS_ERR, REM_OP_ERR, REM_INV_REQ_ERR)
// in the other, and everything else, calls, other completions and bytes,
// is equal. rxe builds and sends a WR packet by packet, and the peer's NAK
// of an early packet races the requester's own check of a later packet's
// local SGE (docs/fidelity.md, "Differential runs": both outcomes at every
// count of packets sent before the failing one).
bool LocalOrRemoteErrorRace(const Trace& a, const Trace& b);

// Whether two traces differ only where siw0 answers either way: one WR of
// one send queue completes LOC_QP_OP_ERR in one trace and SUCCESS, or
// nothing (unsignaled), in the other, and everything else, calls, other
// completions and bytes, is equal. siw fails the WR it is transmitting
// when the connection's transmit side is suspended after one of its FPDUs,
// which a TERMINATE received from the peer or the TCP close sets from
// another context (siw_qp_tx.c siw_qp_sq_process), so whether a WR still
// on its way when the peer ends the connection gets it depends on timing
// (docs/fidelity.md, "Differential runs"; tools/fidelity/races.tsv).
bool TransmitCutByTerminateRace(const Trace& a, const Trace& b);

// Whether two traces differ only where rxe 6.1 wedges a requester: one QP
// completes nothing at all in one trace, while in the other its send queue
// holds one error and then flushes only (its receive queue, if anything,
// flushes), and everything else, calls, other completions and bytes, is
// equal. rxe's requester that fails a WR locally sets its own error state
// while the QP still reports RTS; a NAK of an earlier READ or atomic that
// arrives after that is dropped, so that WR never completes, the
// completer never reaches the failed one, and nothing completes until the
// QP is moved to ERR (docs/fidelity.md, "Differential runs": rxe_req.c's
// `err` path, rxe_recv.c check_type_state). Whether the NAK comes first
// depends on timing.
bool WedgedRequesterRace(const Trace& a, const Trace& b);

// The whole trace, for printing.
std::string Format(const Trace& trace);

}  // namespace verbsim::difftest

#endif  // VERBSIM_TOOLS_DIFFTEST_RUNNER_H_
