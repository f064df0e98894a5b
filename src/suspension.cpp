// weft — the one way to block: pause until resumed (weft/pause.hpp). Inside a
// runtime the task's fiber is suspended (scheduler::suspend) and a post-switch
// commit publishes its handle; on any other thread the thread blocks on a
// condition variable. Timed pauses add a timer entry that races the waker
// for the handle (waiter::state). Waiting on a completion (futures, joins)
// is a pause whose handle is registered in the completion's waiter list.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "scheduler.hpp"
#include "weft/detail/mutex.hpp"
#include "weft/pause.hpp"
#include "weft/this_task.hpp"

namespace weft::detail {

namespace {

// ----- waiting tasks ---------------------------------------------------------

struct fiber_waiter : waiter {
  scheduler* sched = nullptr;
  fiber* suspended = nullptr;  // set by the commit, before registration
  timer_entry timer;           // used by timed waits only
  completion* event = nullptr;
};

void wake_fiber(waiter* w) noexcept {
  auto* fw = static_cast<fiber_waiter*>(w);
  fw->sched->make_resumable(fw->suspended);  // last touch of fw
}

void fire_fiber_timer(timer_entry* e) noexcept {
  auto* fw = static_cast<fiber_waiter*>(e->context);
  std::uint32_t expected = waiter::waiting;
  // acq_rel: races the completer's CAS in completion::wake_all.
  if (fw->state.compare_exchange_strong(expected, waiter::timed_out, std::memory_order_acq_rel))
    fw->sched->make_resumable(fw->suspended);
}

void commit_timed_wait(void* arg, fiber* self) noexcept {
  auto* fw = static_cast<fiber_waiter*>(arg);
  fw->suspended = self;
  timer_service& timers = fw->sched->timers();
  // Register with the timer and the event under the timer's lock, so neither
  // the timer nor (through cancel(), which takes that lock) the resumed task
  // can act before both registrations are complete.
  timers.add_then(&fw->timer, [](timer_entry* e, void* a) noexcept {
    auto* w = static_cast<fiber_waiter*>(a);
    if (!w->event->add_waiter(w)) {
      std::uint32_t expected = waiter::waiting;
      if (w->state.compare_exchange_strong(expected, waiter::signalled,
                                           std::memory_order_acq_rel)) {
        timer_service::disarm_locked(e);
        w->sched->make_resumable(w->suspended);
      }
    }
  }, fw);
}

// ----- pause (weft/pause.hpp) ------------------------------------------------

struct pause_args {
  fiber_waiter* fw;
  publish_fn publish;
  void* ctx;
};

void commit_pause(void* arg, fiber* self) noexcept {
  auto a = *static_cast<pause_args*>(arg);  // the frame may be gone after publish
  a.fw->suspended = self;
  if (!a.publish(a.ctx, paused_task(a.fw))) {
    // Nothing to wait for: nobody has the handle.
    a.fw->state.store(waiter::signalled, std::memory_order_relaxed);
    a.fw->sched->make_resumable(self, resume_kind::ready_again);
  }
  // Published: the task may already run elsewhere; do not touch a.fw.
}

void commit_timed_pause(void* arg, fiber* self) noexcept {
  auto a = *static_cast<pause_args*>(arg);
  a.fw->suspended = self;
  // Publish under the timer's lock: the timer cannot fire, nor the resumed
  // task's cancel() return, before publish is done.
  a.fw->sched->timers().add_then(&a.fw->timer, [](timer_entry* e, void* p) noexcept {
    auto* args = static_cast<pause_args*>(p);
    fiber_waiter* fw = args->fw;
    if (!args->publish(args->ctx, paused_task(fw))) {
      fw->state.store(waiter::signalled, std::memory_order_relaxed);
      timer_service::disarm_locked(e);
      fw->sched->make_resumable(fw->suspended, resume_kind::ready_again);
    }
  }, &a);
}

// ----- waiting threads ---------------------------------------------------------

struct thread_waiter : waiter {
  detail::mutex mutex;
  std::condition_variable cv;
  bool woken WEFT_GUARDED_BY(mutex) = false;
};

void wake_thread(waiter* w) noexcept {
  auto* tw = static_cast<thread_waiter*>(w);
  lock_guard lock(tw->mutex);
  tw->woken = true;
  tw->cv.notify_one();
}

// Waits until a timed-out waiter is no longer referenced by a completer.
void settle_timed_out(completion& c, waiter& w) noexcept {
  if (c.remove_waiter(&w)) return;
  // A completer took it from the list and lost the race to the timeout; it
  // sets completer_done as its last touch (a few instructions away).
  while (!w.completer_done.load(std::memory_order_acquire)) std::this_thread::yield();
}

bool thread_wait(completion& c, const std::chrono::steady_clock::time_point* deadline) {
  thread_waiter tw;
  tw.wake = &wake_thread;
  if (!c.add_waiter(&tw)) return true;
  {
    unique_lock lock(tw.mutex);
    if (!deadline) {
      while (!tw.woken) lock.wait(tw.cv);
      return true;
    }
    // As cv.wait_until with a predicate.
    while (!tw.woken && lock.wait_until(tw.cv, *deadline) != std::cv_status::timeout) {
    }
    if (tw.woken) return true;
  }
  std::uint32_t expected = waiter::waiting;
  if (!tw.state.compare_exchange_strong(expected, waiter::timed_out, std::memory_order_acq_rel)) {
    // Signalled just now: the wake-up is on its way; wait for it, since it
    // touches tw.
    unique_lock lock(tw.mutex);
    while (!tw.woken) lock.wait(tw.cv);
    return true;
  }
  settle_timed_out(c, tw);
  return c.is_set();
}

}  // namespace

void pause(publish_fn publish, void* ctx) {
  worker* w = this_worker();
  if (!w) {
    thread_waiter tw;
    tw.wake = &wake_thread;
    if (!publish(ctx, paused_task(&tw))) return;
    unique_lock lock(tw.mutex);
    while (!tw.woken) lock.wait(tw.cv);
    return;
  }
  fiber_waiter fw;
  fw.wake = &wake_fiber;
  fw.sched = w->sched;
  pause_args a{&fw, publish, ctx};
  w->sched->suspend(w, &commit_pause, &a);
}

bool pause_until(steady_time deadline, publish_fn publish, void* publish_ctx, withdraw_fn withdraw,
                 void* withdraw_ctx) {
  if (deadline == steady_time::max()) {  // no deadline
    pause(publish, publish_ctx);
    return true;
  }
  if (deadline <= std::chrono::steady_clock::now()) return false;  // nothing published
  worker* w = this_worker();
  if (!w) {
    thread_waiter tw;
    tw.wake = &wake_thread;
    if (!publish(publish_ctx, paused_task(&tw))) return true;
    {
      unique_lock lock(tw.mutex);
      // As cv.wait_until with a predicate.
      while (!tw.woken && lock.wait_until(tw.cv, deadline) != std::cv_status::timeout) {
      }
      if (tw.woken) return true;
    }
    std::uint32_t expected = waiter::waiting;
    // acq_rel: races claimers (paused_task::claim).
    if (!tw.state.compare_exchange_strong(expected, waiter::timed_out, std::memory_order_acq_rel)) {
      // Claimed just now: its wake() is on its way and touches tw.
      unique_lock lock(tw.mutex);
      while (!tw.woken) lock.wait(tw.cv);
      return true;
    }
    withdraw(withdraw_ctx, paused_task(&tw));
    return false;
  }
  // Before suspending: the commit step cannot report a failure to start it.
  w->sched->timers().ensure_started();
  fiber_waiter fw;
  fw.wake = &wake_fiber;
  fw.sched = w->sched;
  fw.timer.deadline = deadline;
  fw.timer.fire = &fire_fiber_timer;
  fw.timer.context = &fw;
  pause_args a{&fw, publish, publish_ctx};
  w->sched->suspend(w, &commit_timed_pause, &a);
  // Resumed. Make sure the timer thread is done with fw.timer.
  fw.sched->timers().cancel(&fw.timer);
  // acquire: pairs with the claimer's or the timer's acq_rel CAS.
  if (fw.state.load(std::memory_order_acquire) == waiter::signalled) return true;
  withdraw(withdraw_ctx, paused_task(&fw));
  return false;
}

void wait(completion& c) {
  if (c.is_set()) return;
  // A pause whose handle is registered in c's waiter list (false if c was
  // set meanwhile); c.set() claims and wakes every listed waiter.
  pause([](void* ctx, paused_task h) noexcept {
    return static_cast<completion*>(ctx)->add_waiter(h.native_handle());
  }, &c);
}

bool wait_until(completion& c, std::chrono::steady_clock::time_point deadline) {
  if (c.is_set()) return true;
  // time_point::max() is "no deadline" (weft/detail/deadline.hpp): an
  // untimed wait, which needs no timer (and which shutdown does not cut).
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    wait(c);
    return true;
  }
  worker* w = this_worker();
  if (!w) return thread_wait(c, &deadline);
  if (deadline <= std::chrono::steady_clock::now()) return c.is_set();
  // Before suspending: the commit step cannot report a failure to start it.
  w->sched->timers().ensure_started();
  fiber_waiter fw;
  fw.wake = &wake_fiber;
  fw.sched = w->sched;
  fw.event = &c;
  fw.timer.deadline = deadline;
  fw.timer.fire = &fire_fiber_timer;
  fw.timer.context = &fw;
  w->sched->suspend(w, &commit_timed_wait, &fw);
  // Resumed. Make sure the timer thread is done with fw.timer.
  fw.sched->timers().cancel(&fw.timer);
  if (fw.state.load(std::memory_order_acquire) == waiter::signalled) return true;
  settle_timed_out(c, fw);
  return c.is_set();
}

worker_view* require_worker(const char* what) {
  worker* w = this_worker();
  if (!w) {
    throw std::logic_error(std::string(what) +
                           " must be called from a task running in a weft::runtime "
                           "(use runtime::run or runtime::async to enter one)");
  }
  return w;
}

}  // namespace weft::detail

namespace weft::this_task {

using namespace weft::detail;

void yield() {
  worker* w = this_worker();
  if (!w) {
    std::this_thread::yield();
    return;
  }
  // Nothing else to run: a check, not a suspension. It is still a strand
  // boundary: the APS master sees a fresh span (it moves workers whose
  // strands are recent, and would otherwise take this one for a long strand).
  // A task that yields in a loop must still let I/O complete (netpoll: the
  // workers poll; with one worker nobody else would).
  w->sched->poll_io_if_due(w);
  if (!w->sched->others_ready(w)) {
    w->sched->mark_strand_boundary(w);
    return;
  }
  // Suspend and become ready again at once, at the back of the worker's
  // ready queue: other ready work is taken first.
  w->sched->suspend(w, [](void* s, fiber* self) noexcept {
    static_cast<scheduler*>(s)->make_resumable(self, resume_kind::yielded);
  }, w->sched);
}

int worker_id() noexcept {
  worker* w = this_worker();
  return w ? static_cast<int>(w->index) : -1;
}

void sleep_until(std::chrono::steady_clock::time_point deadline) {
  worker* w = this_worker();
  if (!w) {
    std::this_thread::sleep_until(deadline);
    return;
  }
  if (deadline <= std::chrono::steady_clock::now()) return;
  // Before suspending: the commit step cannot report a failure to start it.
  w->sched->timers().ensure_started();
  struct sleeper {
    timer_entry timer;
    scheduler* sched;
    fiber* suspended;
  } s{};
  s.timer.deadline = deadline;
  s.timer.fire = [](timer_entry* e) noexcept {
    auto* sl = static_cast<sleeper*>(e->context);
    sl->sched->make_resumable(sl->suspended);
  };
  s.timer.context = &s;
  s.sched = w->sched;
  w->sched->suspend(w, [](void* a, fiber* self) noexcept {
    auto* sl = static_cast<sleeper*>(a);
    sl->suspended = self;
    sl->sched->timers().add(&sl->timer);
  }, &s);
  s.sched->timers().cancel(&s.timer);  // the timer thread is done with s
}

}  // namespace weft::this_task
