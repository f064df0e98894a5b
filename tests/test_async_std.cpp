// std::async's surface on weft: launch policies (deferred included),
// packaged_task, and the default runtime used by weft::async outside a task.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
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

bool on_worker() { return weft::detail::current_worker() != nullptr; }

// The std types a migrated program names keep working with weft's.
static_assert(std::is_same_v<decltype(std::declval<weft::future<int>&>().wait_for(1ms)), std::future_status>);
static_assert(std::is_same_v<decltype(std::declval<weft::shared_future<int>&>().get()), const int&>);
static_assert(std::is_same_v<decltype(std::declval<weft::future<int>&>().share()), weft::shared_future<int>>);
static_assert(std::is_same_v<decltype(weft::async(std::launch::deferred, [] { return 1; })), weft::future<int>>);
static_assert(std::is_same_v<decltype(std::declval<weft::packaged_task<int(int)>&>().get_future()), weft::future<int>>);
static_assert(!std::is_copy_constructible_v<weft::packaged_task<void()>>);
static_assert(std::is_nothrow_move_constructible_v<weft::packaged_task<void()>>);

class AsyncStdTest : public Workers {};
WEFT_INSTANTIATE_WORKERS(AsyncStdTest);

TEST_P(AsyncStdTest, LaunchAsyncStartsATask) {
  weft::runtime rt(options());
  rt.run([] {
    auto f = weft::async(std::launch::async, [](int a, int b) { return on_worker() ? a + b : -1; }, 40, 2);
    EXPECT_NE(f.wait_for(0s), std::future_status::deferred);
    EXPECT_EQ(f.get(), 42);
  });
}

// Both bits: weft chooses a task, which runs without anybody waiting.
TEST_P(AsyncStdTest, BothBitsStartATask) {
  weft::runtime rt(options());
  rt.run([] {
    std::atomic<bool> ran{false};
    auto f = weft::async(std::launch::async | std::launch::deferred, [&] { ran = true; });
    EXPECT_NE(f.wait_for(0s), std::future_status::deferred);
    EXPECT_TRUE(yield_until([&] { return ran.load(); }));
    f.get();
  });
}

TEST_P(AsyncStdTest, DeferredRunsOnFirstGetInTheCaller) {
  weft::runtime rt(options());
  rt.run([] {
    int calls = 0;  // touched only by this task: the function runs in get()
    auto f = weft::async(std::launch::deferred, [&calls](int x) { ++calls; return x * 2; }, 21);
    for (int i = 0; i < 10; ++i) weft::this_task::yield();
    EXPECT_EQ(calls, 0);
    EXPECT_FALSE(f.is_ready());
    EXPECT_EQ(f.wait_for(10ms), std::future_status::deferred);
    EXPECT_EQ(f.wait_until(std::chrono::steady_clock::now() + 1ms), std::future_status::deferred);
    EXPECT_EQ(calls, 0);  // timed waits do not run it
    EXPECT_EQ(f.get(), 42);
    EXPECT_EQ(calls, 1);
    EXPECT_FALSE(f.valid());
  });
}

TEST_P(AsyncStdTest, DeferredWaitRunsItThenTimedWaitsSayReady) {
  weft::runtime rt(options());
  rt.run([] {
    int calls = 0;
    auto f = weft::async(std::launch::deferred, [&calls] { ++calls; });
    f.wait();
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(f.is_ready());
    EXPECT_EQ(f.wait_for(0s), std::future_status::ready);
    f.get();
    EXPECT_EQ(calls, 1);
  });
}

TEST_P(AsyncStdTest, DeferredDroppedNeverRuns) {
  weft::runtime rt(options());
  rt.run([] {
    bool ran = false;
    { auto f = weft::async(std::launch::deferred, [&ran] { ran = true; }); }
    EXPECT_FALSE(ran);
  });
}

TEST_P(AsyncStdTest, DeferredExceptionAndMoveOnlyArguments) {
  weft::runtime rt(options());
  rt.run([] {
    auto f = weft::async(std::launch::deferred, [](std::unique_ptr<int> p) { return *p; },
                         std::make_unique<int>(7));
    EXPECT_EQ(f.get(), 7);
    auto g = weft::async(std::launch::deferred, []() -> int { throw std::runtime_error("deferred boom"); });
    try {
      (void)g.get();
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "deferred boom");
    }
  });
}

// Many tasks wait on one deferred state through shared_futures: the function
// runs exactly once, in one of them, and every one sees its value.
TEST_P(AsyncStdTest, DeferredSharedRunsOnce) {
  weft::runtime rt(options());
  rt.run([] {
    std::atomic<int> calls{0};
    weft::shared_future<int> sf =
        weft::async(std::launch::deferred, [&calls] { calls.fetch_add(1); return 5; }).share();
    std::vector<weft::future<int>> readers;
    for (int i = 0; i < 16; ++i) readers.push_back(weft::async([sf] { return sf.get(); }));
    for (auto& r : readers) EXPECT_EQ(r.get(), 5);
    EXPECT_EQ(sf.get(), 5);
    EXPECT_EQ(calls.load(), 1);
  });
}

TEST_P(AsyncStdTest, InvalidPolicyThrows) {
  weft::runtime rt(options());
  rt.run([] {
    EXPECT_THROW((void)weft::async(static_cast<std::launch>(0), [] {}), std::invalid_argument);
  });
}

TEST_P(AsyncStdTest, PackagedTaskBasics) {
  weft::runtime rt(options());
  rt.run([] {
    weft::packaged_task<int(int, int)> t([](int a, int b) { return a * b; });
    EXPECT_TRUE(t.valid());
    auto f = t.get_future();
    expect_future_error([&] { (void)t.get_future(); }, std::future_errc::future_already_retrieved,
                        "get_future twice");
    t(6, 7);
    EXPECT_TRUE(f.is_ready());
    EXPECT_EQ(f.get(), 42);
    expect_future_error([&] { t(1, 1); }, std::future_errc::promise_already_satisfied,
                        "invoked twice");
    // reset: a new state, the same function.
    t.reset();
    auto g = t.get_future();
    t(2, 3);
    EXPECT_EQ(g.get(), 6);
  });
}

TEST_P(AsyncStdTest, PackagedTaskRunsAsATaskAndOnAThread) {
  weft::runtime rt(options());
  rt.run([] {
    weft::packaged_task<std::string(std::string)> t([](std::string s) { return s + "!"; });
    auto f = t.get_future();
    auto done = weft::async(std::move(t), std::string("task"));
    EXPECT_FALSE(t.valid());  // NOLINT(bugprone-use-after-move): moved-from has no state
    EXPECT_EQ(f.get(), "task!");
    done.get();

    // Invoked on a plain thread while this task waits on its future.
    weft::packaged_task<void()> v([] {});
    auto fv = v.get_future();
    std::thread th(std::move(v));
    fv.get();
    th.join();
  });
}

TEST_P(AsyncStdTest, PackagedTaskErrors) {
  weft::runtime rt(options());
  rt.run([] {
    weft::packaged_task<int()> empty;
    EXPECT_FALSE(empty.valid());
    expect_future_error([&] { (void)empty.get_future(); }, std::future_errc::no_state, "get_future");
    expect_future_error([&] { empty(); }, std::future_errc::no_state, "operator()");
    expect_future_error([&] { empty.reset(); }, std::future_errc::no_state, "reset");

    int calls = 0;
    weft::packaged_task<int()> t([&calls]() -> int { ++calls; throw std::runtime_error("pt"); });
    auto f = t.get_future();
    t();
    EXPECT_THROW((void)f.get(), std::runtime_error);
    expect_future_error([&] { t(); }, std::future_errc::promise_already_satisfied, "second call");
    EXPECT_EQ(calls, 1);

    // Never invoked: broken_promise, on destruction and on reset.
    weft::future<int> lost;
    { weft::packaged_task<int()> u([] { return 1; }); lost = u.get_future(); }
    expect_future_error([&] { (void)lost.get(); }, std::future_errc::broken_promise, "destroyed");
    weft::packaged_task<int()> r([] { return 2; });
    auto before = r.get_future();
    r.reset();
    expect_future_error([&] { (void)before.get(); }, std::future_errc::broken_promise, "reset");
    auto after = r.get_future();
    r();
    EXPECT_EQ(after.get(), 2);

    // swap and move-only callables.
    weft::packaged_task<int()> a([p = std::make_unique<int>(3)] { return *p; });
    weft::packaged_task<int()> b;
    swap(a, b);
    EXPECT_FALSE(a.valid());
    auto fb = b.get_future();
    b();
    EXPECT_EQ(fb.get(), 3);
  });
}

// ---------------------------------------------------------------------------
// The default runtime. Each test destroys it at its end (the leak check counts
// its threads and fibers).

struct default_runtime_guard {
  ~default_runtime_guard() { weft::shutdown_default_runtime(); }
};

TEST(DefaultRuntime, AsyncFromMainBlocksTheCaller) {
  default_runtime_guard guard;
  auto f = weft::async([](int x) { return on_worker() ? x + 1 : -1; }, 41);
  EXPECT_EQ(f.get(), 42);  // blocks this (non-worker) thread
  EXPECT_FALSE(on_worker());
  auto g = weft::async(std::launch::async, [] { return on_worker(); });
  EXPECT_TRUE(g.get());
  // Children of a default-runtime task are tasks of that runtime.
  auto h = weft::async([] {
    auto c = weft::async([] { return 2; });
    return c.get() * 3;
  });
  EXPECT_EQ(h.get(), 6);
  EXPECT_TRUE(weft::shutdown_default_runtime());
  EXPECT_FALSE(weft::shutdown_default_runtime());
}

TEST(DefaultRuntime, SizedByWeftWorkers) {
  default_runtime_guard guard;
  weft::shutdown_default_runtime();
  const char* old = std::getenv("WEFT_WORKERS");
  std::string saved = old ? old : "";
  ::setenv("WEFT_WORKERS", "3", 1);
  EXPECT_EQ(weft::default_runtime().worker_count(), 3u);
  if (old) ::setenv("WEFT_WORKERS", saved.c_str(), 1); else ::unsetenv("WEFT_WORKERS");
  EXPECT_EQ(&weft::default_runtime(), &weft::default_runtime());
}

// A bad WEFT_WORKERS fails the first use, and nothing is left behind: the
// next use (with a good value) creates the runtime.
TEST(DefaultRuntime, BadWeftWorkersThrowsConfigurationError) {
  default_runtime_guard guard;
  weft::shutdown_default_runtime();
  const char* old = std::getenv("WEFT_WORKERS");
  std::string saved = old ? old : "";
  ::setenv("WEFT_WORKERS", "abc", 1);
  EXPECT_THROW((void)weft::async([] { return 1; }), weft::configuration_error);
  EXPECT_FALSE(weft::shutdown_default_runtime());
  ::setenv("WEFT_WORKERS", "2", 1);
  EXPECT_EQ(weft::async([] { return 1; }).get(), 1);
  if (old) ::setenv("WEFT_WORKERS", saved.c_str(), 1); else ::unsetenv("WEFT_WORKERS");
}

// Plain threads race to create it: one runtime, every future served.
TEST(DefaultRuntime, ManyThreadsShareOne) {
  default_runtime_guard guard;
  constexpr int threads = 4;
  std::atomic<weft::runtime*> seen[threads] = {};
  std::atomic<long> sum{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      std::vector<weft::future<int>> fs;
      for (int i = 0; i < 50; ++i) fs.push_back(weft::async([i] { return i; }));
      for (auto& f : fs) sum += f.get();
      seen[t] = &weft::default_runtime();
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(sum.load(), threads * (49 * 50 / 2));
  for (auto& s : seen) EXPECT_EQ(s.load(), seen[0].load());
}

TEST(DefaultRuntime, DeferredNeedsNoRuntime) {
  default_runtime_guard guard;
  weft::shutdown_default_runtime();
  auto f = weft::async(std::launch::deferred, [] { return on_worker(); });
  EXPECT_FALSE(f.get());  // ran here, on this plain thread
  EXPECT_FALSE(weft::shutdown_default_runtime());  // none was created
}

TEST(DefaultRuntime, ShutdownFromItsOwnTaskThrows) {
  default_runtime_guard guard;
  auto f = weft::async([] { return weft::shutdown_default_runtime(); });
  EXPECT_THROW((void)f.get(), std::logic_error);
}

// A program written against std (promise, shared_future, packaged_task,
// future_status) compiles with weft's types: the same template, both ways.
template <template <class> class Future, template <class> class Promise,
          template <class> class Shared, template <class> class Task>
int std_shaped_program(auto async_fn) {
  Promise<int> p;
  Future<int> pf = p.get_future();
  Shared<int> sf = pf.share();
  Task<int(int)> task([](int x) { return x + 1; });
  Future<int> tf = task.get_future();
  std::thread th([&] { p.set_value(10); task(1); });
  Future<int> a = async_fn(std::launch::async, [sf] { return sf.get() * 2; });
  Future<int> d = async_fn(std::launch::deferred, [] { return 100; });
  int r = 0;
  if (d.wait_for(0s) == std::future_status::deferred) r += 1000;
  r += a.get() + d.get() + tf.get() + sf.get();
  th.join();
  return r;
}
template <class S> using std_task = std::packaged_task<S>;
template <class S> using weft_task = weft::packaged_task<S>;

TEST(DefaultRuntime, StdShapedProgramSameResult) {
  default_runtime_guard guard;
  const int with_std = std_shaped_program<std::future, std::promise, std::shared_future, std_task>(
      [](std::launch l, auto f) { return std::async(l, std::move(f)); });
  const int with_weft = std_shaped_program<weft::future, weft::promise, weft::shared_future, weft_task>(
      [](std::launch l, auto f) { return weft::async(l, std::move(f)); });
  EXPECT_EQ(with_std, 1000 + 20 + 100 + 2 + 10);
  EXPECT_EQ(with_weft, with_std);
}

}  // namespace

namespace {

// future<R&>, shared_future<R&>, promise<R&>, packaged_task<R&()> and
// promise::swap, as std has them.
TEST(StdSurface, ReferenceResultsAndPromiseSwap) {
  weft::runtime rt(make_options(2));
  rt.run([] {
    int x = 1;
    weft::future<int&> f = weft::async([&x]() -> int& { return x; });
    int& r = f.get();
    EXPECT_EQ(&r, &x);

    weft::promise<int&> p;
    weft::shared_future<int&> sf = p.get_future().share();
    p.set_value(x);
    sf.get() = 5;
    EXPECT_EQ(x, 5);

    weft::packaged_task<int&()> t([&x]() -> int& { return x; });
    auto tf = t.get_future();
    t();
    EXPECT_EQ(&tf.get(), &x);

    auto d = weft::async(std::launch::deferred, [&x]() -> int& { return x; });
    EXPECT_EQ(&d.get(), &x);

    weft::promise<int> a, b;
    auto fa = a.get_future();
    swap(a, b);  // b now feeds fa; a holds b's state, not yet retrieved
    b.set_value(3);
    EXPECT_EQ(fa.get(), 3);
    auto fb = a.get_future();
    a.set_value(4);
    EXPECT_EQ(fb.get(), 4);
  });
}

}  // namespace
