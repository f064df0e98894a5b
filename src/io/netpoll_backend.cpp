// weft — the netpoll backend (the default; docs/io.md §Backends): the
// workers poll for readiness themselves, as Go's and Tokio's schedulers do,
// instead of handing each operation to an I/O thread and back (Cilk-L's
// design, epoll_backend.cpp, kept as weft::io_backend::epoll_threads).
//
//  * Submission, on the worker: one non-blocking attempt (try-first) unless
//    operations on (fd, direction) are queued ahead; if it would block, the
//    operation joins the descriptor's FIFO and the descriptor is armed in the
//    one epoll set (EPOLLONESHOT, only the directions that have waiters).
//  * Polling: a worker that runs out of work polls without blocking; one idle
//    worker at a time blocks in epoll_wait instead of parking (the
//    scheduler's poller slot, parking_lot::park_polling); busy workers poll
//    now and then (scheduler_dispatch.cpp, find_work). The poller performs the ready
//    operations in FIFO order and completes them, which queues their tasks on
//    its own ready queue: no other thread is involved, and a woken task runs
//    on the worker that saw the event.
//  * A wake-up for new work that no parked worker can take interrupts the
//    blocking poll through an eventfd.
//  * Regular files are never "not ready" for epoll and sleeps need timers:
//    both go to a one-thread instance of the I/O-thread backend (started
//    with this one), so a worker never blocks on a disk.
//
// Why EPOLLONESHOT rather than a registration kept for the descriptor's
// life (Go, mio): weft does not own the descriptors — the application
// closes them with close(2), and a new descriptor may reuse the number. A
// re-arm per wait (MOD, or ADD if the kernel no longer knows the file) is
// always correct whatever happened to the number meanwhile, costs one
// epoll_ctl per wait, and delivers no events for descriptors nobody waits on.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <system_error>
#include <vector>

#include "io_driver.hpp"
#include "weft/detail/mutex.hpp"

namespace weft::detail {

namespace {

// The operations waiting on one descriptor. Type-stable: never freed before
// the backend, so a poller may look a descriptor up at any time.
struct fd_state {
  struct fifo {
    io_op* head = nullptr;
    io_op* tail = nullptr;
    bool empty() const noexcept { return head == nullptr; }
    void push(io_op* op) noexcept {
      op->wait_next = nullptr;
      if (tail) tail->wait_next = op; else head = op;
      tail = op;
    }
    io_op* pop() noexcept {
      io_op* op = head;
      head = op->wait_next;
      if (!head) tail = nullptr;
      op->wait_next = nullptr;
      return op;
    }
    bool remove(io_op* op) noexcept {
      io_op* prev = nullptr;
      for (io_op* p = head; p; prev = p, p = p->wait_next) {
        if (p != op) continue;
        (prev ? prev->wait_next : head) = p->wait_next;
        if (tail == p) tail = prev;
        p->wait_next = nullptr;
        return true;
      }
      return false;
    }
  };

  mutex lock;
  fifo in WEFT_GUARDED_BY(lock);
  fifo out WEFT_GUARDED_BY(lock);
  // Whether epoll knows this descriptor's current file: a hint choosing MOD
  // or ADD first; the other is tried when it fails.
  bool added WEFT_GUARDED_BY(lock) = false;
  // Lock-free views of "a list is non-empty", for the try-first check:
  // stored under lock (relaxed: the lock orders the stores; the try-first
  // load's reason is in submit).
  std::atomic<bool> in_busy{false}, out_busy{false};
};

// fd -> fd_state, grown lazily in blocks (descriptors are small integers).
class fd_table {
 public:
  ~fd_table() {
    // relaxed: the backend is being destroyed; no other thread uses it.
    for (auto& b : blocks_) delete[] b.load(std::memory_order_relaxed);
  }
  // Null if `fd` has no state yet.
  fd_state* find(int fd) const noexcept {
    auto u = static_cast<std::uint32_t>(fd);
    if (u >= span) return nullptr;
    // acquire: pairs with get()'s release publication of a new block.
    fd_state* b = blocks_[u >> block_bits].load(std::memory_order_acquire);
    return b ? &b[u & (block_size - 1)] : nullptr;
  }
  // Throws std::bad_alloc; EBADF-like failure for fds beyond the table is
  // reported by returning nullptr.
  fd_state* get(int fd) WEFT_EXCLUDES(grow_) {
    if (fd_state* s = find(fd)) return s;
    auto u = static_cast<std::uint32_t>(fd);
    if (u >= span) return nullptr;
    lock_guard lock(grow_);
    auto& slot = blocks_[u >> block_bits];
    // relaxed: stores to the slot happen under grow_, which we hold.
    fd_state* b = slot.load(std::memory_order_relaxed);
    if (!b) {
      b = new fd_state[block_size];
      // release: a reader that loads the block sees it constructed.
      slot.store(b, std::memory_order_release);
    }
    return &b[u & (block_size - 1)];
  }
  // Calls f on every fd_state, under grow_: a block get() allocates
  // concurrently is either seen here, or allocated after this returns (then
  // whatever the caller did before the call happens before the allocation,
  // through grow_). begin_shutdown relies on it.
  template <class F>
  void for_each_allocated(F&& f) WEFT_EXCLUDES(grow_) {
    lock_guard lock(grow_);
    for (auto& slot : blocks_) {
      // relaxed: stores to the slot happen under grow_, which we hold.
      fd_state* b = slot.load(std::memory_order_relaxed);
      if (!b) continue;
      for (std::size_t i = 0; i < block_size; ++i) f(b[i]);
    }
  }

 private:
  static constexpr unsigned block_bits = 10;  // 1,024 descriptors a block
  static constexpr std::size_t block_size = std::size_t{1} << block_bits;
  static constexpr unsigned block_count = 2048;  // descriptors below 2^21
  static constexpr std::uint32_t span = block_count << block_bits;
  // Serialises growth and for_each_allocated. blocks_ is not
  // WEFT_GUARDED_BY it: find() loads the slots without it (acquire).
  mutex grow_;
  std::atomic<fd_state*> blocks_[block_count] = {};
};

constexpr std::uint64_t eventfd_tag = ~std::uint64_t{0};

class netpoll_backend final : public io_driver {
 public:
  explicit netpoll_backend(bool try_first)
      : try_first_(try_first),
        ep_(::epoll_create1(EPOLL_CLOEXEC)),
        ev_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (ep_ < 0 || ev_ < 0) {
      int e = errno;
      close_fds();
      throw std::system_error(e, std::system_category(), "weft: netpoll backend");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: stays ready until drained
    ev.data.u64 = eventfd_tag;
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, ev_, &ev) != 0) {
      int e = errno;
      close_fds();
      throw std::system_error(e, std::system_category(), "weft: netpoll backend");
    }
    // Started with the backend, not on first use: it needs descriptors of
    // its own, and a server out of descriptors (EMFILE) must still be able
    // to sleep before it retries an accept.
    try {
      helper_ = make_epoll_backend(1, false);
    } catch (...) {
      close_fds();
      throw;
    }
  }
  ~netpoll_backend() override {
    // The scheduler destroys the backend after its workers stopped: nobody
    // polls any more, and every operation completed (begin_shutdown).
    helper_.reset();
    close_fds();
  }
  const char* name() const noexcept override { return "epoll"; }

  void submit(io_op* op, worker_view* w) override {
    (void)w;
    // relaxed: a hint that spares the work below during shutdown; nothing
    // is read on its strength. The check that matters is the one under the
    // descriptor's lock, below.
    if (shutting_down_.load(std::memory_order_relaxed)) {
      io_complete(op, -ECANCELED);
      return;
    }
    if (op->kind == io_kind::timeout) {
      helper()->submit(op, nullptr);
      return;
    }
    // Socket messages need no fcntl (MSG_DONTWAIT): that was two system
    // calls per request in the echo benchmark's profile. The order rule:
    // try-first only while nothing is queued on (fd, direction) — it cannot
    // overtake an operation this task (or one it synchronised with) queued
    // earlier, whose enqueue set the busy flag under the descriptor's lock.
    // relaxed: write-read coherence through that happens-before; concurrent
    // tasks' operations have no order to keep.
    const try_first_rules rules{.attempt = try_first_,
                                .make_nonblocking = true,
                                .socket_messages_unprepared = true,
                                .attempt_connect = true};
    fd_state* st = nullptr;
    const bool in = direction_of(op->kind) == io_direction::in;
    const try_first_result tf = try_first(op, rules, [&] {
      st = table_.get(op->fd);
      return st && !(in ? st->in_busy : st->out_busy).load(std::memory_order_relaxed);
    });
    if (tf == try_first_result::completed) return;
    if (tf == try_first_result::regular_file) {  // never "not ready": performed off the workers
      helper()->submit(op, nullptr);
      return;
    }
    if (!st) st = table_.get(op->fd);  // try-first off: idle() was not asked
    if (!st) {
      io_complete(op, -EBADF);  // beyond 2^21: not a descriptor the kernel gives
      return;
    }
    unique_lock lock(st->lock);
    // cancel_requested, acquire: pairs with io_cancel's release store; a
    // cancel that came before we hold the lock finds nothing to remove, so we
    // must see it. shutting_down_, relaxed: if begin_shutdown already emptied
    // this descriptor's queues, its store happens before this load through
    // st->lock (or through fd_table's grow_, if st's block is newer than its
    // sweep): write-read coherence makes the load see true; if it has not,
    // it will find the operation queued and cancel it.
    if (op->cancel_requested.load(std::memory_order_acquire) ||
        shutting_down_.load(std::memory_order_relaxed)) {
      lock.unlock();
      io_complete(op, -ECANCELED);
      return;
    }
    fd_state::fifo& q = in ? st->in : st->out;
    // Without try-first (a test configuration: every operation goes through
    // this locked path), still one attempt before waiting, as the I/O
    // threads make: a descriptor that will never be ready (accept on a pipe)
    // must fail now rather than wait forever.
    if (!try_first_ && q.empty()) {
      const long long r = attempt_io(op);
      if (r != -EAGAIN) {
        lock.unlock();
        io_complete(op, r);
        return;
      }
    }
    q.push(op);
    // relaxed: see fd_state::in_busy.
    (in ? st->in_busy : st->out_busy).store(true, std::memory_order_relaxed);
    // relaxed: a hint for idle workers (has_waiters); the worker that queued
    // this goes through find_work before it could park, and polls.
    waiters_.fetch_add(1, std::memory_order_relaxed);
    // Arming reports readiness that arrived before it (the kernel polls the
    // file on MOD/ADD), so nothing between the attempt above and here is
    // lost. No re-attempt is needed.
    if (!arm(op->fd, *st)) {
      // epoll refused the descriptor (EPERM: a file epoll cannot watch;
      // EBADF): everything queued on it fails with that error.
      const long long err = -errno;
      std::vector<io_op*> failed;
      take_all_locked(*st, failed);
      lock.unlock();
      for (io_op* o : failed) io_complete(o, err);
    }
  }

  void cancel(io_op* op) override {
    if (op->kind == io_kind::timeout || op->regular_file) {
      helper_->cancel(op);
      return;
    }
    fd_state* st = table_.find(op->fd);
    if (!st) return;  // never queued: submit sees cancel_requested
    unique_lock lock(st->lock);
    const bool in = direction_of(op->kind) == io_direction::in;
    fd_state::fifo& q = in ? st->in : st->out;
    if (!q.remove(op)) return;  // completing, completed, or not queued yet
    // relaxed: see fd_state::in_busy and waiters_.
    (in ? st->in_busy : st->out_busy).store(!q.empty(), std::memory_order_relaxed);
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    lock.unlock();
    io_complete(op, -ECANCELED);
  }

  void begin_shutdown() override {
    // relaxed: what publishes it to a submission is the lock it takes next
    // (a descriptor's, or grow_ in for_each_allocated): see submit.
    shutting_down_.store(true, std::memory_order_relaxed);
    std::vector<io_op*> all;
    table_.for_each_allocated([&](fd_state& st) {
      lock_guard lock(st.lock);
      take_all_locked(st, all);
    });
    for (io_op* op : all) io_complete(op, -ECANCELED);
    helper_->begin_shutdown();
  }

  void close_fd(int fd) override {
    if (fd_state* st = table_.find(fd)) {
      // Under the descriptor's lock: a poller performing its operations
      // (on_ready) holds it too, so once we have it nobody is in a system
      // call on fd, and nobody will be: the FIFOs are empty afterwards.
      unique_lock lock(st->lock);
      std::vector<io_op*> failed;
      take_all_locked(*st, failed);
      // Out of the epoll set now, while the number still names this file
      // (close(2) would leave it registered if the file has other
      // descriptors, e.g. after a fork). ENOENT: not registered; fine.
      if (st->added) {
        epoll_event ev{};
        (void)::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, &ev);
        st->added = false;
      }
      lock.unlock();
      for (io_op* op : failed) io_complete(op, -EBADF);
    }
    // Regular-file operations are the helper's.
    helper_->close_fd(fd);
  }

  bool has_waiters() const noexcept override {
    // relaxed: see waiters_.
    return waiters_.load(std::memory_order_relaxed) > 0;
  }

  unsigned poll(bool block) noexcept override {
    if (!wait_events(block)) return 0;
    return complete_events();
  }

  bool wait_events(bool block) noexcept override {
    poll_buffer& b = buffer();
    b.count = ::epoll_wait(ep_, b.events, poll_buffer::capacity, block ? -1 : 0);
    if (b.count < 0) b.count = 0;  // EINTR
    return b.count > 0;
  }

  unsigned complete_events() noexcept override {
    poll_buffer& b = buffer();
    for (int i = 0; i < b.count; ++i) {
      if (b.events[i].data.u64 == eventfd_tag) {
        std::uint64_t drained;
        (void)!::read(ev_, &drained, sizeof drained);
        // relaxed: see interrupted_. Reset after the drain, never before: an
        // interrupt between a reset and the drain would have its write
        // drained and leave the flag set, muting every later interrupt.
        interrupted_.store(false, std::memory_order_relaxed);
        continue;
      }
      int fd = static_cast<int>(b.events[i].data.u64);
      fd_state* st = table_.find(fd);
      if (!st) continue;
      on_ready(fd, *st, b.events[i].events, b.done);
    }
    b.count = 0;
    auto n = static_cast<unsigned>(b.done.size());
    for (auto [op, r] : b.done) io_complete(op, r);
    b.done.clear();
    return n;
  }

  void interrupt() noexcept override {
    // relaxed: see interrupted_.
    if (interrupted_.exchange(true, std::memory_order_relaxed)) return;
    std::uint64_t one = 1;
    (void)!::write(ev_, &one, sizeof one);
  }

 private:
  void close_fds() noexcept {
    if (ep_ >= 0) ::close(ep_);
    if (ev_ >= 0) ::close(ev_);
    ep_ = ev_ = -1;
  }

  // Per-thread scratch for polling: the events of the last wait, and the
  // completions, made after every lock is released (a completed task may
  // close the descriptor at once).
  struct poll_buffer {
    static constexpr int capacity = 128;
    epoll_event events[capacity];
    int count = 0;
    std::vector<std::pair<io_op*, long long>> done;
  };
  static poll_buffer& buffer() noexcept {
    thread_local poll_buffer b;
    return b;
  }

  // Arms (re-arms) `fd` for the directions that have waiters. Requires
  // st.lock. Returns false with errno set if epoll refuses the descriptor.
  bool arm(int fd, fd_state& st) noexcept WEFT_REQUIRES(st.lock) {
    std::uint32_t want = (st.in.empty() ? 0u : EPOLLIN | EPOLLRDHUP) | (st.out.empty() ? 0u : EPOLLOUT);
    if (!want) return true;  // stays disarmed (one-shot)
    epoll_event ev{};
    ev.events = want | EPOLLONESHOT;
    ev.data.u64 = static_cast<std::uint64_t>(static_cast<std::uint32_t>(fd));
    if (st.added) {
      if (::epoll_ctl(ep_, EPOLL_CTL_MOD, fd, &ev) == 0) return true;
      if (errno != ENOENT) return false;
      // The file this number named was closed; a new one reuses the number.
      st.added = false;
    }
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) == 0) {
      st.added = true;
      return true;
    }
    if (errno != EEXIST) return false;
    st.added = true;
    return ::epoll_ctl(ep_, EPOLL_CTL_MOD, fd, &ev) == 0;
  }

  // Empties both of st's queues into `out` (requires st.lock): the caller
  // completes them after the lock.
  void take_all_locked(fd_state& st, std::vector<io_op*>& out) WEFT_REQUIRES(st.lock) {
    const std::size_t before = out.size();
    while (!st.in.empty()) out.push_back(st.in.pop());
    while (!st.out.empty()) out.push_back(st.out.pop());
    // relaxed: see fd_state::in_busy and waiters_.
    st.in_busy.store(false, std::memory_order_relaxed);
    st.out_busy.store(false, std::memory_order_relaxed);
    waiters_.fetch_sub(static_cast<long>(out.size() - before), std::memory_order_relaxed);
  }

  void on_ready(int fd, fd_state& st, std::uint32_t ev,
                std::vector<std::pair<io_op*, long long>>& done) noexcept {
    lock_guard lock(st.lock);
    const bool error = ev & (EPOLLERR | EPOLLHUP);
    long drained = 0;
    if ((ev & (EPOLLIN | EPOLLRDHUP)) || error) drained += drain(st.in, done);
    if ((ev & EPOLLOUT) || error) drained += drain(st.out, done);
    // relaxed: see fd_state::in_busy and waiters_.
    st.in_busy.store(!st.in.empty(), std::memory_order_relaxed);
    st.out_busy.store(!st.out.empty(), std::memory_order_relaxed);
    waiters_.fetch_sub(drained, std::memory_order_relaxed);
    // One-shot: the event disarmed the descriptor; re-arm for what waits.
    if (!arm(fd, st)) {
      long long err = -errno;
      // Completions collected above are still to be made, after the lock.
      std::vector<io_op*> failed;
      take_all_locked(st, failed);
      for (io_op* op : failed) done.emplace_back(op, err);
    }
  }

  // Performs queued operations in order until one would block.
  static long drain(fd_state::fifo& q, std::vector<std::pair<io_op*, long long>>& done) {
    long n = 0;
    while (!q.empty()) {
      long long r = attempt_io(q.head);
      if (r == -EAGAIN) break;
      done.emplace_back(q.pop(), r);
      ++n;
    }
    return n;
  }

  // The one-thread I/O-thread backend for regular files and sleeps.
  io_driver* helper() noexcept { return helper_.get(); }

  const bool try_first_;
  int ep_;
  int ev_;
  fd_table table_;
  // Operations queued on descriptors, for has_waiters(): a hint for idle
  // workers (whether to poll), changed under the descriptors' locks. relaxed
  // everywhere: nothing is read on its strength; the worker that queued an
  // operation goes through find_work, and polls, before it could park.
  std::atomic<long> waiters_{0};
  // An interrupt() wrote to the eventfd and no poller has drained it since: a
  // flag against piling up writes. relaxed: it orders nothing; an interrupt
  // that finds it set while a poller is between its drain and the reset is
  // not needed (that poller is awake and looks for work before it blocks
  // again), and a lost race otherwise only costs an extra write.
  std::atomic<bool> interrupted_{false};
  // begin_shutdown ran: submissions complete with ECANCELED (submit).
  std::atomic<bool> shutting_down_{false};
  std::unique_ptr<io_driver> helper_;  // immutable after the constructor
};

}  // namespace

std::unique_ptr<io_driver> make_netpoll_backend(bool try_first) {
  return std::make_unique<netpoll_backend>(try_first);
}

}  // namespace weft::detail
