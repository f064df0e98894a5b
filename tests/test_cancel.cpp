// Cancellation with std::stop_token (docs/api.md "Cancellation"): every
// blocking wait given a token ends with std::errc::operation_canceled when
// stopped, from a task or a plain thread; a stop racing completion loses or
// wins, never both; task_group::request_stop skips unstarted children and
// reaches running ones through their token; weft::async passes a token to
// callables that take one; nothing leaks when thousands of blocked tasks are
// cancelled.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "test_util.hpp"
#include "weft/io.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;

class CancelTest : public Workers {};
WEFT_INSTANTIATE_WORKERS(CancelTest);

bool is_cancelled(const std::system_error& e) {
  return e.code() == std::make_error_code(std::errc::operation_canceled);
}

// Runs f, which must throw std::system_error(operation_canceled).
template <class F>
void expect_cancelled(F&& f) {
  try {
    f();
    ADD_FAILURE() << "the wait was not cancelled";
  } catch (const std::system_error& e) {
    EXPECT_TRUE(is_cancelled(e)) << e.what();
  }
}

// ---- a token stopped before the wait: every wait ends at once ---------------

TEST(Cancel, AlreadyStoppedTokenEndsEveryWaitOnAPlainThread) {
  std::stop_source src;
  src.request_stop();
  const std::stop_token t = src.get_token();
  weft::ivar<int> iv;
  expect_cancelled([&] { (void)iv.get(t); });
  weft::mvar<int> empty;
  expect_cancelled([&] { (void)empty.take(t); });
  expect_cancelled([&] { (void)empty.read(t); });
  weft::mvar<int> full(1);
  expect_cancelled([&] { full.put(2, t); });
  EXPECT_EQ(full.take(), 1);  // the cancelled put left the first value alone
  weft::channel<int> ch;
  expect_cancelled([&] { (void)ch.recv(t); });
  expect_cancelled([&] { ch.send(3, t); });
  weft::promise<int> p;
  weft::future<int> f = p.get_future();
  expect_cancelled([&] { (void)f.get(t); });
  expect_cancelled([&] { f.wait(t); });
  EXPECT_TRUE(f.valid());  // nothing consumed
  weft::shared_future<int> sf = f.share();
  expect_cancelled([&] { (void)sf.get(t); });
  expect_cancelled([&] { sf.wait(t); });
  expect_cancelled([&] { weft::this_task::sleep_for(1h, t); });
  // A ready value wins over a stopped token.
  p.set_value(7);
  EXPECT_EQ(sf.get(t), 7);
  iv.put(8);
  EXPECT_EQ(iv.get(t), 8);
}

TEST(Cancel, TokenThatCannotStopIsAPlainWait) {
  weft::ivar<int> iv;
  iv.put(1);
  EXPECT_EQ(iv.get(std::stop_token{}), 1);
  weft::this_task::sleep_for(1ms, std::stop_token{});
}

// ---- a wait blocked in a task, stopped by another task or a plain thread -----

// One blocking wait of each kind; `blocked` says when the waiter is queued.
struct waits {
  weft::ivar<int> iv;
  weft::mvar<int> empty_mvar;
  weft::mvar<int> full_mvar{1};
  weft::channel<int> ch;  // rendezvous: send and recv both wait
  weft::promise<int> p;
  weft::shared_future<int> sf = p.get_future().share();
  weft::promise<int> p2;
  weft::future<int> f2 = p2.get_future();
  static constexpr int kinds = 9;
  std::atomic<int> sleeping{0};

  // Runs wait number k with token t (it must end cancelled).
  void wait(int k, const std::stop_token& t) {
    switch (k) {
      case 0: (void)iv.get(t); break;
      case 1: (void)empty_mvar.take(t); break;
      case 2: (void)empty_mvar.read(t); break;
      case 3: full_mvar.put(2, t); break;
      case 4: (void)ch.recv(t); break;
      case 5: ch.send(5, t); break;
      case 6: (void)sf.get(t); break;
      case 7: (void)f2.get(t); break;
      case 8:
        sleeping.fetch_add(1);
        weft::this_task::sleep_for(1h, t);
        break;
    }
  }
  // Whether wait k is (or may be, for the sleep) blocked now.
  bool blocked(int k) {
    switch (k) {
      case 0: return iv.waiters() == 1;
      case 1: case 2: return empty_mvar.waiters() == 1;
      case 3: return full_mvar.waiters() == 1;
      case 4: case 5: return ch.waiters() == 1;
      default: return sleeping.load() == 1 || k == 6 || k == 7;  // futures: stop may come first, fine
    }
  }
};

TEST_P(CancelTest, EachBlockedWaitIsCancelledByAnotherTask) {
  weft::runtime rt(options());
  rt.run([] {
    for (int k = 0; k < waits::kinds; ++k) {
      waits w;
      std::stop_source src;
      auto waiter = weft::async([&w, k, t = src.get_token()] {
        try {
          w.wait(k, t);
          return false;
        } catch (const std::system_error& e) {
          return is_cancelled(e);
        }
      });
      ASSERT_TRUE(yield_until([&] { return w.blocked(k); })) << "wait " << k;
      src.request_stop();
      EXPECT_TRUE(waiter.get()) << "wait " << k;
      EXPECT_EQ(w.iv.waiters() + w.empty_mvar.waiters() + w.full_mvar.waiters() + w.ch.waiters(), 0u);
      EXPECT_EQ(w.full_mvar.take(), 1);  // a cancelled put took nothing
    }
  });
}

TEST_P(CancelTest, EachBlockedWaitIsCancelledByAPlainThread) {
  auto rt = std::make_unique<weft::runtime>(options());
  for (int k = 0; k < waits::kinds; ++k) {
    waits w;
    std::stop_source src;
    auto waiter = rt->async([&w, k, t = src.get_token()] {
      try {
        w.wait(k, t);
        return false;
      } catch (const std::system_error& e) {
        return is_cancelled(e);
      }
    });
    ASSERT_TRUE(spin_until([&] { return w.blocked(k); })) << "wait " << k;
    std::thread stopper([&] { src.request_stop(); });
    stopper.join();
    EXPECT_TRUE(waiter.get()) << "wait " << k;
  }
}

// A plain thread blocked with a token, stopped from a task.
TEST_P(CancelTest, PlainThreadWaitCancelledFromATask) {
  weft::runtime rt(options());
  for (int k = 0; k < waits::kinds; ++k) {
    waits w;
    std::stop_source src;
    std::atomic<bool> cancelled{false};
    std::thread waiter([&] {
      try {
        w.wait(k, src.get_token());
      } catch (const std::system_error& e) {
        cancelled = is_cancelled(e);
      }
    });
    ASSERT_TRUE(spin_until([&] { return w.blocked(k); })) << "wait " << k;
    rt.run([&] { src.request_stop(); });
    waiter.join();
    EXPECT_TRUE(cancelled.load()) << "wait " << k;
  }
}

// select with a token: no case completes, every node is withdrawn.
TEST_P(CancelTest, SelectWithTokenIsCancelledAndWithdrawsEveryCase) {
  weft::runtime rt(options());
  rt.run([] {
    weft::channel<int> a, b;
    std::optional<int> got;
    std::stop_source src;
    auto waiter = weft::async([&, t = src.get_token()] {
      try {
        int seven = 7;
        (void)weft::select(t, weft::recv_case(a, got), weft::send_case(b, seven));
        return false;
      } catch (const std::system_error& e) {
        return is_cancelled(e);
      }
    });
    ASSERT_TRUE(yield_until([&] { return a.waiters() == 1 && b.waiters() == 1; }));
    src.request_stop();
    EXPECT_TRUE(waiter.get());
    EXPECT_EQ(a.waiters() + b.waiters(), 0u);
    EXPECT_FALSE(got.has_value());
    // A ready case wins over a stopped token.
    weft::channel<int> buffered(1);
    buffered.send(3);
    EXPECT_EQ(weft::select(src.get_token(), weft::recv_case(buffered, got)), 0);
    EXPECT_EQ(got, 3);
  });
}

// ---- a stop racing completion: one wins, nothing is lost ---------------------

TEST_P(CancelTest, StopRacingCompletionValueOrCancelNeverBoth) {
  weft::runtime rt(options());
  const int rounds = static_cast<int>(scaled(300, 60));
  int values = 0, cancels = 0;
  rt.run([&] {
    for (int i = 0; i < rounds; ++i) {
      const int kind = i % 4;
      std::stop_source src;
      weft::ivar<int> iv;
      weft::mvar<int> mv;
      weft::channel<int> ch;
      weft::promise<int> p;
      weft::future<int> f = p.get_future();
      auto waiter = weft::async([&, t = src.get_token()]() -> std::optional<int> {
        try {
          switch (kind) {
            case 0: return iv.get(t);
            case 1: return mv.take(t);
            case 2: return ch.recv(t);
            default: return f.get(t);
          }
        } catch (const std::system_error& e) {
          EXPECT_TRUE(is_cancelled(e));
          return std::nullopt;
        }
      });
      auto producer = weft::async([&] {
        switch (kind) {
          case 0: iv.put(42); break;
          case 1: mv.put(42); break;
          case 2: ch.send(42); break;  // rendezvous: waits for a receiver
          default: p.set_value(42); break;
        }
      });
      src.request_stop();
      std::optional<int> got = waiter.get();
      if (got) {
        EXPECT_EQ(*got, 42);
        ++values;
        if (kind == 1) {
          EXPECT_FALSE(mv.is_full());  // taken, not duplicated
        }
      } else {
        ++cancels;
        // The value was not consumed by the cancelled wait: still there.
        switch (kind) {
          case 0: EXPECT_EQ(iv.get(), 42); break;
          case 1: EXPECT_EQ(mv.take(), 42); break;
          case 2: EXPECT_EQ(ch.recv(), 42); break;  // the sender still waits with it
          default: EXPECT_EQ(f.get(), 42); break;
        }
      }
      producer.get();
    }
  });
  EXPECT_EQ(values + cancels, rounds);
}

// ---- task_group::request_stop -------------------------------------------------

TEST_P(CancelTest, GroupStopSkipsUnstartedChildren) {
  weft::runtime rt(options());
  rt.run([&] {
    std::atomic<int> ran{0};
    weft::task_group g;
    EXPECT_FALSE(g.stop_requested());
    EXPECT_TRUE(g.request_stop());
    EXPECT_FALSE(g.request_stop());  // already stopped
    EXPECT_TRUE(g.stop_requested());
    for (int i = 0; i < 100; ++i) g.spawn([&] { ran.fetch_add(1); });
    for (int i = 0; i < 100; ++i) g.spawn([&](std::stop_token) { ran.fetch_add(1); });
    EXPECT_EQ(g.wait(), weft::task_group_status::canceled);
    EXPECT_EQ(ran.load(), 0);  // the stop is permanent: later spawns are skipped
  });
}

TEST_P(CancelTest, GroupStopAfterSpawnSkipsChildrenNotYetStarted) {
  weft::runtime rt(options());
  rt.run([&] {
    std::atomic<int> ran{0};
    const int n = 1000;
    weft::task_group g;
    for (int i = 0; i < n; ++i) g.spawn([&] { ran.fetch_add(1); });
    g.request_stop();
    EXPECT_EQ(g.wait(), weft::task_group_status::canceled);
    // Thieves may have started some; with one worker nobody could.
    EXPECT_LE(ran.load(), n);
    if (workers() == 1) {
      EXPECT_EQ(ran.load(), 0);
    }
  });
}

TEST_P(CancelTest, GroupWithoutStopCompletesAndChildrenSeeTheirToken) {
  weft::runtime rt(options());
  rt.run([&] {
    std::atomic<int> possible{0};
    weft::task_group g;
    for (int i = 0; i < 10; ++i)
      g.spawn([&](std::stop_token t) {
        if (t.stop_possible() && !t.stop_requested()) possible.fetch_add(1);
      });
    EXPECT_EQ(g.wait(), weft::task_group_status::complete);
    EXPECT_EQ(possible.load(), 10);
    EXPECT_TRUE(g.get_stop_token().stop_possible());
    EXPECT_FALSE(g.get_stop_token().stop_requested());
  });
}

TEST_P(CancelTest, GroupStopFromAChildReachesRunningSiblings) {
  weft::runtime rt(options());
  rt.run([&] {
    weft::ivar<int> never;
    std::atomic<int> cancelled{0};
    const int n = 8;
    weft::task_group g;
    for (int i = 0; i < n; ++i)
      g.spawn([&](std::stop_token t) {
        try {
          (void)never.get(t);
        } catch (const std::system_error& e) {
          if (is_cancelled(e)) cancelled.fetch_add(1);
        }
      });
    g.spawn([&] {
      // Stops the group once every sibling that started is blocked.
      ASSERT_TRUE(yield_until([&] { return never.waiters() == static_cast<std::size_t>(n); }));
      g.request_stop();
    });
    EXPECT_EQ(g.wait(), weft::task_group_status::canceled);
    EXPECT_EQ(cancelled.load(), n);
    EXPECT_EQ(never.waiters(), 0u);
  });
}

// Thousands of tasks blocked on ivars, mvars, channels, futures and sleeps
// with the group's token; request_stop ends them all, and the per-test leak
// check (fibers, stacks) and ASan find nothing left behind.
TEST_P(CancelTest, CancellingAGroupWithThousandsOfBlockedTasksLeaksNothing) {
  weft::runtime rt(options());
  rt.run([&] {
    const int n = static_cast<int>(scaled(2000, 400));
    weft::ivar<std::string> iv;
    weft::mvar<std::string> mv;
    weft::channel<std::string> ch_recv;  // nobody sends
    weft::channel<std::string> ch_send;  // nobody receives
    weft::promise<std::string> p;
    weft::shared_future<std::string> sf = p.get_future().share();
    std::atomic<int> started{0}, cancelled{0};
    weft::task_group g;
    for (int i = 0; i < n; ++i)
      g.spawn([&, i](std::stop_token t) {
        started.fetch_add(1);
        try {
          switch (i % 5) {
            case 0: (void)iv.get(t); break;
            case 1: (void)mv.take(t); break;
            case 2: (void)ch_recv.recv(t); break;
            case 3: ch_send.send(std::string(100, 'x'), t); break;
            default: (void)sf.get(t); break;
          }
        } catch (const std::system_error& e) {
          if (is_cancelled(e)) cancelled.fetch_add(1);
        }
      });
    // Block most of them (every spawned child starts once the owner yields).
    ASSERT_TRUE(yield_until([&] { return started.load() == n; }));
    auto blocked = [&] { return iv.waiters() + mv.waiters() + ch_recv.waiters() + ch_send.waiters(); };
    ASSERT_TRUE(yield_until([&] { return blocked() == static_cast<std::size_t>(n / 5 * 4); }));
    g.request_stop();
    EXPECT_EQ(g.wait(), weft::task_group_status::canceled);
    EXPECT_EQ(cancelled.load(), n);
    EXPECT_EQ(blocked(), 0u);
    p.set_value("late");  // nobody waits any more
  });
}

// ---- weft::async with a token --------------------------------------------------

TEST_P(CancelTest, AsyncPassesATokenAndTheFutureRequestsStop) {
  weft::runtime rt(options());
  rt.run([&] {
    weft::channel<int> ch;
    auto f = weft::async(
        [&ch](std::stop_token t, int base) {
          int sum = base;
          try {
            for (;;) sum += *ch.recv(t);
          } catch (const std::system_error& e) {
            EXPECT_TRUE(is_cancelled(e));
          }
          return sum;
        },
        100);
    ch.send(1);
    ch.send(2);
    EXPECT_TRUE(f.get_stop_source().stop_possible());
    EXPECT_TRUE(f.request_stop());
    EXPECT_FALSE(f.request_stop());  // already requested
    EXPECT_EQ(f.get(), 103);

    auto plain = weft::async([] { return 1; });
    EXPECT_FALSE(plain.request_stop());  // no token: no source
    EXPECT_FALSE(plain.get_stop_source().stop_possible());
    EXPECT_EQ(plain.get(), 1);

    // With a run-time priority too.
    auto prio = weft::async(weft::priority::normal(), [](std::stop_token t) { return t.stop_possible(); });
    EXPECT_TRUE(prio.get());

    // A token-taking task stopped before it starts sees its token stopped.
    auto early = weft::async([](std::stop_token t) { return t.stop_requested(); });
    weft::shared_future<bool> shared = early.share();
    EXPECT_TRUE(shared.request_stop());
    const bool saw_stop = shared.get();
    if (workers() == 1) {
      EXPECT_TRUE(saw_stop);  // nobody could start it before the request
    }
  });
  // runtime::async from a plain thread too.
  auto f = rt.async([](std::stop_token t) {
    weft::this_task::sleep_until(std::chrono::steady_clock::time_point::max(), t);
  });
  EXPECT_TRUE(f.request_stop());  // before or after it starts sleeping: cancelled
  expect_cancelled([&] { f.get(); });
}

// ---- I/O: the token cancels the operation itself -------------------------------

TEST_P(CancelTest, IoGetWithTokenCancelsThePendingOperation) {
  weft::runtime rt(options());
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  rt.run([&] {
    char buf[16];
    std::stop_source src;
    auto reader = weft::async([&, t = src.get_token()] {
      std::error_code ec;
      (void)weft::io::read(fds[0], buf, sizeof buf).get(t, ec);
      return ec;
    });
    weft::this_task::sleep_for(2ms);  // not deciding the outcome: either order is cancelled
    src.request_stop();
    EXPECT_EQ(reader.get(), std::make_error_code(std::errc::operation_canceled));
    // The pipe still works: nothing was consumed.
    ASSERT_EQ(::write(fds[1], "ab", 2), 2);
    EXPECT_EQ(weft::io::read(fds[0], buf, sizeof buf).get(), 2u);
  });
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
