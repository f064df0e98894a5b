// weft — operations on the calling task.
#pragma once

#include <chrono>
#include <stop_token>

#include "weft/detail/cancel.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/wait_list.hpp"

namespace weft::this_task {

// Suspends the calling task and lets its worker run other ready work of the
// task's priority level first; the task is resumed as soon as a worker picks
// it up again. Under APS a yielding task stays runnable, so its level keeps
// its worker: to wait for less urgent work, sleep or block instead (with one
// worker, a yield loop would starve it: docs/priorities.md). Outside a
// runtime it calls std::this_thread::yield().
void yield();

// Index of the worker running the calling task in [0, worker_count), or -1 on
// a thread that is not a weft worker. A task may move between workers at any
// suspension point (get, sync, yield).
int worker_id() noexcept;

// Suspends the calling task (not its worker) until the deadline; on other
// threads it sleeps the thread. Any duration or clock works, max() included
// (conversions saturate: seconds::max() sleeps "forever"). During runtime
// shutdown, once the grace period is over (options::shutdown_grace), every
// sleep ends at once, as every other deadline does (docs/api.md).
void sleep_until(std::chrono::steady_clock::time_point deadline);
template <class Clock, class Duration>
void sleep_until(const std::chrono::time_point<Clock, Duration>& t) {
  sleep_until(detail::to_steady_deadline(t));
}
template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period>& d) {
  sleep_until(detail::deadline_after(d));
}

namespace detail_sleep {
// A sleep is a park with nothing to wait for: no waker but the deadline and
// the stop callback (which take the sleeper's own lock).
[[gnu::noinline]] inline void sleep_until_or_stop(std::chrono::steady_clock::time_point deadline,
                                                  const std::stop_token& stop) WEFT_NO_THREAD_SAFETY_ANALYSIS {
  weft::detail::spin_lock lock;
  weft::detail::wait_record rec;
  lock.lock();  // park's contract: called with the lock held, returns without it
  const bool woken = weft::detail::park(
      rec, deadline, [&lock]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock.lock(); },
      [&lock]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock.unlock(); }, [] {}, stop);
  if (woken && rec.outcome == weft::detail::wait_outcome::cancelled)
    weft::detail::throw_operation_cancelled("weft: this_task::sleep cancelled");
}
}  // namespace detail_sleep

// Cancellable sleeps (docs/api.md "Cancellation"): as above, and a stop
// requested before the deadline ends the sleep early with
// std::system_error(std::errc::operation_canceled) (also if it was requested
// before the call). With a deadline of max() the sleep lasts until stopped
// (or until the runtime's shutdown grace period ends, as any deadline).
// Inside a task, needs the runtime's timer thread (may throw
// std::system_error if it cannot start).
inline void sleep_until(std::chrono::steady_clock::time_point deadline, const std::stop_token& stop) {
  if (!stop.stop_possible()) return sleep_until(deadline);
  detail_sleep::sleep_until_or_stop(deadline, stop);
}
template <class Clock, class Duration>
void sleep_until(const std::chrono::time_point<Clock, Duration>& t, const std::stop_token& stop) {
  sleep_until(detail::to_steady_deadline(t), stop);
}
template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period>& d, const std::stop_token& stop) {
  sleep_until(detail::deadline_after(d), stop);
}

}  // namespace weft::this_task
