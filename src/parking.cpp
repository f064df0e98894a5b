#include "parking.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

namespace weft::detail {

namespace {
bool register_membarrier() {
  static const bool ok = [] {
    long cmds = ::syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
    return ::syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return ok;
}
}  // namespace

parking_lot::parking_lot() : heavy_fence_(register_membarrier()) {}

void parking_lot::heavy_fence() noexcept {
  full_fence();
  if (heavy_fence_) ::syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

void parking_lot::wake_one() noexcept {
  // relaxed first read: a hint; the CAS below decides.
  int n = sleepers_.load(std::memory_order_relaxed);
  while (n > 0) {
    // acq_rel: claims one sleeper; the token handed over below is its wake-up.
    if (sleepers_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
      give_token();
      return;
    }
  }
}

void parking_lot::wake_all() noexcept {
  // acq_rel: claims every sleeper at once.
  int n = sleepers_.exchange(0, std::memory_order_acq_rel);
  while (n-- > 0) give_token();
}

void parking_lot::cancel() noexcept {
  // relaxed: only a first guess for the CAS loop below, which orders.
  int n = sleepers_.load(std::memory_order_relaxed);
  for (;;) {
    if (n == 0) {
      // A waker claimed "a sleeper" after we announced; its token is ours.
      take_token();
      return;
    }
    // acq_rel: un-announces us, racing wakers' claims.
    if (sleepers_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel,
                                        std::memory_order_relaxed))
      return;
  }
}

void parking_lot::give_token() noexcept {
  bool interrupt;
  {
    lock_guard lock(mutex_);
    ++tokens_;
    // The poller must be interrupted only if no thread waiting on cv_ will
    // take this token (the claimed sleeper may be the poller itself).
    interrupt = poller_waiting_ && tokens_ > cv_waiters_;
  }
  cv_.notify_one();
  if (interrupt && interrupt_fn_) interrupt_fn_(interrupt_arg_);
}

void parking_lot::take_token() noexcept {
  unique_lock lock(mutex_);
  ++cv_waiters_;
  while (tokens_ == 0) lock.wait(cv_);
  --cv_waiters_;
  --tokens_;
}

bool parking_lot::take_token_for_ms(int ms) noexcept {
  unique_lock lock(mutex_);
  ++cv_waiters_;
  // As cv_.wait_for with a predicate: until a token or the deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (tokens_ == 0 && lock.wait_until(cv_, deadline) != std::cv_status::timeout) {
  }
  const bool got = tokens_ > 0;
  --cv_waiters_;
  if (!got) return false;
  --tokens_;
  return true;
}

bool parking_lot::begin_poll_wait() noexcept {
  lock_guard lock(mutex_);
  // A token given before we got here that no cv_ waiter will take (for
  // example: a waker claimed us between announce and now) is ours: taking
  // it accounts for our claimed sleeper slot.
  if (tokens_ > cv_waiters_) {
    --tokens_;
    return true;
  }
  poller_waiting_ = true;
  return false;
}

void parking_lot::end_poll_wait() noexcept {
  lock_guard lock(mutex_);
  poller_waiting_ = false;
}

}  // namespace weft::detail
