// Who the calling thread is (its kernel id; a token that tells it from the
// other live threads) and what the kernel says of a thread of this process:
// whether it is runnable (running or waiting for a CPU) rather than asleep.
// The fabric's helper threads use that to tell an application blocked on a
// descriptor from one that was only preempted (Fabric::HelperWait).
#ifndef VERBSIM_SIM_THREAD_STATE_H_
#define VERBSIM_SIM_THREAD_STATE_H_

#include <cstdint>

namespace verbsim::sim {

// gettid(2), uncached.
int GetTid();

// The calling thread's kernel thread id (gettid(2)), cached per thread: it
// is asked on every call into the fabric. A child after fork(2) keeps its
// parent's cached id, which names no thread of the child.
inline int CurrentThreadTid() {
  static thread_local const int tid = GetTid();
  return tid;
}

// A number that tells the calling thread from the other live threads of
// this process (the address of a thread-local): cheaper than the id, and
// unlike the cached id never shared with a thread of the parent.
inline uintptr_t CurrentThreadToken() {
  static thread_local char token;
  return reinterpret_cast<uintptr_t>(&token);
}

// Whether thread `tid` of this process is runnable: state R in
// /proc/self/task/TID/stat (proc(5)). False for a thread asleep or
// stopped, for one that does not exist, and when /proc cannot be read.
bool ThreadIsRunnable(int tid);

}  // namespace verbsim::sim

#endif  // VERBSIM_SIM_THREAD_STATE_H_
