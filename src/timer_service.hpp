// weft — deadlines for timed waits and sleeps: one thread per runtime,
// started on first use, sleeping on a condition variable until the earliest
// deadline. The thread only fires callbacks; it never runs tasks.
//
// The thread is started by ensure_started(), which a waiter calls before it
// suspends, where a failure can still be thrown (add() runs inside a
// suspension's noexcept commit step and never starts it). At runtime
// shutdown, once the grace period is over, expire_all() makes every deadline
// count as reached: armed entries fire at once, and so do entries added later.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <thread>

#include "weft/detail/mutex.hpp"

namespace weft::detail {

struct timer_entry {
  std::chrono::steady_clock::time_point deadline;
  // Called once, on the timer thread, with the service's lock held, unless
  // cancel() removed the entry first. Must not touch the entry after waking
  // its owner: the owner may free it at once.
  void (*fire)(timer_entry*) noexcept = nullptr;
  void* context = nullptr;  // for fire: the object that owns this entry
  std::multimap<std::chrono::steady_clock::time_point, timer_entry*>::iterator pos;
  // Guarded by the service's lock (not WEFT_GUARDED_BY: the service is not
  // known before add_then and its lock is private).
  bool armed = false;
  class timer_service* service = nullptr;
};

class timer_service {
 public:
  timer_service() = default;
  ~timer_service();
  timer_service(const timer_service&) = delete;
  timer_service& operator=(const timer_service&) = delete;

  // Starts the timer thread if it is not running. Throws std::system_error
  // ("weft: cannot start the timer thread") if it cannot be created; the
  // service stays usable (the next call tries again).
  void ensure_started() WEFT_EXCLUDES(mutex_);
  // ensure_started() must have returned before: neither starts a thread.
  void add(timer_entry* e) noexcept WEFT_EXCLUDES(mutex_);
  // Adds e, then calls then(e, arg) while still holding the lock (so the timer
  // cannot fire, nor cancel() return, before `then` is done).
  void add_then(timer_entry* e, void (*then)(timer_entry*, void*) noexcept, void* arg) noexcept
      WEFT_EXCLUDES(mutex_);
  // From inside `then` or a fire callback only: removes e if armed.
  static void disarm_locked(timer_entry* e) noexcept;
  // Returns true if the entry was removed before firing. Either way, when it
  // returns the timer thread no longer touches the entry.
  bool cancel(timer_entry* e) noexcept WEFT_EXCLUDES(mutex_);
  // Every deadline counts as reached from now on (runtime shutdown).
  void expire_all() noexcept WEFT_EXCLUDES(mutex_);

 private:
  void run() WEFT_EXCLUDES(mutex_);
  mutex mutex_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, timer_entry*> entries_
      WEFT_GUARDED_BY(mutex_);
  bool stop_ WEFT_GUARDED_BY(mutex_) = false;
  bool expired_ WEFT_GUARDED_BY(mutex_) = false;  // expire_all() was called
  // Started by ensure_started(). Joined by the destructor without the lock:
  // by then nothing else can call ensure_started().
  std::thread thread_ WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::detail
