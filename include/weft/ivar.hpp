// weft — an IVar: a write-once variable whose readers suspend until it is
// written (paper 004 §3). get() inside a task suspends the task's fiber; on
// any other thread it blocks the thread.
#pragma once

#include <atomic>
#include <new>
#include <stdexcept>
#include <utility>

#include "weft/detail/completion.hpp"
#include "weft/detail/scheduler_hooks.hpp"

namespace weft {

// Thrown by a second put() on the same ivar.
class ivar_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Lifetime: destroy an ivar only when no put() or get() on it is in progress.
template <class T>
class ivar {
 public:
  ivar() = default;
  ivar(const ivar&) = delete;
  ivar& operator=(const ivar&) = delete;
  ~ivar() { if (full_.is_set()) value().~T(); }

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
    full_.set();
  }

  // Returns the value, suspending the calling task (or thread) while empty.
  const T& get() const {
    if (!full_.is_set()) detail::wait(full_);
    return value();
  }

  bool is_full() const noexcept { return full_.is_set(); }

 private:
  const T& value() const noexcept { return *std::launder(reinterpret_cast<const T*>(&storage_)); }
  T& value() noexcept { return *std::launder(reinterpret_cast<T*>(&storage_)); }
  alignas(T) unsigned char storage_[sizeof(T)];
  std::atomic<bool> claimed_{false};
  mutable detail::completion full_;
};

}  // namespace weft
