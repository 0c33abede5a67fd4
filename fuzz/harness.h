// Helpers shared by the fuzz harnesses: reporting a violated invariant,
// guarded memory with a shadow copy, a connected RC pair on the sim that can
// be brought back up after an error, draining CQs, and running one input.
#ifndef VERBSIM_FUZZ_HARNESS_H_
#define VERBSIM_FUZZ_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/errors.h"
#include "core/provider.h"
#include "core/verbs.h"
#include "fuzz/bytes.h"
#include "sim/fabric.h"

namespace verbsim::fuzz {

// Prints the violated invariant and aborts, which libFuzzer reports as a
// crash (and saves the input).
[[noreturn]] void Violation(const std::string& what);

// Whether VERBSIM_FUZZ_VERBOSE is set: each decoded step is printed.
bool Verbose();
// Prints one program step (when verbose).
void Note(const std::string& step);
// Builds and prints the step only when verbose: the harnesses run thousands
// of programs a second and must not format strings nobody reads.
#define FUZZ_NOTE(...)                                    \
  do {                                                    \
    if (::verbsim::fuzz::Verbose()) {                     \
      ::verbsim::fuzz::Note(__VA_ARGS__);                 \
    }                                                     \
  } while (0)
// Forgets the steps of the previous input.
void ResetNotes();

// Known deviations of the sim from its documentation, found by these
// harnesses and reported (docs/fuzzing.md lists them with their reproducers,
// fuzz/corpus/*/finding-*). The model follows the sim there, so the corpus
// replays and CI stay green until the sim is fixed, unless
// VERBSIM_FUZZ_STRICT is set: then the model holds the sim to the
// documentation and the reproducers fail.
bool Strict();

// `status` must carry errno `expected` (0: OK). (`what` is a view: the
// harnesses call this for every verb, mostly with literals, and a
// std::string of one would be an allocation each time.)
void ExpectErrno(const absl::Status& status, int expected,
                 absl::string_view what);
// The same with `what` the absl::StrCat of the remaining arguments, built
// only when the errno is wrong: a description of the call (numbers, a
// mask's flag names) built for every check was allocations on every run
// for a message hardly ever printed.
#define FUZZ_EXPECT_ERRNO(status, expected, ...)                   \
  do {                                                             \
    const ::absl::Status& fuzz_status_ = (status);                 \
    const int fuzz_expected_ = (expected);                         \
    if (::verbsim::ErrnoOf(fuzz_status_) != fuzz_expected_) {      \
      ::verbsim::fuzz::ExpectErrno(fuzz_status_, fuzz_expected_,   \
                                   ::absl::StrCat(__VA_ARGS__));   \
    }                                                              \
  } while (0)

// Fills `bytes` with a pattern derived from `seed` (xorshift).
void FillPattern(uint8_t* bytes, size_t n, uint64_t seed);

// Memory the sim may touch, with a shadow copy of what it must hold. Every
// byte of the buffer is compared with the shadow by Check(): a byte changed
// where no successful operation was allowed to write is a violation.
class ShadowedBuffer {
 public:
  ShadowedBuffer(size_t size, uint64_t seed);
  uint8_t* data() { return bytes_.data(); }
  uint64_t addr() const { return reinterpret_cast<uint64_t>(bytes_.data()); }
  size_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& shadow() { return shadow_; }
  // Whether [addr, addr + len) lies inside the buffer.
  bool Holds(uint64_t addr, uint64_t len) const;
  // The shadow offset of an address inside the buffer.
  size_t Offset(uint64_t addr) const { return addr - this->addr(); }
  // Refills [offset, offset + n) in both the buffer and the shadow.
  void Refill(size_t offset, size_t n, uint64_t seed);
  // Takes whatever the buffer holds in [offset, offset + n) as right (bytes
  // whose content the rules leave undefined).
  void AcceptActual(size_t offset, size_t n);
  // Violation naming the first differing byte.
  void Check(absl::string_view what) const;

 private:
  std::vector<uint8_t> bytes_;
  std::vector<uint8_t> shadow_;
};

// Two endpoints connected by RC on a fresh sim fabric: the client on sim0,
// the server on sim1.
struct SimPair {
  std::unique_ptr<Provider> provider;
  sim::Fabric* fabric = nullptr;
  EndpointPair eps;
  EndpointAttr client_attr;
  EndpointAttr server_attr;

  Endpoint& client() { return *eps.client; }
  Endpoint& server() { return *eps.server; }
  // Both QPs to RESET and up to RTS again, connected to each other, with
  // the attributes above (the server's qp_access included).
  void Reconnect();
};

// Opens "sim:<profile>,seed=<seed>" and connects a pair; the server QP gets
// `server_access`. Aborts on failure (the setup is not what is fuzzed).
std::unique_ptr<SimPair> MakeSimPair(const std::string& profile, uint64_t seed,
                                     const EndpointAttr& attr,
                                     uint32_t server_access);

// What a drained CQ held. A check drains a few CQs after every step and
// most hold at most a batch's completions, so they stay on the stack.
using Completions = absl::InlinedVector<WorkCompletion, 16>;

// Polls `cq` until it is empty; returns what it held.
Completions DrainCq(Cq* cq);

// "wr_id 3 SUCCESS RDMA_WRITE len 8 qp 17".
std::string WcString(const WorkCompletion& wc);

// The body of a harness's LLVMFuzzerTestOneInput: decodes and runs one
// input with a fresh `Harness` (constructed from the input's ByteReader; its
// Run() checks every invariant), which is gone before this returns.
template <typename Harness>
int RunOneInput(const uint8_t* data, size_t size) {
  ResetNotes();
  ByteReader in(data, size);
  {
    Harness harness(in);
    harness.Run();
  }
  return 0;
}

}  // namespace verbsim::fuzz

#endif  // VERBSIM_FUZZ_HARNESS_H_
