#include "timer_service.hpp"

#include <cstdio>
#include <cstdlib>

#include "own_threads.hpp"

namespace weft::detail {

timer_service::~timer_service() {
  std::thread t;
  {
    lock_guard lock(mutex_);
    stop_ = true;
    t = std::move(thread_);  // joined without the lock: the thread needs it to stop
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

void timer_service::ensure_started() {
  lock_guard lock(mutex_);
  if (!thread_.joinable()) thread_ = start_thread("the timer thread", [this] { run(); });
}

void timer_service::add(timer_entry* e) noexcept {
  add_then(e, nullptr, nullptr);
}

void timer_service::add_then(timer_entry* e, void (*then)(timer_entry*, void*) noexcept,
                             void* arg) noexcept {
  bool earliest;
  {
    lock_guard lock(mutex_);
    if (!thread_.joinable()) {
      // A caller skipped ensure_started(): nobody would ever fire this entry.
      std::fputs("weft: internal error: a timer was armed before the timer thread started\n", stderr);
      std::abort();
    }
    e->pos = entries_.emplace(e->deadline, e);
    e->armed = true;
    e->service = this;
    earliest = e->pos == entries_.begin() || expired_;
    if (then) then(e, arg);
    // `e` may be gone once the lock is released (its owner resumed).
  }
  if (earliest) cv_.notify_one();
}

// Not analysed: it runs under e->service->mutex_, taken by add_then or run()
// around the callback (`then`, `fire`) that calls it through a function
// pointer, which the analysis cannot follow; a WEFT_REQUIRES here would move
// the warning into those callbacks (suspension.cpp).
void timer_service::disarm_locked(timer_entry* e) noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
  if (!e->armed) return;
  e->service->entries_.erase(e->pos);
  e->armed = false;
}

bool timer_service::cancel(timer_entry* e) noexcept {
  lock_guard lock(mutex_);
  if (!e->armed) return false;
  entries_.erase(e->pos);
  e->armed = false;
  return true;
}

void timer_service::expire_all() noexcept {
  {
    lock_guard lock(mutex_);
    expired_ = true;
  }
  cv_.notify_all();
}

void timer_service::run() {
  unique_lock lock(mutex_);
  while (!stop_) {
    if (entries_.empty()) {
      lock.wait(cv_);
      continue;
    }
    auto first = entries_.begin();
    if (!expired_ && first->first > std::chrono::steady_clock::now()) {
      // Copy: the entry may be cancelled (and its node freed) while we wait.
      const auto deadline = first->first;
      lock.wait_until(cv_, deadline);
      continue;
    }
    timer_entry* e = first->second;
    entries_.erase(first);
    e->armed = false;
    e->fire(e);  // under the lock: cancel() waits for it to finish
  }
}

}  // namespace weft::detail
