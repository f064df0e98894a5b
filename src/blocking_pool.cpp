#include "blocking_pool.hpp"

#include <utility>

#include "own_threads.hpp"
#include "scheduler.hpp"
#include "weft/detail/deadline.hpp"

namespace weft::detail {

blocking_pool::~blocking_pool() {
  thread_list exited;
  {
    unique_lock lock(mutex_);
    stop_ = true;
    work_cv_.notify_all();
    // Each thread moves itself to exited_ and leaves threads_ under the lock,
    // then touches nothing of the pool: once threads_ is empty, joining is
    // all that is left.
    while (!threads_.empty()) lock.wait(exit_cv_);
    exited.swap(exited_);
  }
  join_exited(exited);
}

void blocking_pool::join_exited(thread_list& exited) noexcept {
  for (std::thread& t : exited) t.join();  // each has left thread_main already
  exited.clear();
}

void blocking_pool::submit(worker_view* w, blocking_job* job) {
  thread_list exited;
  {
    lock_guard lock(mutex_);
    // Start a thread if the idle ones cannot take every queued call and this
    // one. (An idle thread that was notified but has not woken yet still
    // counts as idle: it will take one of the queued calls.)
    if (queued_ + 1 > idle_ && threads_.size() < max_threads_) {
      auto it = threads_.emplace(threads_.end());
      try {
        // Under the lock: the new thread locks mutex_ first, so it sees *it
        // assigned.
        *it = start_thread("a blocking-call thread", [this, it] { thread_main(it); });
        // relaxed: a statistic.
        thread_count_.store(threads_.size(), std::memory_order_relaxed);
      } catch (...) {
        threads_.erase(it);
        // With a thread running, the call waits for it; with none, nobody
        // would ever run it: report, with nothing queued or counted.
        if (threads_.empty()) throw;
      }
    }
    job->sched = w->sched;
    job->level = static_cast<int>(w->level);
    // Counted before it is queued: its finish item (on a worker, after the
    // call) counts it finished, and the drain must never see the finish
    // without the start.
    task_started(w, w->sched);
    job->next = nullptr;
    if (tail_) tail_->next = job; else head_ = job;
    tail_ = job;
    ++queued_;
    if (idle_ > 0) work_cv_.notify_one();
    exited.swap(exited_);
  }
  join_exited(exited);  // threads that timed out earlier: reap them here
}

void blocking_pool::thread_main(thread_list::iterator self) {
  unique_lock lock(mutex_);
  for (;;) {
    if (head_) {
      blocking_job* job = head_;
      head_ = job->next;
      if (!head_) tail_ = nullptr;
      --queued_;
      lock.unlock();
      job->run(job);  // the call, then its finish item is injected; job may be gone
      lock.lock();
      continue;
    }
    if (stop_) break;
    // Wait for a call at most keep_alive_ in all (spurious wake-ups do not
    // restart it).
    const auto deadline = saturating_deadline(std::chrono::steady_clock::now(), keep_alive_);
    ++idle_;
    while (!head_ && !stop_ && std::chrono::steady_clock::now() < deadline)
      lock.wait_until(work_cv_, deadline);
    --idle_;
    if (!head_ && !stop_) break;  // idle for the keep-alive: exit
  }
  // Leave: hand our std::thread to whoever joins next (a submit or the
  // destructor); a splice, so leaving cannot fail for want of memory. After
  // the unlock nothing of the pool is touched.
  exited_.splice(exited_.end(), threads_, self);
  // relaxed: a statistic.
  thread_count_.store(threads_.size(), std::memory_order_relaxed);
  exit_cv_.notify_all();
}

void submit_blocking(worker_view* w, blocking_job* job) {
  w->sched->blocking().submit(w, job);
}

}  // namespace weft::detail
