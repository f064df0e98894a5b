// weft — the per-level deque pool (deque_pool.hpp).
#include "deque_pool.hpp"

#include "live_objects.hpp"

#include "weft/detail/assert.hpp"

namespace weft::detail {

// Deques are pooled per level and never change level, so a thief holding a
// stale pointer still steals work of the level it looked for.
deque_record* deque_pool::acquire(cache& c, unsigned level) {
  auto& mine = c[level];
  if (!mine.empty()) {
    deque_record* d = mine.back();
    mine.pop_back();
    return d;
  }
  lock_guard lock(mutex_);
  if (deque_record* d = free_[level]) {
    free_[level] = d->next_free;
    return d;
  }
  auto* d = new deque_record();
  d->level = level;  // published with the deque (release store or set lock)
  all_.push_back(d);
  live_object_counts::add(live_objects().deques, 1);
  return d;
}

void deque_pool::recycle(cache& c, deque_record* d) noexcept {
  WEFT_ASSERT(d->looks_empty(), "recycle_deque: only an empty deque is recycled");
  auto& mine = c[d->level];
  if (mine.size() < cache_cap) {
    mine.push_back(d);
    return;
  }
  lock_guard lock(mutex_);
  d->next_free = free_[d->level];
  free_[d->level] = d;
}

void deque_pool::free_all() noexcept {
  lock_guard lock(mutex_);
  for (deque_record* d : all_) delete d;
  live_object_counts::add(live_objects().deques, -static_cast<long>(all_.size()));
  all_.clear();
}

}  // namespace weft::detail
