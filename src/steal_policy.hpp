// weft — the two work-stealing policies behind one interface: ProWS
// (proactive work stealing, Cilk-L §4.2) and ParWS (parsimonious work
// stealing, latency-hiding work stealing). They differ only where a task blocks, where it is
// resumed, and in the order an idle worker looks at its own ready fibers and
// its own deque; spawn, pop, steal and join are the same code for both.
//
// Why templates and not a policy object with virtual functions: find_work
// (between every two tasks) asks the policy in which order to look, and a
// virtual call or a load of a function pointer there would be paid per task.
// As a template parameter the policy costs nothing: the scheduler branches
// once per find_work on an immutable flag (scheduler::with_policy) and the
// compiler folds every `Policy::` constant inside. Where a task blocks or
// resumes (suspend, make_resumable) the same single branch is next to
// nothing beside a fiber switch.
//
// A policy is a class with these static members (checked by the concept
// below):
//   parks_deque(d)           suspend: does the blocked task's active deque `d`
//                            go with its fiber (into a stealable set)?
//   resume_target(me, f)     make_resumable: the worker whose ready queue
//                            receives the resumed fiber `f`; `me` is the
//                            resuming worker of the same runtime, or nullptr.
//   thieves_take_batches     take_ready: a thief takes the whole ready FIFO as
//                            one parallel loop (resume_batch).
//   resumes_before_own_deque find_work: the newest ready fiber goes before the
//                            own deque's newest item (else after it, with a
//                            fairness turn every scheduler::ready_turn-th time).
#pragma once

#include <concepts>

#include "worker.hpp"

namespace weft::detail {

template <class P>
concept work_stealing_policy = requires(const deque_record* d, const worker* me, const fiber* f) {
  { P::parks_deque(d) } noexcept -> std::same_as<bool>;
  { P::resume_target(me, f) } noexcept -> std::same_as<unsigned>;
  { P::thieves_take_batches } -> std::convertible_to<bool>;
  { P::resumes_before_own_deque } -> std::convertible_to<bool>;
};

// ProWS (Cilk-L §4.2): a blocked task's deque, if it holds items, is
// parked with its fiber and donated to a random worker's stealable set; its
// resumer adopts it ("mugging"). An empty one (only the owner pushes, so an
// empty deque stays empty) is interchangeable with any other, so the worker
// keeps it — no deque is parked per blocked task.
struct prows_policy {
  static bool parks_deque(const deque_record* d) noexcept { return !d->looks_empty(); }
  // The resumer's queue (locality: it often just produced what the task
  // waited for, and is about to look for work); from other threads, the
  // worker the task blocked on.
  static unsigned resume_target(const worker* me, const fiber* f) noexcept {
    return me ? me->index : f->home;
  }
  static constexpr bool thieves_take_batches = false;
  // ProWS pops the deque first (a resumed task may adopt its parked deque
  // only in place of an empty one).
  static constexpr bool resumes_before_own_deque = false;
};

// ParWS (latency-hiding work stealing): a blocked task's deque always stays with its worker; a
// resumed fiber goes to the ready queue of the worker it blocked on, and a
// thief takes a whole ready FIFO as one parallel loop over its fibers.
struct parws_policy {
  static bool parks_deque(const deque_record*) noexcept { return false; }
  static unsigned resume_target(const worker*, const fiber* f) noexcept { return f->home; }
  static constexpr bool thieves_take_batches = true;
  // ParWS resumes first, as latency-hiding work stealing pushes resumed vertices at the bottom
  // before popping (there the blocked task's deque stayed with the worker,
  // so its older items would otherwise run before it: breadth-first).
  static constexpr bool resumes_before_own_deque = true;
};

static_assert(work_stealing_policy<prows_policy>);
static_assert(work_stealing_policy<parws_policy>);

}  // namespace weft::detail
