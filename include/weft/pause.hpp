// weft — pause and resume (Concurrent Cilk §3, §5.4): the one suspension mechanism
// every blocking structure of weft is built on (futures, ivars, mvars,
// channels, select, timed waits), public so that users can build their own.
//
// A task pauses itself in two phases. this_task::pause(publish) first
// switches the task out — its worker carries on with other work, and a
// stack becomes a suspended fiber only now (lazy promotion) — and then, once
// the task is fully paused, calls publish(handle). publish stores the handle
// where a waker will find it (typically a waiter list guarded by a lock) and
// returns true; any thread or task then wakes the task once with
// handle.resume(). Because publish runs after the switch, a resume() that
// comes at once is safe. publish may also check the condition again under its
// lock and return false ("no need to wait"): pause then returns at once.
//
//   struct event {                       // a user-built blocking structure
//     std::mutex m; bool set = false; std::vector<weft::paused_task> waiters;
//     void wait() {
//       weft::this_task::pause([&](weft::paused_task h) noexcept {
//         std::lock_guard l(m);
//         if (set) return false;         // already set: do not pause
//         waiters.push_back(h);
//         return true;
//       });
//     }
//     void signal() {
//       std::vector<weft::paused_task> ws;
//       { std::lock_guard l(m); set = true; ws.swap(waiters); }
//       for (auto h : ws) h.resume();
//     }
//   };
//
// Outside a runtime (a plain thread) pause blocks the thread instead, with
// the same protocol. A paused task resumes at its own priority level.
//
// Rules for publish and withdraw: they run on the scheduler's stack, inside
// the suspension — they must not throw, block on anything but a short lock
// (a std::mutex or a spin lock, never a weft lock) or pause.
//
// Timed pauses: pause_until(deadline, publish, withdraw) returns true if the
// task was resumed, false if the deadline passed first. Then withdraw(handle)
// runs in the task to take the handle back from where publish stored it (if
// it is still there). Exactly one of "a waker" and "the deadline" wins, by
// claim(): a waker that must know whether the task is still waiting (to
// hand it a value, say) calls claim() — true means the task is its to wake,
// and it must then call wake() exactly once; false means the task gave up
// (timed out) or was claimed by someone else. A waker of a timed pause must
// call claim() while holding the lock that withdraw takes, so that the
// handle's memory (on the paused task's stack) is still there.
#pragma once

#include <chrono>
#include <type_traits>
#include <utility>

#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"

namespace weft {

// A handle to a paused task (or thread). Trivially copyable; valid from
// publish until the task is woken (or, for a timed pause, until withdraw).
class paused_task {
 public:
  paused_task() noexcept = default;
  explicit paused_task(detail::waiter* w) noexcept : w_(w) {}

  // Claims the right to wake the task: true for exactly one caller, false if
  // another claimed it or its deadline passed.
  bool claim() const noexcept {
    std::uint32_t expected = detail::waiter::waiting;
    // acq_rel: races the timer's CAS and other claimers'; acquire makes the
    // task's published state visible to the winner.
    return w_->state.compare_exchange_strong(expected, detail::waiter::signalled,
                                             std::memory_order_acq_rel);
  }
  // Wakes a task this caller claimed. Exactly once per successful claim();
  // the handle must not be used afterwards (the task may be gone).
  void wake() const noexcept { w_->wake(w_); }
  // claim() then wake(): wakes the task unless someone else did or its
  // deadline passed. Returns whether it woke it.
  bool resume() const noexcept {
    if (!claim()) return false;
    wake();
    return true;
  }

  explicit operator bool() const noexcept { return w_ != nullptr; }
  friend bool operator==(paused_task a, paused_task b) noexcept { return a.w_ == b.w_; }

  // The underlying waiter (weft's own structures register it in a
  // detail::completion).
  detail::waiter* native_handle() const noexcept { return w_; }

 private:
  detail::waiter* w_ = nullptr;
};

namespace detail {
using publish_fn = bool (*)(void* ctx, paused_task h) noexcept;
using withdraw_fn = void (*)(void* ctx, paused_task h) noexcept;
// src/suspension.cpp.
void pause(publish_fn publish, void* ctx);
bool pause_until(steady_time deadline, publish_fn publish, void* publish_ctx, withdraw_fn withdraw,
                 void* withdraw_ctx);
}  // namespace detail

namespace this_task {

// Pauses the calling task until a waker resumes it (see the top of the
// file). publish: bool(weft::paused_task) noexcept; returning false cancels
// the pause. Throws only what starting to wait may throw (std::bad_alloc for
// a new fiber stack, std::system_error if the stack cannot be mapped).
template <class Publish>
void pause(Publish&& publish) {
  static_assert(std::is_invocable_r_v<bool, Publish&, paused_task>,
                "weft::this_task::pause: publish must be callable as bool(weft::paused_task)");
  auto* p = &publish;
  detail::pause(
      [](void* ctx, paused_task h) noexcept -> bool {
        return (*static_cast<std::remove_reference_t<Publish>*>(ctx))(h);
      },
      static_cast<void*>(p));
}

// As pause, with a deadline (any clock; max() means none). Returns true if
// resumed, false if the deadline passed first (withdraw(handle) was then
// called in the task). Needs the runtime's timer thread: may throw
// std::system_error("weft: cannot start the timer thread").
template <class Clock, class Duration, class Publish, class Withdraw>
bool pause_until(const std::chrono::time_point<Clock, Duration>& deadline, Publish&& publish,
                 Withdraw&& withdraw) {
  static_assert(std::is_invocable_r_v<bool, Publish&, paused_task>,
                "weft::this_task::pause_until: publish must be callable as bool(weft::paused_task)");
  static_assert(std::is_invocable_v<Withdraw&, paused_task>,
                "weft::this_task::pause_until: withdraw must be callable as void(weft::paused_task)");
  return detail::pause_until(
      detail::to_steady_deadline(deadline),
      [](void* ctx, paused_task h) noexcept -> bool {
        return (*static_cast<std::remove_reference_t<Publish>*>(ctx))(h);
      },
      static_cast<void*>(&publish),
      [](void* ctx, paused_task h) noexcept { (*static_cast<std::remove_reference_t<Withdraw>*>(ctx))(h); },
      static_cast<void*>(&withdraw));
}

template <class Rep, class Period, class Publish, class Withdraw>
bool pause_for(const std::chrono::duration<Rep, Period>& d, Publish&& publish, Withdraw&& withdraw) {
  return pause_until(detail::deadline_after(d), std::forward<Publish>(publish),
                     std::forward<Withdraw>(withdraw));
}

}  // namespace this_task
}  // namespace weft
