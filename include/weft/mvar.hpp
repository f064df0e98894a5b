// weft — an MVar (Concurrent Cilk §3.1; Haskell's MVar): a box that is full or
// empty. put() waits while it is full, take() waits while it is empty and
// empties it, read() waits while it is empty and leaves the value. Waiting
// pauses a task (its worker runs other work) or blocks a plain thread.
//
//   weft::mvar<int> box;
//   weft::async([&] { box.put(1); box.put(2); });   // the second put waits
//   int a = box.take();                            // 1, and the put of 2 goes on
//
// Order: waiting putters, takers and readers are served first come, first
// served. A put into an empty mvar first gives a copy to every waiting
// reader (read() is atomic and sees the next put), then the value to the
// first waiting taker, or keeps it. A waiter resumes at its own priority level.
//
// Errors: destroying an mvar while tasks wait on it wakes them with
// weft::mvar_error ("destroyed"); nothing waits forever, and a waiting
// putter's value stays with the putter.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "weft/detail/cancel.hpp"
#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/wait_list.hpp"

namespace weft {

class mvar_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

template <class T>
class mvar {
 public:
  mvar() = default;
  explicit mvar(T initial) : value_(std::move(initial)) {}
  mvar(const mvar&) = delete;
  mvar& operator=(const mvar&) = delete;
  ~mvar() {
    lock_.lock();
    for (detail::wait_list* l : {&takers_, &readers_, &putters_})  // under lock_
      while (detail::wait_node* n = l->claim_front()) detail::finish_wait(n, detail::wait_outcome::destroyed);
    lock_.unlock();
  }

  // --- put: waits while full ---------------------------------------------
  void put(const T& v) {
    T copy(v);
    put_impl(copy, detail::steady_time::max());
  }
  void put(T&& v) { put_impl(v, detail::steady_time::max()); }
  // Cancellable forms (docs/api.md "Cancellation"): a stop requested while
  // the wait lasts throws std::system_error(std::errc::operation_canceled);
  // the value is then not put (take/read: nothing is taken).
  void put(const T& v, const std::stop_token& stop) {
    T copy(v);
    put_impl(copy, detail::steady_time::max(), stop);
  }
  void put(T&& v, const std::stop_token& stop) { put_impl(v, detail::steady_time::max(), stop); }
  // false (and the value not taken) if still full at the deadline.
  template <class Clock, class Duration>
  bool put_until(T v, const std::chrono::time_point<Clock, Duration>& deadline) {
    return put_impl(v, detail::to_steady_deadline(deadline));
  }
  template <class Rep, class Period>
  bool put_for(T v, const std::chrono::duration<Rep, Period>& d) {
    return put_impl(v, detail::deadline_after(d));
  }
  // Puts only if empty; v is moved from only on success.
  bool try_put(T&& v) { return put_impl(v, detail::steady_time::min()); }
  bool try_put(const T& v) {
    T copy(v);
    return put_impl(copy, detail::steady_time::min());
  }

  // --- take: waits while empty, empties ------------------------------------
  T take() { return *take_impl(detail::steady_time::max()); }
  T take(const std::stop_token& stop) { return *get_impl<true>(detail::steady_time::max(), stop); }
  template <class Clock, class Duration>
  std::optional<T> take_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return take_impl(detail::to_steady_deadline(deadline));
  }
  template <class Rep, class Period>
  std::optional<T> take_for(const std::chrono::duration<Rep, Period>& d) {
    return take_impl(detail::deadline_after(d));
  }
  std::optional<T> try_take() { return take_impl(detail::steady_time::min()); }

  // --- read: waits while empty, leaves the value ------------------------------
  T read() { return *read_impl(detail::steady_time::max()); }
  T read(const std::stop_token& stop) { return *get_impl<false>(detail::steady_time::max(), stop); }
  template <class Clock, class Duration>
  std::optional<T> read_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    return read_impl(detail::to_steady_deadline(deadline));
  }
  template <class Rep, class Period>
  std::optional<T> read_for(const std::chrono::duration<Rep, Period>& d) {
    return read_impl(detail::deadline_after(d));
  }
  std::optional<T> try_read() { return read_impl(detail::steady_time::min()); }

  // Waiting putters, takers and readers now: a snapshot, for diagnostics
  // and tests (as ivar::waiters).
  std::size_t waiters() const {
    lock_.lock();
    std::size_t n = takers_.size() + readers_.size() + putters_.size();
    lock_.unlock();
    return n;
  }
  // A snapshot (another task may change it at once).
  bool is_full() const {
    lock_.lock();
    bool full = value_.has_value();
    lock_.unlock();
    return full;
  }

 private:
  using node = detail::wait_node;

  [[noreturn]] static void destroyed() {
    throw mvar_error("weft::mvar: the mvar was destroyed while this task waited on it");
  }

  // Parks the caller (lock held, node queued in `list`, one of this mvar's
  // lists); returns with the lock released. deadline min(): do not wait.
  // park's protocol (release once paused, re-take to withdraw on a timeout)
  // is not one the analysis can follow; its contract is in the annotation.
  [[gnu::noinline]] bool park_in(detail::wait_list& list, node& n, detail::wait_record& rec,
                                 detail::steady_time deadline,
                                 const std::stop_token& stop) WEFT_RELEASE(lock_) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    list.push_back(&n);
    auto lock = [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.lock(); };
    auto unlock = [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.unlock(); };
    auto withdraw = [&list, &n]() WEFT_NO_THREAD_SAFETY_ANALYSIS { list.unlink(&n); };  // park: lock_ held
    const bool done = stop.stop_possible() ? detail::park(rec, deadline, lock, unlock, withdraw, stop)
                                           : detail::park(rec, deadline, lock, unlock, withdraw);
    if (done && rec.outcome == detail::wait_outcome::destroyed) destroyed();
    if (done && rec.outcome == detail::wait_outcome::cancelled) detail::throw_operation_cancelled("weft: mvar wait cancelled");
    return done;
  }

  // Lock held, mvar empty: `v` goes to the waiting readers (copies), then to
  // the first waiting taker, or into the box. Returns with the lock held.
  void deliver_locked(T& v) WEFT_REQUIRES(lock_) {
    // A move-only T has no read() (it copies), so no readers either.
    if constexpr (std::is_copy_constructible_v<T>) {
      while (node* r = readers_.claim_front()) {
        static_cast<std::optional<T>*>(r->slot)->emplace(v);
        detail::finish_wait(r, detail::wait_outcome::ok);
      }
    }
    if (node* t = takers_.claim_front()) {
      static_cast<std::optional<T>*>(t->slot)->emplace(std::move(v));
      detail::finish_wait(t, detail::wait_outcome::ok);
    } else {
      value_.emplace(std::move(v));
    }
  }

  bool put_impl(T& v, detail::steady_time deadline, const std::stop_token& stop = {}) {
    lock_.lock();
    if (!value_) {
      deliver_locked(v);
      lock_.unlock();
      return true;
    }
    if (deadline == detail::steady_time::min()) {
      lock_.unlock();
      return false;
    }
    detail::wait_record rec;
    node n;
    n.rec = &rec;
    n.slot = &v;  // a taker moves it into the box
    return park_in(putters_, n, rec, deadline, stop);
  }

  // Lock held: the box was just emptied; refill it from the first waiting putter.
  void refill_locked() WEFT_REQUIRES(lock_) {
    if (node* p = putters_.claim_front()) {
      T& pv = *static_cast<T*>(p->slot);
      deliver_locked(pv);
      detail::finish_wait(p, detail::wait_outcome::ok);
    }
  }

  // take() and read(): the value (moved out and the box refilled from the
  // first waiting putter, or copied), waiting while empty; std::nullopt if
  // still empty at the deadline (min(): do not wait).
  // A template parameter, not a flag: read() copies, so an mvar of a
  // move-only type must still compile when only take() is used.
  std::optional<T> take_impl(detail::steady_time deadline) { return get_impl<true>(deadline); }
  std::optional<T> read_impl(detail::steady_time deadline) { return get_impl<false>(deadline); }

  template <bool Take>
  std::optional<T> get_impl(detail::steady_time deadline, const std::stop_token& stop = {}) {
    lock_.lock();
    if (value_) {
      std::optional<T> r;
      if constexpr (Take) {
        r.emplace(std::move(*value_));
        value_.reset();
        refill_locked();
      } else {
        r.emplace(*value_);
      }
      lock_.unlock();
      return r;
    }
    if (deadline == detail::steady_time::min()) {
      lock_.unlock();
      return std::nullopt;
    }
    std::optional<T> slot;
    detail::wait_record rec;
    node n;
    n.rec = &rec;
    n.slot = &slot;
    if (!park_in(Take ? takers_ : readers_, n, rec, deadline, stop)) return std::nullopt;
    return slot;
  }

  mutable detail::spin_lock lock_;
  std::optional<T> value_ WEFT_GUARDED_BY(lock_);
  detail::wait_list takers_ WEFT_GUARDED_BY(lock_);   // slot = std::optional<T>*
  detail::wait_list readers_ WEFT_GUARDED_BY(lock_);  // slot = std::optional<T>*
  detail::wait_list putters_ WEFT_GUARDED_BY(lock_);  // slot = T* (moved from)
};

}  // namespace weft
