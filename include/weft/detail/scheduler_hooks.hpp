// weft — the narrow interface between the header-only templates (task_group,
// fork_join, async, ivar) and the compiled scheduler in src/.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "weft/detail/arch.hpp"
#include "weft/detail/chase_lev_deque.hpp"
#include "weft/detail/completion.hpp"
#include "weft/detail/work_item.hpp"

#ifndef WEFT_PRIORITY_CHECKS
#ifdef NDEBUG
#define WEFT_PRIORITY_CHECKS 0
#else
#define WEFT_PRIORITY_CHECKS 1
#endif
#endif

namespace weft::detail {

class scheduler;

inline constexpr unsigned priority_levels = 8;        // level 0 is the most urgent
inline constexpr unsigned default_priority_level = 3;  // untagged tasks

// The part of a worker that inline code touches. The full worker lives in
// src/worker.hpp and derives from this.
// Single-writer counter (the owning worker), read by any thread.
struct owned_counter {
  std::atomic<std::int64_t> value{0};
  // relaxed load: only the owner writes. release store: a reader that sees the
  // new value sees what preceded it (for the task counters: the task's effects
  // and its children's start counts).
  void add(std::int64_t n = 1) noexcept {
    value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
  // acquire: pairs with add().
  std::int64_t read() const noexcept { return value.load(std::memory_order_acquire); }
};

struct worker_view {
  // The deque of the fiber this worker is running. Invariant: a running fiber
  // and its worker's active deque are paired — when the fiber suspends, the
  // deque is suspended with it, and whoever resumes the fiber adopts the deque.
  // A frame must re-read it after a suspension point: the task may resume on
  // another worker (fork_join and task_group do).
  // Written and read only by the thread running this worker (relaxed
  // everywhere): thieves never read it; they load level_active (acquire).
  std::atomic<chase_lev_deque*> active{nullptr};
  // The worker's deque of each priority level (active == level_active[level]).
  // Owner writes (release); thieves of that level read (acquire).
  std::atomic<chase_lev_deque*> level_active[priority_levels] = {};
  // The level this worker runs now. Owner only.
  unsigned level = default_priority_level;
  // False in priority-oblivious mode, where every task runs at the default
  // level whatever its priority (run-time inversion checks are then off).
  bool tracks_levels = true;
  // Set by an APS quantum when this worker should move to another level; the
  // worker checks it at strand boundaries (spawn, sync, async, get, yield).
  // Checked relaxed (a hint, coherence makes it seen soon); the quantum
  // stores it with release after assigned_level, and the slow path clears it
  // with an acquire exchange before reading assigned_level
  // (scheduler::switch_level), so no move is lost.
  std::atomic<bool> level_switch_pending{false};
  // Number of parked workers in this worker's runtime (see src/parking.hpp).
  const std::atomic<int>* sleepers = nullptr;
  scheduler* sched = nullptr;
  unsigned index = 0;
  // Async tasks started / finished on this worker; the runtime's destructor
  // waits until the sums match (src/scheduler.cpp, outstanding_tasks).
  alignas(cache_line_size) owned_counter tasks_started;
  owned_counter tasks_finished;
};

// The worker running the calling thread, or nullptr on a thread that is not a
// weft worker. Not inlined on purpose: a task may migrate between threads at
// any suspension point, and an inlined thread_local access could be cached by
// the compiler across such a point.
worker_view* current_worker() noexcept;
// As above, but throws std::logic_error naming `what` outside a runtime.
worker_view* require_worker(const char* what);

// Wakes one parked worker (if any). Called after new stealable work appeared.
void wake_one_sleeper(worker_view* w) noexcept;

// Pushes a task onto the calling worker's active deque and wakes a sleeper if
// one is parked. The signal fence is the light half of an asymmetric Dekker
// handshake; the parking worker issues the heavy half (membarrier), so a push
// that misses a new sleeper is always seen by that sleeper's re-scan
// (docs/design.md §Parking).
inline void push_task(worker_view* w, chase_lev_deque* d, work_item* item) {
  d->push(item);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // relaxed: see above; correctness comes from the asymmetric fence pair.
  if (w->sleepers->load(std::memory_order_relaxed) > 0) wake_one_sleeper(w);
}

// Submits work from any thread (worker or not) to a runtime's injection queue
// of the given level (-1: the default level).
void inject(scheduler* s, work_item* item, int level = -1);

// A strand boundary (spawn, sync, async, get): if the APS master asked this
// worker to change level, suspend the calling task (it stays ready at its
// level) and move. May resume the caller on another worker.
void switch_level(worker_view* w);
inline void strand_boundary(worker_view* w) {
  if (w->level_switch_pending.load(std::memory_order_relaxed)) [[unlikely]] switch_level(w);
}

// Work of a level other than the default runs only while the APS master
// thread runs. Call before queuing work of `level` (-1: the caller's): starts
// the master if it does not run yet, and throws std::system_error ("weft:
// cannot start the priority scheduler's master thread") if it cannot, before
// anything is queued, so a failure leaves nothing behind and a later call
// tries again.
void start_priority_master(scheduler* s);
inline void prepare_level(scheduler* s, int level) {
  if (level >= 0 && static_cast<unsigned>(level) != default_priority_level) start_priority_master(s);
}

// Pushes a task of level `level` (-1: the caller's); prepare_level must have
// been called for it. Work of another level goes to the worker's deque of
// that level, and the master is told (it may give that level a worker early).
void note_level_spawn(worker_view* w, unsigned level) noexcept;
inline void push_task_at(worker_view* w, int level, work_item* item) {
  if (level < 0 || static_cast<unsigned>(level) == w->level) {
    push_task(w, w->active.load(std::memory_order_relaxed), item);
  } else {
    // relaxed: the worker's own slot, written by this thread.
    push_task(w, w->level_active[level].load(std::memory_order_relaxed), item);
    note_level_spawn(w, static_cast<unsigned>(level));
  }
}

// Run-time priority check (builds with WEFT_PRIORITY_CHECKS): throws
// weft::priority_inversion if the calling task is more urgent than `awaited`.
[[noreturn]] void report_priority_inversion(unsigned waiter, unsigned awaited);
// The calling task's level if waiting on `awaited` would be an inversion (in
// builds with WEFT_PRIORITY_CHECKS), else -1.
inline int inverted_waiter_level(unsigned awaited) {
#if WEFT_PRIORITY_CHECKS
  if (awaited >= priority_levels) return -1;
  worker_view* w = current_worker();
  if (w && w->tracks_levels && awaited > w->level) return static_cast<int>(w->level);
#else
  (void)awaited;
#endif
  return -1;
}

inline void check_wait_priority(unsigned awaited) {
#if WEFT_PRIORITY_CHECKS
  if (awaited >= priority_levels) return;  // unknown (promise, ivar)
  worker_view* w = current_worker();
  if (w && w->tracks_levels && awaited > w->level) report_priority_inversion(w->level, awaited);
#else
  (void)awaited;
#endif
}

// Blocks the caller until c is set: suspends the calling task's fiber inside a
// runtime (ProWS), or blocks the calling thread on a condition variable.
void wait(completion& c);
// As wait, with a deadline. Returns true if c was set.
bool wait_until(completion& c, std::chrono::steady_clock::time_point deadline);

// Small-object allocation with per-thread free lists, for task records.
void* allocate_small(std::size_t bytes);
void deallocate_small(void* p, std::size_t bytes) noexcept;

// Pops `item` from the calling worker's active deque if it is the bottom item,
// so that a get() on a not-yet-started child runs it inline instead of
// suspending. Returns true if the caller now owns (and must execute) the item.
inline bool try_take_own_bottom(work_item* item) {
  worker_view* w = current_worker();
  if (!w) return false;
  return w->active.load(std::memory_order_relaxed)->pop_if(item);
}

// Counts asynchronous tasks (async, detached work) not yet finished, so that a
// runtime's destructor can wait for them. Per-worker counters, no sharing.
void count_external_start(scheduler* s) noexcept;
inline void task_started(worker_view* w, scheduler* s) noexcept {
  if (w && w->sched == s) {
    w->tasks_started.add();
  } else {
    count_external_start(s);
  }
}
// Called by the worker that finished the task.
inline void task_finished() noexcept { current_worker()->tasks_finished.add(); }

}  // namespace weft::detail
