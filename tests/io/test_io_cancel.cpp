// weft::io cancellation, deadlines (get_until/get_for, wait_for) and sleeps on
// every backend.
#include <algorithm>
#include <random>

#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoCancel : public IoTest {};

// cancel() on a pending read completes it with operation_canceled; the data
// that arrives afterwards is not consumed by it.
TEST_P(IoCancel, CancelPendingRead) {
  fd_pair s = make_socketpair();
  rescuer r(10s, [&] { plain_write_all(s.b.get(), "!", 1); });
  run([&] {
    char buf[8] = {};
    auto f = weft::io::read(s.a.get(), buf, sizeof buf);
    EXPECT_FALSE(f.is_ready());
    f.cancel();
    std::error_code ec;
    EXPECT_EQ(f.get(ec), 0u);
    EXPECT_ERRC(ec, std::errc::operation_canceled);
    EXPECT_FALSE(f.valid());
    ASSERT_EQ(::write(s.b.get(), "abc", 3), 3);
    char again[8] = {};
    EXPECT_EQ(weft::io::read(s.a.get(), again, sizeof again).get(), 3u);
    EXPECT_EQ(std::string(again, 3), "abc");
  });
  EXPECT_FALSE(r.fired()) << "the read was not pending (or cancel did not complete it)";
}

TEST_P(IoCancel, CancelPendingReadGetThrows) {
  fd_pair p = make_pipe();
  rescuer r(10s, [&] { plain_write_all(p.b.get(), "!", 1); });
  run([&] {
    char c;
    auto f = weft::io::read(p.a.get(), &c, 1);
    f.cancel();
    f.cancel();  // twice is harmless
    EXPECT_THROWS_ERRC(f.get(), std::errc::operation_canceled);
  });
  EXPECT_FALSE(r.fired());
}

// cancel() after completion keeps the result.
TEST_P(IoCancel, CancelAfterCompletionKeepsResult) {
  fd_pair s = make_socketpair();
  ASSERT_EQ(::write(s.b.get(), "done", 4), 4);
  run([&] {
    char buf[8] = {};
    auto f = weft::io::read(s.a.get(), buf, sizeof buf);
    f.wait();
    EXPECT_TRUE(f.is_ready());
    f.cancel();
    std::error_code ec;
    EXPECT_EQ(f.get(ec), 4u);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(std::string(buf, 4), "done");

    auto w = weft::io::write(s.a.get(), "xy", 2);
    w.wait();
    w.cancel();
    EXPECT_EQ(w.get(), 2u);
  });
  char buf[4];
  EXPECT_EQ(plain_read_exact(s.b.get(), buf, 2), 2u);
}

TEST_P(IoCancel, CancelPendingWrite) {
  fd_pair s = make_socketpair(SOCK_STREAM | SOCK_NONBLOCK);
  set_socket_buffers(s.a.get(), 4096);
  set_socket_buffers(s.b.get(), 4096);
  std::vector<char> junk(4096, 'j');
  while (::send(s.a.get(), junk.data(), junk.size(), MSG_NOSIGNAL) > 0) {
  }
  rescuer r(10s, [&] {
    std::vector<char> sink(1 << 20);
    while (::read(s.b.get(), sink.data(), sink.size()) > 0) {
    }
  });
  run([&] {
    auto f = weft::io::write(s.a.get(), "stuck", 5);
    EXPECT_FALSE(f.is_ready());
    f.cancel();
    std::error_code ec;
    f.get(ec);
    EXPECT_ERRC(ec, std::errc::operation_canceled);
  });
  EXPECT_FALSE(r.fired());
}

TEST_P(IoCancel, CancelPendingAcceptThenAcceptAgain) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  rescuer r(10s, [&] {
    unique_fd c = tcp_socket();
    ::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  });
  run([&] {
    auto f = weft::io::accept(l.get());
    EXPECT_FALSE(f.is_ready());
    f.cancel();
    std::error_code ec;
    EXPECT_EQ(f.get(ec), 0);
    EXPECT_ERRC(ec, std::errc::operation_canceled);
    // The listener still works.
    unique_fd c = tcp_socket();
    weft::io::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get();
    unique_fd a(weft::io::accept(l.get()).get());
    EXPECT_TRUE(a);
  });
  EXPECT_FALSE(r.fired());
}

TEST_P(IoCancel, CancelPendingSleep) {
  run([&] {
    auto t0 = clk::now();
    auto f = weft::io::sleep_for(1h);
    EXPECT_FALSE(f.is_ready());
    f.cancel();
    std::error_code ec;
    f.get(ec);
    EXPECT_ERRC(ec, std::errc::operation_canceled);
    // The farthest deadline there is.
    auto g = weft::io::sleep_until(clk::time_point::max());
    weft::this_task::sleep_for(5ms);
    EXPECT_FALSE(g.is_ready());
    g.cancel();
    g.get(ec);
    EXPECT_ERRC(ec, std::errc::operation_canceled);
    EXPECT_LT(clk::now() - t0, timing_slack());
  });
}

// Many pending reads cancelled at once, all complete, no data is lost.
TEST_P(IoCancel, CancelManyPendingReads) {
  const int n = 500;
  std::vector<fd_pair> pairs;
  for (int i = 0; i < n; ++i) pairs.push_back(make_socketpair());
  rescuer r(20s, [&] {
    for (auto& p : pairs) (void)!::write(p.b.get(), "!", 1);
  });
  run([&] {
    std::vector<char> bufs(n);
    std::vector<weft::io::io_future<std::size_t>> fs;
    for (int i = 0; i < n; ++i) fs.push_back(weft::io::read(pairs[i].a.get(), &bufs[i], 1));
    for (auto& f : fs) f.cancel();
    int canceled = 0;
    for (auto& f : fs) {
      std::error_code ec;
      f.get(ec);
      if (ec == std::errc::operation_canceled) ++canceled;
    }
    EXPECT_EQ(canceled, n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(::write(pairs[i].b.get(), "k", 1), 1);
    for (int i = 0; i < n; ++i) {
      char c = 0;
      ASSERT_EQ(weft::io::read(pairs[i].a.get(), &c, 1).get(), 1u);
      ASSERT_EQ(c, 'k');
    }
  });
  EXPECT_FALSE(r.fired());
}

// cancel() racing with completion: either the read got the byte, or it was
// cancelled and the byte is still in the socket. Never both, never neither.
TEST_P(IoCancel, CancelRacingWithCompletionLosesNoData) {
  fd_pair s = make_socketpair();
  const int rounds = static_cast<int>(scaled(300, 60));
  int got_data = 0, got_cancel = 0;
  run([&] {
    for (int i = 0; i < rounds; ++i) {
      char c = 0;
      auto f = weft::io::read(s.a.get(), &c, 1);
      std::thread w([&] { ASSERT_EQ(::write(s.b.get(), "d", 1), 1); });
      if (i % 3 == 1) std::this_thread::yield();
      f.cancel();
      std::error_code ec;
      std::size_t n = f.get(ec);
      w.join();
      if (!ec) {
        ASSERT_EQ(n, 1u);
        ASSERT_EQ(c, 'd');
        ++got_data;
        ASSERT_EQ(bytes_available(s.a.get()), 0) << "round " << i;
      } else {
        ASSERT_ERRC(ec, std::errc::operation_canceled);
        ++got_cancel;
        // The byte must still be there (wait for it: the writer may be late).
        char d = 0;
        ASSERT_EQ(weft::io::read(s.a.get(), &d, 1).get(), 1u) << "round " << i;
        ASSERT_EQ(d, 'd');
      }
    }
  });
  EXPECT_EQ(got_data + got_cancel, rounds);
  RecordProperty("got_data", got_data);
  RecordProperty("got_cancel", got_cancel);
}

// ------------------------------------------------------------- deadlines

TEST_P(IoCancel, GetForTimesOut) {
  fd_pair s = make_socketpair();
  rescuer r(10s, [&] { plain_write_all(s.b.get(), "!", 1); });
  run([&] {
    char buf[8];
    auto t0 = clk::now();
    std::error_code ec;
    EXPECT_EQ(weft::io::read(s.a.get(), buf, sizeof buf).get_for(100ms, ec), 0u);
    auto elapsed = clk::now() - t0;
    EXPECT_ERRC(ec, std::errc::timed_out);
    EXPECT_GE(elapsed, 100ms);
    EXPECT_LT(elapsed, 100ms + timing_slack());
    // Throwing form.
    auto f = weft::io::read(s.a.get(), buf, sizeof buf);
    EXPECT_THROWS_ERRC(f.get_for(20ms), std::errc::timed_out);
    EXPECT_FALSE(f.valid());
    // get_until with a deadline in the past on a pending operation.
    EXPECT_THROWS_ERRC(weft::io::recv(s.a.get(), buf, sizeof buf).get_until(clk::now() - 1s),
                       std::errc::timed_out);
    // The timed-out reads consumed nothing.
    ASSERT_EQ(::write(s.b.get(), "xyz", 3), 3);
    EXPECT_EQ(weft::io::read(s.a.get(), buf, sizeof buf).get(), 3u);
    EXPECT_EQ(std::string(buf, 3), "xyz");
  });
  EXPECT_FALSE(r.fired());
}

TEST_P(IoCancel, GetForReturnsResultInTime) {
  fd_pair s = make_socketpair();
  run([&] {
    std::thread sender([&] {
      std::this_thread::sleep_for(30ms);
      plain_write_all(s.b.get(), "in time", 7);
    });
    char buf[16];
    std::error_code ec;
    EXPECT_EQ(weft::io::read(s.a.get(), buf, sizeof buf).get_for(30s, ec), 7u);
    EXPECT_FALSE(ec) << ec.message();
    sender.join();
    // A completed operation returns its result even with a past deadline.
    ASSERT_EQ(::write(s.b.get(), "ok", 2), 2);
    auto f = weft::io::read(s.a.get(), buf, sizeof buf);
    f.wait();
    EXPECT_EQ(f.get_until(clk::now() - 1h), 2u);
  });
}

TEST_P(IoCancel, WaitForTimesOutThenBecomesReady) {
  fd_pair s = make_socketpair();
  rescuer r(10s, [&] { plain_write_all(s.b.get(), "!", 1); });
  run([&] {
    char buf[8] = {};
    auto f = weft::io::read(s.a.get(), buf, sizeof buf);
    auto t0 = clk::now();
    EXPECT_EQ(f.wait_for(50ms), std::future_status::timeout);
    EXPECT_GE(clk::now() - t0, 50ms);
    EXPECT_EQ(f.wait_until(clk::now() + 10ms), std::future_status::timeout);
    EXPECT_FALSE(f.is_ready());
    EXPECT_TRUE(f.valid()) << "wait_for must not consume the future";
    std::thread sender([&] {
      std::this_thread::sleep_for(20ms);
      plain_write_all(s.b.get(), "late", 4);
    });
    EXPECT_EQ(f.wait_for(30s), std::future_status::ready);
    EXPECT_TRUE(f.is_ready());
    EXPECT_EQ(f.get(), 4u);
    EXPECT_EQ(std::string(buf, 4), "late");
    sender.join();
  });
  EXPECT_FALSE(r.fired());
}

TEST_P(IoCancel, SleepGetForTimesOut) {
  run([&] {
    auto t0 = clk::now();
    std::error_code ec;
    weft::io::sleep_for(10s).get_for(50ms, ec);
    EXPECT_ERRC(ec, std::errc::timed_out);
    EXPECT_GE(clk::now() - t0, 50ms);
    EXPECT_LT(clk::now() - t0, 50ms + timing_slack());
    // A sleep shorter than the deadline completes normally.
    weft::io::sleep_for(10ms).get_for(30s, ec);
    EXPECT_FALSE(ec);
  });
}

// ------------------------------------------------------------- sleeps

// sleep_for completes no earlier than asked (measured from before the call)
// and not absurdly late.
TEST_P(IoCancel, SleepForAccuracy) {
  run([&] {
    for (auto d : {0ms, 1ms, 5ms, 20ms, 50ms, 100ms}) {
      // (No SCOPED_TRACE: gtest keeps it per thread, and a task may resume on
      // another worker.)
      const std::string where = std::to_string(d.count()) + " ms";
      auto t0 = clk::now();
      weft::io::sleep_for(d).get();
      auto elapsed = clk::now() - t0;
      EXPECT_GE(elapsed, d) << " [" << where << "]";
      EXPECT_LT(elapsed, d + timing_slack()) << " [" << where << "]";
    }
    // Other duration types.
    auto t0 = clk::now();
    weft::io::sleep_for(std::chrono::microseconds(2500)).get();
    EXPECT_GE(clk::now() - t0, std::chrono::microseconds(2500));
    t0 = clk::now();
    weft::io::sleep_for(std::chrono::duration<double, std::milli>(3.5)).get();
    EXPECT_GE(clk::now() - t0, (std::chrono::duration<double, std::milli>(3.5)));
  });
}

TEST_P(IoCancel, SleepUntilNeverEarly) {
  run([&] {
    for (int i = 0; i < 20; ++i) {
      auto deadline = clk::now() + std::chrono::milliseconds(i % 7);
      weft::io::sleep_until(deadline).get();
      ASSERT_GE(clk::now(), deadline) << "iteration " << i;
    }
    // A past deadline completes at once; negative durations too. (steady_clock
    // counts from boot on Linux: t0 - 1h is before its epoch on a machine up
    // for less than an hour, and time_point::min() always is.)
    auto t0 = clk::now();
    std::error_code ec;
    weft::io::sleep_until(t0 - 1h).get(ec);
    EXPECT_FALSE(ec) << "sleep_until(now - 1h): " << ec.message();
    weft::io::sleep_until(clk::time_point{}).get(ec);
    EXPECT_FALSE(ec) << "sleep_until(steady_clock epoch): " << ec.message();
    weft::io::sleep_until(clk::time_point::min()).get(ec);
    EXPECT_FALSE(ec) << "sleep_until(time_point::min()): " << ec.message();
    weft::io::sleep_for(-5ms).get(ec);
    EXPECT_FALSE(ec) << "sleep_for(-5ms): " << ec.message();
    EXPECT_LT(clk::now() - t0, timing_slack());
  });
}

// Many sleeps pending in one task: each is ready only after its deadline.
TEST_P(IoCancel, ManySleepsInOneTask) {
  if (blocking())
    GTEST_SKIP() << "blocking backend: a sleep blocks the worker (checked in SleepForAccuracy)";
  const int n = 1000;
  run([&] {
    std::mt19937 rng(42);
    std::vector<clk::time_point> deadlines;
    std::vector<weft::io::io_future<void>> fs;
    auto start = clk::now();
    for (int i = 0; i < n; ++i) {
      deadlines.push_back(start + std::chrono::microseconds(rng() % 200000));
      fs.push_back(weft::io::sleep_until(deadlines.back()));
    }
    // Poll readiness: a future reported ready before its deadline is early.
    int early = 0, remaining = n;
    std::vector<bool> seen(n, false);
    auto limit = clk::now() + 30s;
    while (remaining > 0 && clk::now() < limit) {
      for (int i = 0; i < n; ++i) {
        if (seen[i] || !fs[i].is_ready()) continue;
        if (clk::now() < deadlines[i]) ++early;
        seen[i] = true;
        --remaining;
        fs[i].get();
      }
      weft::this_task::sleep_for(1ms);
    }
    EXPECT_EQ(remaining, 0);
    EXPECT_EQ(early, 0);
  });
}

// A sleeping task does not hold its worker.
TEST_P(IoCancel, SleepDoesNotHoldTheWorker) {
  if (blocking())
    GTEST_SKIP() << "the blocking backend sleeps on the worker by design (Cilk-F baseline)";
  run([&] {
    std::atomic<bool> other_ran{false};
    // `other` is spawned first, so it is above the sleeper in the deque: the
    // sleeper runs first (inline in get()) and `other` can only run while the
    // sleeper's sleep is pending.
    auto other = weft::async([&] { other_ran = true; });
    auto sleeper = weft::async([&] {
      weft::io::sleep_for(200ms).get();
      return other_ran.load();
    });
    EXPECT_TRUE(sleeper.get()) << "the other task had to wait for the sleep";
    other.get();
  });
}

WEFT_IO_INSTANTIATE(IoCancel);
WEFT_IO_INSTANTIATE_NO_TRY_FIRST(IoCancel);

}  // namespace
}  // namespace weft_io_test
