// weft — task priorities (I-Cilk, I-Cilk) and the compile-time
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
// Only the runtime makes a task_context (it passes each task its own);
// at_priority<P> names the level of new work and is not a context, so a task
// cannot claim a level it does not run at. this_task::context<P>() hands a
// task its context after checking its level at run time.
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
#include "weft/runtime.hpp"
#include "weft/task_group.hpp"

namespace weft {

template <unsigned P> class task_context;
template <unsigned P> class priority_task_group;

// The level of NEW work, named at compile time: what async, rt.run and
// priority_task_group::spawn take (weft::at_priority<P>). Anyone may name a
// level to create work at; it is not a context and cannot stand for one.
template <unsigned P>
struct priority_tag {
  static_assert(P < priority_levels, "weft::priority_tag<P>: P must be < weft::priority_levels");
  static constexpr unsigned level = P;
  constexpr priority value() const noexcept { return priority(P); }
};

template <unsigned P>
inline constexpr priority_tag<P> at_priority{};

namespace detail {
template <unsigned P> struct always_false_level : std::false_type {};
template <unsigned P> struct typed_async;
template <unsigned P> struct checked_context;

// The only code that makes a task_context. make<P>() is private; each friend
// hands the context it makes only to a callable that runs as a task of level
// P (or, checked_context, to a task it has checked runs at level P):
//   typed_async<P>        weft::async(at_priority<P>, fn, args...)
//   priority_task_group   spawn(fn) / spawn(at_priority<C>, fn)
//   runtime               rt.run(at_priority<P>, fn)
//   checked_context<P>    weft::this_task::context<P>()
class context_access {
  template <unsigned P>
  static constexpr task_context<P> make() noexcept { return task_context<P>(); }
  template <unsigned> friend struct typed_async;
  template <unsigned> friend class weft::priority_task_group;
  template <unsigned> friend struct checked_context;
  friend class weft::runtime;
};
}  // namespace detail

// The typed context of a task of level P (see the top of this file): the
// proof, checked at compile time, that the code holding it runs at level P.
// Only the runtime makes one (detail::context_access); a task receives its
// own as the first argument of its callable. Copyable, so that it can be
// passed down to the functions the task calls.
template <unsigned P>
class task_context {
  static_assert(P < priority_levels, "weft::task_context<P>: P must be < weft::priority_levels");

 public:
  static constexpr unsigned level = P;
  constexpr priority value() const noexcept { return priority(P); }

 private:
  constexpr task_context() noexcept = default;
  friend class detail::context_access;
};

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
  // get(at_priority<Q>) / wait(at_priority<Q>): a tag names the level of new
  // work, not the waiter's; accepting it would let any task claim any level.
  template <unsigned Q>
  T get(priority_tag<Q>) {
    static_assert(detail::always_false_level<Q>::value,
                  "weft: get/wait take the waiting task's own task_context (the runtime passes "
                  "it to the task); weft::at_priority<P> names the level of new work and is not "
                  "a context");
    return f_.get();
  }
  template <unsigned Q>
  void wait(priority_tag<Q>) const {
    static_assert(detail::always_false_level<Q>::value,
                  "weft: get/wait take the waiting task's own task_context (the runtime passes "
                  "it to the task); weft::at_priority<P> names the level of new work and is not "
                  "a context");
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

namespace detail {
template <unsigned P>
struct typed_async {
  // Runs fn(ctx, args...) as a task of level P, ctx being that task's context.
  template <class F, class... Args>
  static auto launch(F&& fn, Args&&... args)
      -> priority_future<std::invoke_result_t<std::decay_t<F>, task_context<P>, std::decay_t<Args>...>, P> {
    using R = std::invoke_result_t<std::decay_t<F>, task_context<P>, std::decay_t<Args>...>;
    return priority_future<R, P>(launch_async_at(nullptr, static_cast<int>(P), std::forward<F>(fn),
                                                 context_access::make<P>(), std::forward<Args>(args)...));
  }
};

// weft::this_task::context<P>(): the calling task's context, after checking
// at run time that it runs at level P.
template <unsigned P>
struct checked_context {
  static task_context<P> get() {
    worker_view* w = require_worker("weft::this_task::context");
    // Priority-oblivious mode runs every task at the default level whatever
    // its priority, so no wait is an inversion there: nothing to check.
    if (w->tracks_levels && w->level != P)
      throw std::logic_error("weft::this_task::context<" + std::to_string(P) +
                             ">: the calling task runs at level " + std::to_string(w->level));
    return context_access::make<P>();
  }
};
}  // namespace detail

// Typed async: runs fn(ctx, args...) as a task of level P, where ctx is the
// new task's task_context<P>.
template <unsigned P, class F, class... Args>
[[nodiscard]] auto async(priority_tag<P>, F&& fn, Args&&... args)
    -> priority_future<std::invoke_result_t<std::decay_t<F>, task_context<P>, std::decay_t<Args>...>, P> {
  return detail::typed_async<P>::launch(std::forward<F>(fn), std::forward<Args>(args)...);
}

// Run-time priority async: a weft::future whose waits are checked in builds
// with WEFT_PRIORITY_CHECKS.
template <class F, class... Args>
[[nodiscard]] auto async(priority p, F&& fn, Args&&... args)
    -> future<detail::async_result_t<F, Args...>> {
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
    group_.spawn([f = std::forward<F>(fn)]() mutable { f(detail::context_access::make<P>()); });
  }
  // Spawns fn(task_context<C>) at level C <= P.
  template <unsigned C, class F>
  void spawn(priority_tag<C>, F&& fn) {
    static_assert(detail::check_no_priority_inversion<P, C>::ok);
    group_.spawn([f = std::forward<F>(fn)]() mutable { f(detail::context_access::make<C>()); },
                 priority(C));
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

// The calling task's task_context<P>, to enter the typed form from code that
// knows its level only at run time. Throws std::logic_error outside a task,
// and from a task whose level is not P (in priority-oblivious mode, where
// levels are not tracked, any P is accepted).
template <unsigned P>
task_context<P> context() {
  return detail::checked_context<P>::get();
}
}  // namespace this_task

// Typed root: runs f(ctx) at level P, ctx being the root task's context.
// Called from a task of this runtime, run() calls f in that task (see
// run(F&&)), which is allowed only if that task runs at level P.
template <unsigned P, class F>
auto runtime::run(priority_tag<P>, F&& f) {
  if (detail::is_worker_of(*sched_)) return f(detail::checked_context<P>::get());
  return run(priority(P), [&f] { return f(detail::context_access::make<P>()); });
}

}  // namespace weft
