// weft — the blocking backend: the plain system call inside the task, as
// Cilk-F does. The worker is blocked for the whole latency. Kept as the
// baseline the latency-hiding backends are measured against.
#include <poll.h>

#include <cerrno>
#include <thread>

#include "io_backend.hpp"

namespace weft::detail {

namespace {
class blocking_backend final : public io_backend {
 public:
  const char* name() const noexcept override { return "blocking"; }

  void submit(io_operation* op, worker_view*) override {
    if (shutting_down_.load(std::memory_order_acquire)) {
      io_complete(op, -ECANCELED);
      return;
    }
    bool regular = false;
    long long r = prepare_io(op, false, &regular);
    if (r < 0) {
      io_complete(op, r);
      return;
    }
    if (op->kind == io_kind::timeout) {
      std::this_thread::sleep_until(op->deadline);
      io_complete(op, 0);
      return;
    }
    for (;;) {
      r = attempt_io(op);
      if (r != -EAGAIN) break;
      // A non-blocking descriptor (or a connect in progress): wait for it
      // here, blocking the worker — that is this backend's whole point.
      pollfd p{op->fd, static_cast<short>(direction_of(op->kind) == io_direction::in ? POLLIN : POLLOUT), 0};
      ::poll(&p, 1, -1);
    }
    io_complete(op, r);
  }

  void cancel(io_operation*) override {
    // Operations complete inside submit(); there is never one to cancel.
  }

  void begin_shutdown() override { shutting_down_.store(true, std::memory_order_release); }

 private:
  std::atomic<bool> shutting_down_{false};
};
}  // namespace

std::unique_ptr<io_backend> make_blocking_backend() { return std::make_unique<blocking_backend>(); }

}  // namespace weft::detail
