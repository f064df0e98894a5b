// Random mix stress: random task trees whose nodes run at random levels and
// combine their children's results through every mechanism — task_group
// spawn (inheriting or with a priority), async futures (run-time and typed),
// fork_join, parallel_for with a priority, priority_task_group — plus yields
// and detached less urgent side work. Every result is checked against a
// serial evaluation of the same tree, and every task checks it runs at its
// level. 1, 2 and 8 workers, both steal policies, both priority modes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "prio_test_util.hpp"

namespace {

using namespace weft_prio_test;

enum class kind { leaf, spawn, spawn_prio, async_rt, async_typed, fork_join, par_for, typed_group };
constexpr int kinds = 8;

struct node {
  std::uint64_t id = 0;
  unsigned level = 0;  // the level this node runs at
  kind k = kind::leaf;
  bool yield_first = false;
  int side_level = -1;  // >= 0: start detached side work of this (less urgent) level
  std::vector<std::unique_ptr<node>> children;
};

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

struct generator {
  std::mt19937_64 rng;
  std::uint64_t next_id = 1;
  std::size_t nodes = 0;
  std::size_t max_nodes;

  generator(std::uint64_t seed, std::size_t max) : rng(seed), max_nodes(max) {}
  unsigned uniform(unsigned lo, unsigned hi) {  // inclusive
    return std::uniform_int_distribution<unsigned>(lo, hi)(rng);
  }

  std::unique_ptr<node> make(unsigned level, int depth) {
    auto n = std::make_unique<node>();
    n->id = next_id++;
    n->level = level;
    ++nodes;
    n->yield_first = uniform(0, 4) == 0;
    if (level < weft::priority_levels - 1 && uniform(0, 9) == 0)
      n->side_level = static_cast<int>(uniform(level + 1, weft::priority_levels - 1));
    if (depth >= 10 || nodes >= max_nodes || (depth >= 2 && uniform(0, 9) < 2)) return n;  // leaf
    n->k = static_cast<kind>(uniform(1, kinds - 1));
    unsigned count = n->k == kind::fork_join ? 2 : uniform(depth < 3 ? 2 : 1, 4);
    // Children are at least as urgent as their parent (every wait is in the
    // right direction); half of the time at the same level.
    unsigned shared_level = uniform(0, 1) ? level : uniform(0, level);
    for (unsigned i = 0; i < count; ++i) {
      unsigned cl;
      switch (n->k) {
        case kind::spawn:
        case kind::fork_join:
          cl = level;  // inherited
          break;
        case kind::par_for:
          cl = shared_level;  // one priority for the whole loop
          break;
        default:
          cl = uniform(0, 1) ? level : uniform(0, level);
      }
      n->children.push_back(make(cl, depth + 1));
    }
    return n;
  }
};

// The serial meaning of a tree.
std::uint64_t combine(const node& n, const std::vector<std::uint64_t>& child_values) {
  std::uint64_t v = mix(n.id);
  for (std::size_t i = 0; i < child_values.size(); ++i) v += child_values[i] * (2 * i + 3);
  return v;
}

std::uint64_t serial(const node& n, std::uint64_t& side_sum, long& side_count) {
  std::vector<std::uint64_t> cv;
  for (auto& c : n.children) cv.push_back(serial(*c, side_sum, side_count));
  if (n.side_level >= 0) {
    side_sum += mix(~n.id);
    ++side_count;
  }
  return combine(n, cv);
}

struct context {
  bool adaptive;
  std::atomic<std::uint64_t> side_sum{0};
  std::atomic<long> side_count{0};
  std::atomic<long> executed{0};
  std::atomic<long> wrong_level{0};
  std::mutex m;
  std::string first_wrong;

  void check_level(const node& n) {
    executed.fetch_add(1, std::memory_order_relaxed);
    if (!adaptive) return;  // oblivious: every task runs at the default level
    unsigned got = level_now();
    if (got != n.level) {
      wrong_level.fetch_add(1);
      std::lock_guard lk(m);
      if (first_wrong.empty())
        first_wrong = "node " + std::to_string(n.id) + " (kind " +
                      std::to_string(static_cast<int>(n.k)) + ") ran at level " +
                      std::to_string(got) + ", want " + std::to_string(n.level);
    }
  }
};

template <class F>
decltype(auto) with_level(unsigned l, F&& f) {
  switch (l) {
    case 0: return f(std::integral_constant<unsigned, 0>{});
    case 1: return f(std::integral_constant<unsigned, 1>{});
    case 2: return f(std::integral_constant<unsigned, 2>{});
    case 3: return f(std::integral_constant<unsigned, 3>{});
    case 4: return f(std::integral_constant<unsigned, 4>{});
    case 5: return f(std::integral_constant<unsigned, 5>{});
    case 6: return f(std::integral_constant<unsigned, 6>{});
    default: return f(std::integral_constant<unsigned, 7>{});
  }
}

std::uint64_t exec(const node& n, context& cx);

// Typed execution of a node of level L (async_typed and typed_group kinds).
template <unsigned L>
std::uint64_t exec_typed(const node& n, context& cx, weft::task_context<L> ctx) {
  const std::size_t k = n.children.size();
  std::vector<std::uint64_t> cv(k, 0);
  if (n.k == kind::async_typed) {
    // One typed future per child; waited on in reverse order.
    std::vector<std::function<std::uint64_t()>> getters;
    for (std::size_t i = 0; i < k; ++i) {
      const node& c = *n.children[i];
      with_level(c.level, [&](auto C) {
        constexpr unsigned CL = decltype(C)::value;
        if constexpr (CL <= L) {
          auto f = std::make_shared<weft::priority_future<std::uint64_t, CL>>(weft::async(
              weft::at_priority<CL>,
              [&c, &cx](weft::task_context<CL>) { return exec(c, cx); }));
          getters.push_back([f, ctx] { return f->get(ctx); });
        } else {
          ADD_FAILURE() << "generator made a less urgent child";
          getters.push_back([] { return std::uint64_t{0}; });
        }
      });
    }
    for (std::size_t i = k; i-- > 0;) cv[i] = getters[i]();
  } else {
    weft::priority_task_group<L> g(ctx);
    for (std::size_t i = 0; i < k; ++i) {
      const node& c = *n.children[i];
      if (c.level == L && i % 2 == 0) {
        g.spawn([&c, &cx, &cv, i](weft::task_context<L>) { cv[i] = exec(c, cx); });
        continue;
      }
      with_level(c.level, [&](auto C) {
        constexpr unsigned CL = decltype(C)::value;
        if constexpr (CL <= L) {
          g.spawn(weft::at_priority<CL>,
                  [&c, &cx, &cv, i](weft::task_context<CL>) { cv[i] = exec(c, cx); });
        } else {
          ADD_FAILURE() << "generator made a less urgent child";
        }
      });
    }
    g.sync();
  }
  cx.check_level(n);  // still at its level after the waits
  return combine(n, cv);
}

std::uint64_t exec(const node& n, context& cx) {
  cx.check_level(n);
  if (n.yield_first) {
    weft::this_task::yield();
    cx.check_level(n);
  }
  if (n.side_level >= 0) {
    // Less urgent work may be created (never waited on) by a more urgent task.
    (void)weft::async(weft::priority{static_cast<unsigned>(n.side_level)}, [&cx, id = n.id] {
      cx.side_sum.fetch_add(mix(~id));
      cx.side_count.fetch_add(1);
    });
  }
  const std::size_t k = n.children.size();
  std::vector<std::uint64_t> cv(k, 0);
  switch (n.k) {
    case kind::leaf:
      break;
    case kind::spawn: {
      weft::task_group g;
      for (std::size_t i = 0; i < k; ++i) g.spawn([&, i] { cv[i] = exec(*n.children[i], cx); });
      g.sync();
      break;
    }
    case kind::spawn_prio: {
      weft::task_group g;
      for (std::size_t i = 0; i < k; ++i)
        g.spawn([&, i] { cv[i] = exec(*n.children[i], cx); }, weft::priority{n.children[i]->level});
      g.sync();
      break;
    }
    case kind::async_rt: {
      std::vector<weft::future<std::uint64_t>> fs;
      for (std::size_t i = 0; i < k; ++i) {
        const node& c = *n.children[i];
        fs.push_back(weft::async(weft::priority{c.level}, [&c, &cx] { return exec(c, cx); }));
      }
      for (std::size_t i = 0; i < k; ++i) cv[i] = fs[i].get();
      break;
    }
    case kind::fork_join: {
      auto [a, b] = weft::fork_join([&] { return exec(*n.children[0], cx); },
                                    [&] { return exec(*n.children[1], cx); });
      cv[0] = a;
      cv[1] = b;
      break;
    }
    case kind::par_for: {
      weft::parallel_for(std::size_t{0}, k, [&](std::size_t i) { cv[i] = exec(*n.children[i], cx); },
                         weft::priority{n.children[0]->level});
      break;
    }
    case kind::async_typed:
    case kind::typed_group:
      return with_level(n.level, [&](auto Lc) {
        constexpr unsigned L = decltype(Lc)::value;
        // This task was spawned at level L (check_level checks it): enter the
        // typed form with its own context, checked at run time.
        return exec_typed<L>(n, cx, weft::this_task::context<L>());
      });
  }
  cx.check_level(n);
  return combine(n, cv);
}

class PriorityStress : public PrioWorkers {};
INSTANTIATE_TEST_SUITE_P(Configs, PriorityStress, ::testing::ValuesIn(all_configs()),
                         prio_config_name);

TEST_P(PriorityStress, RandomTreesMatchSerial) {
  weft::runtime rt(options());
  const unsigned long long seed = weft_test::test_seed();
  const int trees = static_cast<int>(scaled(6, 3));
  const std::size_t max_nodes = static_cast<std::size_t>(scaled(1500, 400));
  for (int t = 0; t < trees; ++t) {
    generator gen(seed + static_cast<unsigned long long>(t) * 7919, max_nodes);
    const unsigned root_level = gen.uniform(0, weft::priority_levels - 1);
    std::unique_ptr<node> root = gen.make(root_level, 0);
    std::uint64_t want_side = 0;
    long want_side_count = 0;
    const std::uint64_t want = serial(*root, want_side, want_side_count);

    context cx;
    cx.adaptive = adaptive();
    std::uint64_t got = 0;
    if (t % 2 == 0) {
      got = rt.run(weft::priority{root_level}, [&] { return exec(*root, cx); });
    } else {
      got = with_level(root_level, [&](auto Lc) {
        constexpr unsigned L = decltype(Lc)::value;
        return rt.run(weft::at_priority<L>, [&](weft::task_context<L>) { return exec(*root, cx); });
      });
    }
    EXPECT_EQ(got, want) << "tree " << t << " (" << gen.nodes << " nodes, root level "
                         << root_level << ")";
    EXPECT_EQ(cx.wrong_level.load(), 0) << cx.first_wrong;
    EXPECT_GE(cx.executed.load(), static_cast<long>(gen.nodes));
    // Detached side work completes too (it may outlive the root).
    EXPECT_TRUE(weft_test::spin_until([&] { return cx.side_count.load() == want_side_count; }, 60s))
        << cx.side_count.load() << " of " << want_side_count << " side tasks ran";
    EXPECT_EQ(cx.side_sum.load(), want_side);
  }
}

// Many roots of random levels submitted concurrently from several threads,
// each a random tree: the levels interleave and compete for the workers.
TEST_P(PriorityStress, ConcurrentRootsOfAllLevels) {
  weft::runtime rt(options());
  const unsigned long long seed = weft_test::test_seed();
  const int threads = 4;
  const int per_thread = static_cast<int>(scaled(4, 2));
  const std::size_t max_nodes = static_cast<std::size_t>(scaled(400, 120));
  std::atomic<int> mismatches{0};
  std::atomic<long> wrong_levels{0};
  std::atomic<int> side_missing{0};
  std::vector<std::thread> ts;
  for (int th = 0; th < threads; ++th) {
    ts.emplace_back([&, th] {
      for (int r = 0; r < per_thread; ++r) {
        generator gen(seed ^ mix(static_cast<std::uint64_t>(th * 1000 + r)), max_nodes);
        const unsigned lvl = gen.uniform(0, weft::priority_levels - 1);
        auto root = gen.make(lvl, 0);
        std::uint64_t want_side = 0;
        long want_side_count = 0;
        const std::uint64_t want = serial(*root, want_side, want_side_count);
        context cx;
        cx.adaptive = adaptive();
        std::uint64_t got = rt.run(weft::priority{lvl}, [&] { return exec(*root, cx); });
        if (got != want) mismatches.fetch_add(1);
        wrong_levels.fetch_add(cx.wrong_level.load());
        if (!weft_test::spin_until([&] { return cx.side_count.load() == want_side_count; }, 60s) ||
            cx.side_sum.load() != want_side)
          side_missing.fetch_add(1);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(wrong_levels.load(), 0);
  EXPECT_EQ(side_missing.load(), 0);
}

}  // namespace
