// weft — one pending I/O operation: what to do, its result, and the
// completion a waiting task suspends on. Shared by io_future (one reference)
// and the backend (one reference until it completes the operation).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <system_error>

#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/scheduler_hooks.hpp"

namespace weft::io {
template <class T> class io_future;
}

namespace weft::detail {

class io_backend;

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
  // Decides, once, who completes the operation (the backend when the syscall
  // finishes, or a canceller). 0 = pending, 1 = completed.
  std::atomic<std::uint32_t> completed{0};

  io_kind kind = io_kind::read;
  int fd = -1;
  int flags = 0;
  void* buf = nullptr;
  std::size_t len = 0;
  sockaddr* addr = nullptr;             // accept, recvfrom
  socklen_t* addrlen = nullptr;         // accept, recvfrom
  const sockaddr* peer = nullptr;       // connect, sendto
  socklen_t peer_len = 0;               // connect, sendto
  bool connect_started = false;         // connect: the first connect() returned EINPROGRESS
  long long offset = 0;                 // pread, pwrite (validated >= 0)
  const iovec* iov = nullptr;           // readv, writev: the caller's array
  int iovcnt = 0;                       // readv, writev
  // recvmsg/sendmsg: the caller's header. recvfrom/sendto: points to
  // own_msg, which io_uring needs (it has no recvfrom/sendto opcode).
  msghdr* msg = nullptr;
  msghdr own_msg{};                     // recvfrom, sendto (io_uring)
  iovec own_iov{};                      // recvfrom, sendto (io_uring)
  std::size_t transferred = 0;          // recv with MSG_WAITALL: bytes so far
  bool uring_poll_armed = false;        // io_uring: waiting for readiness, then retry
  // prepare_io has run on the submitting worker (try-first), and its finding.
  bool prepared = false;
  bool regular_file = false;
  std::chrono::steady_clock::time_point deadline{};  // timeout
  std::int64_t kernel_timespec[2] = {0, 0};  // io_uring timeout storage
  // Set by io_cancel before it notifies the backend; a backend that receives
  // the operation later completes it as cancelled (acq_rel exchange/loads).
  std::atomic<bool> cancel_requested{false};
  // Set by io::close (io_backend::close_fd) before it stops an operation the
  // backend cannot simply dequeue (one in the kernel, or being performed):
  // its completer reports EBADF rather than ECANCELED or "would block".
  std::atomic<bool> fd_closed{false};

  // Written by the completer before done.set(), read after done is seen.
  long long result = 0;
  std::error_code error;
  bool timed_out_by_deadline = false;  // the future's owner only
  // The future's owner took the result (io_future::take). Until then an
  // accepted descriptor belongs to the operation: if the last reference goes
  // without anyone taking it (a dropped future), io_operation_destroy closes
  // it rather than leak it and leave its client connected to nobody.
  bool result_taken = false;

  io_backend* backend = nullptr;
  // Set by a backend that leaves the operation to be performed by whoever
  // waits for it (the blocking backend, for an operation that would block):
  // io_wait and friends then drive it through the backend. Written before the
  // future is handed out; read by the future's owner.
  bool deferred = false;
  // Counted in the backend's per-descriptor order (fd_order.hpp) until it
  // completes; written and read by the submitting thread and the completer.
  bool ordered = false;
  // Backend bookkeeping (guarded by the backend's own rules).
  unsigned home = 0;                    // I/O thread or ring index
  // Intrusive link of the epoll backend's submission queue (mpsc_queue.hpp).
  std::atomic<io_operation*> next{nullptr};
  // Intrusive link of the netpoll backend's per-descriptor waiter lists
  // (guarded by that descriptor's lock).
  io_operation* wait_next = nullptr;

  void add_ref() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept;
};

// Frees `op`, closing a descriptor it accepted that nobody took (io_common.cpp).
void io_operation_destroy(io_operation* op) noexcept;

inline void io_operation::release() noexcept {
  // acq_rel: the last owner sees every write (the completion included)
  // before freeing.
  if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) io_operation_destroy(this);
}

// Completes `op` with a syscall-style result (res >= 0, or -errno) unless it
// was completed already; drops the backend's reference. Returns true if this
// call completed it. Any thread.
bool io_complete(io_operation* op, long long res) noexcept;
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
