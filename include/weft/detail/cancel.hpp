// weft — cancellation with std::stop_token (docs/api.md "Cancellation"): the
// error every stopped wait ends with, and a wait on a detail::completion
// (futures, task_group joins) that a stop_token can end early.
//
// Convention (shared by every blocking wait of weft that takes a token): a
// wait given a std::stop_token that is stopped before the wait completes
// ends with std::errc::operation_canceled — thrown as
// std::system_error(make_error_code(errc::operation_canceled), "weft: <what>
// cancelled") by throwing APIs, returned as that std::error_code by APIs that
// report errors through one. If the wait completes and the stop comes at the
// same moment, exactly one wins: the value is then either returned or left
// where it was (never consumed and lost).
#pragma once

#include <atomic>
#include <cstdint>
#include <stop_token>
#include <system_error>
#include <thread>

#include "weft/detail/completion.hpp"
#include "weft/detail/scheduler_hooks.hpp"
#include "weft/pause.hpp"

namespace weft::detail {

[[noreturn]] inline void throw_operation_cancelled(const char* what) {
  throw std::system_error(std::make_error_code(std::errc::operation_canceled), what);
}

// Waits until `done` is set (true) or `stop` is requested first (false).
// Inside a task it pauses the task, on any other thread it blocks the thread
// (this_task::pause's protocol). With a token that can never be stopped it is
// a plain wait. A stop that races the completion: whichever wins the
// waiter's state (acq_rel CAS) decides; true is returned whenever `done` is
// set once the wait is over, so a caller that sees false knows the event had
// not happened (and consumed nothing).
//
// How: a waiter of our own (this frame) is listed in `done`; its wake resumes
// the paused task. The stop callback is one more waker: under the frame's
// lock, if the waiter is listed it claims it (the state CAS the completer
// also does), takes it out of the list and resumes the task; if the task has
// not published yet it leaves a flag that publish (same lock) checks.
[[gnu::noinline]] inline bool wait_or_stop(completion& done, const std::stop_token& stop) {
  if (done.is_set()) return true;
  if (!stop.stop_possible()) {
    wait(done);
    return true;
  }
  if (stop.stop_requested()) return false;

  struct frame : waiter {
    completion* done = nullptr;
    spin_lock lock;
    paused_task task WEFT_GUARDED_BY(lock);   // valid once published
    bool published WEFT_GUARDED_BY(lock) = false;  // listed in *done with `task` set
    bool stopped WEFT_GUARDED_BY(lock) = false;    // the stop callback ran
    bool cancelled WEFT_GUARDED_BY(lock) = false;  // ... and claimed the waiter
    bool listed WEFT_GUARDED_BY(lock) = true;      // ... and found it still listed

    // The completer won the waiter's state: resume the task (nobody else
    // claims the paused handle, so resume() always wakes it). `task` was
    // written under the frame's lock before the waiter was listed, and the
    // completion's lock orders that write before this read.
    static void wake_by_completer(waiter* w) noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
      static_cast<frame*>(w)->task.resume();
    }
    // this_task::pause's publish. The lock is held until publish is over,
    // across add_waiter: a completer may wake the task at once, and the task
    // takes the lock (below) before its frame goes away, so this unlock is
    // never late.
    bool publish(paused_task h) noexcept {
      lock.lock();
      if (stopped) {
        lock.unlock();
        return false;
      }
      task = h;
      published = done->add_waiter(this);  // false: already set, do not pause
      const bool pause_now = published;
      lock.unlock();
      return pause_now;
    }
  } f;
  f.done = &done;
  f.wake = &frame::wake_by_completer;

  struct on_stop {
    frame* f;
    void operator()() const noexcept {
      f->lock.lock();
      f->stopped = true;
      if (f->published) {
        std::uint32_t expected = waiter::waiting;
        // acq_rel: races the completer's CAS in completion::wake_all; the
        // winner alone wakes the task.
        if (f->state.compare_exchange_strong(expected, waiter::timed_out, std::memory_order_acq_rel)) {
          f->cancelled = true;
          f->listed = f->done->remove_waiter(f);
          f->task.resume();
        }
      }
      f->lock.unlock();
    }
  };

  {
    // Runs inline here if the stop came since the check above: it then only
    // sets `stopped` (nothing is published), which publish sees.
    std::stop_callback<on_stop> cb(stop, on_stop{&f});
    this_task::pause([&f](paused_task h) noexcept { return f.publish(h); });
    // Leaving the scope destroys cb: it waits for a callback running on
    // another thread, so none touches the frame after this.
  }
  f.lock.lock();  // publish (or a stop callback) may still be releasing it
  const bool cancelled = f.cancelled;
  const bool listed = f.listed;
  f.lock.unlock();
  if (cancelled && !listed) {
    // The completer took the waiter out of the list but lost the state CAS:
    // it sets completer_done as its last touch of the waiter (a few
    // instructions away). acquire: pairs with its release store.
    while (!f.completer_done.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  return done.is_set();
}

}  // namespace weft::detail
