// weft::when_all, weft::when_any and then() (weft/when.hpp) over future,
// shared_future and io::io_future.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <future>
#include <list>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "test_util.hpp"
#include "weft/io.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;

struct boom : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class WhenTest : public Workers {};
WEFT_INSTANTIATE_WORKERS(WhenTest);

constexpr std::size_t npos = static_cast<std::size_t>(-1);

// A pipe closed at scope exit (the leak check counts descriptors).
struct test_pipe {
  int fd[2] = {-1, -1};
  test_pipe() { EXPECT_EQ(::pipe(fd), 0); }
  ~test_pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

static_assert(std::is_same_v<decltype(weft::when_all(std::declval<weft::future<int>>(),
                                                     std::declval<weft::shared_future<void>&>())),
                             weft::future<std::tuple<weft::future<int>, weft::shared_future<void>>>>);
static_assert(std::is_same_v<decltype(weft::when_any(std::declval<std::vector<weft::future<int>>&>().begin(),
                                                     std::declval<std::vector<weft::future<int>>&>().end())),
                             weft::future<weft::when_any_result<std::vector<weft::future<int>>>>>);

// ------------------------------------------------------------------ when_all

TEST_P(WhenTest, WhenAllVariadicMixed) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<std::string> p;
    weft::shared_future<std::string> sf = p.get_future().share();
    auto a = weft::async([] { return 1; });
    auto b = weft::async([] { throw boom("b"); });
    auto all = weft::when_all(std::move(a), sf, std::move(b));
    EXPECT_FALSE(a.valid());  // consumed
    EXPECT_TRUE(sf.valid());  // copied
    EXPECT_FALSE(all.is_ready());  // sf's promise is not set yet
    p.set_value("s");
    auto [fa, fs, fb] = all.get();
    EXPECT_TRUE(fa.is_ready());
    EXPECT_EQ(fa.get(), 1);
    EXPECT_EQ(fs.get(), "s");
    EXPECT_THROW(fb.get(), boom);  // exceptions stay in their own future
  });
}

TEST_P(WhenTest, WhenAllRangeFromTask) {
  weft::runtime rt(options());
  rt.run([] {
    std::vector<weft::future<int>> v;
    for (int i = 0; i < 100; ++i) v.push_back(weft::async([i] { return i * i; }));
    auto all = weft::when_all(v.begin(), v.end());
    for (auto& f : v) EXPECT_FALSE(f.valid());
    auto got = all.get();
    ASSERT_EQ(got.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)].get(), i * i);
  });
}

TEST_P(WhenTest, WhenAllFromPlainThread) {
  weft::runtime rt(options());
  std::vector<weft::future<int>> v;
  for (int i = 0; i < 50; ++i) v.push_back(rt.async([i] { return i; }));
  auto got = weft::when_all(v.begin(), v.end()).get();  // blocks this thread
  int sum = 0;
  for (auto& f : got) sum += f.get();
  EXPECT_EQ(sum, 49 * 50 / 2);
  // Promises set by plain threads, waited on by a plain thread.
  weft::promise<int> p1, p2;
  auto all = weft::when_all(p1.get_future(), p2.get_future());
  std::thread t([&] {
    p2.set_value(2);
    p1.set_value(1);
  });
  auto [f1, f2] = all.get();
  t.join();
  EXPECT_EQ(f1.get() + f2.get(), 3);
}

TEST_P(WhenTest, WhenAllSharedFutureRangeIsCopied) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<int> p;
    std::vector<weft::shared_future<int>> v(5, p.get_future().share());  // one state, 5 times
    auto all = weft::when_all(v.begin(), v.end());
    for (auto& f : v) EXPECT_TRUE(f.valid());
    weft::async([&p] { p.set_value(7); }).get();
    for (auto& f : all.get()) EXPECT_EQ(f.get(), 7);
  });
}

TEST_P(WhenTest, WhenAllEmpty) {
  weft::runtime rt(options());
  rt.run([] {
    auto none = weft::when_all();
    EXPECT_TRUE(none.is_ready());
    static_assert(std::is_same_v<decltype(none.get()), std::tuple<>>);
    none.get();
    std::vector<weft::future<int>> v;
    auto all = weft::when_all(v.begin(), v.end());
    EXPECT_TRUE(all.is_ready());
    EXPECT_TRUE(all.get().empty());
  });
}

TEST_P(WhenTest, InvalidInputThrowsBeforeConsuming) {
  weft::runtime rt(options());
  rt.run([] {
    auto good = weft::async([] { return 1; });
    weft::future<int> bad;
    EXPECT_THROW((void)weft::when_all(std::move(good), std::move(bad)), std::future_error);
    EXPECT_TRUE(good.valid());
    std::vector<weft::future<int>> v;
    v.push_back(weft::async([] { return 2; }));
    v.emplace_back();
    EXPECT_THROW((void)weft::when_any(v.begin(), v.end()), std::future_error);
    EXPECT_TRUE(v[0].valid());
    EXPECT_EQ(good.get() + v[0].get(), 3);
    weft::future<int> invalid;
    EXPECT_THROW((void)invalid.then([](weft::future<int>) { return 0; }), std::future_error);
  });
}

TEST_P(WhenTest, WhenAllManyInputsNoBlockedTasks) {
  weft::runtime rt(options());
  // 10,000 inputs in release, 2,000 under the sanitizers (~10x slower).
  const std::size_t n = static_cast<std::size_t>(scaled(10000, 2000));
  rt.run([&] {
    std::vector<weft::promise<std::size_t>> ps(n);
    std::vector<weft::future<std::size_t>> v;
    v.reserve(n);
    for (auto& p : ps) v.push_back(p.get_future());
    auto all = weft::when_all(v.begin(), v.end());
    // One allocation and n callbacks: setting the promises from another task
    // completes it; no task or fiber waits per input.
    weft::async([&ps] {
      for (std::size_t i = ps.size(); i-- > 0;) ps[i].set_value(i);
    }).get();
    auto got = all.get();
    std::size_t sum = 0;
    for (auto& f : got) sum += f.get();
    EXPECT_EQ(sum, n * (n - 1) / 2);
  });
  EXPECT_LE(rt.stats().fibers_created, 64u) << "a fiber per input?";
}

// ------------------------------------------------------------------ when_any

TEST_P(WhenTest, WhenAnyFirstReady) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<int> p0, p1, p2;
    std::vector<weft::future<int>> v;
    v.push_back(p0.get_future());
    v.push_back(p1.get_future());
    v.push_back(p2.get_future());
    auto any = weft::when_any(v.begin(), v.end());
    EXPECT_FALSE(any.is_ready());
    p1.set_value(11);
    auto r = any.get();
    EXPECT_EQ(r.index, 1u);
    ASSERT_EQ(r.futures.size(), 3u);
    EXPECT_EQ(r.futures[1].get(), 11);
    EXPECT_FALSE(r.futures[0].is_ready());
    p0.set_value(0);  // the losers' callbacks were taken back or run harmlessly
    p2.set_exception(std::make_exception_ptr(boom("p2")));
    EXPECT_EQ(r.futures[0].get(), 0);
    EXPECT_THROW(r.futures[2].get(), boom);
  });
}

TEST_P(WhenTest, WhenAnyAlreadyReadyPicksFirstReady) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<int> p0;
    weft::promise<void> p1;
    p1.set_value();
    auto f2 = weft::async([] { return 2; });
    f2.wait();
    auto r = weft::when_any(p0.get_future(), p1.get_future().share(), std::move(f2)).get();
    EXPECT_EQ(r.index, 1u);  // the first ready input in order
    std::get<1>(r.futures).get();
    EXPECT_EQ(std::get<2>(r.futures).get(), 2);
    p0.set_value(0);
    EXPECT_EQ(std::get<0>(r.futures).get(), 0);
  });
}

TEST_P(WhenTest, WhenAnyEmpty) {
  weft::runtime rt(options());
  rt.run([] {
    auto r = weft::when_any().get();
    EXPECT_EQ(r.index, npos);
    std::vector<weft::shared_future<int>> v;
    auto r2 = weft::when_any(v.begin(), v.end()).get();
    EXPECT_EQ(r2.index, npos);
    EXPECT_TRUE(r2.futures.empty());
  });
  // And from a plain thread.
  EXPECT_EQ(weft::when_any().get().index, npos);
}

TEST_P(WhenTest, WhenAnyRacingCompleters) {
  weft::runtime rt(options());
  // Many rounds of several inputs completed concurrently by tasks: exactly one
  // index, always a ready one; the losers complete later without touching the
  // freed composition (ASan checks).
  const int rounds = static_cast<int>(scaled(300, 60));
  rt.run([&] {
    for (int r = 0; r < rounds; ++r) {
      std::vector<weft::future<int>> v;
      for (int i = 0; i < 4; ++i) v.push_back(weft::async([i] { return i; }));
      auto res = weft::when_any(v.begin(), v.end()).get();
      ASSERT_LT(res.index, 4u);
      EXPECT_TRUE(res.futures[res.index].is_ready());
      EXPECT_EQ(res.futures[res.index].get(), static_cast<int>(res.index));
    }
  });
}

TEST_P(WhenTest, WhenAnyFromPlainThreads) {
  weft::runtime rt(options());
  weft::promise<int> a, b;
  auto any = weft::when_any(a.get_future(), b.get_future());
  std::thread t([&] { b.set_value(5); });
  auto r = any.get();
  t.join();
  EXPECT_EQ(r.index, 1u);
  EXPECT_EQ(std::get<1>(r.futures).get(), 5);
  a.set_value(1);
}

TEST_P(WhenTest, WhenAnyCompositionDroppedBeforeInputs) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<int> a, b;
    {
      auto any = weft::when_any(a.get_future(), b.get_future());
      auto all = weft::when_all(weft::async([] { return 1; }), weft::async([] { return 2; }));
    }
    // The compositions are gone; their callbacks still fire (a's set_value,
    // b's broken promise) on the states they keep alive (ASan checks).
    a.set_value(1);
  });
}

// ------------------------------------------------------------------ io

TEST_P(WhenTest, WhenAnyReadOrTimeout) {
  weft::runtime rt(options());
  test_pipe pp;
  rt.run([&] {
    char buf[8] = {};
    // Nothing written: the timer wins.
    auto r = weft::when_any(weft::io::read(pp.fd[0], buf, sizeof buf), weft::io::sleep_for(5ms)).get();
    EXPECT_EQ(r.index, 1u);
    std::get<1>(r.futures).get();
    auto& rd = std::get<0>(r.futures);
    EXPECT_FALSE(rd.is_ready());
    rd.cancel();
    std::error_code ec;
    rd.get(ec);
    EXPECT_EQ(ec, std::errc::operation_canceled);
    // Data written: the read wins against a long timer (cancelled after).
    ASSERT_EQ(::write(pp.fd[1], "hi", 2), 2);
    auto r2 = weft::when_any(weft::io::read(pp.fd[0], buf, sizeof buf), weft::io::sleep_for(60s)).get();
    EXPECT_EQ(r2.index, 0u);
    EXPECT_EQ(std::get<0>(r2.futures).get(), 2u);
    std::get<1>(r2.futures).cancel();
  });
}

TEST_P(WhenTest, FirstOfSeveralReads) {
  weft::runtime rt(options());
  test_pipe p0, p1, p2;
  rt.run([&] {
    char b0[4], b1[4], b2[4];
    std::vector<weft::io::io_future<std::size_t>> reads;
    reads.push_back(weft::io::read(p0.fd[0], b0, 4));
    reads.push_back(weft::io::read(p1.fd[0], b1, 4));
    reads.push_back(weft::io::read(p2.fd[0], b2, 4));
    auto any = weft::when_any(reads.begin(), reads.end());
    weft::async([&] { EXPECT_EQ(::write(p2.fd[1], "abc", 3), 3); }).get();
    auto r = any.get();
    EXPECT_EQ(r.index, 2u);
    EXPECT_EQ(r.futures[2].get(), 3u);
    for (auto& f : r.futures)
      if (f.valid()) f.cancel();
    // when_all over io and plain futures together.
    ASSERT_EQ(::write(p0.fd[1], "x", 1), 1);
    auto all = weft::when_all(weft::io::read(p0.fd[0], b0, 4), weft::async([] { return 3; })).get();
    EXPECT_EQ(std::get<0>(all).get(), 1u);
    EXPECT_EQ(std::get<1>(all).get(), 3);
  });
}

// The blocking backend leaves an operation that would block to its waiter:
// composing it starts a task that performs it. That task holds a worker while
// it waits (as get() would), so one worker could not also run the timer's:
// two workers at least.
TEST_P(WhenTest, WhenAnyOnTheBlockingBackend) {
  if (workers() < 2) GTEST_SKIP() << "a performing task holds the only worker (documented)";
  weft::options o = options();
  o.io = weft::io_backend::blocking;
  weft::runtime rt(o);
  test_pipe pp;
  rt.run([&] {
    char buf[8] = {};
    auto r = weft::when_any(weft::io::read(pp.fd[0], buf, sizeof buf), weft::io::sleep_for(5ms)).get();
    EXPECT_EQ(r.index, 1u);
    auto& rd = std::get<0>(r.futures);
    rd.cancel();  // its performer sees it within one poll slice
    std::error_code ec;
    rd.get(ec);
    EXPECT_EQ(ec, std::errc::operation_canceled);
    ASSERT_EQ(::write(pp.fd[1], "ok", 2), 2);
    auto n = weft::io::read(pp.fd[0], buf, sizeof buf).then([](weft::io::io_future<std::size_t> f) {
      return f.get();
    });
    EXPECT_EQ(n.get(), 2u);
  });
}

// ------------------------------------------------------------------ then

TEST_P(WhenTest, ThenChain) {
  weft::runtime rt(options());
  rt.run([] {
    auto f = weft::async([] { return 1; })
                 .then([](weft::future<int> x) { return x.get() + 1; })
                 .then([](weft::future<int> x) { return std::to_string(x.get()); })
                 .then([](weft::future<std::string> s) { return s.get() + "!"; });
    EXPECT_EQ(f.get(), "2!");
    // void both ways.
    std::atomic<int> seen{0};
    auto g = weft::async([] {}).then([&](weft::future<void> x) {
      x.get();
      seen = 1;
    });
    g.get();
    EXPECT_EQ(seen.load(), 1);
  });
}

TEST_P(WhenTest, ThenExceptions) {
  weft::runtime rt(options());
  rt.run([] {
    // The input's exception reaches fn through get(); fn's own goes to the result.
    auto f = weft::async([]() -> int { throw boom("in"); }).then([](weft::future<int> x) {
      try {
        return x.get();
      } catch (const boom&) {
        return -1;
      }
    });
    EXPECT_EQ(f.get(), -1);
    auto g = weft::async([] { return 1; }).then([](weft::future<int>) -> int { throw boom("fn"); });
    EXPECT_THROW(g.get(), boom);
  });
}

TEST_P(WhenTest, ThenOnReadyAndPendingAndShared) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<int> p;
    p.set_value(4);
    EXPECT_EQ(p.get_future().then([](weft::future<int> x) { return x.get() * 2; }).get(), 8);
    weft::promise<int> q;
    weft::shared_future<int> sf = q.get_future().share();
    auto a = sf.then([](weft::shared_future<int> x) { return x.get() + 1; });
    auto b = sf.then([](weft::shared_future<int> x) { return x.get() + 2; });
    EXPECT_TRUE(sf.valid());
    weft::async([&q] { q.set_value(10); }).get();
    EXPECT_EQ(a.get() + b.get(), 23);
    // then on when_all's future, and on an io_future.
    auto n = weft::when_all(weft::async([] { return 1; }), weft::async([] { return 2; }))
                 .then([](auto all) {
                   auto t = all.get();
                   return std::get<0>(t).get() + std::get<1>(t).get();
                 });
    EXPECT_EQ(n.get(), 3);
    auto slept = weft::io::sleep_for(1ms).then([](weft::io::io_future<void> s) {
      s.get();
      return 5;
    });
    EXPECT_EQ(slept.get(), 5);
  });
}

TEST_P(WhenTest, ThenOutsideRuntimeIsAnError) {
  weft::runtime rt(options());
  weft::promise<int> p;
  auto f = p.get_future();
  EXPECT_THROW((void)f.then([](weft::future<int> x) { return x.get(); }), std::logic_error);
  EXPECT_TRUE(f.valid());  // not consumed
  p.set_value(1);
  EXPECT_EQ(f.get(), 1);
}

TEST_P(WhenTest, ThenRunsAtTheFuturesLevel) {
  weft::runtime rt(options());
  rt.run([] {
    // The input of level 1 (an async task of that level): the continuation runs at 1.
    auto f = weft::async(weft::priority{1}, [] { return weft::this_task::current_priority().level(); });
    auto lv = f.then([](weft::future<unsigned> x) {
      EXPECT_EQ(x.get(), 1u);
      return weft::this_task::current_priority().level();
    });
    EXPECT_EQ(lv.get(), 1u);
    // A promise's future has no level: the level of the task calling then().
    auto g = weft::async(weft::priority{2}, [] {
      weft::promise<int> p;
      auto c = p.get_future().then([](weft::future<int>) { return weft::this_task::current_priority().level(); });
      p.set_value(0);
      return c.get();
    });
    EXPECT_EQ(g.get(), 2u);
  });
}

TEST_P(WhenTest, ThenManyContinuationsAndRuntimeDrain) {
  // The runtime's destructor waits for continuations still to run.
  const int n = static_cast<int>(scaled(2000, 400));
  std::atomic<int> ran{0};
  weft::promise<void> gate;
  {
    weft::runtime rt(options());
    rt.run([&] {
      weft::shared_future<void> g = gate.get_future().share();
      for (int i = 0; i < n; ++i) (void)g.then([&ran](weft::shared_future<void>) { ++ran; });
    });
    std::thread t([&] { gate.set_value(); });
    t.join();
  }
  EXPECT_EQ(ran.load(), n);
}

}  // namespace

// ------------------------------------------- deferred inputs (launch::deferred)

// A deferred future becomes ready only when waited on: composing one runs it
// in the composing caller (weft/when.hpp, compose_traits::prepare), so
// when_all/when_any/then on it complete instead of waiting for ever; a
// cancellable wait (wait(stop_token)) runs it too.
TEST_P(WhenTest, DeferredInputsRunWhenComposed) {
  weft::runtime rt(options());
  rt.run([] {
    std::atomic<int> runs{0};
    auto d1 = weft::async(std::launch::deferred, [&] { ++runs; return 1; });
    auto d2 = weft::async(std::launch::deferred, [&] { ++runs; return 2; }).share();
    auto all = weft::when_all(std::move(d1), d2);
    auto [f1, f2] = all.get();
    EXPECT_EQ(f1.get() + f2.get(), 3);
    auto d3 = weft::async(std::launch::deferred, [&] { ++runs; return 3; });
    EXPECT_EQ(std::move(d3).then([](weft::future<int> f) { return f.get() * 2; }).get(), 6);
    auto d4 = weft::async(std::launch::deferred, [&] { ++runs; return 4; });
    std::stop_source src;
    d4.wait(src.get_token());
    EXPECT_EQ(d4.get(), 4);
    EXPECT_EQ(runs.load(), 4);  // each ran exactly once
  });
}
