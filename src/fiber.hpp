// weft — fibers: a stack plus a saved context. A worker always runs on some
// fiber; a fiber outlives its task only when the task blocks (lazy promotion,
// Concurrent Cilk §1): the blocked task keeps the fiber, and the worker continues on
// a fresh one from the pool.
#pragma once

#include <boost/context/detail/fcontext.hpp>

#include "stack_pool.hpp"
#include "weft/detail/work_item.hpp"

namespace weft::detail {

class scheduler;
struct worker;
struct deque_record;

namespace ctx = boost::context::detail;

struct fiber {
  // The context saved when this fiber was switched out. Written by the thread
  // that switched away from it, before the fiber is published (post-switch
  // action); read by the thread that switches to it.
  ctx::fcontext_t context = nullptr;
  stack_region stack;  // empty for a worker thread's own (native) context
  scheduler* owner = nullptr;
  // While suspended (ProWS): the deque that was active when the task
  // blocked, if it still held items (they stay stealable, in a set); whoever
  // resumes the fiber adopts it. nullptr if the deque was empty (the worker
  // kept it) or under ParWS: the fiber then resumes with the resumer's deque.
  deque_record* deque = nullptr;
  // Executed by the worker that takes the fiber from a ready queue: adopts
  // `deque` (if any) and switches to the fiber (scheduler::resume_ready).
  work_item resume_item;
  // While suspended: the worker it blocked on and its level (the level of
  // the ready queue that receives it; ParWS: that worker's queue).
  unsigned home = 0;
  unsigned level = 0;
  fiber* next_free = nullptr;   // fiber pool link
  fiber* ready_link = nullptr;  // ready_queue FIFO link (guarded by its lock)
  // The C++ runtime's per-thread exception state (caught-exception stack,
  // uncaught count) of this fiber while it is switched out: exception state
  // belongs to a task, not to the thread it happens to run on.
  void* eh_caught = nullptr;
  unsigned eh_uncaught = 0;
  // Sanitizer bookkeeping.
  void* asan_fake_stack = nullptr;
  const void* asan_bottom = nullptr;  // for a native context: learnt at first switch
  std::size_t asan_size = 0;
  void* tsan_fiber = nullptr;

  explicit fiber(work_item::execute_fn resume) : resume_item(resume) {}
  static fiber* from_resume_item(work_item* item) noexcept;
  bool is_native() const noexcept { return stack.hi == 0; }
};

// Prepares `f` to start at `entry` on its next switch-in.
void fiber_reset(fiber* f, void (*entry)(ctx::transfer_t)) noexcept;

// Switches the calling thread from `from` (the fiber running now) to `to`.
// `from_dies` tells the sanitizers that `from` will never be resumed (its
// frames are abandoned and the fiber goes back to the pool).
// Returns, on `from`, the transfer from whoever switched back to it.
ctx::transfer_t fiber_switch(fiber* from, fiber* to, bool from_dies) noexcept;
// Must be the first thing a fiber does after being switched in (in the entry
// function or after fiber_switch returns): finishes the sanitizer hand-off.
void fiber_switch_finished(fiber* self, fiber* from) noexcept;

void fiber_sanitizer_create(fiber* f) noexcept;
void fiber_sanitizer_destroy(fiber* f) noexcept;
void fiber_sanitizer_adopt_native(fiber* f) noexcept;

// The stack the calling thread runs on, for the overflow handler.
extern thread_local const stack_region* tls_running_stack
    __attribute__((tls_model("initial-exec")));

}  // namespace weft::detail
