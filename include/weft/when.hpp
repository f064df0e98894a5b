// weft — composition of futures: when_all, when_any and then (the shapes of
// the Concurrency TS, N4538 / std::experimental), for weft::future,
// weft::shared_future and weft::io::io_future alike.
//
//   auto all = weft::when_all(weft::async(f), weft::async(g));  // future<tuple<...>>
//   auto [a, b] = all.get();             // two ready futures: a.get(), b.get()
//
//   std::vector<weft::future<int>> v = ...;
//   auto any = weft::when_any(v.begin(), v.end()).get();   // when_any_result
//   int first = any.futures[any.index].get();
//
//   auto r = weft::io::read(fd, buf, n);
//   auto t = weft::io::sleep_for(100ms);
//   auto first = weft::when_any(std::move(r), std::move(t)).get();
//   if (first.index == 1) std::get<0>(first.futures).cancel();  // timed out
//
//   weft::future<int> g = weft::async(f).then([](weft::future<int> x) { return x.get() + 1; });
//
// when_all(f...)            -> future<std::tuple<F...>>       (F: the decayed inputs)
// when_all(first, last)     -> future<std::vector<V>>         (V: the iterator's value type)
// when_any(f...)            -> future<when_any_result<std::tuple<F...>>>
// when_any(first, last)     -> future<when_any_result<std::vector<V>>>
// x.then(fn)                -> future<R>, R = fn's result type
//
// Inputs: any mix of future<T>, shared_future<T> and io::io_future<T>. A
// future or io_future is moved into the composition (the caller's becomes
// invalid; pass it with std::move); a shared_future is copied. The result
// future becomes ready when all inputs (when_all) or the first of them
// (when_any) are ready; it then holds the input futures themselves, ready (or,
// for when_any, the others as they are), each with its own value or
// exception: a failed input does not fail the composition, its get() rethrows.
// when_any's index is the position of an input found ready (the first to
// complete, or, if several were ready already, the first of those in order).
// when_all() and when_all(first, first) are ready at once with an empty
// sequence; when_any() and when_any(first, first) are ready at once with
// index == static_cast<std::size_t>(-1) and an empty sequence (as the TS
// says). The losers of a when_any are not cancelled: call cancel() on an
// io_future that should stop (a dropped pending read still completes).
//
// Errors: an invalid input throws std::future_error(no_state) before anything
// is consumed (ranges of input iterators that are not forward iterators are
// moved first: their valid elements are then consumed). when_all/when_any
// work from tasks and from plain threads, waiting on the result suspends the
// task or blocks the thread as any future does. Exception: on the blocking
// I/O backend (io_backend::blocking), an operation that would block is
// performed by whoever waits for it; composing such an io_future starts a
// task that performs it, so it must be done from a task (std::logic_error
// otherwise), and that task occupies a worker while the operation waits, as a
// get() would.
//
// then(fn): fn is called with the ready input (future<T>&&, a copy of the
// shared_future, or io_future<T>&&) and may call get() on it without waiting.
// It runs as a new task of the runtime of the task calling then(), at the
// input's priority level: the level of the async task producing a
// weft::future (weft::async(priority{2}, ...) -> level 2), or, where the
// input has no level (a promise's future, an io_future, the result of a
// when_all/when_any), the level of the task calling then(). It is never run
// inline: if the input is ready already, the continuation is queued at once.
// An exception thrown by fn is stored in the returned future. A future<U>
// returned by fn is not unwrapped (the result is future<future<U>>; call
// get() twice). then() must be called from a task of a runtime (throws
// std::logic_error otherwise, leaving the input valid): a plain thread has
// no runtime to run the continuation on. The continuation counts as a task
// of that runtime from the call of then() on, so the runtime's destructor
// waits for it — as it would for a task blocked on the input.
//
// Mechanism: every composition registers a callback on each input's
// completion (detail::completion, the same event get() waits on): a
// detail::waiter whose wake function runs the callback instead of resuming a
// task. No task is blocked per input: when_all over 10,000 futures is three
// allocations (the input vector, the result's state holding it, the array of
// one node per input) and 10,000 list insertions. A callback runs on the thread that completes
// the input (a worker, an I/O thread, the thread calling set_value) and only
// counts, publishes or queues a task; it never runs user code.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/assert.hpp"
#include "weft/detail/io_operation.hpp"
#include "weft/future.hpp"

namespace weft {

// What when_any's future holds: the position of the input found ready
// (static_cast<std::size_t>(-1) when there were no inputs) and all inputs.
template <class Sequence>
struct when_any_result {
  std::size_t index = static_cast<std::size_t>(-1);
  Sequence futures;
};

namespace detail {

// Private access to the three future types' states (their friend).
struct when_access {
  template <class T>
  static future_state<T>* state(const future<T>& f) noexcept { return f.state_; }
  template <class T>
  static future_state<T>* state(const shared_future<T>& f) noexcept { return f.state_; }
  template <class T>
  static io_operation* state(const io::io_future<T>& f) noexcept { return f.op_; }
  template <class T>
  static future<T> make(future_state<T>* s) noexcept { return future<T>(s); }
};

// What composition needs to know about an input type.
template <class F> struct compose_traits;

template <class T>
struct compose_traits<future<T>> {
  static bool valid(const future<T>& f) noexcept { return f.valid(); }
  static completion& event(future<T>& f) noexcept { return when_access::state(f)->ready_event(); }
  static unsigned level(const future<T>& f) noexcept { return when_access::state(f)->level(); }
  // A deferred input (launch::deferred) runs here, in the composing caller:
  // it would otherwise never become ready (only a wait runs it).
  static void prepare(future<T>& f) {
    if (when_access::state(f)->deferred_pending()) when_access::state(f)->wait();
  }
};

template <class T>
struct compose_traits<shared_future<T>> {
  static bool valid(const shared_future<T>& f) noexcept { return f.valid(); }
  static completion& event(shared_future<T>& f) noexcept { return when_access::state(f)->ready_event(); }
  static unsigned level(const shared_future<T>& f) noexcept { return when_access::state(f)->level(); }
  // A deferred input (launch::deferred) runs here, in the composing caller:
  // it would otherwise never become ready (only a wait runs it).
  static void prepare(shared_future<T>& f) {
    if (when_access::state(f)->deferred_pending()) when_access::state(f)->wait();
  }
};

// An operation the blocking backend left to its waiter (io_operation::deferred)
// completes only when someone drives it: start a task that does, holding its
// own reference to the operation. Other backends complete operations by
// themselves.
inline void start_io_driver(io_operation* op) {
  if (!op->deferred || op->done.is_set()) return;
  require_worker("weft::when_all/when_any/then on an io_future of the blocking I/O backend");
  op->add_ref();
  try {
    // The future is dropped at once: an async task's future never blocks on
    // drop, and the task releases the reference it was given.
    (void)launch_async(nullptr, [op] {
      io_drive(op, steady_time::max());
      op->release();
    });
  } catch (...) {
    op->release();
    throw;
  }
}

template <class T>
struct compose_traits<io::io_future<T>> {
  static bool valid(const io::io_future<T>& f) noexcept { return f.valid(); }
  static completion& event(io::io_future<T>& f) noexcept { return when_access::state(f)->done; }
  static unsigned level(const io::io_future<T>&) noexcept { return priority_levels; }  // none
  static void prepare(io::io_future<T>& f) { start_io_driver(when_access::state(f)); }
};

template <class F>
using compose_input_t = std::decay_t<F>;

template <class F>
void check_input(const F& f) {
  if (!compose_traits<F>::valid(f)) throw_future_error(std::future_errc::no_state);
}

// Calls fn(i, element) for each element of a tuple or vector.
template <class... F, class Fn>
void for_each_input(std::tuple<F...>& t, Fn&& fn) {
  std::size_t i = 0;
  std::apply([&](auto&... e) { (fn(i++, e), ...); }, t);
}
template <class F, class Fn>
void for_each_input(std::vector<F>& v, Fn&& fn) {
  for (std::size_t i = 0; i < v.size(); ++i) fn(i, v[i]);
}
template <class... F>
constexpr std::size_t input_count(const std::tuple<F...>&) noexcept { return sizeof...(F); }
template <class F>
std::size_t input_count(const std::vector<F>& v) noexcept { return v.size(); }

// One registered callback: a waiter whose wake function reports input
// `index` ready to the composition that owns it.
template <class Owner>
struct compose_node : waiter {
  Owner* owner = nullptr;
  std::size_t index = 0;
  static void on_ready(waiter* w) noexcept {
    auto* n = static_cast<compose_node*>(w);
    n->owner->ready(n->index);  // may free n (its owner): last touch
  }
};

// The state of a when_all or when_any: the result future's state, the input
// sequence and one node per input in one object.
// References: the result future's and the composition's own; the latter is
// released when no node can be touched any more (alive_ reaches zero).
template <class Seq, bool Any>
class compose_state final
    : public future_state<std::conditional_t<Any, when_any_result<Seq>, Seq>> {
  using value_type = std::conditional_t<Any, when_any_result<Seq>, Seq>;
  using node = compose_node<compose_state>;
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

 public:
  explicit compose_state(Seq&& seq)
      : future_state<value_type>(2),
        seq_(std::move(seq)),
        n_(input_count(seq_)),
        nodes_(new node[n_]),
        alive_(n_ + 1) {}

  // Registers the callbacks (the calling thread is "the setup", which counts
  // as one more node until it is done) and drops the setup's count. After
  // start() the caller must not touch the state except through the result
  // future it holds its own reference for.
  void start() noexcept {
    if constexpr (!Any) {
      for_each_input(seq_, [this](std::size_t i, auto& f) {
        node& nd = init_node(i);
        using F = std::decay_t<decltype(f)>;
        // add_waiter returns false when the input is ready already: it then
        // counts as arrived at once.
        if (!compose_traits<F>::event(f).add_waiter(&nd)) arrive();
      });
      arrive();  // the setup's count
    } else {
      std::size_t listed_end = 0;  // nodes [0, listed_end) are listed
      bool stop = false;
      for_each_input(seq_, [&](std::size_t i, auto& f) {
        if (stop) return;
        node& nd = init_node(i);
        using F = std::decay_t<decltype(f)>;
        if (compose_traits<F>::event(f).add_waiter(&nd)) {
          listed_end = i + 1;
          return;
        }
        // Ready already: it may win (unless a listed one completed first);
        // no need to list the rest.
        stop = true;
        std::size_t expected = none;
        // acq_rel: as in ready() below.
        if (winner_.compare_exchange_strong(expected, i, std::memory_order_acq_rel)) gate_arrive();
      });
      listed_end_ = listed_end;  // read by the finisher after gate_ (acq_rel)
      // Nodes never listed will never be woken: drop their counts now (the
      // finisher's own count keeps alive_ above zero until it is done).
      // relaxed: alive_ only decides who releases; the finisher's count is
      // still held, so this cannot reach zero.
      alive_.fetch_sub(n_ - listed_end, std::memory_order_relaxed);
      gate_arrive();  // the setup's half of the gate
    }
  }

  // A node's callback: input i is ready.
  void ready(std::size_t i) noexcept {
    if constexpr (!Any) {
      arrive();
    } else {
      std::size_t expected = none;
      // acq_rel: exactly one input wins; the winner's finish sees the
      // setup's writes through gate_.
      if (winner_.compare_exchange_strong(expected, i, std::memory_order_acq_rel)) gate_arrive();
      leave();
    }
  }

 private:
  node& init_node(std::size_t i) noexcept {
    node& nd = nodes_[i];
    nd.wake = &node::on_ready;
    nd.owner = this;
    nd.index = i;
    return nd;
  }

  // when_all: one count per input plus the setup's; the last arrival
  // publishes the sequence (every input is ready) and lets go.
  void arrive() noexcept {
    // acq_rel: the last arrival sees every other arrival's effects (the
    // setup's construction of seq_ in particular) before moving seq_ out;
    // the inputs' own results are published by their completions.
    if (alive_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    publish_value(value_type(std::move(seq_)));
    this->release();  // the composition's reference; may free this
  }

  // when_any: the gate opens when both the setup is done and a winner is
  // known; whoever opens it finishes.
  void gate_arrive() noexcept {
    // acq_rel: the finisher sees listed_end_ (written by the setup before its
    // arrival) and the winner.
    if (gate_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    const std::size_t win = winner_.load(std::memory_order_relaxed);  // ordered by gate_
    // Take back the nodes still listed on the losers, while seq_ still holds
    // the inputs (so their completions are alive). A node already taken by
    // its completer will be woken, lose the CAS and leave by itself.
    std::size_t removed = 0;
    for_each_input(seq_, [&](std::size_t i, auto& f) {
      if (i == win || i >= listed_end_) return;
      using F = std::decay_t<decltype(f)>;
      if (compose_traits<F>::event(f).remove_waiter(&nodes_[i])) ++removed;
    });
    if (removed) {
      // relaxed: the finisher's own count still holds alive_ above zero.
      alive_.fetch_sub(removed, std::memory_order_relaxed);
    }
    publish_value(value_type{win, std::move(seq_)});
    leave();  // the finisher's count
  }

  void leave() noexcept {
    // acq_rel: the last to leave sees every other node's last touch before
    // the state may be freed.
    if (alive_.fetch_sub(1, std::memory_order_acq_rel) == 1) this->release();
  }

  void publish_value(value_type&& v) noexcept {
    // Moving futures, tuples of futures and vectors of them does not throw
    // (the vector's buffer is moved, not copied).
    this->emplace(std::move(v));
    this->publish();
  }

  Seq seq_;
  const std::size_t n_;
  std::unique_ptr<node[]> nodes_;
  // Nodes that may still be woken, plus the setup (when_all) or the
  // finisher (when_any). Invariant: the composition's reference is held
  // while alive_ > 0.
  std::atomic<std::size_t> alive_;
  // when_any only: the first input found ready, and the gate (setup done +
  // winner known) that decides who finishes.
  std::atomic<std::size_t> winner_{none};
  std::atomic<int> gate_{2};
  std::size_t listed_end_ = 0;  // written by the setup before gate_arrive
};

// Starts a composition over `seq` (the inputs already validated and moved in).
template <bool Any, class Seq>
auto compose(Seq&& seq) {
  using state_t = compose_state<Seq, Any>;
  using value_type = std::conditional_t<Any, when_any_result<Seq>, Seq>;
  // Deferred I/O first (may throw): nothing is registered yet.
  for_each_input(seq, [](std::size_t, auto& f) { compose_traits<std::decay_t<decltype(f)>>::prepare(f); });
  if (input_count(seq) == 0) {
    promise<value_type> p;
    future<value_type> f = p.get_future();
    p.set_value(value_type{});
    return f;
  }
  auto* s = new state_t(std::move(seq));
  future<value_type> result = when_access::make(static_cast<future_state<value_type>*>(s));
  s->start();
  return result;
}

template <class It>
auto collect_range(It first, It last) {
  using V = typename std::iterator_traits<It>::value_type;
  static_assert(std::is_nothrow_move_constructible_v<V>, "when_all/when_any: the range must hold futures");
  if constexpr (std::forward_iterator<It>) {
    for (It it = first; it != last; ++it) check_input<V>(*it);
  }
  std::vector<V> v;
  if constexpr (std::forward_iterator<It>) v.reserve(static_cast<std::size_t>(std::distance(first, last)));
  for (; first != last; ++first) {
    if constexpr (std::is_copy_constructible_v<V>) {
      v.push_back(*first);  // shared_future: copied
    } else {
      v.push_back(std::move(*first));  // future, io_future: consumed
    }
  }
  for (auto& f : v) check_input<V>(f);
  return v;
}

// ---- then ---------------------------------------------------------------

// A continuation: the result's state, the work item that runs it and the
// node registered on the input, in one allocation.
// References: the result future's and the execution's (released by run()).
template <class R, class Fn>
class then_task final : public future_state<R>, public work_item, public waiter {
 public:
  then_task(Fn&& fn, scheduler* s, unsigned level)
      : future_state<R>(2), work_item(&run, static_cast<future_state_base*>(this)),
        fn_(std::move(fn)), sched_(s), level_(level) {
    this->set_level(level);
    this->wake = &on_ready;
  }
  static void* operator new(std::size_t n) { return allocate_small(n); }
  static void operator delete(void* p, std::size_t n) noexcept { deallocate_small(p, n); }

  // From the task calling then(): registers on the input's completion, or
  // queues the continuation at once if the input is ready.
  void arm(completion& input, worker_view* w) noexcept {
    if (input.add_waiter(static_cast<waiter*>(this))) return;
    push_task_at(w, static_cast<int>(level_), static_cast<work_item*>(this));
  }

 private:
  // The input's completer (any thread): queue the continuation. inject
  // cannot fail to start the priority master here (prepare_level ran in
  // then()); it allocates in the runtime's queue, and running out of memory
  // there terminates (this is noexcept, called from the completer).
  static void on_ready(waiter* w) noexcept {
    auto* self = static_cast<then_task*>(w);
    inject(self->sched_, static_cast<work_item*>(self), static_cast<int>(self->level_));
  }
  void compute() noexcept {
    try {
      if constexpr (std::is_void_v<R>) {
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
    auto* self = static_cast<then_task*>(item);
    self->compute();
    task_finished();
    self->publish();
    self->release();  // the execution's reference; may free self
  }
  Fn fn_;  // holds the input future until the continuation ran
  scheduler* sched_;
  unsigned level_;
};

template <class Fut, class F>
auto compose_then(Fut&& input, F&& fn) -> future<then_result_t<F, std::decay_t<Fut>>> {
  using In = std::decay_t<Fut>;
  using R = then_result_t<F, In>;
  check_input<In>(input);
  worker_view* w = require_worker("weft::future::then");  // before anything is consumed
  scheduler* s = w->sched;
  unsigned level = compose_traits<In>::level(input);
  if (level >= priority_levels) level = w->level;
  prepare_level(s, static_cast<int>(level));  // may throw; nothing done yet
  In in(std::forward<Fut>(input));  // a future is consumed, a shared_future copied
  compose_traits<In>::prepare(in);  // deferred I/O: may throw (in then dies, consumed)
  completion* ev = &compose_traits<In>::event(in);  // stays valid: `in` moves, its state does not
  auto body = [in = std::move(in), f = std::decay_t<F>(std::forward<F>(fn))]() mutable -> R {
    return std::invoke(std::move(f), std::move(in));
  };
  using task_t = then_task<R, decltype(body)>;
  auto* t = new task_t(std::move(body), s, level);
  future<R> result = when_access::make(static_cast<future_state<R>*>(t));
  // Counted from now on: the runtime's destructor waits for the continuation.
  task_started(w, s);
  t->arm(*ev, w);
  return result;
}

}  // namespace detail

// ---- when_all ------------------------------------------------------------

// Ready when every input is; holds the inputs (each ready, with its value or
// exception). Futures and io_futures are moved in, shared_futures copied.
template <class... Futures>
auto when_all(Futures&&... fs) -> future<std::tuple<detail::compose_input_t<Futures>...>> {
  (detail::check_input<detail::compose_input_t<Futures>>(fs), ...);
  return detail::compose<false>(std::tuple<detail::compose_input_t<Futures>...>(std::forward<Futures>(fs)...));
}

template <class InputIt>
auto when_all(InputIt first, InputIt last)
    -> future<std::vector<typename std::iterator_traits<InputIt>::value_type>>
  requires std::input_iterator<InputIt>
{
  return detail::compose<false>(detail::collect_range(first, last));
}

// ---- when_any ------------------------------------------------------------

// Ready when one input is; .index names it, .futures holds all inputs.
template <class... Futures>
auto when_any(Futures&&... fs)
    -> future<when_any_result<std::tuple<detail::compose_input_t<Futures>...>>> {
  (detail::check_input<detail::compose_input_t<Futures>>(fs), ...);
  return detail::compose<true>(std::tuple<detail::compose_input_t<Futures>...>(std::forward<Futures>(fs)...));
}

template <class InputIt>
auto when_any(InputIt first, InputIt last)
    -> future<when_any_result<std::vector<typename std::iterator_traits<InputIt>::value_type>>>
  requires std::input_iterator<InputIt>
{
  return detail::compose<true>(detail::collect_range(first, last));
}

}  // namespace weft
