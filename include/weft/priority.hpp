// weft — task priorities (paper 001, I-Cilk) and the compile-time
// priority-inversion check.
//
// Levels 0 .. priority_levels-1; level 0 is the MOST urgent. A task inherits
// its parent's level unless it is spawned with another. The scheduler (APS)
// gives workers to levels top-down every quantum (docs/priorities.md).
//
// Typed form — the natural way to write prioritized code. A task of level P
// receives a task_context<P>; every wait names the waiter's context, and
// waiting on work of a lower priority does not compile:
//
//   int handler(weft::task_context<0> ctx) {                  // urgent
//     auto a = weft::async(weft::at_priority<0>, work, 10);   // fine
//     auto b = weft::async(weft::at_priority<5>, log_it);     // fine: create
//     int x = a.get(ctx);                                     // fine
//     b.get(ctx);   // error: priority inversion (waiter 0, awaited 5)
//   }
//
// Run-time form — when a level is known only at run time:
//   weft::async(weft::priority{2}, fn, args...) returns a weft::future; in
//   builds with WEFT_PRIORITY_CHECKS (on unless NDEBUG), get()/wait() from a
//   task of a more urgent level throws weft::priority_inversion naming both.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "weft/future.hpp"
#include "weft/priority_level.hpp"
#include "weft/task_group.hpp"

namespace weft {

// The typed context of a task of level P (see the top of this file).
template <unsigned P>
class task_context {
  static_assert(P < priority_levels, "weft::task_context<P>: P must be < weft::priority_levels");

 public:
  static constexpr unsigned level = P;
  constexpr task_context() noexcept = default;
  constexpr priority value() const noexcept { return priority(P); }
};

template <unsigned P>
inline constexpr task_context<P> at_priority{};

namespace detail {
// The compile-time check. When it fires, the compiler names the template
// arguments: <level of the waiting task, level of the awaited work>.
template <unsigned WaiterLevel, unsigned AwaitedLevel>
struct check_no_priority_inversion {
  static_assert(AwaitedLevel <= WaiterLevel,
                "weft: priority inversion: a task may not wait (get/sync) on work of a lower "
                "priority than its own (level 0 is the most urgent). The levels are the "
                "arguments <waiter, awaited> of weft::detail::check_no_priority_inversion.");
  static constexpr bool ok = true;
};
}  // namespace detail

// The result of a typed async of level P.
template <class T, unsigned P>
class priority_future {
 public:
  static constexpr unsigned level = P;
  priority_future() noexcept = default;
  explicit priority_future(future<T>&& f) noexcept : f_(std::move(f)) {}

  bool valid() const noexcept { return f_.valid(); }
  bool is_ready() const { return f_.is_ready(); }

  // Waits from a task of level Q; compiles only if P is at least as urgent.
  template <unsigned Q>
  T get(task_context<Q>) {
    static_assert(detail::check_no_priority_inversion<Q, P>::ok);
    return f_.get();
  }
  template <unsigned Q>
  void wait(task_context<Q>) const {
    static_assert(detail::check_no_priority_inversion<Q, P>::ok);
    f_.wait();
  }
  // For threads outside the runtime, which have no priority. Throws
  // std::logic_error when called from a task (use get(ctx) there).
  T get_outside_runtime() {
    if (detail::current_worker())
      throw std::logic_error("weft::priority_future::get_outside_runtime called from a task; use get(ctx)");
    return f_.get();
  }

 private:
  future<T> f_;
};

// Typed async: runs fn(task_context<P>{}, args...) as a task of level P.
template <unsigned P, class F, class... Args>
[[nodiscard]] auto async(task_context<P>, F&& fn, Args&&... args)
    -> priority_future<std::invoke_result_t<std::decay_t<F>, task_context<P>, std::decay_t<Args>...>, P> {
  using R = std::invoke_result_t<std::decay_t<F>, task_context<P>, std::decay_t<Args>...>;
  return priority_future<R, P>(detail::launch_async_at(
      nullptr, static_cast<int>(P), std::forward<F>(fn), task_context<P>{}, std::forward<Args>(args)...));
}

// Run-time priority async: a weft::future whose waits are checked in builds
// with WEFT_PRIORITY_CHECKS.
template <class F, class... Args>
[[nodiscard]] auto async(priority p, F&& fn, Args&&... args)
    -> future<std::invoke_result_t<std::decay_t<F>, std::decay_t<Args>...>> {
  return detail::launch_async_at(nullptr, static_cast<int>(p.level()), std::forward<F>(fn),
                                 std::forward<Args>(args)...);
}

// A task group owned by a task of level P. Children may be spawned at any
// level at least as urgent as P (sync waits on them); a less urgent child
// does not compile.
template <unsigned P>
class priority_task_group {
 public:
  explicit priority_task_group(task_context<P>) {}

  // Spawns fn(task_context<P>) at the owner's level.
  template <class F>
  void spawn(F&& fn) {
    group_.spawn([f = std::forward<F>(fn)]() mutable { f(task_context<P>{}); });
  }
  // Spawns fn(task_context<C>) at level C <= P.
  template <unsigned C, class F>
  void spawn(task_context<C>, F&& fn) {
    static_assert(detail::check_no_priority_inversion<P, C>::ok);
    group_.spawn([f = std::forward<F>(fn)]() mutable { f(task_context<C>{}); }, priority(C));
  }
  void sync() { group_.sync(); }

 private:
  task_group group_;
};

// Typed fork_join: both branches run at the caller's level and receive its
// context.
template <unsigned P, class F, class G>
auto fork_join(task_context<P> ctx, F&& f, G&& g) {
  return fork_join([&] { return f(ctx); }, [&] { return g(ctx); });
}

namespace this_task {
// The level of the calling task (default_priority_level outside a runtime).
priority current_priority() noexcept;
}  // namespace this_task

}  // namespace weft
