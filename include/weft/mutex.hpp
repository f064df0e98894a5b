// weft — task-aware mutexes: weft::mutex, weft::timed_mutex and
// weft::shared_mutex, with the std interfaces (std::lock_guard,
// std::unique_lock, std::scoped_lock, std::lock, std::shared_lock work).
// Waiting pauses a task (its worker runs other work) or blocks a plain
// thread; tasks and plain threads may share one mutex.
//
//   weft::mutex m;
//   int balance = 0;                       // guarded by m
//   weft::async([&] { std::scoped_lock l(m); ++balance; });
//
// Fairness: FIFO hand-off. lock() takes a free mutex with one CAS; a mutex
// that is held queues the caller at the back of a FIFO, and unlock() passes
// ownership directly to the first waiter (the mutex never becomes free in
// between, so no newcomer can barge in). A waiter that times out or is
// stopped leaves the queue. shared_mutex: readers and writers queue in one
// FIFO; a reader arriving while anyone waits queues too (writers do not
// starve), and a release grants the front writer alone or the run of readers
// at the front together.
//
// Ownership belongs to a task, not to a thread: a task may lock on one worker
// and unlock on another after a suspension (that is what std::mutex cannot
// do). Caveat: a child task that runs inline on its parent's stack (not
// stolen) has its parent's identity; do not hold a weft::mutex across a
// spawn/sync whose children take the same mutex (docs/sync.md).
//
// Cancellation: lock(std::stop_token) (and lock_shared(token)) waits until
// the mutex is acquired or the token is stopped; then it throws
// std::system_error(std::errc::operation_canceled, "weft: mutex lock
// cancelled") without the mutex. try_lock_for/until(d, token) return false.
// weft::lock(token, m...) locks several, deadlock-free, cancellable.
//
// Errors (weft always checks, release builds included):
// * unlock() by a task or thread that does not hold the mutex, or of a mutex
//   that is not locked: std::system_error(std::errc::operation_not_permitted);
//   unlock_shared() without a shared holder: the same. (std: undefined.)
// * lock() (untimed, without a token) by the task that already holds it (or
//   by a child running inline on its stack), which would deadlock:
//   std::system_error(
//   std::errc::resource_deadlock_would_occur), as std::mutex may.
// * destroying a mutex that is held or has waiters: a message on stderr and
//   std::terminate (std: undefined; a waiter would otherwise wait on freed
//   memory).
// Priorities: a task that waits for a mutex held (exclusively) by a task of a
// less urgent level is a priority inversion: it is reported through
// weft::set_lock_inversion_handler (detail/sync_core.hpp) and counted by
// weft::lock_inversions(); weft does not boost the holder (docs/priorities.md).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stop_token>
#include <tuple>

#include "weft/detail/assert.hpp"
#include "weft/detail/sync_core.hpp"

namespace weft {

namespace detail {

[[noreturn]] inline void sync_fatal(const char* what) noexcept {
  std::fprintf(stderr, "%s\n", what);
  std::fflush(stderr);
  std::terminate();
}

// The exclusive lock shared by mutex and timed_mutex.
class mutex_base {
 public:
  mutex_base() = default;
  mutex_base(const mutex_base&) = delete;
  mutex_base& operator=(const mutex_base&) = delete;
  ~mutex_base() {
    // acquire: pairs with unlock()'s release; a state read here is final
    // unless the program is misusing the mutex anyway.
    if (state_.load(std::memory_order_acquire) != free_)
      sync_fatal("weft::mutex: destroyed while locked or with waiters (std::terminate)");
  }

  void lock() { lock_impl(steady_time::max(), nullptr); }
  void lock(std::stop_token token) {
    if (!lock_impl(steady_time::max(), &token))
      throw_sync_error(std::errc::operation_canceled, "weft: mutex lock cancelled");
  }
  bool try_lock() noexcept {
    std::uint32_t expected = free_;
    // acquire: the critical section of the previous holder (its release in
    // unlock) is visible.
    if (!state_.compare_exchange_strong(expected, locked_, std::memory_order_acquire,
                                        std::memory_order_relaxed))
      return false;
    became_owner(current_task());
    return true;
  }
  void unlock() {
    const task_identity me = current_task();
    // relaxed: owner_ is written by the holder after it acquired; a caller
    // that is the holder reads its own write, any other caller sees another
    // value (or a stale one that is not its own identity either).
    const void* owner = owner_.load(std::memory_order_relaxed);
    if (owner == nullptr)
      throw_sync_error(std::errc::operation_not_permitted, "weft::mutex: unlock() of a mutex that is not locked");
    if (owner != me.id)
      throw_sync_error(std::errc::operation_not_permitted,
                       "weft::mutex: unlock() by a task or thread that does not hold it");
    release();
  }

  // Whether the calling task (or thread) holds the mutex (diagnostics, tests).
  bool held_by_caller() const noexcept {
    return owner_.load(std::memory_order_relaxed) == current_task().id;
  }
  // How many tasks or threads wait for it now: a snapshot (diagnostics,
  // tests), as ivar/mvar/channel waiters().
  std::size_t waiters() const noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    const std::size_t n = waiters_.size();
    lk_.unlock();
    return n;
  }

 protected:
  // Unlock without the ownership check (condition_variable, after checking).
  void release() noexcept {
    owner_.store(nullptr, std::memory_order_relaxed);
    holder_level_.store(-1, std::memory_order_relaxed);
    std::uint32_t expected = locked_;
    // release: publishes the critical section to the next acquirer.
    if (state_.compare_exchange_strong(expected, free_, std::memory_order_release,
                                       std::memory_order_relaxed))
      return;
    hand_off();
  }

  bool lock_impl(steady_time deadline, const std::stop_token* token) {
    const task_identity me = current_task();
    std::uint32_t expected = free_;
    // acquire: see try_lock.
    if (state_.compare_exchange_strong(expected, locked_, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
      became_owner(me);
      return true;
    }
    // Only an untimed, unstoppable wait on oneself is a certain deadlock.
    if (deadline == steady_time::max() && token == nullptr && owner_.load(std::memory_order_relaxed) == me.id)
      throw_sync_error(std::errc::resource_deadlock_would_occur,
                       "weft::mutex: lock() by the task that holds it (or a child on its stack): deadlock");
    check_lock_inversion(me.level, holder_level_.load(std::memory_order_relaxed), this, "weft::mutex");
    wait_result r = wait_in(
        lk_, waiters_, nullptr, 0, deadline, token,
        [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
          // lk_ held: take a free mutex, or mark it contended so that the
          // holder's unlock takes the slow path and hands it off.
          std::uint32_t s = state_.load(std::memory_order_relaxed);
          for (;;) {
            if (s == free_) {
              // acquire: see try_lock.
              if (state_.compare_exchange_weak(s, locked_, std::memory_order_acquire,
                                               std::memory_order_relaxed))
                return true;
            } else if (s == contended_ ||
                       // relaxed: only lk_ holders change contended_, and
                       // the holder's fast unlock fails once it is set.
                       state_.compare_exchange_weak(s, contended_, std::memory_order_relaxed)) {
              return false;
            }
          }
        },
        [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
          // lk_ held, a waiter left: the holder may unlock on the fast path
          // again once nobody waits.
          std::uint32_t c = contended_;
          // relaxed: lk_ orders it with the other contended_ writers.
          if (waiters_.empty()) state_.compare_exchange_strong(c, locked_, std::memory_order_relaxed);
        });
    if (r != wait_result::done) return false;
    // Acquired (directly or by hand-off: the releaser's lk_ unlock and our
    // wake-up order its critical section before ours).
    became_owner(me);
    return true;
  }

 private:
  void became_owner(const task_identity& me) noexcept {
    owner_.store(me.id, std::memory_order_relaxed);
    holder_level_.store(me.level, std::memory_order_relaxed);
  }

  // state_ is contended_: pass ownership to the first waiter, or free the
  // mutex if every waiter left.
  void hand_off() noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    wait_node* n = waiters_.claim_front();
    if (n) {
      // Still locked: contended_ while others wait, else locked_.
      // release: the woken waiter is ordered after us by lk_ and the wake.
      state_.store(waiters_.empty() ? locked_ : contended_, std::memory_order_release);
    } else {
      // release: publishes the critical section to the next acquirer.
      state_.store(free_, std::memory_order_release);
    }
    lk_.unlock();
    if (n) finish_wait(n, wait_outcome::ok);
  }

  static constexpr std::uint32_t free_ = 0;
  static constexpr std::uint32_t locked_ = 1;     // held, nobody queued
  static constexpr std::uint32_t contended_ = 2;  // held, the queue may be non-empty
  // Invariant: waiters_ non-empty => state_ == contended_ (under lk_).
  std::atomic<std::uint32_t> state_{free_};
  std::atomic<const void*> owner_{nullptr};  // the holder's task identity
  std::atomic<int> holder_level_{-1};        // the holder's level (-1: none / unknown)
  mutable spin_lock lk_;  // mutable: waiters() takes it
  wait_list waiters_ WEFT_GUARDED_BY(lk_);
};

}  // namespace detail

// A mutex whose lock() pauses the calling task (or blocks a plain thread).
// Meets the std Lockable requirements (+ lock(std::stop_token)).
class mutex : public detail::mutex_base {
 public:
  using detail::mutex_base::mutex_base;
};

// weft::mutex plus try_lock_for/until (any clock); the optional token
// ends the wait early (the call returns false).
class timed_mutex : public detail::mutex_base {
 public:
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    return lock_impl(detail::deadline_after(d), nullptr);
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
    return lock_impl(detail::to_steady_deadline(t), nullptr);
  }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d, std::stop_token token) {
    return lock_impl(detail::deadline_after(d), &token);
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t, std::stop_token token) {
    return lock_impl(detail::to_steady_deadline(t), &token);
  }
};

// A readers-writer lock: lock()/unlock() exclusive, lock_shared()/
// unlock_shared() shared, plus the timed forms of std::shared_timed_mutex.
// See the top of the file for its FIFO order and errors.
class shared_mutex {
 public:
  shared_mutex() = default;
  shared_mutex(const shared_mutex&) = delete;
  shared_mutex& operator=(const shared_mutex&) = delete;
  ~shared_mutex() {
    lk_.lock();
    const bool busy = writer_ || readers_ != 0 || !waiters_.empty();
    lk_.unlock();
    if (busy) detail::sync_fatal("weft::shared_mutex: destroyed while locked or with waiters (std::terminate)");
  }

  // --- exclusive ---
  void lock() { acquire(false, detail::steady_time::max(), nullptr); }
  void lock(std::stop_token token) {
    if (!acquire(false, detail::steady_time::max(), &token))
      detail::throw_sync_error(std::errc::operation_canceled, "weft: shared_mutex lock cancelled");
  }
  bool try_lock() { return acquire(false, detail::steady_time::min(), nullptr); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
    return acquire(false, detail::deadline_after(d), nullptr);
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
    return acquire(false, detail::to_steady_deadline(t), nullptr);
  }
  void unlock() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    const void* me = detail::current_task().id;
    lk_.lock();
    if (!writer_ || owner_ != me) {
      const bool held = writer_;
      lk_.unlock();
      detail::throw_sync_error(std::errc::operation_not_permitted,
                               held ? "weft::shared_mutex: unlock() by a task or thread that does not hold it"
                                    : "weft::shared_mutex: unlock() of a mutex that is not locked exclusively");
    }
    writer_ = false;
    owner_ = nullptr;
    holder_level_ = -1;
    grant_and_unlock();
  }

  // --- shared ---
  void lock_shared() { acquire(true, detail::steady_time::max(), nullptr); }
  void lock_shared(std::stop_token token) {
    if (!acquire(true, detail::steady_time::max(), &token))
      detail::throw_sync_error(std::errc::operation_canceled, "weft: shared_mutex lock_shared cancelled");
  }
  bool try_lock_shared() { return acquire(true, detail::steady_time::min(), nullptr); }
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d) {
    return acquire(true, detail::deadline_after(d), nullptr);
  }
  template <class Clock, class Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& t) {
    return acquire(true, detail::to_steady_deadline(t), nullptr);
  }
  // How many wait now, shared and exclusive: a snapshot (diagnostics, tests).
  std::size_t waiters() const noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    const std::size_t n = waiters_.size();
    lk_.unlock();
    return n;
  }
  void unlock_shared() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    if (readers_ == 0) {
      lk_.unlock();
      detail::throw_sync_error(std::errc::operation_not_permitted,
                               "weft::shared_mutex: unlock_shared() without a shared holder");
    }
    --readers_;
    grant_and_unlock();
  }

 private:
  // A node's case_index: shared_kind, or the level (-1 or more) of a writer;
  // a writer's slot is its identity.
  static constexpr int shared_kind = -100;

  bool acquire(bool shared, detail::steady_time deadline, const std::stop_token* token)
      WEFT_NO_THREAD_SAFETY_ANALYSIS {
    const detail::task_identity me = detail::current_task();
    bool self_deadlock = false;
    int holder = -1;
    auto try_locked = [&]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
      // lk_ held. FIFO: nobody takes the lock past a queued waiter.
      if (!writer_ && waiters_.empty() && (shared || readers_ == 0)) {
        if (shared) {
          ++readers_;
        } else {
          writer_ = true;
          owner_ = me.id;
          holder_level_ = me.level;
        }
        return true;
      }
      // Only an untimed, unstoppable wait on oneself is a certain deadlock.
      if (writer_ && owner_ == me.id && deadline == detail::steady_time::max() && token == nullptr)
        self_deadlock = true;
      holder = writer_ ? holder_level_ : -1;
      return self_deadlock;  // do not queue: reported below
    };
    // A first look without queueing, for the deadlock and inversion checks.
    lk_.lock();
    const bool got = try_locked();
    lk_.unlock();
    if (self_deadlock)
      detail::throw_sync_error(std::errc::resource_deadlock_would_occur,
                               "weft::shared_mutex: lock by the task that holds it exclusively: deadlock");
    if (got) return true;
    detail::check_lock_inversion(me.level, holder, this, "weft::shared_mutex");
    detail::wait_result r = detail::wait_in(
        lk_, waiters_, const_cast<void*>(me.id), shared ? shared_kind : me.level, deadline, token,
        try_locked,
        [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
          // lk_ held; a waiter left the queue: the ones behind it may now
          // be grantable (e.g. readers behind a writer that timed out).
          // Woken under lk_: fine, a woken waiter does not take lk_ again.
          for (detail::wait_node* w = grant_locked(); w;) {
            detail::wait_node* next = w->next;  // before the waiter may go away
            detail::finish_wait(w, detail::wait_outcome::ok);
            w = next;
          }
        });
    if (r == detail::wait_result::done && self_deadlock)
      detail::throw_sync_error(std::errc::resource_deadlock_would_occur,
                               "weft::shared_mutex: lock by the task that holds it exclusively: deadlock");
    // A granted waiter was given the lock by the releaser (grant_locked).
    return r == detail::wait_result::done;
  }

  // lk_ held: grants the lock to the front of the queue as far as it can;
  // returns the claimed nodes in a chain (via wait_node::next) to be woken.
  detail::wait_node* grant_locked() WEFT_REQUIRES(lk_) {
    detail::wait_node* woken = nullptr;
    detail::wait_node** tail = &woken;
    while (!writer_) {
      detail::wait_node* f = waiters_.front();
      if (!f) break;
      const bool shared = f->case_index == shared_kind;
      if (!shared && readers_ != 0) break;
      waiters_.unlink(f);
      if (!f->rec->task.claim()) continue;  // timed out / cancelled: gone
      if (shared) {
        ++readers_;
      } else {
        writer_ = true;
        owner_ = f->slot;  // the waiter's identity
        holder_level_ = f->case_index;
      }
      *tail = f;
      tail = &f->next;  // unlinked: next is ours now
      *tail = nullptr;
    }
    return woken;
  }

  void grant_and_unlock() WEFT_RELEASE(lk_) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    detail::wait_node* w = grant_locked();
    lk_.unlock();
    while (w) {
      detail::wait_node* next = w->next;  // read before the waiter may go away
      detail::finish_wait(w, detail::wait_outcome::ok);
      w = next;
    }
  }

  mutable detail::spin_lock lk_;  // mutable: waiters() takes it
  bool writer_ WEFT_GUARDED_BY(lk_) = false;
  int readers_ WEFT_GUARDED_BY(lk_) = 0;
  const void* owner_ WEFT_GUARDED_BY(lk_) = nullptr;  // the exclusive holder
  int holder_level_ WEFT_GUARDED_BY(lk_) = -1;
  detail::wait_list waiters_ WEFT_GUARDED_BY(lk_);
};

// Locks every lockable (std::lock's deadlock avoidance: lock one, try the
// others, back off and wait on the one that failed), waiting with `token`:
// throws std::system_error(std::errc::operation_canceled) holding none of
// them if it is stopped. Each lockable must have lock(std::stop_token).
template <class L1, class L2, class... Ls>
void lock(std::stop_token token, L1& l1, L2& l2, Ls&... ls) {
  auto all = std::tie(l1, l2, ls...);
  constexpr std::size_t n = 2 + sizeof...(Ls);
  std::size_t first = 0;
  for (;;) {
    // Wait for `first`, then try the others in order.
    std::apply([&](auto&... m) {
      std::size_t i = 0;
      ((i++ == first ? m.lock(token) : void()), ...);
    }, all);
    std::size_t failed = n;
    std::apply([&](auto&... m) {
      std::size_t i = 0;
      auto step = [&](auto& mm) {
        std::size_t k = i++;
        if (k == first || failed != n) return;
        if (!mm.try_lock()) failed = k;
      };
      (step(m), ...);
    }, all);
    if (failed == n) return;
    // Release what we hold (first, and the ones before `failed` we took).
    std::apply([&](auto&... m) {
      std::size_t i = 0;
      auto undo = [&](auto& mm) {
        std::size_t k = i++;
        if (k == first || k < failed) mm.unlock();
      };
      (undo(m), ...);
    }, all);
    first = failed;
  }
}

}  // namespace weft
