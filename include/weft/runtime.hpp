// weft — the runtime: a pool of workers that run tasks.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "weft/detail/scheduler_hooks.hpp"
#include "weft/future.hpp"
#include "weft/priority_level.hpp"

namespace weft {

template <unsigned P> struct priority_tag;

namespace detail {
bool is_worker_of(const scheduler& s) noexcept;
}

// What a worker does when its task blocks (docs/design.md §Policies).
//  proactive    ProWS (Cilk-L §4.2): suspend the active deque with the task,
//               donate it to a random worker, take a fresh deque and steal;
//               a resumed task's continuation goes to the bottom of its deque.
//  parsimonious ParWS (latency-hiding work stealing §3, Figure 3): keep working on the same
//               deque; resumed tasks are collected per worker and re-injected
//               as a parallel loop over them; a worker takes its own resumed
//               tasks before stealing.
enum class steal_policy { proactive, parsimonious };

// How weft::io operations wait (docs/io.md §Backends).
//  automatic  the default: epoll (the fastest on this machine's benchmarks)
//  epoll      the workers poll one epoll set themselves when they run out of
//             work (one idle worker blocks in epoll_wait), as Go and Tokio
//             do; a ready operation is performed and its task resumed on the
//             worker that saw the event
//  epoll_threads  Cilk-L (Cilk-L): an I/O thread per worker; workers hand
//             operations that would block over a lock-free queue and an
//             eventfd; the I/O thread completes them
//  io_uring   a ring per worker; the worker submits directly, a reaper thread
//             per ring completes; regular files are truly asynchronous
//  blocking   the plain system call inside the task (blocks the worker, as
//             Cilk-F does): the baseline
enum class io_backend { automatic, epoll, io_uring, blocking, epoll_threads };

struct options {
  // Number of worker threads. 0 means: the WEFT_WORKERS environment variable
  // if set, else std::thread::hardware_concurrency().
  unsigned workers = 0;
  // Usable bytes of each fiber stack (a guard page is added below it). 0 means
  // the default: 1 MiB, or 4 MiB in sanitizer builds. Rounded up to pages.
  std::size_t stack_size = 0;
  steal_policy policy = steal_policy::proactive;
  io_backend io = io_backend::automatic;
  // epoll and io_uring: first try the operation with a non-blocking system
  // call on the worker, and hand it to the backend only if it would block.
  bool io_try_first = true;

  // Priority scheduling (docs/priorities.md). `adaptive` is APS (I-Cilk):
  // once the first task of a non-default level is spawned, workers move
  // between levels every quantum L (the workers run the quantum at their
  // boundaries and at once when urgent work arrives; a master thread, started
  // then, is the backup). `oblivious` ignores priorities (one pool), for
  // comparison.
  enum class priority_mode { adaptive, oblivious } priorities = priority_mode::adaptive;
  std::chrono::microseconds aps_quantum{500};  // L
  double aps_efficiency = 0.9;                  // delta
  double aps_responsiveness = 2.0;              // rho

  // Runtime shutdown (~runtime): how long outstanding tasks' I/O and sleeps
  // go on as usual while the destructor waits for the tasks. After it, every
  // deadline counts as reached: pending and new weft::io operations (sleeps
  // included) complete with operation_canceled, this_task::sleep_* returns,
  // and timed waits (wait_for, wait_until) time out. zero(): at once;
  // milliseconds::max(): never (the destructor then waits for the I/O too).
  std::chrono::milliseconds shutdown_grace{1000};

  // weft::spawn_blocking (weft/blocking.hpp): the most helper threads that
  // run blocking calls at once; further calls wait in a FIFO queue. 0 means
  // the default, 64: blocking calls mostly wait (DNS, disks, remote
  // services), so many may usefully overlap even on few cores, while 64
  // threads (a stack each, mostly unused) stay cheap. At most 4096, else
  // configuration_error. Threads start on demand; one idle for
  // blocking_keep_alive exits (zero: at once; not negative).
  unsigned blocking_threads = 0;
  std::chrono::milliseconds blocking_keep_alive{10000};
};

// Thrown when an option is invalid (for example WEFT_WORKERS=abc).
class configuration_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class runtime {
 public:
  runtime() : runtime(options{}) {}
  explicit runtime(const options& opts);
  // Waits for every outstanding task (including detached asyncs and tasks
  // blocked on events that later tasks fulfil), then joins the workers.
  // A task blocked forever on an event nobody sets keeps it waiting, as an
  // unjoined std::thread would; see docs/api.md.
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // Runs f() as the root task, blocks the calling thread until it finishes,
  // returns its result or rethrows its exception. Called from a task of this
  // runtime, it simply calls f() in that task.
  template <class F>
  std::invoke_result_t<std::decay_t<F>> run(F&& f);

  // run() for a root task of priority p.
  template <class F>
  std::invoke_result_t<std::decay_t<F>> run(priority p, F&& f) {
    if (detail::is_worker_of(*sched_)) return std::forward<F>(f)();
    return detail::launch_async_at(sched_.get(), static_cast<int>(p.level()), std::forward<F>(f)).get();
  }
  // Typed root: runs f(ctx) at level P, ctx being the root task's
  // task_context<P>. Defined in weft/priority.hpp, which declares the types.
  template <unsigned P, class F>
  auto run(priority_tag<P>, F&& f);

  // Starts f(args...) as a task from any thread; the future may be waited on
  // from any thread.
  template <class F, class... Args>
  auto async(F&& f, Args&&... args)
      -> future<detail::async_result_t<F, Args...>>;

  unsigned worker_count() const noexcept;
  std::size_t stack_size() const noexcept;
  const options& configuration() const noexcept;

  // Counters for tests and diagnostics.
  struct statistics {
    std::size_t fibers_created;     // stacks ever allocated
    std::size_t fibers_suspended;   // suspensions so far
    std::size_t steals;             // successful steals
    std::size_t parks;              // times a worker went to sleep
    // Exceptions thrown by this runtime's async tasks that nobody observed:
    // the future (and every shared_future) was dropped without a get() that
    // rethrew it. They are discarded, as std::future discards them; this
    // counts them (docs/api.md).
    std::size_t unobserved_exceptions;
    std::size_t blocking_threads;   // spawn_blocking helper threads alive now
  };
  statistics stats() const noexcept;

  detail::scheduler& scheduler() noexcept { return *sched_; }

 private:
  std::unique_ptr<detail::scheduler> sched_;
};

template <class F>
std::invoke_result_t<std::decay_t<F>> runtime::run(F&& f) {
  if (detail::is_worker_of(*sched_)) return std::forward<F>(f)();
  return async(std::forward<F>(f)).get();
}

template <class F, class... Args>
auto runtime::async(F&& f, Args&&... args)
    -> future<detail::async_result_t<F, Args...>> {
  return detail::launch_async(sched_.get(), std::forward<F>(f),
                              std::forward<Args>(args)...);
}

}  // namespace weft
