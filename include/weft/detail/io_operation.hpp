// weft — one pending I/O operation as io_future (weft/io.hpp) sees it: its
// completion, its result and its lifetime. Shared by io_future (one
// reference) and the backend (one reference until it completes the
// operation). What the backends need besides (the system call's arguments,
// their queues' links, cancellation flags) is in src/io/io_op.hpp, a struct
// derived from this one and allocated in its place: one allocation per
// operation, as before.
#pragma once

#include <atomic>
#include <cstdint>
#include <system_error>

#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/scheduler_hooks.hpp"

namespace weft::io {
template <class T> class io_future;
}

namespace weft::detail {

enum class io_kind : std::uint8_t {
  read, write, recv, send, accept, connect, timeout,
  // Readiness of a descriptor someone else owns (poll(2) semantics).
  wait_readable, wait_writable,
  // Positional and vectored file I/O.
  pread, pwrite, readv, writev, fsync, fdatasync,
  // Datagrams (and any socket): addresses and control messages.
  recvfrom, sendto, recvmsg, sendmsg,
};

struct io_operation {
  completion done;
  // Lifetime: the future's reference and the backend's (dropped when the
  // backend completes the operation). acq_rel decrements; the last frees.
  std::atomic<int> refs{2};

  io_kind kind = io_kind::read;  // io_drop: accepts and readiness waits are cancelled
  // Set by a backend that leaves the operation to be performed by whoever
  // waits for it (the blocking backend, for an operation that would block):
  // io_wait and friends then drive it through the backend. Written before the
  // future is handed out; read by the future's owner.
  bool deferred = false;
  bool timed_out_by_deadline = false;  // the future's owner only
  // The future's owner took the result (io_future::take). Until then an
  // accepted descriptor belongs to the operation: if the last reference goes
  // without anyone taking it (a dropped future), io_operation_destroy closes
  // it rather than leak it and leave its client connected to nobody.
  bool result_taken = false;

  // Written by the completer before done.set(), read after done is seen.
  long long result = 0;
  std::error_code error;

  // relaxed: the caller holds a reference already, so the operation is alive
  // and nothing is published by taking another (as std::shared_ptr's copy).
  void add_ref() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept;

 protected:
  // Only as the base of the backends' io_op (src/io/io_op.hpp), which
  // io_operation_destroy frees as such.
  io_operation() = default;
  ~io_operation() = default;
  io_operation(const io_operation&) = delete;
  io_operation& operator=(const io_operation&) = delete;
};

// Frees `op`, closing a descriptor it accepted that nobody took (io_common.cpp).
void io_operation_destroy(io_operation* op) noexcept;

inline void io_operation::release() noexcept {
  // acq_rel: the last owner sees every write (the completion included)
  // before freeing.
  if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) io_operation_destroy(this);
}

// Requests cancellation (see io_future::cancel).
void io_cancel(io_operation* op);
// The same where an exception cannot be thrown (a destructor): a backend that
// cannot record the request (std::bad_alloc) leaves the operation to complete.
void io_cancel_noexcept(io_operation* op) noexcept;

// The waits of io_future. An operation a backend deferred to its waiter is
// performed here (blocking the waiting task's worker, as the blocking backend
// does); any other just waits for its completion.
void io_drive(io_operation* op, steady_time deadline) noexcept;
inline void io_wait(io_operation* op) {
  if (op->deferred && !op->done.is_set()) io_drive(op, steady_time::max());
  wait(op->done);
}
inline bool io_wait_until(io_operation* op, steady_time deadline) {
  if (deadline == steady_time::max()) {  // no deadline
    io_wait(op);
    return true;
  }
  if (op->deferred && !op->done.is_set()) io_drive(op, deadline);
  return wait_until(op->done, deadline);
}
inline bool io_ready(io_operation* op) {
  // A deferred operation makes one attempt that does not wait.
  if (op->deferred && !op->done.is_set()) io_drive(op, steady_time::min());
  return op->done.is_set();
}
// The future lets go of `op`. A dropped future does not cancel its
// operation, on any backend (a deferred one is performed first), except:
//  * an accept: nobody could take its socket any more, so it is cancelled and
//    the connection stays in the listener's backlog for the next accept (if
//    it was accepted all the same, io_operation_destroy closes the socket);
//  * a readiness wait: it has no effect but its result, which nobody can see
//    any more; left pending it would keep watching a descriptor its owner
//    may close and reuse (and block a blocking-backend worker until ready).
//    The drop also waits for the cancellation to complete (promptly: no
//    readiness is awaited), because only then is the backend done with the
//    descriptor (the epoll backend removes it from its set before
//    completing): the owner may close it right after the drop.
inline void io_drop(io_operation* op) noexcept {
  const bool is_wait = op->kind == io_kind::wait_readable || op->kind == io_kind::wait_writable;
  if (is_wait && !op->done.is_set()) {
    try {
      io_cancel(op);
      io_wait(op);
    } catch (...) {
      // No memory to record the cancellation: the wait completes on its own.
    }
  }
  if (op->kind == io_kind::accept && !op->done.is_set()) io_cancel_noexcept(op);
  if (op->deferred && !op->done.is_set()) io_drive(op, steady_time::max());
  op->release();
}

template <class T>
io::io_future<T> make_io_future(io_operation* op) noexcept {
  return io::io_future<T>(op);
}

}  // namespace weft::detail
