// weft — std::async's shape: launch policies and the process-wide default
// runtime (docs/migrating.md).
//
//   auto a = weft::async(std::launch::async, f, x);     // a task, as weft::async(f, x)
//   auto d = weft::async(std::launch::deferred, g, y);  // g(y) runs in d.get()
//   int main() { return weft::async(f, 1).get(); }      // outside any task: the
//                                                       // default runtime
//
// weft::async(policy, fn, args...):
//  * std::launch::async (alone or with deferred, or any policy that contains
//    async): fn(args...) is started as a task, exactly as weft::async(fn,
//    args...) starts it — a child of the calling task, or, outside any task,
//    a task of the default runtime. (std leaves async|deferred to the
//    implementation; weft always chooses a task: it is cheap.)
//  * std::launch::deferred alone: nothing runs now. fn and the decay-copied
//    arguments are stored in the future's state; the first non-timed wait
//    (get or wait, on the future or a shared_future made from it) runs
//    fn(args...) in the caller — inside a task, in that task; on a plain
//    thread, on that thread, with no runtime involved. Timed waits
//    (wait_for, wait_until) return std::future_status::deferred until then
//    and do not run it. If the future is dropped without a wait, fn never
//    runs. An exception from fn is stored and rethrown by get(), as std does.
//  * a policy with neither bit: std::invalid_argument (std leaves it
//    undefined).
//
// The default runtime: weft::default_runtime() returns the process-wide
// runtime that weft::async uses outside any task. It is created on first use
// with options{} (workers: the WEFT_WORKERS environment variable, else
// std::thread::hardware_concurrency(); a bad WEFT_WORKERS throws
// weft::configuration_error from that first use) and is deliberately never
// destroyed at exit: its parked workers end with the process, so exit can
// neither hang on a task blocked for ever nor race static destructors (the
// reasons are in src/default_runtime.cpp). Tasks still running when main
// returns are abandoned, like detached threads: get() your futures first.
// weft::shutdown_default_runtime() destroys it now (waiting for its tasks,
// as ~runtime does) and returns true, or returns false if none exists; a
// later use creates a new one. Do not call it while other threads use the
// default runtime; from a task of the default runtime it throws
// std::logic_error.
#pragma once

#include <functional>
#include <future>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "weft/blocking.hpp"  // detail::future_access
#include "weft/future.hpp"

namespace weft {

class runtime;

// The process-wide default runtime (created on first use; see above).
runtime& default_runtime();
// Destroys the default runtime if it exists (see above).
bool shutdown_default_runtime();

namespace detail {

// The state of a launch::deferred future: the future's state and the
// callable in one allocation. One reference (the future's); the function runs
// in the first waiter (future_state_base::run_deferred).
template <class R, class Fn>
class deferred_state final : public future_state<R> {
 public:
  explicit deferred_state(Fn&& fn) : fn_(std::move(fn)) { this->deferred_ = &run; }
  static void* operator new(std::size_t n) { return allocate_small(n); }
  static void operator delete(void* p, std::size_t n) noexcept { deallocate_small(p, n); }

 private:
  // Called once, by the waiter that claimed the state, before publish().
  static void run(future_state_base* base) noexcept {
    auto* self = static_cast<deferred_state*>(static_cast<future_state<R>*>(base));
    try {
      if constexpr (std::is_void_v<R>) {
        std::move(self->fn_)();
        self->emplace();
      } else {
        self->emplace(std::move(self->fn_)());
      }
    } catch (...) {
      self->set_error(std::current_exception());
    }
  }
  Fn fn_;
};

}  // namespace detail

// See the comment block at the top of this file.
template <class F, class... Args>
[[nodiscard]] auto async(std::launch policy, F&& fn, Args&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>> {
  using R = std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>;
  if ((policy & std::launch::async) == std::launch::async)
    return ::weft::async(std::forward<F>(fn), std::forward<Args>(args)...);
  if ((policy & std::launch::deferred) != std::launch::deferred)
    throw std::invalid_argument("weft::async: a launch policy with neither async nor deferred");
  auto inv = detail::make_invoker(std::forward<F>(fn), std::forward<Args>(args)...);
  auto* st = new detail::deferred_state<R, decltype(inv)>(std::move(inv));
  return detail::future_access::make(static_cast<detail::future_state<R>*>(st));
}

}  // namespace weft
