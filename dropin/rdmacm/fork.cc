// fork() and the drop-in CM. The CM's locks are held across fork, so the
// child's copy of its state is consistent. When the fabric spans processes
// (VERBSIM_UDP), the drop-in libibverbs gives the child a fabric of its own
// (docs/udp-transport.md, "Processes sharing a node"); the CM then opens
// the devices again and starts its service thread again in the child, on
// first use. The parent's ids and channels stay the parent's: a child uses
// the ones it makes, as with the kernel's CM, whose ids are bound to the
// file of the process that made them.
#include <pthread.h>

#include "dropin/rdmacm/cm.h"

namespace verbsim::rdmacm {
namespace {

void Prepare() {
  CmMutex().lock();
  LockNodesForFork();
}

void Parent() {
  UnlockNodesAfterFork();
  CmMutex().unlock();
}

void Child() {
  UnlockNodesAfterFork();
  CmMutex().unlock();
  if (SocketNamespace().rfind("udp", 0) == 0) {
    ForgetServiceAfterFork();
    ForgetNodesAfterFork();
  }
}

}  // namespace

void RegisterForkHandlers() {
  static const bool registered = pthread_atfork(Prepare, Parent, Child) == 0;
  (void)registered;
}

}  // namespace verbsim::rdmacm
