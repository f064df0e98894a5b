// weft — a worker: one OS thread running fibers, with its active deque and
// its share of inactive (suspended or resumable) deques, per ProWS.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "fiber.hpp"
#include "stealable_set.hpp"
#include "weft/detail/assert.hpp"
#include "weft/detail/chase_lev_deque.hpp"
#include "weft/detail/completion.hpp"
#include "weft/detail/thread_annotations.hpp"
#include "weft/detail/scheduler_hooks.hpp"

namespace weft::detail {

// Fibers made ready (resumed) and not yet running, at one level of one
// worker. A wake-up goes to `next` (the fiber it displaces joins the FIFO):
// the worker runs the most recently woken task first — typically the parent
// whose child just delivered what it waited for — so blocking stays
// depth-first and few fibers are alive at once (Go's runnext; Concurrent
// Cilk's per-core ready list, Concurrent Cilk §5.2). Yields and level switches go
// to the back of the FIFO. Thieves take from the front of the FIFO, then
// `next`. Under ProWS a fiber goes to the resumer's queue (locality), under
// ParWS to its home worker's (latency-hiding work stealing).
struct ready_queue {
  spin_lock lock;
  fiber* next WEFT_GUARDED_BY(lock) = nullptr;
  fiber* head WEFT_GUARDED_BY(lock) = nullptr;  // FIFO through fiber::ready_link
  fiber* tail WEFT_GUARDED_BY(lock) = nullptr;
  // Fibers queued (next included); written under lock (release), read as a
  // hint (acquire) by the owner, thieves, parkers and the APS master.
  std::atomic<std::size_t> size_hint{0};
  std::size_t size WEFT_GUARDED_BY(lock) = 0;
};

// Work performed right after a switch, on the fiber switched to, by the same
// thread: it publishes or recycles the fiber switched away from, which must
// not be touched by anyone else before it is fully switched out.
struct post_switch_action {
  void (*fn)(struct worker* w, fiber* prev, void* arg) noexcept = nullptr;
  void* arg = nullptr;
};

struct worker : worker_view {
  std::thread thread;
  fiber native{nullptr};      // the thread's own context; no stack of ours
  fiber* running = nullptr;   // owner only: the fiber this worker runs now
  post_switch_action pending; // owner only
  stealable_set inactive[priority_levels];  // per level
  ready_queue ready[priority_levels];       // per level
  // Consecutive fibers taken from ready[].next while the FIFO had fibers
  // (owner only): bounded so that two tasks waking each other cannot starve
  // the FIFO.
  unsigned next_streak = 0;
  // Times find_work reached the ready FIFO (owner only): every
  // scheduler::steal_turn-th time it steals first (fairness, scheduler_dispatch.cpp).
  unsigned fifo_turns = 0;
  // find_work calls since the last check for I/O polling (owner only).
  unsigned poll_tick = 0;
  // find_work calls since a ready fiber last went before the own deque
  // (scheduler::ready_turn; owner only).
  unsigned ready_turns = 0;

  // --- APS (src/aps_master.cpp) ---
  // The level APS wants this worker at. Only a quantum writes it, under
  // aps_master::quantum_mutex_ on whichever thread runs the quantum (release,
  // before level_switch_pending's release store); the worker reads it with
  // acquire after clearing the flag with an acquire exchange.
  std::atomic<unsigned> assigned_level{default_priority_level};
  // Working time per level, credited when a working span ends (owner writes).
  owned_counter busy_ns[priority_levels];
  // The span in progress: (start_ns << 4 | level), or 0 while looking for
  // work. Owner writes (release), the quantum reads (acquire).
  std::atomic<std::uint64_t> span{0};
  std::atomic<bool> parked{false};  // owner writes, the quantum reads (hint)
  std::uint64_t rng_state = 0;  // owner only
  std::vector<fiber*> fiber_cache;         // owner only (fiber_pool::cache)
  std::vector<deque_record*> deque_cache[priority_levels];  // owner only, per level (deque_pool::cache)

  alignas(cache_line_size) owned_counter steals;
  owned_counter suspensions;
  owned_counter parks;

  std::uint64_t next_random() noexcept {  // xorshift64*
    std::uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
  }
};

// The worker running the calling thread (nullptr elsewhere). Never inlined:
// see current_worker() in scheduler_hooks.hpp.
worker* this_worker() noexcept;
void set_this_worker(worker* w) noexcept;

}  // namespace weft::detail
