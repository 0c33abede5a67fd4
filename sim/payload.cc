#include "sim/payload.h"

namespace verbsim::sim::payload_pool {
namespace {

// Its destructor runs when the thread ends and frees the thread's spare
// blocks.
struct DrainAtExit {
  ~DrainAtExit() {
    Drain();
    t_pool.closed = true;
  }
};

}  // namespace

void RegisterDrain() {
  static thread_local DrainAtExit drain;
  (void)drain;
  t_pool.registered = true;
}

void Drain() {
  Pool& pool = t_pool;
  while (pool.count > 0) delete[] pool.blocks[--pool.count];
}

}  // namespace verbsim::sim::payload_pool
