// weft::async, future, shared_future and promise.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

struct task_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class FutureTest : public Workers {};
WEFT_INSTANTIATE_WORKERS(FutureTest);

template <class F>
void expect_future_error(F&& f, std::future_errc code, const char* what) {
  try {
    f();
    ADD_FAILURE() << what << ": no exception";
  } catch (const std::future_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(code)) << what << ": " << e.what();
  } catch (...) {
    ADD_FAILURE() << what << ": wrong exception type";
  }
}

// ------------------------------------------------------------------- async

TEST_P(FutureTest, AsyncWithArguments) {
  weft::runtime rt(options());
  rt.run([] {
    std::string s = "x";
    int n = 3;
    auto f = weft::async([](std::string a, int b, const std::string& c) { return a + std::to_string(b) + c; },
                         s, n, std::string("z"));
    s = "changed";  // decay-copied at the call
    n = 100;
    EXPECT_EQ(f.get(), "x3z");
    auto g = weft::async([](std::unique_ptr<int> p, int k) { return *p * k; }, std::make_unique<int>(6), 7);
    EXPECT_EQ(g.get(), 42);
    auto h = weft::async(+[](int a, int b) { return a - b; }, 10, 4);  // function pointer
    EXPECT_EQ(h.get(), 6);
  });
}

TEST_P(FutureTest, AsyncVoidAndMoveOnly) {
  weft::runtime rt(options());
  rt.run([] {
    std::atomic<int> x{0};
    weft::future<void> v = weft::async([&] { x = 5; });
    v.get();
    EXPECT_EQ(x.load(), 5);
    weft::future<std::unique_ptr<int>> m = weft::async([] { return std::make_unique<int>(9); });
    std::unique_ptr<int> p = m.get();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, 9);
  });
}

TEST_P(FutureTest, AsyncExceptionRethrownByGet) {
  weft::runtime rt(options());
  rt.run([] {
    auto f = weft::async([]() -> int { throw task_error("boom"); });
    try {
      f.get();
      ADD_FAILURE() << "no exception";
    } catch (const task_error& e) {
      EXPECT_STREQ(e.what(), "boom");
    }
    EXPECT_FALSE(f.valid());
    auto v = weft::async([] { throw task_error("void"); });
    EXPECT_THROW(v.get(), task_error);
  });
}

TEST_P(FutureTest, ValidIsReadyWaitGet) {
  weft::runtime rt(options());
  rt.run([] {
    weft::future<int> def;
    EXPECT_FALSE(def.valid());
    auto f = weft::async([] { return 1; });
    EXPECT_TRUE(f.valid());
    f.wait();
    EXPECT_TRUE(f.is_ready());
    EXPECT_EQ(f.wait_for(0s), std::future_status::ready);
    EXPECT_EQ(f.wait_until(clk::now()), std::future_status::ready);
    EXPECT_TRUE(f.valid());
    EXPECT_EQ(f.get(), 1);
    EXPECT_FALSE(f.valid());
  });
}

TEST_P(FutureTest, ManyChildrenAllGotten) {
  weft::runtime rt(options());
  long got = rt.run([] {
    std::vector<weft::future<long>> fs;
    for (long i = 0; i < 2000; ++i) fs.push_back(weft::async([i] { return i; }));
    long s = 0;
    // Get in an order different from LIFO to exercise the non-inline path.
    for (std::size_t k = 0; k < fs.size(); k += 2) s += fs[k].get();
    for (std::size_t k = 1; k < fs.size(); k += 2) s += fs[k].get();
    return s;
  });
  EXPECT_EQ(got, 1999L * 2000 / 2);
}

// Futures can be moved (into other tasks) and move-assigned.
TEST_P(FutureTest, MoveFutureToAnotherTask) {
  weft::runtime rt(options());
  rt.run([] {
    weft::future<int> a = weft::async([] { return 5; });
    weft::future<int> b;
    b = std::move(a);
    EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move)
    auto c = weft::async([f = std::move(b)]() mutable { return f.get() * 2; });
    EXPECT_EQ(c.get(), 10);
    // Move-assigning over a valid future drops the old state without blocking.
    weft::promise<int> never;
    weft::future<int> d = never.get_future();
    d = weft::async([] { return 3; });
    EXPECT_EQ(d.get(), 3);
  });
}

// Dropping a future never blocks, unlike std::async's.
TEST_P(FutureTest, DroppingAFutureDoesNotBlock) {
  std::atomic<int> got{0};
  {
    weft::runtime rt(options());
    rt.run([&] {
      auto iv = std::make_shared<weft::ivar<int>>();
      { auto dropped = weft::async([iv, &got] { got = iv->get(); }); }  // would deadlock if it waited
      iv->put(8);
    });
  }  // the runtime waits for the detached task
  EXPECT_EQ(got.load(), 8);
}

// ------------------------------------------------------------- misuse errors

TEST(FutureErrors, DefaultConstructedFuture) {
  weft::future<int> f;
  expect_future_error([&] { f.get(); }, std::future_errc::no_state, "get");
  expect_future_error([&] { f.wait(); }, std::future_errc::no_state, "wait");
  expect_future_error([&] { (void)f.is_ready(); }, std::future_errc::no_state, "is_ready");
  expect_future_error([&] { (void)f.wait_for(1ms); }, std::future_errc::no_state, "wait_for");
  weft::shared_future<int> s;
  EXPECT_FALSE(s.valid());
  expect_future_error([&] { (void)s.get(); }, std::future_errc::no_state, "shared get");
  weft::future<void> v;
  expect_future_error([&] { v.get(); }, std::future_errc::no_state, "void get");
}

TEST_P(FutureTest, GetTwiceIsNoState) {
  weft::runtime rt(options());
  rt.run([] {
    auto f = weft::async([] { return 1; });
    EXPECT_EQ(f.get(), 1);
    expect_future_error([&] { f.get(); }, std::future_errc::no_state, "second get");
    auto e = weft::async([]() -> int { throw task_error("x"); });
    EXPECT_THROW(e.get(), task_error);
    expect_future_error([&] { e.get(); }, std::future_errc::no_state, "get after exception");
  });
}

TEST(PromiseErrors, BrokenPromise) {
  weft::future<int> f;
  {
    weft::promise<int> p;
    f = p.get_future();
  }
  ASSERT_TRUE(f.is_ready());
  expect_future_error([&] { f.get(); }, std::future_errc::broken_promise, "broken");
  // Through a moved-to promise only the last owner breaks it.
  weft::future<void> g;
  {
    weft::promise<void> p;
    g = p.get_future();
    weft::promise<void> q(std::move(p));
    q.set_value();
  }
  EXPECT_NO_THROW(g.get());
}

TEST(PromiseErrors, GetFutureTwice) {
  weft::promise<int> p;
  auto f = p.get_future();
  expect_future_error([&] { (void)p.get_future(); }, std::future_errc::future_already_retrieved,
                      "get_future twice");
  p.set_value(1);
  EXPECT_EQ(f.get(), 1);
}

TEST(PromiseErrors, SetTwice) {
  weft::promise<int> p;
  auto f = p.get_future();
  p.set_value(1);
  expect_future_error([&] { p.set_value(2); }, std::future_errc::promise_already_satisfied, "set_value twice");
  expect_future_error([&] { p.set_exception(std::make_exception_ptr(task_error("e"))); },
                      std::future_errc::promise_already_satisfied, "set_exception after set_value");
  EXPECT_EQ(f.get(), 1);

  weft::promise<void> q;
  q.set_exception(std::make_exception_ptr(task_error("first")));
  expect_future_error([&] { q.set_value(); }, std::future_errc::promise_already_satisfied,
                      "set_value after set_exception");
  auto g = q.get_future();  // may be retrieved after satisfaction
  EXPECT_THROW(g.get(), task_error);
}

TEST(PromiseErrors, MovedFromPromiseHasNoState) {
  weft::promise<int> p;
  weft::promise<int> q(std::move(p));
  expect_future_error([&] { (void)p.get_future(); }, std::future_errc::no_state, "get_future");  // NOLINT
  expect_future_error([&] { p.set_value(1); }, std::future_errc::no_state, "set_value");
  auto f = q.get_future();
  q.set_value(4);
  EXPECT_EQ(f.get(), 4);
}

TEST(PromiseErrors, SetExceptionNullRejected) {
  weft::promise<int> p;
  EXPECT_THROW(p.set_exception(nullptr), std::invalid_argument);
  p.set_value(1);  // still unsatisfied before
  EXPECT_EQ(p.get_future().get(), 1);
}

// ----------------------------------------------------------------- promise

TEST_P(FutureTest, PromiseSetValueAndException) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<std::string> p;
    auto f = p.get_future();
    EXPECT_FALSE(f.is_ready());
    p.set_value("hello");
    EXPECT_TRUE(f.is_ready());
    EXPECT_EQ(f.get(), "hello");

    weft::promise<int> e;
    auto fe = e.get_future();
    e.set_exception(std::make_exception_ptr(task_error("pe")));
    EXPECT_THROW(fe.get(), task_error);

    weft::promise<std::unique_ptr<int>> m;
    auto fm = m.get_future();
    m.set_value(std::make_unique<int>(12));
    EXPECT_EQ(*fm.get(), 12);
  });
}

// 1 worker: A waits on a promise that B — started after A blocked — sets. A
// must suspend and free the worker for B.
TEST_P(FutureTest, GetSuspendsUntilLaterTaskSetsPromise) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [] {
    weft::promise<int> p;
    weft::future<int> f = p.get_future();
    std::atomic<bool> a_waiting{false};
    auto a = weft::async([&] {
      a_waiting = true;
      return f.get() + 1;
    });
    ASSERT_TRUE(yield_until([&] { return a_waiting.load(); })) << "A never started";
    auto b = weft::async([&] { p.set_value(41); });
    b.get();
    EXPECT_EQ(a.get(), 42);
  });
}

// Same with fork_join: f (which always starts first on the calling worker)
// blocks until g sets the promise.
TEST_P(FutureTest, GetSuspendsInForkJoinBranch) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [] {
    for (int i = 0; i < 50; ++i) {
      weft::promise<int> p;
      weft::future<int> f = p.get_future();
      auto [a, b] = weft::fork_join([&] { return f.get(); }, [&] { p.set_value(i); return 1; });
      ASSERT_EQ(a + b, i + 1);
    }
  });
}

TEST_P(FutureTest, WaitForTimesOutOnUnsetPromiseThenReady) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<int> p;
    auto f = p.get_future();
    auto t0 = clk::now();
    EXPECT_EQ(f.wait_for(30ms), std::future_status::timeout);
    EXPECT_GE(clk::now() - t0, 30ms);
    EXPECT_EQ(f.wait_until(clk::now() + 10ms), std::future_status::timeout);
    EXPECT_EQ(f.wait_until(std::chrono::system_clock::now() + 10ms), std::future_status::timeout);
    EXPECT_EQ(f.wait_for(0s), std::future_status::timeout);
    EXPECT_EQ(f.wait_for(-5ms), std::future_status::timeout);
    EXPECT_FALSE(f.is_ready());
    EXPECT_TRUE(f.valid());
    // Now set it from another task while we are in a (long) timed wait.
    auto setter = weft::async([&] {
      weft::this_task::sleep_for(5ms);
      p.set_value(3);
    });
    auto t1 = clk::now();
    EXPECT_EQ(f.wait_for(60s), std::future_status::ready);
    EXPECT_LT(clk::now() - t1, 30s) << "timed wait was not woken by set_value";
    EXPECT_EQ(f.get(), 3);
    setter.get();
  });
}

// Many timed waits racing with completion (the timer/completer hand-off).
TEST_P(FutureTest, TimedWaitsRaceWithCompletion) {
  weft::runtime rt(options());
  constexpr int kRounds = static_cast<int>(scaled(300, 100));
  rt.run([] {
    int ready = 0;
    for (int i = 0; i < kRounds; ++i) {
      weft::promise<int> p;
      auto sf = p.get_future().share();
      weft::task_group g;
      std::atomic<int> statuses{0};
      for (int k = 0; k < 4; ++k) {
        g.spawn([&, k] {
          auto st = sf.wait_for(std::chrono::microseconds(50 * k));
          if (st == std::future_status::ready) statuses.fetch_add(1);
        });
      }
      g.spawn([&] { p.set_value(i); });
      g.sync();
      ASSERT_EQ(sf.get(), i);
      ready += statuses.load();
    }
    // Whatever the timing, every call returned a status and the state is sane.
    EXPECT_GE(ready, 0);
  });
}

// -------------------------------------------------------------- shared_future

TEST_P(FutureTest, SharedFutureGetManyTimesFromSeveralTasks) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<std::vector<int>> p;
    weft::shared_future<std::vector<int>> sf = p.get_future().share();
    std::atomic<int> ok{0};
    weft::task_group g;
    for (int i = 0; i < 64; ++i) {
      g.spawn([sf, &ok] {  // copies
        const std::vector<int>& a = sf.get();
        const std::vector<int>& b = sf.get();
        if (&a == &b && a.size() == 3 && a[2] == 3) ok.fetch_add(1);
      });
    }
    g.spawn([&] { p.set_value(std::vector<int>{1, 2, 3}); });
    g.sync();
    EXPECT_EQ(ok.load(), 64);
    EXPECT_TRUE(sf.valid());
    EXPECT_EQ(sf.get().size(), 3u);
  });
}

TEST_P(FutureTest, ShareInvalidatesFuture) {
  weft::runtime rt(options());
  rt.run([] {
    auto f = weft::async([] { return 2; });
    auto sf = f.share();
    EXPECT_FALSE(f.valid());
    EXPECT_TRUE(sf.valid());
    weft::shared_future<int> copy = sf;
    weft::shared_future<int> moved = std::move(copy);
    EXPECT_FALSE(copy.valid());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(moved.get() + sf.get(), 4);
    weft::shared_future<int> assigned;
    assigned = moved;
    EXPECT_EQ(assigned.get(), 2);
  });
}

TEST_P(FutureTest, SharedFutureMoveOnlyAndException) {
  weft::runtime rt(options());
  rt.run([] {
    weft::shared_future<std::unique_ptr<int>> m = weft::async([] { return std::make_unique<int>(5); }).share();
    const std::unique_ptr<int>& p1 = m.get();
    const std::unique_ptr<int>& p2 = m.get();
    EXPECT_EQ(p1.get(), p2.get());
    EXPECT_EQ(*p1, 5);
    weft::shared_future<int> e = weft::async([]() -> int { throw task_error("shared"); }).share();
    EXPECT_THROW((void)e.get(), task_error);
    EXPECT_THROW((void)e.get(), task_error);  // every get rethrows
    EXPECT_TRUE(e.valid());
  });
}

TEST_P(FutureTest, SharedFutureVoid) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<void> p;
    weft::shared_future<void> sf = p.get_future().share();
    static_assert(std::is_void_v<decltype(sf.get())>);
    std::atomic<int> ok{0};
    weft::task_group g;
    for (int i = 0; i < 32; ++i) {
      g.spawn([sf, &ok] {
        sf.get();
        sf.get();
        ok.fetch_add(1);
      });
    }
    g.spawn([&] { p.set_value(); });
    g.sync();
    EXPECT_EQ(ok.load(), 32);
    weft::shared_future<void> v = weft::async([] {}).share();
    v.get();
    v.get();
    weft::shared_future<void> e = weft::async([] { throw task_error("void"); }).share();
    EXPECT_THROW(e.get(), task_error);
    EXPECT_THROW(e.get(), task_error);
  });
}

// --------------------------------------------------------- fib with futures

long fib_async(int n) {
  if (n < 2) return n;
  weft::future<long> a = weft::async(fib_async, n - 1);
  long b = fib_async(n - 2);
  return a.get() + b;
}

class FibTest : public Workers {};
INSTANTIATE_TEST_SUITE_P(Workers, FibTest,
                         ::testing::Values(config{1, weft::steal_policy::proactive},
                                           config{2, weft::steal_policy::proactive},
                                           config{1, weft::steal_policy::parsimonious},
                                           config{2, weft::steal_policy::parsimonious}),
                         config_name);

TEST_P(FibTest, Fib30WithFuturesNoCutoff) {
  // fib(30) creates 1.6 million tasks; under ASan/TSan that takes minutes, so
  // sanitizer builds compute fib(25) (121,392 tasks), same code paths.
  constexpr int n = static_cast<int>(scaled(30, 25));
  constexpr long expect = n == 30 ? 832040 : 75025;
  weft::runtime rt(options());
  auto t0 = clk::now();
  long got = rt.run([] { return fib_async(n); });
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count();
  EXPECT_EQ(got, expect);
  std::cout << "[ info     ] fib(" << n << ") with futures on " << GetParam() << ": " << ms
            << " ms, stats: fibers_created=" << rt.stats().fibers_created
            << " suspended=" << rt.stats().fibers_suspended << " steals=" << rt.stats().steals << std::endl;
  RecordProperty("fib_ms", static_cast<int>(ms));
}

// ---------------------------------------------- plain threads and futures

TEST_P(FutureTest, GetFromPlainThread) {
  weft::runtime rt(options());
  weft::future<int> f = rt.async([] {
    weft::this_task::sleep_for(2ms);
    return 21;
  });
  int got = 0;
  std::thread t([&] { got = f.get() * 2; });
  t.join();
  EXPECT_EQ(got, 42);
}

TEST_P(FutureTest, PlainThreadWaitForTimesOut) {
  weft::runtime rt(options());
  weft::promise<int> p;
  weft::future<int> f = p.get_future();
  std::future_status st1{}, st2{};
  clk::duration waited{};
  std::atomic<bool> timed_out_once{false};
  int value = 0;
  std::thread t([&] {
    auto t0 = clk::now();
    st1 = f.wait_for(20ms);  // nobody sets p before this returns
    waited = clk::now() - t0;
    timed_out_once = true;
    st2 = f.wait_for(60s);
    value = f.get();
  });
  ASSERT_TRUE(spin_until([&] { return timed_out_once.load(); }, 60s));
  rt.run([&] {
    weft::this_task::sleep_for(5ms);
    p.set_value(17);
  });
  t.join();
  EXPECT_EQ(st1, std::future_status::timeout);
  EXPECT_GE(waited, 20ms);
  EXPECT_EQ(st2, std::future_status::ready);
  EXPECT_EQ(value, 17);
}

// A task blocked in get() is woken by a plain thread setting the promise.
TEST_P(FutureTest, PlainThreadFulfilsPromiseAwaitedByTask) {
  weft::runtime rt(options());
  weft::promise<int> p;
  weft::future<int> f = p.get_future();
  std::atomic<bool> waiting{false};
  auto r = rt.async([&] {
    waiting = true;
    return f.get() + 1;
  });
  std::thread t([&] {
    spin_until([&] { return waiting.load(); });
    p.set_value(99);
  });
  EXPECT_EQ(r.get(), 100);
  t.join();
}

TEST_P(FutureTest, SharedFutureFromManyPlainThreadsAndTasks) {
  weft::runtime rt(options());
  weft::promise<int> p;
  weft::shared_future<int> sf = p.get_future().share();
  std::atomic<int> sum{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) ts.emplace_back([sf, &sum] { sum += sf.get(); });
  std::vector<weft::future<void>> tasks;
  for (int i = 0; i < 16; ++i) tasks.push_back(rt.async([sf, &sum] { sum += sf.get(); }));
  p.set_value(3);
  for (auto& t : ts) t.join();
  for (auto& t : tasks) t.get();
  EXPECT_EQ(sum.load(), 20 * 3);
}

// wait_for inside a task with the promise never set: times out, and the
// worker was free meanwhile (with 1 worker, g can only run while f's timed
// wait is suspended).
TEST_P(FutureTest, TimedWaitInTaskDoesNotBlockWorker) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<int> never;
    auto f = never.get_future();
    std::atomic<bool> other_ran{false};
    auto [res, x] = weft::fork_join(
        [&] {
          auto s = f.wait_for(200ms);
          return std::make_pair(s, other_ran.load());
        },
        [&] { other_ran = true; return 0; });
    (void)x;
    EXPECT_EQ(res.first, std::future_status::timeout);
    EXPECT_TRUE(res.second) << "the other branch did not run during a 200 ms timed wait";
    EXPECT_FALSE(f.is_ready());
  });
}

// ------------------------------------------------ unobserved exceptions

// An async task's exception that nobody observes (its future dropped without
// a get() that rethrows it) is discarded, as std::future does, and counted in
// runtime::statistics::unobserved_exceptions (docs/api.md).
TEST_P(FutureTest, UnobservedExceptionsAreCounted) {
  auto rt = std::make_unique<weft::runtime>(options());
  const auto base = rt->stats().unobserved_exceptions;
  std::atomic<int> ran{0};
  run_bounded(rt, [&] {
    // Dropped at once (fire and forget): counted when the task ends.
    for (int i = 0; i < 3; ++i) (void)weft::async([&] { ++ran; throw task_error("unobserved"); });
    // Dropped after it finished, waited but never got: counted at the drop.
    {
      auto f = weft::async([] { throw task_error("unobserved"); });
      f.wait();
    }
    // Observed: get() rethrows, not counted.
    auto g = weft::async([] { throw task_error("unobserved"); });
    EXPECT_THROW(g.get(), task_error);
    // Shared: one get() of several copies observes it.
    weft::shared_future<void> s = weft::async([] { throw task_error("unobserved"); }).share();
    auto copy = s;
    EXPECT_THROW(copy.get(), task_error);
    // No exception: nothing to count.
    (void)weft::async([] { return 1; });
    // A promise's exception is the setter's business: not counted.
    {
      weft::promise<int> p;
      auto pf = p.get_future();
      p.set_exception(std::make_exception_ptr(task_error("unobserved")));
    }
  });
  ASSERT_TRUE(spin_until([&] { return ran.load() == 3; }));
  // The fire-and-forget tasks may still be releasing their state.
  ASSERT_TRUE(spin_until([&] { return rt->stats().unobserved_exceptions - base >= 4; }, 10s));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(rt->stats().unobserved_exceptions - base, 4u);
}

// A future that outlives its runtime may be dropped unobserved afterwards:
// nothing is counted anywhere, nothing crashes.
TEST(FutureUnobserved, DroppedAfterTheRuntimeIsGone) {
  weft::future<int> f;
  {
    weft::runtime rt(make_options(2));
    f = rt.async([]() -> int { throw task_error("unobserved"); });
    f.wait();
  }
  weft::runtime other(make_options(1));
  f = weft::future<int>();  // drops the last reference
  EXPECT_EQ(other.stats().unobserved_exceptions, 0u);
}

// Many timed waits on one event that all time out: each timed-out waiter
// leaves the event's waiter list in O(1). (A scan of the list made this
// quadratic: 20,000 waiters took 21 s, 40,000 took 131 s.)
TEST_P(FutureTest, ManyTimedWaitsOnOneEventTimeOutInLinearTime) {
  // TSan counts each blocked fiber as a thread (limit 8,128).
  const int n = static_cast<int>(tsan_build ? 2000 : scaled(20000, 5000));
  auto rt = std::make_unique<weft::runtime>(options());
  weft::promise<int> never;
  weft::shared_future<int> f = never.get_future().share();
  std::atomic<int> timed_out{0};
  std::chrono::steady_clock::duration after_deadline{};
  run_bounded(rt, [&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300 + n / 20);
    weft::task_group g;
    for (int i = 0; i < n; ++i)
      g.spawn([&] {
        if (f.wait_until(deadline) == std::future_status::timeout) ++timed_out;
      });
    g.sync();
    after_deadline = std::chrono::steady_clock::now() - deadline;
  }, std::chrono::seconds(120));
  EXPECT_EQ(timed_out.load(), n);
  EXPECT_LT(after_deadline, std::chrono::seconds(sanitizer_build ? 30 : 5))
      << n << " timed-out waiters took this long to leave one event";
  never.set_value(0);
}

}  // namespace
