// weft — the blocking backend: the plain system call inside the task, as
// Cilk-F does. The worker is blocked for the whole latency. Kept as the
// baseline the latency-hiding backends are measured against.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "io_backend.hpp"

namespace weft::detail {

namespace {
class blocking_backend final : public io_backend {
 public:
  const char* name() const noexcept override { return "blocking"; }

  void submit(io_operation* op, worker_view*) override {
    if (shutting_down()) {
      io_complete(op, -ECANCELED);
      return;
    }
    bool regular = false;
    long long r = prepare_io(op, true, &regular);
    if (r < 0) {
      io_complete(op, r);
      return;
    }
    if (op->kind == io_kind::timeout) {
      // Sleep in slices so that runtime shutdown can cancel the wait.
      while (std::chrono::steady_clock::now() < op->deadline) {
        if (shutting_down()) {
          io_complete(op, -ECANCELED);
          return;
        }
        std::this_thread::sleep_until(std::min(op->deadline, std::chrono::steady_clock::now() + slice));
      }
      io_complete(op, 0);
      return;
    }
    // Try first (errors and ready descriptors complete at once), then wait for
    // readiness on the worker — blocking it, which is this backend's point —
    // in slices, so that runtime shutdown can still cancel the wait.
    const short events = direction_of(op->kind) == io_direction::in ? POLLIN : POLLOUT;
    for (;;) {
      r = attempt_io(op);
      if (r != -EAGAIN) break;
      pollfd p{op->fd, events, 0};
      ::poll(&p, 1, static_cast<int>(slice.count()));
      if (shutting_down()) {
        io_complete(op, -ECANCELED);
        return;
      }
    }
    io_complete(op, r);
  }

  void cancel(io_operation*) override {
    // Operations complete inside submit(); there is never one to cancel.
  }

  void begin_shutdown() override { shutting_down_.store(true, std::memory_order_release); }

 private:
  static constexpr std::chrono::milliseconds slice{50};
  // acquire: pairs with begin_shutdown's release store.
  bool shutting_down() const noexcept { return shutting_down_.load(std::memory_order_acquire); }
  std::atomic<bool> shutting_down_{false};
};
}  // namespace

std::unique_ptr<io_backend> make_blocking_backend() { return std::make_unique<blocking_backend>(); }

}  // namespace weft::detail
