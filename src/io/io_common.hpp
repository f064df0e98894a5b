// weft — what every I/O backend shares (io_common.cpp): the backend-private
// part of an operation (io_op), its completion, the one-shot non-blocking
// system call, and the try-first prologue a submission runs on the worker.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "weft/detail/io_operation.hpp"

namespace weft::detail {

class io_driver;

// One operation as the backends see it: io_future's part (io_operation, the
// installed header) and everything only the backends use. Allocated once per
// operation (new_op in io_common.cpp), freed as an io_op by
// io_operation_destroy.
struct io_op final : io_operation {
  // Decides, once, who completes the operation (the backend when the syscall
  // finishes, or a canceller). 0 = pending, 1 = completed.
  std::atomic<std::uint32_t> completed{0};

  // The system call's arguments.
  int fd = -1;
  int flags = 0;
  void* buf = nullptr;
  std::size_t len = 0;
  sockaddr* addr = nullptr;             // accept, recvfrom
  socklen_t* addrlen = nullptr;         // accept, recvfrom
  const sockaddr* peer = nullptr;       // connect, sendto
  socklen_t peer_len = 0;               // connect, sendto
  long long offset = 0;                 // pread, pwrite (validated >= 0)
  const iovec* iov = nullptr;           // readv, writev: the caller's array
  int iovcnt = 0;                       // readv, writev
  // recvmsg/sendmsg: the caller's header. recvfrom/sendto: points to
  // own_msg, which io_uring needs (it has no recvfrom/sendto opcode).
  msghdr* msg = nullptr;
  std::chrono::steady_clock::time_point deadline{};  // timeout

  // Progress the attempts keep between them.
  bool connect_started = false;         // connect: the first connect() returned EINPROGRESS
  std::size_t transferred = 0;          // recv with MSG_WAITALL: bytes so far
  // prepare_io has run on the submitting worker (try_first), and its finding.
  bool prepared = false;
  bool regular_file = false;

  // Set by io_cancel before it notifies the backend; a backend that receives
  // the operation later completes it as cancelled. Release store (io_cancel),
  // acquire loads (the backends): the flag is all the reader uses, so the
  // pair orders nothing more; it states the hand-over and costs a plain load
  // on x86 (ldar on AArch64). That a backend's load sees the flag at all
  // rests on the backend's own lock or queue, taken after the store (each
  // backend says where).
  std::atomic<bool> cancel_requested{false};
  // Set by io::close (io_driver::close_fd) before it stops an operation the
  // backend cannot simply dequeue (one in the kernel, or being performed):
  // its completer reports EBADF rather than ECANCELED or "would block".
  // io_uring: stored and loaded under the ring's mutex (relaxed). Blocking
  // backend: stored under the lanes lock, loaded by the performer without it
  // (release/acquire, as cancel_requested: the flag alone is read).
  std::atomic<bool> fd_closed{false};

  io_driver* driver = nullptr;
  // Counted in the backend's per-descriptor order (fd_order.hpp) until it
  // completes; written and read by the submitting thread and the completer.
  bool ordered = false;
  // Backend bookkeeping (guarded by the backend's own rules).
  unsigned home = 0;                    // I/O thread or ring index
  // Intrusive link of the epoll_threads backend's submission queue
  // (mpsc_queue.hpp).
  std::atomic<io_op*> next{nullptr};
  // Intrusive link of the netpoll backend's per-descriptor waiter lists
  // (guarded by that descriptor's lock).
  io_op* wait_next = nullptr;
  // io_uring only: waiting for readiness (a poll request), then retry.
  bool uring_poll_armed = false;
  std::int64_t kernel_timespec[2] = {0, 0};  // timeout storage
  msghdr own_msg{};                          // recvfrom, sendto
  iovec own_iov{};                           // recvfrom, sendto
};

// The backends' view of an operation io_future holds: every io_operation is
// the base of an io_op (its constructor is protected; new_op makes them).
inline io_op* as_op(io_operation* op) noexcept { return static_cast<io_op*>(op); }

// Completes `op` with a syscall-style result (res >= 0, or -errno) unless it
// was completed already; drops the backend's reference. Returns true if this
// call completed it. Any thread.
bool io_complete(io_op* op, long long res) noexcept;

// Which readiness an operation waits for.
enum class io_direction { in, out, none };
io_direction direction_of(io_kind k) noexcept;

// One attempt at the system call, never blocking (MSG_DONTWAIT, O_NONBLOCK
// descriptors, poll with zero timeout for connect). Returns the result
// (>= 0) or -errno; -EAGAIN means "would block". EINTR is retried.
long long attempt_io(io_op* op) noexcept;

// Validates the arguments only (no system call); returns 0 or -errno.
long long validate_io(io_op* op) noexcept;
// recv/send/recvfrom/sendto/recvmsg/sendmsg: their system calls take
// MSG_DONTWAIT, so they need neither O_NONBLOCK nor a look at the
// descriptor's flags first (a closed or wrong descriptor fails in the call).
bool is_socket_message(io_kind k) noexcept;

// Validates arguments and prepares the descriptor; returns 0 or -errno.
// `make_nonblocking`: switch the descriptor to O_NONBLOCK (epoll, try-first).
// Sets *regular_file when fd is a regular file (or block device).
long long prepare_io(io_op* op, bool make_nonblocking, bool* regular_file) noexcept;

// ---- The try-first prologue: what a submission does on the submitting
// worker before it hands the operation to its backend (the epoll_threads,
// io_uring and netpoll backends; the blocking backend decides under its lane
// lock instead, blocking_backend.cpp).
//
// The per-descriptor order it must respect (docs/io.md; fd_order.hpp):
// operations on one descriptor in one direction complete in the order they
// were started. So the attempt on the worker is made only while `idle()`
// says that no operation on (fd, direction) is in the backend; an operation
// that is not completed here must be counted as in the backend (fd_order::
// enter, or netpoll's busy flag set under the descriptor's lock) before a
// later submission on the same (fd, direction) can call idle(). idle() is
// called at most once, after the operation was validated (fd >= 0).
//
// The differences between the backends are deliberate; they are the rules:
struct try_first_rules {
  // Make the attempt at all: options::io_try_first (and, for epoll_threads,
  // not shutting down). Without it the operation is only prepared here.
  bool attempt = true;
  // prepare_io's make_nonblocking: switch the descriptor to O_NONBLOCK.
  // epoll_threads and netpoll always (their later attempts, on an I/O thread
  // or a poller, must never block); io_uring only with try-first, because on
  // a blocking descriptor the kernel waits for readiness itself, while on an
  // O_NONBLOCK one it fails with EAGAIN and the ring arms a poll.
  bool make_nonblocking = true;
  // Socket messages (is_socket_message) are validated only, without
  // prepare_io's fcntl: their calls pass MSG_DONTWAIT. netpoll only: two
  // system calls per request in the echo benchmark's profile. The others keep
  // the fcntl (io_uring: O_NONBLOCK decides how the kernel waits, above).
  bool socket_messages_unprepared = false;
  // Attempt a connect here. Not on io_uring: an attempt starts the
  // connection (connect(2) returns EINPROGRESS), and the ring's
  // IORING_OP_CONNECT would then fail with EALREADY; the ring connects
  // itself.
  bool attempt_connect = true;
};

enum class try_first_result {
  completed,     // completed here (an error, or the attempt succeeded/failed)
  regular_file,  // never "not ready": hand it over (off the worker)
  queue,         // would block, or not attempted: hand it over
};

// op->kind is not a timeout. Sets op->prepared and op->regular_file.
template <class Idle>
try_first_result try_first(io_op* op, const try_first_rules& rules, Idle&& idle) {
  bool regular = false;
  long long r = rules.socket_messages_unprepared && is_socket_message(op->kind)
                    ? validate_io(op)
                    : prepare_io(op, rules.make_nonblocking, &regular);
  if (r < 0) {
    io_complete(op, r);
    return try_first_result::completed;
  }
  op->prepared = true;
  op->regular_file = regular;
  if (regular) return try_first_result::regular_file;
  if (rules.attempt && (rules.attempt_connect || op->kind != io_kind::connect) && idle()) {
    r = attempt_io(op);
    if (r != -EAGAIN) {
      io_complete(op, r);
      return try_first_result::completed;
    }
  }
  return try_first_result::queue;
}

}  // namespace weft::detail
