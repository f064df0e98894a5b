// The priority API (include/weft/priority.hpp, priority_level.hpp, runtime.hpp,
// task_group.hpp, parallel.hpp): every entry point with 1, 2 and 8 workers,
// both steal policies and both priority modes; current_priority() inside
// tasks of each level; inheritance; the run-time inversion check.
//
// The binary is built with WEFT_PRIORITY_CHECKS=1 (tests/priority/CMakeLists.txt)
// so the run-time check is exercised in every build type.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "prio_test_util.hpp"

namespace {

using namespace weft_prio_test;

// Counts observations of a task's level and remembers the first wrong one.
struct level_log {
  std::atomic<int> seen{0};
  std::atomic<int> wrong{0};
  std::mutex m;
  std::string first_wrong;  // guarded by m

  void check(const char* where, unsigned want) {
    unsigned got = level_now();
    seen.fetch_add(1, std::memory_order_relaxed);
    if (got != want) {
      wrong.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard lk(m);
      if (first_wrong.empty())
        first_wrong = std::string(where) + ": level " + std::to_string(got) + ", want " +
                      std::to_string(want);
    }
  }
  // In oblivious mode every task runs at the default level, so there is
  // nothing to compare; only count.
  void expect_ok(bool adaptive, int min_seen) {
    EXPECT_GE(seen.load(), min_seen);
    if (adaptive) { EXPECT_EQ(wrong.load(), 0) << first_wrong; }
  }
};

class PriorityApi : public PrioWorkers {};
INSTANTIATE_TEST_SUITE_P(Configs, PriorityApi, ::testing::ValuesIn(all_configs()),
                         prio_config_name);

// --- the priority value type --------------------------------------------------------

TEST(PriorityValue, LevelsAndRange) {
  static_assert(weft::priority_levels == 8);
  static_assert(weft::default_priority_level == 3);
  static_assert(weft::priority::highest().level() == 0);
  static_assert(weft::priority::normal().level() == 3);
  static_assert(weft::priority::lowest().level() == 7);
  static_assert(weft::priority{2}.more_urgent_than(weft::priority{5}));
  static_assert(!weft::priority{5}.more_urgent_than(weft::priority{2}));
  static_assert(!weft::priority{4}.more_urgent_than(weft::priority{4}));
  static_assert(weft::priority{4} == weft::priority{4});
  static_assert(weft::task_context<6>::level == 6);
  static_assert(weft::at_priority<6>.value() == weft::priority{6});
  static_assert(decltype(weft::at_priority<1>)::level == 1);
  // Only the runtime makes contexts (tests/priority/compile_checks/forge_context.cpp
  // checks that user code cannot); a tag is not one.
  static_assert(!std::is_default_constructible_v<weft::task_context<6>>);
  static_assert(!std::is_constructible_v<weft::task_context<6>, weft::priority_tag<6>>);
  static_assert(!std::is_convertible_v<weft::priority_tag<6>, weft::task_context<6>>);
  static_assert(std::is_trivially_copyable_v<weft::task_context<6>>);
  static_assert(weft::priority_future<int, 4>::level == 4);
  for (unsigned l = 0; l < 8; ++l) EXPECT_EQ(weft::priority{l}.level(), l);
  EXPECT_THROW(weft::priority{8}, std::invalid_argument);
  EXPECT_THROW(weft::priority{1000}, std::invalid_argument);
  try {
    weft::priority p{9};
    (void)p;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("9"), std::string::npos) << e.what();
  }
  weft::priority_inversion e(1, 5);
  EXPECT_EQ(e.waiter_level, 1u);
  EXPECT_EQ(e.awaited_level, 5u);
  const std::logic_error& base = e;  // a logic_error
  EXPECT_NE(std::string(base.what()).find("priority inversion"), std::string::npos);
}

TEST(PriorityValue, OutsideRuntimeIsDefaultLevel) {
  EXPECT_EQ(weft::this_task::current_priority(), weft::priority::normal());
  unsigned other = 99;
  std::thread t([&] { other = weft::this_task::current_priority().level(); });
  t.join();
  EXPECT_EQ(other, weft::default_priority_level);
  EXPECT_EQ(weft::options{}.priorities, mode::adaptive);  // the default
}

// --- current_priority() in tasks of each level ----------------------------------------

TEST_P(PriorityApi, RunAtEachLevel) {
  weft::runtime rt(options());
  for (unsigned p = 0; p < weft::priority_levels; ++p) {
    auto [lvl, value] = rt.run(weft::priority{p}, [p] { return std::pair(level_now(), p * 10); });
    if (adaptive()) { EXPECT_EQ(lvl, p); }
    EXPECT_EQ(value, p * 10);
  }
  // An untagged root runs at the default level.
  EXPECT_EQ(rt.run([] { return level_now(); }), weft::default_priority_level);
  EXPECT_EQ(rt.async([] { return level_now(); }).get(), weft::default_priority_level);
  // Called from a task of the runtime, run(priority, f) just calls f.
  rt.run(weft::priority{2}, [&] {
    unsigned inner = rt.run(weft::priority{6}, [] { return level_now(); });
    if (adaptive()) { EXPECT_EQ(inner, 2u); }
  });
}

template <unsigned P>
void typed_root(weft::runtime& rt, bool adaptive) {
  auto [lvl, ctx_level] = rt.run(weft::at_priority<P>, [](weft::task_context<P> ctx) {
    static_assert(decltype(ctx)::level == P);
    return std::pair(level_now(), ctx.value().level());
  });
  if (adaptive) { EXPECT_EQ(lvl, P); }
  EXPECT_EQ(ctx_level, P);
}

TEST_P(PriorityApi, TypedRunAtEachLevel) {
  weft::runtime rt(options());
  [&]<unsigned... P>(std::integer_sequence<unsigned, P...>) {
    (typed_root<P>(rt, adaptive()), ...);
  }(std::make_integer_sequence<unsigned, weft::priority_levels>{});
}

// Children inherit their parent's level: task_group::spawn, async, fork_join,
// parallel_for / parallel_reduce, nested, and the parent keeps its level after
// every sync / get.
TEST_P(PriorityApi, ChildrenInheritTheirParentsLevel) {
  weft::runtime rt(options());
  for (unsigned p = 0; p < weft::priority_levels; ++p) {
    level_log log;
    unsigned sum = rt.run(weft::priority{p}, [&] {
      log.check("root", p);
      weft::task_group g;
      for (int i = 0; i < 4; ++i) {
        g.spawn([&] {
          log.check("spawned child", p);
          weft::task_group g2;
          g2.spawn([&] { log.check("grandchild", p); });
          g2.sync();
          log.check("child after sync", p);
        });
      }
      g.sync();
      log.check("root after sync", p);
      auto f = weft::async([&](unsigned x) {
        log.check("async child", p);
        return x + 1;
      }, 41u);
      unsigned v = f.get();
      log.check("root after get", p);
      auto [a, b] = weft::fork_join([&] { log.check("fork_join f", p); return 1u; },
                                    [&] { log.check("fork_join g", p); return 2u; });
      log.check("root after fork_join", p);
      weft::parallel_for(0, 64, [&](int) { log.check("parallel_for body", p); });
      unsigned r = weft::parallel_reduce(
          0, 64, 4, 0u, [&](int) { log.check("parallel_reduce map", p); return 1u; },
          [](unsigned x, unsigned y) { return x + y; });
      log.check("root at the end", p);
      return v + a + b + r;
    });
    EXPECT_EQ(sum, 42u + 1 + 2 + 64);
    log.expect_ok(adaptive(), 1 + 4 * 3 + 1 + 1 + 1 + 2 + 1 + 64 + 64 + 1);
  }
}

// Tasks spawned with a priority run at it, from a root of the least urgent
// level (so every wait is in the right direction): task_group::spawn(f, p),
// async(priority, f), parallel_for(..., p); and their children inherit it.
TEST_P(PriorityApi, SpawnedWithAPriorityRunsAtIt) {
  weft::runtime rt(options());
  level_log log;
  long total = rt.run(weft::priority{7}, [&] {
    weft::task_group g;
    std::atomic<long> acc{0};
    for (unsigned q = 0; q < weft::priority_levels; ++q) {
      g.spawn([&, q] {
        log.check("spawn(f, priority)", q);
        weft::task_group inner;
        inner.spawn([&, q] { log.check("its child", q); acc += 1; });
        inner.sync();
        acc += 10;
      }, weft::priority{q});
    }
    g.sync();
    log.check("root after sync", 7);
    for (unsigned q = 0; q < weft::priority_levels; ++q) {
      auto f = weft::async(weft::priority{q}, [&, q](long x) {
        log.check("async(priority)", q);
        auto child = weft::async([&, q] { log.check("async grandchild", q); return 1L; });
        return x + child.get();
      }, 100L);
      acc += f.get();
      log.check("root after get", 7);
      std::atomic<int> iters{0};
      weft::parallel_for(0, 50, [&, q](int) {
        log.check("parallel_for(p) body", q);
        ++iters;
      }, weft::priority{q});
      acc += iters.load();
      log.check("root after parallel_for", 7);
    }
    return acc.load();
  });
  EXPECT_EQ(total, 8 * (10 + 1) + 8 * 101 + 8 * 50);
  log.expect_ok(adaptive(), 8 * 2 + 1 + 8 * (2 + 1 + 50 + 1));
}

template <unsigned C, unsigned P>
void typed_child(weft::priority_task_group<P>& g, level_log& log, std::atomic<int>& n) {
  g.spawn(weft::at_priority<C>, [&](weft::task_context<C> ctx) {
    static_assert(decltype(ctx)::level == C);
    log.check("priority_task_group::spawn(at_priority<C>)", C);
    n += 1;
  });
}

// The typed API: rt.run(at_priority<P>), async(at_priority<Q>) -> priority_future,
// get(ctx) / wait(ctx) / is_ready / valid, priority_task_group<P> (own level
// and more urgent children), typed fork_join.
TEST_P(PriorityApi, TypedApi) {
  weft::runtime rt(options());
  level_log log;
  int result = rt.run(weft::at_priority<5>, [&](weft::task_context<5> ctx) {
    log.check("typed root", 5);
    // async at the same and at more urgent levels, with arguments.
    weft::priority_future<int, 5> same = weft::async(
        weft::at_priority<5>, [&](weft::task_context<5>, int a, std::string s) {
          log.check("async<5>", 5);
          return a + static_cast<int>(s.size());
        }, 10, std::string("abc"));
    weft::priority_future<int, 0> urgent = weft::async(weft::at_priority<0>, [&](weft::task_context<0> c0) {
      log.check("async<0>", 0);
      // A level-0 task may wait on level-0 work.
      auto inner = weft::async(weft::at_priority<0>, [&](weft::task_context<0>) {
        log.check("async<0> inside async<0>", 0);
        return 5;
      });
      return inner.get(c0) * 2;
    });
    weft::priority_future<void, 2> v = weft::async(weft::at_priority<2>, [&](weft::task_context<2>) {
      log.check("async<2> void", 2);
    });
    EXPECT_TRUE(same.valid());
    EXPECT_TRUE(urgent.valid());
    urgent.wait(ctx);
    EXPECT_TRUE(urgent.is_ready());
    int r = same.get(ctx) + urgent.get(ctx);
    v.get(ctx);
    log.check("typed root after gets", 5);

    // priority_task_group<5>: children of its own level and of every more
    // urgent level.
    std::atomic<int> n{0};
    {
      weft::priority_task_group<5> g(ctx);
      g.spawn([&](weft::task_context<5>) {
        log.check("priority_task_group::spawn(f)", 5);
        n += 100;
      });
      typed_child<0>(g, log, n);
      typed_child<1>(g, log, n);
      typed_child<2>(g, log, n);
      typed_child<3>(g, log, n);
      typed_child<4>(g, log, n);
      typed_child<5>(g, log, n);
      g.sync();
    }
    log.check("typed root after priority_task_group", 5);
    EXPECT_EQ(n.load(), 106);

    // Typed fork_join: both branches at the caller's level, with its context.
    auto [a, b] = weft::fork_join(
        ctx, [&](weft::task_context<5>) { log.check("fork_join(ctx) f", 5); return 1; },
        [&](weft::task_context<5>) { log.check("fork_join(ctx) g", 5); return 2; });
    return r + a + b;
  });
  EXPECT_EQ(result, 13 + 10 + 3);
  log.expect_ok(adaptive(), 1 + 1 + 1 + 1 + 1 + 1 + 1 + 6 + 1 + 2);
}

// get_outside_runtime: for threads with no priority; refused inside a task.
TEST_P(PriorityApi, GetOutsideRuntime) {
  weft::runtime rt(options());
  // A typed future created in a task and waited on from the test thread.
  auto f = rt.run(weft::at_priority<1>, [](weft::task_context<1>) {
    return weft::async(weft::at_priority<6>, [](weft::task_context<6>) { return level_now(); });
  });
  unsigned lvl = f.get_outside_runtime();
  if (adaptive()) { EXPECT_EQ(lvl, 6u); }
  rt.run(weft::at_priority<4>, [](weft::task_context<4> ctx) {
    auto g = weft::async(weft::at_priority<4>, [](weft::task_context<4>) { return 1; });
    EXPECT_THROW(g.get_outside_runtime(), std::logic_error);
    EXPECT_EQ(g.get(ctx), 1);  // still usable
  });
}

// The run-time doors into the typed form hand a task only the context of its
// own level: this_task::context<P>() and a nested rt.run(at_priority<P>)
// (which runs f in the calling task) throw from a task of another level, and
// this_task::context<P>() throws outside a task. In priority-oblivious mode
// levels are not tracked and any P is accepted.
TEST_P(PriorityApi, ContextOnlyForTheCallersLevel) {
  weft::runtime rt(options());
  EXPECT_THROW((void)weft::this_task::context<2>(), std::logic_error);  // not a task
  int ran = 0, nested = 0;
  bool own_ok = false, other_threw = false, nested_other_threw = false;
  rt.run(weft::priority{2}, [&] {
    weft::task_context<2> c2 = weft::this_task::context<2>();  // this task's own level
    own_ok = c2.level == 2;
    try {
      (void)weft::this_task::context<6>();
    } catch (const std::logic_error& e) {
      other_threw = true;
      EXPECT_NE(std::string(e.what()).find("runs at level 2"), std::string::npos) << e.what();
    }
    // Nested run at the caller's own level: f runs in this task, with its context.
    nested += rt.run(weft::at_priority<2>, [&](weft::task_context<2>) {
      ++ran;
      return level_now() == 2 || !adaptive() ? 1 : 0;
    });
    try {
      nested += rt.run(weft::at_priority<7>, [&](weft::task_context<7>) { ++ran; return 1; });
    } catch (const std::logic_error&) {
      nested_other_threw = true;
    }
  });
  EXPECT_TRUE(own_ok);
  EXPECT_EQ(other_threw, adaptive());
  EXPECT_EQ(nested_other_threw, adaptive());
  EXPECT_EQ(ran, adaptive() ? 1 : 2);
  EXPECT_EQ(nested, adaptive() ? 1 : 2);
}

// Exceptions cross priority levels like values.
TEST_P(PriorityApi, ExceptionsPropagateAcrossLevels) {
  weft::runtime rt(options());
  EXPECT_THROW(rt.run(weft::priority{6}, [] { throw std::runtime_error("root"); }),
               std::runtime_error);
  rt.run(weft::priority{6}, [] {
    auto f = weft::async(weft::priority{1}, []() -> int { throw std::runtime_error("level 1"); });
    EXPECT_THROW(f.get(), std::runtime_error);
    weft::task_group g;
    g.spawn([] { throw std::out_of_range("level 0 child"); }, weft::priority{0});
    g.spawn([] {}, weft::priority{6});
    EXPECT_THROW(g.sync(), std::out_of_range);
    EXPECT_THROW(weft::parallel_for(0, 10, [](int i) {
      if (i == 7) throw std::runtime_error("body");
    }, weft::priority{2}), std::runtime_error);
  });
  rt.run(weft::at_priority<6>, [](weft::task_context<6> ctx) {
    auto f = weft::async(weft::at_priority<3>, [](weft::task_context<3>) -> int {
      throw std::logic_error("typed");
    });
    EXPECT_THROW(f.get(ctx), std::logic_error);
  });
}

// A task of any level keeps its level across every suspension point (yield,
// sleep, get, sync) while tasks of all levels compete for the workers — with
// one worker, every level switch goes through the same thread.
TEST_P(PriorityApi, LevelStableAcrossSuspensionPoints) {
  weft::runtime rt(options());
  level_log log;
  const int rounds = static_cast<int>(scaled(12, 4));
  std::vector<std::thread> roots;
  std::atomic<long> sum{0};
  for (unsigned p = 0; p < weft::priority_levels; ++p) {
    roots.emplace_back([&, p] {
      long s = rt.run(weft::priority{p}, [&, p] {
        long acc = 0;
        for (int r = 0; r < rounds; ++r) {
          weft::this_task::yield();
          log.check("after yield", p);
          weft::this_task::sleep_for(std::chrono::microseconds(50 + 10 * p));
          log.check("after sleep", p);
          // A child at the same level, and one at every more urgent level.
          for (unsigned q = 0; q <= p; ++q) {
            auto f = weft::async(weft::priority{q}, [&, q] {
              weft::this_task::yield();
              log.check("more urgent child after yield", q);
              return static_cast<long>(q);
            });
            acc += f.get();
            log.check("after get", p);
          }
          weft::task_group g;
          for (int i = 0; i < 3; ++i)
            g.spawn([&, p] {
              spin_work(7, 2000);
              weft::this_task::yield();
              log.check("child after yield", p);
            });
          g.sync();
          log.check("after sync", p);
        }
        return acc;
      });
      sum += s;
    });
  }
  for (auto& t : roots) t.join();
  long want = 0;
  for (unsigned p = 0; p < weft::priority_levels; ++p) want += rounds * static_cast<long>(p * (p + 1) / 2);
  EXPECT_EQ(sum.load(), want);
  log.expect_ok(adaptive(), rounds * 8 * 6);
}

// --- the run-time inversion check ----------------------------------------------------

// A level-1 task get()s a level-5 weft::async future: priority_inversion naming
// both levels (and the same for wait, wait_for, shared_future). The future is
// not consumed by the rejected get and can be waited on from the right place.
TEST_P(PriorityApi, RuntimeCheckRejectsInversion) {
  if (!adaptive()) GTEST_SKIP() << "oblivious mode runs every task at the default level; no checks";
#if !WEFT_PRIORITY_CHECKS
  GTEST_SKIP() << "built without WEFT_PRIORITY_CHECKS";
#endif
  weft::runtime rt(options());
  unsigned waiter = 99, awaited = 99;
  std::string what;
  int wait_throws = 0, wait_for_throws = 0, wait_until_throws = 0, shared_throws = 0,
      shared_wait_throws = 0, shared_wait_for_throws = 0, shared_wait_until_throws = 0;
  auto leftover = rt.run(weft::priority{1}, [&] {
    auto f = weft::async(weft::priority{5}, [] { return 5; });
    try {
      (void)f.get();
      ADD_FAILURE() << "get() of a level-5 future from a level-1 task did not throw";
    } catch (const weft::priority_inversion& e) {
      waiter = e.waiter_level;
      awaited = e.awaited_level;
      what = e.what();
    }
    EXPECT_TRUE(f.valid());
    try { f.wait(); } catch (const weft::priority_inversion&) { ++wait_throws; }
    try { (void)f.wait_for(1ms); } catch (const weft::priority_inversion&) { ++wait_for_throws; }
    try {
      (void)f.wait_until(clk::now() + 1ms);
    } catch (const weft::priority_inversion&) {
      ++wait_until_throws;
    }
    auto sf = weft::async(weft::priority{7}, [] { return 7; }).share();
    try { (void)sf.get(); } catch (const weft::priority_inversion&) { ++shared_throws; }
    try { sf.wait(); } catch (const weft::priority_inversion&) { ++shared_wait_throws; }
    // The timed waits of a shared_future are checked too (they share the
    // future's wait helper), also with the value already there: wait until
    // the level-7 task has finished, from the level-1 task, without waiting.
    auto until = clk::now() + 20s;
    while (!sf.is_ready() && clk::now() < until) weft::this_task::sleep_for(1ms);
    EXPECT_TRUE(sf.is_ready());  // is_ready is not a wait: never an inversion
    try {
      (void)sf.wait_for(0ms);
    } catch (const weft::priority_inversion& e) {
      ++shared_wait_for_throws;
      EXPECT_EQ(e.waiter_level, 1u);
      EXPECT_EQ(e.awaited_level, 7u);
    }
    try {
      (void)sf.wait_until(std::chrono::system_clock::now() + 1ms);
    } catch (const weft::priority_inversion&) {
      ++shared_wait_until_throws;
    }
    return f;
  });
  EXPECT_EQ(waiter, 1u);
  EXPECT_EQ(awaited, 5u);
  EXPECT_NE(what.find("priority inversion"), std::string::npos) << what;
  EXPECT_NE(what.find("priority 1"), std::string::npos) << what;
  EXPECT_NE(what.find("priority 5"), std::string::npos) << what;
  EXPECT_EQ(wait_throws, 1);
  EXPECT_EQ(wait_for_throws, 1);
  EXPECT_EQ(wait_until_throws, 1);
  EXPECT_EQ(shared_throws, 1);
  EXPECT_EQ(shared_wait_throws, 1);
  EXPECT_EQ(shared_wait_for_throws, 1);
  EXPECT_EQ(shared_wait_until_throws, 1);
  // A thread outside the runtime has no priority: it may wait on it.
  EXPECT_EQ(leftover.get(), 5);
}

// The check compares the waiter's own level, at every level pair.
TEST_P(PriorityApi, RuntimeCheckEveryLevelPair) {
  weft::runtime rt(options());
  int throws = 0, want_throws = 0;
  for (unsigned w = 0; w < weft::priority_levels; ++w) {
    rt.run(weft::priority{w}, [&, w] {
      for (unsigned a = 0; a < weft::priority_levels; ++a) {
        bool inversion = a > w;
        if (inversion && adaptive() && WEFT_PRIORITY_CHECKS) ++want_throws;
        auto f = weft::async(weft::priority{a}, [a] { return a; });
        try {
          EXPECT_EQ(f.get(), a);
        } catch (const weft::priority_inversion& e) {
          ++throws;
          EXPECT_TRUE(inversion) << "level " << w << " waiting on level " << a << " threw";
          EXPECT_EQ(e.waiter_level, w);
          EXPECT_EQ(e.awaited_level, a);
        }
      }
      return 0;
    });
  }
  EXPECT_EQ(throws, want_throws);
}

// No false alarms: waits in the right direction, waits on futures of unknown
// level (promise), and untagged children (same level) never throw — also after
// the waiter migrated between workers.
TEST_P(PriorityApi, RuntimeCheckAcceptsValidWaits) {
  weft::runtime rt(options());
  EXPECT_NO_THROW(rt.run(weft::priority{5}, [&] {
    auto a = weft::async(weft::priority{1}, [] { return 1; });
    auto b = weft::async(weft::priority{5}, [] { return 2; });
    auto c = weft::async([] { return 3; });  // inherits 5
    auto d = weft::async(weft::priority{3}, [] { return 4; });
    weft::this_task::yield();
    EXPECT_EQ(a.get() + b.get() + c.get() + d.get(), 10);
    weft::task_group g;
    g.spawn([] {}, weft::priority{0});
    g.spawn([] {}, weft::priority{5});
    g.spawn([] {});
    g.sync();
    weft::parallel_for(0, 8, [](int) {}, weft::priority{4});
    auto s = weft::async(weft::priority{2}, [] { return 2; }).share();
    EXPECT_EQ(s.get(), 2);
    s.wait();
    EXPECT_EQ(s.wait_for(1s), std::future_status::ready);
  }));
  EXPECT_NO_THROW(rt.run(weft::priority{0}, [&] {
    weft::promise<int> pr;
    auto f = pr.get_future();
    auto setter = weft::async(weft::priority{0}, [&] { pr.set_value(9); });
    EXPECT_EQ(f.get(), 9);  // a promise's future has no level: never an inversion
    setter.get();
    weft::task_group g;
    g.spawn([] {}, weft::priority{0});
    g.sync();
  }));
}

// task_group: a level-1 task syncing on a level-5 child is an inversion, and
// the check rejects it naming both levels (at sync, or already at spawn).
// After the rejection, leaving the group's scope must neither throw again nor
// terminate, and a child that was spawned must not outlive the group.
TEST_P(PriorityApi, RuntimeCheckTaskGroupSync) {
  if (!adaptive()) GTEST_SKIP() << "oblivious mode runs every task at the default level; no checks";
#if !WEFT_PRIORITY_CHECKS
  GTEST_SKIP() << "built without WEFT_PRIORITY_CHECKS";
#endif
  weft::runtime rt(options());
  std::atomic<bool> child_done{false};
  unsigned waiter = 99, awaited = 99;
  bool rejected = false, spawned = false, scope_exit_threw = false, done_at_scope_exit = false;
  rt.run(weft::priority{1}, [&] {
    try {
      weft::task_group g;
      try {
        g.spawn([&] {
          weft::this_task::sleep_for(20ms);
          child_done = true;
        }, weft::priority{5});
        spawned = true;
        g.sync();
      } catch (const weft::priority_inversion& e) {
        rejected = true;
        waiter = e.waiter_level;
        awaited = e.awaited_level;
      }
    } catch (const weft::priority_inversion&) {
      scope_exit_threw = true;
    }
    done_at_scope_exit = child_done.load();
    // Whatever happened, do not leave while the child may still run. Sleep,
    // not yield: a yielding level-1 task would keep the only worker from the
    // level-5 child.
    auto until = clk::now() + 20s;
    while (spawned && !child_done.load() && clk::now() < until) weft::this_task::sleep_for(1ms);
    weft::this_task::sleep_for(5ms);
  });
  EXPECT_TRUE(rejected) << "a level-1 task synced on a level-5 child without priority_inversion";
  EXPECT_EQ(waiter, 1u);
  EXPECT_EQ(awaited, 5u);
  EXPECT_FALSE(scope_exit_threw)
      << "~task_group threw priority_inversion again after the rejected sync(), leaving the "
         "scope with the level-5 child still running (it then touches the destroyed group)";
  if (spawned) {
    EXPECT_TRUE(done_at_scope_exit) << "the task_group's scope ended before its child finished";
  }
}

}  // namespace
