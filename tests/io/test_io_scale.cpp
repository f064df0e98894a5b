// weft::io at scale and across contexts, on every backend: 10,000 concurrent
// pending operations, shutdown with pending operations, io_futures waited
// from plain threads and from other tasks, a token ring of tasks.
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <random>

#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoScale : public IoTest {};

constexpr const char* kBlockingConcurrency =
    "the blocking backend holds a worker per operation in progress, so it cannot have "
    "thousands of operations pending (by design: Cilk-F baseline)";

// 10,000 reads pending at once, issued by a single task (no fibers needed, so
// this runs at full size under TSan too): 5,000 socketpairs, a read on each
// end; then every read is released.
TEST_P(IoScale, TenThousandPendingReadsFromOneTask) {
  if (blocking()) GTEST_SKIP() << kBlockingConcurrency;
  const int pairs_n = 5000;  // 10,000 descriptors (ulimit -n is 20,000 here)
  std::vector<fd_pair> pairs;
  pairs.reserve(pairs_n);
  for (int i = 0; i < pairs_n; ++i) pairs.push_back(make_socketpair());
  std::vector<unsigned char> in_a(pairs_n), in_b(pairs_n);
  run([&] {
    std::vector<weft::io::io_future<std::size_t>> fa, fb;
    fa.reserve(pairs_n);
    fb.reserve(pairs_n);
    for (int i = 0; i < pairs_n; ++i) {
      fa.push_back(weft::io::read(pairs[i].a.get(), &in_a[i], 1));
      fb.push_back(weft::io::recv(pairs[i].b.get(), &in_b[i], 1));
    }
    weft::this_task::sleep_for(20ms);
    int ready = 0;
    for (int i = 0; i < pairs_n; ++i) ready += fa[i].is_ready() + fb[i].is_ready();
    EXPECT_EQ(ready, 0) << "reads completed with nothing to read";
    for (int i = 0; i < pairs_n; ++i) {
      unsigned char x = static_cast<unsigned char>(i % 251), y = static_cast<unsigned char>(x ^ 0x5a);
      ASSERT_EQ(::write(pairs[i].b.get(), &x, 1), 1);
      ASSERT_EQ(::write(pairs[i].a.get(), &y, 1), 1);
    }
    int bad = 0;
    for (int i = 0; i < pairs_n; ++i) {
      std::error_code ea, eb;
      if (fa[i].get(ea) != 1 || ea) ++bad;
      if (fb[i].get(eb) != 1 || eb) ++bad;
    }
    EXPECT_EQ(bad, 0);
  });
  for (int i = 0; i < pairs_n; ++i) {
    ASSERT_EQ(in_a[i], static_cast<unsigned char>(i % 251)) << i;
    ASSERT_EQ(in_b[i], static_cast<unsigned char>((i % 251) ^ 0x5a)) << i;
  }
}

// 10,000 tasks (2,000 under TSan, where each fiber is a thread) each blocked
// reading its own socket end, then all released.
TEST_P(IoScale, TenThousandTasksBlockedInRead) {
  if (blocking()) GTEST_SKIP() << kBlockingConcurrency;
  const int tasks = tsan_build ? 2000 : 10000;
  const int pairs_n = tasks / 2;
  stack_size_ = 256 * 1024;  // 10,000 fibers
  std::vector<fd_pair> pairs;
  pairs.reserve(pairs_n);
  for (int i = 0; i < pairs_n; ++i) pairs.push_back(make_socketpair());
  std::atomic<int> started{0}, completed{0}, correct{0};
  run([&] {
    std::vector<weft::future<void>> fs;
    fs.reserve(tasks);
    for (int t = 0; t < tasks; ++t) {
      fs.push_back(weft::async([&, t] {
        int fd = t % 2 == 0 ? pairs[t / 2].a.get() : pairs[t / 2].b.get();
        ++started;
        unsigned char c = 0;
        std::size_t n = weft::io::read(fd, &c, 1).get();
        ++completed;
        if (n == 1 && c == static_cast<unsigned char>(t % 253)) ++correct;
      }));
    }
    // Let every task start and block.
    auto limit = clk::now() + 60s;
    while (started.load() < tasks && clk::now() < limit) weft::this_task::sleep_for(1ms);
    ASSERT_EQ(started.load(), tasks);
    weft::this_task::sleep_for(20ms);
    EXPECT_EQ(completed.load(), 0);
    for (int t = 0; t < tasks; ++t) {
      // Task t reads end t%2 of pair t/2; write to the other end.
      int fd = t % 2 == 0 ? pairs[t / 2].b.get() : pairs[t / 2].a.get();
      unsigned char c = static_cast<unsigned char>(t % 253);
      ASSERT_EQ(::write(fd, &c, 1), 1);
    }
    for (auto& f : fs) f.get();
  }, sanitizer_build ? std::chrono::seconds(240) : std::chrono::seconds(120));
  EXPECT_EQ(completed.load(), tasks);
  EXPECT_EQ(correct.load(), tasks);
}

// 10,000 sleeps: from one task, and from as many tasks (2,000 under TSan).
TEST_P(IoScale, TenThousandSleeps) {
  if (blocking()) GTEST_SKIP() << kBlockingConcurrency;
  const int n = 10000;
  const int tasks = tsan_build ? 2000 : 10000;
  stack_size_ = 256 * 1024;
  std::atomic<int> early{0};
  run([&] {
    std::mt19937 rng(7);
    auto start = clk::now();
    std::vector<clk::time_point> deadlines(n);
    std::vector<weft::io::io_future<void>> fs;
    fs.reserve(n);
    for (int i = 0; i < n; ++i) {
      deadlines[i] = start + std::chrono::microseconds(rng() % 100000);
      fs.push_back(weft::io::sleep_until(deadlines[i]));
    }
    for (int i = 0; i < n; ++i) {
      fs[i].get();
      if (clk::now() < deadlines[i]) ++early;
    }
    std::vector<weft::future<void>> ts;
    ts.reserve(tasks);
    for (int i = 0; i < tasks; ++i) {
      ts.push_back(weft::async([&, i] {
        auto d = std::chrono::microseconds((i * 7919) % 100000);
        auto deadline = clk::now() + d;
        weft::io::sleep_for(d).get();
        if (clk::now() < deadline) ++early;
      }));
    }
    for (auto& t : ts) t.get();
  }, sanitizer_build ? std::chrono::seconds(240) : std::chrono::seconds(120));
  EXPECT_EQ(early.load(), 0);
}

// ------------------------------------------------------------- shutdown

// Destroying the runtime while tasks are blocked reading sockets nobody
// writes: their operations complete with operation_canceled, the destructor
// returns, and no descriptor leaks.
TEST_P(IoScale, ShutdownCancelsPendingOperations) {
  const int n = 64;
  const int fds_start = open_fd_count();
  std::vector<fd_pair> pairs;
  for (int i = 0; i < n + 1; ++i) pairs.push_back(make_socketpair());
  const int fds_with_pairs = open_fd_count();
  std::atomic<int> started{0}, canceled{0}, other{0}, sleep_canceled{0};
  weft::io::io_future<std::size_t> outside;  // pending, owned by this thread
  char outside_buf[4];
  {
    auto rtp = std::make_unique<weft::runtime>(options());
    for (int i = 0; i < n; ++i) {
      (void)rtp->async([&, i] {
        ++started;
        char c;
        std::error_code ec;
        weft::io::read(pairs[i].a.get(), &c, 1).get(ec);
        if (ec == std::errc::operation_canceled) {
          ++canceled;
        } else {
          ++other;
        }
      });
    }
    if (!blocking()) {
      (void)rtp->async([&] {
        std::error_code ec;
        weft::io::sleep_for(1h).get(ec);
        if (ec == std::errc::operation_canceled) ++sleep_canceled;
      });
      // An operation started by a task whose future is held outside.
      rtp->async([&] { outside = weft::io::read(pairs[n].a.get(), outside_buf, 1); }).get();
    }
    // The blocking backend can only have `workers` reads in progress; the
    // rest wait in the queue and must be cancelled when they start.
    const int expect_started = blocking() ? static_cast<int>(workers()) : n;
    auto limit = clk::now() + 30s;
    while (started.load() < expect_started && clk::now() < limit) std::this_thread::sleep_for(1ms);
    ASSERT_GE(started.load(), expect_started);
    std::this_thread::sleep_for(50ms);  // let them reach the wait
    EXPECT_EQ(canceled.load() + other.load(), 0) << "reads completed with nothing to read";

    // Destroy on a helper thread; if it does not return, unblock the reads so
    // the test can report instead of hanging.
    std::promise<void> destroyed;
    auto done = destroyed.get_future();
    std::thread destroyer([&] {
      rtp.reset();
      destroyed.set_value();
    });
    const auto grace = sanitizer_build ? 60s : 20s;
    if (done.wait_for(grace) != std::future_status::ready) {
      ADD_FAILURE() << "~runtime did not return within " << grace.count()
                    << " s with operations pending; unblocking them by writing";
      for (auto& p : pairs) (void)!::write(p.b.get(), "u", 1);
      if (done.wait_for(30s) != std::future_status::ready) {
        std::fprintf(stderr, "*** ~runtime still blocked after the reads were released; aborting\n");
        std::abort();
      }
    }
    destroyer.join();
  }
  EXPECT_EQ(canceled.load(), n);
  EXPECT_EQ(other.load(), 0);
  if (!blocking()) {
    EXPECT_EQ(sleep_canceled.load(), 1);
    ASSERT_TRUE(outside.valid());
    EXPECT_TRUE(outside.is_ready()) << "shutdown left an operation pending";
    std::error_code ec;
    outside.get(ec);  // after the runtime is gone
    EXPECT_ERRC(ec, std::errc::operation_canceled);
  }
  // The runtime's own descriptors (epoll, eventfds, rings) are closed.
  EXPECT_EQ(open_fd_count(), fds_with_pairs);
  pairs.clear();
  EXPECT_EQ(open_fd_count(), fds_start);
}

// The runtime is destroyed before any task has used weft::io (the backend is
// created on first use): a task that starts reading only afterwards must be
// cancelled too, not left pending forever.
TEST_P(IoScale, ShutdownBeforeFirstIoOperation) {
  fd_pair s = make_socketpair();
  std::atomic<int> result{-1};  // 0 canceled, 1 other error, 2 data
  std::atomic<bool> in_task{false};
  auto rtp = std::make_unique<weft::runtime>(options());
  (void)rtp->async([&] {
    in_task = true;
    weft::this_task::sleep_for(200ms);  // the destructor starts meanwhile
    char c;
    std::error_code ec;
    std::size_t n = weft::io::read(s.a.get(), &c, 1).get(ec);
    result = ec == std::errc::operation_canceled ? 0 : (ec ? 1 : (n == 1 ? 2 : 3));
  });
  ASSERT_TRUE([&] {
    auto limit = clk::now() + 10s;
    while (!in_task.load() && clk::now() < limit) std::this_thread::sleep_for(1ms);
    return in_task.load();
  }());
  std::promise<void> destroyed;
  auto done = destroyed.get_future();
  std::thread destroyer([&] {
    rtp.reset();
    destroyed.set_value();
  });
  const auto grace = sanitizer_build ? 60s : 15s;
  if (done.wait_for(grace) != std::future_status::ready) {
    ADD_FAILURE() << "~runtime did not return: the read started after shutdown began "
                     "is pending in a backend created after begin_shutdown()";
    (void)!::write(s.b.get(), "u", 1);
    if (done.wait_for(30s) != std::future_status::ready) std::abort();
  }
  destroyer.join();
  EXPECT_EQ(result.load(), 0) << "0 = operation_canceled, 1 = other error, 2 = data, 3 = EOF";
}

// Pending reads on eventfd and timerfd (which io_uring may run on its
// io-wq threads rather than by polling) are cancelled by cancel() and by
// shutdown with operation_canceled — not EINTR.
TEST_P(IoScale, CancelPendingEventfdAndTimerfdReads) {
  unique_fd efd(::eventfd(0, EFD_CLOEXEC));
  unique_fd tfd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  ASSERT_TRUE(efd);
  ASSERT_TRUE(tfd);
  itimerspec its{};
  its.it_value.tv_sec = 3600;
  ASSERT_EQ(::timerfd_settime(tfd.get(), 0, &its, nullptr), 0);
  rescuer r(15s, [&] {
    std::uint64_t one = 1;
    (void)!::write(efd.get(), &one, 8);
    itimerspec soon{};
    soon.it_value.tv_nsec = 1000;
    ::timerfd_settime(tfd.get(), 0, &soon, nullptr);
  });
  run([&] {
    std::uint64_t v1 = 0, v2 = 0;
    auto f1 = weft::io::read(efd.get(), &v1, 8);
    auto f2 = weft::io::read(tfd.get(), &v2, 8);
    weft::this_task::sleep_for(20ms);
    EXPECT_FALSE(f1.is_ready());
    EXPECT_FALSE(f2.is_ready());
    f1.cancel();
    f2.cancel();
    std::error_code e1, e2;
    f1.get(e1);
    f2.get(e2);
    EXPECT_ERRC(e1, std::errc::operation_canceled);
    EXPECT_ERRC(e2, std::errc::operation_canceled);
  });
  r.disarm();
  EXPECT_FALSE(r.fired());
  // And at shutdown.
  std::atomic<int> canceled{0}, other{0};
  std::atomic<int> started{0};
  {
    auto rtp = std::make_unique<weft::runtime>(options());
    for (int fd : {efd.get(), tfd.get()}) {
      (void)rtp->async([&, fd] {
        ++started;
        std::uint64_t v = 0;
        std::error_code ec;
        weft::io::read(fd, &v, 8).get(ec);
        (ec == std::errc::operation_canceled ? canceled : other)++;
        if (ec && ec != std::errc::operation_canceled)
          ADD_FAILURE() << "shutdown completed a read with " << ec.message();
      });
    }
    auto limit = clk::now() + 10s;
    while (started.load() < 2 && clk::now() < limit) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(30ms);
    rescuer r2(15s, [&] {
      std::uint64_t one = 1;
      (void)!::write(efd.get(), &one, 8);
      itimerspec soon{};
      soon.it_value.tv_nsec = 1000;
      ::timerfd_settime(tfd.get(), 0, &soon, nullptr);
    });
    rtp.reset();
    r2.disarm();
    EXPECT_FALSE(r2.fired()) << "~runtime did not cancel the reads";
  }
  EXPECT_EQ(canceled.load(), 2);
  EXPECT_EQ(other.load(), 0);
}

// Shutdown with many pending operations repeatedly: no leak builds up.
TEST_P(IoScale, RepeatedRuntimesDoNotLeakDescriptors) {
  fd_pair s = make_socketpair();
  const int before = open_fd_count();
  for (int round = 0; round < 20; ++round) {
    weft::runtime rt(options());
    rt.run([&] {
      ASSERT_EQ(weft::io::send(s.a.get(), "r", 1).get(), 1u);
      char c;
      ASSERT_EQ(weft::io::read(s.b.get(), &c, 1).get(), 1u);
      weft::io::sleep_for(1ms).get();
    });
  }
  EXPECT_EQ(open_fd_count(), before);
}

// ------------------------------------------------------------- who waits

// An io_future started in a task and waited from plain threads (the test's
// thread blocks; it is not a worker). The data comes from a weft task (from
// a plain thread on the blocking backend, whose read runs in the task that
// starts it). Two sockets: the order in which two reads pending on one
// socket are served is not specified.
TEST_P(IoScale, FutureWaitedFromPlainThread) {
  fd_pair s1 = make_socketpair(), s2 = make_socketpair();
  weft::io::io_future<std::size_t> f1, f2;
  char b1[8] = {}, b2[8] = {};
  rescuer r(20s, [&] {
    plain_write_all(s1.b.get(), "!!!", 3);
    plain_write_all(s2.b.get(), "!!!", 3);
  });
  std::thread early_sender;
  if (blocking()) {
    early_sender = std::thread([&] {
      std::this_thread::sleep_for(50ms);
      plain_write_all(s1.b.get(), "abc", 3);
      plain_write_all(s2.b.get(), "def", 3);
    });
  }
  run([&] {
    f1 = weft::io::read(s1.a.get(), b1, 3);
    f2 = weft::io::read(s2.a.get(), b2, 3);
  });
  weft::future<void> writer;
  if (!blocking()) {
    // A pending operation waited on from this thread.
    EXPECT_EQ(f1.wait_for(30ms), std::future_status::timeout);
    writer = rt().async([&] {
      weft::io::sleep_for(30ms).get();
      weft::io::write_all(s1.b.get(), "abc", 3);
    });
  }
  EXPECT_EQ(f1.get(), 3u);
  EXPECT_EQ(std::string(b1, 3), "abc");
  if (writer.valid()) writer.get();
  if (early_sender.joinable()) early_sender.join();
  // f2 waited from another plain thread.
  std::size_t got = 0;
  std::thread t([&] { got = f2.get(); });
  if (!blocking()) {
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(::write(s2.b.get(), "def", 3), 3);
  }
  t.join();
  EXPECT_EQ(got, 3u);
  EXPECT_EQ(std::string(b2, 3), "def");
  r.disarm();
  EXPECT_FALSE(r.fired());
}

// An io_future started in one task and waited (get, get_for) in another.
TEST_P(IoScale, FutureWaitedFromAnotherTask) {
  fd_pair s = make_socketpair();
  rescuer r(20s, [&] { plain_write_all(s.b.get(), "!!!!!!!!", 8); });
  run([&] {
    char buf[8] = {};
    std::thread sender([&] {
      std::this_thread::sleep_for(50ms);
      plain_write_all(s.b.get(), "task", 4);
    });
    auto f = weft::io::read(s.a.get(), buf, 4);
    auto waiter = weft::async([f = std::move(f)]() mutable { return f.get_for(30s); });
    EXPECT_EQ(waiter.get(), 4u);
    EXPECT_EQ(std::string(buf, 4), "task");
    sender.join();
  });
  EXPECT_FALSE(r.fired());
}

// Pending futures handed between tasks many times (on 2 workers they cross
// workers): the waiter suspends on one worker, the completion arrives from
// the backend, the waiter resumes wherever it is picked up.
TEST_P(IoScale, PendingFuturesHandedBetweenTasks) {
  fd_pair s = make_socketpair();
  const int rounds = static_cast<int>(scaled(2000, 300));
  run([&] {
    for (int i = 0; i < rounds; ++i) {
      unsigned char c = 0;
      auto f = weft::io::read(s.a.get(), &c, 1);
      auto waiter = weft::async([f = std::move(f)]() mutable { return f.get(); });
      auto writer = weft::async([&, i] {
        unsigned char x = static_cast<unsigned char>(i);
        weft::io::write(s.b.get(), &x, 1).get();
      });
      writer.get();
      ASSERT_EQ(waiter.get(), 1u);
      ASSERT_EQ(c, static_cast<unsigned char>(i));
    }
  });
}

// A ring of tasks connected by pipes passes a token around.
TEST_P(IoScale, TokenRing) {
  if (blocking()) GTEST_SKIP() << kBlockingConcurrency;
  const int n = 100;
  const int hops = static_cast<int>(scaled(20000, 2000));
  std::vector<fd_pair> pipes;
  for (int i = 0; i < n; ++i) pipes.push_back(make_pipe());
  std::atomic<int> total_hops{0}, exited{0};
  run([&] {
    std::vector<weft::future<void>> fs;
    for (int i = 0; i < n; ++i) {
      fs.push_back(weft::async([&, i] {
        int in = pipes[i].a.get(), out = pipes[(i + 1) % n].b.get();
        for (;;) {
          int token = 0;
          ASSERT_EQ(weft::io::read_exact(in, &token, sizeof token), sizeof token);
          if (token >= hops) {
            weft::io::write_all(out, &token, sizeof token);  // tell the next one
            break;
          }
          ++total_hops;
          ++token;
          weft::io::write_all(out, &token, sizeof token);
        }
        ++exited;
      }));
    }
    int zero = 0;
    weft::io::write_all(pipes[0].b.get(), &zero, sizeof zero);
    for (auto& f : fs) f.get();
  });
  EXPECT_EQ(total_hops.load(), hops);
  EXPECT_EQ(exited.load(), n);
}

WEFT_IO_INSTANTIATE(IoScale);

// Two runtimes with different backends in one process.
TEST(IoRuntimes, TwoRuntimesWithDifferentBackends) {
  weft::options a, b;
  a.workers = b.workers = 1;
  a.io = weft::io_backend::epoll;
  b.io = io_uring_supported() ? weft::io_backend::io_uring : weft::io_backend::blocking;
  weft::runtime ra(a), rb(b);
  fd_pair s = make_socketpair();
  auto fa = ra.async([&] {
    char c;
    EXPECT_EQ(std::string(weft::io::backend_name()), "epoll");
    return weft::io::read(s.a.get(), &c, 1).get();
  });
  auto fb = rb.async([&] {
    EXPECT_EQ(std::string(weft::io::backend_name()), backend_string(b.io));
    return weft::io::write(s.b.get(), "x", 1).get();
  });
  EXPECT_EQ(fb.get(), 1u);
  EXPECT_EQ(fa.get(), 1u);
}

}  // namespace
}  // namespace weft_io_test
