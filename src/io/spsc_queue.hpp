// weft — a bounded lock-free single-producer single-consumer queue: the
// communication queue from a worker to its I/O thread (paper 000 §3.2).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "weft/detail/chase_lev_deque.hpp"  // cache_line

namespace weft::detail {

template <class T, std::size_t Capacity>
class spsc_queue {
  static_assert((Capacity & (Capacity - 1)) == 0, "capacity must be a power of two");

 public:
  // Producer only. Returns false when full.
  bool push(T v) noexcept {
    // relaxed: only the producer writes tail_.
    std::size_t t = tail_.load(std::memory_order_relaxed);
    // acquire: pairs with pop()'s release of head_; the slot is free to reuse.
    if (t - head_.load(std::memory_order_acquire) == Capacity) return false;
    slots_[t & (Capacity - 1)] = v;
    // release: publishes the slot to the consumer.
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  // Consumer only. Returns false when empty.
  bool pop(T& out) noexcept {
    // relaxed: only the consumer writes head_.
    std::size_t h = head_.load(std::memory_order_relaxed);
    // acquire: pairs with push()'s release of tail_.
    if (h == tail_.load(std::memory_order_acquire)) return false;
    out = slots_[h & (Capacity - 1)];
    // release: the producer may now reuse the slot.
    head_.store(h + 1, std::memory_order_release);
    return true;
  }

 private:
  alignas(cache_line) std::atomic<std::size_t> head_{0};
  alignas(cache_line) std::atomic<std::size_t> tail_{0};
  T slots_[Capacity];
};

}  // namespace weft::detail
