// weft — the common machinery of the task-aware locks (weft/mutex.hpp,
// condition_variable.hpp, semaphore.hpp): the caller's identity, the
// priority-inversion report, and `wait_in`, which queues the caller in a
// structure's FIFO and parks it (detail/wait_list.hpp) with an optional
// deadline and an optional std::stop_token.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <system_error>
#include <type_traits>

#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/thread_annotations.hpp"
#include "weft/detail/wait_list.hpp"

namespace weft {

// A priority inversion on a lock: a task of level `waiter_level` is about to
// wait for `lock` (a weft::mutex, timed_mutex or shared_mutex held
// exclusively), which a task of the less urgent level `holder_level` holds.
struct lock_inversion {
  unsigned waiter_level;
  unsigned holder_level;
  const void* lock;
  const char* what;  // "weft::mutex", ...
};
using lock_inversion_handler = void (*)(const lock_inversion&);

// Installs the handler called (in the waiting task, before it waits) for each
// inversion detected; returns the previous one (nullptr: the default, which
// prints one line to stderr the first time). A handler may throw (for example
// weft::priority_inversion): the lock operation then throws it without
// having waited or queued. nullptr restores the default.
lock_inversion_handler set_lock_inversion_handler(lock_inversion_handler h) noexcept;
// Inversions detected on locks since the process started.
std::uint64_t lock_inversions() noexcept;

namespace detail {

// Who is calling: the running task's fiber (kept across suspensions, so it
// names the task wherever it resumes), or the plain thread; and the caller's
// priority level, -1 on a plain thread or in priority-oblivious mode.
// Note: a child task that runs inline (not stolen) runs on its parent's fiber,
// so it has its parent's identity (docs/sync.md).
struct task_identity {
  const void* id;
  int level;
};
task_identity current_task() noexcept;  // src/sync.cpp
void report_lock_inversion(const lock_inversion& e);

// Reports an inversion if a caller of level `waiter` would wait for a holder
// of level `holder` (-1: unknown / none).
inline void check_lock_inversion(int waiter, int holder, const void* lock, const char* what) {
  if (waiter >= 0 && holder > waiter)
    report_lock_inversion({static_cast<unsigned>(waiter), static_cast<unsigned>(holder), lock, what});
}

[[noreturn]] inline void throw_sync_error(std::errc e, const char* what) {
  throw std::system_error(std::make_error_code(e), what);
}

// How a wait_in ended.
enum class wait_result : int { done, timed_out, cancelled };

// Queues the caller (lock `lk` NOT held) in `list` and parks it until a waker
// claims its node and finish_wait()s it, the deadline passes (min(): do not
// wait; max(): none), or `token` (may be null) is stopped.
//   try_locked(): called with lk held before queueing; true means the
//     operation completed without waiting (the result is then `done`).
//   withdrawn_locked(): called with lk held after the node was taken out of
//     the list because of a timeout or a stop (to fix the structure's state).
// `slot`/`kind` are stored in the node for the waker. Returns with lk
// released. A waker completes the wait with finish_wait(n, ok); the stop
// callback completes it with wait_outcome::closed ("cancelled").
//   before_park(): called with lk held once the node is queued, just before
//     parking (condition variables release the user's lock there); false
//     means "do not wait" (the node is unlinked, the result is `done`).
struct always_park {
  bool operator()() const noexcept { return true; }
};

// The stop callback of a wait_in: one more waker (docs: the cancellation
// convention). Under lk: a queued node is published (park queues and
// publishes under lk), so it claims, unlinks and wakes it as cancelled; a
// node not queued yet gets the `early` flag, which wait_in checks under lk
// before queueing.
template <class WithdrawnLocked>
struct wait_canceller {
  spin_lock* lk;
  wait_list* list;
  wait_node* n;
  bool* early;
  WithdrawnLocked* withdrawn;
  void operator()() noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk->lock();
    if (n->linked) {
      if (n->rec->task.claim()) {
        list->unlink(n);
        (*withdrawn)();
        lk->unlock();
        finish_wait(n, wait_outcome::closed);
        return;
      }
    } else {
      *early = true;
    }
    lk->unlock();
  }
};

// wait_in's body once the stop callback (if any) is registered.
template <class TryLocked, class WithdrawnLocked, class BeforePark>
wait_result wait_queued(spin_lock& lk, wait_list& list, wait_node& n, wait_record& rec, const bool& early,
                        steady_time deadline, TryLocked& try_locked, WithdrawnLocked& withdrawn_locked,
                        BeforePark& before_park) WEFT_NO_THREAD_SAFETY_ANALYSIS {
  lk.lock();
  if (try_locked()) {
    lk.unlock();
    return wait_result::done;
  }
  if (early) {
    lk.unlock();
    return wait_result::cancelled;
  }
  if (deadline == steady_time::min()) {
    lk.unlock();
    return wait_result::timed_out;
  }
  list.push_back(&n);
  if (!before_park()) {
    list.unlink(&n);
    lk.unlock();
    return wait_result::done;
  }
  const bool woken = park(
      rec, deadline, [&lk]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lk.lock(); },
      [&lk]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lk.unlock(); },
      [&]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
        if (n.linked) {
          list.unlink(&n);
          withdrawn_locked();
        }
      });
  if (!woken) return wait_result::timed_out;
  return rec.outcome == wait_outcome::closed ? wait_result::cancelled : wait_result::done;
}

template <class TryLocked, class WithdrawnLocked, class BeforePark = always_park>
wait_result wait_in(spin_lock& lk, wait_list& list, void* slot, int kind, steady_time deadline,
                    const std::stop_token* token, TryLocked&& try_locked,
                    WithdrawnLocked&& withdrawn_locked,
                    BeforePark&& before_park = BeforePark{}) WEFT_NO_THREAD_SAFETY_ANALYSIS {
  wait_record rec;
  wait_node n;
  n.rec = &rec;
  n.slot = slot;
  n.case_index = kind;
  bool early = false;  // set by the stop callback (under lk) before n is queued
  if (token && token->stop_possible()) {
    if (token->stop_requested()) {
      // A stopped token: only an operation that needs no wait succeeds.
      lk.lock();
      const bool ok = try_locked();
      lk.unlock();
      return ok ? wait_result::done : wait_result::cancelled;
    }
    using wl = std::remove_reference_t<WithdrawnLocked>;
    // Registered before lk is taken: a callback that runs at once takes lk.
    // Destroyed (in this frame) after the wait: its destructor waits for a
    // callback running on the stopping thread, which touches n and rec.
    std::stop_callback<wait_canceller<wl>> cb(*token, wait_canceller<wl>{&lk, &list, &n, &early, &withdrawn_locked});
    return wait_queued(lk, list, n, rec, early, deadline, try_locked, withdrawn_locked, before_park);
  }
  return wait_queued(lk, list, n, rec, early, deadline, try_locked, withdrawn_locked, before_park);
}

}  // namespace detail
}  // namespace weft
