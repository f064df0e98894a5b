// weft — the worker loop: pop own work, take injected work, steal (random
// victim, then a random stealable deque of that victim: ProWS), park.
#include <immintrin.h>

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
    work_item* item = w->sched->find_work(w);
    if (!item) w->sched->exit_worker(w);
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

bool scheduler::steal_from_set(worker* thief, worker* victim, work_item*& out) {
  stealable_set& set = victim->inactive;
  set.lock.lock();
  std::size_t n = set.deques.size();
  if (n == 0) {
    set.lock.unlock();
    return false;
  }
  deque_record* d = set.deques[thief->next_random() % n];
  set.lock.unlock();
  // `d` may leave the set (or be adopted, or recycled) right now; deques are
  // type-stable, so the steal below is still valid and its CAS decides.
  for (int attempt = 0; attempt < 4; ++attempt) {
    switch (d->steal(out)) {
      case chase_lev_deque::steal_result::success:
        return true;
      case chase_lev_deque::steal_result::empty:
        retire_if_empty(d);
        return false;
      case chase_lev_deque::steal_result::lost_race:
        break;
    }
  }
  return false;
}

bool scheduler::try_steal(worker* thief, work_item*& out) {
  const auto n = static_cast<std::uint64_t>(workers_.size());
  for (std::uint64_t tries = 0; tries < 2 * n; ++tries) {
    worker* victim = workers_[thief->next_random() % n].get();
    // Parsimonious policy: a victim's resumed tasks are ready work too (the
    // victim may be busy in a long task and not look at them for a while).
    if (parsimonious_ && victim != thief) {
      if (work_item* batch = take_resumed(victim->resumed)) {
        out = batch;
        thief->steals.add();
        return true;
      }
    }
    // acquire: pairs with ensure_stealable/remove_from_set's release store.
    std::size_t inactive = victim->inactive.size_hint.load(std::memory_order_acquire);
    std::uint64_t pick = inactive ? thief->next_random() % (inactive + 1) : 0;
    bool got = false;
    if (pick == 0 && victim != thief) {
      // acquire: pairs with the victim's release store of a new active deque.
      chase_lev_deque* d = victim->active.load(std::memory_order_acquire);
      for (int attempt = 0; attempt < 4 && !got; ++attempt) {
        auto r = d->steal(out);
        if (r == chase_lev_deque::steal_result::success) got = true;
        if (r == chase_lev_deque::steal_result::empty) break;
      }
    } else if (inactive) {
      got = steal_from_set(thief, victim, out);
    }
    if (got) {
      thief->steals.add();
      return true;
    }
  }
  return false;
}

bool scheduler::has_visible_work() const noexcept {
  // relaxed/acquire hints: the parking handshake (parking.hpp) guarantees that
  // work published before a sleeper announced itself is visible here.
  if (injected_hint_.load(std::memory_order_relaxed) != 0) return true;
  for (auto& w : workers_) {
    if (!w->active.load(std::memory_order_acquire)->looks_empty()) return true;
    if (w->inactive.size_hint.load(std::memory_order_acquire) != 0) return true;
    if (w->resumed.size_hint.load(std::memory_order_acquire) != 0) return true;
  }
  return false;
}

work_item* scheduler::find_work(worker* w) {
  chase_lev_deque* own = w->active.load(std::memory_order_relaxed);
  if (work_item* item = own->pop()) return item;
  // Parsimonious policy: the worker's own resumed tasks come before stealing.
  if (parsimonious_) {
    if (work_item* batch = take_resumed(w->resumed)) return batch;
  }
  for (;;) {
    // Look for work for a short while (tens of microseconds), then park.
    for (unsigned round = 0; round < 64; ++round) {
      // acquire: pairs with the destructor's store after the drain.
      if (stopping_.load(std::memory_order_acquire)) return nullptr;
      if (work_item* item = take_injected()) return item;
      if (parsimonious_) {
        if (work_item* batch = take_resumed(w->resumed)) return batch;
      }
      work_item* stolen = nullptr;
      if (try_steal(w, stolen)) {
        // More work may be waiting: let a parked worker help (work spreads
        // one wake-up per successful steal, like a wave).
        if (parking_.sleepers().load(std::memory_order_relaxed) > 0 && has_visible_work())
          parking_.wake_one();
        return stolen;
      }
      if (round % 8 == 7) {
        std::this_thread::yield();  // oversubscribed: let the working threads run
      } else {
        for (int i = 0; i < 32; ++i) _mm_pause();
      }
    }
    w->parks.add();
    parking_.park([this] {
      return stopping_.load(std::memory_order_acquire) || has_visible_work();
    });
  }
}

}  // namespace weft::detail
