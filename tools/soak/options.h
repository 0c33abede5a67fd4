// The soak worker's command line (tools/soak.sh passes it).
#ifndef VERBSIM_TOOLS_SOAK_OPTIONS_H_
#define VERBSIM_TOOLS_SOAK_OPTIONS_H_

#include <cstdint>
#include <string>

namespace verbsim::soak {

// A test-only fault of the worker itself, so that a test can show the
// checks catch it: process 0 spoils one message of its stream to process 1.
enum class Inject {
  kNone,
  kCorrupt,       // one RC send's byte flipped after it was sealed
  kSkip,          // one RC message number never sent
  kRepeat,        // one RC message number sent twice
  kReorder,       // two RC message numbers swapped
  kUdRepeat,      // one UD datagram sent twice
  kUdCorrupt,     // one UD datagram's byte flipped after it was sealed
  kUdMisdeliver,  // one UD datagram for process 1 sent to process 2
  kError,         // one RDMA write with a wrong rkey: an error completion
  kStall,         // process 0 stops working a third into the run
  kLeak,          // process 0 allocates and touches 2 MiB every 100 ms
};

struct Options {
  int index = -1;           // this process's node
  int procs = 0;            // processes (nodes) in the fabric
  int port = 0;             // UDP base port: node i on port + i
  double seconds = 60;      // traffic time
  double warmup = 0;        // when RSS is first read; 0: a tenth, <= 10 s
  double watchdog = 10;     // seconds without progress that fail the run
  uint64_t seed = 1;
  bool faults = true;       // the packet fault rules of docs/reliability.md
  std::string dir;          // where the processes meet (rendezvous files)
  Inject inject = Inject::kNone;
};

// Parses --index= --procs= --port= --seconds= --warmup= --watchdog= --seed=
// --faults=on|off --dir= --inject=; empty on success, else the error.
std::string ParseOptions(int argc, char** argv, Options* o);

}  // namespace verbsim::soak

#endif  // VERBSIM_TOOLS_SOAK_OPTIONS_H_
