#include "scheduler.hpp"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <thread>
#include <unordered_map>
#include <utility>

#include "io/io_driver.hpp"
#include "overflow_guard.hpp"
#include "own_threads.hpp"
#include "weft/detail/deadline.hpp"

namespace weft::detail {

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
  aps_.stop();
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
  fibers_.free_all();
  deques_.free_all();
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
