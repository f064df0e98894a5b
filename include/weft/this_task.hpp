// weft — operations on the calling task.
#pragma once

#include <chrono>

#include "weft/detail/deadline.hpp"

namespace weft::this_task {

// Suspends the calling task and lets its worker run other ready work first;
// the task is resumed as soon as a worker picks it up again. Outside a
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

}  // namespace weft::this_task
