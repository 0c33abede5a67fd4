#include "fuzz/harness.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/environment.h"
#include "core/errors.h"
#include "core/names.h"
#include "sim/sim_provider.h"

namespace verbsim::fuzz {

bool Verbose() {
  static const bool verbose = env::IsOn(env::kFuzzVerbose);
  return verbose;
}

bool Strict() {
  static const bool strict = env::IsOn(env::kFuzzStrict);
  return strict;
}

void Note(const std::string& step) {
  if (Verbose()) std::fprintf(stderr, "  | %s\n", step.c_str());
}

void ResetNotes() {
  if (Verbose()) std::fprintf(stderr, "  | --- new input ---\n");
}

void Violation(const std::string& what) {
  std::fprintf(stderr,
               "\nverbsim fuzz: INVARIANT VIOLATED: %s\n"
               "verbsim fuzz: replay this input with VERBSIM_FUZZ_VERBOSE=1 "
               "to see every step of the decoded program.\n",
               what.c_str());
  std::fflush(stderr);
  std::abort();
}

void ExpectErrno(const absl::Status& status, int expected,
                 absl::string_view what) {
  const int got = ErrnoOf(status);
  if (got != expected) {
    Violation(absl::StrCat(what, ": expected ",
                           expected == 0 ? "OK" : ErrnoName(expected),
                           ", got ", status.ok() ? "OK" : status.ToString()));
  }
}

// Not instrumented for coverage: it fills kilobytes per input and has no
// branches worth a fuzzer's attention.
#if defined(__clang__)
__attribute__((no_sanitize("coverage")))
#endif
void FillPattern(uint8_t* bytes, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(bytes + i, &x, 8);
  }
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  for (; i < n; ++i, x >>= 8) bytes[i] = static_cast<uint8_t>(x);
}

ShadowedBuffer::ShadowedBuffer(size_t size, uint64_t seed) : bytes_(size) {
  FillPattern(bytes_.data(), size, seed);
  // Built as a copy: no zero fill first (the harnesses make a few of these
  // of up to 33 KiB for every input).
  shadow_.assign(bytes_.begin(), bytes_.end());
}

bool ShadowedBuffer::Holds(uint64_t a, uint64_t len) const {
  const uint64_t base = addr();
  return a >= base && len <= size() && a - base <= size() - len;
}

void ShadowedBuffer::Refill(size_t offset, size_t n, uint64_t seed) {
  FillPattern(bytes_.data() + offset, n, seed);
  std::memcpy(shadow_.data() + offset, bytes_.data() + offset, n);
}

void ShadowedBuffer::AcceptActual(size_t offset, size_t n) {
  std::memcpy(shadow_.data() + offset, bytes_.data() + offset, n);
}

void ShadowedBuffer::Check(absl::string_view what) const {
  if (std::memcmp(bytes_.data(), shadow_.data(), bytes_.size()) == 0) return;
  size_t first = 0;
  while (bytes_[first] == shadow_[first]) ++first;
  size_t last = bytes_.size() - 1;
  while (bytes_[last] == shadow_[last]) --last;
  Violation(absl::StrCat(
      what, ": memory differs from the model at offsets [", first, ", ",
      last + 1, ") of the buffer at 0x", absl::Hex(addr()), " (byte ", first,
      " is 0x", absl::Hex(bytes_[first]), ", expected 0x",
      absl::Hex(shadow_[first]), ")"));
}

void SimPair::Reconnect() {
  Qp* c = eps.client->qp();
  Qp* s = eps.server->qp();
  QpAttr reset;
  reset.qp_state = QpState::kReset;
  ExpectErrno(c->Modify(reset, kQpState), 0, "client QP to RESET");
  ExpectErrno(s->Modify(reset, kQpState), 0, "server QP to RESET");
  auto cgid = eps.client->context()->QueryGid(1, 0);
  auto sgid = eps.server->context()->QueryGid(1, 0);
  if (!cgid.ok() || !sgid.ok()) Violation("QueryGid failed");
  ExpectErrno(ModifyQpToInit(c, client_attr), 0, "client QP to INIT");
  ExpectErrno(ModifyQpToInit(s, server_attr), 0, "server QP to INIT");
  ExpectErrno(ModifyQpToRtr(c, client_attr, s->qp_num(), *sgid,
                            server_attr.sq_psn),
              0, "client QP to RTR");
  ExpectErrno(ModifyQpToRtr(s, server_attr, c->qp_num(), *cgid,
                            client_attr.sq_psn),
              0, "server QP to RTR");
  ExpectErrno(ModifyQpToRts(c, client_attr, client_attr.sq_psn), 0,
              "client QP to RTS");
  ExpectErrno(ModifyQpToRts(s, server_attr, server_attr.sq_psn), 0,
              "server QP to RTS");
}

std::unique_ptr<SimPair> MakeSimPair(const std::string& profile, uint64_t seed,
                                     const EndpointAttr& attr,
                                     uint32_t server_access) {
  auto pair = std::make_unique<SimPair>();
  auto provider = OpenProvider(absl::StrCat("sim:", profile, ",seed=", seed));
  if (!provider.ok()) Violation(provider.status().ToString());
  pair->provider = *std::move(provider);
  pair->fabric = &sim::AsSimProvider(pair->provider.get())->fabric();
  auto eps = CreateConnectedPair(*pair->provider, attr);
  if (!eps.ok()) Violation(eps.status().ToString());
  pair->eps = *std::move(eps);
  pair->client_attr = attr;
  pair->server_attr = attr;
  pair->server_attr.qp_access = server_access;
  if (server_access != attr.qp_access) {
    QpAttr a;
    a.qp_access_flags = server_access;
    ExpectErrno(pair->eps.server->qp()->Modify(a, kQpAccessFlags), 0,
                "server QP access flags");
  }
  return pair;
}

Completions DrainCq(Cq* cq) {
  Completions out;
  WorkCompletion wcs[16];
  while (true) {
    auto n = cq->Poll(absl::MakeSpan(wcs));
    if (!n.ok()) Violation(absl::StrCat("Poll failed: ", n.status().ToString()));
    if (*n == 0) break;
    out.insert(out.end(), wcs, wcs + *n);
  }
  return out;
}

std::string WcString(const WorkCompletion& wc) {
  return absl::StrCat("wr_id ", wc.wr_id, " ", WcStatusName(wc.status), " ",
                      WcOpcodeName(wc.opcode), " len ", wc.byte_len, " qp ",
                      wc.qp_num);
}

}  // namespace verbsim::fuzz
