// The fabric lock's turns (Fabric::TakeLock). Every verb runs under one
// mutex, so two threads calling in at once mostly wait for each other. Left
// to the mutex, the lock changes hands between almost every two calls, and
// each change moves the fabric's working data (the event queue, the QPs,
// the trace) to the other core's cache, which costs more than the call.
// Here a thread that finds the lock busy waits for the holder's turn to
// end, then asks for the next turn; the holder, at its next call, lets it
// have the lock first. One thread's calls in one order still give one
// trace: turns decide only which thread's call comes next, as the mutex
// did.
#include <cstdint>
#include <mutex>
#include <thread>

#include "sim/fabric.h"
#include "sim/peer_liveness.h"  // MonotonicNs

namespace verbsim::sim {
namespace {

// How long a thread waits for a holder that keeps calling in and doing
// work before it asks for the next turn; the cost of a change of hands
// (the data moving to the other core) is then a small part of a turn.
constexpr int64_t kLockTurnNs = 1'000'000;
// A holder whose last call did work (Fabric::WorkDone) and that has not
// called in again for this long has left. One whose last two calls did
// none (e.g. polls of a CQ that stays empty, with nothing left to run) is
// not in a run of calls: a waiting thread takes the lock as soon as it is
// free.
constexpr int64_t kLockBusyNs = 20'000;
// How often a waiting thread looks at the holder's line; each look costs
// the holder a cache miss on its next write.
constexpr int64_t kLookEveryNs = 10'000;
// A thread whose turn has come tries the lock this long before it sleeps
// in the kernel until the lock is free (no other thread takes it first,
// except those that take it plainly: helpers, RunFor and the like).
constexpr int64_t kTurnSpinNs = 50'000;
// A turn asked for and not taken in this long is void: its thread is
// stuck, or the lock was held that long.
constexpr int64_t kTurnRequestLapseNs = 50'000'000;

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Waits about `ns` of real time, letting another thread of this processor
// run first (more threads than cores: the holder may be one of them), then
// spinning (a yield in every round measured slower with two threads on two
// cores).
void WaitAbout(int64_t ns) {
  const int64_t until = MonotonicNs() + ns;
  std::this_thread::yield();
  while (MonotonicNs() < until) {
    for (int i = 0; i < 32; ++i) Pause();
  }
}

}  // namespace

void Fabric::TakeLockSlow(uintptr_t me) {
  if (helper_thread_ || has_progress_thread()) {
    // A helper waits on events, not for turns; with a progress thread the
    // other takers are that thread and other processes sharing the cores.
    mu_.lock();
    NoteLockTaken();
    return;
  }
  // Free now (the last holder left, or is between two calls): take it.
  // Otherwise wait for a turn; the holder keeps lock_state_ up to date
  // while someone waits.
  if (lock_turn_.load(std::memory_order_acquire) != 0 || !mu_.try_lock()) {
    lock_waiters_.fetch_add(1, std::memory_order_relaxed);
    WaitForTurn(me);
    lock_waiters_.fetch_sub(1, std::memory_order_relaxed);
  }
  lock_holder_.store(me, std::memory_order_relaxed);
  NoteLockTaken();
}

void Fabric::WaitForTurn(uintptr_t me) {
  int64_t now = MonotonicNs();
  // Since this thread began to wait, or another thread's turn began.
  int64_t waiting_since_ns = now;
  uint64_t turns = lock_turns_.load(std::memory_order_relaxed);
  uint64_t state = lock_state_.load(std::memory_order_relaxed);
  int64_t state_seen_ns = now;
  bool asked = false;
  while (true) {
    uintptr_t turn = lock_turn_.load(std::memory_order_acquire);
    if (asked && turn == me) {
      TakeAskedTurn(me);
      return;
    }
    asked = false;  // (a lapse voided it)
    if (turn != 0 &&
        (turn == me ||  // a request this thread did not make: void
         now - lock_turn_asked_ns_.load(std::memory_order_relaxed) >
             kTurnRequestLapseNs)) {
      lock_turn_.compare_exchange_strong(turn, 0);
      continue;
    }
    const uint64_t turns_now = lock_turns_.load(std::memory_order_relaxed);
    if (turns_now != turns) {
      turns = turns_now;
      waiting_since_ns = now;
    }
    const uint64_t state_now = lock_state_.load(std::memory_order_relaxed);
    if (state_now != state) {
      state = state_now;
      state_seen_ns = now;
    }
    // In a run of calls that do work: held, or given up a moment ago.
    const bool busy =
        (state & 2) != 0 &&
        ((state & 1) != 0 || now - state_seen_ns < kLockBusyNs);
    if (turn == 0 && !busy) {
      for (int i = 0; i < 64; ++i) {
        if (mu_.try_lock()) {
          lock_turns_.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        for (int j = 0; j < 8; ++j) Pause();
      }
    }
    if (turn == 0 && now - waiting_since_ns >= kLockTurnNs) {
      lock_turn_asked_ns_.store(now, std::memory_order_relaxed);
      uintptr_t none = 0;
      if (lock_turn_.compare_exchange_strong(none, me)) {
        asked = true;
        continue;
      }
    }
    WaitAbout(kLookEveryNs);
    now = MonotonicNs();
  }
}

void Fabric::TakeAskedTurn(uintptr_t me) {
  // The other takers leave the lock to this thread once it is free.
  const int64_t spin_until = MonotonicNs() + kTurnSpinNs;
  bool taken = false;
  while (!taken && MonotonicNs() < spin_until) {
    for (int i = 0; i < 64 && !taken; ++i) {
      taken = mu_.try_lock();
      if (!taken) Pause();
    }
  }
  if (!taken) mu_.lock();
  uintptr_t mine = me;
  lock_turn_.compare_exchange_strong(mine, 0);
  lock_turns_.fetch_add(1, std::memory_order_relaxed);
}

void Fabric::YieldLock(std::unique_lock<std::mutex>& lock) {
  NoteLockLeft();
  lock.unlock();
  std::this_thread::yield();
  TakeLock();
  lock = std::unique_lock<std::mutex>(mu_, std::adopt_lock);
}

}  // namespace verbsim::sim
