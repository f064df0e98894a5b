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
  w->level_switch_pending.store(false, std::memory_order_relaxed);
  // acquire: pairs with the master's release store.
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
  w->level_switch_pending.store(false, std::memory_order_relaxed);
  // acquire: pairs with the master's release store.
  unsigned target = w->assigned_level.load(std::memory_order_acquire);
  if (target == w->level) return;
  end_span(w);
  w->level = target;
  // release: thieves may look at our active deque of the new level.
  w->active.store(w->level_active[target].load(std::memory_order_relaxed),
                  std::memory_order_release);
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
  // release: pairs with the master's acquire load.
  w->span.store((now_ns() << 4) | w->level | 1ull << 3, std::memory_order_release);
}

void scheduler::end_span(worker* w) noexcept {
  std::uint64_t sp = w->span.load(std::memory_order_relaxed);
  if (!sp) return;
  std::uint64_t start = sp >> 4;
  unsigned level = static_cast<unsigned>(sp & 7);
  std::uint64_t now = now_ns();
  w->busy_ns[level].add(static_cast<std::int64_t>(now > start ? now - start : 0));
  w->span.store(0, std::memory_order_release);
}

}  // namespace weft::detail

namespace weft::this_task {
priority current_priority() noexcept {
  detail::worker* w = detail::this_worker();
  return priority(w ? w->level : default_priority_level);
}
}  // namespace weft::this_task
