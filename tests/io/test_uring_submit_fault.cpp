// Regression test for uring_backend.cpp's submission error path (its own
// binary, weft_uring_fault_tests, linked with -Wl,--wrap=io_uring_submit;
// io_uring only).
//
// io_uring_submit() can fail without the kernel consuming the SQE (-EAGAIN:
// no request could be allocated; -EBUSY on 5.5..5.1x kernels while the CQ
// overflow backlog cannot be flushed). The SQE stays in the submission ring
// and reaches the kernel with the next io_uring_enter. The wrapper below fails
// the first submit carrying an IORING_OP_ACCEPT that way.
//
// Before the fix: the accept completes at once with EAGAIN and is freed; its
// stale SQE goes to the kernel with the next submission (the sleep's); the
// client's connection is accepted for the freed op: the descriptor leaks, the
// connection is gone from the backlog, and the CQE completes whatever now
// lives at that address (the sleep returns after ~100 ms instead of 1.5 s;
// ASan: heap-use-after-free in ring::reap).
// After the fix: the accept stays pending, its submission is retried, and it
// delivers the client's connection.
#include <liburing.h>

#include <fcntl.h>

#include "io_test_util.hpp"

namespace {
std::atomic<bool> g_inject{false};
std::atomic<int> g_injected{0};
}  // namespace

extern "C" int __real_io_uring_submit(io_uring* ring);
extern "C" int __wrap_io_uring_submit(io_uring* ring) {
  if (g_inject.load()) {
    io_uring_sq& sq = ring->sq;
    for (unsigned i = sq.sqe_head; i != sq.sqe_tail; ++i) {
      if (sq.sqes[i & sq.ring_mask].opcode == IORING_OP_ACCEPT && g_inject.exchange(false)) {
        ++g_injected;
        return -EAGAIN;  // SQE left queued, as after a failed io_uring_enter
      }
    }
  }
  return __real_io_uring_submit(ring);
}

namespace weft_io_test {
namespace {

TEST(IoUringSubmitFault, FailedSubmitNeverOrphansAnAccept) {
  if (!io_uring_supported()) GTEST_SKIP() << "no io_uring";
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  unique_fd client;
  int before = open_fd_count();
  weft::options o;
  o.workers = 1;  // one ring: the later sleep is submitted on the accept's ring
  o.io = weft::io_backend::io_uring;
  o.io_try_first = false;
  {
    weft::runtime rt(o);
    rt.run([&] {
      g_inject = true;
      auto f = weft::io::accept(l.get());
      std::thread c([&] {
        std::this_thread::sleep_for(100ms);
        client = tcp_socket();
        ::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      });
      auto t0 = clk::now();
      weft::io::sleep_for(1500ms).get();
      auto slept = clk::now() - t0;
      c.join();
      EXPECT_EQ(g_injected.load(), 1);
      EXPECT_GE(slept, 1400ms) << "the sleep was completed by another operation's CQE";
      std::error_code ec;
      int fd = f.get_for(2s, ec);
      unique_fd s(ec ? -1 : fd);
      if (ec) {
        // Acceptable only if the connection is still in the backlog.
        ::fcntl(l.get(), F_SETFL, O_NONBLOCK);
        unique_fd left(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
        EXPECT_TRUE(left) << "the accept failed (" << ec.message()
                          << ") yet the connection is gone from the backlog";
      } else {
        EXPECT_EQ(local_address(client.get()).sin_port,
                  [&] { sockaddr_in p{}; socklen_t n = sizeof p;
                        ::getpeername(s.get(), reinterpret_cast<sockaddr*>(&p), &n); return p.sin_port; }());
      }
    });
  }
  client.reset();
  EXPECT_EQ(open_fd_count(), before) << "an accepted descriptor leaked";
}

}  // namespace
}  // namespace weft_io_test
