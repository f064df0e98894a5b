// weft — latency-hiding I/O (Cilk-L §3 and Concurrent Cilk §4): operations that
// suspend the task, never the worker.
//
//   auto f = weft::io::read(fd, buf, n);     // returns at once
//   ... compute ...
//   std::size_t got = f.get();               // suspends this task if needed;
//                                            // 0 means end of file
//
// Every operation returns an io_future at once. get() suspends the calling
// task until the operation completes while its worker runs other tasks; from
// a thread outside the runtime it blocks that thread. The future can be moved
// to another task, waited with a timeout, or cancelled.
//
// Errors: an operation that fails completes with a std::error_code (the
// errno, in std::system_category(), or a std::errc value). get() throws
// std::system_error carrying it; get(std::error_code&) returns it instead.
// End of file is not an error: read/recv complete with 0 bytes.
//  * fd < 0, or closed                → EBADF (std::errc::bad_file_descriptor)
//    — also a pending operation whose descriptor io::close closed
//  * null buffer with a length > 0,   → std::errc::invalid_argument
//    or a length > SSIZE_MAX (a negative length converted to size_t);
//    also a negative offset (pread/pwrite), iovcnt < 0 or > IOV_MAX or a
//    null iovec array with iovcnt > 0 (readv/writev), a null msghdr
//    (recvmsg/sendmsg), addr without addrlen (recvfrom), a null addr with
//    addrlen > 0 (sendto)
//  * cancel(), a deadline passed to get_until/get_for, or the end of the
//    runtime's shutdown grace period (options::shutdown_grace) while the
//    operation is pending → std::errc::operation_canceled (get_until/get_for
//    report std::errc::timed_out instead)
//  * a write to a pipe, FIFO or socket whose reader has gone → EPIPE
//    (std::errc::broken_pipe), never SIGPIPE (docs/io.md)
//
// Semantics follow the system calls: one read/recv/write/send transfers at
// most `len` bytes and may transfer fewer (a partial transfer); use read_exact
// or write_all for loops. File descriptors used with weft::io are switched to
// O_NONBLOCK (the epoll backend needs it; the others do not care), except by
// wait_readable/wait_writable, fsync/fdatasync and shutdown.
//
// Closing: close a descriptor weft operations may still be pending on with
// io::close(fd), not close(2). Every operation still pending on it (either
// direction, any task) completes with std::errc::bad_file_descriptor — its
// descriptor was closed by io::close — and then the descriptor is closed.
// A plain close(2) does not complete them: they stay pending (cancel them
// first, or let runtime shutdown cancel them), and a backend may go on
// using the number, which the kernel may already have given to a new file.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <future>
#include <span>
#include <stop_token>
#include <system_error>
#include <utility>

#include "weft/detail/io_operation.hpp"
#include "weft/detail/scheduler_hooks.hpp"
#include "weft/when.hpp"  // io_future::then, when_all/when_any over io_futures

namespace weft::io {

// An I/O operation's result. T is std::size_t (bytes transferred) for
// read/write/recv/send and their positional, vectored and datagram forms,
// int (the new descriptor) for accept, void for connect, readiness waits,
// fsync and sleeps.
template <class T>
class io_future {
 public:
  io_future() noexcept = default;
  io_future(io_future&& o) noexcept : op_(std::exchange(o.op_, nullptr)) {}
  io_future& operator=(io_future&& o) noexcept {
    if (this != &o) {
      reset();
      op_ = std::exchange(o.op_, nullptr);
    }
    return *this;
  }
  io_future(const io_future&) = delete;
  io_future& operator=(const io_future&) = delete;
  // Dropping a pending operation's future does not cancel it: it completes
  // in the background (call cancel() first to stop it). Exceptions: a pending
  // accept is cancelled (its connection stays in the listener's backlog for
  // the next accept), and a socket accepted for a future dropped without
  // get() is closed, never leaked; a pending readiness wait (wait_readable,
  // wait_writable) is cancelled, since it has no effect but its result, and
  // the destructor waits (briefly) for the backend to let go of the
  // descriptor, which its owner may then close.
  ~io_future() { reset(); }

  bool valid() const noexcept { return op_ != nullptr; }
  bool is_ready() const {
    check();
    return detail::io_ready(op_);
  }
  void wait() const {
    check();
    detail::io_wait(op_);
  }
  // Any duration or clock, max() and min() included: conversions saturate.
  template <class Rep, class Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period>& d) const {
    return wait_until(detail::deadline_after(d));
  }
  template <class Clock, class Duration>
  std::future_status wait_until(const std::chrono::time_point<Clock, Duration>& t) const {
    check();
    return detail::io_wait_until(op_, detail::to_steady_deadline(t)) ? std::future_status::ready
                                                                     : std::future_status::timeout;
  }

  // Requests cancellation. If the operation has not completed yet it
  // completes with operation_canceled; otherwise nothing happens. Returns
  // at once; wait() or get() to observe the outcome.
  void cancel() {
    check();
    detail::io_cancel(op_);
  }

  // Waits, then returns the result or throws std::system_error. The future is
  // invalid afterwards (a second get throws std::future_error(no_state)).
  T get() {
    std::error_code ec;
    if constexpr (std::is_void_v<T>) {
      get(ec);
      if (ec) throw std::system_error(ec, "weft::io");
    } else {
      T v = get(ec);
      if (ec) throw std::system_error(ec, "weft::io");
      return v;
    }
  }
  // Non-throwing form: on failure returns T{} and sets ec.
  T get(std::error_code& ec) {
    check();
    detail::io_wait(op_);
    return take(ec);
  }

  // Cancellation by token (docs/api.md "Cancellation"): a stop requested
  // while the operation is pending cancels the operation itself (as
  // cancel()), so it completes with std::errc::operation_canceled — unless
  // it completed first, in which case its result is returned. get(stop)
  // throws std::system_error(ec, "weft::io"); get(stop, ec) sets ec; wait(stop)
  // returns once the operation has completed (or been cancelled). A blocking
  // backend's operation being performed by its waiter (deferred) is not
  // interrupted: the stop takes effect if it comes before it starts.
  T get(const std::stop_token& stop) {
    std::error_code ec;
    if constexpr (std::is_void_v<T>) {
      get(stop, ec);
      if (ec) throw std::system_error(ec, "weft::io");
    } else {
      T v = get(stop, ec);
      if (ec) throw std::system_error(ec, "weft::io");
      return v;
    }
  }
  T get(const std::stop_token& stop, std::error_code& ec) {
    wait(stop);
    return take(ec);
  }
  void wait(const std::stop_token& stop) const {
    check();
    if (!stop.stop_possible()) return detail::io_wait(op_);
    detail::io_operation* op = op_;
    // Runs inline if stop was already requested. Destroyed before the future
    // can let go of op (it waits for a callback running elsewhere).
    std::stop_callback cb(stop, [op]() noexcept { detail::io_cancel_noexcept(op); });
    detail::io_wait(op);
  }

  // Waits at most until the deadline; if the operation is still pending then,
  // cancels it and fails with std::errc::timed_out (unless it completed in the
  // meantime, in which case its result is returned). Any duration or clock,
  // max() included: conversions saturate, so get_for(seconds::max()) waits
  // for as long as get() does.
  template <class Clock, class Duration>
  T get_until(const std::chrono::time_point<Clock, Duration>& t) {
    std::error_code ec;
    if constexpr (std::is_void_v<T>) {
      get_until(t, ec);
      if (ec) throw std::system_error(ec, "weft::io");
    } else {
      T v = get_until(t, ec);
      if (ec) throw std::system_error(ec, "weft::io");
      return v;
    }
  }
  template <class Clock, class Duration>
  T get_until(const std::chrono::time_point<Clock, Duration>& t, std::error_code& ec) {
    check();
    if (!detail::io_wait_until(op_, detail::to_steady_deadline(t))) {
      detail::io_cancel(op_);
      detail::io_wait(op_);
      op_->timed_out_by_deadline = true;
    }
    return take(ec);
  }
  template <class Rep, class Period>
  T get_for(const std::chrono::duration<Rep, Period>& d) {
    return get_until(detail::deadline_after(d));
  }
  template <class Rep, class Period>
  T get_for(const std::chrono::duration<Rep, Period>& d, std::error_code& ec) {
    return get_until(detail::deadline_after(d), ec);
  }

  // ---- Composition (weft/when.hpp documents it) ----------------------------
  // Attaches a continuation: fn(std::move(*this)) runs as a task (at the
  // level of the task calling then) once the operation has completed;
  // returns a weft::future of its result. This io_future is invalid
  // afterwards. Throws future_error(no_state) if invalid, std::logic_error
  // outside a runtime's task.
  template <class F>
  auto then(F&& fn) -> future<weft::detail::then_result_t<F, io_future<T>>> {
    return weft::detail::compose_then(std::move(*this), std::forward<F>(fn));
  }
  // ---- end of composition

 private:
  friend struct weft::detail::when_access;
  template <class U>
  friend io_future<U> detail::make_io_future(detail::io_operation*) noexcept;
  explicit io_future(detail::io_operation* op) noexcept : op_(op) {}

  void check() const {
    if (!op_) throw std::future_error(std::future_errc::no_state);
  }
  T take(std::error_code& ec) {
    detail::io_operation* op = std::exchange(op_, nullptr);
    struct releaser {
      detail::io_operation* op;
      ~releaser() { op->release(); }
    } r{op};
    op->result_taken = true;
    ec = op->error;
    // The flag first: comparing with an errc is a virtual call (the
    // category's equivalent()), not worth paying on every get().
    if (op->timed_out_by_deadline && ec == std::errc::operation_canceled)
      ec = std::make_error_code(std::errc::timed_out);
    if constexpr (std::is_void_v<T>) {
      return;
    } else {
      if (ec) return T{};
      return static_cast<T>(op->result);
    }
  }
  void reset() noexcept {
    if (op_) detail::io_drop(op_);
    op_ = nullptr;
  }
  detail::io_operation* op_ = nullptr;
};

// Reads at most len bytes (read(2)); 0 at end of file.
io_future<std::size_t> read(int fd, void* buf, std::size_t len);
// Writes at most len bytes (write(2)).
io_future<std::size_t> write(int fd, const void* buf, std::size_t len);
// recv(2) / send(2); send always adds MSG_NOSIGNAL (a closed peer gives EPIPE,
// never SIGPIPE).
io_future<std::size_t> recv(int fd, void* buf, std::size_t len, int flags = 0);
io_future<std::size_t> send(int fd, const void* buf, std::size_t len, int flags = 0);
// accept4(2) with SOCK_CLOEXEC | SOCK_NONBLOCK; the result is the new socket.
// addr/addrlen may be null.
io_future<int> accept(int listen_fd, sockaddr* addr = nullptr, socklen_t* addrlen = nullptr);
// connect(2) on a socket; completes when the connection is established or has
// failed (ECONNREFUSED, ...). addr must stay valid until completion.
io_future<void> connect(int fd, const sockaddr* addr, socklen_t addrlen);
// Completes at the deadline (or after the duration), suspending only the task.
// Any duration or clock, max() included (conversions saturate).
io_future<void> sleep_until(std::chrono::steady_clock::time_point deadline);
template <class Clock, class Duration>
io_future<void> sleep_until(const std::chrono::time_point<Clock, Duration>& t) {
  return sleep_until(detail::to_steady_deadline(t));
}
template <class Rep, class Period>
io_future<void> sleep_for(const std::chrono::duration<Rep, Period>& d) {
  return sleep_until(detail::deadline_after(d));
}

// ---- Readiness of descriptors owned by other libraries (libcurl, c-ares,
// a database driver...). Completes when poll(2) would report POLLIN
// (wait_readable) or POLLOUT (wait_writable) for fd, or POLLERR/POLLHUP: the
// owner's next call on the descriptor then reports what happened. Nothing is
// read or written, and the descriptor's flags are left alone (it is not
// switched to O_NONBLOCK: its owner decides). Level-triggered: a descriptor
// that is ready completes the wait at once. Use get_for/get_until for the
// library's timeouts. The owner must not close fd while a wait is pending:
// finish it first (get, a get_for that timed out, or dropping the future,
// which cancels the wait and returns once the backend has let go of fd).
io_future<void> wait_readable(int fd);
io_future<void> wait_writable(int fd);

// ---- Positional and vectored I/O (pread(2), pwrite(2), readv(2), writev(2)).
// pread/pwrite leave the file position alone; offset < 0 is invalid_argument,
// a descriptor that cannot seek (pipe, socket, tty) is ESPIPE.
// readv/writev: the iovec array (and the buffers it points to) must stay
// valid and unchanged until the operation completes; iovcnt <= IOV_MAX. On a
// regular file the epoll backend performs them on its I/O thread, the
// io_uring backend asynchronously in the kernel (never on the worker).
io_future<std::size_t> pread(int fd, void* buf, std::size_t len, off_t offset);
io_future<std::size_t> pwrite(int fd, const void* buf, std::size_t len, off_t offset);
io_future<std::size_t> readv(int fd, const iovec* iov, int iovcnt);
io_future<std::size_t> writev(int fd, const iovec* iov, int iovcnt);
// fsync(2) / fdatasync(2), never on the worker (epoll: its I/O thread;
// io_uring: IORING_OP_FSYNC). Ordered after the writes on fd started before
// it, like any operation in fd's write direction.
io_future<void> fsync(int fd);
io_future<void> fdatasync(int fd);

// ---- Datagrams (and any socket). recvfrom(2) / sendto(2) / recvmsg(2) /
// sendmsg(2); the send forms always add MSG_NOSIGNAL, as send does.
// Everything passed by pointer (buffers, addr/addrlen, the msghdr, its iovec
// array, name and control buffers) must stay valid until completion.
// MSG_WAITALL is honoured by recv only. recvfrom: addr/addrlen may be null;
// *addrlen is in/out, as for recvfrom(2). recvmsg: the kernel updates
// msg_namelen, msg_controllen and msg_flags; descriptors received with
// SCM_RIGHTS belong to the caller (a future dropped without get() leaks
// them).
io_future<std::size_t> recvfrom(int fd, void* buf, std::size_t len, int flags = 0,
                                sockaddr* addr = nullptr, socklen_t* addrlen = nullptr);
io_future<std::size_t> sendto(int fd, const void* buf, std::size_t len, int flags,
                              const sockaddr* addr, socklen_t addrlen);
io_future<std::size_t> recvmsg(int fd, msghdr* msg, int flags = 0);
io_future<std::size_t> sendmsg(int fd, const msghdr* msg, int flags = 0);

// ---- shutdown(2), synchronous: it never blocks (SHUT_WR queues a FIN
// behind the data already sent), so there is no future. Throws
// std::system_error (EBADF for fd < 0, ENOTCONN, ENOTSOCK...); the second
// form reports the error in ec instead. Callable from any thread. A peer
// waiting in recv sees end of file after SHUT_WR.
void shutdown(int fd, int how);
void shutdown(int fd, int how, std::error_code& ec) noexcept;

// ---- close(2) for descriptors used with weft::io. Every weft operation
// still pending on fd — read or write direction, started by any task, on any
// backend — completes with std::errc::bad_file_descriptor ("its descriptor
// was closed by io::close"); then fd is closed with close(2). When close
// returns, no backend touches fd any more: the number may be reused at once
// (a new socket, pipe...) with no stale state. An operation that completed
// (or was completing) before the call keeps its result; one started on fd
// concurrently with the call, by another task, is not covered (that race is
// the caller's, as with close(2)). Inside a task only (std::logic_error
// elsewhere, like the operations); the task may be suspended briefly — never
// its worker — while the backend lets go of fd: the epoll_threads backend's
// I/O thread, io_uring's kernel cancellation, or, on the blocking backend, a
// task performing an operation on fd, which notices within one 50 ms poll
// slice. Throws std::system_error (EBADF for fd < 0 or a descriptor that is
// not open, EIO...); the second form reports it in ec instead (EINTR from
// close(2) is not an error: the descriptor is closed). Either way the pending
// operations have been completed.
void close(int fd);
void close(int fd, std::error_code& ec);

// Span conveniences.
inline io_future<std::size_t> read(int fd, std::span<std::byte> buf) {
  return read(fd, buf.data(), buf.size());
}
inline io_future<std::size_t> write(int fd, std::span<const std::byte> buf) {
  return write(fd, buf.data(), buf.size());
}

// Loops until len bytes are read, EOF (returns fewer) or an error (throws).
std::size_t read_exact(int fd, void* buf, std::size_t len);
// Loops until all len bytes are written; throws std::system_error on error.
void write_all(int fd, const void* buf, std::size_t len);

// The backend the calling task's runtime uses (inside a task), for logs/tests.
const char* backend_name();

}  // namespace weft::io
