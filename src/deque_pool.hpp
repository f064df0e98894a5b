// weft — the deque pool: one runtime's deques, pooled per level (a deque never
// changes level, so a thief holding a stale pointer still steals work of the
// level it looked for), each worker also keeping a small private cache per
// level. Deques are type-stable: freed only by free_all (~scheduler).
#pragma once

#include <cstddef>
#include <vector>

#include "stealable_set.hpp"
#include "weft/detail/mutex.hpp"
#include "weft/detail/thread_annotations.hpp"

namespace weft::detail {

class deque_pool {
 public:
  // A worker's private cache, per level: owner thread only, no lock.
  using cache = std::vector<deque_record*>[priority_levels];

  deque_pool() = default;
  deque_pool(const deque_pool&) = delete;
  deque_pool& operator=(const deque_pool&) = delete;

  // An empty deque of `level`: from `c`, else the shared free list, else new.
  deque_record* acquire(cache& c, unsigned level) WEFT_EXCLUDES(mutex_);
  // Back to `c`, or to the shared free list if `c` is full.
  void recycle(cache& c, deque_record* d) noexcept WEFT_EXCLUDES(mutex_);
  // Frees every deque ever created (no worker may run).
  void free_all() noexcept WEFT_EXCLUDES(mutex_);

 private:
  static constexpr std::size_t cache_cap = 16;
  mutex mutex_;
  deque_record* free_[priority_levels] WEFT_GUARDED_BY(mutex_) = {};
  std::vector<deque_record*> all_ WEFT_GUARDED_BY(mutex_);
};

}  // namespace weft::detail
