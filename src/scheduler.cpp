#include "scheduler.hpp"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <thread>
#include <unordered_map>
#include <utility>

#include "io/io_driver.hpp"
#include "live_objects.hpp"
#include "overflow_guard.hpp"
#include "own_threads.hpp"
#include "weft/detail/deadline.hpp"

namespace weft::detail {

namespace {
thread_local worker* tls_worker = nullptr;

void recycle_prev_fiber(worker* w, fiber* prev, void*) noexcept;

// A random number for threads that are not workers (resumers, injectors).
std::uint64_t any_thread_random() noexcept {
  thread_local std::uint64_t x =
      0x9E3779B97F4A7C15ULL ^ reinterpret_cast<std::uintptr_t>(&x);
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 0x2545F4914F6CDD1DULL;
}
}  // namespace

// Never inlined, and the asm barrier keeps the compiler from reusing a thread
// pointer computed before a fiber switch: after a switch the calling code may
// run on another thread.
__attribute__((noinline)) worker* this_worker() noexcept {
  asm volatile("" ::: "memory");
  return tls_worker;
}
__attribute__((noinline)) worker_view* current_worker() noexcept {
  asm volatile("" ::: "memory");
  return tls_worker;
}
void set_this_worker(worker* w) noexcept { tls_worker = w; }

// --- the runtimes alive, by id (for counts that outlive a task) -----------------

namespace {
// Heap-allocated and never freed: usable from any thread at any time, even
// during static destruction.
mutex& registry_mutex() {
  static auto* m = new mutex;
  return *m;
}
std::unordered_map<std::uint64_t, scheduler*>& registry() {  // guarded by registry_mutex()
  static auto* r = new std::unordered_map<std::uint64_t, scheduler*>;
  return *r;
}
std::uint64_t next_runtime_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  // relaxed: uniqueness is all that is needed.
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

std::uint64_t current_runtime_id() noexcept {
  worker* w = this_worker();
  return w ? w->sched->id() : 0;
}

// An async task's exception was dropped unobserved, perhaps long after the
// task ran, on any thread, perhaps after its runtime is gone: counted only if
// that runtime is still alive (the registry says so, under its lock).
void note_unobserved_exception(std::uint64_t runtime_id) noexcept {
  lock_guard lock(registry_mutex());
  auto it = registry().find(runtime_id);
  if (it != registry().end()) it->second->count_unobserved_exception();
}

scheduler::scheduler(const options& resolved)
    : opts_(resolved),
      id_(next_runtime_id()),
      parsimonious_(resolved.policy == steal_policy::parsimonious),
      stacks_(resolved.stack_size) {
  install_overflow_handler();
  parking_.set_interrupter(&scheduler::interrupt_poller, this);
  workers_.reserve(opts_.workers);
  for (unsigned i = 0; i < opts_.workers; ++i) {
    auto w = std::make_unique<worker>();
    w->index = i;
    w->sched = this;
    w->sleepers = &parking_.sleepers();
    w->rng_state = 0x9E3779B97F4A7C15ULL * (i + 1) | 1;
    // relaxed: published to the worker threads by std::thread's start.
    // Oblivious mode: every level shares one deque, so a priority changes
    // nothing.
    deque_record* shared = aps_enabled() ? nullptr : acquire_deque(w.get(), default_priority_level);
    for (unsigned l = 0; l < priority_levels; ++l)
      w->level_active[l].store(shared ? shared : acquire_deque(w.get(), l), std::memory_order_relaxed);
    w->level = default_priority_level;
    w->tracks_levels = aps_enabled();
    // relaxed: see above; active is owner-only anyway.
    w->active.store(w->level_active[w->level].load(std::memory_order_relaxed),
                    std::memory_order_relaxed);
    // The worker's first fiber, taken here so that a failure to map its
    // stack is thrown by the constructor rather than inside the new thread.
    recycle_fiber(w.get(), acquire_fiber(w.get()));
    workers_.push_back(std::move(w));
  }
  {
    lock_guard lock(registry_mutex());
    registry().emplace(id_, this);  // before any thread: may throw std::bad_alloc
  }
  try {
    for (auto& w : workers_) {
      worker* raw = w.get();
      raw->thread = start_thread("a worker thread", [this, raw] { thread_main(raw); });
    }
  } catch (...) {
    // No task exists yet: stop the workers that did start, free what they
    // allocated, and report (the destructor does not run for a failed
    // constructor).
    stop_workers();
    free_pools();
    lock_guard lock(registry_mutex());
    registry().erase(id_);
    throw;
  }
}

std::int64_t scheduler::outstanding_tasks() const noexcept {
  // Read every finished count before any started count. A task's finish is
  // published (release) after its children were counted as started, so this
  // order can over-count but never under-count: a zero means none is left.
  std::int64_t finished = 0;
  for (auto& w : workers_) finished += w->tasks_finished.read();
  // acquire: pairs with count_external_start().
  std::int64_t started = external_started_.load(std::memory_order_acquire);
  for (auto& w : workers_) started += w->tasks_started.read();
  return started - finished;
}

io_driver* scheduler::io() {
  // acquire: pairs with the release store below; the backend is constructed.
  if (io_driver* b = io_ptr_.load(std::memory_order_acquire)) return b;
  lock_guard lock(io_mutex_);
  if (!io_) {
    switch (opts_.io) {
      case weft::io_backend::blocking:
        io_ = make_blocking_backend();
        break;
      case weft::io_backend::io_uring:
        io_ = make_uring_backend(worker_count(), opts_.io_try_first);
        break;
      case weft::io_backend::epoll_threads:
        io_ = make_epoll_backend(worker_count(), opts_.io_try_first);
        break;
      case weft::io_backend::automatic:
      case weft::io_backend::epoll:
        io_ = make_netpoll_backend(opts_.io_try_first);
        break;
    }
    // A backend created after shutdown began (first I/O from a task still
    // running in ~runtime) starts out shut down: its operations fail at once.
    if (io_shutdown_) io_->begin_shutdown();
    io_ptr_.store(io_.get(), std::memory_order_release);
  }
  return io_.get();
}

io_driver* scheduler_io_driver(scheduler* s) { return s->io(); }

scheduler::~scheduler() {
  // Drain: wait (without spinning hot) until every async task has finished,
  // including tasks blocked on events that later tasks fulfil. Their I/O and
  // their sleeps go on as usual for the grace period; after it, every
  // deadline counts as reached (end_grace_period), so a task blocked on I/O
  // or a timer resumes with operation_canceled or a timeout and can finish.
  using clock = std::chrono::steady_clock;
  const clock::time_point grace_end = saturating_deadline(clock::now(), opts_.shutdown_grace);
  bool grace_over = false;
  auto end_grace = [&] {
    if (grace_over) return;
    grace_over = true;
    end_grace_period();
  };
  if (opts_.shutdown_grace <= std::chrono::milliseconds::zero()) end_grace();
  auto pause = std::chrono::microseconds(50);
  while (outstanding_tasks() != 0) {
    if (!grace_over && clock::now() >= grace_end) {
      end_grace();
      continue;
    }
    auto nap = std::chrono::duration_cast<clock::duration>(pause);
    if (!grace_over) nap = std::min<clock::duration>(nap, std::max<clock::duration>(grace_end - clock::now(), {}));
    std::this_thread::sleep_for(nap);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
  // No task is left. Operations still pending belong to futures held outside
  // the runtime: they complete with operation_canceled.
  end_grace();
  std::thread master;
  {
    lock_guard lock(aps_mutex_);
    aps_stop_ = true;
    master = std::move(aps_thread_);  // joined outside the lock the master takes
  }
  aps_cv_.notify_all();
  if (master.joinable()) master.join();
  stop_workers();
  {
    // After the workers: they poll the backend (netpoll) until they stop.
    lock_guard lock(io_mutex_);
    io_.reset();  // joins the I/O threads; every operation has completed
  }
  free_pools();
  lock_guard lock(registry_mutex());
  registry().erase(id_);
}

void scheduler::end_grace_period() noexcept {
  // Pending I/O completes with operation_canceled; later operations fail the
  // same way at once.
  {
    lock_guard lock(io_mutex_);
    io_shutdown_ = true;
    if (io_) io_->begin_shutdown();
  }
  // Sleeps and timed waits: their deadlines count as reached from now on.
  timers_.expire_all();
}

void scheduler::stop_workers() noexcept {
  // seq_cst: ordered before wake_all's exchange; a worker about to park either
  // sees stopping_ in its re-scan or has announced itself and gets woken.
  stopping_.store(true, std::memory_order_seq_cst);
  parking_.wake_all();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

void scheduler::free_pools() noexcept {
  lock_guard lock(pool_mutex_);
  for (fiber* f : all_fibers_) {
    fiber_sanitizer_destroy(f);
    stacks_.release(f->stack);
    delete f;
    live_object_counts::add(live_objects().fibers, -1);
  }
  all_fibers_.clear();
  for (deque_record* d : all_deques_) delete d;
  live_object_counts::add(live_objects().deques, -static_cast<long>(all_deques_.size()));
  all_deques_.clear();
}

runtime::statistics scheduler::stats() const noexcept {
  runtime::statistics s{};
  for (auto& w : workers_) {
    s.fibers_suspended += static_cast<std::size_t>(w->suspensions.read());
    s.steals += static_cast<std::size_t>(w->steals.read());
    s.parks += static_cast<std::size_t>(w->parks.read());
  }
  s.fibers_created = stacks_.stacks_in_use();
  // relaxed: a statistic.
  s.unobserved_exceptions = unobserved_exceptions_.load(std::memory_order_relaxed);
  s.blocking_threads = blocking_.threads();
  return s;
}

// --- pools -------------------------------------------------------------------

fiber* scheduler::acquire_fiber(worker* w) {
  fiber* f = nullptr;
  if (!w->fiber_cache.empty()) {
    f = w->fiber_cache.back();
    w->fiber_cache.pop_back();
  } else {
    lock_guard lock(pool_mutex_);
    if (free_fibers_) {
      f = free_fibers_;
      free_fibers_ = f->next_free;
    }
  }
  if (!f) {
    f = new fiber(&scheduler::resume_ready);
    f->owner = this;
    try {
      f->stack = stacks_.acquire();
    } catch (...) {
      delete f;
      throw;
    }
    fiber_sanitizer_create(f);
    lock_guard lock(pool_mutex_);
    all_fibers_.push_back(f);
    live_object_counts::add(live_objects().fibers, 1);
  }
  fiber_reset(f, &scheduler::fiber_main);
  return f;
}

void scheduler::recycle_fiber(worker* w, fiber* f) noexcept {
  WEFT_ASSERT(f->owner == this && !f->is_native() && f != w->running,
              "recycle_fiber: a pooled fiber of this runtime that no one runs");
  constexpr std::size_t cache_cap = 16;
  if (w->fiber_cache.size() < cache_cap) {
    w->fiber_cache.push_back(f);
    return;
  }
  lock_guard lock(pool_mutex_);
  f->next_free = free_fibers_;
  free_fibers_ = f;
}

// Deques are pooled per level and never change level, so a thief holding a
// stale pointer still steals work of the level it looked for.
deque_record* scheduler::acquire_deque(worker* w, unsigned level) {
  auto& cache = w->deque_cache[level];
  if (!cache.empty()) {
    deque_record* d = cache.back();
    cache.pop_back();
    return d;
  }
  lock_guard lock(pool_mutex_);
  if (deque_record* d = free_deques_[level]) {
    free_deques_[level] = d->next_free;
    return d;
  }
  auto* d = new deque_record();
  d->level = level;  // published with the deque (release store or set lock)
  all_deques_.push_back(d);
  live_object_counts::add(live_objects().deques, 1);
  return d;
}

void scheduler::recycle_deque(worker* w, deque_record* d) noexcept {
  WEFT_ASSERT(d->looks_empty(), "recycle_deque: only an empty deque is recycled");
  constexpr std::size_t cache_cap = 16;
  auto& cache = w->deque_cache[d->level];
  if (cache.size() < cache_cap) {
    cache.push_back(d);
    return;
  }
  lock_guard lock(pool_mutex_);
  d->next_free = free_deques_[d->level];
  free_deques_[d->level] = d;
}

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

// --- deque sets (ProWS: each worker holds a share of the inactive deques) -------

void scheduler::ensure_stealable(deque_record* d, int preferred) noexcept {
  d->membership.lock();
  if (d->set_owner < 0) {
    auto v = preferred >= 0 ? static_cast<unsigned>(preferred)
                            : static_cast<unsigned>(any_thread_random() % workers_.size());
    stealable_set& set = workers_[v]->inactive[d->level];
    set.lock.lock();
    d->set_pos = set.deques.size();
    set.deques.push_back(d);
    // release: a thief reading the hint then taking the lock finds the entry.
    set.size_hint.store(set.deques.size(), std::memory_order_release);
    set.lock.unlock();
    d->set_owner = static_cast<int>(v);
  }
  d->membership.unlock();
}

// Requires d->membership held and d->set_owner >= 0.
void scheduler::remove_from_set(deque_record* d) noexcept {
  WEFT_ASSERT(d->set_owner >= 0 && static_cast<std::size_t>(d->set_owner) < workers_.size(),
              "remove_from_set: the deque is in a set");
  stealable_set& set = workers_[static_cast<unsigned>(d->set_owner)]->inactive[d->level];
  set.lock.lock();
  WEFT_ASSERT(d->set_pos < set.deques.size() && set.deques[d->set_pos] == d,
              "remove_from_set: set_pos is the deque's entry in its owner's set");
  deque_record* last = set.deques.back();
  set.deques[d->set_pos] = last;
  last->set_pos = d->set_pos;
  set.deques.pop_back();
  // release: see ensure_stealable().
  set.size_hint.store(set.deques.size(), std::memory_order_release);
  set.lock.unlock();
  d->set_owner = -1;
}

void scheduler::leave_set(deque_record* d) noexcept {
  d->membership.lock();
  if (d->set_owner >= 0) remove_from_set(d);
  d->membership.unlock();
}

void scheduler::retire_if_empty(deque_record* d) noexcept {
  d->membership.lock();
  // Under membership: a resumer pushes before taking this lock, so if its push
  // precedes us we see it (looks_empty loads with acquire) and keep the deque;
  // otherwise it finds the deque in no set after us and re-inserts it.
  if (d->set_owner >= 0 && d->looks_empty()) remove_from_set(d);
  d->membership.unlock();
}

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
  // deque is parked per blocked task. ParWS always keeps it (paper 002).
  const bool park = !parsimonious_ && !d->looks_empty();
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
  // worker the task blocked on. ParWS: always the latter (paper 002).
  worker* me = this_worker();
  const unsigned target = !parsimonious_ && me && me->sched == this ? me->index : f->home;
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
// A parallel loop over resumed fibers (paper 002 Figure 3, line 9): executing
// it pushes half of its fibers as a new batch until one is left, then switches
// to that one. Always executed at the top of a worker loop (joins never pop
// untagged items), so abandoning the executing fiber's frames is safe.
struct resume_batch final : work_item {
  resume_batch() : work_item(&scheduler::run_resume_batch) {}
  std::vector<fiber*> fibers;
};
}  // namespace

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
  // resumed fibers (paper 002 Figure 3, addResumedVertices).
  if (parsimonious_ && which == ready_take::any && q.head) {
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
  leave_set(d);
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

// --- injection -------------------------------------------------------------------

void scheduler::inject(work_item* item, int level) {
  unsigned l = level < 0 || !aps_enabled() ? default_priority_level : static_cast<unsigned>(level);
  if (l != default_priority_level) start_aps_master();  // before queuing (may throw)
  {
    lock_guard lock(inject_mutex_);
    injected_[l].push_back(item);
    // relaxed: a hint; the mutex orders the queue itself.
    injected_hint_[l].store(injected_[l].size(), std::memory_order_relaxed);
  }
  if (l != default_priority_level) note_level_spawn(l);
  else note_level_ready(l);
  // seq_cst: waking side of the parking handshake.
  full_fence();
  if (parking_.sleepers().load(std::memory_order_relaxed) > 0) parking_.wake_one();
}

work_item* scheduler::take_injected(unsigned level) {
  // relaxed: a hint; the mutex orders the queue itself (a miss is caught by
  // the next round or the parking re-scan).
  if (injected_hint_[level].load(std::memory_order_relaxed) == 0) return nullptr;
  lock_guard lock(inject_mutex_);
  if (injected_[level].empty()) return nullptr;
  work_item* item = injected_[level].front();
  injected_[level].pop_front();
  // relaxed: as in inject().
  injected_hint_[level].store(injected_[level].size(), std::memory_order_relaxed);
  return item;
}

// --- hooks used by the headers -----------------------------------------------------

void wake_one_sleeper(worker_view* w) noexcept { w->sched->wake_one(); }
void inject(scheduler* s, work_item* item, int level) { s->inject(item, level); }
scheduler* scheduler_of(worker_view* w) noexcept { return w ? w->sched : nullptr; }
bool is_worker_of(const scheduler& s) noexcept {
  worker* w = this_worker();
  return w && w->sched == &s;
}
unsigned current_worker_count() noexcept {
  worker* w = this_worker();
  return w ? w->sched->worker_count() : 1;
}

void count_external_start(scheduler* s) noexcept { s->count_external_start(); }

}  // namespace weft::detail
