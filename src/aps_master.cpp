// weft — the APS master (I-Cilk §3 and §5): every quantum L it measures
// each level's utilisation, computes desires (Figure 1), allocates workers
// top-down, and tells the workers whose level changed through a flag they
// check at strand boundaries and between tasks.
#include "aps_master.hpp"

#include <algorithm>
#include <vector>

#include "own_threads.hpp"
#include "scheduler.hpp"
#include "weft/detail/aps_policy.hpp"
#include "weft/priority_level.hpp"

namespace weft::detail {

aps_master::aps_master(scheduler& s) noexcept
    : sched_(s),
      quantum_ns_(static_cast<std::uint64_t>(std::chrono::nanoseconds(s.config().aps_quantum).count())),
      stale_ns_(quantum_ns_ * 7 / 8),
      starved_ns_(quantum_ns_ * 63 / 64) {}

worker* aps_master::calling_worker() const noexcept {
  worker* w = this_worker();
  return w && w->sched == &sched_ ? w : nullptr;
}

void aps_master::request_early_quantum(worker* self) noexcept {
  if (try_quantum(self)) return;
  // Another thread runs a quantum whose measurement may have missed the
  // caller's news: the master runs one more. relaxed: a hint; the
  // notification (under mutex_) wakes a master about to wait.
  if (early_.exchange(true, std::memory_order_relaxed)) return;  // already asked
  { lock_guard lock(mutex_); }
  cv_.notify_one();
}

bool aps_master::try_quantum(worker* self) noexcept {
  if (!quantum_mutex_.try_lock()) return false;
  run_quantum(self);
  quantum_mutex_.unlock();
  return true;
}

void aps_master::start() {
  // acquire: pairs with the release store below (the thread exists).
  if (running_.load(std::memory_order_acquire)) return;
  lock_guard lock(mutex_);
  if (thread_.joinable() || stop_) return;
  {
    // The quantum's state, before any thread may run a quantum (running_).
    lock_guard q(quantum_mutex_);
    const unsigned P = sched_.worker_count();
    desire_.assign(priority_levels, 0.0);
    allot_.assign(priority_levels, 0);
    desire_[default_priority_level] = P;
    allot_[default_priority_level] = P;
    seen_busy_.assign(P, std::vector<std::int64_t>(priority_levels, 0));
    credited_span_.assign(P, 0);
    credited_ns_.assign(P, 0);
    quantum_start_ = sched_.now_ns();
    last_quantum_ns_ = quantum_start_;
    allot_ns_.assign(priority_levels, 0.0);
    // relaxed (both): hints. The state itself is ordered by quantum_mutex_:
    // running_ is read relaxed, and run_quantum skips a state not yet filled.
    due_ns_.store(quantum_start_ + quantum_ns_, std::memory_order_relaxed);
    idle_quanta_.store(0, std::memory_order_relaxed);
  }
  // Started before the flag is set: if it cannot be, the flag stays false,
  // the caller queues nothing, and the next spawn of a prioritised task tries
  // again.
  thread_ = start_thread("the priority scheduler's master thread", [this] { loop(); });
  // release: see above.
  running_.store(true, std::memory_order_release);
}

void aps_master::stop() noexcept {
  std::thread master;
  {
    lock_guard lock(mutex_);
    stop_ = true;
    master = std::move(thread_);  // joined outside the lock the master takes
  }
  cv_.notify_all();
  if (master.joinable()) master.join();
  // Other threads run quanta too (a timer firing, a blocking helper's
  // inject, a promise set from outside), and a quantum reads the workers'
  // deques: wait for the one running (if any) and close the quantum, so that
  // none runs while or after the scheduler frees them.
  lock_guard q(quantum_mutex_);
  closed_ = true;
}

// The backup: runs the quantum when no worker did (every worker in a long
// strand, or all parked), and the early quanta other threads ask for while
// one runs. While the workers keep the quanta up to date, or nothing happens,
// it naps 10 ms at a time (an idle runtime is not woken 2,000 times a second,
// and a busy one does not lose a core's time slices to it).
void aps_master::loop() {
  const auto L = std::chrono::nanoseconds(sched_.config().aps_quantum);
  unsigned skipped = 0;  // wake-ups in a row that found the quantum done by a worker
  unique_lock lock(mutex_);
  for (;;) {
    // The master runs a quantum only when it is overdue by a whole L (the
    // workers at their boundaries run it before that), or 10 ms at a time
    // when the workers keep it up to date or nothing happens. relaxed: hints.
    const bool backup = skipped >= 4 || idle_quanta_.load(std::memory_order_relaxed) > 20;
    const std::uint64_t due = due_ns_.load(std::memory_order_relaxed);
    const std::uint64_t now = sched_.now_ns();
    auto nap = backup ? std::chrono::nanoseconds(std::chrono::milliseconds(10)) : L;
    if (!backup && due > now) nap += std::chrono::nanoseconds(due - now);
    // As cv_.wait_for with a predicate: until stopped, asked for an
    // early quantum, or the nap is over. relaxed: early_ is a hint.
    const auto wake_at = std::chrono::steady_clock::now() + nap;
    while (!stop_ && !early_.load(std::memory_order_relaxed) &&
           lock.wait_until(cv_, wake_at) != std::cv_status::timeout) {
    }
    if (stop_) return;
    // relaxed: a hint; a request made between the wait and this exchange
    // is served by this quantum, which starts after it.
    const bool early = early_.exchange(false, std::memory_order_relaxed);
    lock.unlock();
    // relaxed: a hint (a worker that ran the quantum moved it on).
    if (!early && sched_.now_ns() < due_ns_.load(std::memory_order_relaxed) +
                                        static_cast<std::uint64_t>(L.count())) {
      ++skipped;
    } else {
      skipped = 0;
      lock_guard q(quantum_mutex_);
      run_quantum(nullptr);
    }
    lock.lock();
  }
}

void aps_master::run_quantum(worker* self) noexcept {
  // running() is read relaxed by the callers: a thread that saw it set may
  // in theory lock before start() has filled in the state. Then skip.
  if (seen_busy_.size() != sched_.worker_count()) return;
  if (closed_) return;  // stop() ran: the deques may be gone
  const std::uint64_t now = sched_.now_ns();
  // relaxed: a hint (quantum_if_due); set first, so that workers reaching a
  // boundary meanwhile do not queue up for the lock.
  due_ns_.store(now + quantum_ns_, std::memory_order_relaxed);
  quantum q;
  // An early quantum (work arrived at a level without a worker, a level ran
  // dry) may follow the last one by microseconds. Utilisation over such a
  // window says nothing (a worker that just moved has hardly run), and
  // Figure 1 would halve a desire on it — several times in a burst of early
  // quanta. So a quantum less than L/4 after the last measured one measures
  // nothing (the window goes on growing into the next quantum) and applies
  // only Figure 1's transitions: work appeared at a level or left it.
  const std::uint64_t window = now > quantum_start_ ? now - quantum_start_ : 0;
  q.short_window = window * 4 < quantum_ns_;
  // Worker-time each level was allotted since the last quantum of any kind:
  // utilisation's denominator over a window that short quanta split.
  const double since_last = static_cast<double>(now > last_quantum_ns_ ? now - last_quantum_ns_ : 0);
  for (unsigned l = 0; l < priority_levels; ++l) allot_ns_[l] += allot_[l] * since_last;
  last_quantum_ns_ = now;
  if (q.short_window) {
    q.busy.assign(priority_levels, 0.0);
    q.running_at.assign(priority_levels, false);  // compute_desires reads the spans
  } else {
    quantum_start_ = now;
    measure(q, now);
  }
  compute_desires(q);
  if (!q.short_window) allot_ns_.assign(priority_levels, 0.0);  // a new window starts
  allocate(q);
  const bool changed = assign(self);
  wake(q, changed);
}

// Busy time per level over the quantum: spans that ended (busy_ns deltas)
// plus the spans in progress, minus what earlier quanta already credited.
void aps_master::measure(quantum& q, std::uint64_t now) {
  const unsigned P = sched_.worker_count();
  q.busy.assign(priority_levels, 0.0);
  q.running_at.assign(priority_levels, false);
  for (unsigned i = 0; i < P; ++i) {
    worker* w = sched_.workers_[i].get();
    for (unsigned l = 0; l < priority_levels; ++l) {
      std::int64_t b = w->busy_ns[l].read();
      q.busy[l] += static_cast<double>(b - seen_busy_[i][l]);
      seen_busy_[i][l] = b;
    }
    // acquire: pairs with begin_span/end_span's release stores.
    std::uint64_t sp = w->span.load(std::memory_order_acquire);
    if (credited_span_[i] && credited_span_[i] != sp) {
      // The span we credited ended; its full length is in busy_ns now.
      static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
      q.busy[credited_span_[i] & 7] -= static_cast<double>(credited_ns_[i]);
      credited_span_[i] = 0;
      credited_ns_[i] = 0;
    }
    if (sp) {
      std::uint64_t start = sp >> 4;
      std::uint64_t so_far = now > start ? now - start : 0;
      static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
      q.busy[sp & 7] += static_cast<double>(so_far - credited_ns_[i]);
      q.running_at[sp & 7] = true;
      credited_span_[i] = sp;
      credited_ns_[i] = so_far;
    }
  }
}

// Which levels have work, and each level's desire for the next quantum
// (I-Cilk Figure 1).
void aps_master::compute_desires(quantum& q) {
  const unsigned P = sched_.worker_count();
  const double delta = sched_.config().aps_efficiency;
  const double rho = sched_.config().aps_responsiveness;
  q.anything = false;
  q.has_work.assign(priority_levels, false);
  for (unsigned l = 0; l < priority_levels; ++l) q.has_work[l] = sched_.level_has_ready_work(l);
  // A task stolen between the span reads above and the ready check would be
  // seen neither running nor ready: read the spans once more.
  for (unsigned i = 0; i < P; ++i) {
    std::uint64_t sp = sched_.workers_[i]->span.load(std::memory_order_acquire);
    static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
    if (sp) q.running_at[sp & 7] = true;
  }
  for (unsigned l = 0; l < priority_levels; ++l) {
    q.has_work[l] = q.has_work[l] || q.running_at[l];
    q.anything = q.anything || q.has_work[l];
    aps::level_quantum lq;
    lq.has_ready_work = q.has_work[l];
    lq.prev_desire = desire_[l];
    lq.prev_allotment = allot_[l];
    // Over the allotments the window really had: quanta inside it (short
    // ones) may have changed them.
    lq.utilization = allot_ns_[l] > 0 ? std::min(1.0, q.busy[l] / allot_ns_[l]) : 0.0;
    lq.measured = !q.short_window;  // a short window: lines 1-2 only
    desire_[l] = aps::next_desire(lq, delta, rho);
    // A level cannot use more workers than there are.
    desire_[l] = std::min(desire_[l], static_cast<double>(P) * rho);
  }
  // relaxed: a hint for the master's nap; only the lock holder writes it.
  idle_quanta_.store(q.anything ? 0 : idle_quanta_.load(std::memory_order_relaxed) + 1,
                     std::memory_order_relaxed);
}

// Workers per level, top-down (I-Cilk §5), published as hints.
void aps_master::allocate(const quantum& q) {
  allot_ = aps::allocate(desire_, q.has_work, sched_.worker_count(), default_priority_level);
  // relaxed: hints for note_level_work.
  for (unsigned l = 0; l < priority_levels; ++l) {
    allotted_[l].store(allot_[l], std::memory_order_relaxed);
    starved_[l].store(q.has_work[l] && allot_[l] == 0, std::memory_order_relaxed);
  }
}

// Assign workers to seats. A worker in the middle of a strand can only move
// at its next strand boundary, so: workers running a task keep a seat at
// their level first, the longest-running strand first (it is the least
// likely to reach a boundary soon); then the rest, idle workers before
// working ones and recent strands before old ones, fill what is left. The
// worker running the quantum (`self`, if any) is at a boundary: it counts as
// the most recent strand, the first to move and the last to keep a seat.
// Returns whether some worker was moved.
bool aps_master::assign(worker* self) {
  const unsigned P = sched_.worker_count();
  struct candidate {
    worker* w;
    bool working;
    unsigned level;        // running level, or the assigned one when idle
    std::uint64_t since;   // span start (working only)
  };
  std::vector<candidate> cands;
  cands.reserve(P);
  for (unsigned i = 0; i < P; ++i) {
    worker* w = sched_.workers_[i].get();
    // acquire: pairs with begin_span's release store.
    std::uint64_t sp = w->span.load(std::memory_order_acquire);
    static_assert(priority_levels <= 8, "worker::span packs the level into 3 bits");
    if (sp) cands.push_back({w, true, static_cast<unsigned>(sp & 7), w == self ? ~0ull : sp >> 4});
    else cands.push_back({w, false, w->assigned_level.load(std::memory_order_relaxed), 0});
  }
  std::vector<unsigned> seats = allot_;
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
    // relaxed: only the holder of quantum_mutex_ writes assigned_level.
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
  return changed;
}

// Parked workers do not see flags: wake them if they were moved, or if a
// level with ready work and an allotment has all its workers parked.
void aps_master::wake(const quantum& q, bool changed) noexcept {
  bool starving = false;
  for (unsigned l = 0; l < priority_levels && !starving; ++l) {
    // A level allotted no worker has none to wake (a starved level: waking
    // everyone would only make them look, park and ask for another quantum).
    if (!q.has_work[l] || allot_[l] == 0) continue;
    bool awake = false;
    // relaxed: assigned_level is ours; parked is a hint (a worker parking
    // just now re-scans for work after announcing itself, parking.hpp).
    for (auto& w : sched_.workers_) {
      if (w->assigned_level.load(std::memory_order_relaxed) == l &&
          !w->parked.load(std::memory_order_relaxed))
        awake = true;
    }
    starving = !awake;
  }
  if (changed || starving) sched_.parking_.wake_all();
}

}  // namespace weft::detail
