// weft — fiber stacks: mmap'd in slabs, each stack with a guard region below
// it. Guard regions use MADV_GUARD_INSTALL (Linux >= 6.13), which does not
// split the mapping, so 100,000 stacks do not exhaust vm.max_map_count; older
// kernels fall back to mprotect(PROT_NONE).
#pragma once

#include "weft/detail/mutex.hpp"
#include "weft/detail/thread_annotations.hpp"
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace weft::detail {

struct stack_region {
  std::uintptr_t guard_lo = 0;  // lowest byte of the guard region
  std::uintptr_t lo = 0;        // lowest usable byte (= end of guard)
  std::uintptr_t hi = 0;        // one past the highest usable byte (stack top)
  std::size_t usable() const noexcept { return hi - lo; }
};

class stack_pool {
 public:
  // `usable_bytes` is rounded up to whole pages.
  explicit stack_pool(std::size_t usable_bytes);
  ~stack_pool();
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;

  stack_region acquire();              // thread-safe
  void release(const stack_region& s) noexcept;  // thread-safe
  std::size_t usable_size() const noexcept { return usable_; }
  std::size_t stacks_in_use() const noexcept;

  static constexpr std::size_t guard_bytes = 64 * 1024;

 private:
  void add_slab() WEFT_REQUIRES(mutex_);
  std::size_t usable_;
  std::size_t stride_;  // guard + usable
  mutable mutex mutex_;
  std::vector<stack_region> free_ WEFT_GUARDED_BY(mutex_);
  std::vector<std::pair<void*, std::size_t>> slabs_ WEFT_GUARDED_BY(mutex_);
  std::size_t in_use_ WEFT_GUARDED_BY(mutex_) = 0;
};

}  // namespace weft::detail
