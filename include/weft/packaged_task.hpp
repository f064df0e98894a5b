// weft — packaged_task<R(Args...)>: std::packaged_task producing a
// weft::future (docs/migrating.md).
//
//   weft::packaged_task<int(int)> t([](int x) { return x * 2; });
//   weft::future<int> f = t.get_future();
//   weft::async(std::move(t), 21);   // or call t(21) on any thread or task
//   f.get();                          // 42
//
// The std interface: a default-constructed task has no state (valid() is
// false); packaged_task(f) stores a decay copy of f (move-only callables
// accepted); move-only (copying is deleted); swap; valid; get_future;
// operator()(args...) calls the stored function with the arguments as given
// and makes the future ready with its result or exception; reset() gives the
// task a new state (and a new future to retrieve) while keeping the function.
//
// Errors (std::future_error, as std):
//  * get_future() twice: future_already_retrieved; on a task without state
//    (default-constructed, moved from): no_state.
//  * operator() a second time: promise_already_satisfied (the function is not
//    called again); without state: no_state.
//  * reset() without state: no_state. The old state, if never invoked, is
//    abandoned: its future receives broken_promise.
//  * destroying a task that was never invoked: its future, if retrieved,
//    receives broken_promise.
// operator() must not be called concurrently with another member on the same
// object (as std); the future may be waited on from any task or thread.
// Not provided: make_ready_at_thread_exit (a task may change threads, so
// "thread exit" is not a task's notion); call operator() instead.
#pragma once

#include <exception>
#include <future>
#include <memory>
#include <type_traits>
#include <utility>

#include "weft/blocking.hpp"  // detail::future_access
#include "weft/future.hpp"

namespace weft {

template <class Signature> class packaged_task;

namespace detail {

// The stored function, type-erased (move-only callables allowed).
template <class R, class... Args>
struct task_fn_base {
  virtual ~task_fn_base() = default;
  virtual R call(Args&&... args) = 0;
};
template <class Fn, class R, class... Args>
struct task_fn final : task_fn_base<R, Args...> {
  template <class F>
  explicit task_fn(F&& f) : fn(std::forward<F>(f)) {}
  R call(Args&&... args) override {
    if constexpr (std::is_void_v<R>) {
      std::invoke(fn, std::forward<Args>(args)...);
    } else {
      return std::invoke(fn, std::forward<Args>(args)...);
    }
  }
  Fn fn;
};

}  // namespace detail

template <class R, class... Args>
class packaged_task<R(Args...)> {
 public:
  packaged_task() noexcept = default;
  template <class F,
            class = std::enable_if_t<!std::is_same_v<std::remove_cvref_t<F>, packaged_task> &&
                                     std::is_invocable_r_v<R, std::decay_t<F>&, Args...>>>
  explicit packaged_task(F&& f)
      : fn_(std::make_unique<detail::task_fn<std::decay_t<F>, R, Args...>>(std::forward<F>(f))),
        state_(new detail::future_state<R>()) {}
  packaged_task(packaged_task&& o) noexcept
      : fn_(std::move(o.fn_)), state_(std::exchange(o.state_, nullptr)) {}
  packaged_task& operator=(packaged_task&& o) noexcept {
    if (this != &o) {
      abandon();
      fn_ = std::move(o.fn_);
      state_ = std::exchange(o.state_, nullptr);
    }
    return *this;
  }
  packaged_task(const packaged_task&) = delete;
  packaged_task& operator=(const packaged_task&) = delete;
  ~packaged_task() { abandon(); }

  bool valid() const noexcept { return state_ != nullptr; }
  void swap(packaged_task& o) noexcept {
    std::swap(fn_, o.fn_);
    std::swap(state_, o.state_);
  }

  future<R> get_future() {
    check();
    if (!state_->retrieve()) detail::throw_future_error(std::future_errc::future_already_retrieved);
    state_->add_ref();
    return detail::future_access::make(state_);
  }

  void operator()(Args... args) {
    check();
    // claim() first: a second call must not run the function again.
    if (!state_->claim()) detail::throw_future_error(std::future_errc::promise_already_satisfied);
    try {
      if constexpr (std::is_void_v<R>) {
        fn_->call(std::forward<Args>(args)...);
        state_->emplace();
      } else {
        state_->emplace(fn_->call(std::forward<Args>(args)...));
      }
    } catch (...) {
      state_->set_error(std::current_exception());
    }
    state_->publish();
  }

  void reset() {
    check();
    auto* fresh = new detail::future_state<R>();
    abandon_state();
    state_ = fresh;
  }

 private:
  void check() const {
    if (!state_) detail::throw_future_error(std::future_errc::no_state);
  }
  // As promise::abandon: an unsatisfied state gets broken_promise.
  void abandon_state() noexcept {
    if (!state_) return;
    if (state_->claim()) {
      state_->set_error(std::make_exception_ptr(std::future_error(std::future_errc::broken_promise)));
      state_->publish();
    }
    state_->release();
    state_ = nullptr;
  }
  void abandon() noexcept {
    abandon_state();
    fn_.reset();
  }

  std::unique_ptr<detail::task_fn_base<R, Args...>> fn_;
  detail::future_state<R>* state_ = nullptr;  // one reference, held by this task
};

template <class R, class... Args>
void swap(packaged_task<R(Args...)>& a, packaged_task<R(Args...)>& b) noexcept { a.swap(b); }

}  // namespace weft
