// weft — the interface every I/O backend implements (the class is
// io_driver, so as not to share its name with the option enum
// weft::io_backend that picks one), and the factories of the four.
#pragma once

#include <memory>

#include "io_common.hpp"
#include "weft/detail/scheduler_hooks.hpp"

namespace weft::detail {

class io_driver {
 public:
  virtual ~io_driver() = default;
  virtual const char* name() const noexcept = 0;
  // Takes over the backend's reference to `op` and eventually completes it
  // (io_complete). `w` is the calling worker, or nullptr on other threads.
  virtual void submit(io_op* op, worker_view* w) = 0;
  // Cancellation request for a submitted operation (the caller holds a
  // reference; op->cancel_requested is already set).
  virtual void cancel(io_op* op) = 0;
  // Completes every pending operation with ECANCELED and every later one at
  // once. Called by ~runtime before it drains the tasks.
  virtual void begin_shutdown() = 0;
  // io::close(fd), before the descriptor is closed: completes every
  // operation of this backend still pending on descriptor `fd` (either
  // direction, any task; regular-file operations and those a helper backend
  // holds included) with EBADF, and returns only once the backend will not
  // touch fd again: no system call on it, nothing for it in an epoll set or
  // a ring. The caller may then close(2) it and the number be reused at
  // once. An operation that is completing already keeps its result.
  // Operations started on fd concurrently with the call (not before it) are
  // not covered. Called inside a task (or on a plain thread): it may suspend
  // the caller (detail::wait, never a busy loop) until an I/O thread, the
  // kernel or a blocking-backend performer has let go of fd.
  virtual void close_fd(int fd) = 0;

  // Backends whose readiness is polled by the workers themselves (netpoll):
  // an idle worker calls poll(), and one at a time blocks in it.
  // Operations are waiting for readiness (a hint: relaxed).
  virtual bool has_waiters() const noexcept { return false; }
  // Completes the operations whose descriptors are ready; `block`: wait
  // until there are some or interrupt() is called. Returns how many
  // operations it completed. Workers only.
  virtual unsigned poll(bool block) noexcept {
    (void)block;
    return 0;
  }
  // poll() in two steps, so that a worker can leave its park between them:
  // waits (or not) for events and keeps them for this thread; then performs
  // and completes their operations.
  virtual bool wait_events(bool block) noexcept {
    (void)block;
    return false;
  }
  virtual unsigned complete_events() noexcept { return 0; }
  // Ends a blocking wait early (any thread).
  virtual void interrupt() noexcept {}
};

std::unique_ptr<io_driver> make_epoll_backend(unsigned workers, bool try_first);
std::unique_ptr<io_driver> make_netpoll_backend(bool try_first);
std::unique_ptr<io_driver> make_uring_backend(unsigned workers, bool try_first);  // throws if unavailable
std::unique_ptr<io_driver> make_blocking_backend();

}  // namespace weft::detail

namespace weft::detail {
class scheduler;
// The runtime's backend, created on first use (thread-safe).
io_driver* scheduler_io_driver(scheduler* s);
}  // namespace weft::detail
