// weft — a one-shot event with a list of waiters: the single thing every
// blocking point in weft waits on (join of stolen children, future, ivar,
// timers). Waiting is implemented once, in src/suspension.cpp, for both callers
// inside the runtime (the task's fiber is suspended, ProWS) and plain threads
// (a condition variable).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "weft/detail/thread_annotations.hpp"

namespace weft::detail {

// A tiny test-and-test-and-set lock for critical sections of a few
// instructions (list splicing). It yields after a few spins, so a preempted
// holder never makes a waiter burn its quantum.
class WEFT_CAPABILITY("spin_lock") spin_lock {
 public:
  void lock() noexcept WEFT_ACQUIRE() {
    for (unsigned spins = 0;; ++spins) {
      // acquire: pairs with unlock()'s release; the protected data is visible.
      if (!held_.exchange(true, std::memory_order_acquire)) return;
      while (held_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept WEFT_RELEASE() {
    // release: publishes the writes made in the critical section.
    held_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> held_{false};
};

// A waiter sits in a completion's list while its owner is blocked. It lives on
// the blocked task's (suspended) stack or the blocked thread's stack.
struct waiter {
  enum state_t : std::uint32_t { waiting = 0, signalled = 1, timed_out = 2 };
  // Decides, exactly once, who wakes the owner: the completer (signalled) or
  // the timer (timed_out). acq_rel CAS on both sides.
  std::atomic<std::uint32_t> state{waiting};
  // Set (release) by a completer that took this waiter out of the list but lost
  // the race to the timer; the timed-out owner waits for it (acquire) before
  // its stack frame — and this waiter — goes away.
  std::atomic<bool> completer_done{false};
  // The completion's epoch when this waiter was listed (guarded by the
  // completion's lock): it is still listed iff the epoch has not moved since.
  // (epoch, next and prev are guarded by the lock of the completion the
  // waiter is listed in, which a member of waiter cannot name: the analysis
  // checks them through completion's guarded members, whose accessors take
  // the lock, not here.)
  std::uint16_t epoch = 0;
  waiter* next = nullptr;  // guarded by the completion's lock
  waiter* prev = nullptr;  // guarded by the completion's lock
  // Wakes the owner; called at most once, by whoever won `state`.
  void (*wake)(waiter*) noexcept = nullptr;
};

class completion {
 public:
  completion() = default;
  completion(const completion&) = delete;
  completion& operator=(const completion&) = delete;

  bool is_set() const noexcept {
    // acquire: pairs with set()'s acq_rel RMW; the result written before set()
    // is visible to whoever sees the flag.
    return (bits_.load(std::memory_order_acquire) & ready_bit) != 0;
  }

  // Marks the event complete and wakes every waiter. Returns false if it was
  // already set (the caller decides whether that is an error).
  // Lifetime: after the last waiter is woken this object is not touched again,
  // so a woken waiter may destroy it at once.
  bool set() noexcept {
    // acq_rel: release publishes the result; acquire orders the waiter list
    // reads below after a waiter's registration (which set has_waiters_bit).
    std::uint32_t old = bits_.fetch_or(ready_bit, std::memory_order_acq_rel);
    if (old & ready_bit) return false;
    if (old & has_waiters_bit) wake_all();
    return true;
  }

  // Re-arms a completion nobody is waiting on (task_group reuse after sync).
  void reset() noexcept { bits_.store(0, std::memory_order_relaxed); }

  // Registration protocol, used by src/suspension.cpp. Returns false (and does
  // not register) when the event is already set.
  bool add_waiter(waiter* w) noexcept;
  // Removes a waiter that timed out, in O(1). Returns true if it was still
  // listed; false means a completer took it and will call wake or set
  // completer_done.
  bool remove_waiter(waiter* w) noexcept;

 private:
  void wake_all() noexcept;

  static constexpr std::uint32_t ready_bit = 1;
  static constexpr std::uint32_t has_waiters_bit = 2;
  std::atomic<std::uint32_t> bits_{0};
  spin_lock lock_;
  // Guarded by lock_: bumped each time wake_all takes the list, so that a
  // waiter knows in O(1) whether it is still listed (remove_waiter). 16 bits
  // are enough: a waiter compares it with the value it saw at most one set()
  // earlier (the completion is set once between resets).
  std::uint16_t epoch_ WEFT_GUARDED_BY(lock_) = 0;
  waiter* head_ WEFT_GUARDED_BY(lock_) = nullptr;
};

inline bool completion::add_waiter(waiter* w) noexcept {
  lock_.lock();
  // acquire: if we see ready_bit we return without waiting, and must then
  // see the result written before set().
  std::uint32_t b = bits_.load(std::memory_order_acquire);
  for (;;) {
    if (b & ready_bit) {
      lock_.unlock();
      return false;
    }
    // acq_rel: either this CAS precedes set()'s fetch_or in the RMW order (set
    // then sees has_waiters and takes the lock, which we hold until w is
    // listed), or it fails and we observe ready.
    if (bits_.compare_exchange_weak(b, b | has_waiters_bit,
                                    std::memory_order_acq_rel,
                                    std::memory_order_acquire))
      break;
  }
  w->epoch = epoch_;
  w->prev = nullptr;
  w->next = head_;
  if (head_) head_->prev = w;
  head_ = w;
  lock_.unlock();
  return true;
}

inline bool completion::remove_waiter(waiter* w) noexcept {
  lock_.lock();
  // Listed waiters all carry the current epoch; wake_all bumps it when it
  // takes the whole list. (A scan of the list was quadratic when many timed
  // waiters on one event timed out: 40,000 took 131 s.)
  const bool listed = w->epoch == epoch_;
  if (listed) {
    if (w->prev) w->prev->next = w->next; else head_ = w->next;
    if (w->next) w->next->prev = w->prev;
  }
  lock_.unlock();
  return listed;
}

inline void completion::wake_all() noexcept {
  lock_.lock();
  waiter* list = head_;
  head_ = nullptr;
  ++epoch_;  // every waiter taken here is no longer listed
  lock_.unlock();
  // From here on `this` is not touched: a woken waiter may free it.
  while (list) {
    waiter* w = list;
    list = w->next;  // read before waking: the waiter dies once woken
    std::uint32_t expected = waiter::waiting;
    // acq_rel: wins or loses against the timer's CAS; release publishes the
    // result to the woken owner.
    if (w->state.compare_exchange_strong(expected, waiter::signalled,
                                         std::memory_order_acq_rel)) {
      w->wake(w);  // last touch of w
    } else {
      // The timer won; its owner waits for this store before leaving.
      w->completer_done.store(true, std::memory_order_release);
    }
  }
}

}  // namespace weft::detail
