// Memory and resource behaviour: many blocked tasks at once, lazily created
// fibers, and no fd/thread leaks across runtimes.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <vector>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

// 100,000 tasks blocked at the same time, each in ivar.get(), then released.
// The root yields until every task has reached its get() (the counter is
// incremented just before it), so they really are all suspended together.
TEST(Memory, HundredThousandBlockedTasks) {
  // Each blocked task owns a fiber stack (1 MiB reserved, a few pages used).
  // Under ASan stacks are 4 MiB and every touched page carries shadow memory,
  // so 100,000 suspended fibers would need tens of GiB of shadow and minutes:
  // ASan builds use 10,000 (same code paths). Under TSan every fiber is a TSan
  // thread context and TSan dies beyond 8,128 of them ("Thread limit
  // exceeded"), so TSan builds use 2,000 (each TSan fiber context also costs ~1 MiB).
  const int kTasks = static_cast<int>(tsan_build ? 2000 : scaled(100000, 10000));
  const long rss_before = current_rss_kib();
  auto rt = std::make_unique<weft::runtime>(make_options(2));
  const auto s0 = rt->stats();
  std::atomic<int> waiting{0};
  long long sum = 0;
  bool all_blocked = false;
  int waiting_seen = 0;
  auto t0 = clk::now();
  bool finished = run_bounded(rt, [&] {
    std::vector<weft::ivar<int>> ivs(static_cast<std::size_t>(kTasks));
    std::vector<weft::future<int>> fs;
    fs.reserve(static_cast<std::size_t>(kTasks));
    for (int i = 0; i < kTasks; ++i) {
      fs.push_back(weft::async([&ivs, &waiting, i] {
        waiting.fetch_add(1, std::memory_order_relaxed);
        return ivs[static_cast<std::size_t>(i)].get() + 1;
      }));
    }
    all_blocked = yield_until([&] { return waiting.load() == kTasks; }, 120s);
    waiting_seen = waiting.load();
    // Nothing has been put: every task that started is suspended in get().
    for (int i = 0; i < kTasks; ++i) ivs[static_cast<std::size_t>(i)].put(i);
    for (auto& f : fs) sum += f.get();
  }, std::chrono::seconds(200));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count();
  if (!finished) return;
  const auto s1 = rt->stats();
  const long peak = peak_rss_kib();
  EXPECT_TRUE(all_blocked) << "only " << waiting_seen << " of " << kTasks
                           << " tasks reached get() while the root yielded";
  EXPECT_EQ(sum, static_cast<long long>(kTasks) * (kTasks + 1) / 2);
  EXPECT_GE(s1.fibers_suspended - s0.fibers_suspended, static_cast<std::size_t>(kTasks))
      << "every task should have suspended once";
  EXPECT_GE(s1.fibers_created, static_cast<std::size_t>(kTasks))
      << "each simultaneously blocked task needs its own stack";
  std::cout << "[ info     ] " << kTasks << " blocked tasks: peak RSS " << peak << " KiB (was "
            << rss_before << " KiB before), " << (peak - rss_before) * 1024 / kTasks
            << " B per blocked task; fibers_created=" << s1.fibers_created
            << " suspended=" << s1.fibers_suspended << "; " << ms << " ms" << std::endl;
  RecordProperty("blocked_tasks", kTasks);
  RecordProperty("peak_rss_kib", static_cast<int>(peak));
  RecordProperty("rss_before_kib", static_cast<int>(rss_before));
  RecordProperty("elapsed_ms", static_cast<int>(ms));
  rt.reset();
}

// Lazy promotion: tasks that never block run on the worker's current stack;
// no fiber is created or suspended for them (1 worker: nothing is stolen, so
// fork_join never waits).
TEST(Memory, NonBlockingTasksCreateNoFibers) {
  weft::runtime rt(make_options(1));
  rt.run([] {});  // warm-up: whatever each worker needs up front
  const auto s0 = rt.stats();
  long got = rt.run([] {
    return weft::parallel_reduce(0, 100000, 1, 0L, [](int i) { return static_cast<long>(i); },
                                 std::plus<>{});
  });
  EXPECT_EQ(got, 99999L * 100000 / 2);
  long fut = rt.run([] {
    long s = 0;
    for (int i = 0; i < 10000; ++i) s += weft::async([i] { return static_cast<long>(i); }).get();
    return s;
  });
  EXPECT_EQ(fut, 9999L * 10000 / 2);
  const auto s1 = rt.stats();
  EXPECT_EQ(s1.fibers_suspended, s0.fibers_suspended) << "nothing blocked, yet tasks were suspended";
  EXPECT_LE(s1.fibers_created - s0.fibers_created, 2u)
      << "110,000 non-blocking tasks created " << (s1.fibers_created - s0.fibers_created) << " fibers";
}

// Stacks of finished fibers are reused: blocking a few tasks many times over
// does not allocate a stack per suspension.
TEST(Memory, FiberStacksAreReused) {
  weft::runtime rt(make_options(2));
  const auto s0 = rt.stats();
  constexpr int kRounds = 2000;
  rt.run([] {
    for (int r = 0; r < kRounds; ++r) {
      weft::ivar<int> iv;
      auto [a, b] = weft::fork_join([&] { return iv.get(); }, [&] { iv.put(r); return 0; });
      ASSERT_EQ(a + b, r);
    }
  });
  const auto s1 = rt.stats();
  EXPECT_LT(s1.fibers_created - s0.fibers_created, static_cast<std::size_t>(kRounds / 10))
      << "stacks are not pooled: " << (s1.fibers_created - s0.fibers_created) << " created for "
      << (s1.fibers_suspended - s0.fibers_suspended) << " suspensions";
}

// 100 runtimes created and destroyed in a row leak neither file descriptors
// nor threads.
TEST(Memory, RuntimesDoNotLeakFdsOrThreads) {
  {
    weft::runtime warm(make_options(2));  // one-time process-wide setup, if any
    warm.run([] {});
  }
  const int fds0 = open_fd_count();
  const int threads0 = thread_count();
  ASSERT_GT(fds0, 0);
  ASSERT_GT(threads0, 0);
  for (int i = 0; i < 100; ++i) {
    weft::runtime rt(make_options(static_cast<unsigned>(1 + i % 4)));
    int r = rt.run([] {
      weft::ivar<int> iv;
      auto [a, b] = weft::fork_join([&] { return iv.get(); }, [&] { iv.put(1); return 1; });
      weft::this_task::sleep_for(100us);  // exercises the timer service
      return a + b;
    });
    ASSERT_EQ(r, 2);
  }
  EXPECT_EQ(open_fd_count(), fds0) << "file descriptors leaked by 100 runtimes";
  EXPECT_EQ(thread_count(), threads0) << "threads outlived their runtime";
}

// Memory returns: RSS after several runs of a blocking workload stays bounded
// (no per-task leak).
TEST(Memory, RepeatedBlockingWorkloadDoesNotGrow) {
  weft::runtime rt(make_options(2));
  auto workload = [&] {
    rt.run([] {
      std::vector<weft::ivar<int>> ivs(2000);
      std::vector<weft::future<int>> fs;
      for (int i = 0; i < 2000; ++i) fs.push_back(weft::async([&ivs, i] { return ivs[static_cast<std::size_t>(i)].get(); }));
      for (int i = 0; i < 2000; ++i) ivs[static_cast<std::size_t>(i)].put(i);
      for (auto& f : fs) (void)f.get();
    });
  };
  workload();
  workload();
  const long rss1 = current_rss_kib();
  for (int i = 0; i < static_cast<int>(scaled(20, 5)); ++i) workload();
  const long rss2 = current_rss_kib();
  std::cout << "[ info     ] RSS after warm-up " << rss1 << " KiB, after more rounds " << rss2 << " KiB"
            << std::endl;
  // Generous: 64 MiB of slack for allocator noise; a leak of a stack or task
  // record per task would add far more (40,000 tasks).
  EXPECT_LT(rss2 - rss1, 64 * 1024);
}

}  // namespace
