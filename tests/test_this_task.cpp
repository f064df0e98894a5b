// this_task::yield, worker_id, sleep_for / sleep_until.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

class ThisTaskTest : public Workers {};
WEFT_INSTANTIATE_WORKERS(ThisTaskTest);

TEST(ThisTask, OutsideRuntime) {
  EXPECT_EQ(weft::this_task::worker_id(), -1);
  weft::this_task::yield();  // std::this_thread::yield, returns
  auto t0 = clk::now();
  weft::this_task::sleep_for(10ms);  // sleeps the thread
  EXPECT_GE(clk::now() - t0, 10ms);
  weft::this_task::sleep_until(clk::now() - 1s);  // past deadline: returns
  int id = 0;
  std::thread t([&] { id = weft::this_task::worker_id(); });
  t.join();
  EXPECT_EQ(id, -1);
}

TEST_P(ThisTaskTest, WorkerIdInRangeInsideTasks) {
  weft::runtime rt(options());
  const int n = static_cast<int>(workers());
  std::vector<int> ids(4000, -2);
  rt.run([&] {
    EXPECT_GE(weft::this_task::worker_id(), 0);
    weft::parallel_for(0, 4000, 1, [&](int i) {
      if (i % 100 == 0) weft::this_task::yield();  // may migrate; still in range
      ids[static_cast<std::size_t>(i)] = weft::this_task::worker_id();
    });
  });
  for (int id : ids) {
    ASSERT_GE(id, 0);
    ASSERT_LT(id, n);
  }
  // From a plain thread while the runtime lives.
  int outside = 0;
  std::thread t([&] { outside = weft::this_task::worker_id(); });
  t.join();
  EXPECT_EQ(outside, -1);
  EXPECT_EQ(weft::this_task::worker_id(), -1);
}

// worker_id identifies the thread: one id per worker thread, one thread per id.
TEST_P(ThisTaskTest, WorkerIdMatchesThread) {
  weft::runtime rt(options());
  std::mutex m;
  std::vector<std::pair<std::thread::id, int>> seen;
  rt.run([&] {
    weft::parallel_for(0, 2000, 1, [&](int) {
      std::lock_guard<std::mutex> lk(m);
      seen.emplace_back(std::this_thread::get_id(), weft::this_task::worker_id());
    });
  });
  // The same worker id never appears on two different threads, nor two ids on
  // one thread.
  std::map<std::thread::id, int> by_thread;
  std::map<int, std::thread::id> by_id;
  for (auto& [tid, id] : seen) {
    auto [it, fresh] = by_thread.emplace(tid, id);
    ASSERT_EQ(it->second, id) << "a thread reported two worker ids";
    auto [jt, fresh2] = by_id.emplace(id, tid);
    ASSERT_EQ(jt->second, tid) << "worker id " << id << " on two threads";
    (void)fresh;
    (void)fresh2;
  }
  EXPECT_LE(by_id.size(), workers());
}

// yield lets other ready work run first (1 worker: the sibling can only run
// if yield really gives the worker away).
TEST_P(ThisTaskTest, YieldLetsSiblingRun) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [] {
    std::atomic<bool> sibling_ran{false};
    weft::task_group g;
    g.spawn([&] { sibling_ran = true; });
    EXPECT_TRUE(yield_until([&] { return sibling_ran.load(); }, 10s))
        << "yield never let the spawned sibling run";
    g.sync();
  });
}

// A task left in a blocked task's parked deque is not starved by a loop of
// yields: the root waits for `h` (not at the bottom of its deque, so the root
// blocks and its deque is parked with `h` in it), and its worker runs `bg`,
// which yields until `h` has run. The yielded fiber always waits in the ready
// FIFO, which came before stealing from parked deques: with one worker this
// hung (weft-bench's interactive benchmark, priority-oblivious mode).
TEST_P(ThisTaskTest, YieldLoopDoesNotStarveAParkedDequesWork) {
  auto rt = std::make_unique<weft::runtime>(options());
  const bool finished = run_bounded(rt, [] {
    std::atomic<bool> done{false};
    auto h = weft::async([&] { done.store(true); });
    auto bg = weft::async([&] {
      while (!done.load()) weft::this_task::yield();
    });
    h.get();
    bg.get();
  }, std::chrono::seconds(30));
  EXPECT_TRUE(finished);
}

// Two tasks that yield to each other in a ping-pong make progress.
TEST_P(ThisTaskTest, YieldPingPong) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [] {
    std::atomic<int> turn{0};
    constexpr int kRounds = 200;
    auto player = [&](int me) {
      for (int r = 0; r < kRounds; ++r) {
        if (!yield_until([&] { return turn.load() % 2 == me; }, 20s)) {
          ADD_FAILURE() << "ping-pong stalled at turn " << turn.load();
          return;
        }
        turn.fetch_add(1);
      }
    };
    weft::fork_join([&] { player(0); }, [&] { player(1); });
    EXPECT_EQ(turn.load(), 2 * kRounds);
  });
}

// sleep_for suspends the task, not the worker: with one worker, a sleeping
// task and a computing task both finish, the computing one first. The sleeper
// keeps sleeping (in 1 ms steps) until the computing task is done, which can
// only happen if the worker is free while it sleeps; the deadline only turns
// a blocked worker into a failure instead of a hang.
TEST_P(ThisTaskTest, SleepDoesNotBlockWorker) {
  weft::runtime rt(options());
  std::atomic<bool> sleeper_started{false}, compute_done{false}, sleeper_done{false};
  std::atomic<int> order{0};
  int compute_rank = -1, sleeper_rank = -1;
  bool sleeper_gave_up = false;
  long computed = 0;
  rt.run([&] {
    auto sleeper = weft::async([&] {
      sleeper_started = true;
      auto deadline = clk::now() + 20s;
      while (!compute_done.load()) {
        if (clk::now() > deadline) { sleeper_gave_up = true; break; }
        weft::this_task::sleep_for(1ms);
      }
      sleeper_rank = order.fetch_add(1);
      sleeper_done = true;
    });
    ASSERT_TRUE(yield_until([&] { return sleeper_started.load(); }));
    auto compute = weft::async([&] {
      long acc = 0;
      for (int i = 0; i < 100000; ++i) acc += i % 7;
      computed = acc;
      compute_rank = order.fetch_add(1);
      compute_done = true;
    });
    compute.get();
    sleeper.get();
  });
  EXPECT_FALSE(sleeper_gave_up) << "the computing task could not run while the other slept";
  EXPECT_TRUE(compute_done.load());
  EXPECT_TRUE(sleeper_done.load());
  EXPECT_EQ(compute_rank, 0);
  EXPECT_EQ(sleeper_rank, 1);
  EXPECT_GT(computed, 0);
}

TEST_P(ThisTaskTest, SleepLastsAtLeastTheDuration) {
  weft::runtime rt(options());
  rt.run([] {
    for (auto d : {1ms, 5ms, 20ms}) {
      auto t0 = clk::now();
      weft::this_task::sleep_for(d);
      EXPECT_GE(clk::now() - t0, d);
    }
    auto deadline = clk::now() + 15ms;
    weft::this_task::sleep_until(deadline);
    EXPECT_GE(clk::now(), deadline);
    auto t1 = clk::now();
    weft::this_task::sleep_until(clk::now() - 1s);  // in the past
    weft::this_task::sleep_for(0ms);
    weft::this_task::sleep_for(-3ms);
    EXPECT_LT(clk::now() - t1, 5s);
  });
}

// Many concurrent sleepers overlap: 200 tasks sleeping 50 ms each would take
// 10 s if sleeps occupied the worker; they must take far less.
TEST_P(ThisTaskTest, ConcurrentSleepsOverlap) {
  weft::runtime rt(options());
  constexpr int kTasks = 200;
  std::atomic<int> done{0};
  auto t0 = clk::now();
  rt.run([&] {
    weft::task_group g;
    for (int i = 0; i < kTasks; ++i) {
      g.spawn([&] {
        weft::this_task::sleep_for(50ms);
        done.fetch_add(1);
      });
    }
  });
  auto elapsed = clk::now() - t0;
  EXPECT_EQ(done.load(), kTasks);
  EXPECT_LT(elapsed, 5s) << "sleeps did not overlap";
  EXPECT_GE(elapsed, 50ms);
}

}  // namespace
