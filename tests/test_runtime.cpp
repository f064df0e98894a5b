// weft::runtime: run(), async from outside, configuration, lifetime.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <type_traits>
#include <vector>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;

struct test_error : std::runtime_error {
  explicit test_error(int c) : std::runtime_error("test_error " + std::to_string(c)), code(c) {}
  int code;
};

class RuntimeTest : public Workers {};
WEFT_INSTANTIATE_WORKERS(RuntimeTest);

TEST_P(RuntimeTest, ReportsConfiguredWorkerCount) {
  weft::runtime rt(options());
  EXPECT_EQ(rt.worker_count(), workers());
  EXPECT_EQ(rt.configuration().workers, workers());
}

TEST_P(RuntimeTest, RunReturnsValue) {
  weft::runtime rt(options());
  static_assert(std::is_same_v<decltype(rt.run([] { return 42; })), int>);
  EXPECT_EQ(rt.run([] { return 42; }), 42);
  EXPECT_EQ(rt.run([] { return std::string("weft"); }), "weft");
}

TEST_P(RuntimeTest, RunReturnsMoveOnlyValue) {
  weft::runtime rt(options());
  std::unique_ptr<int> p = rt.run([] { return std::make_unique<int>(7); });
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
}

TEST_P(RuntimeTest, RunVoid) {
  weft::runtime rt(options());
  int side_effect = 0;
  static_assert(std::is_void_v<decltype(rt.run([] {}))>);
  rt.run([&] { side_effect = 5; });
  EXPECT_EQ(side_effect, 5);
}

TEST_P(RuntimeTest, RunExecutesOnAWorker) {
  weft::runtime rt(options());
  int id = rt.run([] { return weft::this_task::worker_id(); });
  EXPECT_GE(id, 0);
  EXPECT_LT(id, static_cast<int>(workers()));
  EXPECT_EQ(weft::this_task::worker_id(), -1);
}

TEST_P(RuntimeTest, RunRethrowsException) {
  weft::runtime rt(options());
  try {
    rt.run([]() -> int { throw test_error(17); });
    FAIL() << "run() did not rethrow";
  } catch (const test_error& e) {
    EXPECT_EQ(e.code, 17);
  }
  // Non-std exception types travel too.
  EXPECT_THROW(rt.run([] { throw 3; }), int);
  // The runtime remains usable after a failed run.
  EXPECT_EQ(rt.run([] { return 1; }), 1);
}

TEST_P(RuntimeTest, RunManyTimesOnOneRuntime) {
  weft::runtime rt(options());
  for (int i = 0; i < 200; ++i) ASSERT_EQ(rt.run([i] { return i * 2; }), i * 2);
}

TEST_P(RuntimeTest, SeveralRuntimesOneAfterAnother) {
  for (int i = 0; i < 20; ++i) {
    weft::runtime rt(options());
    int r = rt.run([i] {
      auto [a, b] = weft::fork_join([i] { return i; }, [i] { return i + 1; });
      return a + b;
    });
    ASSERT_EQ(r, 2 * i + 1) << "runtime #" << i;
  }
}

TEST_P(RuntimeTest, TwoRuntimesAlive) {
  weft::runtime a(options());
  weft::runtime b(make_options(2));
  EXPECT_EQ(a.run([] { return 1; }) + b.run([] { return 2; }), 3);
}

// run() from a task of another runtime submits to that runtime and suspends the
// calling task until the result is ready.
TEST_P(RuntimeTest, RunOnOtherRuntimeFromInsideTask) {
  weft::runtime a(options());
  weft::runtime b(make_options(2));
  int r = a.run([&] {
    int inner = b.run([] { return weft::this_task::worker_id() >= 0 ? 40 : -1000; });
    return inner + 2;
  });
  EXPECT_EQ(r, 42);
}

// A callable that counts how often it is copied or moved: run() from inside a
// task must call f in place ("simply calls f() in that task"), not submit a
// decay-copied task.
struct counting_callable {
  std::atomic<int>* copies;
  explicit counting_callable(std::atomic<int>* c) : copies(c) {}
  counting_callable(const counting_callable& o) : copies(o.copies) { ++*copies; }
  counting_callable(counting_callable&& o) noexcept : copies(o.copies) { ++*copies; }
  int operator()() const { return weft::this_task::worker_id(); }
};

TEST_P(RuntimeTest, RunFromInsideTaskCallsInline) {
  weft::runtime rt(options());
  std::atomic<int> copies{0};
  rt.run([&] {
    counting_callable f(&copies);
    int before = copies.load();
    auto tid = std::this_thread::get_id();
    int wid = weft::this_task::worker_id();
    int got = rt.run(f);  // lvalue: an inline call copies nothing
    EXPECT_EQ(copies.load(), before) << "nested run() copied the callable: not inline";
    EXPECT_EQ(got, wid);
    EXPECT_EQ(std::this_thread::get_id(), tid);
    // A nested run returning a value and rethrowing still works.
    EXPECT_EQ(rt.run([] { return 9; }), 9);
    EXPECT_THROW(rt.run([]() -> int { throw test_error(1); }), test_error);
  });
}

TEST_P(RuntimeTest, AsyncFromOutsideWithArguments) {
  weft::runtime rt(options());
  std::string s = "abc";
  auto f = rt.async([](std::string x, int n) { return x + std::to_string(n); }, s, 5);
  s = "mutated";  // arguments are decay-copied at the call
  EXPECT_EQ(f.get(), "abc5");
  auto g = rt.async([](std::unique_ptr<int> p) { return *p + 1; }, std::make_unique<int>(41));
  EXPECT_EQ(g.get(), 42);
}

TEST_P(RuntimeTest, RuntimeAsyncFromInsideOwnTask) {
  weft::runtime rt(options());
  int r = rt.run([&] {
    auto a = rt.async([](int x) { return x * 2; }, 20);
    auto b = rt.async([&] { return rt.async([] { return 2; }).get(); });
    return a.get() + b.get();
  });
  EXPECT_EQ(r, 42);
}

TEST_P(RuntimeTest, ManyConcurrentAsyncsFromOutside) {
  weft::runtime rt(options());
  std::vector<weft::future<int>> fs;
  for (int i = 0; i < 1000; ++i) fs.push_back(rt.async([i] { return i * i; }));
  long long sum = 0, expect = 0;
  for (int i = 0; i < 1000; ++i) {
    sum += fs[static_cast<std::size_t>(i)].get();
    expect += static_cast<long long>(i) * i;
  }
  EXPECT_EQ(sum, expect);
}

TEST_P(RuntimeTest, AsyncFromSeveralExternalThreads) {
  weft::runtime rt(options());
  constexpr int kThreads = 4, kPerThread = 200;
  std::atomic<long> total{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      long local = 0;
      for (int i = 0; i < kPerThread; ++i) local += rt.async([t, i] { return t * 1000 + i; }).get();
      total += local;
    });
  }
  for (auto& t : ts) t.join();
  long expect = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i) expect += t * 1000 + i;
  EXPECT_EQ(total.load(), expect);
}

// The destructor waits for detached asyncs, including ones that suspend.
TEST_P(RuntimeTest, DestructorWaitsForDetachedAsyncs) {
  std::atomic<int> done{0};
  {
    weft::runtime rt(options());
    for (int i = 0; i < 50; ++i) {
      (void)rt.async([&done] {
        weft::this_task::sleep_for(5ms);
        weft::this_task::yield();
        done.fetch_add(1);
      });
    }
  }
  EXPECT_EQ(done.load(), 50);
}

// The issue's scenario: A blocks on a promise that B, started after A, fulfils
// after a sleep; the runtime is destroyed without waiting on any future. The
// destructor must wait for both and return.
TEST_P(RuntimeTest, DestroyedWhileTaskBlockedOnLaterTask) {
  std::atomic<bool> a_started{false}, a_done{false}, b_done{false};
  std::atomic<int> a_value{0};
  {
    weft::runtime rt(options());
    weft::promise<int> p;
    weft::future<int> fut = p.get_future();
    (void)rt.async([&, f = std::move(fut)]() mutable {
      a_started = true;
      a_value = f.get();
      a_done = true;
    });
    (void)rt.async([&, p = std::move(p)]() mutable {
      weft::this_task::sleep_for(50ms);
      p.set_value(99);
      b_done = true;
    });
  }  // ~runtime
  EXPECT_TRUE(a_started.load());
  EXPECT_TRUE(a_done.load());
  EXPECT_TRUE(b_done.load());
  EXPECT_EQ(a_value.load(), 99);
}

// Same, with nested blocking inside the runtime: a chain of tasks each waiting
// for the next, fulfilled in reverse from the last one.
TEST_P(RuntimeTest, DestroyedWithChainOfBlockedTasks) {
  constexpr int kChain = 64;
  std::atomic<int> finished{0};
  {
    weft::runtime rt(options());
    auto ivs = std::make_shared<std::vector<weft::ivar<int>>>(kChain + 1);
    for (int i = 0; i < kChain; ++i) {
      (void)rt.async([ivs, i, &finished] {
        int v = (*ivs)[static_cast<std::size_t>(i + 1)].get();
        (*ivs)[static_cast<std::size_t>(i)].put(v + 1);
        finished.fetch_add(1);
      });
    }
    (void)rt.async([ivs] { (*ivs)[kChain].put(0); });
  }
  EXPECT_EQ(finished.load(), kChain);
}

TEST(RuntimeOptions, DefaultStackSize) {
  weft::runtime rt(make_options(1));
  std::size_t expect = sanitizer_build ? 4u << 20 : 1u << 20;
  EXPECT_EQ(rt.stack_size(), expect);
}

TEST(RuntimeOptions, StackSizeRoundedUpToPages) {
  weft::runtime rt(make_options(1, 100000));
  long page = sysconf(_SC_PAGESIZE);
  ASSERT_GT(page, 0);
  EXPECT_GE(rt.stack_size(), 100000u);
  EXPECT_EQ(rt.stack_size() % static_cast<std::size_t>(page), 0u);
  EXPECT_LT(rt.stack_size(), 100000u + static_cast<std::size_t>(page));
  // And tasks run (and block) on it.
  int r = rt.run([] {
    weft::promise<int> p;
    auto f = p.get_future();
    auto a = weft::async([&] { return f.get(); });
    p.set_value(3);
    return a.get();
  });
  EXPECT_EQ(r, 3);
}

TEST(RuntimeOptions, ZeroWorkersUsesEnvironment) {
  scoped_env env("WEFT_WORKERS", "3");
  weft::runtime rt(make_options(0));
  EXPECT_EQ(rt.worker_count(), 3u);
  std::vector<int> ids = rt.run([] {
    std::vector<int> v(64);
    weft::parallel_for(0, 64, 1, [&](int i) { v[static_cast<std::size_t>(i)] = weft::this_task::worker_id(); });
    return v;
  });
  for (int id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 3);
  }
}

TEST(RuntimeOptions, DefaultConstructorUsesEnvironment) {
  scoped_env env("WEFT_WORKERS", "2");
  weft::runtime rt;
  EXPECT_EQ(rt.worker_count(), 2u);
}

TEST(RuntimeOptions, EnvironmentMayOversubscribe) {
  scoped_env env("WEFT_WORKERS", "12");
  weft::runtime rt;
  EXPECT_EQ(rt.worker_count(), 12u);
}

TEST(RuntimeOptions, UnsetEnvironmentUsesHardwareConcurrency) {
  scoped_env env("WEFT_WORKERS", nullptr);
  weft::runtime rt;
  unsigned hc = std::thread::hardware_concurrency();
  EXPECT_EQ(rt.worker_count(), hc == 0 ? 1u : hc);
}

TEST(RuntimeOptions, ExplicitWorkersOverrideEnvironment) {
  scoped_env env("WEFT_WORKERS", "3");
  weft::runtime rt(make_options(2));
  EXPECT_EQ(rt.worker_count(), 2u);
}

TEST(RuntimeOptions, ExplicitWorkersIgnoreBadEnvironment) {
  scoped_env env("WEFT_WORKERS", "abc");
  EXPECT_NO_THROW({
    weft::runtime rt(make_options(2));
    EXPECT_EQ(rt.worker_count(), 2u);
  });
}

class BadWorkersEnv : public ::testing::TestWithParam<const char*> {};

TEST_P(BadWorkersEnv, ThrowsConfigurationError) {
  scoped_env env("WEFT_WORKERS", GetParam());
  try {
    weft::runtime rt;
    FAIL() << "WEFT_WORKERS='" << GetParam() << "' accepted, worker_count()="
           << rt.worker_count();
  } catch (const weft::configuration_error& e) {
    EXPECT_NE(std::string(e.what()).find("WEFT_WORKERS"), std::string::npos)
        << "message should name the variable: " << e.what();
  }
  // configuration_error is an invalid_argument.
  EXPECT_THROW(weft::runtime{}, std::invalid_argument);
}

std::string bad_env_name(const ::testing::TestParamInfo<const char*>& i) {
  static const char* const names[] = {"letters", "negative", "trailing_garbage", "fraction",
                                      "overflow"};
  return names[i.index];
}

INSTANTIATE_TEST_SUITE_P(Values, BadWorkersEnv,
                         ::testing::Values("abc", "-1", "3x", "1.5", "99999999999999999999999"),
                         bad_env_name);

// task_group, fork_join, parallel_for and parallel_reduce need a task
// (weft::async outside a task uses the default runtime: test_async_std.cpp).
TEST(OutsideRuntime, ConstructsThrowLogicError) {
  EXPECT_THROW({ weft::task_group g; }, std::logic_error);
  EXPECT_THROW((void)weft::fork_join([] { return 1; }, [] { return 2; }), std::logic_error);
  EXPECT_THROW(weft::parallel_for(0, 10, 1, [](int) {}), std::logic_error);
  EXPECT_THROW(weft::parallel_for(0, 10, [](int) {}), std::logic_error);
  EXPECT_THROW((void)weft::parallel_reduce(0, 10, 1, 0, [](int i) { return i; }, std::plus<>{}),
               std::logic_error);
  EXPECT_THROW((void)weft::parallel_reduce(0, 10, 0, [](int i) { return i; }, std::plus<>{}),
               std::logic_error);
  // The same from a plain thread while a runtime exists.
  weft::runtime rt(make_options(2));
  std::atomic<int> thrown{0};
  std::thread t([&] {
    try { weft::task_group g; } catch (const std::logic_error&) { ++thrown; }
    try { (void)weft::fork_join([] {}, [] {}); } catch (const std::logic_error&) { ++thrown; }
  });
  t.join();
  EXPECT_EQ(thrown.load(), 2);
}

TEST(OutsideRuntime, LogicErrorMessageNamesTheOperation) {
  try {
    (void)weft::fork_join([] {}, [] {});
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("weft::fork_join"), std::string::npos) << e.what();
  }
}

TEST(RuntimeStats, CountersAreMonotonicAndPlausible) {
  // One worker: f blocks before g can run, so a suspension is certain.
  weft::runtime rt(make_options(1));
  auto s0 = rt.stats();
  rt.run([] {
    weft::promise<int> p;
    auto f = p.get_future();
    auto [a, b] = weft::fork_join([&] { return f.get(); }, [&] { p.set_value(1); return 0; });
    EXPECT_EQ(a + b, 1);
  });
  auto s1 = rt.stats();
  EXPECT_GE(s1.fibers_created, s0.fibers_created);
  EXPECT_GE(s1.fibers_suspended, s0.fibers_suspended + 1) << "f.get() on an unset promise must suspend";
  EXPECT_GE(s1.steals, s0.steals);
  EXPECT_GE(s1.parks, s0.parks);
  EXPECT_GE(s1.fibers_created, 1u);
}

// ------------------------------------------------------- enumerated options

// An enumeration value that is none of its enumerators (cast from an
// integer) is refused like a bad number, never crashes at first use.
TEST(RuntimeOptions, EnumerationsOutOfRangeAreConfigurationErrors) {
  auto expect_refused = [](weft::options o, const char* field) {
    try {
      weft::runtime rt(o);
      ADD_FAILURE() << field << ": no configuration_error";
    } catch (const weft::configuration_error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  weft::options o = make_options(1);
  o.io = static_cast<weft::io_backend>(77);
  expect_refused(o, "weft::options::io");
  o = make_options(1);
  o.policy = static_cast<weft::steal_policy>(9);
  expect_refused(o, "weft::options::policy");
  o = make_options(1);
  o.priorities = static_cast<weft::options::priority_mode>(-3);
  expect_refused(o, "weft::options::priorities");
  o = make_options(1);
  o.shutdown_grace = -1ms;
  expect_refused(o, "weft::options::shutdown_grace");
}

// ------------------------------------------------------- shutdown grace

// One rule for every sleep and timed wait at shutdown: they go on as usual
// for options::shutdown_grace while ~runtime waits for the tasks, then every
// deadline counts as reached. A 30 s this_task::sleep_for used to keep the
// destructor waiting 30 s.
TEST_P(RuntimeTest, ShutdownEndsSleepsAndTimedWaitsAfterTheGrace) {
  weft::options o = options();
  o.shutdown_grace = 200ms;
  auto rt = std::make_unique<weft::runtime>(o);
  weft::promise<int> never;  // nobody sets it before the runtime is gone
  weft::shared_future<int> f = never.get_future().share();
  std::atomic<int> started{0};
  std::atomic<int> slept{0}, timed_out{0};
  (void)rt->async([&] {
    ++started;
    weft::this_task::sleep_for(30s);
    ++slept;
  });
  (void)rt->async([&] {
    ++started;
    weft::this_task::sleep_until(std::chrono::system_clock::now() + 1h);
    ++slept;
  });
  (void)rt->async([&, f] {
    ++started;
    if (f.wait_for(1h) == std::future_status::timeout) ++timed_out;
  });
  ASSERT_TRUE(spin_until([&] { return started.load() == 3; }));
  const auto t0 = std::chrono::steady_clock::now();
  rt.reset();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(slept.load(), 2);
  EXPECT_EQ(timed_out.load(), 1);
  EXPECT_GE(took, 150ms) << "the sleeps did not get their grace";
  EXPECT_LT(took, 10s);
  never.set_value(0);
}

// During the grace, sleeps last their time: a task that sleeps and then
// fulfils what another waits for lets the destructor return normally.
TEST_P(RuntimeTest, SleepsWithinTheGraceComplete) {
  weft::options o = options();
  o.shutdown_grace = 10s;
  std::atomic<int> value{0};
  std::chrono::steady_clock::duration slept{};
  {
    weft::runtime rt(o);
    auto iv = std::make_shared<weft::ivar<int>>();
    (void)rt.async([iv, &value] { value = iv->get(); });
    (void)rt.async([iv, &slept] {
      auto t0 = std::chrono::steady_clock::now();
      weft::this_task::sleep_for(100ms);
      slept = std::chrono::steady_clock::now() - t0;
      iv->put(5);
    });
  }
  EXPECT_EQ(value.load(), 5);
  EXPECT_GE(slept, 100ms);
}

// shutdown_grace = 0: at once; the default is one second.
TEST_P(RuntimeTest, ZeroGraceEndsSleepsAtOnce) {
  weft::options o = options();
  o.shutdown_grace = 0ms;
  auto rt = std::make_unique<weft::runtime>(o);
  std::atomic<bool> started{false};
  (void)rt->async([&] {
    started = true;
    weft::this_task::sleep_for(1h);
  });
  ASSERT_TRUE(spin_until([&] { return started.load(); }));
  const auto t0 = std::chrono::steady_clock::now();
  rt.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

// The per-test leak check (test_util.cpp) must see what a runtime holds: while
// a runtime lives with a blocked task, its fibers, stacks, deques and worker
// threads are above the counts from before it; destroying it brings every
// count back (the same comparison the check makes after each test).
TEST_P(RuntimeTest, LeakCheckSeesWhatALiveRuntimeHolds) {
  const resource_counts before = resource_counts::now();
  auto rt = std::make_unique<weft::runtime>(options());
  weft::ivar<int> iv;
  auto blocked = rt->async([&iv] { return iv.get(); });  // keeps its fiber while blocked
  ASSERT_TRUE(spin_until([&] { return rt->stats().fibers_suspended > 0; }));
  const resource_counts during = resource_counts::now();
  EXPECT_GT(during.fibers, before.fibers);
  EXPECT_GT(during.stacks, before.stacks);
  EXPECT_GT(during.deques, before.deques);
  EXPECT_GE(during.threads, before.threads + static_cast<int>(workers()));
  EXPECT_NE(describe_leak(before, during), "");
  iv.put(7);
  EXPECT_EQ(blocked.get(), 7);
  rt.reset();
  // A joined thread's /proc entry may outlive the join by a moment.
  EXPECT_TRUE(spin_until([&] { return resource_counts::now() == before; }, 5s))
      << describe_leak(before, resource_counts::now());
}

TEST(RuntimeOptions, DefaultShutdownGraceIsOneSecond) {
  EXPECT_EQ(weft::options{}.shutdown_grace, std::chrono::milliseconds(1000));
  auto rt = std::make_unique<weft::runtime>(make_options(2));
  std::atomic<bool> started{false};
  (void)rt->async([&] {
    started = true;
    weft::this_task::sleep_for(1h);
  });
  ASSERT_TRUE(spin_until([&] { return started.load(); }));
  const auto t0 = std::chrono::steady_clock::now();
  rt.reset();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 10s);
}

}  // namespace
