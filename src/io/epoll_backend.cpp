// weft — the epoll backend, Cilk-L's design (Cilk-L §3.2): as many I/O
// threads as workers; a worker hands requests over a lock-free queue and
// wakes the I/O thread with an eventfd; the I/O thread attempts each request
// at once, parks the ones that would block in its epoll set, performs them
// when their descriptor becomes ready, and completes their futures (which
// makes the waiting tasks resumable). Regular files are never "not ready" for
// epoll, so the I/O thread performs them itself — the worker never blocks on
// them. Every operation on one descriptor goes to the same I/O thread
// (fd_order.hpp), whichever worker starts it, so their order is kept.
// Cancellations go through a mutex-protected inbox.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "io_driver.hpp"
#include "fd_order.hpp"
#include "mpsc_queue.hpp"
#include "../own_threads.hpp"
#include "weft/detail/mutex.hpp"

namespace weft::detail {

namespace {

// A descriptor closed on every path (the I/O thread's constructor may throw
// after opening them).
struct owned_fd {
  int fd = -1;
  explicit owned_fd(int f) noexcept : fd(f) {}
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;
  ~owned_fd() {
    if (fd >= 0) ::close(fd);
  }
};

class io_thread {
 public:
  explicit io_thread(fd_order& order)
      : order_(order),
        ep_(::epoll_create1(EPOLL_CLOEXEC)),
        ev_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (ep_.fd < 0 || ev_.fd < 0)
      throw std::system_error(errno, std::system_category(), "weft: epoll backend");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;  // the eventfd
    ::epoll_ctl(ep_.fd, EPOLL_CTL_ADD, ev_.fd, &ev);
    thread_ = start_thread("an I/O thread (epoll backend)", [this] { run(); });
  }
  ~io_thread() {
    // relaxed: see stop_.
    stop_.store(true, std::memory_order_relaxed);
    wake();
    thread_.join();
  }

  // Any thread.
  void submit(io_op* op) {
    queue_.push(op);
    wake();
  }
  void cancel(io_op* op) {
    op->add_ref();  // kept until the I/O thread has looked at it
    {
      lock_guard lock(inbox_mutex_);
      cancels_.push_back(op);
    }
    wake();
  }
  // io::close (io_driver::close_fd): this thread fails every operation it
  // holds on fd with EBADF and lets go of fd; the caller waits for that
  // with weft's suspension (the task is suspended, not its worker).
  void close_fd(int fd) {
    close_request req;
    req.fd = fd;
    {
      lock_guard lock(inbox_mutex_);
      closes_.push_back(&req);
    }
    wake();
    wait(req.done);  // req lives on this stack until done is set and seen
  }
  void begin_shutdown() {
    // relaxed: see shutting_down_.
    shutting_down_.store(true, std::memory_order_relaxed);
    wake();
  }

 private:
  struct close_request {
    int fd = -1;
    completion done;
  };
  struct fd_waiters {
    std::deque<io_op*> in, out;
    std::uint32_t registered = 0;  // events currently in the epoll set
  };

  void wake() noexcept {
    std::uint64_t one = 1;
    (void)!::write(ev_.fd, &one, sizeof one);
  }

  // Completes an operation this thread took over (see fd_order::leave).
  void finish(io_op* op, long long res) noexcept {
    order_.leave(op);
    io_complete(op, res);
  }

  void run() {
    std::vector<epoll_event> events(128);
    std::vector<io_op*> cancel_batch;
    std::vector<close_request*> close_batch;
    for (;;) {
      std::uint64_t drained;
      (void)!::read(ev_.fd, &drained, sizeof drained);
      // relaxed: see shutting_down_.
      bool shutting = shutting_down_.load(std::memory_order_relaxed);
      while (io_op* op = queue_.pop()) accept_new(op, shutting);
      {
        lock_guard lock(inbox_mutex_);
        cancel_batch.swap(cancels_);
      }
      for (io_op* o : cancel_batch) {
        if (pending_.count(o)) cancel_pending(o);
        o->release();
      }
      cancel_batch.clear();
      {
        lock_guard lock(inbox_mutex_);
        close_batch.swap(closes_);
      }
      if (!close_batch.empty()) {
        // Operations handed over before io::close was called are in the
        // queue (their push happened before the request's): take them in
        // first, so that none of them touches fd after the request is done.
        while (io_op* op = queue_.pop()) accept_new(op, shutting);
        for (close_request* req : close_batch) {
          fail_fd(req->fd, -EBADF);
          req->done.set();  // last touch of req: its owner may return at once
        }
        close_batch.clear();
      }
      if (shutting) cancel_everything();
      // relaxed: see stop_.
      if (stop_.load(std::memory_order_relaxed) && pending_.empty()) return;

      timespec timeout{};
      timespec* tp = nullptr;
      if (!timers_.empty()) {
        auto now = std::chrono::steady_clock::now();
        auto d = timers_.begin()->first - now;  // no overflow: both are >= 0
        if (d < std::chrono::nanoseconds(0)) d = std::chrono::nanoseconds(0);
        // A far deadline (time_point::max() is "forever"): wake hourly.
        if (d > std::chrono::hours(1)) d = std::chrono::hours(1);
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
        timeout.tv_sec = ns / 1000000000;
        timeout.tv_nsec = ns % 1000000000;
        tp = &timeout;
      }
      int n = ::epoll_pwait2(ep_.fd, events.data(), static_cast<int>(events.size()), tp, nullptr);
      for (int i = 0; i < n; ++i) {
        if (!events[i].data.ptr) continue;  // eventfd: handled at the loop top
        int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(events[i].data.ptr) - 1);
        on_ready(fd, events[i].events);
      }
      fire_timers();
    }
  }

  void accept_new(io_op* op, bool shutting) {
    // acquire: see io_op::cancel_requested. A cancel whose inbox entry this
    // thread handled before the operation arrived found nothing to cancel;
    // the flag, stored before that entry was queued (so seen here through
    // inbox_mutex_), is what stops it.
    if (shutting || op->cancel_requested.load(std::memory_order_acquire)) {
      finish(op, -ECANCELED);
      return;
    }
    if (op->kind == io_kind::timeout) {
      if (op->deadline <= std::chrono::steady_clock::now()) {
        finish(op, 0);
        return;
      }
      auto it = timers_.emplace(op->deadline, op);
      timer_pos_[op] = it;
      pending_.insert(op);
      return;
    }
    bool regular = op->regular_file;
    long long r = op->prepared ? 0 : prepare_io(op, true, &regular);
    if (r < 0) {
      finish(op, r);
      return;
    }
    if (regular) {
      // Never "not ready" for epoll: perform it here, on this thread.
      finish(op, attempt_io(op));
      return;
    }
    fd_waiters& w = fds_[op->fd];
    auto& list = direction_of(op->kind) == io_direction::in ? w.in : w.out;
    // Keep FIFO order per descriptor: attempt only if nobody is queued ahead.
    if (list.empty()) {
      r = attempt_io(op);
      if (r != -EAGAIN) {
        int fd = op->fd;  // finishing may free op
        if (w.in.empty() && w.out.empty() && !w.registered) fds_.erase(fd);
        finish(op, r);
        return;
      }
    }
    list.push_back(op);
    pending_.insert(op);
    if (!update_registration(op->fd)) {
      // epoll refused the descriptor (EPERM for unsupported files, EBADF):
      // complete everything waiting on it with that error.
      int err = errno;
      fail_fd(op->fd, -err);
    }
  }

  bool update_registration(int fd) {
    fd_waiters& w = fds_[fd];
    std::uint32_t want = (w.in.empty() ? 0u : EPOLLIN) | (w.out.empty() ? 0u : EPOLLOUT);
    if (want == w.registered) return true;
    epoll_event ev{};
    ev.events = want;
    ev.data.ptr = reinterpret_cast<void*>(static_cast<std::intptr_t>(fd) + 1);
    int rc;
    if (want == 0) {
      rc = ::epoll_ctl(ep_.fd, EPOLL_CTL_DEL, fd, &ev);
      if (rc < 0 && (errno == EBADF || errno == ENOENT)) rc = 0;  // closed already
    } else if (w.registered == 0) {
      rc = ::epoll_ctl(ep_.fd, EPOLL_CTL_ADD, fd, &ev);
      if (rc < 0 && errno == EEXIST) rc = ::epoll_ctl(ep_.fd, EPOLL_CTL_MOD, fd, &ev);
    } else {
      rc = ::epoll_ctl(ep_.fd, EPOLL_CTL_MOD, fd, &ev);
      if (rc < 0 && errno == ENOENT) rc = ::epoll_ctl(ep_.fd, EPOLL_CTL_ADD, fd, &ev);
    }
    if (rc < 0) return false;
    w.registered = want;
    if (want == 0) fds_.erase(fd);
    return true;
  }

  void fail_fd(int fd, long long err) {
    auto it = fds_.find(fd);
    if (it == fds_.end()) return;
    std::vector<io_op*> failed;
    for (auto* list : {&it->second.in, &it->second.out}) {
      for (io_op* o : *list) {
        pending_.erase(o);
        failed.push_back(o);
      }
      list->clear();
    }
    // Deregister before completing: a completed task may close fd (and the
    // number be reused) at once.
    if (it->second.registered) {
      epoll_event ev{};
      ::epoll_ctl(ep_.fd, EPOLL_CTL_DEL, fd, &ev);
    }
    fds_.erase(it);
    for (io_op* o : failed) finish(o, err);
  }

  void on_ready(int fd, std::uint32_t ev) {
    auto it = fds_.find(fd);
    if (it == fds_.end()) return;
    fd_waiters& w = it->second;
    bool error = ev & (EPOLLERR | EPOLLHUP);
    done_.clear();
    if ((ev & EPOLLIN) || error) drain(w.in);
    if ((ev & EPOLLOUT) || error) drain(w.out);
    // Update epoll before completing: a completed task may close fd at once.
    bool ok = update_registration(fd);
    int err = errno;
    for (auto [op, r] : done_) finish(op, r);
    if (!ok) fail_fd(fd, -err);
  }

  void drain(std::deque<io_op*>& list) {
    while (!list.empty()) {
      io_op* op = list.front();
      long long r = attempt_io(op);
      if (r == -EAGAIN) return;
      list.pop_front();
      pending_.erase(op);
      done_.emplace_back(op, r);
    }
  }
  std::vector<std::pair<io_op*, long long>> done_;  // on_ready's completions

  void cancel_pending(io_op* op) {
    pending_.erase(op);
    if (op->kind == io_kind::timeout) {
      auto it = timer_pos_.find(op);
      if (it != timer_pos_.end()) {
        timers_.erase(it->second);
        timer_pos_.erase(it);
      }
    } else {
      auto it = fds_.find(op->fd);
      if (it != fds_.end()) {
        for (auto* list : {&it->second.in, &it->second.out}) {
          for (auto p = list->begin(); p != list->end(); ++p) {
            if (*p == op) {
              list->erase(p);
              break;
            }
          }
        }
        if (!update_registration(op->fd)) fail_fd(op->fd, -errno);
      }
    }
    finish(op, -ECANCELED);
  }

  void cancel_everything() {
    std::vector<io_op*> all(pending_.begin(), pending_.end());
    for (io_op* op : all) cancel_pending(op);
  }

  void fire_timers() {
    auto now = std::chrono::steady_clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      io_op* op = timers_.begin()->second;
      timers_.erase(timers_.begin());
      timer_pos_.erase(op);
      pending_.erase(op);
      finish(op, 0);
    }
  }

  fd_order& order_;
  owned_fd ep_;
  owned_fd ev_;
  mpsc_queue queue_;
  mutex inbox_mutex_;
  std::vector<io_op*> cancels_ WEFT_GUARDED_BY(inbox_mutex_);
  std::vector<close_request*> closes_ WEFT_GUARDED_BY(inbox_mutex_);
  // Set once by begin_shutdown (any thread), then the eventfd is written;
  // the I/O thread loads it after each wake-up and cancels what it holds and
  // what arrives later. relaxed: the flag publishes nothing (the operations
  // come through queue_ and the inbox, ordered by their own atomics and
  // lock), and its visibility to the I/O thread is what the wake-up gives:
  // the eventfd write follows the store and the read precedes the load, each
  // a system call, and the thread reloads the flag on every turn of its loop.
  // Acquire/release would add no guarantee here: they order other accesses
  // around the flag, they do not make it visible sooner.
  std::atomic<bool> shutting_down_{false};
  // Set once by ~io_thread before its last wake-up: the thread returns once
  // nothing is pending. relaxed: as shutting_down_ (nothing else is
  // published; join() orders the thread's end before the destructor goes on).
  std::atomic<bool> stop_{false};
  // I/O-thread private state.
  std::unordered_map<int, fd_waiters> fds_;
  std::multimap<std::chrono::steady_clock::time_point, io_op*> timers_;
  std::unordered_map<io_op*, decltype(timers_)::iterator> timer_pos_;
  std::unordered_set<io_op*> pending_;
  std::thread thread_;  // last: started after everything above exists
};

class epoll_backend final : public io_driver {
 public:
  epoll_backend(unsigned workers, bool try_first) : try_first_(try_first) {
    threads_.reserve(workers);
    for (unsigned i = 0; i < workers; ++i) threads_.push_back(std::make_unique<io_thread>(order_));
  }
  const char* name() const noexcept override { return "epoll_threads"; }

  void submit(io_op* op, worker_view* w) override {
    if (op->kind == io_kind::timeout) {  // no order to keep: the worker's own thread
      op->home = w ? w->index % static_cast<unsigned>(threads_.size()) : 0;
      threads_[op->home]->submit(op);
      return;
    }
    // relaxed: a hint that saves the worker an attempt during shutdown; an
    // operation that misses it is cancelled by the I/O thread, which reads
    // its own flag with acquire (io_thread::begin_shutdown). Without the
    // prologue the I/O thread prepares the operation itself.
    if (try_first_ && !shutting_down_.load(std::memory_order_relaxed)) {
      // A regular file, like a would-block, goes to the I/O thread.
      const try_first_rules rules{.attempt = true,
                                  .make_nonblocking = true,
                                  .socket_messages_unprepared = false,
                                  .attempt_connect = true};
      if (try_first(op, rules, [&] { return order_.idle(op->fd, direction_of(op->kind)); }) ==
          try_first_result::completed)
        return;
    }
    order_.enter(op);
    op->home = fd_order::home_of(op->fd, static_cast<unsigned>(threads_.size()));
    threads_[op->home]->submit(op);
  }

  void cancel(io_op* op) override { threads_[op->home]->cancel(op); }

  // Every operation on fd is on its home thread (timeouts have no fd).
  void close_fd(int fd) override {
    threads_[fd_order::home_of(fd, static_cast<unsigned>(threads_.size()))]->close_fd(fd);
  }

  void begin_shutdown() override {
    // relaxed: see shutting_down_.
    shutting_down_.store(true, std::memory_order_relaxed);
    for (auto& t : threads_) t->begin_shutdown();
  }

 private:
  bool try_first_;
  // begin_shutdown ran: submit skips the try-first prologue. A hint (relaxed
  // store and load): a submission that misses it goes to its I/O thread,
  // whose own flag (io_thread::shutting_down_) cancels it.
  std::atomic<bool> shutting_down_{false};
  fd_order order_;  // before threads_: they refer to it
  std::vector<std::unique_ptr<io_thread>> threads_;
};

}  // namespace

std::unique_ptr<io_driver> make_epoll_backend(unsigned workers, bool try_first) {
  return std::make_unique<epoll_backend>(workers, try_first);
}

}  // namespace weft::detail
