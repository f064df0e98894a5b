// weft — fiber switches and the suspension protocol (ProWS, Cilk-L §4.2;
// ParWS, latency-hiding work stealing): a blocking task's fiber is switched out, with its deque
// if the policy parks it; make_resumable queues it in a worker's ready queue;
// whoever takes it from there adopts its deque and switches to it.
#include <utility>
#include <vector>

#include "scheduler.hpp"

namespace weft::detail {

namespace {
void recycle_prev_fiber(worker* w, fiber* prev, void*) noexcept;
}  // namespace

// --- switching -----------------------------------------------------------------

void scheduler::switch_to(worker* w, fiber* to, post_switch_action act, bool from_dies) noexcept {
  fiber* from = w->running;
  // Switch ownership: only the thread running w switches it (running and
  // pending are owner-only), from the fiber it runs now, to a fiber nobody
  // else runs: w's own native context, or a pooled fiber of this runtime
  // whose parked deque (if any) its resumer has already adopted.
  WEFT_ASSERT(w == this_worker(), "switch_to: only the worker's own thread switches it");
  WEFT_ASSERT(to != from, "switch_to: a fiber never switches to itself");
  WEFT_ASSERT(!w->pending.fn, "switch_to: the previous post-switch action has run");
  WEFT_ASSERT(to->is_native() ? to == &w->native : to->owner == this,
              "switch_to: the target is this worker's native context or a fiber of this runtime");
  WEFT_ASSERT(!to->deque, "switch_to: the target's parked deque was adopted before the switch");
  w->pending = act;
  w->running = to;
  ctx::transfer_t t = fiber_switch(from, to, from_dies);
  after_switch(t);  // back on `from`, possibly on another thread
}

void scheduler::after_switch(ctx::transfer_t t) noexcept {
  auto* prev = static_cast<fiber*>(t.data);
  prev->context = t.fctx;  // before any action publishes prev
  worker* w = this_worker();
  WEFT_ASSERT(w->running != prev, "after_switch: the worker runs the fiber switched to");
  fiber_switch_finished(w->running, prev);
  post_switch_action act = w->pending;
  w->pending = {};
  if (act.fn) act.fn(w, prev, act.arg);
}

void scheduler::fiber_main(ctx::transfer_t t) noexcept {
  after_switch(t);
  worker_loop();
}

namespace {
void recycle_prev_fiber(worker* w, fiber* prev, void*) noexcept {
  w->sched->recycle_fiber(w, prev);
}
}  // namespace

void scheduler::set_level_deque(worker* w, unsigned level, deque_record* d) noexcept {
  WEFT_ASSERT(d->level == level, "a deque serves only the level it was made for");
  // release: a thief that loads the new deque sees it initialised.
  if (aps_enabled()) {
    w->level_active[level].store(d, std::memory_order_release);
  } else {
    for (auto& slot : w->level_active) slot.store(d, std::memory_order_release);
  }
}

// --- suspension -------------------------------------------------------------------

namespace {
struct suspend_args {
  deque_record* deque;  // parked with the fiber (ProWS, non-empty), or nullptr
  bool run_newest;      // move the parked deque's newest item to the worker's deque
  scheduler::commit_fn commit;
  void* arg;
};

void post_suspend(worker* w, fiber* suspended, void* p) noexcept;
}  // namespace

void scheduler::suspend(worker* w, commit_fn commit, void* arg, int new_level) {
  fiber* self = w->running;
  WEFT_ASSERT(self != &w->native, "tasks run on pooled fibers, never on the thread's own context");
  WEFT_ASSERT(new_level < static_cast<int>(priority_levels), "suspend: a valid new level");
  w->suspensions.add();
  const unsigned level = w->level;
  self->home = w->index;
  self->level = level;
  // relaxed: active is owner-only (worker_view::active).
  auto* d = static_cast<deque_record*>(w->active.load(std::memory_order_relaxed));
  fiber* next = acquire_fiber(w);
  // The task's deque goes with its fiber only under ProWS and only if it
  // holds items (only the owner pushes, so an empty deque stays empty): an
  // empty one is interchangeable with any other, so the worker keeps it — no
  // deque is parked per blocked task. ParWS always keeps it (latency-hiding work stealing).
  // (Policy::parks_deque, steal_policy.hpp.)
  const bool park = with_policy([d](auto p) { return decltype(p)::parks_deque(d); });
  self->deque = park ? d : nullptr;
  if (park) set_level_deque(w, level, acquire_deque(w, level));
  if (new_level >= 0) w->level = static_cast<unsigned>(new_level);
  // relaxed (both): active is read only by this worker's own thread; thieves
  // load level_active, which set_level_deque stored with release.
  w->active.store(w->level_active[w->level].load(std::memory_order_relaxed),
                  std::memory_order_relaxed);
  // A task that blocks (not one that changes level) lets its worker run its
  // newest item next — usually the child it waits for: depth-first, as
  // Cilk's child-first order would have run it already.
  suspend_args a{park ? d : nullptr, park && new_level < 0, commit, arg};
  switch_to(w, next, {&post_suspend, &a}, false);
  // Resumed, by a worker that adopted `d` (if it was parked).
}

namespace {
void post_suspend(worker* w, fiber* suspended, void* p) noexcept {
  suspend_args a = *static_cast<suspend_args*>(p);  // the frame may resume soon
  scheduler* s = w->sched;
  if (a.deque) {
    // This worker still owns the parked deque until the commit below
    // publishes its fiber: it may pop its bottom (thieves only take the top).
    if (a.run_newest) {
      if (work_item* newest = a.deque->pop())
        push_task(w, w->active.load(std::memory_order_relaxed), newest);
    }
    // ProWS step 2: donate the parked deque to a random worker if it still
    // holds stealable items (an empty one waits in no set for its fiber).
    if (!a.deque->looks_empty()) s->ensure_stealable(a.deque);
  }
  a.commit(a.arg, suspended);  // after this, `suspended` may run anywhere
}
}  // namespace

void scheduler::make_resumable(fiber* f, resume_kind kind) noexcept {
  // Read before publishing f: once queued, it may run (and be recycled) on
  // another worker at once.
  const unsigned level = f->level;
  WEFT_ASSERT(f->owner == this && !f->is_native(), "make_resumable: a suspended fiber of this runtime");
  WEFT_ASSERT(level < priority_levels && f->home < workers_.size(), "make_resumable: a valid queue");
  // ProWS: the resumer's queue (locality: it often just produced what the
  // task waited for, and is about to look for work); from other threads, the
  // worker the task blocked on. ParWS: always the latter (latency-hiding work stealing).
  // (Policy::resume_target, steal_policy.hpp.)
  worker* me = this_worker();
  if (me && me->sched != this) me = nullptr;
  const unsigned target =
      with_policy([me, f](auto p) { return decltype(p)::resume_target(me, f); });
  ready_queue& q = workers_[target]->ready[level];
  q.lock.lock();
  if (kind == resume_kind::yielded) {
    f->ready_link = nullptr;
    if (q.tail) q.tail->ready_link = f; else q.head = f;
    q.tail = f;
  } else {
    if (fiber* displaced = q.next) {  // the older wake-up joins the FIFO
      displaced->ready_link = nullptr;
      if (q.tail) q.tail->ready_link = displaced; else q.head = displaced;
      q.tail = displaced;
    }
    q.next = f;
  }
  ++q.size;
  // release: a worker reading the hint then taking the lock finds f.
  q.size_hint.store(q.size, std::memory_order_release);
  q.lock.unlock();
  // seq_cst: the waking side of the parking handshake (slow path, full fence).
  full_fence();
  if (parking_.sleepers().load(std::memory_order_relaxed) > 0) parking_.wake_one();
  if (kind == resume_kind::woken) note_level_ready(level);
}

namespace {
// A parallel loop over resumed fibers (latency-hiding work stealing Figure 3, line 9): executing
// it pushes half of its fibers as a new batch until one is left, then switches
// to that one. Always executed at the top of a worker loop (joins never pop
// untagged items), so abandoning the executing fiber's frames is safe.
struct resume_batch final : work_item {
  resume_batch() : work_item(&scheduler::run_resume_batch) {}
  std::vector<fiber*> fibers;
};
}  // namespace

template <class Policy>
work_item* scheduler::take_ready(worker* w, ready_queue& q, ready_take which) {
  // acquire: pairs with make_resumable's release store.
  if (q.size_hint.load(std::memory_order_acquire) == 0) return nullptr;
  q.lock.lock();
  fiber* f = nullptr;
  switch (which) {
    case ready_take::newest:
      // The newest wake-up (depth-first), but not forever while older ones
      // wait: after 64 in a row, let the FIFO (and injected work) have a turn.
      if (q.next && (!q.head || w->next_streak < 64)) {
        f = std::exchange(q.next, nullptr);
        w->next_streak = q.head ? w->next_streak + 1 : 0;
      } else {
        w->next_streak = 0;
      }
      break;
    case ready_take::oldest:
      if (q.head) {
        f = q.head;
        q.head = f->ready_link;
        if (!q.head) q.tail = nullptr;
      }
      break;
    case ready_take::any:  // thieves: the oldest first
      if (q.head) {
        f = q.head;
        q.head = f->ready_link;
        if (!q.head) q.tail = nullptr;
      } else {
        f = std::exchange(q.next, nullptr);
      }
      break;
  }
  if (!f) {
    q.lock.unlock();
    return nullptr;
  }
  --q.size;
  // ParWS: a thief takes the whole FIFO as one parallel loop over the
  // resumed fibers (latency-hiding work stealing Figure 3, addResumedVertices).
  if (Policy::thieves_take_batches && which == ready_take::any && q.head) {
    auto* batch = new resume_batch();
    batch->fibers.push_back(f);
    for (fiber* g = q.head; g; g = g->ready_link) batch->fibers.push_back(g);
    q.size -= batch->fibers.size() - 1;
    q.head = q.tail = nullptr;
    // release: as in make_resumable.
    q.size_hint.store(q.size, std::memory_order_release);
    q.lock.unlock();
    return batch;
  }
  // release: as in make_resumable.
  q.size_hint.store(q.size, std::memory_order_release);
  q.lock.unlock();
  return &f->resume_item;
}

template work_item* scheduler::take_ready<prows_policy>(worker*, ready_queue&, ready_take);
template work_item* scheduler::take_ready<parws_policy>(worker*, ready_queue&, ready_take);

void scheduler::resume_ready(work_item* item) noexcept {
  fiber* f = fiber::from_resume_item(item);
  worker* w = this_worker();
  // Workers take only their own level's ready queues (a thief steals at its
  // level too), so a resumed task continues at the level it blocked at.
  WEFT_ASSERT(f->level == w->level, "resume_ready: the fiber resumes at the level it blocked at");
  w->sched->adopt_deque_of(w, f);
  w->sched->switch_to(w, f, {&recycle_prev_fiber, nullptr}, true);
  __builtin_unreachable();  // this fiber's frames are abandoned and recycled
}

void scheduler::adopt_deque_of(worker* w, fiber* f) noexcept {
  deque_record* d = f->deque;
  if (!d) return;  // resumes with our active deque
  f->deque = nullptr;
  // Only f's resumer adopts d ("mugging", ProWS): take it out of its set
  // (thieves holding a stale pointer may still steal its top: valid) and
  // make it our active deque. Ours is usually empty (we were looking for
  // work; only the owner pushes) — except at find_work's fairness turn
  // (ready_turn), where it may hold work: it is then donated to our own
  // stealable set, like a blocked task's parked deque, never recycled.
  sets_.leave_set(d);
  // Ready queues are per level and workers take only their own level's.
  WEFT_ASSERT(d->level == w->level, "adopt_deque_of: the adopted deque is of the worker's level");
  auto* old = static_cast<deque_record*>(w->active.load(std::memory_order_relaxed));
  WEFT_ASSERT(old != d, "adopt_deque_of: a parked deque is never also a worker's active deque");
  set_level_deque(w, d->level, d);
  // relaxed: see suspend() (owner-only; d reached thieves through its set and
  // now through level_active, stored with release above).
  w->active.store(d, std::memory_order_relaxed);
  if (old->looks_empty()) recycle_deque(w, old);
  else ensure_stealable(old, static_cast<int>(w->index));
  WEFT_ASSERT(w->active.load(std::memory_order_relaxed) ==
                  w->level_active[w->level].load(std::memory_order_relaxed),
              "active == level_active[level] (worker_view)");
}

// --- resumed fibers as a parallel loop (ParWS thieves) -----------------------------

void scheduler::run_resume_batch(work_item* item) noexcept {
  auto* batch = static_cast<resume_batch*>(item);
  worker* w = this_worker();
  scheduler* s = w->sched;
  // relaxed: active is owner-only (worker_view::active).
  chase_lev_deque* d = w->active.load(std::memory_order_relaxed);
  while (batch->fibers.size() > 1) {
    auto* half = new resume_batch();
    auto mid = batch->fibers.begin() + static_cast<std::ptrdiff_t>(batch->fibers.size() / 2);
    half->fibers.assign(mid, batch->fibers.end());
    batch->fibers.erase(mid, batch->fibers.end());
    push_task(w, d, half);
  }
  fiber* f = batch->fibers.front();
  delete batch;
  s->switch_to(w, f, {&recycle_prev_fiber, nullptr}, true);
  __builtin_unreachable();
}

}  // namespace weft::detail
