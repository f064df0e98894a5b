// weft — the threads weft starts for itself: workers, I/O threads, the
// io_uring reapers, the timer thread and the APS master. Two rules hold for
// every one of them:
//
//  * A failure to create the thread (RLIMIT_NPROC, a pids cgroup, RLIMIT_AS)
//    is reported by the call that needed it, before anything depends on the
//    thread, as std::system_error carrying the errno and a message that starts
//    with "weft: cannot start <what>". It is never raised in a noexcept
//    context (that would be std::terminate) and never leaves a flag claiming
//    that the thread runs.
//  * SIGPIPE is blocked in the thread from its first instruction. A write to a
//    pipe, FIFO or socket whose reader has gone then fails with EPIPE instead
//    of killing the process, whatever the process's disposition of SIGPIPE;
//    the signal the kernel raised stays pending in the thread and is discarded
//    by sigpipe_guard. Threads a task creates inherit the mask (docs/io.md).
#pragma once

#include <signal.h>

#include <system_error>
#include <thread>
#include <utility>

namespace weft::detail {

// Blocks SIGPIPE in the calling thread and marks it as one of weft's own.
void enter_own_thread() noexcept;

// Throws std::system_error(e.code(), "weft: cannot start <what>: ...").
[[noreturn]] void throw_thread_error(const char* what, const std::system_error& e);

// Starts `body` on a new thread of weft's own (see above). `what` names the
// thread in the error message ("the timer thread", ...).
template <class F>
std::thread start_thread(const char* what, F&& body) {
  try {
    return std::thread([fn = std::forward<F>(body)]() mutable {
      enter_own_thread();
      fn();
    });
  } catch (const std::system_error& e) {
    throw_thread_error(what, e);
  }
}

// Wraps one system call that may raise SIGPIPE (write(2) to a pipe, FIFO or
// socket): construct it before the call and call failed_with_epipe() if the
// call failed with EPIPE. On weft's own threads SIGPIPE is blocked already,
// so only the pending signal is discarded (an EPIPE costs one sigtimedwait;
// a successful write costs nothing). On other threads (a plain thread waiting
// on a blocking-backend operation performs it itself) SIGPIPE is blocked for
// the duration of the call and the mask restored afterwards; a SIGPIPE that
// was pending before is left alone.
class sigpipe_guard {
 public:
  sigpipe_guard() noexcept;
  ~sigpipe_guard();
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;
  void failed_with_epipe() noexcept { epipe_ = true; }

 private:
  bool foreign_ = false;       // not one of weft's threads: mask changed here
  bool was_pending_ = false;   // foreign only: SIGPIPE was pending before
  bool epipe_ = false;
  sigset_t old_mask_{};        // foreign only: the mask to restore
};

}  // namespace weft::detail
