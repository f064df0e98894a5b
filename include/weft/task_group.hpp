// weft — fork-join: task_group and fork_join (child stealing, Cilk semantics).
//
// A spawned child is pushed on the calling worker's deque and the parent goes
// on; idle workers steal children from the top. At sync the parent first runs
// its own unstolen children from the bottom of its deque; if some were stolen
// and are still running, the parent's fiber is suspended (ProWS) and the worker
// does other work — a sync never spins and never blocks the thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <variant>

#include "weft/detail/assert.hpp"
#include "weft/detail/completion.hpp"
#include "weft/detail/scheduler_hooks.hpp"
#include "weft/priority_level.hpp"

namespace weft {

// What task_group::wait() reports (oneTBB's task_group_status, without
// not_complete): canceled if request_stop() was called on the group.
enum class task_group_status { complete, canceled };

// Must be used inside a task; throws std::logic_error on other threads.
//
// Cancellation (docs/api.md "Cancellation"; oneTBB task_group::cancel, Go's
// context): request_stop() stops the group. Children that have not started
// yet then never run their callable (they complete at once, as skipped);
// running children that take a std::stop_token first (spawn([](std::stop_token
// st) { ... })) see it stopped and can end their waits with it. The stop is
// permanent for the group, as a std::stop_source's: children spawned later
// are skipped too. sync() still waits for every child, returns normally (a
// skipped child is not an error; an exception of a child that ran is still
// rethrown); wait() is sync() that reports complete or canceled.
class task_group {
 public:
  task_group() : worker_(detail::require_worker("weft::task_group")) {}
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  // Syncs (Cilk's implicit sync). If a child threw and sync() was not called,
  // the exception is rethrown here unless the scope is being unwound.
  ~task_group() noexcept(false) {
    // acquire: pairs with the children's acq_rel decrements, so the parent
    // sees everything they wrote (results, error_) after this scope.
    if (outstanding_.load(std::memory_order_acquire) == 1) {
      if (error_ && std::uncaught_exceptions() == 0) std::rethrow_exception(take_error());
      return;
    }
    join();
    if (error_ && std::uncaught_exceptions() == 0) std::rethrow_exception(take_error());
  }

  // Spawns f() as a child at the caller's priority. Must be called by the
  // task that owns the group.
  template <class F>
  void spawn(F&& f) {
    spawn_at(-1, std::forward<F>(f));
  }
  // Spawns f() as a child of priority p. Syncing on a child less urgent than
  // the caller is a priority inversion (checked in WEFT_PRIORITY_CHECKS builds;
  // use weft::priority_task_group for a compile-time check).
  template <class F>
  void spawn(F&& f, priority p) {
    spawn_at(static_cast<int>(p.level()), std::forward<F>(f));
  }

  // Cancellation (see the class comment). request_stop() may be called from
  // any task or thread while the group is alive (a child of the group
  // included); it returns true if this call stopped the group, false if it
  // was already stopped. Never throws, never waits.
  bool request_stop() noexcept {
    // seq_cst (with has_source_ below): either this load sees the source the
    // owner published, or the owner's load of stop_flag_ after publishing it
    // sees this store and requests it itself (Dekker; both may, harmlessly).
    if (stop_flag_.exchange(true, std::memory_order_seq_cst)) return false;
    if (has_source_.load(std::memory_order_seq_cst)) source_.request_stop();
    return true;
  }
  bool stop_requested() const noexcept {
    // acquire: pairs with request_stop's store (nothing else is published).
    return stop_flag_.load(std::memory_order_acquire);
  }
  // The group's token (the one its token-taking children get), e.g. to pass
  // to waits made by the owner. Owner task only; may throw std::bad_alloc
  // the first time (the group's stop_source is made on first use).
  std::stop_token get_stop_token() {
    ensure_source();
    return source_.get_token();
  }
  // sync(), then complete, or canceled if request_stop() was called.
  task_group_status wait() {
    sync();
    return stop_requested() ? task_group_status::canceled : task_group_status::complete;
  }

  // Waits for every child spawned so far; rethrows the first child exception.
  // The group may be reused afterwards.
  void sync() {
    // A sync on a less urgent child is reported (WEFT_PRIORITY_CHECKS) only
    // after the join: the group must never be left with children running.
    int inverted = least_urgent_child_ >= 0
                       ? detail::inverted_waiter_level(static_cast<unsigned>(least_urgent_child_))
                       : -1;
    unsigned awaited = static_cast<unsigned>(least_urgent_child_);
    join();
    if (inverted >= 0) detail::report_priority_inversion(static_cast<unsigned>(inverted), awaited);
    if (error_) std::rethrow_exception(take_error());
  }

 private:
  template <class F>
  void spawn_at(int level, F&& f) {
    constexpr bool stoppable = std::is_invocable_v<std::decay_t<F>&, std::stop_token>;
    using child_t = child<std::decay_t<F>, stoppable>;
    // The task may have moved to another worker since the last spawn.
    detail::worker_view* w = detail::current_worker();
    // Everything that may throw comes before the count: a failed spawn
    // leaves the group as it was.
    if constexpr (stoppable) ensure_source();  // before the push that publishes the child
    detail::prepare_level(w->sched, level);
    auto* c = new child_t(this, std::forward<F>(f));
    // relaxed: children decrement with acq_rel; the parent's own increment
    // needs no ordering (it happens before the push that publishes the child).
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    if (level > least_urgent_child_) least_urgent_child_ = level;
    detail::push_task_at(w, level, c);
    detail::strand_boundary(w);
  }

  template <class F, bool Stoppable>
  struct child final : detail::work_item {
    child(task_group* g, F&& f) : work_item(&run, g), group(g), fn(std::move(f)) {}
    child(task_group* g, const F& f) : work_item(&run, g), group(g), fn(f) {}
    static void* operator new(std::size_t n) { return detail::allocate_small(n); }
    static void operator delete(void* p, std::size_t n) noexcept { detail::deallocate_small(p, n); }
    static void run(detail::work_item* item) noexcept {
      auto* self = static_cast<child*>(item);
      task_group* g = self->group;
      try {
        // relaxed: a hint only — a stop that comes later reaches a
        // token-taking child through its token; the group's source was
        // published to us by the push that published this child.
        if (!g->stop_flag_.load(std::memory_order_relaxed)) {
          if constexpr (Stoppable) self->fn(g->source_.get_token());
          else self->fn();
        }
      } catch (...) {
        g->record_error(std::current_exception());
      }
      delete self;
      g->child_done();
    }
    task_group* group;
    F fn;
  };

  void join() {
    // Run our own unstolen children, newest first: they are at the bottom of
    // the current deque (deeper frames joined theirs before returning to us).
    // Each iteration re-reads the worker: a child run inline may suspend and
    // bring us back on another one.
    // Claim the bottom item before reading it: a peeked item may be stolen,
    // run and freed by a thief at any moment. Not ours: put it back (we are
    // the owner, and thieves never saw it missing from the top).
    for (;;) {
      detail::chase_lev_deque* d = detail::current_worker()->active.load(std::memory_order_relaxed);
      detail::work_item* item = d->pop();
      if (!item) break;
      if (item->tag != this) {
        // A foreign item (an enclosing frame's, or a continuation) goes back
        // where it came from: pop and push with no suspension in between, so
        // `d` is still this worker's active deque.
        WEFT_ASSERT(detail::current_worker()->active.load(std::memory_order_relaxed) == d,
                    "task_group::join pushes a foreign item back on the deque it popped it from");
        d->push(item);
        break;
      }
      item->execute(item);
    }
    // Drop the parent's bias; whoever brings the count to zero is last.
    // acq_rel: acquire makes the stolen children's writes visible to us.
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) != 1) {
      detail::strand_boundary(detail::current_worker());
      detail::wait(all_done_);  // the last child sets it
    }
    all_done_.reset();
    // relaxed: no child is outstanding, nobody else touches the counter.
    outstanding_.store(1, std::memory_order_relaxed);
    least_urgent_child_ = -1;
  }

  void child_done() noexcept {
    // acq_rel: release publishes the child's work to the parent.
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) all_done_.set();
  }

  void record_error(std::exception_ptr e) noexcept {
    // acq_rel: the first failing child wins; its store of error_ is published
    // to the parent by its later release decrement of outstanding_.
    if (!error_claimed_.exchange(true, std::memory_order_acq_rel)) error_ = std::move(e);
  }
  std::exception_ptr take_error() noexcept {
    error_claimed_.store(false, std::memory_order_relaxed);
    return std::exchange(error_, nullptr);
  }

  // The owner makes the group's stop_source on first need (a token-taking
  // spawn, get_stop_token), never again: groups that are never stopped
  // through a token allocate nothing.
  void ensure_source() {
    // relaxed: only the owner writes has_source_.
    if (has_source_.load(std::memory_order_relaxed)) return;
    source_ = std::stop_source();
    // seq_cst: see request_stop (Dekker with stop_flag_).
    has_source_.store(true, std::memory_order_seq_cst);
    if (stop_flag_.load(std::memory_order_seq_cst)) source_.request_stop();
  }

  detail::worker_view* worker_;  // the creator's worker (validates the context)
  int least_urgent_child_ = -1;  // largest explicit child level so far (-1: none)
  // Children not yet finished, plus one for the parent until it syncs.
  // Invariant: outstanding_ == 1 + (spawned - finished) between syncs.
  std::atomic<std::int64_t> outstanding_{1};
  std::atomic<bool> error_claimed_{false};
  std::exception_ptr error_;
  detail::completion all_done_;
  // Cancellation. stop_flag_: request_stop() was called (permanent).
  // source_: written once by the owner before has_source_ is set, read-only
  // afterwards (children get tokens from it; request_stop() requests it).
  std::atomic<bool> stop_flag_{false};
  std::atomic<bool> has_source_{false};
  std::stop_source source_{std::nostopstate};
};

namespace detail {

template <class F>
using fj_result_t = std::conditional_t<std::is_void_v<std::invoke_result_t<F&>>, std::monostate,
                                       std::invoke_result_t<F&>>;

template <class F>
fj_result_t<F> invoke_to_value(F& f) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
    f();
    return {};
  } else {
    return f();
  }
}

// The record of fork_join's second branch; lives in the parent's frame, which
// outlives it because the parent joins before returning.
template <class G>
struct join_frame final : work_item {
  explicit join_frame(G& g) : work_item(&run, this), fn(g) {}
  static void run(work_item* item) noexcept {
    auto* self = static_cast<join_frame*>(item);
    try {
      self->result.emplace(invoke_to_value(self->fn));
    } catch (...) {
      self->error = std::current_exception();
    }
    self->done.set();  // last touch: the parent may leave its frame now
  }
  G& fn;
  std::optional<fj_result_t<G>> result;
  std::exception_ptr error;
  completion done;
};

}  // namespace detail

// Runs f and g in parallel and returns both results (void results become
// std::monostate). If either throws, the first exception (f's before g's) is
// rethrown after both have finished.
template <class F, class G>
std::pair<detail::fj_result_t<F>, detail::fj_result_t<G>> fork_join(F&& f, G&& g) {
  detail::worker_view* w = detail::require_worker("weft::fork_join");
  detail::chase_lev_deque* d = w->active.load(std::memory_order_relaxed);
  detail::join_frame<std::remove_reference_t<G>> frame(g);
  detail::push_task(w, d, &frame);
  detail::strand_boundary(w);
  std::optional<detail::fj_result_t<F>> a;
  std::exception_ptr error;
  try {
    a.emplace(detail::invoke_to_value(f));
  } catch (...) {
    error = std::current_exception();
  }
  // Re-read the deque: under the parsimonious policy f() may have suspended
  // and resumed on another worker's deque. Pop only our own record.
  d = detail::current_worker()->active.load(std::memory_order_relaxed);
  if (d->pop_if(&frame)) {
    // Not stolen: run the second branch inline (no atomic needed).
    try {
      frame.result.emplace(detail::invoke_to_value(g));
    } catch (...) {
      frame.error = std::current_exception();
    }
  } else {
    detail::wait(frame.done);  // stolen: suspend until the thief finishes it
    detail::strand_boundary(detail::current_worker());
  }
  if (error) std::rethrow_exception(error);
  if (frame.error) std::rethrow_exception(frame.error);
  return {std::move(*a), std::move(*frame.result)};
}

}  // namespace weft
