// weft — process-wide counts of the fibers, fiber stacks and deques alive
// now, over every runtime of the process. Nothing in weft reads them: they
// exist for the tests' leak check (tests/test_util.cpp compares them before
// and after every test: a destroyed runtime must leave each count where it
// found it).
//
// Counted where the object enters and leaves its pool's ownership, which is
// off the hot paths (pools recycle; these sites run only when a pool grows or
// is freed):
//   fibers  fiber_pool::acquire (new fiber) / fiber_pool::free_all
//           (delete); a worker's native context is not counted
//   stacks  stack_pool::acquire / stack_pool::release (stacks handed out)
//   deques  deque_pool::acquire (new deque_record) / deque_pool::free_all
//           (delete)
//
// Internal: not installed. The tests reach it by a relative include.
#pragma once

#include <atomic>

namespace weft::detail {

struct live_object_counts {
  // Every access is relaxed: these are counters, nothing is published through
  // them and no decision in weft depends on them. A test reads them after the
  // runtime's destructor has joined every thread that changed them (the join
  // orders those changes before the read), so the relaxed read is exact then.
  std::atomic<long> fibers{0};
  std::atomic<long> stacks{0};
  std::atomic<long> deques{0};

  static void add(std::atomic<long>& count, long n) noexcept {
    count.fetch_add(n, std::memory_order_relaxed);  // relaxed: see above
  }
  static long read(const std::atomic<long>& count) noexcept {
    return count.load(std::memory_order_relaxed);  // relaxed: see above
  }
};

// The one instance (constant-initialised: no guard, no static-order issue).
inline live_object_counts& live_objects() noexcept {
  constinit static live_object_counts counts;
  return counts;
}

}  // namespace weft::detail
