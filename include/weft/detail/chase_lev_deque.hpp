// weft — the Chase-Lev work-stealing deque.
//
// Follows D. Chase and Y. Lev, "Dynamic circular work-stealing deque" (SPAA 2005)
// with the C11 memory orders of N. M. Lê, A. Pop, A. Cohen, F. Zappa Nardelli,
// "Correct and efficient work-stealing for weak memory models" (PPoPP 2013),
// Figure 1, with one change: `bottom` is published with a release store (instead
// of a release fence + relaxed store) so that ThreadSanitizer, which does not
// model fences, sees the synchronisation. On x86-64 both compile to a plain mov.
//
// Roles. One *owner* at a time pushes and pops at the bottom; any number of
// thieves steal at the top. In weft the owner is the worker whose running fiber
// the deque belongs to. While the fiber is suspended the deque has no owner, and
// exactly one thread — the one that completes the awaited event — acts as owner
// for a single push (the fiber's continuation), see docs/design.md §Suspension.
// Ownership hand-offs always go through a release/acquire pair (a lock or an
// atomic RMW), so the new owner sees the previous owner's `bottom`.
//
// Indices only grow (modulo pop/undo), and a deque is never freed while its
// runtime lives, so a thief holding a stale pointer to a recycled deque still
// performs a valid steal: its CAS on `top` decides.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "weft/detail/arch.hpp"
#include "weft/detail/work_item.hpp"

namespace weft::detail {

class chase_lev_deque {
 public:
  explicit chase_lev_deque(std::size_t log2_capacity = 5)
      : array_(new ring(log2_capacity)) {}
  ~chase_lev_deque() {
    // relaxed: no other thread uses a deque being destroyed.
    delete array_.load(std::memory_order_relaxed);
    for (ring* r : retired_) delete r;
  }
  chase_lev_deque(const chase_lev_deque&) = delete;
  chase_lev_deque& operator=(const chase_lev_deque&) = delete;

  // Owner only.
  void push(work_item* item) {
    // relaxed: only the owner writes bottom.
    std::int64_t b = bottom_.load(std::memory_order_relaxed);
    // acquire: pairs with a thief's CAS on top so we never overwrite a slot a
    // thief is still reading after it advanced top.
    std::int64_t t = top_.load(std::memory_order_acquire);
    ring* a = array_.load(std::memory_order_relaxed);
    if (b - t > static_cast<std::int64_t>(a->mask)) a = grow(a, b, t);
    a->put(b, item);
    // release: publishes the slot (and the item's contents) to thieves, which
    // load bottom with acquire in steal().
    bottom_.store(b + 1, std::memory_order_release);
  }

  // Owner only. Returns nullptr when empty (or when a thief won the last item).
  work_item* pop() {
    std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    ring* a = array_.load(std::memory_order_relaxed);
#if WEFT_HAS_TSAN
    // TSan build: the same Dekker handshake with seq_cst operations instead
    // of a fence (TSan models these).
    bottom_.exchange(b, std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_seq_cst);
#else
    bottom_.store(b, std::memory_order_relaxed);
    // seq_cst fence: orders the bottom store before the top load, the Dekker
    // handshake with steal()'s fence (Lê et al. Fig. 1, line 12).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_relaxed);
#endif
    if (t > b) {  // empty
      bottom_.store(b + 1, std::memory_order_relaxed);
      return nullptr;
    }
    work_item* x = a->get(b);
    if (t == b) {
      // Last item: race the thieves for it through top.
      // seq_cst: single total order with the thieves' CAS on top.
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed))
        x = nullptr;
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return x;
  }

  // Owner only: pops the bottom item only if it is `expected`. Returns true if
  // the caller now owns `expected`. One pass: the slot is read before the
  // claim (only the owner writes slots), the fence is paid only on a match.
  bool pop_if(work_item* expected) {
    std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    ring* a = array_.load(std::memory_order_relaxed);
    // A stale slot of an empty deque may hold `expected` too; the top check
    // below rejects that case.
    if (a->get(b) != expected) return false;
    return pop() == expected;
  }

  enum class steal_result { success, empty, lost_race };

  // Any thread.
  steal_result steal(work_item*& out) {
    // acquire: pairs with the release CAS/stores of top by other thieves/owner.
#if WEFT_HAS_TSAN
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    std::int64_t b = bottom_.load(std::memory_order_seq_cst);
#else
    std::int64_t t = top_.load(std::memory_order_acquire);
    // seq_cst fence: the thief's half of the Dekker handshake with pop().
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // acquire: pairs with push()'s release store; makes the slot and the item's
    // contents visible.
    std::int64_t b = bottom_.load(std::memory_order_acquire);
#endif
    if (t >= b) return steal_result::empty;
    // acquire: pairs with grow()'s release store of a new ring.
    ring* a = array_.load(std::memory_order_acquire);
    work_item* x = a->get(t);
    // seq_cst: one total order of all claims on top (owner's pop included).
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed))
      return steal_result::lost_race;
    out = x;
    return steal_result::success;
  }

  // Any thread; a racy hint used to decide whether a deque is worth visiting.
  bool looks_empty() const {
    // acquire on both: a hint only, but it must not be older than the last
    // push we synchronised with.
    return top_.load(std::memory_order_acquire) >=
           bottom_.load(std::memory_order_acquire);
  }

 private:
  struct ring {
    explicit ring(std::size_t log2) : mask((std::size_t{1} << log2) - 1),
        slots(new std::atomic<work_item*>[mask + 1]) {}
    std::size_t mask;
    std::unique_ptr<std::atomic<work_item*>[]> slots;
    // relaxed: slots are published by the bottom release store / ring release.
    void put(std::int64_t i, work_item* x) {
      slots[static_cast<std::size_t>(i) & mask].store(x, std::memory_order_relaxed);
    }
    work_item* get(std::int64_t i) const {
      return slots[static_cast<std::size_t>(i) & mask].load(std::memory_order_relaxed);
    }
  };

  ring* grow(ring* old, std::int64_t b, std::int64_t t) {
    std::size_t log2 = 0;
    while ((std::size_t{1} << log2) <= old->mask) ++log2;
    ring* bigger = new ring(log2 + 1);
    for (std::int64_t i = t; i < b; ++i) bigger->put(i, old->get(i));
    // Thieves may still read the old ring; it is freed with the deque.
    retired_.push_back(old);
    // release: a thief that loads the new ring sees its copied slots.
    array_.store(bigger, std::memory_order_release);
    return bigger;
  }

  alignas(cache_line_size) std::atomic<std::int64_t> top_{0};
  alignas(cache_line_size) std::atomic<std::int64_t> bottom_{0};
  alignas(cache_line_size) std::atomic<ring*> array_;
  std::vector<ring*> retired_;  // owner only
};

}  // namespace weft::detail
