// Randomised stress: random DAGs mixing spawn/sync, fork_join, futures,
// shared futures, promises, ivars, parallel_reduce and yields, checked against
// a serial evaluation of the same DAG.
//
// Reproduce a failure with WEFT_TEST_SEED=<seed printed in the failure> and
// --gtest_filter=<the test>; the failing DAG is then the first one generated.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using u64 = std::uint64_t;

u64 mix(u64 x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
u64 combine(u64 a, u64 b) { return mix(a * 31 + b); }  // not commutative

// ------------------------------------------------- per-node nested work
//
// A random tree of nested parallel constructs, generated on the fly from a
// seed: the same seed gives the same shape in the parallel and the serial
// evaluation. Every construct computes a deterministic, order-sensitive value.
enum class shape : int { leaf, fork_join, group, future, ivar_pair, reduce, yield, promise, count };

shape pick(u64 seed, int depth) {
  if (depth <= 0) return shape::leaf;
  return static_cast<shape>(mix(seed ^ 0x51) % static_cast<u64>(shape::count));
}

u64 work_serial(u64 seed, int depth) {
  u64 s1 = mix(seed + 1), s2 = mix(seed + 2);
  switch (pick(seed, depth)) {
    case shape::leaf:
      return mix(seed);
    case shape::fork_join:
    case shape::future:
    case shape::ivar_pair:
    case shape::promise:
      return combine(work_serial(s1, depth - 1), work_serial(s2, depth - 1));
    case shape::group: {
      int k = 2 + static_cast<int>(mix(seed ^ 0x77) % 3);
      u64 acc = 0;
      for (int i = 0; i < k; ++i) acc = combine(acc, work_serial(mix(seed + 10 + static_cast<u64>(i)), depth - 1));
      return acc;
    }
    case shape::reduce: {
      int k = 1 + static_cast<int>(mix(seed ^ 0x99) % 6);
      u64 acc = 0;
      for (int i = 0; i < k; ++i) acc += work_serial(mix(seed + 20 + static_cast<u64>(i)), depth - 1);
      return acc;
    }
    case shape::yield:
      return mix(work_serial(s1, depth - 1));
    case shape::count:
      break;
  }
  return 0;
}

u64 work_parallel(u64 seed, int depth) {
  u64 s1 = mix(seed + 1), s2 = mix(seed + 2);
  switch (pick(seed, depth)) {
    case shape::leaf:
      return mix(seed);
    case shape::fork_join: {
      auto [a, b] = weft::fork_join([&] { return work_parallel(s1, depth - 1); },
                                    [&] { return work_parallel(s2, depth - 1); });
      return combine(a, b);
    }
    case shape::future: {
      weft::future<u64> fa = weft::async(work_parallel, s1, depth - 1);
      u64 b = work_parallel(s2, depth - 1);
      return combine(fa.get(), b);
    }
    case shape::ivar_pair: {
      // The reader (first branch) usually runs first and blocks on the ivar
      // that the second branch fills.
      weft::ivar<u64> iv;
      auto [a, unused] = weft::fork_join([&] { u64 x = iv.get(); return x; },
                                         [&] { iv.put(work_parallel(s1, depth - 1)); return 0; });
      (void)unused;
      return combine(a, work_parallel(s2, depth - 1));
    }
    case shape::promise: {
      weft::promise<u64> p;
      weft::future<u64> f = p.get_future();
      auto producer = weft::async([&p, s1, depth] { p.set_value(work_parallel(s1, depth - 1)); });
      u64 b = work_parallel(s2, depth - 1);
      u64 a = f.get();
      producer.get();
      return combine(a, b);
    }
    case shape::group: {
      int k = 2 + static_cast<int>(mix(seed ^ 0x77) % 3);
      u64 parts[4] = {};
      weft::task_group g;
      for (int i = 0; i < k; ++i) {
        g.spawn([&parts, i, seed, depth] {
          parts[i] = work_parallel(mix(seed + 10 + static_cast<u64>(i)), depth - 1);
        });
      }
      g.sync();
      u64 acc = 0;
      for (int i = 0; i < k; ++i) acc = combine(acc, parts[i]);
      return acc;
    }
    case shape::reduce: {
      int k = 1 + static_cast<int>(mix(seed ^ 0x99) % 6);
      return weft::parallel_reduce(0, k, 1, u64{0},
                                   [seed, depth](int i) { return work_parallel(mix(seed + 20 + static_cast<u64>(i)), depth - 1); },
                                   [](u64 a, u64 b) { return a + b; });
    }
    case shape::yield:
      weft::this_task::yield();
      return mix(work_parallel(s1, depth - 1));
    case shape::count:
      break;
  }
  return 0;
}

// ------------------------------------------------------------ the DAG

struct node {
  enum launch_t { spawn, async_kept, async_detached } launch;
  std::vector<int> deps;          // indices of earlier nodes
  std::vector<bool> via_future;   // read dep through its shared_future (else its ivar)
  u64 salt;
  int depth;                      // depth of the nested work
};

struct dag {
  std::vector<node> nodes;
  std::vector<int> launch_order;  // a random permutation: readers often launched before writers
};

dag make_dag(u64 seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  dag d;
  int n = uni(1, static_cast<int>(scaled(120, 40)));
  d.nodes.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    node& x = d.nodes[static_cast<std::size_t>(i)];
    x.launch = static_cast<node::launch_t>(uni(0, 2));
    x.salt = rng();
    x.depth = uni(0, static_cast<int>(scaled(5, 3)));
    int ndeps = i == 0 ? 0 : uni(0, std::min(i, 4));
    for (int k = 0; k < ndeps; ++k) {
      x.deps.push_back(uni(0, i - 1));
      x.via_future.push_back(uni(0, 1) == 1);
    }
  }
  d.launch_order.resize(static_cast<std::size_t>(n));
  std::iota(d.launch_order.begin(), d.launch_order.end(), 0);
  std::shuffle(d.launch_order.begin(), d.launch_order.end(), rng);
  return d;
}

u64 node_value(const node& x, u64 local, const std::vector<u64>& dep_values) {
  u64 v = combine(x.salt, local);
  for (u64 dv : dep_values) v = combine(v, dv);
  return v;
}

std::vector<u64> eval_serial(const dag& d) {
  std::vector<u64> val(d.nodes.size());
  for (std::size_t i = 0; i < d.nodes.size(); ++i) {
    const node& x = d.nodes[i];
    std::vector<u64> deps;
    for (int j : x.deps) deps.push_back(val[static_cast<std::size_t>(j)]);
    val[i] = node_value(x, work_serial(x.salt, x.depth), deps);
  }
  return val;
}

// Must run inside a task.
std::vector<u64> eval_parallel(const dag& d) {
  const std::size_t n = d.nodes.size();
  std::vector<weft::ivar<u64>> iv(n);
  std::vector<weft::promise<u64>> pr(n);
  std::vector<weft::shared_future<u64>> sf;
  for (auto& p : pr) sf.push_back(p.get_future().share());
  std::vector<weft::future<void>> kept;
  weft::task_group g;
  for (int i : d.launch_order) {
    auto body = [&d, &iv, &pr, &sf, i] {
      const node& x = d.nodes[static_cast<std::size_t>(i)];
      u64 local = work_parallel(x.salt, x.depth);
      std::vector<u64> deps;
      for (std::size_t k = 0; k < x.deps.size(); ++k) {
        auto j = static_cast<std::size_t>(x.deps[k]);
        deps.push_back(x.via_future[k] ? sf[j].get() : iv[j].get());
      }
      u64 v = node_value(x, local, deps);
      iv[static_cast<std::size_t>(i)].put(v);
      pr[static_cast<std::size_t>(i)].set_value(v);
    };
    switch (d.nodes[static_cast<std::size_t>(i)].launch) {
      case node::spawn: g.spawn(body); break;
      case node::async_kept: kept.push_back(weft::async(body)); break;
      case node::async_detached: (void)weft::async(body); break;
    }
  }
  std::vector<u64> val(n);
  // Read in reverse launch order, alternating the two channels.
  for (std::size_t k = n; k-- > 0;) {
    auto i = static_cast<std::size_t>(d.launch_order[k]);
    val[i] = (k % 2) ? iv[i].get() : sf[i].get();
  }
  for (auto& f : kept) f.get();
  g.sync();
  // Every node has put its ivar, so detached tasks have finished with iv/pr
  // except for the set_value right after the put: wait on the futures, which
  // are set last, before the vectors go away.
  for (auto& s : sf) s.wait();
  return val;
}

class RandomDag : public Workers {};
WEFT_INSTANTIATE_WORKERS(RandomDag);

TEST_P(RandomDag, MatchesSerialEvaluation) {
  const u64 base = test_seed();
  // Bounded in both count and time; sanitizer builds do fewer, smaller DAGs
  // in the same budget.
  const int max_dags = 3000;
  const auto budget = std::chrono::milliseconds(scaled(2000, 6000));
  auto rt = std::make_unique<weft::runtime>(options());
  auto t0 = clk::now();
  int done = 0;
  std::size_t nodes = 0;
  for (int k = 0; k < max_dags && (done < 3 || clk::now() - t0 < budget); ++k) {
    const u64 seed = base + static_cast<u64>(k);
    SCOPED_TRACE(::testing::Message() << "DAG seed WEFT_TEST_SEED=" << seed);
    dag d = make_dag(seed);
    std::vector<u64> expect = eval_serial(d);
    std::vector<u64> got;
    if (!run_bounded(rt, [&] { got = eval_parallel(d); }, std::chrono::seconds(60))) {
      std::cout << "[ FAILED   ] DAG with seed " << seed << " hung (" << d.nodes.size() << " nodes)\n";
      return;
    }
    ASSERT_EQ(got, expect) << "DAG seed " << seed << " (" << d.nodes.size() << " nodes)";
    ++done;
    nodes += d.nodes.size();
    if (k % 50 == 49) rt = std::make_unique<weft::runtime>(options());  // exercise fresh runtimes too
  }
  std::cout << "[ info     ] " << done << " random DAGs (" << nodes << " nodes) on " << workers()
            << " worker(s) in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count() << " ms"
            << std::endl;
}

// Many independent producer/consumer pipelines through ivars and promises
// running at once: lots of concurrent suspensions and wake-ups.
TEST_P(RandomDag, ConcurrentPipelines) {
  constexpr int kPipes = 32;
  constexpr int kLen = static_cast<int>(scaled(200, 50));
  weft::runtime rt(options());
  long total = rt.run([&] {
    std::atomic<long> sum{0};
    weft::task_group g;
    for (int p = 0; p < kPipes; ++p) {
      g.spawn([&sum, p] {
        std::vector<weft::ivar<long>> stage(static_cast<std::size_t>(kLen));
        auto [consumed, produced] = weft::fork_join(
            [&] {
              long s = 0;
              for (int i = 0; i < kLen; ++i) s += stage[static_cast<std::size_t>(i)].get();
              return s;
            },
            [&] {
              for (int i = 0; i < kLen; ++i) {
                if (i % 16 == 0) weft::this_task::yield();
                stage[static_cast<std::size_t>(i)].put(static_cast<long>(p) * i);
              }
              return 0;
            });
        (void)produced;
        sum.fetch_add(consumed);
      });
    }
    g.sync();
    return sum.load();
  });
  long expect = 0;
  for (int p = 0; p < kPipes; ++p) expect += static_cast<long>(p) * kLen * (kLen - 1) / 2;
  EXPECT_EQ(total, expect);
}

}  // namespace
