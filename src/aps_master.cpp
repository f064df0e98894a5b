// weft — the APS master (paper 001 §3 and §5): every quantum L it measures
// each level's utilisation, computes desires (Figure 1), allocates workers
// top-down, and tells the workers whose level changed through a flag they
// check at strand boundaries and between tasks.
#include <algorithm>
#include <vector>

#include "own_threads.hpp"
#include "scheduler.hpp"
#include "weft/detail/aps_policy.hpp"
#include "weft/priority_level.hpp"

namespace weft::detail {

void scheduler::request_early_quantum() noexcept {
  // relaxed: a hint; a lost request costs at most one quantum.
  if (aps_early_.exchange(true, std::memory_order_relaxed)) return;  // already asked
  aps_cv_.notify_one();
}

void scheduler::start_aps_master() {
  if (!aps_enabled()) return;
  // acquire: pairs with the release store below (the thread exists).
  if (aps_running_.load(std::memory_order_acquire)) return;
  lock_guard lock(aps_mutex_);
  if (aps_thread_.joinable() || aps_stop_) return;
  // Started before the flag is set: if it cannot be, the flag stays false,
  // the caller queues nothing, and the next spawn of a prioritised task tries
  // again.
  aps_thread_ = start_thread("the priority scheduler's master thread", [this] { aps_master_loop(); });
  // release: see above.
  aps_running_.store(true, std::memory_order_release);
}

void scheduler::note_level_spawn(unsigned level) noexcept {
  if (!aps_enabled()) return;
  // relaxed: hints. Work arrived at a level with no worker: do not wait out
  // the quantum.
  if (aps_running_.load(std::memory_order_relaxed) &&
      aps_allotted_[level].load(std::memory_order_relaxed) == 0)
    request_early_quantum();
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

void scheduler::aps_master_loop() {
  const unsigned P = worker_count();
  const double delta = opts_.aps_efficiency;
  const double rho = opts_.aps_responsiveness;
  std::vector<double> desire(priority_levels, 0.0);
  std::vector<unsigned> allot(priority_levels, 0);
  desire[default_priority_level] = P;
  allot[default_priority_level] = P;
  std::vector<std::vector<std::int64_t>> seen_busy(P, std::vector<std::int64_t>(priority_levels, 0));
  std::vector<std::uint64_t> credited_span(P, 0);  // span start (packed) credited so far
  std::vector<std::uint64_t> credited_ns(P, 0);    // of it, this much
  std::uint64_t quantum_start = now_ns();
  unsigned idle_quanta = 0;

  unique_lock lock(aps_mutex_);
  for (;;) {
    // Sleep one quantum (longer when nothing has happened for a while, so an
    // idle runtime is not woken 2,000 times a second).
    auto nap = idle_quanta > 20 ? std::chrono::microseconds(10000) : opts_.aps_quantum;
    // As aps_cv_.wait_for with a predicate: until stopped, asked for an
    // early quantum, or the nap is over. relaxed: aps_early_ is a hint.
    const auto wake_at = std::chrono::steady_clock::now() + nap;
    while (!aps_stop_ && !aps_early_.load(std::memory_order_relaxed) &&
           lock.wait_until(aps_cv_, wake_at) != std::cv_status::timeout) {
    }
    if (aps_stop_) return;
    // relaxed: a hint; a request made between the wait and this store is
    // served by this quantum, which starts now.
    aps_early_.store(false, std::memory_order_relaxed);
    lock.unlock();

    const std::uint64_t now = now_ns();
    const double elapsed = static_cast<double>(std::max<std::uint64_t>(1, now - quantum_start));
    quantum_start = now;

    // Busy time per level over the quantum: spans that ended (busy_ns deltas)
    // plus the spans in progress, minus what earlier quanta already credited.
    std::vector<double> busy(priority_levels, 0.0);
    std::vector<bool> running_at(priority_levels, false);
    for (unsigned i = 0; i < P; ++i) {
      worker* w = workers_[i].get();
      for (unsigned l = 0; l < priority_levels; ++l) {
        std::int64_t b = w->busy_ns[l].read();
        busy[l] += static_cast<double>(b - seen_busy[i][l]);
        seen_busy[i][l] = b;
      }
      // acquire: pairs with begin_span/end_span's release stores.
      std::uint64_t sp = w->span.load(std::memory_order_acquire);
      if (credited_span[i] && credited_span[i] != sp) {
        // The span we credited ended; its full length is in busy_ns now.
        static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
        busy[credited_span[i] & 7] -= static_cast<double>(credited_ns[i]);
        credited_span[i] = 0;
        credited_ns[i] = 0;
      }
      if (sp) {
        std::uint64_t start = sp >> 4;
        std::uint64_t so_far = now > start ? now - start : 0;
        static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
        busy[sp & 7] += static_cast<double>(so_far - credited_ns[i]);
        running_at[sp & 7] = true;
        credited_span[i] = sp;
        credited_ns[i] = so_far;
      }
    }

    bool anything = false;
    std::vector<bool> has_work(priority_levels, false);
    for (unsigned l = 0; l < priority_levels; ++l) has_work[l] = level_has_ready_work(l);
    // A task stolen between the span reads above and the ready check would be
    // seen neither running nor ready: read the spans once more.
    for (unsigned i = 0; i < P; ++i) {
      std::uint64_t sp = workers_[i]->span.load(std::memory_order_acquire);
      static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
      if (sp) running_at[sp & 7] = true;
    }
    for (unsigned l = 0; l < priority_levels; ++l) {
      has_work[l] = has_work[l] || running_at[l];
      anything = anything || has_work[l];
      aps::level_quantum q;
      q.has_ready_work = has_work[l];
      q.prev_desire = desire[l];
      q.prev_allotment = allot[l];
      q.utilization = allot[l] ? std::min(1.0, busy[l] / (allot[l] * elapsed)) : 0.0;
      desire[l] = aps::next_desire(q, delta, rho);
      // A level cannot use more workers than there are.
      desire[l] = std::min(desire[l], static_cast<double>(P) * rho);
    }
    idle_quanta = anything ? 0 : idle_quanta + 1;
    allot = aps::allocate(desire, has_work, P, default_priority_level);
    // relaxed: hints for note_level_spawn/note_level_ready (scheduler.hpp).
    for (unsigned l = 0; l < priority_levels; ++l)
      aps_allotted_[l].store(allot[l], std::memory_order_relaxed);

    // Assign workers to seats. A worker in the middle of a strand can only move
    // at its next strand boundary, so: workers running a task keep a seat at
    // their level first, the longest-running strand first (it is the least
    // likely to reach a boundary soon); then the rest, idle workers before
    // working ones and recent strands before old ones, fill what is left.
    struct candidate {
      worker* w;
      bool working;
      unsigned level;        // running level, or the assigned one when idle
      std::uint64_t since;   // span start (working only)
    };
    std::vector<candidate> cands;
    cands.reserve(P);
    for (unsigned i = 0; i < P; ++i) {
      worker* w = workers_[i].get();
      // acquire: pairs with begin_span's release store.
      std::uint64_t sp = w->span.load(std::memory_order_acquire);
      static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
      if (sp) cands.push_back({w, true, static_cast<unsigned>(sp & 7), sp >> 4});
      else cands.push_back({w, false, w->assigned_level.load(std::memory_order_relaxed), 0});
    }
    std::vector<unsigned> seats = allot;
    std::vector<int> target(P, -1);
    std::vector<std::size_t> order(P);
    for (std::size_t i = 0; i < P; ++i) order[i] = i;
    // Pass 1: running strands keep their level, oldest first.
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (cands[a].working != cands[b].working) return cands[a].working;
      return cands[a].since < cands[b].since;
    });
    for (std::size_t k : order) {
      if (!cands[k].working) continue;
      if (seats[cands[k].level] > 0) {
        --seats[cands[k].level];
        target[k] = static_cast<int>(cands[k].level);
      }
    }
    // Pass 2: idle workers keep their assigned level if it has a seat.
    for (std::size_t k = 0; k < P; ++k) {
      if (cands[k].working || seats[cands[k].level] == 0) continue;
      --seats[cands[k].level];
      target[k] = static_cast<int>(cands[k].level);
    }
    // Pass 3: everyone else moves: idle first, then the most recent strands.
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (cands[a].working != cands[b].working) return !cands[a].working;
      return cands[a].since > cands[b].since;
    });
    for (std::size_t k : order) {
      if (target[k] >= 0) continue;
      unsigned l = 0;
      while (l < priority_levels && seats[l] == 0) ++l;
      if (l == priority_levels) l = default_priority_level;  // cannot happen: sum(allot) == P
      else --seats[l];
      target[k] = static_cast<int>(l);
    }
    bool changed = false;
    for (std::size_t k = 0; k < P; ++k) {
      worker* w = cands[k].w;
      auto t = static_cast<unsigned>(target[k]);
      // relaxed: only this thread (the master) writes assigned_level.
      unsigned prev = w->assigned_level.load(std::memory_order_relaxed);
      if (t == prev) continue;
      // release (both): the flag is stored after the level, so a worker whose
      // acquire exchange of the flag (switch_level, adopt_assigned_level)
      // reads this `true` also reads this level or a later one. Relaxed, the
      // flag could be seen (and cleared) before the level: on a weakly
      // ordered CPU the worker would keep its old level and, the flag gone,
      // never look again — a level move lost for good.
      w->assigned_level.store(t, std::memory_order_release);
      w->level_switch_pending.store(true, std::memory_order_release);
      changed = true;
    }
    // Parked workers do not see flags: wake them if they were moved, or if a
    // level with ready work has all its workers parked.
    bool starving = false;
    for (unsigned l = 0; l < priority_levels && !starving; ++l) {
      if (!has_work[l]) continue;
      bool awake = false;
      // relaxed: assigned_level is ours; parked is a hint (a worker parking
      // just now re-scans for work after announcing itself, parking.hpp).
      for (auto& w : workers_) {
        if (w->assigned_level.load(std::memory_order_relaxed) == l &&
            !w->parked.load(std::memory_order_relaxed))
          awake = true;
      }
      starving = !awake;
    }
    if (changed || starving) parking_.wake_all();
    lock.lock();
  }
}

}  // namespace weft::detail

namespace weft::this_task {
priority current_priority() noexcept {
  detail::worker* w = detail::this_worker();
  return priority(w ? w->level : default_priority_level);
}
}  // namespace weft::this_task
