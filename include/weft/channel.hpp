// weft — channels (Go's chan) and select, built on pause/resume.
//
//   weft::channel<int> ch(16);                 // bounded: 16 values buffered
//   weft::async([&] { for (int i = 0; i < 100; ++i) ch.send(i); ch.close(); });
//   for (int v : ch) use(v);                   // until closed and drained
//
//   weft::channel<std::string> rendezvous;     // capacity 0: send waits for a receiver
//   weft::channel<job> queue(weft::unbounded); // send never waits
//
// Many senders and receivers; values are received in the order they were
// sent (FIFO), and waiting senders and receivers are served first come,
// first served. send() waits while the channel is full (a rendezvous
// channel: until a receiver takes the value); recv() waits while it is empty
// and returns std::nullopt once the channel is closed and drained. Waiting
// pauses a task (its worker runs other work) or blocks a plain thread; a
// waiter resumes at its own priority level.
//
// select waits for the first of several sends and receives (Go's select),
// with an optional deadline (select_until/select_for) or none at all
// (try_select, Go's default case):
//
//   std::optional<int> a; std::optional<msg> b;
//   switch (weft::select(weft::recv_case(ints, a), weft::recv_case(msgs, b),
//                        weft::send_case(out, reply))) {
//     case 0: ...; case 1: ...; case 2: /* reply was sent */ ...
//   }
//
// Errors (all documented, none hangs, none loses a value):
//  * send on a closed channel (or a send that is waiting when the channel is
//    closed) throws weft::channel_closed; the value stays with the caller
//    (send takes it by reference and moves from it only on success);
//  * close() twice throws weft::channel_error;
//  * destroying a channel while tasks wait on it wakes them with
//    weft::channel_error ("destroyed"); buffered values are destroyed with it.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <tuple>
#include <utility>

#include "weft/detail/cancel.hpp"
#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/wait_list.hpp"

namespace weft {

class channel_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};
// Thrown by a send on a closed channel.
class channel_closed : public channel_error {
 public:
  channel_closed() : channel_error("weft::channel: send on a closed channel") {}
};

// The result of the timed and non-waiting forms.
enum class channel_status {
  success,  // sent / received
  closed,   // the channel is closed (and, for a receive, drained)
  timeout,  // the deadline passed (timed forms)
  full,     // try_send: no room and no waiting receiver
  empty,    // try_recv: nothing buffered and no waiting sender
};

// Capacity of a channel whose send never waits.
inline constexpr std::size_t unbounded = std::numeric_limits<std::size_t>::max();

// select's result when a deadline passed (select_until) or nothing was ready
// (try_select).
inline constexpr int no_case = -1;

template <class T> class channel;

namespace detail {
[[noreturn]] inline void throw_channel_destroyed() {
  throw channel_error("weft::channel: the channel was destroyed while this task waited on it");
}
// A thread-local xorshift for select's random case order (fairness, as Go's).
inline std::uint32_t select_random() noexcept {
  thread_local std::uint32_t x = 0x9E3779B9u ^ static_cast<std::uint32_t>(
      reinterpret_cast<std::uintptr_t>(&x));
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}
}  // namespace detail

template <class T>
class channel {
 public:
  // capacity 0: rendezvous (the default); weft::unbounded: send never waits.
  explicit channel(std::size_t capacity = 0) : capacity_(capacity) {}
  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  ~channel() {
    lock_.lock();
    for (detail::wait_list* l : {&receivers_, &senders_})
      while (detail::wait_node* n = l->claim_front()) detail::finish_wait(n, detail::wait_outcome::destroyed);
    lock_.unlock();
  }

  std::size_t capacity() const noexcept { return capacity_; }

  // --- send ------------------------------------------------------------------
  // Waits while full. Throws channel_closed if the channel is (or becomes,
  // while waiting) closed; `v` is moved from only when it is sent.
  void send(T&& v) { finish_send(send_impl(v, detail::steady_time::max())); }
  void send(const T& v) {
    T copy(v);
    finish_send(send_impl(copy, detail::steady_time::max()));
  }
  // Cancellable send (docs/api.md "Cancellation"): as send(v), and a stop
  // requested while it waits throws std::system_error(operation_canceled)
  // (v is then not sent, nor moved from).
  void send(T&& v, const std::stop_token& stop) {
    finish_send(send_impl(v, detail::steady_time::max(), stop));
  }
  void send(const T& v, const std::stop_token& stop) {
    T copy(v);
    finish_send(send_impl(copy, detail::steady_time::max(), stop));
  }
  // success, closed or timeout; v is moved from only on success.
  template <class Clock, class Duration>
  channel_status send_until(T&& v, const std::chrono::time_point<Clock, Duration>& deadline) {
    return send_impl(v, timed(detail::to_steady_deadline(deadline)));
  }
  template <class Rep, class Period>
  channel_status send_for(T&& v, const std::chrono::duration<Rep, Period>& d) {
    return send_impl(v, timed(detail::deadline_after(d)));
  }
  // success, closed or full; never waits.
  channel_status try_send(T&& v) { return send_impl(v, detail::steady_time::min()); }
  channel_status try_send(const T& v) {
    T copy(v);
    return send_impl(copy, detail::steady_time::min());
  }

  // --- receive -----------------------------------------------------------------
  // Waits while empty; std::nullopt once closed and drained.
  std::optional<T> recv() {
    std::optional<T> out;
    (void)recv_impl(out, detail::steady_time::max());
    return out;
  }
  // Cancellable recv: as recv(), and a stop requested while it waits throws
  // std::system_error(operation_canceled) (nothing is received).
  std::optional<T> recv(const std::stop_token& stop) {
    std::optional<T> out;
    (void)recv_impl(out, detail::steady_time::max(), stop);
    return out;
  }
  // success (out holds the value), closed or timeout.
  template <class Clock, class Duration>
  channel_status recv_until(std::optional<T>& out, const std::chrono::time_point<Clock, Duration>& deadline) {
    return recv_impl(out, timed(detail::to_steady_deadline(deadline)));
  }
  template <class Rep, class Period>
  channel_status recv_for(std::optional<T>& out, const std::chrono::duration<Rep, Period>& d) {
    return recv_impl(out, timed(detail::deadline_after(d)));
  }
  // success, closed or empty; never waits.
  channel_status try_recv(std::optional<T>& out) { return recv_impl(out, detail::steady_time::min()); }

  // --- close ---------------------------------------------------------------------
  // No more sends: waiting receivers get std::nullopt (after the buffered
  // values, which stay receivable), waiting senders throw channel_closed.
  // Throws channel_error if already closed.
  void close() {
    lock_.lock();
    if (closed_) {
      lock_.unlock();
      throw channel_error("weft::channel::close: the channel is already closed");
    }
    closed_ = true;
    // Receivers wait only while nothing is buffered: they get "closed".
    while (detail::wait_node* n = receivers_.claim_front()) detail::finish_wait(n, detail::wait_outcome::closed);
    while (detail::wait_node* n = senders_.claim_front()) detail::finish_wait(n, detail::wait_outcome::closed);
    lock_.unlock();
  }
  bool is_closed() const {
    lock_.lock();
    bool c = closed_;
    lock_.unlock();
    return c;
  }
  // Waiting senders and receivers now (a select counts in each channel it
  // waits on): a snapshot, for diagnostics and tests (as ivar::waiters).
  std::size_t waiters() const {
    lock_.lock();
    std::size_t n = receivers_.size() + senders_.size();
    lock_.unlock();
    return n;
  }
  // Buffered values now (a snapshot).
  std::size_t size() const {
    lock_.lock();
    std::size_t n = buffer_.size();
    lock_.unlock();
    return n;
  }

  // --- range-for: receives until closed and drained ---------------------------------
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = T*;
    using reference = T&;
    iterator() = default;
    explicit iterator(channel* c) : ch_(c) { next(); }
    T& operator*() { return *cur_; }
    T* operator->() { return &*cur_; }
    iterator& operator++() {
      next();
      return *this;
    }
    void operator++(int) { next(); }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.ch_ == b.ch_; }

   private:
    void next() {
      cur_ = ch_->recv();
      if (!cur_) ch_ = nullptr;
    }
    channel* ch_ = nullptr;
    std::optional<T> cur_;
  };
  iterator begin() { return iterator(this); }
  iterator end() { return iterator(); }

 private:
  template <class U> friend struct recv_case_t;
  template <class U> friend struct send_case_t;
  using node = detail::wait_node;

  // try_* pass this "deadline"; a timed call whose deadline has passed
  // reports timeout instead of full/empty.
  static constexpr detail::steady_time try_only = detail::steady_time::min();
  // A user's deadline of time_point::min() is an ordinary past deadline.
  static detail::steady_time timed(detail::steady_time d) noexcept {
    return d == try_only ? try_only + detail::steady_time::duration(1) : d;
  }
  static detail::steady_time clock_now_if_timed(detail::steady_time deadline) noexcept {
    if (deadline == detail::steady_time::max()) return detail::steady_time::min();
    if (deadline == try_only) return try_only;
    return std::chrono::steady_clock::now();
  }

  static void finish_send(channel_status s) {
    if (s == channel_status::closed) throw channel_closed();
  }

  // --- the operations, with the lock held (also used by select) ---------------

  // Sends v now if possible (moving from it). Lock held.
  bool try_send_locked(T& v) WEFT_REQUIRES(lock_) {
    if (node* r = receivers_.claim_front()) {  // a receiver waits: the buffer is empty
      static_cast<std::optional<T>*>(r->slot)->emplace(std::move(v));
      detail::finish_wait(r, detail::wait_outcome::ok);
      return true;
    }
    if (buffer_.size() < capacity_) {
      buffer_.push_back(std::move(v));
      return true;
    }
    return false;
  }
  // Receives into out now if possible. Lock held. Returns success, closed or
  // empty.
  channel_status try_recv_locked(std::optional<T>& out) WEFT_REQUIRES(lock_) {
    if (!buffer_.empty()) {
      out.emplace(std::move(buffer_.front()));
      buffer_.pop_front();
      // Room for the first waiting sender's value.
      if (node* s = senders_.claim_front()) {
        buffer_.push_back(std::move(*static_cast<T*>(s->slot)));
        detail::finish_wait(s, detail::wait_outcome::ok);
      }
      return channel_status::success;
    }
    if (node* s = senders_.claim_front()) {  // rendezvous: take it from the sender
      out.emplace(std::move(*static_cast<T*>(s->slot)));
      detail::finish_wait(s, detail::wait_outcome::ok);
      return channel_status::success;
    }
    return closed_ ? channel_status::closed : channel_status::empty;
  }

  // detail::park with lock_: called with lock_ held, returns with it
  // released. park's own protocol (release once paused, re-take to withdraw
  // on a timeout) is not one the analysis can follow; its contract is here.
  template <class WithdrawLocked>
  bool park_locked(detail::wait_record& rec, detail::steady_time deadline, const std::stop_token& stop,
                   WithdrawLocked&& withdraw_locked) WEFT_RELEASE(lock_) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    if (stop.stop_possible())
      return detail::park(
          rec, deadline, [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.lock(); },
          [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.unlock(); },
          std::forward<WithdrawLocked>(withdraw_locked), stop);
    return detail::park(
        rec, deadline, [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.lock(); },
        [this]() WEFT_NO_THREAD_SAFETY_ANALYSIS { lock_.unlock(); },
        std::forward<WithdrawLocked>(withdraw_locked));
  }

  [[gnu::noinline]] channel_status send_impl(T& v, detail::steady_time deadline,
                                             const std::stop_token& stop = {}) {
    lock_.lock();
    if (closed_) {
      lock_.unlock();
      return channel_status::closed;
    }
    if (try_send_locked(v)) {
      lock_.unlock();
      return channel_status::success;
    }
    if (deadline <= clock_now_if_timed(deadline)) {  // try_send, or a deadline already past
      lock_.unlock();
      return deadline == try_only ? channel_status::full : channel_status::timeout;
    }
    detail::wait_record rec;
    node n;
    n.rec = &rec;
    n.slot = &v;  // a receiver moves it out
    senders_.push_back(&n);
    // park calls it with lock_ held (its contract, which the analysis cannot see).
    if (!park_locked(rec, deadline, stop, [this, &n]() WEFT_NO_THREAD_SAFETY_ANALYSIS { senders_.unlink(&n); }))
      return channel_status::timeout;
    if (rec.outcome == detail::wait_outcome::destroyed) detail::throw_channel_destroyed();
    if (rec.outcome == detail::wait_outcome::cancelled)
      detail::throw_operation_cancelled("weft: channel::send cancelled");
    return rec.outcome == detail::wait_outcome::closed ? channel_status::closed : channel_status::success;
  }

  [[gnu::noinline]] channel_status recv_impl(std::optional<T>& out, detail::steady_time deadline,
                                             const std::stop_token& stop = {}) {
    out.reset();
    lock_.lock();
    channel_status s = try_recv_locked(out);
    if (s != channel_status::empty) {
      lock_.unlock();
      return s;
    }
    if (deadline <= clock_now_if_timed(deadline)) {  // try_recv, or a deadline already past
      lock_.unlock();
      return deadline == try_only ? channel_status::empty : channel_status::timeout;
    }
    detail::wait_record rec;
    node n;
    n.rec = &rec;
    n.slot = &out;  // a sender emplaces the value
    receivers_.push_back(&n);
    // park calls it with lock_ held (its contract, which the analysis cannot see).
    if (!park_locked(rec, deadline, stop, [this, &n]() WEFT_NO_THREAD_SAFETY_ANALYSIS { receivers_.unlink(&n); }))
      return channel_status::timeout;
    if (rec.outcome == detail::wait_outcome::destroyed) detail::throw_channel_destroyed();
    if (rec.outcome == detail::wait_outcome::cancelled)
      detail::throw_operation_cancelled("weft: channel::recv cancelled");
    return rec.outcome == detail::wait_outcome::closed ? channel_status::closed : channel_status::success;
  }

  std::size_t capacity_;
  mutable detail::spin_lock lock_;
  std::deque<T> buffer_ WEFT_GUARDED_BY(lock_);
  bool closed_ WEFT_GUARDED_BY(lock_) = false;
  detail::wait_list receivers_ WEFT_GUARDED_BY(lock_);  // slot = std::optional<T>*
  detail::wait_list senders_ WEFT_GUARDED_BY(lock_);    // slot = T* (moved from)
};

// --- select ------------------------------------------------------------------------

// A receive case: on completion `out` holds the value, or std::nullopt if
// the channel was closed (a closed channel's receive is always ready).
template <class T>
struct recv_case_t {
  channel<T>* ch;
  std::optional<T>* out;

  const void* key() const noexcept { return ch; }
  detail::spin_lock& lock() const noexcept WEFT_RETURN_CAPABILITY(ch->lock_) { return ch->lock_; }
  bool try_now() WEFT_REQUIRES(ch->lock_) {
    return ch->try_recv_locked(*out) != channel_status::empty;
  }
  void enqueue(detail::wait_node& n) WEFT_REQUIRES(ch->lock_) { ch->receivers_.push_back(&n); }
  void unlink(detail::wait_node& n) WEFT_REQUIRES(ch->lock_) { ch->receivers_.unlink(&n); }
  void* slot() const noexcept { return out; }
  void prepare() { out->reset(); }
  // After a wake-up that completed this case.
  void finish(detail::wait_outcome) const noexcept {}
};

// A send case: on completion the value was sent (moved from). A send on a
// closed channel throws channel_closed, as a plain send does.
template <class T>
struct send_case_t {
  channel<T>* ch;
  T* value;

  const void* key() const noexcept { return ch; }
  detail::spin_lock& lock() const noexcept WEFT_RETURN_CAPABILITY(ch->lock_) { return ch->lock_; }
  // Lock held; if it throws, it has released the lock first.
  bool try_now() WEFT_REQUIRES(ch->lock_) {
    if (ch->closed_) {
      ch->lock_.unlock();  // select unlocks the others (see select_impl)
      throw channel_closed();
    }
    return ch->try_send_locked(*value);
  }
  void enqueue(detail::wait_node& n) WEFT_REQUIRES(ch->lock_) { ch->senders_.push_back(&n); }
  void unlink(detail::wait_node& n) WEFT_REQUIRES(ch->lock_) { ch->senders_.unlink(&n); }
  void* slot() const noexcept { return value; }
  void prepare() {}
  void finish(detail::wait_outcome o) const {
    if (o == detail::wait_outcome::closed) throw channel_closed();
  }
};

template <class T>
recv_case_t<T> recv_case(channel<T>& ch, std::optional<T>& out) noexcept {
  return {&ch, &out};
}
template <class T>
send_case_t<T> send_case(channel<T>& ch, T& value) noexcept {
  return {&ch, &value};
}

namespace detail {

// The select algorithm (as Go's selectgo): lock every channel involved in
// address order; poll the cases in a random order; if none is ready, queue
// one node per case (all pointing to one record) and pause; the first
// operation that claims the record completes its case and wakes us; then
// take the other nodes back.
// Not analysed (-Wthread-safety): it locks a set of channels known only at
// run time (deduplicated, in address order), which the analysis cannot name;
// the cases' operations state which lock they need (WEFT_REQUIRES).
template <class... Cases>
int select_impl(steady_time deadline, const std::stop_token& stop, Cases&... cases) WEFT_NO_THREAD_SAFETY_ANALYSIS {
  constexpr std::size_t n = sizeof...(Cases);
  static_assert(n > 0, "weft::select needs at least one case");
  spin_lock* locks[n] = {&cases.lock()...};
  const void* keys[n] = {cases.key()...};
  // Distinct locks in address order (a deadlock-free order).
  std::size_t order[n];
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order, order + n, [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  auto lock_all = [&]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    for (std::size_t k = 0; k < n; ++k)
      if (k == 0 || keys[order[k]] != keys[order[k - 1]]) locks[order[k]]->lock();
  };
  auto unlock_all = [&]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    for (std::size_t k = n; k-- > 0;)
      if (k == 0 || keys[order[k]] != keys[order[k - 1]]) locks[order[k]]->unlock();
  };
  // Unlocks all but the lock of `except` (a case that threw after unlocking its own).
  auto unlock_all_but = [&](const void* except) WEFT_NO_THREAD_SAFETY_ANALYSIS {
    for (std::size_t k = n; k-- > 0;)
      if ((k == 0 || keys[order[k]] != keys[order[k - 1]]) && keys[order[k]] != except)
        locks[order[k]]->unlock();
  };
  (cases.prepare(), ...);
  lock_all();
  // Poll in a random rotation.
  const std::size_t start = select_random() % n;
  int fired = -1;
  for (std::size_t k = 0; k < n && fired < 0; ++k) {
    const std::size_t i = (start + k) % n;
    std::size_t idx = 0;
    bool ready = false;
    try {
      ((idx++ == i ? (ready = cases.try_now(), 0) : 0), ...);
    } catch (...) {
      unlock_all_but(keys[i]);
      throw;
    }
    if (ready) fired = static_cast<int>(i);
  }
  if (fired >= 0 || deadline == steady_time::min()) {
    unlock_all();
    return fired;
  }
  // Wait on every case.
  wait_record rec;
  wait_node nodes[n];
  {
    std::size_t i = 0;
    ((nodes[i].rec = &rec, nodes[i].slot = cases.slot(), nodes[i].case_index = static_cast<int>(i),
      cases.enqueue(nodes[i]), ++i),
     ...);
  }
  auto unlink_all = [&]() WEFT_NO_THREAD_SAFETY_ANALYSIS {
    std::size_t i = 0;
    ((cases.unlink(nodes[i]), ++i), ...);
  };
  const bool woken = stop.stop_possible() ? park(rec, deadline, lock_all, unlock_all, unlink_all, stop)
                                           : park(rec, deadline, lock_all, unlock_all, unlink_all);
  if (!woken) return -1;
  // Stopped: park withdrew every node (unlink_all, under every lock).
  if (rec.outcome == wait_outcome::cancelled) throw_operation_cancelled("weft: select cancelled");
  // Completed through case rec.fired (its node is unlinked). Take the other
  // nodes back: lock every channel but a destroyed one.
  if (rec.outcome == wait_outcome::destroyed) {
    // Only the destroyed channel's lock must not be touched.
    const void* gone = keys[rec.fired];
    for (std::size_t k = 0; k < n; ++k) {
      std::size_t i = order[k];
      if (keys[i] == gone || (k > 0 && keys[i] == keys[order[k - 1]])) continue;
      locks[i]->lock();
    }
    {
      std::size_t i = 0;
      ((keys[i] != gone ? cases.unlink(nodes[i]) : void(), ++i), ...);
    }
    for (std::size_t k = n; k-- > 0;) {
      std::size_t i = order[k];
      if (keys[i] == gone || (k > 0 && keys[i] == keys[order[k - 1]])) continue;
      locks[i]->unlock();
    }
    throw_channel_destroyed();
  }
  lock_all();
  unlink_all();
  unlock_all();
  {
    std::size_t i = 0;
    ((i++ == static_cast<std::size_t>(rec.fired) ? cases.finish(rec.outcome) : void()), ...);
  }
  return rec.fired;
}

}  // namespace detail

// Waits until one of the cases completes; returns its index (0-based, in
// argument order). If several are ready, one is chosen at random.
template <class... Cases>
int select(Cases... cases) {
  return detail::select_impl(detail::steady_time::max(), {}, cases...);
}
// Cancellable select (docs/api.md "Cancellation"; the token comes first, as
// the deadline of select_until does): as select, and if `stop` is requested
// before a case completes, no case completes and it throws
// std::system_error(std::errc::operation_canceled). A case ready at the call
// completes even if stop was already requested.
template <class... Cases>
int select(const std::stop_token& stop, Cases... cases) {
  return detail::select_impl(detail::steady_time::max(), stop, cases...);
}
// As select, waiting at most until the deadline: weft::no_case if none
// completed by then.
template <class Clock, class Duration, class... Cases>
int select_until(const std::chrono::time_point<Clock, Duration>& deadline, Cases... cases) {
  return detail::select_impl(detail::to_steady_deadline(deadline), {}, cases...);
}
template <class Rep, class Period, class... Cases>
int select_for(const std::chrono::duration<Rep, Period>& d, Cases... cases) {
  return detail::select_impl(detail::deadline_after(d), {}, cases...);
}
// Completes a ready case if there is one, without waiting (Go's default
// case): its index, or weft::no_case.
template <class... Cases>
int try_select(Cases... cases) {
  return detail::select_impl(detail::steady_time::min(), {}, cases...);
}

}  // namespace weft
