// weft — deadlines for timed waits and sleeps: one thread per runtime,
// started on first use, sleeping on a condition variable until the earliest
// deadline. The thread only fires callbacks; it never runs tasks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace weft::detail {

struct timer_entry {
  std::chrono::steady_clock::time_point deadline;
  // Called once, on the timer thread, with the service's lock held, unless
  // cancel() removed the entry first. Must not touch the entry after waking
  // its owner: the owner may free it at once.
  void (*fire)(timer_entry*) noexcept = nullptr;
  void* context = nullptr;  // for fire: the object that owns this entry
  std::multimap<std::chrono::steady_clock::time_point, timer_entry*>::iterator pos;
  bool armed = false;  // guarded by the service's lock
  class timer_service* service = nullptr;
};

class timer_service {
 public:
  timer_service() = default;
  ~timer_service();
  timer_service(const timer_service&) = delete;
  timer_service& operator=(const timer_service&) = delete;

  void add(timer_entry* e);
  // Adds e, then calls then(e, arg) while still holding the lock (so the timer
  // cannot fire, nor cancel() return, before `then` is done).
  void add_then(timer_entry* e, void (*then)(timer_entry*, void*) noexcept, void* arg);
  // From inside `then` or a fire callback only: removes e if armed.
  static void disarm_locked(timer_entry* e) noexcept;
  // Returns true if the entry was removed before firing. Either way, when it
  // returns the timer thread no longer touches the entry.
  bool cancel(timer_entry* e) noexcept;
  std::size_t pending() const;

 private:
  void run();
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, timer_entry*> entries_;  // guarded by mutex_
  bool stop_ = false;      // guarded by mutex_
  std::thread thread_;     // started under mutex_ on first add
};

}  // namespace weft::detail
