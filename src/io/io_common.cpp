// weft — the public weft::io functions, completion and cancellation, and the
// system-call attempt shared by the backends.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <stdexcept>

#include "../own_threads.hpp"
#include "../scheduler.hpp"
#include "io_driver.hpp"
#include "weft/detail/assert.hpp"
#include "weft/io.hpp"

namespace weft::detail {

bool io_complete(io_op* op, long long res) noexcept {
  std::uint32_t expected = 0;
  // relaxed: the RMW alone makes exactly one completer (backend or
  // canceller). It publishes nothing (done.set() below, a release, publishes
  // the result), and a loser reads nothing the winner wrote.
  if (!op->completed.compare_exchange_strong(expected, 1, std::memory_order_relaxed)) return false;
  WEFT_ASSERT(!op->done.is_set(), "an I/O operation completed twice");
  if (res < 0) {
    op->result = 0;
    op->error = std::error_code(static_cast<int>(-res), std::system_category());
    if (res == -ECANCELED) op->error = std::make_error_code(std::errc::operation_canceled);
  } else {
    op->result = res;
  }
  op->done.set();
  op->release();  // the backend's reference
  return true;
}

void io_operation_destroy(io_operation* base) noexcept {
  io_op* op = as_op(base);
  // The last reference is gone; its completion, if any, is visible (acq_rel
  // in release). An accepted socket nobody took would leak, and its client
  // would stay connected to nobody: close it.
  // relaxed: ordered by the acq_rel of the last release() (above).
  if (op->kind == io_kind::accept && !op->result_taken &&
      op->completed.load(std::memory_order_relaxed) && !op->error && op->result >= 0)
    ::close(static_cast<int>(op->result));
  delete op;
}

void io_cancel_noexcept(io_operation* op) noexcept {
  try {
    io_cancel(op);
  } catch (...) {
    // No memory to record the request: the operation completes normally.
  }
}

void io_cancel(io_operation* base) {
  io_op* op = as_op(base);
  // relaxed: if it completed, nothing to do; nothing the completer wrote is
  // read here (a completion right after this load is handled by the
  // backend's cancel, which finds nothing to cancel).
  if (op->completed.load(std::memory_order_relaxed)) return;
  // release: see io_op::cancel_requested.
  op->cancel_requested.store(true, std::memory_order_release);
  if (op->driver) op->driver->cancel(op);
}

io_direction direction_of(io_kind k) noexcept {
  switch (k) {
    case io_kind::read:
    case io_kind::recv:
    case io_kind::accept:
    case io_kind::wait_readable:
    case io_kind::pread:
    case io_kind::readv:
    case io_kind::recvfrom:
    case io_kind::recvmsg:
      return io_direction::in;
    case io_kind::write:
    case io_kind::send:
    case io_kind::connect:
    case io_kind::wait_writable:
    case io_kind::pwrite:
    case io_kind::writev:
    case io_kind::sendto:
    case io_kind::sendmsg:
      return io_direction::out;
    case io_kind::fsync:
    case io_kind::fdatasync:
      // Never waits for readiness (prepare_io marks it a "regular file"
      // operation), but a direction keeps it in the descriptor's write lane:
      // it completes after the writes started before it.
      return io_direction::out;
    case io_kind::timeout:
      return io_direction::none;
  }
  return io_direction::none;
}

namespace {
bool is_wait(io_kind k) noexcept { return k == io_kind::wait_readable || k == io_kind::wait_writable; }
bool is_sync(io_kind k) noexcept { return k == io_kind::fsync || k == io_kind::fdatasync; }
// Operations with one (buf, len) buffer.
bool has_flat_buffer(io_kind k) noexcept {
  switch (k) {
    case io_kind::read:
    case io_kind::write:
    case io_kind::recv:
    case io_kind::send:
    case io_kind::pread:
    case io_kind::pwrite:
    case io_kind::recvfrom:
    case io_kind::sendto:
      return true;
    default:
      return false;
  }
}
// Operations on a file's contents, which may be a regular file (never "not
// ready": performed off the worker by epoll, asynchronously by io_uring).
bool is_file_io(io_kind k) noexcept {
  switch (k) {
    case io_kind::read:
    case io_kind::write:
    case io_kind::pread:
    case io_kind::pwrite:
    case io_kind::readv:
    case io_kind::writev:
      return true;
    default:
      return false;
  }
}
}  // namespace

bool is_socket_message(io_kind k) noexcept {
  switch (k) {
    case io_kind::recv:
    case io_kind::send:
    case io_kind::recvfrom:
    case io_kind::sendto:
    case io_kind::recvmsg:
    case io_kind::sendmsg:
      return true;
    default:
      return false;
  }
}

long long validate_io(io_op* op) noexcept {
  if (op->kind == io_kind::timeout) return 0;
  if (op->fd < 0) return -EBADF;
  if (has_flat_buffer(op->kind)) {
    if (op->len > static_cast<std::size_t>(SSIZE_MAX)) return -EINVAL;
    if (!op->buf && op->len > 0) return -EINVAL;
  }
  switch (op->kind) {
    case io_kind::connect:
      if (!op->peer) return -EINVAL;
      break;
    case io_kind::readv:
    case io_kind::writev:
      if (op->iovcnt < 0 || op->iovcnt > IOV_MAX) return -EINVAL;
      if (!op->iov && op->iovcnt > 0) return -EINVAL;
      break;
    case io_kind::pread:
    case io_kind::pwrite:
      // Also what keeps io_uring from reading -1 as "the current position".
      if (op->offset < 0) return -EINVAL;
      // pread(2) on a pipe, socket or tty is ESPIPE; io_uring would ignore
      // the offset on such a stream and read (or wait) instead. Say it now,
      // the same on every backend.
      if (::lseek(op->fd, 0, SEEK_CUR) < 0 && errno == ESPIPE) return -ESPIPE;
      break;
    case io_kind::recvfrom:
      if (op->addr && !op->addrlen) return -EINVAL;
      break;
    case io_kind::sendto:
      if (!op->peer && op->peer_len > 0) return -EINVAL;
      break;
    case io_kind::recvmsg:
    case io_kind::sendmsg:
      if (!op->msg) return -EINVAL;
      break;
    default:
      break;
  }
  return 0;
}

long long prepare_io(io_op* op, bool make_nonblocking, bool* regular_file) noexcept {
  *regular_file = false;
  if (op->kind == io_kind::timeout) return 0;
  if (long long r = validate_io(op); r < 0) return r;
  int fl = ::fcntl(op->fd, F_GETFL);
  if (fl < 0) return -errno;  // EBADF for a closed descriptor
  // Wrong direction (reading a write-only descriptor such as a pipe's write
  // end, or the reverse) is EBADF, as the system call says — and it must be
  // said now: such a descriptor never becomes ready for the other direction.
  // Not for connect (a socket), readiness waits (poll(2) accepts any
  // descriptor and reports what it reports) nor fsync (allowed on a
  // read-only descriptor).
  const int access = fl & O_ACCMODE;
  const io_direction dir = direction_of(op->kind);
  if (op->kind != io_kind::connect && !is_wait(op->kind) && !is_sync(op->kind)) {
    if (dir == io_direction::in && access == O_WRONLY) return -EBADF;
    if (dir == io_direction::out && access == O_RDONLY) return -EBADF;
  }
  if (is_sync(op->kind)) {
    // fsync never waits for readiness; it either fails at once (EINVAL on a
    // socket or pipe) or waits for the disk, which a worker must not do:
    // treat every descriptor as a regular file (performed off the worker).
    *regular_file = true;
    return 0;
  }
  if (is_file_io(op->kind) || is_wait(op->kind)) {
    struct stat st;
    if (::fstat(op->fd, &st) == 0 &&
        (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) ||
         // poll(2) reports a directory ready; epoll refuses it (EPERM).
         (is_wait(op->kind) && S_ISDIR(st.st_mode))))
      *regular_file = true;
  }
  // A readiness wait is for a descriptor another library owns (and drives
  // with its own calls, which may expect blocking mode): its flags are left
  // alone. The wait itself never blocks (poll with a zero timeout).
  if (make_nonblocking && !(fl & O_NONBLOCK) && !*regular_file && !is_wait(op->kind)) {
    if (::fcntl(op->fd, F_SETFL, fl | O_NONBLOCK) < 0) return -errno;
  }
  return 0;
}

long long attempt_io(io_op* op) noexcept {
  for (;;) {
    long long r = 0;
    switch (op->kind) {
      case io_kind::read:
        r = ::read(op->fd, op->buf, op->len);
        break;
      case io_kind::write: {
        // A pipe, FIFO or socket whose reader is gone raises SIGPIPE: it must
        // fail with EPIPE, never kill the process (own_threads.hpp).
        sigpipe_guard guard;
        r = ::write(op->fd, op->buf, op->len);
        if (r < 0 && errno == EPIPE) guard.failed_with_epipe();
        break;
      }
      case io_kind::recv:
        if (op->flags & MSG_WAITALL) {
          // MSG_WAITALL: keep going until the whole length, EOF or an error;
          // progress survives "would block" in op->transferred.
          auto* p = static_cast<unsigned char*>(op->buf);
          while (op->transferred < op->len) {
            r = ::recv(op->fd, p + op->transferred, op->len - op->transferred,
                       (op->flags & ~MSG_WAITALL) | MSG_DONTWAIT);
            if (r > 0) {
              op->transferred += static_cast<std::size_t>(r);
              continue;
            }
            if (r == 0) break;  // EOF: return what we have
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return -EAGAIN;
            if (op->transferred > 0) break;  // report the bytes; the error recurs next call
            return -static_cast<long long>(errno);
          }
          return static_cast<long long>(op->transferred);
        }
        r = ::recv(op->fd, op->buf, op->len, op->flags | MSG_DONTWAIT);
        break;
      case io_kind::send:
        r = ::send(op->fd, op->buf, op->len, op->flags | MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      case io_kind::accept:
        r = ::accept4(op->fd, op->addr, op->addrlen, SOCK_CLOEXEC | SOCK_NONBLOCK);
        break;
      case io_kind::connect: {
        if (!op->connect_started) {
          r = ::connect(op->fd, op->peer, op->peer_len);
          if (r < 0 && (errno == EINPROGRESS || errno == EALREADY)) {
            op->connect_started = true;
            return -EAGAIN;
          }
          break;
        }
        pollfd p{op->fd, POLLOUT, 0};
        int n = ::poll(&p, 1, 0);
        if (n < 0) {
          r = -1;
          break;
        }
        if (n == 0) return -EAGAIN;
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(op->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
          r = -1;
          break;
        }
        return err ? -static_cast<long long>(err) : 0;
      }
      case io_kind::timeout:
        return std::chrono::steady_clock::now() >= op->deadline ? 0 : -EAGAIN;
      case io_kind::wait_readable:
      case io_kind::wait_writable: {
        // Ready when poll(2) says so; POLLERR/POLLHUP count as ready (the
        // owner's next call reports them), POLLNVAL is a closed descriptor.
        const short want = op->kind == io_kind::wait_readable ? POLLIN : POLLOUT;
        pollfd p{op->fd, want, 0};
        int n = ::poll(&p, 1, 0);
        if (n < 0) {
          r = -1;
          break;
        }
        if (n == 0) return -EAGAIN;
        if (p.revents & POLLNVAL) return -EBADF;
        return 0;
      }
      case io_kind::pread:
        r = ::pread(op->fd, op->buf, op->len, static_cast<off_t>(op->offset));
        break;
      case io_kind::pwrite:
        r = ::pwrite(op->fd, op->buf, op->len, static_cast<off_t>(op->offset));
        break;
      case io_kind::readv:
        r = ::readv(op->fd, op->iov, op->iovcnt);
        break;
      case io_kind::writev: {
        sigpipe_guard guard;  // as write
        r = ::writev(op->fd, op->iov, op->iovcnt);
        if (r < 0 && errno == EPIPE) guard.failed_with_epipe();
        break;
      }
      case io_kind::fsync:
        r = ::fsync(op->fd);
        break;
      case io_kind::fdatasync:
        r = ::fdatasync(op->fd);
        break;
      case io_kind::recvfrom:
        r = ::recvfrom(op->fd, op->buf, op->len, op->flags | MSG_DONTWAIT, op->addr, op->addrlen);
        break;
      case io_kind::sendto:
        r = ::sendto(op->fd, op->buf, op->len, op->flags | MSG_DONTWAIT | MSG_NOSIGNAL, op->peer,
                     op->peer_len);
        break;
      case io_kind::recvmsg:
        r = ::recvmsg(op->fd, op->msg, op->flags | MSG_DONTWAIT);
        break;
      case io_kind::sendmsg:
        r = ::sendmsg(op->fd, op->msg, op->flags | MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
    }
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return -EAGAIN;
    return -static_cast<long long>(errno);
  }
}

}  // namespace weft::detail

namespace weft::io {

using namespace weft::detail;

namespace {
// Checks the calling context and creates the backend (either may throw)
// before anything is allocated: a failed call leaks nothing.
io_op* new_op(io_kind kind, int fd) {
  worker_view* w = require_worker("weft::io operations");
  detail::io_driver* b = scheduler_io_driver(w->sched);
  auto* op = new io_op();
  op->kind = kind;
  op->fd = fd;
  op->driver = b;
  return op;
}

template <class T>
io_future<T> start(io_op* op) {
  // The future takes its reference first, so that it is released whatever
  // happens below.
  io_future<T> f = make_io_future<T>(op);
  try {
    op->driver->submit(op, current_worker());
  } catch (...) {
    io_complete(op, -ENOMEM);  // std::bad_alloc in a backend's bookkeeping
    throw;
  }
  return f;
}
}  // namespace

io_future<std::size_t> read(int fd, void* buf, std::size_t len) {
  auto* op = new_op(io_kind::read, fd);
  op->buf = buf;
  op->len = len;
  return start<std::size_t>(op);
}

io_future<std::size_t> write(int fd, const void* buf, std::size_t len) {
  auto* op = new_op(io_kind::write, fd);
  op->buf = const_cast<void*>(buf);
  op->len = len;
  return start<std::size_t>(op);
}

io_future<std::size_t> recv(int fd, void* buf, std::size_t len, int flags) {
  auto* op = new_op(io_kind::recv, fd);
  op->buf = buf;
  op->len = len;
  op->flags = flags;
  return start<std::size_t>(op);
}

io_future<std::size_t> send(int fd, const void* buf, std::size_t len, int flags) {
  auto* op = new_op(io_kind::send, fd);
  op->buf = const_cast<void*>(buf);
  op->len = len;
  op->flags = flags;
  return start<std::size_t>(op);
}

io_future<int> accept(int listen_fd, sockaddr* addr, socklen_t* addrlen) {
  auto* op = new_op(io_kind::accept, listen_fd);
  op->addr = addr;
  op->addrlen = addrlen;
  return start<int>(op);
}

io_future<void> connect(int fd, const sockaddr* addr, socklen_t addrlen) {
  auto* op = new_op(io_kind::connect, fd);
  op->peer = addr;
  op->peer_len = addrlen;
  return start<void>(op);
}

io_future<void> sleep_until(std::chrono::steady_clock::time_point deadline) {
  auto* op = new_op(io_kind::timeout, -1);
  op->deadline = deadline;
  return start<void>(op);
}

io_future<void> wait_readable(int fd) { return start<void>(new_op(io_kind::wait_readable, fd)); }

io_future<void> wait_writable(int fd) { return start<void>(new_op(io_kind::wait_writable, fd)); }

io_future<std::size_t> pread(int fd, void* buf, std::size_t len, off_t offset) {
  auto* op = new_op(io_kind::pread, fd);
  op->buf = buf;
  op->len = len;
  op->offset = offset;
  return start<std::size_t>(op);
}

io_future<std::size_t> pwrite(int fd, const void* buf, std::size_t len, off_t offset) {
  auto* op = new_op(io_kind::pwrite, fd);
  op->buf = const_cast<void*>(buf);
  op->len = len;
  op->offset = offset;
  return start<std::size_t>(op);
}

io_future<std::size_t> readv(int fd, const iovec* iov, int iovcnt) {
  auto* op = new_op(io_kind::readv, fd);
  op->iov = iov;
  op->iovcnt = iovcnt;
  return start<std::size_t>(op);
}

io_future<std::size_t> writev(int fd, const iovec* iov, int iovcnt) {
  auto* op = new_op(io_kind::writev, fd);
  op->iov = iov;
  op->iovcnt = iovcnt;
  return start<std::size_t>(op);
}

io_future<void> fsync(int fd) { return start<void>(new_op(io_kind::fsync, fd)); }

io_future<void> fdatasync(int fd) { return start<void>(new_op(io_kind::fdatasync, fd)); }

io_future<std::size_t> recvfrom(int fd, void* buf, std::size_t len, int flags, sockaddr* addr,
                                socklen_t* addrlen) {
  auto* op = new_op(io_kind::recvfrom, fd);
  op->buf = buf;
  op->len = len;
  op->flags = flags;
  op->addr = addr;
  op->addrlen = addrlen;
  return start<std::size_t>(op);
}

io_future<std::size_t> sendto(int fd, const void* buf, std::size_t len, int flags,
                              const sockaddr* addr, socklen_t addrlen) {
  auto* op = new_op(io_kind::sendto, fd);
  op->buf = const_cast<void*>(buf);
  op->len = len;
  op->flags = flags;
  op->peer = addr;
  op->peer_len = addrlen;
  return start<std::size_t>(op);
}

io_future<std::size_t> recvmsg(int fd, msghdr* msg, int flags) {
  auto* op = new_op(io_kind::recvmsg, fd);
  op->msg = msg;
  op->flags = flags;
  return start<std::size_t>(op);
}

io_future<std::size_t> sendmsg(int fd, const msghdr* msg, int flags) {
  auto* op = new_op(io_kind::sendmsg, fd);
  // The kernel only reads a header passed to sendmsg (io_uring included).
  op->msg = const_cast<msghdr*>(msg);
  op->flags = flags;
  return start<std::size_t>(op);
}

void shutdown(int fd, int how, std::error_code& ec) noexcept {
  ec.clear();
  if (fd < 0) {
    ec = std::make_error_code(std::errc::bad_file_descriptor);
    return;
  }
  if (::shutdown(fd, how) < 0) ec = std::error_code(errno, std::system_category());
}

void shutdown(int fd, int how) {
  std::error_code ec;
  shutdown(fd, how, ec);
  if (ec) throw std::system_error(ec, "weft::io::shutdown");
}

void close(int fd, std::error_code& ec) {
  ec.clear();
  if (fd < 0) {
    ec = std::make_error_code(std::errc::bad_file_descriptor);
    return;
  }
  worker_view* w = require_worker("weft::io::close");
  // Every pending operation on fd completes with EBADF, and the backend lets
  // go of fd (this may suspend the task briefly); then the descriptor goes.
  scheduler_io_driver(w->sched)->close_fd(fd);
  // EINTR: Linux has released the descriptor all the same (close(2)); a
  // retry could close a number another thread has just been given.
  if (::close(fd) < 0 && errno != EINTR) ec = std::error_code(errno, std::system_category());
}

void close(int fd) {
  std::error_code ec;
  close(fd, ec);
  if (ec) throw std::system_error(ec, "weft::io::close");
}

std::size_t read_exact(int fd, void* buf, std::size_t len) {
  auto* p = static_cast<unsigned char*>(buf);
  std::size_t done = 0;
  while (done < len) {
    std::size_t n = read(fd, p + done, len - done).get();
    if (n == 0) break;  // end of file
    done += n;
  }
  return done;
}

void write_all(int fd, const void* buf, std::size_t len) {
  auto* p = static_cast<const unsigned char*>(buf);
  std::size_t done = 0;
  while (done < len) done += write(fd, p + done, len - done).get();
}

const char* backend_name() {
  worker_view* w = require_worker("weft::io::backend_name");
  return scheduler_io_driver(w->sched)->name();
}

}  // namespace weft::io
