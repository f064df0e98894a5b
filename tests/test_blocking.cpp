// weft::spawn_blocking (weft/blocking.hpp) and weft::io::resolve
// (weft/resolve.hpp).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"
#include "weft/io.hpp"
#include "weft/resolve.hpp"
#include "weft/weft.hpp"

using namespace weft_test;

namespace {

class BlockingTest : public Workers {};
WEFT_INSTANTIATE_WORKERS(BlockingTest);

// On a plain (helper) thread: waits until flag is set, at most `limit`.
// Returns whether it was set (the limit only turns a bug into a failure).
bool wait_flag(const std::atomic<bool>& flag, std::chrono::milliseconds limit = 30s) {
  return spin_until([&] { return flag.load(); }, limit);
}

TEST_P(BlockingTest, ResultsAndExceptionsComeBack) {
  auto rt = std::make_unique<weft::runtime>(options());
  ASSERT_TRUE(run_bounded(rt, [] {
    auto sum = weft::spawn_blocking([](int a, int b) { return a + b; }, 40, 2);
    auto text = weft::spawn_blocking([] { return std::string(100, 'x'); });
    auto ptr = weft::spawn_blocking([] { return std::make_unique<int>(5); });  // move-only
    std::atomic<bool> ran{false};
    auto nothing = weft::spawn_blocking([&ran] { ran = true; });
    auto fails = weft::spawn_blocking([]() -> int { throw std::runtime_error("boom"); });
    EXPECT_EQ(sum.get(), 42);
    EXPECT_EQ(text.get(), std::string(100, 'x'));
    EXPECT_EQ(*ptr.get(), 5);
    nothing.get();
    EXPECT_TRUE(ran.load());
    try {
      fails.get();
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "boom");
    }
    EXPECT_FALSE(sum.valid());
  }));
}

// The call runs on another thread than the worker that spawned it.
TEST_P(BlockingTest, RunsOnAHelperThread) {
  auto rt = std::make_unique<weft::runtime>(options());
  ASSERT_TRUE(run_bounded(rt, [] {
    auto f = weft::spawn_blocking([] { return std::this_thread::get_id(); });
    const auto helper = f.get();
    EXPECT_NE(helper, std::this_thread::get_id());
    // A task-only API inside the call fails as on any plain thread.
    auto g = weft::spawn_blocking([] { weft::task_group tg; });
    EXPECT_THROW(g.get(), std::logic_error);
  }));
}

// One worker: task A waits on a blocking call that returns only once the
// root task (on the same, only worker) has run another task and released it.
// If get() blocked the worker instead of suspending A, nothing would release
// the call: it would give up after 30 s and report so.
TEST_P(BlockingTest, WaitingSuspendsTheTaskNotTheWorker) {
  auto rt = std::make_unique<weft::runtime>(options());
  ASSERT_TRUE(run_bounded(rt, [] {
    std::atomic<bool> release{false}, call_returned{false}, a_waiting{false};
    auto call = weft::spawn_blocking([&] {
      std::this_thread::sleep_for(200ms);  // a slow call...
      const bool released = wait_flag(release);  // ...that needs the others to progress
      call_returned = true;
      return released;
    });
    auto a = weft::async([&] {
      a_waiting = true;
      return call.get();
    });
    ASSERT_TRUE(yield_until([&] { return a_waiting.load(); }));
    // A is now blocked in call.get() (or about to be): another task runs and
    // finishes while the call is still running.
    auto other = weft::async([&] { return !call_returned.load(); });
    EXPECT_TRUE(other.get()) << "the other task ran only after the blocking call";
    release = true;
    EXPECT_TRUE(a.get()) << "the call was never released: the worker was blocked";
  }, 90s));
}

// blocking_threads = 2: of 6 calls that wait at a gate, exactly 2 run at once
// (the others queue), and all finish once the gate opens.
TEST_P(BlockingTest, TheBoundHolds) {
  weft::options o = options();
  o.blocking_threads = 2;
  auto rt = std::make_unique<weft::runtime>(o);
  weft::runtime* raw = rt.get();
  ASSERT_TRUE(run_bounded(rt, [raw] {
    std::atomic<int> running{0}, most{0}, done{0};
    std::atomic<bool> gate{false};
    std::vector<weft::future<bool>> calls;
    for (int i = 0; i < 6; ++i) {
      calls.push_back(weft::spawn_blocking([&] {
        const int now = running.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        const bool opened = wait_flag(gate);
        running.fetch_sub(1);
        done.fetch_add(1);
        return opened;
      }));
    }
    ASSERT_TRUE(yield_until([&] { return running.load() == 2; }));
    // Give a third thread every chance to start if the bound were broken
    // (the gate is closed, so nothing leaves meanwhile).
    weft::io::sleep_for(300ms).get();
    EXPECT_EQ(running.load(), 2);
    EXPECT_LE(raw->stats().blocking_threads, 2u);
    gate = true;
    for (auto& c : calls) EXPECT_TRUE(c.get());
    EXPECT_EQ(done.load(), 6);
    EXPECT_EQ(most.load(), 2);
    EXPECT_LE(raw->stats().blocking_threads, 2u);
  }));
}

TEST_P(BlockingTest, ThousandCallsComplete) {
  auto rt = std::make_unique<weft::runtime>(options());
  ASSERT_TRUE(run_bounded(rt, [] {
    constexpr int n = 1000;
    std::vector<weft::future<long>> calls;
    calls.reserve(n);
    for (int i = 0; i < n; ++i) calls.push_back(weft::spawn_blocking([](long v) { return v * 2; }, i));
    long sum = 0;
    for (auto& c : calls) sum += c.get();
    EXPECT_EQ(sum, long{n} * (n - 1));
  }));
  EXPECT_LE(rt->stats().blocking_threads, 64u);
}

// Calls spawned by many tasks at once (the pool is shared by the workers).
TEST_P(BlockingTest, CallsFromManyTasks) {
  auto rt = std::make_unique<weft::runtime>(options());
  ASSERT_TRUE(run_bounded(rt, [] {
    std::vector<weft::future<int>> tasks;
    for (int t = 0; t < 20; ++t) {
      tasks.push_back(weft::async([t] {
        int s = 0;
        for (int i = 0; i < 10; ++i) s += weft::spawn_blocking([](int v) { return v; }, t).get();
        return s;
      }));
    }
    int total = 0;
    for (auto& f : tasks) total += f.get();
    EXPECT_EQ(total, 10 * (19 * 20 / 2));
  }));
}

TEST(BlockingOutside, ThrowsOutsideARuntime) {
  EXPECT_THROW((void)weft::spawn_blocking([] { return 1; }), std::logic_error);
  EXPECT_THROW((void)weft::io::resolve("127.0.0.1", "80"), std::logic_error);
}

// A future obtained in a task may be waited on from a plain thread (blocks it).
TEST(BlockingOutside, FutureWaitedFromAPlainThread) {
  weft::runtime rt(make_options(2));
  auto f = rt.async([] {
    return weft::spawn_blocking([] {
      std::this_thread::sleep_for(50ms);
      return 9;
    });
  }).get();
  EXPECT_EQ(f.get(), 9);
}

// ~runtime waits for running calls and runs the queued ones: nothing is lost,
// even with no grace period and the futures dropped.
TEST(BlockingShutdown, CallsInFlightComplete) {
  std::atomic<int> finished{0};
  {
    weft::options o = make_options(2);
    o.blocking_threads = 1;  // 1 runs, 3 queued when the destructor starts
    o.shutdown_grace = 0ms;
    weft::runtime rt(o);
    rt.run([&] {
      for (int i = 0; i < 4; ++i) {
        (void)weft::spawn_blocking([&] {
          std::this_thread::sleep_for(100ms);
          finished.fetch_add(1);
        });
      }
    });
    EXPECT_LT(finished.load(), 4);  // 400 ms of calls after 0 ms: still going
  }
  EXPECT_EQ(finished.load(), 4);
}

// A task waiting on a call at shutdown gets its result.
TEST(BlockingShutdown, TaskWaitingOnACallFinishes) {
  std::atomic<int> got{0};
  {
    weft::runtime rt(make_options(1));
    (void)rt.async([&] {
      got = weft::spawn_blocking([] {
        std::this_thread::sleep_for(100ms);
        return 3;
      }).get();
    });
  }
  EXPECT_EQ(got.load(), 3);
}

TEST(BlockingPool, IdleThreadsExitAfterTheKeepAlive) {
  weft::options o = make_options(2);
  o.blocking_keep_alive = 20ms;
  weft::runtime rt(o);
  rt.run([] {
    std::vector<weft::future<int>> calls;
    for (int i = 0; i < 4; ++i) calls.push_back(weft::spawn_blocking([] {
      std::this_thread::sleep_for(20ms);
      return 1;
    }));
    for (auto& c : calls) c.get();
  });
  EXPECT_TRUE(spin_until([&] { return rt.stats().blocking_threads == 0; }, 20s))
      << rt.stats().blocking_threads << " helper threads still alive";
  // The pool starts threads again afterwards.
  EXPECT_EQ(rt.run([] { return weft::spawn_blocking([] { return 5; }).get(); }), 5);
}

TEST(BlockingPool, UnobservedExceptionIsCounted) {
  weft::runtime rt(make_options(2));
  rt.run([] { (void)weft::spawn_blocking([] { throw std::runtime_error("dropped"); }); });
  EXPECT_TRUE(spin_until([&] { return rt.stats().unobserved_exceptions == 1; }));
}

TEST(BlockingPool, Configuration) {
  EXPECT_EQ(weft::runtime(make_options(1)).configuration().blocking_threads, 64u);
  weft::options o = make_options(1);
  o.blocking_threads = 4097;
  EXPECT_THROW(weft::runtime{o}, weft::configuration_error);
  o.blocking_threads = 4096;
  EXPECT_EQ(weft::runtime(o).configuration().blocking_threads, 4096u);
  o.blocking_keep_alive = -1ms;
  EXPECT_THROW(weft::runtime{o}, weft::configuration_error);
}

// --- resolve -------------------------------------------------------------------

std::uint16_t port_of(const weft::io::address& a) {
  if (a.family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_port);
  if (a.family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_port);
  return 0;
}

TEST_P(BlockingTest, ResolveNumericAddress) {
  auto rt = std::make_unique<weft::runtime>(options());
  ASSERT_TRUE(run_bounded(rt, [] {
    auto addrs = weft::io::resolve("127.0.0.1", "8080").get();
    ASSERT_FALSE(addrs.empty());
    for (auto& a : addrs) {
      EXPECT_EQ(a.family, AF_INET);
      EXPECT_EQ(a.socktype, SOCK_STREAM);
      EXPECT_EQ(a.length, sizeof(sockaddr_in));
      EXPECT_EQ(port_of(a), 8080);
      EXPECT_EQ(ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr),
                INADDR_LOOPBACK);
    }
  }));
}

// "localhost" comes from /etc/hosts (or the resolver's built-in rule): no
// network needed. Every address it gives is a loopback one.
TEST_P(BlockingTest, ResolveLocalhost) {
  auto rt = std::make_unique<weft::runtime>(options());
  ASSERT_TRUE(run_bounded(rt, [] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    auto addrs = weft::io::resolve("localhost", "53", &hints).get();
    ASSERT_FALSE(addrs.empty());
    for (auto& a : addrs) {
      EXPECT_EQ(a.socktype, SOCK_DGRAM);
      EXPECT_EQ(port_of(a), 53);
      if (a.family == AF_INET) {
        EXPECT_EQ(ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr) >> 24, 127u);
      } else {
        ASSERT_EQ(a.family, AF_INET6);
        EXPECT_TRUE(IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr));
      }
    }
  }));
}

// A bad literal with AI_NUMERICHOST fails at once with EAI_NONAME (no lookup).
TEST_P(BlockingTest, ResolveFailureCarriesTheResolverCode) {
  auto rt = std::make_unique<weft::runtime>(options());
  ASSERT_TRUE(run_bounded(rt, [] {
    addrinfo hints{};
    hints.ai_flags = AI_NUMERICHOST;
    try {
      weft::io::resolve("300.1.2.3", "80", &hints).get();
      ADD_FAILURE() << "no error";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::error_code(EAI_NONAME, weft::io::resolver_category()));
      EXPECT_STREQ(e.code().category().name(), "weft.resolver");
      EXPECT_EQ(e.code().message(), gai_strerror(EAI_NONAME));
      EXPECT_NE(std::string(e.what()).find("300.1.2.3"), std::string::npos) << e.what();
    }
    // A service that is not a number, with AI_NUMERICSERV: also refused
    // without a lookup.
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    try {
      weft::io::resolve("127.0.0.1", "http", &hints).get();
      ADD_FAILURE() << "no error";
    } catch (const std::system_error& e) {
      EXPECT_EQ(&e.code().category(), &weft::io::resolver_category());
    }
  }));
}

}  // namespace
