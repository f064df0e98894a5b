// APS behaviour (I-Cilk §3, §5): priority order is respected, urgent
// latency is bounded under a flood of less urgent work (and much better than
// with priority-oblivious scheduling), and no level starves when the levels
// above it are idle.
//
// Timing assertions use medians, ratios measured in the same test and
// generous bounds; sanitizer builds (WEFT_SANITIZER_BUILD, ~10x slower) relax
// them further. Every wait on a scheduler event is bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "prio_test_util.hpp"
#include "weft/io.hpp"

namespace {

using namespace weft_prio_test;

class PrioritySched : public PrioWorkers {};
INSTANTIATE_TEST_SUITE_P(Configs, PrioritySched, ::testing::ValuesIn(all_configs(false)),
                         prio_config_name);

// --- latency of urgent work under a flood --------------------------------------------

struct latency_result {
  std::vector<double> latency_ms;  // per level-0 request, submission to completion
  long flood_chunks_during = 0;    // flood progress while the requests ran
  double requests_ms = 0;          // wall time of the request phase
  bool flood_resumed = false;      // the flood progressed again after the requests
  bool ok = true;                  // request results were right
  bool stalled = false;            // the requests did not finish within the deadline
};

// 2 workers saturated by `flood` level-6 tasks that compute in ~chunk-long
// pieces and yield after each; a plain thread submits `requests` level-0
// requests one after another (rt.run(priority{0}, ...), a pause between them),
// each doing `steps` pieces of ~20 us of work, each followed by a yield (a
// blocking point, as an I/O wait would be). Latency: rt.run's wall time.
//
// Bounded: if the requests have not all finished by `deadline`, the flood is
// stopped (which lets a starved request run), the result is marked stalled and
// the remaining requests are skipped.
latency_result flood_latency(mode m, weft::steal_policy pol, int flood, int requests, int steps,
                             std::chrono::microseconds chunk, std::chrono::seconds deadline) {
  latency_result res;
  weft::runtime rt(options_for(2, m, pol));
  std::atomic<bool> stop{false};
  std::atomic<long> chunks{0};
  std::atomic<int> flood_started{0};
  std::thread flood_thread([&] {
    rt.run(weft::priority{6}, [&] {
      weft::task_group g;
      for (int i = 0; i < flood; ++i) {
        g.spawn([&] {
          flood_started.fetch_add(1, std::memory_order_relaxed);
          while (!stop.load(std::memory_order_relaxed)) {
            busy_for(chunk);
            chunks.fetch_add(1, std::memory_order_relaxed);
            weft::this_task::yield();
          }
        });
      }
      g.sync();
    });
  });
  // Wait until every flood task runs and the flood is in its steady state.
  weft_test::spin_until([&] { return flood_started.load() == flood; }, 30s);
  long c0 = chunks.load();
  weft_test::spin_until([&] { return chunks.load() > c0 + 4L * flood; }, 30s);

  const long before = chunks.load();
  const auto phase_start = clk::now();
  std::atomic<bool> give_up{false};
  std::atomic<bool> finished{false};
  std::thread submitter([&] {
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> gap_us(1000, 3000);
    for (int r = 0; r < requests && !give_up.load(); ++r) {
      std::this_thread::sleep_for(std::chrono::microseconds(gap_us(rng)));
      const auto t0 = clk::now();
      long v = rt.run(weft::priority{0}, [steps, r] {
        long acc = r;
        for (int s = 0; s < steps; ++s) {
          busy_for(20us);
          acc += s;
          weft::this_task::yield();
        }
        return acc;
      });
      res.latency_ms.push_back(ms(clk::now() - t0));
      if (v != r + static_cast<long>(steps) * (steps - 1) / 2) res.ok = false;
    }
    finished = true;
  });
  if (!weft_test::spin_until([&] { return finished.load(); },
                             std::chrono::duration_cast<std::chrono::milliseconds>(deadline))) {
    res.stalled = true;
    give_up = true;
    stop = true;  // ends the flood, so that a starved request gets to run
  }
  submitter.join();
  res.requests_ms = ms(clk::now() - phase_start);
  res.flood_chunks_during = chunks.load() - before;
  // After the urgent work is done the flood proceeds again (no starvation).
  const long after = chunks.load();
  res.flood_resumed =
      !stop.load() && weft_test::spin_until([&] { return chunks.load() > after + 2L * flood; }, 10s);
  stop = true;
  flood_thread.join();
  return res;
}

void print(const char* name, const latency_result& r) {
  std::printf("[ latency  ] %-10s median %7.3f ms  p90 %7.3f ms  max %7.3f ms  (%zu requests, "
              "flood %ld chunks in %.0f ms)\n",
              name, median(r.latency_ms), percentile(r.latency_ms, 0.9),
              percentile(r.latency_ms, 1.0), r.latency_ms.size(), r.flood_chunks_during,
              r.requests_ms);
  std::fflush(stdout);
}

struct policy_param {
  weft::steal_policy policy;
};
std::ostream& operator<<(std::ostream& os, policy_param p) {
  return os << (p.policy == weft::steal_policy::proactive ? "proactive" : "parsimonious");
}
std::string policy_name(const ::testing::TestParamInfo<policy_param>& i) {
  return i.param.policy == weft::steal_policy::proactive ? "proactive" : "parsimonious";
}
const auto both_policies = ::testing::Values(policy_param{weft::steal_policy::proactive},
                                             policy_param{weft::steal_policy::parsimonious});

class FloodLatency : public ::testing::TestWithParam<policy_param> {};
INSTANTIATE_TEST_SUITE_P(Policies, FloodLatency, both_policies, policy_name);

TEST_P(FloodLatency, UrgentRequestsUnderLowPriorityFlood) {
  // The flood's size sets the oblivious latency (a yielded request competes
  // with every flood task); it is the same in sanitizer builds so that the
  // comparison keeps its margin there.
  const int flood = 32;
  const int requests = static_cast<int>(scaled(21, 11));
  const int steps = 8;
  const auto chunk = 50us;
  const auto deadline = std::chrono::seconds(scaled(15, 60));
  // Bounded: a generous absolute bound (a request is ~0.2 ms of work; APS
  // needs at most about one quantum, 0.5 ms, plus one flood chunk to give it
  // a worker) and much better than priority-oblivious scheduling of the same
  // load. Timing is noisy on a loaded 2-core machine: a second measurement is
  // taken if the first misses a timing bound.
  const double bound_ms = sanitizer_build ? 250 : 50;
  const double min_ratio = sanitizer_build ? 2.0 : 3.0;
  // Oblivious scheduling is sometimes lucky: a resumed or injected request
  // that happens to run next on a worker (the ready queues' `next` slot) can
  // give it a good median for one run (seen: 0.6 ms against its usual 13 ms).
  // So APS must beat it by min_ratio in the median or in the 90th
  // percentile, and up to three measurements are taken.
  constexpr int attempts = 3;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    latency_result aps =
        flood_latency(mode::adaptive, GetParam().policy, flood, requests, steps, chunk, deadline);
    latency_result obl =
        flood_latency(mode::oblivious, GetParam().policy, flood, requests, steps, chunk, deadline);
    print("adaptive", aps);
    print("oblivious", obl);
    ASSERT_FALSE(aps.stalled) << "adaptive: the level-0 requests did not finish within "
                              << deadline.count() << " s (" << aps.latency_ms.size() << " of "
                              << requests << " done) under a level-6 flood";
    ASSERT_FALSE(obl.stalled) << "oblivious: the requests did not finish within "
                              << deadline.count() << " s (" << obl.latency_ms.size() << " of "
                              << requests << " done): work injected from outside the runtime "
                              << "starves while the flood keeps yielding";
    EXPECT_TRUE(aps.ok);
    EXPECT_TRUE(obl.ok);
    // The flood was not starved for good by the requests, in either mode.
    EXPECT_TRUE(aps.flood_resumed) << "the level-6 flood did not proceed after the requests";
    EXPECT_TRUE(obl.flood_resumed);
    const double aps_med = median(aps.latency_ms);
    const double obl_med = median(obl.latency_ms);
    const double aps_p90 = percentile(aps.latency_ms, 0.9);
    const double obl_p90 = percentile(obl.latency_ms, 0.9);
    std::printf("[ latency  ] attempt %d: oblivious / adaptive median = %.1fx, p90 = %.1fx\n",
                attempt, obl_med / aps_med, obl_p90 / aps_p90);
    std::fflush(stdout);
    const bool beats_oblivious = obl_med > min_ratio * aps_med || obl_p90 > min_ratio * aps_p90;
    const bool timing_ok = aps_med < bound_ms && beats_oblivious;
    if (weft_test::tsan_build) {
      // ThreadSanitizer serialises much of the runtime behind its own locks
      // and slows it 5-15x unevenly, so latency figures under TSan measure
      // TSan (CI saw a miss on a loaded machine). The bounds are asserted in
      // the release and ASan runs; here the run must complete, correctly.
      if (!timing_ok) std::printf("[ latency  ] TSan build: timing bounds not asserted\n");
      break;
    }
    if (timing_ok || attempt == attempts) {
      EXPECT_LT(aps_med, bound_ms) << "median latency of level-0 requests under a level-6 flood";
      EXPECT_TRUE(beats_oblivious)
          << "APS median " << aps_med << " ms, p90 " << aps_p90 << " ms vs oblivious median "
          << obl_med << " ms, p90 " << obl_p90 << " ms";
      break;
    }
  }
}

// Two level-6 tasks on two workers: one long strand that never reaches a
// strand boundary (it cannot be preempted; docs/priorities.md) and one that
// yields every 50 us. A level-0 request must not wait for the long strand: the
// other worker reaches a strand boundary almost at once and can serve it.
// Tried with the long strand on each worker in turn.
TEST_P(FloodLatency, UrgentRequestNotHeldByALongStrand) {
  const auto strand = 300ms;
  const double bound_ms = sanitizer_build ? 150 : 100;
  for (int placement = 0; placement < 2; ++placement) {
    weft::runtime rt(options_for(2, mode::adaptive, GetParam().policy));
    std::atomic<bool> stop{false};
    std::atomic<int> long_worker{-1};
    std::atomic<int> started{0};
    std::atomic<int> ids[2] = {-1, -1};
    auto task = [&](int me) {
      // Wait until the two tasks run on different workers, then take the
      // role given by this worker: the long strand on worker `placement`,
      // the yielding loop on the other.
      weft_test::yield_until([&] {
        ids[me] = weft::this_task::worker_id();
        int other = ids[1 - me].load();
        return other >= 0 && other != ids[me].load();
      }, 10s);
      ++started;
      if (weft::this_task::worker_id() == placement) {
        long_worker = placement;
        busy_for(strand);  // no strand boundary
      } else {
        while (!stop.load()) {
          busy_for(50us);
          weft::this_task::yield();
        }
      }
    };
    std::thread low([&] {
      rt.run(weft::priority{6}, [&] {
        weft::task_group g;
        g.spawn([&] { task(0); });
        g.spawn([&] { task(1); });
        g.sync();
      });
    });
    ASSERT_TRUE(weft_test::spin_until([&] { return started.load() == 2; }, 20s));
    std::this_thread::sleep_for(10ms);  // both running, APS settled
    if (long_worker.load() != placement) {
      stop = true;
      low.join();
      ADD_FAILURE() << "could not place the long strand on worker " << placement;
      continue;
    }
    const auto t0 = clk::now();
    int w = rt.run(weft::priority{0}, [] { return weft::this_task::worker_id(); });
    const double lat = ms(clk::now() - t0);
    stop = true;
    low.join();
    std::printf("[ strand   ] long strand on worker %d: level-0 request served by worker %d after "
                "%.2f ms\n", long_worker.load(), w, lat);
    EXPECT_LT(lat, bound_ms) << "the level-0 request waited for the long level-6 strand on worker "
                             << long_worker.load() << " although the other worker was free to "
                             << "switch within ~50 us";
  }
}

// --- priority order ----------------------------------------------------------------------

// Tasks of levels 0..7 created (in a shuffled order) by a level-0 root that
// does not wait for them; each records its level when it runs. Returns the
// order in which they ran.
std::vector<unsigned> run_order(weft::runtime& rt, int per_level, unsigned long long seed) {
  std::vector<unsigned> levels;
  for (unsigned l = 0; l < weft::priority_levels; ++l)
    for (int i = 0; i < per_level; ++i) levels.push_back(l);
  std::shuffle(levels.begin(), levels.end(), std::mt19937_64(seed));
  std::mutex m;
  std::vector<unsigned> log;
  auto futures = rt.run(weft::priority{0}, [&] {
    std::vector<weft::future<void>> fs;
    for (unsigned l : levels) {
      fs.push_back(weft::async(weft::priority{l}, [&, l] {
        busy_for(20us);
        std::lock_guard lk(m);
        log.push_back(l);
      }));
    }
    return fs;  // not waited on here: that would be an inversion
  });
  for (auto& f : futures) f.get();  // the test thread has no priority
  return log;
}

// With one worker, APS runs the levels strictly in order: every task of level
// l runs before any task of a less urgent level (the worker moves to a level
// only when all more urgent levels are out of work).
TEST_P(FloodLatency, OneWorkerRunsLevelsInOrder) {
  weft::runtime rt(options_for(1, mode::adaptive, GetParam().policy));
  const unsigned long long seed = weft_test::test_seed();
  for (int round = 0; round < 3; ++round) {
    std::vector<unsigned> log = run_order(rt, 8, seed + round);
    ASSERT_EQ(log.size(), 8u * weft::priority_levels);
    std::string order;
    for (unsigned l : log) order += static_cast<char>('0' + l);
    EXPECT_TRUE(std::is_sorted(log.begin(), log.end())) << "execution order by level: " << order;
  }
}

// With two workers two levels may run at once, but the more urgent levels
// still run first: of all pairs of tasks of different levels, most ran in
// level order (a random order gives one half). The threshold leaves room for
// a worker the OS does not run for a few milliseconds on a loaded machine:
// its level then waits while the other worker serves the levels below.
TEST_P(FloodLatency, TwoWorkersRunUrgentLevelsFirst) {
  weft::runtime rt(options_for(2, mode::adaptive, GetParam().policy));
  const unsigned long long seed = weft_test::test_seed();
  std::vector<unsigned> log = run_order(rt, 16, seed);
  ASSERT_EQ(log.size(), 16u * weft::priority_levels);
  long in_order = 0, pairs = 0;
  std::string order;
  for (std::size_t i = 0; i < log.size(); ++i) {
    order += static_cast<char>('0' + log[i]);
    for (std::size_t j = i + 1; j < log.size(); ++j) {
      if (log[i] == log[j]) continue;
      ++pairs;
      if (log[i] < log[j]) ++in_order;
    }
  }
  const double concordance = static_cast<double>(in_order) / static_cast<double>(pairs);
  std::printf("[ order    ] 2 workers: %.3f of the pairs ran in level order: %s\n", concordance,
              order.c_str());
  EXPECT_GT(concordance, 0.7) << order;
}

// The APS parameters are taken as given and any sensible setting keeps the
// order (one worker) and serves urgent work under a flood.
struct aps_params {
  std::chrono::microseconds quantum;
  double delta;
  double rho;
};
std::ostream& operator<<(std::ostream& os, const aps_params& p) {
  return os << "L=" << p.quantum.count() << "us delta=" << p.delta << " rho=" << p.rho;
}
class ApsParameters : public ::testing::TestWithParam<aps_params> {};
INSTANTIATE_TEST_SUITE_P(Settings, ApsParameters,
                         ::testing::Values(aps_params{100us, 0.9, 2.0}, aps_params{2000us, 0.75, 1.2},
                                           aps_params{500us, 0.5, 4.0}),
                         [](const ::testing::TestParamInfo<aps_params>& i) {
                           return "s" + std::to_string(i.index);
                         });

TEST_P(ApsParameters, HonouredAndEffective) {
  const aps_params ap = GetParam();
  for (unsigned w : {1u, 2u}) {
    weft::options o = options_for(w, mode::adaptive);
    o.aps_quantum = ap.quantum;
    o.aps_efficiency = ap.delta;
    o.aps_responsiveness = ap.rho;
    weft::runtime rt(o);
    EXPECT_EQ(rt.configuration().aps_quantum, ap.quantum);
    EXPECT_EQ(rt.configuration().aps_efficiency, ap.delta);
    EXPECT_EQ(rt.configuration().aps_responsiveness, ap.rho);
    EXPECT_EQ(rt.configuration().priorities, mode::adaptive);
    std::vector<unsigned> log = run_order(rt, 4, 99);
    ASSERT_EQ(log.size(), 4u * weft::priority_levels);
    if (w == 1) {
      EXPECT_TRUE(std::is_sorted(log.begin(), log.end()));
    }
    // An urgent request completes under a yielding level-7 flood.
    std::atomic<bool> stop{false};
    std::thread flood([&] {
      rt.run(weft::priority{7}, [&] {
        weft::task_group g;
        for (unsigned i = 0; i < 4 * w; ++i)
          g.spawn([&] {
            while (!stop.load()) {
              busy_for(50us);
              weft::this_task::yield();
            }
          });
        g.sync();
      });
    });
    std::this_thread::sleep_for(5ms);
    auto t0 = clk::now();
    int v = rt.run(weft::priority{0}, [] { return weft::this_task::current_priority().level() + 1; });
    double lat = ms(clk::now() - t0);
    stop = true;
    flood.join();
    EXPECT_EQ(v, 1);
    EXPECT_LT(lat, sanitizer_build ? 5000.0 : 1000.0) << ap;
  }
}

// --- no starvation ---------------------------------------------------------------------

long fib_tasks(int n) {
  if (n < 12) {
    long a = 0, b = 1;
    for (int i = 0; i < n; ++i) b = std::exchange(a, b) + b;
    return a;
  }
  if (n % 3 == 0) weft::this_task::yield();
  long x = 0, y = 0;
  weft::task_group g;
  g.spawn([&] { x = fib_tasks(n - 1); });
  y = fib_tasks(n - 2);
  g.sync();
  return x + y;
}

long fib_serial(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; ++i) b = std::exchange(a, b) + b;
  return a;
}

// Work of every level, the least urgent included, completes when nothing else
// runs — and with several workers, a lone level gets all of them (no worker
// is parked on an idle level).
TEST_P(PrioritySched, EveryLevelRunsWhenAlone) {
  weft::runtime rt(options());
  constexpr int n = static_cast<int>(scaled(22, 18));
  for (unsigned l = 0; l < weft::priority_levels; ++l) {
    long v = rt.run(weft::priority{l}, [] { return fib_tasks(n); });
    EXPECT_EQ(v, fib_serial(n)) << "level " << l;
  }
  // All workers join a level-7 barrier: only possible if the master gives the
  // lone ready level every worker.
  const int w = static_cast<int>(workers());
  std::atomic<int> arrived{0};
  std::atomic<int> passed{0};
  std::set<int> ids;
  std::mutex m;
  rt.run(weft::priority{7}, [&] {
    weft::task_group g;
    for (int i = 0; i < w; ++i) {
      g.spawn([&] {
        arrived.fetch_add(1);
        // Keep this worker busy (no yield: a yield could let another barrier
        // task take over this worker) until every worker has arrived.
        auto until = clk::now() + std::chrono::seconds(scaled(20, 60));
        while (arrived.load() < w && clk::now() < until) spin_work(1, 200);
        if (arrived.load() == w) passed.fetch_add(1);
        std::lock_guard lk(m);
        ids.insert(weft::this_task::worker_id());
      });
    }
    g.sync();
  });
  EXPECT_EQ(passed.load(), w) << "not every worker was given to the only ready level (7)";
  EXPECT_EQ(static_cast<int>(ids.size()), w);
}

// A level-7 job makes progress, gets (almost) nothing while a level-0 burst
// saturates the workers, and proceeds to completion after the burst.
TEST_P(PrioritySched, LowLevelProceedsAfterUrgentBurst) {
  weft::runtime rt(options());
  const int w = static_cast<int>(workers());
  const int low_tasks = 2 * w + 2;
  const int low_chunks = static_cast<int>(scaled(400, 100));  // per task, ~50 us each
  std::atomic<long> low_done{0};
  std::atomic<bool> burst_running{false};
  std::atomic<long> low_during_burst{0};
  std::thread low([&] {
    rt.run(weft::priority{7}, [&] {
      weft::parallel_for(0, low_tasks, 1, [&](int) {
        for (int c = 0; c < low_chunks; ++c) {
          busy_for(50us);
          if (burst_running.load(std::memory_order_relaxed)) low_during_burst.fetch_add(1);
          low_done.fetch_add(1);
          weft::this_task::yield();
        }
      });
    });
  });
  ASSERT_TRUE(weft_test::spin_until([&] { return low_done.load() > 10 * w; }, 30s))
      << "the level-7 job does not start";
  // The burst: level-0 work for every worker, ~30 ms each in 0.5 ms pieces.
  std::atomic<long> burst_chunks{0};
  const auto t0 = clk::now();
  rt.run(weft::priority{0}, [&] {
    weft::task_group g;
    for (int i = 0; i < 2 * w; ++i) {
      g.spawn([&] {
        for (int c = 0; c < 30; ++c) {
          if (c == 1) burst_running = true;  // after the first piece: APS has reacted
          busy_for(500us);
          burst_chunks.fetch_add(1);
          weft::this_task::yield();
        }
      });
    }
    g.sync();
    burst_running = false;
  });
  const double burst_ms = ms(clk::now() - t0);
  EXPECT_EQ(burst_chunks.load(), 2L * w * 30);
  // After the burst: the level-7 job proceeds and completes (with 8 workers on
  // 2 cores it may already have finished: while level 0's desire ramps up,
  // level 7 keeps the workers level 0 does not ask for yet).
  low.join();
  EXPECT_EQ(low_done.load(), static_cast<long>(low_tasks) * low_chunks);
  std::printf("[ burst    ] %u worker(s): level-0 burst %.1f ms; level-7 chunks during it: %ld\n",
              workers(), burst_ms, low_during_burst.load());
  if (w == 1) {
    // One worker: once the worker is at level 0 (within a quantum), level 7
    // runs nothing until the burst is over.
    EXPECT_LE(low_during_burst.load(), 4) << "level 7 ran during a level-0 burst on the only worker";
  }
}

// A sequential level-0 task uses one worker; with more workers, level 7 gets
// the others and progresses meanwhile (desire-driven allocation, not a
// blanket preference for the urgent level).
TEST_P(PrioritySched, LowLevelUsesWorkersTheUrgentLevelLeaves) {
  if (workers() < 2) GTEST_SKIP() << "needs a worker the urgent level does not use";
  weft::runtime rt(options());
  std::atomic<bool> stop{false};
  std::atomic<long> low_progress{0};
  std::thread low([&] {
    rt.run(weft::priority{7}, [&] {
      weft::task_group g;
      for (unsigned i = 0; i < 2 * workers(); ++i)
        g.spawn([&] {
          while (!stop.load()) {
            busy_for(50us);
            low_progress.fetch_add(1);
            weft::this_task::yield();
          }
        });
      g.sync();
    });
  });
  ASSERT_TRUE(weft_test::spin_until([&] { return low_progress.load() > 0; }, 30s));
  bool progressed = rt.run(weft::priority{0}, [&] {
    // Strictly sequential urgent work (one strand, yielding): make sure it is
    // running, then watch the level-7 counter.
    busy_for(2ms);
    long start = low_progress.load();
    auto until = clk::now() + std::chrono::seconds(scaled(10, 40));
    while (clk::now() < until) {
      busy_for(100us);
      weft::this_task::yield();
      if (low_progress.load() > start + 20) return true;
    }
    return false;
  });
  stop = true;
  low.join();
  EXPECT_TRUE(progressed) << "level 7 made no progress while level 0 ran a single strand";
}

// --- an urgent task resumed by I/O under a flood -----------------------------------

// The interactive-service shape (weft-bench "interactive"): a level-0 handler
// blocks on weft::io::read between requests, so its level has no ready work
// and APS gives it no worker; a level-6 flood keeps every worker busy. When a
// request arrives the resumed handler must get a worker at once (an early
// quantum), not wait for the next quantum boundary. The quantum is made long
// (100 ms: waiting for it would give a median near 50 ms) so that waiting
// for it is unmistakable, and far above the few milliseconds a loaded
// machine adds when it is slow to give the client thread a CPU (medians of
// 4-5 ms were seen with compilers running beside the test). Runs with 1
// worker (the only worker must switch level and come back) and 2.
class ResumedUrgent : public ::testing::TestWithParam<std::tuple<unsigned, policy_param>> {};
INSTANTIATE_TEST_SUITE_P(
    Configs, ResumedUrgent, ::testing::Combine(::testing::Values(1u, 2u), both_policies),
    [](const ::testing::TestParamInfo<std::tuple<unsigned, policy_param>>& info) {
      return "w" + std::to_string(std::get<0>(info.param)) + "_" +
             policy_name(::testing::TestParamInfo<policy_param>(std::get<1>(info.param), 0));
    });

TEST_P(ResumedUrgent, IoResumedHandlerDoesNotWaitForTheQuantum) {
  const unsigned workers = std::get<0>(GetParam());
  weft::options o = options_for(workers, mode::adaptive, std::get<1>(GetParam()).policy);
  o.aps_quantum = 100ms;
  weft::runtime rt(o);
  int req[2], rep[2];
  ASSERT_EQ(::pipe(req), 0);
  ASSERT_EQ(::pipe(rep), 0);
  const int requests = 30;
  std::atomic<bool> stop{false};
  std::atomic<long> flood_chunks{0};
  std::vector<double> latency_ms;
  bool client_ok = true;
  // The client: a plain thread, blocking pipes, one request at a time.
  std::thread client([&] {
    std::mt19937 g(7);
    std::uniform_int_distribution<int> think_us(0, 3000);
    // Let the flood start and the handler block first.
    const auto give_up = clk::now() + 30s;
    while (flood_chunks.load() < 20 && clk::now() < give_up) std::this_thread::sleep_for(1ms);
    if (flood_chunks.load() < 20) client_ok = false;  // then only EOF is sent
    for (int i = 0; i < requests && client_ok; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(2000 + think_us(g)));
      char c = static_cast<char>(i);
      auto t0 = clk::now();
      if (::write(req[1], &c, 1) != 1) client_ok = false;
      char r = 0;
      if (::read(rep[0], &r, 1) != 1 || r != static_cast<char>(c + 1)) client_ok = false;
      latency_ms.push_back(std::chrono::duration<double, std::milli>(clk::now() - t0).count());
    }
    ::close(req[1]);  // EOF ends the handler
  });
  int served = 0;
  rt.run(weft::priority(7), [&] {
    // The handler first: once level 6 has work, the root (level 7) may lose
    // its only worker at its next strand boundary, for as long as the flood
    // lasts (strict priority), and the flood only stops when the handler ends.
    auto handler = weft::async(weft::priority(0), [&] {
      char c;
      while (weft::io::read(req[0], &c, 1).get() == 1) {
        EXPECT_EQ(level_now(), 0u);
        char r = static_cast<char>(c + 1);
        weft::io::write_all(rep[1], &r, 1);
        ++served;
      }
      stop.store(true, std::memory_order_relaxed);
    });
    std::vector<weft::future<void>> flood;
    for (unsigned k = 0; k < 2 * workers; ++k) {
      flood.push_back(weft::async(weft::priority(6), [&] {
        while (!stop.load(std::memory_order_relaxed)) {
          busy_for(50us);
          flood_chunks.fetch_add(1, std::memory_order_relaxed);
          weft::this_task::yield();
        }
      }));
    }
    handler.get();
    for (auto& f : flood) f.get();
  });
  client.join();
  for (int fd : {req[0], rep[0], rep[1]}) ::close(fd);
  ASSERT_TRUE(client_ok);
  ASSERT_EQ(served, requests);
  const double med = median(latency_ms);
  std::printf("[ latency  ] %u worker(s): median %.3f ms, max %.3f ms (quantum 100 ms)\n", workers,
              med, *std::max_element(latency_ms.begin(), latency_ms.end()));
  if (weft_test::tsan_build) return;  // timing under TSan measures TSan (see above)
  // Waiting for the quantum boundary would give a median near 50 ms.
  EXPECT_LT(med, sanitizer_build ? 15.0 : 10.0)
      << "a level-0 task resumed by I/O waited for the APS quantum";
}

}  // namespace
