// weft — parking idle workers.
//
// A worker that found no work for a short while parks. Pushes must wake a
// parked worker without paying a full fence per push, so the handshake is an
// asymmetric Dekker (docs/design.md §Parking):
//   pusher:  push item (release store of bottom); signal fence;  load sleepers
//   parker:  sleepers += 1 (seq_cst);             heavy fence;    re-scan deques
// The heavy fence is membarrier(PRIVATE_EXPEDITED), which makes every other
// thread of the process execute a full barrier, so at least one side sees the
// other. Where membarrier is unavailable the parker re-scans every millisecond
// instead (bounded latency, no lost work).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "weft/detail/arch.hpp"  // full_fence
#include "weft/detail/mutex.hpp"
#include "weft/detail/thread_annotations.hpp"

namespace weft::detail {

class parking_lot {
 public:
  parking_lot();

  // The counter pushers read (relaxed) to decide whether to wake someone.
  const std::atomic<int>& sleepers() const noexcept { return sleepers_; }

  // Parks the caller unless `has_work()` is true after announcing itself.
  // Returns when woken (or at once when work or shutdown was seen).
  template <class HasWork>
  void park(HasWork&& has_work);

  // Like park(), but the caller waits in `poll_blocking()` (the I/O
  // backend's epoll_wait: docs/io.md §The poller) instead of on the
  // condition variable, so that readiness events also end the wait. At most
  // one caller at a time (the scheduler's poller slot). A wake-up that no
  // condition-variable sleeper can take interrupts the poll through the
  // interrupter (set_interrupter). Returns when woken, when events arrived,
  // or at once when work or shutdown was seen.
  template <class HasWork, class PollBlocking>
  void park_polling(HasWork&& has_work, PollBlocking&& poll_blocking);
  // How to end a park_polling() wait (an eventfd write). Set once, before
  // any park_polling() call.
  void set_interrupter(void (*fn)(void*) noexcept, void* arg) noexcept {
    interrupt_fn_ = fn;
    interrupt_arg_ = arg;
  }

  // Wakes one parked worker, if any. Callable from any thread.
  void wake_one() noexcept;
  // Wakes every parked worker (shutdown).
  void wake_all() noexcept;

 private:
  void heavy_fence() noexcept;
  void give_token() noexcept;
  void take_token() noexcept;
  bool take_token_for_ms(int ms) noexcept;
  void cancel() noexcept;
  // park_polling: claims a token nobody else will take, else marks the
  // poller as waiting (under mutex_). Returns true if a token was claimed.
  bool begin_poll_wait() noexcept;
  void end_poll_wait() noexcept;

  // Parked workers not yet claimed by a waker. Invariant: tokens_ + sleepers_
  // == number of workers inside park() (between announce and return).
  std::atomic<int> sleepers_{0};
  mutex mutex_;
  std::condition_variable cv_;
  int tokens_ WEFT_GUARDED_BY(mutex_) = 0;  // wake-ups given but not yet taken
  // Threads waiting on cv_ for a token. While it is at least tokens_, every
  // token has a taker and the poller is left alone.
  int cv_waiters_ WEFT_GUARDED_BY(mutex_) = 0;
  bool poller_waiting_ WEFT_GUARDED_BY(mutex_) = false;  // inside park_polling's poll
  void (*interrupt_fn_)(void*) noexcept = nullptr;  // immutable once workers run
  void* interrupt_arg_ = nullptr;
  bool heavy_fence_ = false;
};

template <class HasWork>
void parking_lot::park(HasWork&& has_work) {
  // seq_cst: the parker's half of the Dekker handshake.
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  heavy_fence();
  if (has_work()) {
    cancel();
    return;
  }
  if (heavy_fence_) {
    take_token();
    return;
  }
  // No membarrier: re-scan periodically so a missed push waits at most ~1 ms.
  while (!take_token_for_ms(1)) {
    if (has_work()) {
      cancel();
      return;
    }
  }
}

template <class HasWork, class PollBlocking>
void parking_lot::park_polling(HasWork&& has_work, PollBlocking&& poll_blocking) {
  // seq_cst + heavy fence: the same handshake as park(); the poller counts
  // as a sleeper, so every existing wake path (spawns, resumes, injection)
  // sees it.
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  heavy_fence();
  if (has_work()) {
    cancel();
    return;
  }
  if (begin_poll_wait()) return;  // a wake-up was waiting for a taker
  poll_blocking();
  end_poll_wait();
  // Events or a wake-up ended the wait: un-announce (or take the token of
  // the waker that claimed us meanwhile).
  cancel();
}

}  // namespace weft::detail
