// weft — waiter lists for the blocking structures built on pause/resume
// (ivar, mvar, channel, select): a record per blocking call, a node per
// structure it waits in, and `park`, which pauses the caller with the
// structure's lock handed over to the scheduler (released only once the
// task is fully paused, as Go's gopark does), so that checking the state,
// queueing and pausing are one atomic step for wakers.
#pragma once

#include <cstddef>
#include <atomic>
#include <exception>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/pause.hpp"

namespace weft::detail {

// How a wait ended (written by the claimer before it wakes the waiter).
// cancelled: the waiter's std::stop_token was stopped (park with a token).
enum class wait_outcome : int { ok, closed, destroyed, cancelled };

// One blocking call. Lives on the waiter's stack. A select's cases share it.
struct wait_record {
  paused_task task;                      // set (under the lock) when the waiter pauses
  int fired = -1;                        // the case that completed it
  wait_outcome outcome = wait_outcome::ok;
  // Set under the structure's lock(s) by whoever claims `task` through a node
  // (wait_list::claim_front) or, in park with a token, by the timed-out
  // waiter's withdrawal: once set, the task may be gone from its pause (the
  // handle dangles), so a stop callback must not claim() it any more.
  bool claimed = false;
};

// The record's place in one structure's list. `slot` is the structure's
// business: where a value goes (a receiver) or comes from (a sender).
struct wait_node {
  wait_record* rec = nullptr;
  void* slot = nullptr;
  int case_index = 0;
  wait_node* prev = nullptr;  // guarded by the structure's lock
  wait_node* next = nullptr;  // guarded by the structure's lock
  bool linked = false;        // guarded by the structure's lock
};

// An intrusive FIFO of nodes. Every member is used under the owning
// structure's lock.
class wait_list {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  std::size_t size() const noexcept { return size_; }
  wait_node* front() const noexcept { return head_; }

  void push_back(wait_node* n) noexcept {
    n->prev = tail_;
    n->next = nullptr;
    if (tail_) tail_->next = n; else head_ = n;
    tail_ = n;
    n->linked = true;
    ++size_;
  }
  void unlink(wait_node* n) noexcept {
    if (!n->linked) return;
    if (n->prev) n->prev->next = n->next; else head_ = n->next;
    if (n->next) n->next->prev = n->prev; else tail_ = n->prev;
    n->prev = n->next = nullptr;
    n->linked = false;
    --size_;
  }
  // Unlinks nodes from the front until one whose waiter it can claim, and
  // returns that one (unlinked), or nullptr. A node whose claim fails
  // belongs to a waiter that timed out or was completed through another
  // case of its select: it is dropped (that waiter will not look for it).
  wait_node* claim_front() noexcept {
    while (wait_node* n = head_) {
      unlink(n);
      if (n->rec->task.claim()) {
        n->rec->claimed = true;  // under the lock: see wait_record::claimed
        return n;
      }
    }
    return nullptr;
  }

 private:
  wait_node* head_ = nullptr;
  wait_node* tail_ = nullptr;
  std::size_t size_ = 0;  // linked nodes
};

// A claimed waiter: set how its wait ended, then wake it (outside the lock
// is fine: it cannot run before wake()).
inline void finish_wait(wait_node* n, wait_outcome outcome) noexcept {
  n->rec->fired = n->case_index;
  n->rec->outcome = outcome;
  n->rec->task.wake();
}

// Called with the structure's lock(s) held and the caller's node(s) queued.
// Pauses the caller until a waker claims `rec`, or until `deadline` (max():
// none). The lock(s) are released by `unlock()` once the task is fully
// paused (or at once on a plain thread). On timeout, `withdraw_locked()` is
// called with the lock(s) held again, to unlink the node(s). Returns true if
// a waker completed the wait, false on timeout. The lock(s) are not held on
// return. lock()/unlock() take and release every lock involved.
// Out of line so that the pause machinery's frame stays out of the frames of
// the structures' (inlined) operations and of their callers.
template <class Lock, class Unlock, class WithdrawLocked>
[[gnu::noinline]] bool park(wait_record& rec, steady_time deadline, Lock&& lock, Unlock&& unlock,
          WithdrawLocked&& withdraw_locked) {
  struct ctx_t {
    wait_record* rec;
    std::remove_reference_t<Unlock>* unlock;
    bool published;
  } ctx{&rec, &unlock, false};
  auto publish = [&ctx](paused_task h) noexcept {
    ctx.rec->task = h;  // under the lock: wakers see the node only with its task
    ctx.published = true;
    (*ctx.unlock)();
    return true;
  };
  auto withdraw = [&](paused_task) noexcept {
    lock();
    withdraw_locked();
    unlock();
  };
  try {
    const bool woken = deadline == steady_time::max()
                           ? (this_task::pause(publish), true)
                           : this_task::pause_until(deadline, publish, withdraw);
    if (!ctx.published) {  // the deadline had passed: nothing was published
      withdraw_locked();
      unlock();
      return false;
    }
    return woken;
  } catch (...) {
    // Starting to wait failed (no stack, no timer thread) before publish.
    if (!ctx.published) {
      withdraw_locked();
      unlock();
    }
    throw;
  }
}

// park with a std::stop_token (docs/api.md "Cancellation"): as above, and a
// stop requested before a waker claims `rec` ends the wait too — park then
// returns true with rec.outcome == wait_outcome::cancelled (rec.fired -1),
// the node(s) withdrawn. A token that can never be stopped costs one check.
// The stop callback is one more waker: it takes the lock(s), and if the
// waiter is published and rec.task.claim() succeeds it withdraws the node(s)
// and wakes the task; if the waiter is not published yet it leaves a flag
// that publish (under the same lock) checks, and the task does not pause.
// The callback is destroyed before park returns (so before the record and
// node(s) go away), without holding the lock(s).
template <class Lock, class Unlock, class WithdrawLocked>
[[gnu::noinline]] bool park(wait_record& rec, steady_time deadline, Lock&& lock, Unlock&& unlock,
                            WithdrawLocked&& withdraw_locked, const std::stop_token& stop) {
  if (!stop.stop_possible()) return park(rec, deadline, lock, unlock, withdraw_locked);
  auto cancelled_now = [&] {
    withdraw_locked();
    unlock();
    rec.fired = -1;
    rec.outcome = wait_outcome::cancelled;
    return true;
  };
  if (stop.stop_requested()) return cancelled_now();

  struct ctx_t {
    wait_record* rec;
    std::remove_reference_t<Lock>* lock;
    std::remove_reference_t<Unlock>* unlock;
    std::remove_reference_t<WithdrawLocked>* withdraw_locked;
    bool published = false;     // guarded by the structure's lock(s)
    bool stop_pending = false;  // guarded by the structure's lock(s): stopped before publish
    // Who saw the stop while the callback was being registered (the caller
    // holds the lock(s) then, so the callback must not take them): 0 while
    // registering, 1 once armed, 2 if a stop came first.
    std::atomic<int> phase{0};
  } ctx{&rec, &lock, &unlock, &withdraw_locked};

  struct on_stop {
    ctx_t* c;
    void operator()() const noexcept {
      int expected = 0;
      // acq_rel: exactly one of this CAS and the registering caller's
      // 0 -> 1 CAS succeeds; the loser sees the winner's side.
      if (c->phase.compare_exchange_strong(expected, 2, std::memory_order_acq_rel)) return;
      (*c->lock)();
      if (c->published) {
        // Not if a waker (or the deadline) already took the record: the task
        // may then have left its pause, and the handle would dangle.
        if (!c->rec->claimed && c->rec->task.claim()) {
          c->rec->claimed = true;
          (*c->withdraw_locked)();
          c->rec->fired = -1;
          c->rec->outcome = wait_outcome::cancelled;
          c->rec->task.wake();  // the task cannot leave park before this callback returns
        }
      } else {
        c->stop_pending = true;
      }
      (*c->unlock)();
    }
  };

  std::stop_callback<on_stop> cb(stop, on_stop{&ctx});
  int expected = 0;
  // acq_rel: see on_stop.
  if (!ctx.phase.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return cancelled_now();

  auto publish = [&ctx](paused_task h) noexcept {
    if (ctx.stop_pending) return false;  // under the lock: a stop came first
    ctx.rec->task = h;  // under the lock: wakers see the node only with its task
    ctx.published = true;
    (*ctx.unlock)();
    return true;
  };
  auto withdraw = [&](paused_task) noexcept {
    lock();
    rec.claimed = true;  // the deadline won: the stop callback must leave the handle alone
    withdraw_locked();
    unlock();
  };
  try {
    const bool woken = deadline == steady_time::max()
                           ? (this_task::pause(publish), true)
                           : this_task::pause_until(deadline, publish, withdraw);
    if (!ctx.published) {  // a stop came first, or the deadline had passed
      if (ctx.stop_pending) return cancelled_now();
      withdraw_locked();
      unlock();
      return false;
    }
    return woken;
  } catch (...) {
    // Starting to wait failed (no stack, no timer thread) before publish.
    if (!ctx.published) {
      withdraw_locked();
      unlock();
    }
    throw;
  }
}

}  // namespace weft::detail
