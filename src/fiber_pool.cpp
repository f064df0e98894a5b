// weft — the fiber pool (fiber_pool.hpp).
#include "fiber_pool.hpp"

#include "live_objects.hpp"

namespace weft::detail {

fiber* fiber_pool::acquire(cache& c) {
  fiber* f = nullptr;
  if (!c.empty()) {
    f = c.back();
    c.pop_back();
  } else {
    lock_guard lock(mutex_);
    if (free_) {
      f = free_;
      free_ = f->next_free;
    }
  }
  if (!f) {
    f = new fiber(resume_);
    f->owner = owner_;
    try {
      f->stack = stacks_.acquire();
    } catch (...) {
      delete f;
      throw;
    }
    fiber_sanitizer_create(f);
    lock_guard lock(mutex_);
    all_.push_back(f);
    live_object_counts::add(live_objects().fibers, 1);
  }
  fiber_reset(f, entry_);
  return f;
}

void fiber_pool::recycle(cache& c, fiber* f) noexcept {
  if (c.size() < cache_cap) {
    c.push_back(f);
    return;
  }
  lock_guard lock(mutex_);
  f->next_free = free_;
  free_ = f;
}

void fiber_pool::free_all() noexcept {
  lock_guard lock(mutex_);
  for (fiber* f : all_) {
    fiber_sanitizer_destroy(f);
    stacks_.release(f->stack);
    delete f;
    live_object_counts::add(live_objects().fibers, -1);
  }
  all_.clear();
}

}  // namespace weft::detail
