// weft — annotated locks: std::mutex and RAII holders that Clang's
// thread-safety analysis understands (see thread_annotations.hpp). libstdc++'s
// std::mutex carries no annotations, so weft's own code locks through these.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "weft/detail/thread_annotations.hpp"

namespace weft::detail {

// std::mutex, annotated as a capability.
class WEFT_CAPABILITY("mutex") mutex {
 public:
  void lock() WEFT_ACQUIRE() { m_.lock(); }
  void unlock() WEFT_RELEASE() { m_.unlock(); }
  bool try_lock() WEFT_TRY_ACQUIRE(true) { return m_.try_lock(); }
  // For a condition variable's wait (through unique_lock below).
  std::mutex& native() noexcept { return m_; }

 private:
  std::mutex m_;
};

// Holds any annotated lock (mutex, spin_lock) for a scope: std::lock_guard,
// visible to the analysis.
template <class Lock>
class WEFT_SCOPED_CAPABILITY lock_guard {
 public:
  explicit lock_guard(Lock& l) WEFT_ACQUIRE(l) : l_(l) { l_.lock(); }
  ~lock_guard() WEFT_RELEASE() { l_.unlock(); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  Lock& l_;
};
template <class Lock>
lock_guard(Lock&) -> lock_guard<Lock>;

// Holds a weft::detail::mutex and can wait on a std::condition_variable:
// std::unique_lock<std::mutex>, visible to the analysis. The lock is held
// before and after every wait (the analysis treats a wait as a no-op, which
// is what the caller sees). Write predicates as loops around wait() so the
// analysis checks them with the lock held.
class WEFT_SCOPED_CAPABILITY unique_lock {
 public:
  explicit unique_lock(mutex& m) WEFT_ACQUIRE(m) : l_(m.native()) {}
  ~unique_lock() WEFT_RELEASE() {}
  unique_lock(const unique_lock&) = delete;
  unique_lock& operator=(const unique_lock&) = delete;

  void lock() WEFT_ACQUIRE() { l_.lock(); }
  void unlock() WEFT_RELEASE() { l_.unlock(); }

  void wait(std::condition_variable& cv) { cv.wait(l_); }
  template <class Clock, class Duration>
  std::cv_status wait_until(std::condition_variable& cv,
                            const std::chrono::time_point<Clock, Duration>& t) {
    return cv.wait_until(l_, t);
  }
  template <class Rep, class Period>
  std::cv_status wait_for(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& d) {
    return cv.wait_for(l_, d);
  }

 private:
  std::unique_lock<std::mutex> l_;
};

}  // namespace weft::detail
