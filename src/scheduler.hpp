// weft — the scheduler: one runtime's workers and what they share. Its
// methods are spread by mechanism: scheduler.cpp (life cycle, injection, the
// I/O backend), scheduler_dispatch.cpp (the worker loop: find work, steal,
// park, poll I/O), scheduler_suspend.cpp (fiber switches, the suspension
// protocol, ready queues), scheduler_levels.cpp (moving workers between
// priority levels, APS accounting). The mechanisms it owns live in their own
// classes: fiber_pool, deque_pool, stealable_sets, aps_master, parking_lot,
// timer_service, blocking_pool; the ProWS/ParWS differences in steal_policy.hpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <thread>
#include <memory>
#include <mutex>
#include <vector>

#include "aps_master.hpp"
#include "blocking_pool.hpp"
#include "deque_pool.hpp"
#include "fiber_pool.hpp"
#include "parking.hpp"
#include "stack_pool.hpp"
#include "stealable_set.hpp"
#include "steal_policy.hpp"
#include "timer_service.hpp"
#include "worker.hpp"
#include "weft/detail/mutex.hpp"
#include "weft/detail/thread_annotations.hpp"
#include "weft/runtime.hpp"

namespace weft::detail {

class io_driver;

enum class resume_kind { woken, ready_again, yielded };

class scheduler {
 public:
  explicit scheduler(const options& resolved);
  ~scheduler();  // drains outstanding tasks, stops and joins the workers
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  const options& config() const noexcept { return opts_; }
  // Unique for the life of the process (never reused, unlike the address).
  std::uint64_t id() const noexcept { return id_; }
  void count_unobserved_exception() noexcept {
    // relaxed: a statistic.
    unobserved_exceptions_.fetch_add(1, std::memory_order_relaxed);
  }
  unsigned worker_count() const noexcept { return static_cast<unsigned>(workers_.size()); }
  std::size_t usable_stack_size() const noexcept { return stacks_.usable_size(); }
  runtime::statistics stats() const noexcept;

  // --- work submission -----------------------------------------------------
  void inject(work_item* item, int level) WEFT_EXCLUDES(inject_mutex_);
  void wake_one() noexcept { parking_.wake_one(); }
  void count_external_start() noexcept {
    // release: pairs with the drain's acquire read.
    external_started_.fetch_add(1, std::memory_order_release);
  }

  // --- suspension (ProWS) ---------------------------------------------------
  // Called by a task running on `w`: suspends the task's fiber together with
  // the worker's active deque, gives the worker a fresh deque and fiber, and
  // then — on the fresh fiber, after the switch — calls commit(arg, fiber).
  // `commit` must arrange for make_resumable(fiber) to be called exactly once
  // (possibly at once). Returns when the task has been resumed, on whichever
  // worker adopted it.
  using commit_fn = void (*)(void* arg, fiber* suspended) noexcept;
  // `new_level` >= 0: the worker moves to that level (APS level switch).
  void suspend(worker* w, commit_fn commit, void* arg, int new_level = -1);
  // find_work steals before taking the ready FIFO every steal_turn-th time
  // it gets there (fairness towards parked deques; scheduler_dispatch.cpp).
  static constexpr unsigned steal_turn = 16;
  // find_work takes a ready fiber before its own deque every ready_turn-th
  // time (ProWS; fairness towards resumed tasks, scheduler_dispatch.cpp).
  static constexpr unsigned ready_turn = 61;
  // this_task::yield: is anything else ready for w to run (its own deque,
  // injected work, a ready fiber or a donated deque at its level, or a level
  // switch)? Reads hints that change rarely, so it costs a few loads.
  bool others_ready(worker* w) const noexcept;
  // A strand boundary without a switch (a yield that found nothing else to
  // run): restarts the APS span, if the master runs.
  void mark_strand_boundary(worker* w) noexcept {
    if (!aps_.running()) return;  // relaxed: see begin_span
    end_span(w);
    begin_span(w);
  }
  // Worker-polled I/O: a poll that is due on a busy worker (at most every
  // poll_period_ns; cheap otherwise). find_work and yield call it.
  void poll_io_if_due(worker* w) noexcept;
  // APS: the worker is asked to change level (strand boundary in a task).
  void switch_level(worker* w);
  // Starts the APS master thread if priorities are adaptive and it does not
  // run yet; throws std::system_error if it cannot (see prepare_level).
  void start_aps_master();
  // A task of `level` was queued: ask for an early quantum if that level has
  // no worker (a hint).
  void note_level_spawn(unsigned level) noexcept;
  // Work became ready at `level` outside a spawn (a resumed task, an injected
  // one). If APS runs and gives that level no worker, ask for an early
  // quantum instead of letting the work wait up to L (an I/O completion for
  // an urgent handler would otherwise wait out the quantum). relaxed: both
  // are hints; a stale allotment costs one spurious quantum or one quantum's
  // delay.
  void note_level_ready(unsigned level) noexcept { aps_.note_level_work(level); }
  bool aps_enabled() const noexcept { return opts_.priorities == options::priority_mode::adaptive; }
  // Any thread, once per suspension: queues the fiber in a worker's ready
  // queue (ready_queue in worker.hpp), from which that worker — or a thief —
  // resumes it. `kind`: woken by an event (a completion, an I/O result, a
  // timer: APS may treat its level as having new urgent work); ready again
  // at once (the event was set before the task finished suspending); or
  // yielded (a yield or a level switch: to the back of the queue).
  void make_resumable(fiber* f, resume_kind kind = resume_kind::woken) noexcept;

  timer_service& timers() noexcept { return timers_; }
  blocking_pool& blocking() noexcept { return blocking_; }  // spawn_blocking's threads
  // The I/O backend, created on first use (thread-safe).
  io_driver* io() WEFT_EXCLUDES(io_mutex_);
  // Puts a deque that holds work into a random worker's stealable set, unless
  // it is in one already. Any thread.
  // `preferred` >= 0 names the worker; -1 picks one at random.
  void ensure_stealable(deque_record* d, int preferred = -1) noexcept {
    sets_.ensure_stealable(d, preferred);
  }

  // --- used by workers --------------------------------------------------------
  static void fiber_main(ctx::transfer_t t) noexcept;  // entry of every fiber
  [[noreturn]] static void worker_loop() noexcept;
  static void resume_ready(work_item* item) noexcept;      // a fiber's resume_item
  static void run_resume_batch(work_item* item) noexcept;  // parsimonious policy
  void recycle_fiber(worker* w, fiber* f) noexcept {  // owner thread of w
    WEFT_ASSERT(f->owner == this && !f->is_native() && f != w->running,
                "recycle_fiber: a pooled fiber of this runtime that no one runs");
    fibers_.recycle(w->fiber_cache, f);
  }

 private:
  void thread_main(worker* w);
  // Calls f(prows_policy{}) or f(parws_policy{}), whichever this runtime
  // uses: the one place the policy is chosen (steal_policy.hpp says why a
  // template and not a virtual call).
  template <class F>
  decltype(auto) with_policy(F&& f) const {
    if (parsimonious_) return f(parws_policy{});
    return f(prows_policy{});
  }
  template <class Policy>
  work_item* find_work(worker* w);
  template <class Policy>
  bool try_steal(worker* thief, work_item*& out);
  work_item* take_injected(unsigned level) WEFT_EXCLUDES(inject_mutex_);
  // Worker-polled I/O (netpoll backend; docs/io.md §The poller). A
  // non-blocking poll unless a worker is blocked in the poll already or
  // another polls now; returns how many operations it completed (their
  // tasks are in w's ready queue).
  unsigned poll_io(worker* w) noexcept;
  // Parks w, in the backend's blocking poll if I/O waits and no other worker
  // is in it.
  void park_worker(worker* w);
  static void interrupt_poller(void* self) noexcept;
  // A fiber from `q` as a work item (its resume_item, or under ParWS a batch
  // for a thief), or nullptr. The owner takes the newest wake-up before
  // injected work and the FIFO (older wake-ups, yields) after it; thieves
  // take any, the oldest first.
  enum class ready_take { newest, oldest, any };
  template <class Policy>
  work_item* take_ready(worker* w, ready_queue& q, ready_take which);
  void adopt_deque_of(worker* w, fiber* f) noexcept;
  bool level_has_ready_work(unsigned level) const noexcept;
  void adopt_assigned_level(worker* w) noexcept;  // between tasks
  void begin_span(worker* w) noexcept;            // APS accounting
  void end_span(worker* w) noexcept;
  std::uint64_t now_ns() const noexcept;
  friend class aps_master;
  bool has_visible_work(unsigned level) const noexcept;
  [[noreturn]] void exit_worker(worker* w) noexcept;
  // Shutdown: ends the grace period (I/O cancelled, timers expired).
  void end_grace_period() noexcept WEFT_EXCLUDES(io_mutex_);
  void stop_workers() noexcept;  // stops and joins every started worker thread
  void free_pools() noexcept;    // frees every fiber and deque

  void switch_to(worker* w, fiber* to, post_switch_action act, bool from_dies) noexcept;
  static void after_switch(ctx::transfer_t t) noexcept;

  fiber* acquire_fiber(worker* w) { return fibers_.acquire(w->fiber_cache); }
  deque_record* acquire_deque(worker* w, unsigned level) {
    return deques_.acquire(w->deque_cache, level);
  }
  void recycle_deque(worker* w, deque_record* d) noexcept { deques_.recycle(w->deque_cache, d); }
  void set_level_deque(worker* w, unsigned level, deque_record* d) noexcept;
  std::int64_t outstanding_tasks() const noexcept;

  options opts_;
  const std::uint64_t id_;
  std::atomic<std::size_t> unobserved_exceptions_{0};
  const bool parsimonious_;  // immutable: opts_.policy == parsimonious (with_policy)
  stack_pool stacks_;
  parking_lot parking_;
  timer_service timers_;
  std::vector<std::unique_ptr<worker>> workers_;
  // Each worker's share of the inactive deques that hold work (ProWS).
  stealable_sets sets_{workers_};

  // Work from threads that are not workers of this runtime, per level.
  mutable mutex inject_mutex_;
  std::deque<work_item*> injected_[priority_levels] WEFT_GUARDED_BY(inject_mutex_);
  std::atomic<std::size_t> injected_hint_[priority_levels] = {};  // written under the mutex; hints

  // APS master (started on the first spawn at a non-default level).
  aps_master aps_{*this};
 public:
  // Runs an early APS quantum now (`self`: the calling worker, between tasks
  // or at a strand boundary; it is moved first if a worker must move).
  void request_early_quantum(worker* self) noexcept { aps_.request_early_quantum(self); }
 private:
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();

  // Pools of fibers and deques shared by the workers (each worker also keeps a
  // small private cache). Both are type-stable: freed only in ~scheduler.
  fiber_pool fibers_{stacks_, this, &scheduler::resume_ready, &scheduler::fiber_main};
  deque_pool deques_;

  mutex io_mutex_;
  // Written under io_mutex_; read without it only through io_ptr_ (below).
  std::unique_ptr<io_driver> io_ WEFT_GUARDED_BY(io_mutex_);
  bool io_shutdown_ WEFT_GUARDED_BY(io_mutex_) = false;
  std::atomic<io_driver*> io_ptr_{nullptr};  // release-published io_.get()
  // A worker is in (or entering) the backend's blocking poll: the poller
  // slot. Non-blocking polls are skipped meanwhile (the kernel wakes the
  // blocked poller; a concurrent poll could take the interrupt meant for it).
  std::atomic<bool> poller_slot_{false};
  std::atomic<bool> polling_now_{false};  // a non-blocking poll runs
  // steady-clock ns (since epoch_) after which a busy worker polls.
  std::atomic<std::uint64_t> next_busy_poll_ns_{0};
  static constexpr std::uint64_t poll_period_ns = 100'000;

  std::atomic<std::int64_t> external_started_{0};
  std::atomic<bool> stopping_{false};
  friend worker* this_worker() noexcept;
  // Last: destroyed first, after the drain (every call has finished) and
  // while everything a helper thread's last injection touched still exists.
  blocking_pool blocking_{opts_.blocking_threads, opts_.blocking_keep_alive};
};

}  // namespace weft::detail
