// weft — task-aware counting semaphores, latches and barriers, with the
// C++20 interfaces of std::counting_semaphore, std::binary_semaphore,
// std::latch and std::barrier. Waiting pauses a task (its worker runs other
// work) or blocks a plain thread; tasks and plain threads may mix.
//
//   weft::counting_semaphore<4> slots(4);      // at most 4 at once
//   weft::latch done(n);                       // n tasks count down
//   weft::barrier sync(n, [&]() noexcept { ++phase; });
//
// Order: FIFO. A semaphore's release() hands units to the waiters in arrival
// order (a unit never goes to a newcomer while someone waits); a latch or a
// barrier phase wakes all its waiters at once.
//
// Cancellation: acquire(std::stop_token) and wait(std::stop_token) throw
// std::system_error(std::errc::operation_canceled, "weft: ... cancelled")
// when the token is stopped first; try_acquire_for/until(d, token) return
// false. A stopped arrive_and_wait has still arrived (std semantics of
// arrival; only the wait is abandoned).
//
// Errors (std: undefined behaviour; weft checks, release builds included,
// and throws std::system_error(std::errc::invalid_argument) before changing
// anything):
// * counting_semaphore: release(n) with n < 0 or beyond max(); a desired
//   count outside [0, max()] in the constructor.
// * latch: count_down(n) below zero or n < 0.
// * barrier: arriving beyond the expected count of the phase (more arrivals
//   than participants), or arrive(n) with n <= 0.
// Destroying one of them while tasks wait on it prints a message and
// std::terminate()s (a waiter would otherwise wait on freed memory).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "weft/detail/sync_core.hpp"
#include "weft/mutex.hpp"  // detail::sync_fatal

namespace weft {

namespace detail {

// Wakes a chain of claimed nodes (linked through next).
inline void finish_chain(wait_node* w) noexcept {
  while (w) {
    wait_node* next = w->next;  // before the waiter may go away
    finish_wait(w, wait_outcome::ok);
    w = next;
  }
}

// lk held: claims every waiter of `list` into a chain.
inline wait_node* claim_all(wait_list& list) noexcept {
  wait_node* chain = nullptr;
  wait_node** tail = &chain;
  while (wait_node* n = list.claim_front()) {
    *tail = n;
    tail = &n->next;  // unlinked: next is ours
    *tail = nullptr;
  }
  return chain;
}

inline void throw_cancelled(const char* what) { throw_sync_error(std::errc::operation_canceled, what); }

}  // namespace detail

template <std::ptrdiff_t LeastMaxValue = std::numeric_limits<std::int32_t>::max()>
class counting_semaphore {
  static_assert(LeastMaxValue >= 0, "weft::counting_semaphore: LeastMaxValue must be >= 0");

 public:
  static constexpr std::ptrdiff_t max() noexcept { return LeastMaxValue; }
  // How many tasks or threads wait to acquire now: a snapshot (diagnostics,
  // tests), as ivar/mvar/channel waiters().
  std::size_t waiters() const noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    const std::size_t n = waiters_.size();
    lk_.unlock();
    return n;
  }

  explicit counting_semaphore(std::ptrdiff_t desired) : count_(desired) {
    if (desired < 0 || desired > max())
      detail::throw_sync_error(std::errc::invalid_argument,
                               "weft::counting_semaphore: initial count outside [0, max()]");
  }
  counting_semaphore(const counting_semaphore&) = delete;
  counting_semaphore& operator=(const counting_semaphore&) = delete;
  ~counting_semaphore() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    const bool busy = !waiters_.empty();
    lk_.unlock();
    if (busy) detail::sync_fatal("weft::counting_semaphore: destroyed with waiters (std::terminate)");
  }

  // Adds `update` units: hands them to the waiters first (FIFO), one each.
  void release(std::ptrdiff_t update = 1) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    if (update < 0 || update > max() - count_.load(std::memory_order_relaxed)) {
      lk_.unlock();
      detail::throw_sync_error(std::errc::invalid_argument,
                               "weft::counting_semaphore: release() beyond max() or negative");
    }
    detail::wait_node* chain = nullptr;
    detail::wait_node** tail = &chain;
    while (update > 0) {
      detail::wait_node* n = waiters_.claim_front();
      if (!n) break;
      --update;
      *tail = n;
      tail = &n->next;
      *tail = nullptr;
    }
    // release: an acquirer that takes a unit on the fast path sees what the
    // releaser did before.
    if (update > 0) count_.fetch_add(update, std::memory_order_release);
    lk_.unlock();
    detail::finish_chain(chain);
  }

  void acquire() { (void)acquire_impl(detail::steady_time::max(), nullptr); }
  void acquire(std::stop_token token) {
    if (!acquire_impl(detail::steady_time::max(), &token))
      detail::throw_cancelled("weft: semaphore acquire cancelled");
  }
  bool try_acquire() noexcept {
    // relaxed load, acquire CAS: see acquire_impl.
    std::ptrdiff_t c = count_.load(std::memory_order_relaxed);
    while (c > 0)
      if (count_.compare_exchange_weak(c, c - 1, std::memory_order_acquire, std::memory_order_relaxed))
        return true;
    return false;
  }
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& d) {
    return acquire_impl(detail::deadline_after(d), nullptr);
  }
  template <class Clock, class Duration>
  bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& t) {
    return acquire_impl(detail::to_steady_deadline(t), nullptr);
  }
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& d, std::stop_token token) {
    return acquire_impl(detail::deadline_after(d), &token);
  }

  // A snapshot of the free units (diagnostics, tests).
  std::ptrdiff_t available() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  bool acquire_impl(detail::steady_time deadline, const std::stop_token* token) {
    // Fast path: a free unit (count_ > 0 implies nobody waits: release
    // serves waiters before it adds to count_).
    if (try_acquire()) return true;
    return detail::wait_in(
               lk_, waiters_, nullptr, 0, deadline, token, [this]() noexcept { return try_acquire(); },
               []() noexcept {}) == detail::wait_result::done;
  }

  // Free units. Invariant (under lk_): count_ > 0 => waiters_ is empty at
  // every release; a waiter queues only after seeing count_ == 0 under lk_.
  std::atomic<std::ptrdiff_t> count_;
  mutable detail::spin_lock lk_;  // mutable: waiters() takes it
  detail::wait_list waiters_ WEFT_GUARDED_BY(lk_);
};

using binary_semaphore = counting_semaphore<1>;

// A single-use countdown (std::latch).
class latch {
 public:
  static constexpr std::ptrdiff_t max() noexcept { return std::numeric_limits<std::ptrdiff_t>::max(); }

  explicit latch(std::ptrdiff_t expected) : count_(expected) {
    if (expected < 0) detail::throw_sync_error(std::errc::invalid_argument, "weft::latch: negative count");
  }
  latch(const latch&) = delete;
  latch& operator=(const latch&) = delete;
  ~latch() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    const bool busy = !waiters_.empty();
    lk_.unlock();
    if (busy) detail::sync_fatal("weft::latch: destroyed with waiters (std::terminate)");
  }

  void count_down(std::ptrdiff_t n = 1) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    const std::ptrdiff_t c = count_.load(std::memory_order_relaxed);
    if (n < 0 || n > c) {
      lk_.unlock();
      detail::throw_sync_error(std::errc::invalid_argument, "weft::latch: count_down() below zero");
    }
    // release: waiters that see 0 see everything done before each count_down.
    count_.store(c - n, std::memory_order_release);
    detail::wait_node* chain = c - n == 0 ? detail::claim_all(waiters_) : nullptr;
    lk_.unlock();
    detail::finish_chain(chain);
  }
  bool try_wait() const noexcept {
    // acquire: pairs with count_down's release.
    return count_.load(std::memory_order_acquire) == 0;
  }
  void wait() const { (void)wait_impl(detail::steady_time::max(), nullptr); }
  void wait(std::stop_token token) const {
    if (wait_impl(detail::steady_time::max(), &token) != detail::wait_result::done)
      detail::throw_cancelled("weft: latch wait cancelled");
  }
  // weft extensions: false if the deadline passes first.
  template <class Rep, class Period>
  bool wait_for(const std::chrono::duration<Rep, Period>& d) const {
    return wait_impl(detail::deadline_after(d), nullptr) == detail::wait_result::done;
  }
  template <class Clock, class Duration>
  bool wait_until(const std::chrono::time_point<Clock, Duration>& t) const {
    return wait_impl(detail::to_steady_deadline(t), nullptr) == detail::wait_result::done;
  }
  void arrive_and_wait(std::ptrdiff_t n = 1) {
    count_down(n);
    wait();
  }

 private:
  detail::wait_result wait_impl(detail::steady_time deadline, const std::stop_token* token) const {
    if (try_wait()) return detail::wait_result::done;
    return detail::wait_in(lk_, waiters_, nullptr, 0, deadline, token,
                           [this]() noexcept { return try_wait(); }, []() noexcept {});
  }

  std::atomic<std::ptrdiff_t> count_;  // written under lk_
  mutable detail::spin_lock lk_;
  mutable detail::wait_list waiters_ WEFT_GUARDED_BY(lk_);
};

namespace detail {
struct no_completion {
  void operator()() noexcept {}
};
}  // namespace detail

// A reusable phase barrier (std::barrier). The completion function runs once
// per phase, in the task or thread that arrives last, before any waiter of
// that phase is released. It must be nothrow-invocable (as in std).
template <class CompletionFunction = detail::no_completion>
class barrier {
  static_assert(std::is_nothrow_invocable_v<CompletionFunction&>,
                "weft::barrier: the completion function must be callable as f() noexcept");

 public:
  // The phase an arrival belongs to; pass it to wait().
  class arrival_token {
   public:
    arrival_token() = default;

   private:
    friend class barrier;
    explicit arrival_token(std::uint64_t p) : phase_(p) {}
    std::uint64_t phase_ = ~std::uint64_t{0};
  };

  static constexpr std::ptrdiff_t max() noexcept { return std::numeric_limits<std::ptrdiff_t>::max(); }

  explicit barrier(std::ptrdiff_t expected, CompletionFunction f = CompletionFunction())
      : expected_(expected), left_(expected), completion_(std::move(f)) {
    if (expected < 0) detail::throw_sync_error(std::errc::invalid_argument, "weft::barrier: negative count");
  }
  barrier(const barrier&) = delete;
  barrier& operator=(const barrier&) = delete;
  ~barrier() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    const bool busy = !waiters_.empty();
    lk_.unlock();
    if (busy) detail::sync_fatal("weft::barrier: destroyed with waiters (std::terminate)");
  }

  [[nodiscard]] arrival_token arrive(std::ptrdiff_t n = 1) { return arrival_token(arrive_impl(n, false)); }
  void wait(arrival_token&& t) const { (void)wait_impl(t.phase_, nullptr); }
  void wait(arrival_token&& t, std::stop_token token) const {
    if (!wait_impl(t.phase_, &token)) detail::throw_cancelled("weft: barrier wait cancelled");
  }
  void arrive_and_wait() { wait(arrive()); }
  void arrive_and_wait(std::stop_token token) { wait(arrive(), std::move(token)); }
  // Arrives and leaves: the following phases expect one participant fewer.
  void arrive_and_drop() { (void)arrive_impl(1, true); }

 private:
  std::uint64_t arrive_impl(std::ptrdiff_t n, bool drop) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    lk_.lock();
    if (n <= 0 || n > left_) {
      lk_.unlock();
      detail::throw_sync_error(std::errc::invalid_argument,
                               "weft::barrier: arrival beyond the expected count of the phase");
    }
    const std::uint64_t phase = phase_.load(std::memory_order_relaxed);
    left_ -= n;
    if (drop) --expected_;
    if (left_ > 0) {
      lk_.unlock();
      return phase;
    }
    // The last arrival: run the completion with the phase still closed
    // (left_ == 0, so a further arrival is reported as beyond the count).
    lk_.unlock();
    completion_();
    lk_.lock();
    left_ = expected_;
    // release: a waiter that sees the new phase sees the completion's work
    // and every arrival's.
    phase_.store(phase + 1, std::memory_order_release);
    detail::wait_node* chain = detail::claim_all(waiters_);
    lk_.unlock();
    detail::finish_chain(chain);
    return phase;
  }

  bool passed(std::uint64_t phase) const noexcept {
    // acquire: pairs with the release store of the new phase.
    return phase_.load(std::memory_order_acquire) != phase;
  }

  bool wait_impl(std::uint64_t phase, const std::stop_token* token) const {
    if (passed(phase)) return true;
    return detail::wait_in(lk_, waiters_, nullptr, 0, detail::steady_time::max(), token,
                           [&]() noexcept { return passed(phase); },
                           []() noexcept {}) == detail::wait_result::done;
  }

  mutable detail::spin_lock lk_;
  std::ptrdiff_t expected_ WEFT_GUARDED_BY(lk_);  // participants of the next phase
  std::ptrdiff_t left_ WEFT_GUARDED_BY(lk_);      // arrivals still expected this phase
  std::atomic<std::uint64_t> phase_{0};           // written under lk_
  mutable detail::wait_list waiters_ WEFT_GUARDED_BY(lk_);
  CompletionFunction completion_;
};

}  // namespace weft
