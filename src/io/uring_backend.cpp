// weft — the io_uring backend: as many rings as workers. A worker submits
// requests straight to the kernel (no hand-off to another thread); a reaper
// thread per ring waits for completions and completes the futures. Regular
// files are truly asynchronous here. Every operation on one descriptor goes
// to the same ring (fd_order.hpp), whose per-descriptor queue keeps their
// order, whichever worker starts them; submission-queue access is serialised
// per ring by a mutex. Timeouts use the starting worker's ring.
#include "io_driver.hpp"

#if WEFT_HAVE_LIBURING
#include "fd_order.hpp"
#include "../own_threads.hpp"
#include "weft/detail/mutex.hpp"
#include <liburing.h>

#include <poll.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace weft::detail {

namespace {

constexpr unsigned ring_entries = 256;
// Completion queue: far more than the submission queue. Every pending
// operation (an accept or recv waiting for a peer) holds a future CQE; beyond
// the CQ's size the kernel keeps CQEs on an overflow list allocated with
// GFP_ATOMIC, and if that allocation fails the CQE is dropped (-EBADR): an
// accepted descriptor lost for good. 16 bytes each: 256 KiB per ring.
constexpr unsigned cq_entries = 16384;

// An SQE's length field is 32 bits: 2^32 would become 0 (a fake end of file).
// Cap at the kernel's own per-call limit (MAX_RW_COUNT), as read(2) does.
unsigned clamp_len(std::size_t len) noexcept {
  return static_cast<unsigned>(std::min<std::size_t>(len, 0x7ffff000));
}

class ring {
 public:
  explicit ring(fd_order& order) : order_(order) {
    io_uring_params params{};
    params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
    params.cq_entries = cq_entries;
    int rc = ::io_uring_queue_init_params(ring_entries, &ring_, &params);
    if (rc < 0) throw std::system_error(-rc, std::system_category(), "weft: io_uring_queue_init");
    try {
      reaper_ = start_thread("an io_uring reaper thread", [this] { reap(); });
    } catch (...) {
      ::io_uring_queue_exit(&ring_);
      throw;
    }
  }
  ~ring() {
    {
      lock_guard lock(mutex_);
      stopping_ = true;
      io_uring_sqe* sqe = get_sqe_locked();
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data(sqe, nullptr);  // wakes the reaper
      flush_blocking();
    }
    reaper_.join();
    ::io_uring_queue_exit(&ring_);
  }

  void submit(io_op* op) {
    lock_guard lock(mutex_);
    // acquire: see io_op::cancel_requested. A cancel that came earlier found
    // nothing to cancel (ring::cancel runs under mutex_, which we hold now,
    // so its flag store, made before, is seen).
    if (shutting_down_ || op->cancel_requested.load(std::memory_order_acquire)) {
      finish(op, -ECANCELED);
      return;
    }
    // The kernel does not complete two pending operations on one descriptor
    // in submission order (two reads on a socket may be served last-first).
    // weft promises FIFO per descriptor and direction, as the epoll backend
    // gives: queue behind an operation in flight on the same (fd, direction).
    if (std::uint64_t key = order_key(op)) {
      auto& q = in_order_[key];
      q.push_back(op);
      if (q.size() > 1) return;  // submitted when the one ahead completes
    }
    submit_locked(op);
    if (sq_backlog_) flush_blocking();
  }

 private:
  // Completes an operation this ring took over (see fd_order::leave).
  void finish(io_op* op, long long res) noexcept {
    order_.leave(op);
    io_complete(op, res);
  }

  // 0 for operations that need no ordering (timeouts, connect).
  static std::uint64_t order_key(const io_op* op) noexcept {
    if (op->kind == io_kind::timeout || op->kind == io_kind::connect) return 0;
    auto dir = direction_of(op->kind) == io_direction::in ? 1u : 2u;
    return (static_cast<std::uint64_t>(static_cast<unsigned>(op->fd)) << 2) | dir;
  }

  // Called with mutex_ held, when `op` has completed or been dropped: starts
  // the next operation queued behind it, if any.
  void advance_locked(io_op* op) WEFT_REQUIRES(mutex_) {
    std::uint64_t key = order_key(op);
    if (!key) return;
    auto it = in_order_.find(key);
    if (it == in_order_.end() || it->second.empty() || it->second.front() != op) return;
    it->second.pop_front();
    while (!it->second.empty()) {
      io_op* next = it->second.front();
      // acquire: see io_op::cancel_requested.
      if (shutting_down_ || next->cancel_requested.load(std::memory_order_acquire)) {
        it->second.pop_front();
        finish(next, -ECANCELED);
        continue;
      }
      submit_locked(next);
      return;
    }
    in_order_.erase(it);
  }

  void submit_locked(io_op* op) WEFT_REQUIRES(mutex_) {
    io_uring_sqe* sqe = get_sqe_locked();
    switch (op->kind) {
      case io_kind::read:
        io_uring_prep_read(sqe, op->fd, op->buf, clamp_len(op->len), static_cast<__u64>(-1));
        break;
      case io_kind::write:
        io_uring_prep_write(sqe, op->fd, op->buf, clamp_len(op->len), static_cast<__u64>(-1));
        break;
      case io_kind::recv:
        // MSG_WAITALL after a partial try-first attempt: receive the rest.
        io_uring_prep_recv(sqe, op->fd, static_cast<unsigned char*>(op->buf) + op->transferred,
                           clamp_len(op->len - op->transferred), op->flags);
        break;
      case io_kind::send:
        io_uring_prep_send(sqe, op->fd, op->buf, clamp_len(op->len), op->flags | MSG_NOSIGNAL);
        break;
      case io_kind::accept:
        io_uring_prep_accept(sqe, op->fd, op->addr, op->addrlen, SOCK_CLOEXEC | SOCK_NONBLOCK);
        break;
      case io_kind::connect:
        io_uring_prep_connect(sqe, op->fd, op->peer, op->peer_len);
        break;
      case io_kind::wait_readable:
      case io_kind::wait_writable:
        // One-shot poll: completes with the revents mask (mapped to 0 in
        // reap) when the descriptor is ready or has an error/hang-up.
        io_uring_prep_poll_add(sqe, op->fd, op->kind == io_kind::wait_readable ? POLLIN : POLLOUT);
        break;
      case io_kind::pread:
        io_uring_prep_read(sqe, op->fd, op->buf, clamp_len(op->len),
                           static_cast<__u64>(op->offset));
        break;
      case io_kind::pwrite:
        io_uring_prep_write(sqe, op->fd, op->buf, clamp_len(op->len),
                            static_cast<__u64>(op->offset));
        break;
      case io_kind::readv:
        io_uring_prep_readv(sqe, op->fd, op->iov, static_cast<unsigned>(op->iovcnt),
                            static_cast<__u64>(-1));
        break;
      case io_kind::writev:
        io_uring_prep_writev(sqe, op->fd, op->iov, static_cast<unsigned>(op->iovcnt),
                             static_cast<__u64>(-1));
        break;
      case io_kind::fsync:
        io_uring_prep_fsync(sqe, op->fd, 0);
        break;
      case io_kind::fdatasync:
        io_uring_prep_fsync(sqe, op->fd, IORING_FSYNC_DATASYNC);
        break;
      case io_kind::recvfrom:
      case io_kind::sendto: {
        // No recvfrom/sendto opcode: a header of our own around the caller's
        // buffer and address. Rebuilt on every (re)submission; *addrlen is
        // the caller's until completion, when reap copies the length back.
        op->own_iov = iovec{op->buf, op->len};
        op->own_msg = msghdr{};
        op->own_msg.msg_iov = &op->own_iov;
        op->own_msg.msg_iovlen = 1;
        if (op->kind == io_kind::recvfrom) {
          op->own_msg.msg_name = op->addr;
          op->own_msg.msg_namelen = op->addr ? *op->addrlen : 0;
          io_uring_prep_recvmsg(sqe, op->fd, &op->own_msg, static_cast<unsigned>(op->flags));
        } else {
          op->own_msg.msg_name = const_cast<sockaddr*>(op->peer);
          op->own_msg.msg_namelen = op->peer_len;
          io_uring_prep_sendmsg(sqe, op->fd, &op->own_msg,
                                static_cast<unsigned>(op->flags | MSG_NOSIGNAL));
        }
        break;
      }
      case io_kind::recvmsg:
        io_uring_prep_recvmsg(sqe, op->fd, op->msg, static_cast<unsigned>(op->flags));
        break;
      case io_kind::sendmsg:
        io_uring_prep_sendmsg(sqe, op->fd, op->msg, static_cast<unsigned>(op->flags | MSG_NOSIGNAL));
        break;
      case io_kind::timeout: {
        // time_point::max() is "forever": a year is as good, and keeps the
        // kernel's timespec arithmetic far from its limits.
        const auto deadline = std::min(op->deadline, std::chrono::steady_clock::now() +
                                                         std::chrono::hours(24 * 365));
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      deadline.time_since_epoch()).count();
        op->kernel_timespec[0] = ns / 1000000000;
        op->kernel_timespec[1] = ns % 1000000000;
        // steady_clock is CLOCK_MONOTONIC, the default clock of an absolute
        // io_uring timeout.
        io_uring_prep_timeout(sqe, reinterpret_cast<__kernel_timespec*>(op->kernel_timespec), 0,
                              IORING_TIMEOUT_ABS);
        break;
      }
    }
    io_uring_sqe_set_data(sqe, op);
    // From here on `op` belongs to the kernel: its SQE is in the submission
    // ring and only its CQE may complete it, even if this submit fails (see
    // flush_locked).
    pending_.insert(op);
    flush_locked();
  }

  // One io_uring_submit. It fails only before the kernel consumed the SQEs
  // (-EAGAIN: no memory for a request; -EBUSY: kernels 5.5..5.1x with a CQ
  // overflow backlog); they stay in the ring and go with the next submit that
  // succeeds, so their operations stay pending (completing one here would let
  // its CQE — an accepted descriptor — arrive later for freed memory). Returns
  // true if the submission queue is empty.
  bool flush_locked() WEFT_REQUIRES(mutex_) {
    int rc = ::io_uring_submit(&ring_);
    if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR) {
      std::fprintf(stderr, "weft: fatal: io_uring_submit failed: %s\n", std::strerror(-rc));
      std::abort();  // the ring is unusable; pending operations could never complete
    }
    sq_backlog_ = ::io_uring_sq_ready(&ring_) > 0;
    return !sq_backlog_;
  }
  // For threads other than the reaper (which must keep reaping for the
  // kernel to accept more): retries until the submission queue is empty,
  // letting go of mutex_ between tries (held again on return; the caller's
  // lock_guard still owns it).
  void flush_blocking() WEFT_REQUIRES(mutex_) {
    auto pause = std::chrono::microseconds(20);
    while (!flush_locked()) {
      mutex_.unlock();
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
      mutex_.lock();
    }
  }

 public:
  void cancel(io_op* op) {
    lock_guard lock(mutex_);
    if (pending_.count(op)) {
      request_cancel_locked(op);
      if (sq_backlog_) flush_blocking();
      return;
    }
    // Queued behind another operation on the same descriptor: drop it here.
    if (std::uint64_t key = order_key(op)) {
      auto it = in_order_.find(key);
      if (it == in_order_.end()) return;
      for (auto p = it->second.begin(); p != it->second.end(); ++p) {
        if (*p == op && p != it->second.begin()) {
          it->second.erase(p);
          finish(op, -ECANCELED);
          return;
        }
      }
    }
  }

  // io::close (io_driver::close_fd). Operations queued behind the one in
  // flight on (fd, direction) fail at once; those in the kernel are marked
  // (fd_closed: their CQE, ECANCELED or a readiness result, becomes EBADF
  // in reap and they are not retried) and cancelled; then we wait, with
  // weft's suspension, until the kernel has completed them all: only then
  // does it hold no reference to fd's file nor act on the number.
  void close_fd(int fd) {
    std::vector<io_op*> in_kernel;
    {
      lock_guard lock(mutex_);
      for (std::uint64_t dir : {1u, 2u}) {
        auto it = in_order_.find((static_cast<std::uint64_t>(static_cast<unsigned>(fd)) << 2) | dir);
        if (it == in_order_.end()) continue;
        // The front is in the kernel (in pending_, handled below).
        while (it->second.size() > 1) {
          finish(it->second.back(), -EBADF);
          it->second.pop_back();
        }
      }
      in_kernel.reserve(pending_.size());
      for (io_op* op : pending_) {
        if (op->kind == io_kind::timeout || op->fd != fd) continue;
        // relaxed: read by the reaper under mutex_, which we hold.
        op->fd_closed.store(true, std::memory_order_relaxed);
        op->add_ref();  // kept until its completion has been seen below
        in_kernel.push_back(op);
      }
      for (io_op* op : in_kernel) request_cancel_locked(op);
      if (sq_backlog_) flush_blocking();
    }
    for (io_op* op : in_kernel) {
      wait(op->done);
      op->release();
    }
  }

  void begin_shutdown() {
    lock_guard lock(mutex_);
    shutting_down_ = true;
    for (io_op* op : pending_) request_cancel_locked(op);
    if (sq_backlog_) flush_blocking();
    // Operations queued behind others: complete them now.
    for (auto& [key, q] : in_order_) {
      while (q.size() > 1) {
        finish(q.back(), -ECANCELED);
        q.pop_back();
      }
    }
  }

 private:
  io_uring_sqe* get_sqe_locked() WEFT_REQUIRES(mutex_) {
    io_uring_sqe* sqe;
    while (!(sqe = ::io_uring_get_sqe(&ring_))) flush_locked();  // full: hand it over
    return sqe;
  }

  void request_cancel_locked(io_op* op) WEFT_REQUIRES(mutex_) {
    io_uring_sqe* sqe = get_sqe_locked();
    io_uring_prep_cancel64(sqe, reinterpret_cast<__u64>(op), 0);
    io_uring_sqe_set_data(sqe, nullptr);  // the cancel's own completion is ignored
    flush_locked();
  }

  void reap() {
    for (;;) {
      bool backlog;
      {
        lock_guard lock(mutex_);
        backlog = sq_backlog_ && !flush_locked();
      }
      io_uring_cqe* cqe = nullptr;
      int rc;
      if (backlog) {
        // SQEs wait for a submit that succeeds: retry soon even if nothing
        // completes meanwhile. (Not io_uring_wait_cqe_timeout: without
        // IORING_FEAT_EXT_ARG, before 5.11, it queues a timeout SQE itself,
        // outside mutex_.) peek still flushes the kernel's CQ overflow list.
        rc = ::io_uring_peek_cqe(&ring_, &cqe);
        if (rc == -EAGAIN) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
      } else {
        rc = ::io_uring_wait_cqe(&ring_, &cqe);
      }
      if (rc == -EBADR) {
        // The kernel dropped CQEs (no memory for its overflow list): their
        // operations — accepted descriptors among them — can never complete.
        std::fputs("weft: fatal: io_uring dropped completions (CQ overflow)\n", stderr);
        std::abort();
      }
      if (rc < 0) continue;  // -EINTR
      auto* op = static_cast<io_op*>(io_uring_cqe_get_data(cqe));
      long long res = cqe->res;
      ::io_uring_cqe_seen(&ring_, cqe);
      if (op) {
        // Lock before reading op: the submitter wrote it under this mutex,
        // which is the happens-before edge (the kernel's is invisible to TSan).
        lock_guard lock(mutex_);
        const bool closed = op->fd_closed.load(std::memory_order_relaxed);  // set under mutex_
        // acquire: see io_op::cancel_requested.
        const bool retry_ok =
            !shutting_down_ && !closed && !op->cancel_requested.load(std::memory_order_acquire);
        if (op->uring_poll_armed) {
          // The descriptor became ready (or the poll failed): retry the operation.
          op->uring_poll_armed = false;
          if (res >= 0 && retry_ok) {
            pending_.erase(op);
            submit_locked(op);
            continue;
          }
          if (res >= 0) res = -ECANCELED;
        } else if (res == -EAGAIN && op->kind != io_kind::timeout && retry_ok) {
          // io_uring does not wait for readiness on O_NONBLOCK descriptors (every
          // accepted socket is one): wait with a poll request, then retry.
          io_uring_sqe* sqe = get_sqe_locked();
          io_uring_prep_poll_add(sqe, op->fd,
                                 direction_of(op->kind) == io_direction::in ? POLLIN : POLLOUT);
          io_uring_sqe_set_data(sqe, op);
          op->uring_poll_armed = true;
          flush_locked();
          continue;
        }
        if (op->kind == io_kind::timeout && res == -ETIME) res = 0;
        // A readiness wait's result is the revents mask: ready is ready.
        if ((op->kind == io_kind::wait_readable || op->kind == io_kind::wait_writable) && res > 0)
          res = 0;
        if (op->kind == io_kind::recvfrom && res >= 0 && op->addr)
          *op->addrlen = op->own_msg.msg_namelen;  // as recvfrom(2) reports it
        if (op->kind == io_kind::recv && op->transferred > 0)
          res = res >= 0 ? res + static_cast<long long>(op->transferred)
                         : static_cast<long long>(op->transferred);  // report the bytes we have
        // io::close stopped it: "would block" or cancelled means the
        // descriptor was closed under it (a result that arrived first stays).
        if (closed && (res == -ECANCELED || res == -EAGAIN || res == -EINTR)) res = -EBADF;
        pending_.erase(op);
        // Start the next queued operation before completing this one: the
        // completion may free `op`, and advance_locked needs its fd/kind.
        io_op* done_op = op;
        advance_locked(done_op);
        finish(done_op, res);
      }
      lock_guard lock(mutex_);
      if (stopping_ && pending_.empty()) return;
    }
  }

  fd_order& order_;
  // The submission side (io_uring_get_sqe, io_uring_submit) is used under
  // mutex_ only; the completion side by the reaper only, without it. Hence
  // not WEFT_GUARDED_BY: the analysis cannot tell the two halves apart.
  io_uring ring_;
  mutex mutex_;  // serialises the submission queue and the fields below
  std::unordered_set<io_op*> pending_ WEFT_GUARDED_BY(mutex_);  // in the kernel
  // Per (fd, direction): the operation in flight first, then those waiting.
  std::unordered_map<std::uint64_t, std::deque<io_op*>> in_order_ WEFT_GUARDED_BY(mutex_);
  bool shutting_down_ WEFT_GUARDED_BY(mutex_) = false;
  bool stopping_ WEFT_GUARDED_BY(mutex_) = false;
  // SQEs a failed submit left queued.
  bool sq_backlog_ WEFT_GUARDED_BY(mutex_) = false;
  std::thread reaper_;
};

class uring_backend final : public io_driver {
 public:
  uring_backend(unsigned workers, bool try_first) : try_first_(try_first) {
    rings_.reserve(workers);
    for (unsigned i = 0; i < workers; ++i) rings_.push_back(std::make_unique<ring>(order_));
  }
  const char* name() const noexcept override { return "io_uring"; }

  void submit(io_op* op, worker_view* w) override {
    if (op->kind == io_kind::timeout) {
      // A deadline already past (even before the clock's epoch, which the
      // kernel would reject as a negative time) completes at once.
      if (op->deadline <= std::chrono::steady_clock::now()) {
        io_complete(op, 0);
        return;
      }
      op->home = w ? w->index % static_cast<unsigned>(rings_.size()) : 0;
      rings_[op->home]->submit(op);
      return;
    }
    // Always prepared here (validation included: the kernel would not check
    // what validate_io checks); a regular file, like a would-block, goes to
    // the ring, which performs it asynchronously.
    const try_first_rules rules{.attempt = try_first_,
                                .make_nonblocking = try_first_,
                                .socket_messages_unprepared = false,
                                .attempt_connect = false};
    if (try_first(op, rules, [&] { return order_.idle(op->fd, direction_of(op->kind)); }) ==
        try_first_result::completed)
      return;
    order_.enter(op);
    op->home = fd_order::home_of(op->fd, static_cast<unsigned>(rings_.size()));
    rings_[op->home]->submit(op);
  }

  void cancel(io_op* op) override { rings_[op->home]->cancel(op); }

  // Every operation on fd is on its home ring (timeouts have no fd).
  void close_fd(int fd) override {
    rings_[fd_order::home_of(fd, static_cast<unsigned>(rings_.size()))]->close_fd(fd);
  }

  void begin_shutdown() override {
    for (auto& r : rings_) r->begin_shutdown();
  }

 private:
  bool try_first_;
  fd_order order_;  // before rings_: they refer to it
  std::vector<std::unique_ptr<ring>> rings_;
};

}  // namespace

std::unique_ptr<io_driver> make_uring_backend(unsigned workers, bool try_first) {
  return std::make_unique<uring_backend>(workers, try_first);
}

}  // namespace weft::detail

#else  // !WEFT_HAVE_LIBURING

#include <stdexcept>

namespace weft::detail {
std::unique_ptr<io_driver> make_uring_backend(unsigned, bool) {
  throw std::runtime_error("weft: this build has no io_uring support (liburing was not found)");
}
}  // namespace weft::detail

#endif
