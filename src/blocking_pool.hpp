// weft — the pool of helper threads that runs weft::spawn_blocking calls
// (include/weft/blocking.hpp). One per runtime, owned by the scheduler.
//
// Threads are started on demand: a call that finds fewer idle threads than
// queued calls starts one, up to the bound; calls beyond it wait in a FIFO
// queue. A thread idle for the keep-alive exits (and is joined by the next
// submit or by the destructor), so an idle runtime holds no helper thread.
//
// Shutdown needs nothing here: every call is counted as a task of the
// runtime, so ~scheduler's drain waits until each has run and finished on a
// worker. The destructor (run after the drain) only stops the idle threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <list>
#include <thread>

#include "weft/blocking.hpp"
#include "weft/detail/mutex.hpp"

namespace weft::detail {

class blocking_pool {
 public:
  blocking_pool(unsigned max_threads, std::chrono::milliseconds keep_alive) noexcept
      : max_threads_(max_threads), keep_alive_(keep_alive) {}
  // Stops and joins every helper thread. The queue is empty by then (the
  // runtime drained every call); were it not, the threads would run what is
  // queued before they exit.
  ~blocking_pool();
  blocking_pool(const blocking_pool&) = delete;
  blocking_pool& operator=(const blocking_pool&) = delete;

  // Queues job (see submit_blocking in weft/blocking.hpp); called by the
  // task running on w.
  void submit(worker_view* w, blocking_job* job) WEFT_EXCLUDES(mutex_);
  // Helper threads alive now (a statistic).
  std::size_t threads() const noexcept {
    // relaxed: a statistic; written under mutex_.
    return thread_count_.load(std::memory_order_relaxed);
  }

 private:
  using thread_list = std::list<std::thread>;
  void thread_main(thread_list::iterator self) WEFT_EXCLUDES(mutex_);
  static void join_exited(thread_list& exited) noexcept;

  const unsigned max_threads_;
  const std::chrono::milliseconds keep_alive_;
  mutex mutex_;
  std::condition_variable work_cv_;   // a call was queued, or stop_
  std::condition_variable exit_cv_;   // a thread left threads_
  // FIFO of queued calls, linked through blocking_job::next (also guarded by
  // mutex_, which the analysis cannot see from there).
  blocking_job* head_ WEFT_GUARDED_BY(mutex_) = nullptr;
  blocking_job* tail_ WEFT_GUARDED_BY(mutex_) = nullptr;
  std::size_t queued_ WEFT_GUARDED_BY(mutex_) = 0;  // calls in the FIFO
  std::size_t idle_ WEFT_GUARDED_BY(mutex_) = 0;    // threads waiting for a call
  bool stop_ WEFT_GUARDED_BY(mutex_) = false;
  thread_list threads_ WEFT_GUARDED_BY(mutex_);  // running threads
  thread_list exited_ WEFT_GUARDED_BY(mutex_);   // finished, not yet joined
  // threads_.size(), for threads(): stored under mutex_, loaded without it.
  std::atomic<std::size_t> thread_count_{0};
};

}  // namespace weft::detail
