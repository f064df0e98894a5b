// weft — an IVar: a write-once variable whose readers suspend until it is
// written (Concurrent Cilk §3.1). get() inside a task pauses the task (weft/pause.hpp;
// its worker runs other work); on any other thread it blocks the thread.
//
//   weft::ivar<int> v;
//   auto reader = weft::async([&] { return v.get(); });   // pauses while empty
//   v.put(5);                                             // wakes every reader
//   v.get_for(10ms);   // std::optional<int>: nullopt if still empty then
//
// Errors: a second put() throws weft::ivar_error (the value passed is
// discarded); destroying an ivar while tasks wait on it wakes them with
// weft::ivar_error ("destroyed") instead of leaving them waiting forever.
#pragma once

#include <atomic>
#include <chrono>
#include <new>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <utility>

#include "weft/detail/cancel.hpp"
#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/wait_list.hpp"

namespace weft {

// Thrown by a second put(), and by a get() whose ivar is destroyed while it
// waits.
class ivar_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
[[noreturn]] inline void throw_ivar_destroyed() {
  throw ivar_error("weft::ivar: the ivar was destroyed while this task waited on it");
}
}  // namespace detail

template <class T>
class ivar {
 public:
  ivar() = default;
  ivar(const ivar&) = delete;
  ivar& operator=(const ivar&) = delete;
  // Tasks still waiting are woken with ivar_error. Destroy an ivar only when
  // no put() or get() on it is still running (as for any object).
  ~ivar() {
    lock_.lock();
    while (detail::wait_node* n = waiters_.claim_front()) detail::finish_wait(n, detail::wait_outcome::destroyed);
    lock_.unlock();
    // acquire: the value was published by put's release store.
    if (full_.load(std::memory_order_acquire)) value().~T();
  }

  // Writes the value and wakes every reader. Throws ivar_error if the ivar was
  // already written (the value passed is then discarded). If constructing the
  // value throws, the exception propagates and the ivar stays empty.
  template <class... A>
  void put(A&&... a) {
    // acq_rel: exactly one writer wins; the winner alone constructs the value.
    if (claimed_.exchange(true, std::memory_order_acq_rel))
      throw ivar_error("weft::ivar::put: the ivar is already full");
    try {
      ::new (static_cast<void*>(&storage_)) T(std::forward<A>(a)...);
    } catch (...) {
      // A put whose value could not be built did not write: stay empty.
      claimed_.store(false, std::memory_order_release);
      throw;
    }
    // Claim every waiter under the lock (a timed get may be leaving), wake
    // them after it.
    detail::wait_node* claimed = nullptr;
    lock_.lock();
    // release: readers that see full_ see the value.
    full_.store(true, std::memory_order_release);
    while (detail::wait_node* n = waiters_.claim_front()) {
      n->next = claimed;  // reuse the link: n is unlinked and ours now
      claimed = n;
    }
    lock_.unlock();
    // From here on `this` is not touched: a woken reader may destroy the ivar.
    while (claimed) {
      detail::wait_node* n = claimed;
      claimed = n->next;  // read before waking: the node dies with its waiter
      detail::finish_wait(n, detail::wait_outcome::ok);
    }
  }

  // Returns the value, pausing the calling task (or blocking the thread)
  // while empty.
  const T& get() const {
    // acquire: pairs with put's release store.
    if (!full_.load(std::memory_order_acquire)) wait(detail::steady_time::max(), {});
    return value();
  }
  // As get(), ending early if `stop` is requested while the ivar is empty:
  // throws std::system_error(std::errc::operation_canceled) then (the ivar is
  // left as it was). A full ivar returns its value even if stop was requested.
  const T& get(const std::stop_token& stop) const {
    if (!full_.load(std::memory_order_acquire)) wait(detail::steady_time::max(), stop);
    return value();
  }

  // As get(), waiting at most until the deadline (any clock; max() means no
  // deadline): the value, or std::nullopt if the ivar is still empty then.
  template <class Clock, class Duration>
  std::optional<T> get_until(const std::chrono::time_point<Clock, Duration>& deadline) const {
    if (!full_.load(std::memory_order_acquire) && !wait(detail::to_steady_deadline(deadline), {}))
      return std::nullopt;
    return value();
  }
  template <class Rep, class Period>
  std::optional<T> get_for(const std::chrono::duration<Rep, Period>& d) const {
    return get_until(detail::deadline_after(d));
  }

  bool is_full() const noexcept { return full_.load(std::memory_order_acquire); }
  // Tasks and threads waiting in get() now: a snapshot, for diagnostics and
  // tests. Once it counts a waiter, that waiter is paused and no longer
  // touches the ivar until it is woken.
  std::size_t waiters() const {
    lock_.lock();
    std::size_t n = waiters_.size();
    lock_.unlock();
    return n;
  }

 private:
  // Pauses until full (true) or the deadline (false). Out of line: its
  // frame (a wait record and node) must not enlarge every caller's frame —
  // a deep recursion that calls get() would otherwise need a bigger stack.
  // A stopped `stop` throws operation_canceled.
  [[gnu::noinline]] bool wait(detail::steady_time deadline, const std::stop_token& stop) const {
    lock_.lock();
    // relaxed: under the lock, which put takes after its store.
    if (full_.load(std::memory_order_relaxed)) {
      lock_.unlock();
      return true;
    }
    detail::wait_record rec;
    detail::wait_node node;
    node.rec = &rec;
    waiters_.push_back(&node);
    // park calls the withdrawal with lock_ held (its contract, which the
    // analysis cannot see).
    const bool woken = park_locked(rec, deadline, stop, [this, &node]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
      waiters_.unlink(&node);
    });
    if (!woken) return false;
    if (rec.outcome == detail::wait_outcome::destroyed) detail::throw_ivar_destroyed();
    if (rec.outcome == detail::wait_outcome::cancelled) detail::throw_operation_cancelled("weft: ivar::get cancelled");
    return true;
  }

  // detail::park with lock_: called with lock_ held, returns with it
  // released. park's own protocol (release once paused, re-take to withdraw
  // on a timeout) is not one the analysis can follow; its contract is here.
  template <class WithdrawLocked>
  bool park_locked(detail::wait_record& rec, detail::steady_time deadline, const std::stop_token& stop,
                   WithdrawLocked&& withdraw_locked) const WEFT_RELEASE(lock_) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    if (stop.stop_possible())
      return detail::park(
          rec, deadline, [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.lock(); },
          [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.unlock(); },
          std::forward<WithdrawLocked>(withdraw_locked), stop);
    return detail::park(
        rec, deadline, [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.lock(); },
        [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.unlock(); },
        std::forward<WithdrawLocked>(withdraw_locked));
  }

  const T& value() const noexcept { return *std::launder(reinterpret_cast<const T*>(&storage_)); }
  T& value() noexcept { return *std::launder(reinterpret_cast<T*>(&storage_)); }

  alignas(T) unsigned char storage_[sizeof(T)];
  std::atomic<bool> claimed_{false};
  std::atomic<bool> full_{false};
  mutable detail::spin_lock lock_;
  mutable detail::wait_list waiters_ WEFT_GUARDED_BY(lock_);
};

}  // namespace weft
