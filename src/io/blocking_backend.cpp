// weft — the blocking backend: the plain system call inside the task, as
// Cilk-F does. The worker is blocked for the whole latency. Kept as the
// baseline the latency-hiding backends are measured against.
//
// When the system call happens. An operation is tried once when it starts
// (errors and ready descriptors complete at once). If it would block, it is
// *deferred*: the task that waits for its future performs it — get(), wait()
// and the timed forms block their worker in poll(2) until the descriptor is
// ready, the deadline passes or the operation is cancelled; is_ready() makes
// one attempt that does not wait; a future dropped unwaited performs its
// operation in its destructor (dropping never cancels, on any backend). This
// is what lets the backend honour deadlines and cancel(): the blocking wait
// starts only once the waiter has said how long it may last. A program that
// starts an operation and waits for it at once (io::read(...).get(), the
// benchmarks' use) blocks exactly as a plain read(2) would.
//
// Order. Deferred operations queue per descriptor and direction (a "lane")
// and are performed in start order; a new operation is tried at start only
// when its lane is empty, so it never overtakes one already queued. One task
// at a time performs a lane (`performing`); other waiters on that lane wait
// for their own operation's completion in slices and take over if the
// performer leaves (its deadline passed).
//
// Lifetime. A future may outlive its runtime (a plain thread holds it), and
// a plain thread may be performing an operation while the runtime shuts
// down. All lane state is therefore guarded by one process-wide mutex that
// is never destroyed: a waiter checks under it whether its operation is
// still pending before it touches the backend, begin_shutdown() completes
// every queued operation under it, and the destructor waits (under it) until
// no task or thread performs an operation of this backend.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io_driver.hpp"
#include "weft/detail/assert.hpp"
#include "weft/detail/mutex.hpp"

namespace weft::detail {

namespace {

using clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds slice{50};  // cancellation and shutdown latency

// The process-wide lock of every blocking backend (see the top of the file).
// Heap-allocated and never freed: usable at any point of process exit.
mutex& lanes_mutex() {
  static auto* m = new mutex;
  return *m;
}
std::condition_variable& performers_done() {
  static auto* cv = new std::condition_variable;
  return *cv;
}

// Lane key: (fd, direction) for descriptors; a timeout is its own lane
// (keyed by its address, low bits 11, which no descriptor key has).
std::uint64_t lane_key(const io_op* op) noexcept {
  if (op->kind == io_kind::timeout)
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(op)) | 3u;
  const std::uint64_t dir = direction_of(op->kind) == io_direction::in ? 1u : 2u;
  return (static_cast<std::uint64_t>(static_cast<unsigned>(op->fd)) << 2) | dir;
}

class blocking_backend final : public io_driver {
 public:
  ~blocking_backend() override {
    // Every operation has completed (begin_shutdown ran first), but a
    // performer may still be between its system call and its bookkeeping.
    unique_lock lock(lanes_mutex());
    while (performers_ != 0) lock.wait(performers_done());
  }

  const char* name() const noexcept override { return "blocking"; }

  void submit(io_op* op, worker_view*) override {
    if (op->kind == io_kind::timeout) {
      if (op->deadline <= clock::now()) {
        io_complete(op, 0);
        return;
      }
      lock_guard lock(lanes_mutex());
      if (shutting_down_) {
        io_complete(op, -ECANCELED);
        return;
      }
      defer_locked(op);
      return;
    }
    bool regular = false;
    long long r = prepare_io(op, true, &regular);
    if (r < 0) {
      io_complete(op, r);
      return;
    }
    const std::uint64_t key = lane_key(op);
    {
      lock_guard lock(lanes_mutex());
      if (shutting_down_) {
        io_complete(op, -ECANCELED);
        return;
      }
      // Operations queued on this descriptor and direction go first.
      if (lanes_.count(key)) {
        defer_locked(op);
        return;
      }
    }
    // A regular file is never "not ready": this performs it (blocking on the
    // disk, which is the point of this backend).
    r = attempt_io(op);
    if (r != -EAGAIN) {
      io_complete(op, r);
      return;
    }
    lock_guard lock(lanes_mutex());
    if (shutting_down_) {
      io_complete(op, -ECANCELED);
      return;
    }
    defer_locked(op);
  }

  void cancel(io_op* op) override {
    // op->cancel_requested is set. A queued operation nobody performs now is
    // completed here; the one being performed is completed by its performer
    // within a slice.
    lock_guard lock(lanes_mutex());
    if (op->done.is_set()) return;
    auto it = lanes_.find(lane_key(op));
    if (it == lanes_.end()) return;
    lane& l = it->second;
    auto pos = std::find(l.ops.begin(), l.ops.end(), op);
    if (pos == l.ops.end()) return;
    if (l.performing && pos == l.ops.begin()) return;
    l.ops.erase(pos);
    if (l.ops.empty() && !l.performing) lanes_.erase(it);
    io_complete(op, -ECANCELED);
  }

  // io::close (io_driver::close_fd). Queued operations on fd fail at once.
  // One being performed is marked (fd_closed); its performer sees the mark
  // within a poll slice (it is in poll(2) on fd for at most `slice`, 50 ms:
  // closing a descriptor does not wake a poll on it) and completes it with
  // EBADF; we wait for that completion with weft's suspension.
  void close_fd(int fd) override {
    std::vector<io_op*> performed;
    {
      lock_guard lock(lanes_mutex());
      for (std::uint64_t dir : {1u, 2u}) {
        auto it = lanes_.find((static_cast<std::uint64_t>(static_cast<unsigned>(fd)) << 2) | dir);
        if (it == lanes_.end()) continue;
        lane& l = it->second;
        while (l.ops.size() > (l.performing ? 1u : 0u)) {
          io_complete(l.ops.back(), -EBADF);
          l.ops.pop_back();
        }
        if (!l.performing) {
          lanes_.erase(it);
          continue;
        }
        io_op* op = l.ops.front();
        // release: see io_op::fd_closed (the performer reads it without the
        // lock).
        op->fd_closed.store(true, std::memory_order_release);
        op->add_ref();
        performed.push_back(op);
      }
    }
    for (io_op* op : performed) {
      wait(op->done);
      op->release();
    }
  }

  void begin_shutdown() override {
    lock_guard lock(lanes_mutex());
    shutting_down_ = true;
    for (auto it = lanes_.begin(); it != lanes_.end();) {
      lane& l = it->second;
      // The operation being performed is completed by its performer.
      while (l.ops.size() > (l.performing ? 1u : 0u)) {
        io_complete(l.ops.back(), -ECANCELED);
        l.ops.pop_back();
      }
      it = l.ops.empty() ? lanes_.erase(it) : std::next(it);
    }
  }

  // Performs `op` (and the operations ahead of it in its lane) in the calling
  // task or thread until it completes or `deadline` passes. Returns with the
  // process-wide lock held, as on entry (it is let go of while waiting and
  // performing).
  void drive(io_op* op, clock::time_point deadline) noexcept WEFT_REQUIRES(lanes_mutex()) {
    const std::uint64_t key = lane_key(op);
    while (!op->done.is_set()) {
      auto it = lanes_.find(key);
      if (it == lanes_.end()) return;  // cannot happen: a pending deferred op is queued
      lane& l = it->second;
      if (l.performing) {
        // Another waiter performs this lane: wait for our own operation, and
        // look again now and then in case that performer leaves.
        if (deadline <= clock::now()) return;
        lanes_mutex().unlock();
        const clock::time_point until = std::min(deadline, clock::now() + slice);
        (void)wait_until(op->done, until);
        lanes_mutex().lock();
        continue;
      }
      io_op* front = l.ops.front();
      l.performing = true;
      ++performers_;
      lanes_mutex().unlock();
      long long r = perform(front, deadline);
      lanes_mutex().lock();
      --performers_;
      WEFT_ASSERT(performers_ >= 0, "blocking backend: more performers left than entered");
      // lanes_ may have been rehashed while unlocked: find the lane again.
      it = lanes_.find(key);
      lane& again = it->second;
      again.performing = false;
      // io::close marked it while its deadline ended the performance: it is
      // over all the same (close_fd waits for its completion).
      // acquire: see io_op::fd_closed (stored under the lock we hold).
      if (r == -EAGAIN && front->fd_closed.load(std::memory_order_acquire)) r = -EBADF;
      if (r != -EAGAIN) {
        again.ops.pop_front();
        io_complete(front, r);
      }
      if (again.ops.empty()) lanes_.erase(it);
      if (performers_ == 0) performers_done().notify_all();
      if (r == -EAGAIN) return;  // our deadline passed first
    }
  }

 private:
  struct lane {
    std::deque<io_op*> ops;  // deferred, in start order
    bool performing = false;        // a waiter is performing ops.front()
  };

  void defer_locked(io_op* op) WEFT_REQUIRES(lanes_mutex()) {
    op->deferred = true;
    lanes_[lane_key(op)].ops.push_back(op);
  }

  bool stop_requested(io_op* op) noexcept WEFT_EXCLUDES(lanes_mutex()) {
    // acquire: see io_op::cancel_requested.
    if (op->cancel_requested.load(std::memory_order_acquire)) return true;
    lock_guard lock(lanes_mutex());
    return shutting_down_;
  }

  // The blocking part: the system call, waited for in poll slices (so that
  // cancellation and shutdown are seen within one slice). Returns the result,
  // -ECANCELED, or -EAGAIN if `deadline` passed first.
  long long perform(io_op* op, clock::time_point deadline) noexcept {
    if (op->kind == io_kind::timeout) {
      for (;;) {
        if (stop_requested(op)) return -ECANCELED;
        const clock::time_point now = clock::now();
        if (now >= op->deadline) return 0;
        if (now >= deadline) return -EAGAIN;
        std::this_thread::sleep_until(std::min({op->deadline, deadline, now + slice}));
      }
    }
    const short events = direction_of(op->kind) == io_direction::in ? POLLIN : POLLOUT;
    for (;;) {
      // acquire: see io_op::fd_closed.
      if (op->fd_closed.load(std::memory_order_acquire)) return -EBADF;
      if (stop_requested(op)) return -ECANCELED;
      const long long r = attempt_io(op);
      if (r != -EAGAIN) return r;
      const clock::time_point now = clock::now();
      if (now >= deadline) return -EAGAIN;
      const auto left = std::min<clock::duration>(deadline - now, slice);
      // Round up: a 0 ms poll would spin through the last millisecond.
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
      pollfd p{op->fd, events, 0};
      ::poll(&p, 1, static_cast<int>(ms));
    }
  }

  std::unordered_map<std::uint64_t, lane> lanes_ WEFT_GUARDED_BY(lanes_mutex());
  bool shutting_down_ WEFT_GUARDED_BY(lanes_mutex()) = false;
  // drive() calls inside perform(); never negative.
  int performers_ WEFT_GUARDED_BY(lanes_mutex()) = 0;
};

}  // namespace

void io_drive(io_operation* base, steady_time deadline) noexcept {
  io_op* op = as_op(base);
  lock_guard lock(lanes_mutex());
  // Under the lock: a pending deferred operation's backend is alive (its
  // begin_shutdown completes every queued operation under this lock before
  // the backend can be destroyed).
  if (op->done.is_set()) return;
  static_cast<blocking_backend*>(op->driver)->drive(op, deadline);
}

std::unique_ptr<io_driver> make_blocking_backend() { return std::make_unique<blocking_backend>(); }

}  // namespace weft::detail
