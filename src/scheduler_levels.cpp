// weft — moving a worker between priority levels (scheduler's level
// methods): starting the APS master, the level a worker adopts between tasks
// or at a strand boundary when the master asks, and the working spans the
// master measures.
#include <chrono>

#include "scheduler.hpp"
#include "weft/priority_level.hpp"

namespace weft::detail {

void scheduler::start_aps_master() {
  if (!aps_enabled()) return;
  aps_.start();
}

void scheduler::note_level_spawn(unsigned level) noexcept {
  if (!aps_enabled()) return;
  // relaxed: hints. Work arrived at a level with no worker: do not wait out
  // the quantum.
  aps_.note_level_work(level);
}

void scheduler::switch_level(worker* w) {
  // acquire, and an exchange rather than a store: the read-modify-write reads
  // the latest `true` the master stored before our clear and synchronises
  // with its release, so the load below sees that move (a `true` stored
  // after our clear stays set for the next check). A relaxed store could
  // wipe out a `true` whose level we then fail to read.
  w->level_switch_pending.exchange(false, std::memory_order_acquire);
  // acquire: pairs with the master's release store of the level (the flag
  // already orders it; kept for a level stored after the flag was read).
  unsigned target = w->assigned_level.load(std::memory_order_acquire);
  if (target == w->level) return;
  end_span(w);
  // The task stays ready at its level: suspend it and make it resumable at
  // once (its deque is donated to that level's sets), and move the worker.
  suspend(w, [](void* s, fiber* self) noexcept {
    static_cast<scheduler*>(s)->make_resumable(self, resume_kind::yielded);
  }, this, static_cast<int>(target));
}

void switch_level(worker_view* w) {
  auto* wk = static_cast<worker*>(w);
  wk->sched->switch_level(wk);
}

void note_level_spawn(worker_view* w, unsigned level) noexcept { w->sched->note_level_spawn(level); }
void start_priority_master(scheduler* s) { s->start_aps_master(); }

[[noreturn]] void report_priority_inversion(unsigned waiter, unsigned awaited) {
  throw priority_inversion(waiter, awaited);
}

void scheduler::adopt_assigned_level(worker* w) noexcept {
  // relaxed: the flag is a hint; the assignment is read below.
  if (!w->level_switch_pending.load(std::memory_order_relaxed)) return;
  // acquire exchange, not a relaxed store: see switch_level (above);
  // a clear must not wipe out a move whose level it does not read.
  w->level_switch_pending.exchange(false, std::memory_order_acquire);
  // acquire: pairs with the master's release store.
  unsigned target = w->assigned_level.load(std::memory_order_acquire);
  if (target == w->level) return;
  end_span(w);
  WEFT_ASSERT(target < priority_levels, "the master assigns a valid level");
  w->level = target;
  // relaxed (both): active is read only by this worker's own thread
  // (worker_view::active); thieves read level_active, published with release
  // by set_level_deque.
  w->active.store(w->level_active[target].load(std::memory_order_relaxed),
                  std::memory_order_relaxed);
}

// --- APS utilisation accounting (only while the master runs) ------------------

std::uint64_t scheduler::now_ns() const noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_)
          .count());
}

void scheduler::begin_span(worker* w) noexcept {
  // relaxed: set once by note_level_spawn; a late view only delays accounting.
  if (!aps_.running()) return;
  // The level fills bits 0-2 (bit 3 keeps a level-0 span non-zero).
  static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
  WEFT_ASSERT(w->level < priority_levels, "a worker's level is a valid level");
  const std::uint64_t now = now_ns();
  // release: pairs with the master's acquire load.
  w->span.store((now << 4) | w->level | 1ull << 3, std::memory_order_release);
  // A boundary is where a worker can move: run the quantum here when it is
  // due, rather than wait for the master thread to get a core.
  aps_.quantum_if_due(w, now);
}

void scheduler::end_span(worker* w) noexcept {
  // relaxed: only this worker writes its span.
  std::uint64_t sp = w->span.load(std::memory_order_relaxed);
  if (!sp) return;
  std::uint64_t start = sp >> 4;
  static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
  unsigned level = static_cast<unsigned>(sp & 7);
  std::uint64_t now = now_ns();
  w->busy_ns[level].add(static_cast<std::int64_t>(now > start ? now - start : 0));
  // release: pairs with the master's acquire load; a master that sees the
  // span closed sees its busy_ns credit (added just above).
  w->span.store(0, std::memory_order_release);
}

}  // namespace weft::detail

namespace weft::this_task {
priority current_priority() noexcept {
  detail::worker* w = detail::this_worker();
  return priority(w ? w->level : default_priority_level);
}
}  // namespace weft::this_task
