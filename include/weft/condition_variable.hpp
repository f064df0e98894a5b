// weft — task-aware condition variables: weft::condition_variable (with
// std::unique_lock<weft::mutex>) and weft::condition_variable_any (with any
// lock: std::unique_lock<weft::timed_mutex>, std::shared_lock<weft::
// shared_mutex>, even std::unique_lock<std::mutex> — though a std::mutex
// blocks the worker, see docs/sync.md). The std interfaces: wait, wait_for,
// wait_until (with and without a predicate), notify_one, notify_all, and for
// condition_variable_any the std::stop_token overloads of C++20.
//
//   weft::mutex m; weft::condition_variable cv; bool ready = false;
//   weft::async([&] { { std::scoped_lock l(m); ready = true; } cv.notify_one(); });
//   std::unique_lock l(m);
//   cv.wait(l, [&] { return ready; });
//
// Waiting pauses a task (or blocks a plain thread): the caller is queued and
// then the lock released, as one step for notifiers. Order: FIFO —
// notify_one wakes the longest waiter; the woken waiter then re-locks the
// mutex (FIFO behind the mutex's own waiters). Spurious wake-ups do not
// happen (a woken waiter was notified, timed out or stopped), but as with
// std, use the predicate forms.
//
// Cancellation (condition_variable_any, exactly as std): wait(lock, token,
// pred) returns pred() once the token is stopped (false if still unmet);
// wait_until/wait_for(lock, token, t, pred) likewise. condition_variable
// also has wait(lock, token, pred) for convenience, with the same meaning.
// Errors: waiting with a lock that the caller does not own throws
// std::system_error(std::errc::operation_not_permitted); destroying a
// condition variable with waiters prints a message and std::terminate()s.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

#include "weft/detail/sync_core.hpp"
#include "weft/mutex.hpp"

namespace weft {

class condition_variable_any {
 public:
  condition_variable_any() = default;
  condition_variable_any(const condition_variable_any&) = delete;
  condition_variable_any& operator=(const condition_variable_any&) = delete;
  ~condition_variable_any() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    const bool busy = !waiters_.empty();
    lk_.unlock();
    if (busy) detail::sync_fatal("weft::condition_variable: destroyed with waiters (std::terminate)");
  }

  void notify_one() noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    detail::wait_node* n = waiters_.claim_front();
    lk_.unlock();
    if (n) detail::finish_wait(n, detail::wait_outcome::ok);
  }
  void notify_all() noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    detail::wait_node* chain = nullptr;
    detail::wait_node** tail = &chain;
    while (detail::wait_node* n = waiters_.claim_front()) {
      *tail = n;
      tail = &n->next;  // unlinked: next is ours
      *tail = nullptr;
    }
    lk_.unlock();
    while (chain) {
      detail::wait_node* next = chain->next;  // before the waiter may go away
      detail::finish_wait(chain, detail::wait_outcome::ok);
      chain = next;
    }
  }

  template <class Lock>
  void wait(Lock& lock) {
    wait_impl(lock, detail::steady_time::max(), nullptr);
  }
  template <class Lock, class Pred>
  void wait(Lock& lock, Pred pred) {
    while (!pred()) wait(lock);
  }
  template <class Lock, class Clock, class Duration>
  std::cv_status wait_until(Lock& lock, const std::chrono::time_point<Clock, Duration>& t) {
    return wait_impl(lock, detail::to_steady_deadline(t), nullptr) == detail::wait_result::timed_out
               ? std::cv_status::timeout
               : std::cv_status::no_timeout;
  }
  template <class Lock, class Clock, class Duration, class Pred>
  bool wait_until(Lock& lock, const std::chrono::time_point<Clock, Duration>& t, Pred pred) {
    const detail::steady_time d = detail::to_steady_deadline(t);
    while (!pred())
      if (wait_impl(lock, d, nullptr) == detail::wait_result::timed_out) return pred();
    return true;
  }
  template <class Lock, class Rep, class Period>
  std::cv_status wait_for(Lock& lock, const std::chrono::duration<Rep, Period>& d) {
    return wait_until(lock, detail::deadline_after(d));
  }
  template <class Lock, class Rep, class Period, class Pred>
  bool wait_for(Lock& lock, const std::chrono::duration<Rep, Period>& d, Pred pred) {
    return wait_until(lock, detail::deadline_after(d), std::move(pred));
  }

  // --- std::stop_token (C++20 condition_variable_any) ---
  template <class Lock, class Pred>
  bool wait(Lock& lock, std::stop_token token, Pred pred) {
    while (!token.stop_requested()) {
      if (pred()) return true;
      wait_impl(lock, detail::steady_time::max(), &token);
    }
    return pred();
  }
  template <class Lock, class Clock, class Duration, class Pred>
  bool wait_until(Lock& lock, std::stop_token token, const std::chrono::time_point<Clock, Duration>& t,
                  Pred pred) {
    const detail::steady_time d = detail::to_steady_deadline(t);
    while (!token.stop_requested()) {
      if (pred()) return true;
      if (wait_impl(lock, d, &token) == detail::wait_result::timed_out) return pred();
    }
    return pred();
  }
  template <class Lock, class Rep, class Period, class Pred>
  bool wait_for(Lock& lock, std::stop_token token, const std::chrono::duration<Rep, Period>& d, Pred pred) {
    return wait_until(lock, std::move(token), detail::deadline_after(d), std::move(pred));
  }

 private:
  template <class Lock>
  static void check_owned(Lock& lock) {
    if constexpr (requires { lock.owns_lock(); }) {
      if (!lock.owns_lock())
        detail::throw_sync_error(std::errc::operation_not_permitted,
                                 "weft::condition_variable: wait() with a lock that is not held");
    }
  }

  // Queues the caller, releases `lock` (as one step for notifiers: the
  // caller is queued before the lock is released), pauses, re-locks.
  template <class Lock>
  detail::wait_result wait_impl(Lock& lock, detail::steady_time deadline, const std::stop_token* token) {
    check_owned(lock);
    bool unlocked = false;
    std::exception_ptr unlock_error;
    detail::wait_result r = detail::wait_in(
        lk_, waiters_, nullptr, 0, deadline, token,
        []() noexcept { return false; },  // a condition variable always waits
        []() noexcept {}, [&]() noexcept {
          // lk_ held, node queued, not yet paused: release the user's lock
          // now; a notifier needs lk_ to see us, so none is lost.
          try {
            lock.unlock();
            unlocked = true;
          } catch (...) {
            unlock_error = std::current_exception();
          }
          return unlock_error == nullptr;
        });
    if (unlock_error) std::rethrow_exception(unlock_error);
    // Re-lock whatever happened (std: the lock is held on return).
    if (unlocked) lock.lock();
    return r;
  }

  detail::spin_lock lk_;
  detail::wait_list waiters_ WEFT_GUARDED_BY(lk_);
};

// The condition variable for std::unique_lock<weft::mutex> (std's
// interface); the same machinery as condition_variable_any.
class condition_variable {
 public:
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }
  void wait(std::unique_lock<mutex>& lock) { cv_.wait(lock); }
  template <class Pred>
  void wait(std::unique_lock<mutex>& lock, Pred pred) {
    cv_.wait(lock, std::move(pred));
  }
  template <class Pred>
  bool wait(std::unique_lock<mutex>& lock, std::stop_token token, Pred pred) {
    return cv_.wait(lock, std::move(token), std::move(pred));
  }
  template <class Clock, class Duration>
  std::cv_status wait_until(std::unique_lock<mutex>& lock, const std::chrono::time_point<Clock, Duration>& t) {
    return cv_.wait_until(lock, t);
  }
  template <class Clock, class Duration, class Pred>
  bool wait_until(std::unique_lock<mutex>& lock, const std::chrono::time_point<Clock, Duration>& t, Pred pred) {
    return cv_.wait_until(lock, t, std::move(pred));
  }
  template <class Rep, class Period>
  std::cv_status wait_for(std::unique_lock<mutex>& lock, const std::chrono::duration<Rep, Period>& d) {
    return cv_.wait_for(lock, d);
  }
  template <class Rep, class Period, class Pred>
  bool wait_for(std::unique_lock<mutex>& lock, const std::chrono::duration<Rep, Period>& d, Pred pred) {
    return cv_.wait_for(lock, d, std::move(pred));
  }

 private:
  condition_variable_any cv_;
};

}  // namespace weft
