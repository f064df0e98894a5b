// weft — blocking calls on helper threads (docs/io.md §Blocking calls).
//
//   weft::future<std::string> f = weft::spawn_blocking(read_config, path);
//   ... other work ...
//   std::string cfg = f.get();   // suspends this task, never its worker
//
// Some calls can only block: a library without a non-blocking API,
// getaddrinfo, a read from a slow disk. Run inside a task they would block
// the worker and every task queued behind it. spawn_blocking(f, args...) runs
// f(args...) on a bounded pool of helper threads owned by the calling task's
// runtime (options::blocking_threads) and returns a weft::future at once; its
// get() suspends the calling task (or blocks a plain thread) until the call
// has returned, and rethrows what f threw.
//
// Rules:
//  * Inside a task only: from any other thread spawn_blocking throws
//    std::logic_error (as task_group does). Nothing has run then.
//  * The pool starts a helper thread when a call finds none idle, up to
//    options::blocking_threads; further calls wait in a FIFO queue. A thread
//    idle for options::blocking_keep_alive exits.
//  * If no helper thread runs and none can be started (a thread limit),
//    spawn_blocking throws std::system_error ("weft: cannot start a
//    blocking-call thread ...") and queues nothing. If some run already, the
//    call is queued for them instead.
//  * A call counts as a task of the runtime: ~runtime waits for every call
//    spawned, including those still queued at shutdown (no call is lost). A
//    running call cannot be interrupted: ~runtime waits for it to return,
//    whatever options::shutdown_grace says.
//  * f runs on a plain thread, not in a task: task_group and other task-only
//    APIs throw there (weft::async starts its task on the default runtime,
//    weft/async.hpp); waits (future::get, ...) block that helper thread.
//  * The result is delivered by a worker: the helper hands the finished call
//    back to the runtime, and a worker marks the future ready (that is how
//    the call is counted finished). So the future becomes ready only once a
//    worker is free to take that step: a task that spins on is_ready() with
//    every worker busy (or a runtime whose workers are all blocked) waits.
//  * Arguments are decay-copied, as with weft::async. f and the copies are
//    destroyed on the helper thread right after the call.
#pragma once

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "weft/future.hpp"

namespace weft {

namespace detail {

// A call queued on a runtime's blocking pool (src/blocking_pool.hpp).
struct blocking_job {
  using run_fn = void (*)(blocking_job*) noexcept;
  explicit blocking_job(run_fn fn) noexcept : run(fn) {}
  run_fn run;                    // called once, on a helper thread
  scheduler* sched = nullptr;    // set by submit_blocking
  int level = -1;                // the spawning task's level (for the finish item)
  blocking_job* next = nullptr;  // guarded by the pool's lock
};

// Queues `job` on the pool of w's runtime and counts it as a task started on
// w (the job's finish item, run later on a worker, counts it finished).
// Throws std::system_error if no helper thread runs and none can be started;
// then nothing is queued or counted.
void submit_blocking(worker_view* w, blocking_job* job);

// Builds futures from states (future<T>'s constructor is private).
struct future_access {
  template <class T>
  static future<T> make(future_state<T>* s) noexcept { return future<T>(s); }
};

// The state of one spawn_blocking call: the future's state, the pool's job
// and the work item that finishes it on a worker, in one allocation.
//
// Why finish on a worker rather than on the helper thread: the call is
// counted as a task of the runtime, and a task is counted finished by the
// worker that ran it (per-worker single-writer counters); the drain in
// ~runtime then covers blocking calls with no code of its own. It also lets
// an exception be recorded against the runtime (unobserved_exceptions).
template <class R, class Fn>
class blocking_call final : public future_state<R>, public work_item, public blocking_job {
 public:
  // Two references: the future's and the execution's.
  explicit blocking_call(Fn&& fn)
      : future_state<R>(2), work_item(&finish), blocking_job(&run_call), fn_(std::move(fn)) {}

 private:
  // On a helper thread.
  static void run_call(blocking_job* job) noexcept {
    auto* self = static_cast<blocking_call*>(job);
    try {
      if constexpr (std::is_void_v<R>) {
        (*self->fn_)();
        self->emplace();
      } else {
        self->emplace((*self->fn_)());
      }
    } catch (...) {
      self->error_ = std::current_exception();
    }
    self->fn_.reset();  // the captures go now, not when the future does
    // Cannot fail for want of the APS master: the spawning task ran at
    // `level`, so the master runs if that level is not the default one.
    // (std::bad_alloc from the injection queue would terminate, as it
    // would in make_resumable.)
    inject(job->sched, static_cast<work_item*>(self), job->level);
  }
  // On a worker of the runtime, after run_call: same order as async_task::run
  // (counted finished, then published, then the execution's reference goes).
  static void finish(work_item* item) noexcept {
    auto* self = static_cast<blocking_call*>(item);
    if (self->error_) self->set_task_error(std::move(self->error_));
    task_finished();
    self->publish();
    self->release();  // may free self
  }

  std::optional<Fn> fn_;
  std::exception_ptr error_;  // written by run_call, read by finish (ordered by inject)
};

}  // namespace detail

// Runs f(args...) on a helper thread of the calling task's runtime and returns
// its future (see above). Must be called from inside a task.
template <class F, class... Args>
[[nodiscard]] auto spawn_blocking(F&& f, Args&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>> {
  using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>;
  detail::worker_view* w = detail::require_worker("weft::spawn_blocking");
  auto inv = detail::make_invoker(std::forward<F>(f), std::forward<Args>(args)...);
  using call_t = detail::blocking_call<R, decltype(inv)>;
  auto* call = new call_t(std::move(inv));
  // The future takes the future's reference now, so that a throwing submit
  // frees the state (the execution's reference is dropped there too).
  future<R> result = detail::future_access::make(static_cast<detail::future_state<R>*>(call));
  try {
    detail::submit_blocking(w, static_cast<detail::blocking_job*>(call));
  } catch (...) {
    static_cast<detail::future_state_base*>(call)->release();  // the execution's
    throw;
  }
  return result;
}

}  // namespace weft
