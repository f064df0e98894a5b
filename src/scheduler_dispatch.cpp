// weft — the worker loop (scheduler's dispatch methods): pop own work, take
// injected work, steal (random victim, then a random stealable deque of that
// victim: ProWS), park. All at the worker's current priority level; the APS
// master moves workers between levels (src/aps_master.cpp). The order of the
// first looks depends on the policy (steal_policy.hpp): find_work and
// try_steal are templates on it.
#include "io/io_driver.hpp"
#include "weft/detail/arch.hpp"
#include "overflow_guard.hpp"
#include "scheduler.hpp"

namespace weft::detail {

void scheduler::thread_main(worker* w) {
  set_this_worker(w);
  alternate_signal_stack alt;
  fiber_sanitizer_adopt_native(&w->native);
  w->running = &w->native;
  fiber* first = acquire_fiber(w);
  switch_to(w, first, {}, false);
  // Back on the thread's own stack at shutdown (exit_worker switched here and
  // recycled the fiber it left).
  set_this_worker(nullptr);
}

void scheduler::worker_loop() noexcept {
  for (;;) {
    worker* w = this_worker();  // re-read: this fiber may have changed thread
    scheduler* s = w->sched;
    work_item* item = s->with_policy([s, w](auto p) { return s->find_work<decltype(p)>(w); });
    if (!item) s->exit_worker(w);
    item->execute(item);
  }
}

void scheduler::exit_worker(worker* w) noexcept {
  switch_to(w, &w->native, {[](worker* wk, fiber* prev, void*) noexcept {
                              wk->sched->recycle_fiber(wk, prev);
                            },
                            nullptr},
            true);
  __builtin_unreachable();
}

template <class Policy>
bool scheduler::try_steal(worker* thief, work_item*& out) {
  const auto n = static_cast<std::uint64_t>(workers_.size());
  const unsigned level = thief->level;
  for (std::uint64_t tries = 0; tries < 2 * n; ++tries) {
    worker* victim = workers_[thief->next_random() % n].get();
    // A victim's ready fibers are ready work too (the victim may be busy in a
    // long task and not look at them for a while): the oldest first.
    if (victim != thief) {
      if (work_item* f = take_ready<Policy>(thief, victim->ready[level], ready_take::any)) {
        out = f;
        thief->steals.add();
        return true;
      }
    }
    // acquire: pairs with ensure_stealable/remove_from_set's release store.
    std::size_t inactive = victim->inactive[level].size_hint.load(std::memory_order_acquire);
    std::uint64_t pick = inactive ? thief->next_random() % (inactive + 1) : 0;
    bool got = false;
    if (pick == 0 && victim != thief) {
      // acquire: pairs with the victim's release store of a new deque.
      chase_lev_deque* d = victim->level_active[level].load(std::memory_order_acquire);
      for (int attempt = 0; attempt < 4 && !got; ++attempt) {
        auto r = d->steal(out);
        if (r == chase_lev_deque::steal_result::success) got = true;
        if (r == chase_lev_deque::steal_result::empty) break;
      }
    } else if (inactive) {
      got = sets_.steal_from_set(thief, victim, out);
    }
    if (got) {
      thief->steals.add();
      return true;
    }
  }
  return false;
}

bool scheduler::level_has_ready_work(unsigned level) const noexcept {
  // relaxed/acquire hints: the parking handshake (parking.hpp) guarantees that
  // work published before a sleeper announced itself is visible here.
  if (injected_hint_[level].load(std::memory_order_relaxed) != 0) return true;
  for (auto& w : workers_) {
    if (!w->level_active[level].load(std::memory_order_acquire)->looks_empty()) return true;
    if (w->inactive[level].size_hint.load(std::memory_order_acquire) != 0) return true;
    if (w->ready[level].size_hint.load(std::memory_order_acquire) != 0) return true;
  }
  return false;
}

bool scheduler::others_ready(worker* w) const noexcept {
  // relaxed/acquire hints: a yield that misses work published at this very
  // moment only returns at once; the yielding task yields again later.
  if (w->level_switch_pending.load(std::memory_order_relaxed)) return true;
  const unsigned level = w->level;
  if (!w->active.load(std::memory_order_relaxed)->looks_empty()) return true;
  if (injected_hint_[level].load(std::memory_order_relaxed) != 0) return true;
  for (auto& v : workers_) {
    if (v->ready[level].size_hint.load(std::memory_order_acquire) != 0) return true;
    if (v->inactive[level].size_hint.load(std::memory_order_acquire) != 0) return true;
  }
  return false;
}

bool scheduler::has_visible_work(unsigned level) const noexcept {
  return level_has_ready_work(level);
}

// --- worker-polled I/O (netpoll backend) -----------------------------------------

void scheduler::interrupt_poller(void* self) noexcept {
  auto* s = static_cast<scheduler*>(self);
  // acquire: pairs with io()'s release publication.
  if (io_driver* b = s->io_ptr_.load(std::memory_order_acquire)) b->interrupt();
}

unsigned scheduler::poll_io(worker* w) noexcept {
  (void)w;
  // acquire: pairs with io()'s release publication.
  io_driver* b = io_ptr_.load(std::memory_order_acquire);
  if (!b || !b->has_waiters()) return 0;
  // relaxed: hints. A blocked poller is woken by the kernel itself; two
  // concurrent non-blocking polls would only split the same events.
  if (poller_slot_.load(std::memory_order_relaxed)) return 0;
  if (polling_now_.exchange(true, std::memory_order_acquire)) return 0;
  unsigned n = b->poll(false);
  // release: orders this poll before the next poller's (hygiene; the
  // descriptor locks order the operations themselves).
  polling_now_.store(false, std::memory_order_release);
  return n;
}

void scheduler::poll_io_if_due(worker* w) noexcept {
  // Only every 64th call reads the clock.
  if (++w->poll_tick % 64 != 0) return;
  io_driver* b = io_ptr_.load(std::memory_order_acquire);
  if (!b || !b->has_waiters()) return;
  const std::uint64_t now = now_ns();
  // relaxed: a rate limit; two workers polling at once is harmless.
  if (now < next_busy_poll_ns_.load(std::memory_order_relaxed)) return;
  next_busy_poll_ns_.store(now + poll_period_ns, std::memory_order_relaxed);
  poll_io(w);
}

void scheduler::park_worker(worker* w) {
  // acquire: pairs with stop_workers' store; relaxed flag: a hint (a move
  // made while we park also wakes us: the master wakes moved workers).
  auto has_work = [this, w] {
    return stopping_.load(std::memory_order_acquire) ||
           w->level_switch_pending.load(std::memory_order_relaxed) || has_visible_work(w->level);
  };
  io_driver* b = io_ptr_.load(std::memory_order_acquire);
  // One idle worker at a time waits in the backend's poll instead of on the
  // condition variable, while operations wait for readiness. acquire:
  // pairs with the release below (the previous poller is out).
  if (b && b->has_waiters() && !poller_slot_.exchange(true, std::memory_order_acquire)) {
    bool events = false;
    parking_.park_polling(has_work, [&] { events = b->wait_events(true); });
    // Out of the park before completing: the tasks the completions queue on
    // this worker may then wake a parked worker to share them.
    poller_slot_.store(false, std::memory_order_release);
    if (events) b->complete_events();
    return;
  }
  parking_.park(has_work);
}

template <class Policy>
work_item* scheduler::find_work(worker* w) {
  end_span(w);
  // Poll before adopting a new level: a completion for an urgent task runs
  // a quantum that moves this worker (note_level_work), and the move is
  // adopted here, before this worker takes work of its old level.
  poll_io_if_due(w);
  adopt_assigned_level(w);
  // The task woken here last (ready_queue) and the own deque's newest item:
  // depth-first. ProWS pops the deque first (a resumed task may adopt its
  // parked deque only in place of an empty one); ParWS resumes first, as
  // latency-hiding work stealing pushes resumed vertices at the bottom before popping (there
  // the blocked task's deque stayed with the worker, so its older items
  // would otherwise run before it: breadth-first).
  // (Policy::resumes_before_own_deque, steal_policy.hpp.)
  chase_lev_deque* own = w->active.load(std::memory_order_relaxed);
  work_item* item = nullptr;
  if constexpr (Policy::resumes_before_own_deque) {
    item = take_ready<Policy>(w, w->ready[w->level], ready_take::newest);
  } else {
    // Fairness: a worker whose deque never empties (a task that keeps
    // spawning) would never resume its ready fibers under ProWS — an I/O
    // completion or a put from another thread would wait forever. Every
    // ready_turn-th time, a ready fiber goes first (adopt_deque_of then
    // donates the non-empty deque instead of recycling it).
    if (++w->ready_turns % ready_turn == 0)
      item = take_ready<Policy>(w, w->ready[w->level], ready_take::any);
  }
  if (!item) item = own->pop();
  if constexpr (!Policy::resumes_before_own_deque) {
    if (!item) item = take_ready<Policy>(w, w->ready[w->level], ready_take::newest);
  }
  if (item) {
    begin_span(w);
    return item;
  }
  for (;;) {
    // Look for work for a short while (tens of microseconds), then park.
    for (unsigned round = 0; round < 64; ++round) {
      // acquire: pairs with the destructor's store after the drain.
      if (stopping_.load(std::memory_order_acquire)) return nullptr;
      adopt_assigned_level(w);
      const unsigned level = w->level;
      work_item* found = nullptr;
      if constexpr (Policy::resumes_before_own_deque)
        found = take_ready<Policy>(w, w->ready[level], ready_take::newest);
      // relaxed: active is owner-only (worker_view::active).
      if (!found) found = w->active.load(std::memory_order_relaxed)->pop();
      if constexpr (!Policy::resumes_before_own_deque) {
        if (!found) found = take_ready<Policy>(w, w->ready[level], ready_take::newest);
      }
      // Work from outside the runtime before older wake-ups and yields: a
      // task that keeps yielding must not starve it.
      if (!found) found = take_injected(level);
      // Fairness: yielded fibers wait in the FIFO, which a loop of yielding
      // tasks never empties, and stealing (which also takes the work of
      // parked deques, own ones included) comes after it. So every
      // steal_turn-th time the FIFO is reached, steal first: otherwise a
      // task queued in a blocked task's parked deque could wait forever
      // behind yields (seen: an I/O handler spawned before a yielding
      // background, one worker, priority-oblivious mode).
      bool stole = false;
      if (!found && ++w->fifo_turns % steal_turn == 0) stole = try_steal<Policy>(w, found);
      if (!found) found = take_ready<Policy>(w, w->ready[level], ready_take::oldest);
      // I/O that became ready (Go's findrunnable polls here too: before
      // stealing, so that a worker runs the tasks it completes itself).
      if (!found && poll_io(w) > 0) {
        // A completion for a level without a worker runs a quantum
        // (note_level_work) that may move this worker: adopt the move
        // before taking or stealing work of the old level.
        adopt_assigned_level(w);
        found = take_ready<Policy>(w, w->ready[w->level], ready_take::newest);
        if (!found) found = take_ready<Policy>(w, w->ready[w->level], ready_take::oldest);
      }
      if (!found) stole = try_steal<Policy>(w, found);
      if (stole) {
        // More work may be waiting: let a parked worker help (work spreads
        // one wake-up per successful steal, like a wave).
        if (parking_.sleepers().load(std::memory_order_relaxed) > 0 && has_visible_work(w->level))
          parking_.wake_one();
      }
      if (found) {
        begin_span(w);
        return found;
      }
      // APS: our level has nothing to run right now. If another level has
      // work, a quantum moves us there (we are idle: the first to move)
      // before we spin, yield the core to other processes or park — an
      // urgent level that lost its work gives its worker back at once.
      // Rate-limited (quantum_if_stale): a level that often runs dry for a
      // moment, as fork-join does, costs at most one quantum per L/8 (per
      // L/64 for a lone worker of its level while another level starves).
      if (round == 0 && aps_.running()) aps_.quantum_if_stale(w, w->level, now_ns());
      if (round % 8 == 7) {
        std::this_thread::yield();  // oversubscribed: let the working threads run
      } else {
        for (int i = 0; i < 32; ++i) cpu_relax();
      }
    }
    // APS: our level ran dry; run a quantum (it may move us) rather than
    // wait out L.
    if (aps_.running()) request_early_quantum(w);
    w->parks.add();
    // relaxed: a hint for the APS master (it wakes parked workers whose level
    // has work; a stale value costs one spurious wake-up or one quantum).
    w->parked.store(true, std::memory_order_relaxed);
    park_worker(w);
    w->parked.store(false, std::memory_order_relaxed);
  }
}

}  // namespace weft::detail
