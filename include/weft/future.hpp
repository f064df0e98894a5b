// weft — futures, promises and async on fibers (Fibertures: std::future's
// interface without a thread per task and without blocking the worker).
//
//   weft::future<int> f = weft::async(fib, 30);   // inside a task
//   int x = f.get();   // runs the child inline if nobody stole it, else
//                      // suspends this task (ProWS); never blocks the worker
//
// Errors follow std::future: get() on an invalid future throws
// std::future_error(no_state); a promise destroyed unsatisfied stores
// std::future_error(broken_promise); get_future() twice throws
// future_already_retrieved; a second set_value/set_exception throws
// promise_already_satisfied. Unlike std::async, dropping a future never blocks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <new>
#include <stop_token>
#include <tuple>
#include <type_traits>
#include <utility>

#include "weft/detail/cancel.hpp"
#include "weft/detail/completion.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/scheduler_hooks.hpp"

namespace weft {

template <class T> class future;
template <class T> class shared_future;
template <class T> class promise;

namespace detail {

struct future_access;  // weft/blocking.hpp

[[noreturn]] inline void throw_future_error(std::future_errc e) {
  throw std::future_error(e);
}

// The runtime whose worker calls this (0 on other threads), and the count of
// exceptions of its async tasks that nobody observed (runtime::statistics).
std::uint64_t current_runtime_id() noexcept;
void note_unobserved_exception(std::uint64_t runtime_id) noexcept;

// The state shared by a future/promise pair or an async task and its future.
// Lifetime: reference counted; the producer (promise or running task) holds one
// reference, each future/shared_future one more.
class future_state_base {
 public:
  future_state_base() = default;
  // For async tasks: born with two references (the future's and the
  // execution's), set without an atomic read-modify-write.
  explicit future_state_base(int initial_refs) noexcept : refs_(initial_refs) {}
  future_state_base(const future_state_base&) = delete;
  future_state_base& operator=(const future_state_base&) = delete;

  void add_ref() noexcept {
    // relaxed: a new reference is made from an existing one, which already
    // orders everything the new holder needs.
    refs_.fetch_add(1, std::memory_order_relaxed);
  }
  void release() noexcept {
    // acq_rel: the last releaser must see every other holder's writes before
    // destroying the state.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }

  bool ready() const noexcept { return done_.is_set(); }

  // future<T>::get's fast path: if this is an async task that nobody has
  // started and that sits at the bottom of the caller's own deque, pop it and
  // run it here. The caller then holds both references (its own and the
  // execution's), so the result needs no publication and the state is freed
  // with destroy_owned(), without any atomic operation.
  bool run_inline_if_own_child() {
    if (!pending_item_ || done_.is_set()) return false;
    worker_view* w = current_worker();
    if (!w) return false;
    chase_lev_deque* d = w->active.load(std::memory_order_relaxed);
    if (!d->pop_if(pending_item_)) return false;
    // From here on this is an ordinary call made by the parent, which stays
    // outstanding until it finishes, so the runtime cannot drain meanwhile:
    // count the task finished now, on the worker we hold (single writer).
    w->tasks_finished.add();
    run_owned_(this);
    return true;
  }
  void destroy_owned() noexcept { destroy(); }

  // Blocks until ready. An async child still at the bottom of the caller's
  // own deque is run inline instead (nobody else has started it). A deferred
  // state (launch::deferred) runs its function here, in the first waiter.
  void wait() {
    if (done_.is_set()) return;
    if (deferred_ && run_deferred()) return;
    if (pending_item_ && try_take_own_bottom(pending_item_)) {
      pending_item_->execute(pending_item_);
      return;
    }
    detail::wait(done_);
  }
  bool wait_until(std::chrono::steady_clock::time_point deadline) {
    if (done_.is_set()) return true;
    return detail::wait_until(done_, deadline);
  }
  // Waits until ready (true) or until `stop` is requested first (false).
  bool wait(const std::stop_token& stop) {
    if (done_.is_set()) return true;
    if (deferred_ && !stop.stop_requested() && run_deferred()) return true;  // launch::deferred
    return wait_or_stop(done_, stop);
  }

  // The stop source of an async task whose callable takes a std::stop_token
  // (null for every other state). Virtual, not a member: a state that has
  // none pays nothing for it (the hot async path stays as it was).
  virtual std::stop_source* task_stop_source() noexcept { return nullptr; }

  // ---- Composition (weft/when.hpp): the completion when_all, when_any and
  // then register their ready callbacks on (a detail::waiter whose wake runs
  // the callback; see when.hpp).
  completion& ready_event() noexcept { return done_; }
  // ---- end of composition

  // --- launch::deferred (weft/async.hpp) ---------------------------------
  // A deferred state runs its function in the first caller of a non-timed
  // wait (wait, get), as std::async(std::launch::deferred) does; timed waits
  // report future_status::deferred until it has run. Returns true if this
  // caller ran it (the state is then ready); false if another waiter claimed
  // it first (the caller then waits for that one to finish).
  bool deferred_pending() const noexcept { return deferred_ && !done_.is_set(); }
  bool run_deferred() {
    if (!claim()) return false;  // a concurrent waiter (shared_future) runs it
    deferred_(this);             // stores the value or the exception; noexcept
    publish();
    return true;
  }
  // --- end launch::deferred ----------------------------------------------

  // The level of the task producing the value (priority_levels: unknown).
  unsigned level() const noexcept { return level_; }
  void set_level(unsigned l) noexcept { level_ = static_cast<unsigned char>(l); }

  // Producer side: claims the right to publish (exactly once).
  bool claim() noexcept {
    // acq_rel: serialises competing producers; the winner writes the value.
    return !claimed_.exchange(true, std::memory_order_acq_rel);
  }
  void publish() noexcept { done_.set(); }
  void set_error(std::exception_ptr e) noexcept { error_ = std::move(e); }
  const std::exception_ptr& error() const noexcept { return error_; }
  // future<T>::get (one-shot): the exception leaves the state (see there).
  std::exception_ptr take_error() noexcept { return std::move(error_); }
  // An async task's exception: remembers the runtime it belongs to, to count
  // it there if nobody observes it.
  void set_task_error(std::exception_ptr e) noexcept {
    error_ = std::move(e);
    runtime_id_ = current_runtime_id();  // compute() runs on a worker of the task's runtime
  }
  // get() is about to rethrow the stored exception. relaxed: only the
  // destructor reads it, after the last release (acq_rel) of the state.
  void mark_observed() noexcept { observed_.store(true, std::memory_order_relaxed); }
  bool retrieve() noexcept {
    // relaxed: only guards against a second get_future() on one promise.
    return !retrieved_.exchange(true, std::memory_order_relaxed);
  }

 protected:
  virtual ~future_state_base() {
    if (error_ && runtime_id_ && !observed_.load(std::memory_order_relaxed))
      note_unobserved_exception(runtime_id_);
  }
  virtual void destroy() noexcept { delete this; }
  work_item* pending_item_ = nullptr;  // async tasks only; immutable
  void (*run_owned_)(future_state_base*) = nullptr;  // async tasks only
  // Deferred states only (weft/async.hpp): computes the value; immutable.
  void (*deferred_)(future_state_base*) noexcept = nullptr;

 private:
  completion done_;
  std::atomic<int> refs_{1};
  std::atomic<bool> claimed_{false};
  std::atomic<bool> retrieved_{false};
  std::atomic<bool> observed_{false};  // a get() rethrew error_
  unsigned char level_ = priority_levels;  // immutable after launch
  std::exception_ptr error_;  // written by the claimer before publish()
  std::uint64_t runtime_id_ = 0;  // async tasks that failed: their runtime
};

template <class T>
class future_state : public future_state_base {
 public:
  using future_state_base::future_state_base;
  future_state() = default;
  template <class... A>
  void emplace(A&&... a) { ::new (static_cast<void*>(&storage_)) T(std::forward<A>(a)...); has_value_ = true; }
  T& value() noexcept { return *std::launder(reinterpret_cast<T*>(&storage_)); }
  bool has_value() const noexcept { return has_value_; }

 protected:
  ~future_state() override { if (has_value_) value().~T(); }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
  bool has_value_ = false;
};

template <>
class future_state<void> : public future_state_base {
 public:
  using future_state_base::future_state_base;
  future_state() = default;
  void emplace() noexcept { has_value_ = true; }
  bool has_value() const noexcept { return has_value_; }

 private:
  bool has_value_ = false;
};

struct no_stop_source {};

// future<T&> / promise<T&> (as std::future<R&>): the state keeps a pointer
// to the referred object; the producer guarantees it outlives the reads.
template <class T>
class future_state<T&> : public future_state_base {
 public:
  using future_state_base::future_state_base;
  future_state() = default;
  void emplace(T& r) noexcept { ptr_ = std::addressof(r); }
  T& value() noexcept { return *ptr_; }
  bool has_value() const noexcept { return ptr_ != nullptr; }

 private:
  T* ptr_ = nullptr;
};

// An async task: the future's state, the deque item and the callable in one
// allocation. Stoppable: the callable takes a std::stop_token first (as
// std::jthread's does); the task then owns the std::stop_source that the
// future's request_stop() requests (no source, no cost, otherwise).
template <class R, class Fn, bool Stoppable = false>
class async_task final : public future_state<R>, public work_item {
 public:
  // Two references: the future's and the execution's.
  explicit async_task(Fn&& fn)
      : future_state<R>(2), work_item(&run, static_cast<future_state_base*>(this)), fn_(std::move(fn)) {
    this->pending_item_ = static_cast<work_item*>(this);
    this->run_owned_ = &run_owned;
  }
  static void* operator new(std::size_t n) { return allocate_small(n); }
  static void operator delete(void* p, std::size_t n) noexcept { deallocate_small(p, n); }
  std::stop_source* task_stop_source() noexcept override {
    if constexpr (Stoppable) return &source_;
    else return nullptr;
  }

 private:
  // Runs the callable and stores its result. No claim(): an async task's
  // state has exactly one producer.
  void compute() noexcept {
    try {
      if constexpr (Stoppable) {
        if constexpr (std::is_void_v<R>) {
          fn_(source_.get_token());
          this->emplace();
        } else {
          this->emplace(fn_(source_.get_token()));
        }
      } else if constexpr (std::is_void_v<R>) {
        fn_();
        this->emplace();
      } else {
        this->emplace(fn_());
      }
    } catch (...) {
      this->set_task_error(std::current_exception());
    }
  }
  static void run(work_item* item) noexcept {
    auto* self = static_cast<async_task*>(item);
    self->compute();
    task_finished();
    self->publish();
    self->release();  // the execution's reference; may free self
  }
  static void run_owned(future_state_base* base) {
    static_cast<async_task*>(static_cast<future_state<R>*>(base))->compute();
  }
  Fn fn_;
  [[no_unique_address]] std::conditional_t<Stoppable, std::stop_source, no_stop_source> source_;
};

// Whether weft::async / task_group::spawn pass a std::stop_token first (as
// std::jthread does: preferred whenever the callable accepts one).
template <class F, class... Args>
inline constexpr bool takes_stop_token_v =
    std::is_invocable_v<std::decay_t<F>, std::stop_token, std::decay_t<Args>...>;

// The result type of weft::async(f, args...): f(token, args...) or f(args...).
template <class F, class... Args>
using async_result_t = typename std::conditional_t<
    takes_stop_token_v<F, Args...>, std::invoke_result<std::decay_t<F>, std::stop_token, std::decay_t<Args>...>,
    std::invoke_result<std::decay_t<F>, std::decay_t<Args>...>>::type;

// For a callable taking a stop_token first: a callable of one stop_token.
template <class F, class... Args>
auto make_stop_invoker(F&& f, Args&&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return std::decay_t<F>(std::forward<F>(f));
  } else {
    return [fn = std::decay_t<F>(std::forward<F>(f)),
            tup = std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)](std::stop_token t) mutable
               -> decltype(auto) {
      return std::apply([&](auto&&... a) -> decltype(auto) {
        return std::invoke(std::move(fn), std::move(t), std::forward<decltype(a)>(a)...);
      }, std::move(tup));
    };
  }
}

template <class F, class... Args>
auto make_invoker(F&& f, Args&&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return std::decay_t<F>(std::forward<F>(f));
  } else {
    return [fn = std::decay_t<F>(std::forward<F>(f)),
            tup = std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)]() mutable
               -> decltype(auto) { return std::apply(std::move(fn), std::move(tup)); };
  }
}

scheduler* scheduler_of(worker_view* w) noexcept;

// The scheduler of the process-wide default runtime, created on first use
// (src/default_runtime.cpp; weft::default_runtime() in weft/async.hpp).
scheduler* default_scheduler();

// Starts an async task on `s` (or, when s is null, on the calling worker's
// runtime). From a worker of that runtime the task is pushed on the worker's
// own deque (child stealing); from any other thread it is injected.
// `level`: the priority level of the new task (-1: the caller's, or the
// default level from outside the runtime).
template <class F, class... Args>
auto launch_async_at(scheduler* s, int level, F&& f, Args&&... args)
    -> future<async_result_t<F, Args...>> {
  using R = async_result_t<F, Args...>;
  constexpr bool stoppable = takes_stop_token_v<F, Args...>;
  auto inv = [&] {
    if constexpr (stoppable)
      return make_stop_invoker(std::forward<F>(f), std::forward<Args>(args)...);
    else
      return make_invoker(std::forward<F>(f), std::forward<Args>(args)...);
  }();
  using task_t = async_task<R, decltype(inv), stoppable>;
  worker_view* w = current_worker();
  if (!s) {
    // Outside any task: the process-wide default runtime (weft/async.hpp).
    s = w ? w->sched : default_scheduler();
  }
  prepare_level(s, level);  // may throw; nothing is counted or queued yet
  auto* t = new task_t(std::move(inv));
  bool local = w && w->sched == s;
  t->set_level(level >= 0 ? static_cast<unsigned>(level) : local ? w->level : default_priority_level);
  future<R> result(static_cast<future_state<R>*>(t));
  task_started(w, s);
  if (local) {
    push_task_at(w, level, static_cast<work_item*>(t));
    strand_boundary(w);
  } else {
    inject(s, static_cast<work_item*>(t), level);
  }
  return result;
}

template <class F, class... Args>
auto launch_async(scheduler* s, F&& f, Args&&... args)
    -> future<async_result_t<F, Args...>> {
  return launch_async_at(s, -1, std::forward<F>(f), std::forward<Args>(args)...);
}

// What shared_future<T>::get returns: const T&, or void. (A conditional_t
// would form `const void&` for T = void, which is ill-formed.)
template <class T> struct shared_get_result { using type = const T&; };
template <> struct shared_get_result<void> { using type = void; };
template <class T> struct shared_get_result<T&> { using type = T&; };  // as std::shared_future<R&>

// The waits future<T> and shared_future<T> share, so that no wait of either
// can skip a step: the no_state check, then the run-time priority check
// (builds with WEFT_PRIORITY_CHECKS), then the wait. get() of each starts with
// checked() too; what follows differs (future::get may run its own child
// inline and consumes the state; shared_future::get only waits and reads).
struct future_waits {
  static future_state_base& checked(future_state_base* s) {
    if (!s) throw_future_error(std::future_errc::no_state);
    check_wait_priority(s->level());
    return *s;
  }
  static void wait(future_state_base* s) { checked(s).wait(); }
  // Any duration or clock, max() and min() included: conversions saturate.
  // A deferred function not yet run: future_status::deferred at once.
  template <class Rep, class Period>
  static std::future_status wait_for(future_state_base* s, const std::chrono::duration<Rep, Period>& d) {
    future_state_base& st = checked(s);
    if (st.deferred_pending()) return std::future_status::deferred;
    return status(st.wait_until(deadline_after(d)));
  }
  template <class Clock, class Duration>
  static std::future_status wait_until(future_state_base* s,
                                       const std::chrono::time_point<Clock, Duration>& t) {
    future_state_base& st = checked(s);
    if (st.deferred_pending()) return std::future_status::deferred;
    return status(st.wait_until(to_steady_deadline(t)));
  }
  // Cancellable wait: throws operation_canceled if `stop` is requested
  // before the state is ready.
  static void wait(future_state_base* s, const std::stop_token& stop, const char* what) {
    if (!checked(s).wait(stop)) throw_operation_cancelled(what);
  }
  static bool request_stop(future_state_base* s) noexcept {
    std::stop_source* src = s ? s->task_stop_source() : nullptr;
    return src && src->request_stop();
  }
  static std::stop_source stop_source(future_state_base* s) noexcept {
    std::stop_source* src = s ? s->task_stop_source() : nullptr;
    return src ? *src : std::stop_source(std::nostopstate);
  }
  // Not a wait: no priority check.
  static bool is_ready(const future_state_base* s) {
    if (!s) throw_future_error(std::future_errc::no_state);
    return s->ready();
  }

 private:
  static std::future_status status(bool ready) noexcept {
    return ready ? std::future_status::ready : std::future_status::timeout;
  }
};

template <class T>
decltype(auto) get_value(future_state<T>* s) {
  if (s->error()) {
    s->mark_observed();
    std::rethrow_exception(s->error());
  }
  if constexpr (!std::is_void_v<T>) return (s->value());
}

// ---- Composition (weft/when.hpp, included at the end of this file).
struct when_access;
// The type of fn(fut): what a continuation attached with then() returns.
template <class F, class Fut>
using then_result_t = std::invoke_result_t<std::decay_t<F>, Fut>;
template <class Fut, class F>
auto compose_then(Fut&& input, F&& fn) -> future<then_result_t<F, std::decay_t<Fut>>>;
// ---- end of composition

}  // namespace detail

// A one-shot result that may be waited on from tasks (suspends the task) or
// from any thread (blocks it).
template <class T>
class future {
 public:
  future() noexcept = default;
  future(future&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  future& operator=(future&& o) noexcept {
    if (this != &o) { reset(); state_ = std::exchange(o.state_, nullptr); }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() { reset(); }

  bool valid() const noexcept { return state_ != nullptr; }
  bool is_ready() const { return detail::future_waits::is_ready(state_); }
  void wait() const { detail::future_waits::wait(state_); }
  // Any duration or clock, max() and min() included: conversions saturate.
  template <class Rep, class Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period>& d) const {
    return detail::future_waits::wait_for(state_, d);
  }
  template <class Clock, class Duration>
  std::future_status wait_until(const std::chrono::time_point<Clock, Duration>& t) const {
    return detail::future_waits::wait_until(state_, t);
  }

  // Waits, then returns the value (moved out) or rethrows the exception. The
  // future is invalid afterwards; a second get() throws future_error(no_state).
  T get() { return get_impl(nullptr); }

  // Cancellation (docs/api.md "Cancellation"). get(stop) and wait(stop) are
  // get() and wait() that end early when `stop` is requested before the
  // value is ready: they throw std::system_error(std::errc::operation_canceled)
  // and the future stays valid (nothing is consumed; get() may be called
  // again). A ready value wins over a stop requested at the same time. The
  // token stops this wait, not the task: to stop the task, give it a token
  // (a callable taking std::stop_token first) and call request_stop().
  T get(const std::stop_token& stop) { return get_impl(&stop); }
  void wait(const std::stop_token& stop) const {
    detail::future_waits::wait(state_, stop, "weft: future::wait cancelled");
  }
  // For a future of weft::async(f, ...) whose f takes a std::stop_token first:
  // requests stop on the task's stop_source (the token f was given); true if
  // this call made the request. false for any other future (no source), or if
  // stop was already requested. Does not wait. Never throws (an invalid future
  // gives false). get_stop_source(): that source (std::nostopstate if none),
  // e.g. to hand the task's token to other waits.
  bool request_stop() const noexcept { return detail::future_waits::request_stop(state_); }
  std::stop_source get_stop_source() const noexcept { return detail::future_waits::stop_source(state_); }

 private:
  T get_impl(const std::stop_token* stop) {
    detail::future_waits::checked(state_);
    // A stopped token ends the wait at once unless the value is there (an
    // unstarted own child is not run then).
    if (stop && stop->stop_requested() && !state_->ready())
      detail::throw_operation_cancelled("weft: future::get cancelled");
    bool owned = state_->run_inline_if_own_child();
    if (!owned) {
      if (detail::worker_view* w = detail::current_worker()) detail::strand_boundary(w);
      if (!stop) state_->wait();
      else if (!state_->wait(*stop)) detail::throw_operation_cancelled("weft: future::get cancelled");
    }
    struct releaser {
      detail::future_state<T>*& s;
      bool owned;
      ~releaser() {
        if (owned) s->destroy_owned(); else s->release();
        s = nullptr;
      }
    } r{state_, owned};
    if (state_->error()) {
      state_->mark_observed();
      // Moved out, not copied: the exception then lives only in this
      // thread's flight and handler and is freed by this thread, not by the
      // state's last releaser on another thread after the releaser above has
      // run. (That was correct, ordered by the exception's own reference
      // count, but that count lives in the uninstrumented libstdc++, so TSan
      // reported the handler's reads racing with the free.)
      std::rethrow_exception(state_->take_error());
    }
    if constexpr (std::is_lvalue_reference_v<T>) return state_->value();  // future<R&>
    else if constexpr (!std::is_void_v<T>) return std::move(state_->value());
  }

 public:
  shared_future<T> share() noexcept;

  // ---- Composition (weft/when.hpp documents it) ----------------------------
  // Attaches a continuation: fn(std::move(*this)) runs as a task once this
  // future is ready; returns the future of its result. This future is invalid
  // afterwards. Throws future_error(no_state) if invalid, std::logic_error
  // outside a runtime's task.
  template <class F>
  auto then(F&& fn) -> future<detail::then_result_t<F, future<T>>> {
    return detail::compose_then(std::move(*this), std::forward<F>(fn));
  }
  // ---- end of composition

 private:
  friend struct detail::when_access;
  friend class promise<T>;
  template <class F, class... A>
  friend auto detail::launch_async_at(detail::scheduler*, int, F&&, A&&...)
      -> future<detail::async_result_t<F, A...>>;
  friend class shared_future<T>;
  friend struct detail::future_access;
  explicit future(detail::future_state<T>* s) noexcept : state_(s) {}
  void reset() noexcept {
    if (state_) state_->release();
    state_ = nullptr;
  }
  detail::future_state<T>* state_ = nullptr;
};

// A copyable view of a result that many tasks or threads may wait on.
template <class T>
class shared_future {
 public:
  shared_future() noexcept = default;
  shared_future(future<T>&& f) noexcept : state_(std::exchange(f.state_, nullptr)) {}
  shared_future(const shared_future& o) noexcept : state_(o.state_) {
    if (state_) state_->add_ref();
  }
  shared_future(shared_future&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  shared_future& operator=(shared_future o) noexcept {
    std::swap(state_, o.state_);
    return *this;
  }
  ~shared_future() { if (state_) state_->release(); }

  bool valid() const noexcept { return state_ != nullptr; }
  bool is_ready() const { return detail::future_waits::is_ready(state_); }
  void wait() const { detail::future_waits::wait(state_); }
  // Any duration or clock, max() and min() included: conversions saturate.
  template <class Rep, class Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period>& d) const {
    return detail::future_waits::wait_for(state_, d);
  }
  template <class Clock, class Duration>
  std::future_status wait_until(const std::chrono::time_point<Clock, Duration>& t) const {
    return detail::future_waits::wait_until(state_, t);
  }
  // Waits, then returns a reference to the value (void for T = void) or
  // rethrows the stored exception. May be called any number of times.
  typename detail::shared_get_result<T>::type get() const {
    detail::future_waits::wait(state_);
    return detail::get_value(state_);
  }
  // Cancellable forms, as future's (docs/api.md "Cancellation"): throw
  // std::system_error(std::errc::operation_canceled) if `stop` is requested
  // before the value is ready.
  typename detail::shared_get_result<T>::type get(const std::stop_token& stop) const {
    detail::future_waits::wait(state_, stop, "weft: shared_future::get cancelled");
    return detail::get_value(state_);
  }
  void wait(const std::stop_token& stop) const {
    detail::future_waits::wait(state_, stop, "weft: shared_future::wait cancelled");
  }
  // As future::request_stop / get_stop_source.
  bool request_stop() const noexcept { return detail::future_waits::request_stop(state_); }
  std::stop_source get_stop_source() const noexcept { return detail::future_waits::stop_source(state_); }

  // ---- Composition (weft/when.hpp documents it) ----------------------------
  // Attaches a continuation: fn(a copy of *this) runs as a task once the
  // result is ready; this shared_future stays valid. Errors as future::then.
  template <class F>
  auto then(F&& fn) const -> future<detail::then_result_t<F, shared_future<T>>> {
    return detail::compose_then(*this, std::forward<F>(fn));
  }
  // ---- end of composition

 private:
  friend struct detail::when_access;
  detail::future_state<T>* state_ = nullptr;
};

template <class T>
shared_future<T> future<T>::share() noexcept { return shared_future<T>(std::move(*this)); }

// The producer side of a future, settable from any thread.
template <class T>
class promise {
 public:
  promise() : state_(new detail::future_state<T>()) {}
  promise(promise&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
  promise& operator=(promise&& o) noexcept {
    if (this != &o) { abandon(); state_ = std::exchange(o.state_, nullptr); }
    return *this;
  }
  promise(const promise&) = delete;
  promise& operator=(const promise&) = delete;
  ~promise() { abandon(); }

  // --- std::promise's swap ------------------------------------------------
  void swap(promise& o) noexcept { std::swap(state_, o.state_); }
  friend void swap(promise& a, promise& b) noexcept { a.swap(b); }
  // --- end swap -------------------------------------------------------------

  future<T> get_future() {
    check();
    if (!state_->retrieve()) detail::throw_future_error(std::future_errc::future_already_retrieved);
    state_->add_ref();
    return future<T>(state_);
  }

  template <class... A>
  void set_value(A&&... a) {
    check();
    if (!state_->claim()) detail::throw_future_error(std::future_errc::promise_already_satisfied);
    if constexpr (std::is_void_v<T>) {
      static_assert(sizeof...(A) == 0, "promise<void>::set_value takes no argument");
      state_->emplace();
    } else {
      try {
        state_->emplace(std::forward<A>(a)...);
      } catch (...) {
        state_->set_error(std::current_exception());
      }
    }
    state_->publish();
  }

  void set_exception(std::exception_ptr e) {
    check();
    if (!e) throw std::invalid_argument("weft::promise::set_exception: null exception_ptr");
    if (!state_->claim()) detail::throw_future_error(std::future_errc::promise_already_satisfied);
    state_->set_error(std::move(e));
    state_->publish();
  }

 private:
  void check() const {
    if (!state_) detail::throw_future_error(std::future_errc::no_state);
  }
  void abandon() noexcept {
    if (!state_) return;
    if (state_->claim()) {
      state_->set_error(std::make_exception_ptr(
          std::future_error(std::future_errc::broken_promise)));
      state_->publish();
    }
    state_->release();
    state_ = nullptr;
  }
  detail::future_state<T>* state_;
};

// Starts fn(args...) as a child task of the calling task. Called outside any
// task (main(), a plain thread), it starts fn as a task of the process-wide
// default runtime (weft::default_runtime() in weft/async.hpp, created on first
// use; its configuration_error or std::system_error propagate), and the
// future's get() blocks the calling thread. Arguments are decay-copied, as
// with std::async. weft::async(std::launch, fn, args...): weft/async.hpp.
// If fn accepts a std::stop_token first (as std::jthread's callables do), it
// is called as fn(token, args...): the task gets its own std::stop_source,
// requested through the future's request_stop() (docs/api.md "Cancellation").
template <class F, class... Args>
[[nodiscard]] auto async(F&& fn, Args&&... args)
    -> future<detail::async_result_t<F, Args...>> {
  return detail::launch_async(nullptr, std::forward<F>(fn), std::forward<Args>(args)...);
}

}  // namespace weft

// Composition (when_all, when_any and the definition of then()).
#include "weft/when.hpp"  // IWYU pragma: export
