// weft — the fiber pool: fibers (a stack plus a saved context) shared by one
// runtime's workers, each worker also keeping a small private cache. Fibers
// are type-stable: freed only by free_all (~scheduler).
#pragma once

#include <cstddef>
#include <vector>

#include "fiber.hpp"
#include "stack_pool.hpp"
#include "weft/detail/mutex.hpp"
#include "weft/detail/thread_annotations.hpp"

namespace weft::detail {

class fiber_pool {
 public:
  // A worker's private cache: owner thread only, no lock.
  using cache = std::vector<fiber*>;

  // New fibers belong to `owner`, resume through `resume` (their
  // resume_item) and start at `entry` after every acquire.
  fiber_pool(stack_pool& stacks, scheduler* owner, work_item::execute_fn resume,
             void (*entry)(ctx::transfer_t)) noexcept
      : stacks_(stacks), owner_(owner), resume_(resume), entry_(entry) {}
  fiber_pool(const fiber_pool&) = delete;
  fiber_pool& operator=(const fiber_pool&) = delete;

  // A fiber ready to start at `entry`: from `c`, else the shared free list,
  // else a new one (throws if its stack cannot be mapped).
  fiber* acquire(cache& c) WEFT_EXCLUDES(mutex_);
  // Back to `c`, or to the shared free list if `c` is full.
  void recycle(cache& c, fiber* f) noexcept WEFT_EXCLUDES(mutex_);
  // Frees every fiber ever created (no fiber may be running).
  void free_all() noexcept WEFT_EXCLUDES(mutex_);

 private:
  static constexpr std::size_t cache_cap = 16;
  stack_pool& stacks_;
  scheduler* const owner_;
  const work_item::execute_fn resume_;
  void (*const entry_)(ctx::transfer_t);
  mutex mutex_;
  fiber* free_ WEFT_GUARDED_BY(mutex_) = nullptr;
  std::vector<fiber*> all_ WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::detail
