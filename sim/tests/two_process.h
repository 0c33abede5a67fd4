// Helpers of the two-process tests of the UDP transport: a forked child
// owns one node of a two-node fabric, the parent the other; they exchange
// what a connection needs over pipes (docs/udp-transport.md).
#ifndef VERBSIM_SIM_TESTS_TWO_PROCESS_H_
#define VERBSIM_SIM_TESTS_TWO_PROCESS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/endpoint.h"
#include "core/provider.h"
#include "sim/fabric.h"
#include "sim/sim_provider.h"

namespace verbsim::sim {

// How long a test waits for a completion.
constexpr absl::Duration kComp = absl::Seconds(10);

// What one side tells the other.
struct Info {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  Gid gid{};
};

// A pipe pair between parent and child; every read is bounded in time.
struct Channel {
  int rd = -1, wr = -1;
  bool Write(const void* p, size_t n);
  bool Read(void* p, size_t n, int timeout_ms = 20000);
  bool Token(uint32_t t) { return Write(&t, sizeof(t)); }
  bool Expect(uint32_t want) {
    uint32_t t = 0;
    return Read(&t, sizeof(t)) && t == want;
  }
};

// `count` free UDP ports from base on loopback (probed; the child binds its
// own after the fork); 0 when none were found.
int FreeBasePort(int count = 2);

// One side: its provider (a two-node fabric whose node `me` is local) and
// one endpoint on that node.
struct Side {
  std::unique_ptr<Provider> provider;
  std::unique_ptr<Endpoint> ep;
  std::vector<uint8_t> buf = std::vector<uint8_t>(64 * 1024);
  std::unique_ptr<Mr> mr;
  Info info;

  Fabric& fabric() { return AsSimProvider(provider.get())->fabric(); }
};

// Builds side `me` on UDP ports from `base`: its endpoint in INIT and a
// 64 KiB region with every access. `timeout`: the RC ACK timeout exponent
// (10: 4 ms, so that a lost packet is retried soon; 14, the default, 67 ms,
// for bursts that a sanitizer build takes a while to receive).
absl::Status MakeSide(int base, int me, QpType type, Side* s,
                      uint8_t timeout = 10);
// The same on a provider opened with `spec`, the endpoint on node `me`.
absl::Status MakeSideWith(const std::string& spec, int me, QpType type,
                          Side* s, uint8_t timeout = 10);

// Moves the side's QP to RTR and RTS towards `peer`.
absl::Status Connect(Side& s, const Info& peer);

// Runs `child` in a forked process and `parent` here, with a channel each
// way. The child exits 0 when it saw no failure; it is killed after 60 s.
void RunTwoProcesses(const std::function<void(int base, Channel&)>& parent,
                     const std::function<void(int base, Channel&)>& child);

// Runs `victim` in a forked child and `survivor` here, with a channel each
// way. The survivor is handed a function that kills the child with SIGKILL
// and reaps it (a process dying mid-transfer); the child must end that way,
// not by exiting. A child still alive when the survivor returns is killed
// and counted as a failure.
void RunWithVictim(
    const std::function<void(int base, Channel&,
                             const std::function<void()>& kill_victim)>&
        survivor,
    const std::function<void(int base, Channel&)>& victim);

// Exchanges Info: the parent writes first.
bool Exchange(Channel& ch, const Info& mine, Info* peer, bool parent);

// A byte pattern that differs per seed.
void Fill(uint8_t* p, size_t n, int seed);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_TESTS_TWO_PROCESS_H_
