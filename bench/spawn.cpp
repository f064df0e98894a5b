// weft-bench — task creation: the cost of one weft::async against a thread.
//
// Inside one task: spawn M trivial asyncs, then get them all; ns per async =
// wall / M (timed inside the task, so runtime entry is excluded). Measured
// with M = 1000, repeated (the task records stay in cache), and with one huge
// M. The futures are got newest first (deque order: unstolen children run
// inline) and, as a second figure, oldest first (a get whose child is not at
// the bottom of the deque suspends the parent: the ProWS path).
// Baselines: std::async with std::launch::async (M spawned, then all got)
// and std::thread create+join one at a time (the paper's anchor: 3,230 ns).
#include <chrono>
#include <exception>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <weft/weft.hpp>

#include "bench.hpp"
#include "stats.hpp"

namespace weft_bench {
namespace {

enum class get_order { newest_first, oldest_first };

std::string count_params(long m, const std::string& extra) {
  return "M=" + std::to_string(m) + (extra.empty() ? "" : ", " + extra);
}

// A workload: `total` asyncs, spawned in batches of `batch` (all of a batch
// are spawned, then all of it is got).
struct workload {
  long total;
  long batch;
  std::string params(unsigned w) const {
    std::string s = batch == total ? "M=" + std::to_string(total)
                                   : "M=" + std::to_string(batch) + " x " +
                                         std::to_string(total / batch) + " batches";
    return s + ", " + workers_param(w);
  }
};

// One repetition inside the runtime; returns seconds, or -1 if a sum is wrong.
double weft_async_once(weft::runtime& rt, std::vector<weft::future<int>>& fs, workload wl,
                       get_order order) {
  return rt.run([&] {
    long sum = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (long done = 0; done < wl.total; done += wl.batch) {
      fs.clear();  // capacity kept: no page faults inside the timed region
      for (long i = 0; i < wl.batch; ++i) fs.push_back(weft::async([] { return 1; }));
      if (order == get_order::newest_first) {
        for (long i = wl.batch - 1; i >= 0; --i) sum += fs[static_cast<std::size_t>(i)].get();
      } else {
        for (long i = 0; i < wl.batch; ++i) sum += fs[static_cast<std::size_t>(i)].get();
      }
    }
    auto t1 = std::chrono::steady_clock::now();
    return sum == wl.total ? std::chrono::duration<double>(t1 - t0).count() : -1.0;
  });
}

std::string weft_name(get_order order) {
  return order == get_order::newest_first ? "weft::async + get (newest first)"
                                          : "weft::async + get (oldest first)";
}

row measure_weft(const config& cfg, workload wl, unsigned w, get_order order) {
  const std::string name = weft_name(order);
  const std::string params = wl.params(w);
  watchdog_scope wd("spawn: " + name + ", " + params, std::chrono::seconds(120));
  weft::runtime rt{weft::options{.workers = w}};
  std::vector<weft::future<int>> fs;
  fs.reserve(static_cast<std::size_t>(wl.batch));
  for (int i = 0; i < cfg.warmup; ++i) weft_async_once(rt, fs, wl, order);
  std::vector<double> samples;
  bool wrong = false;
  for (int i = 0; i < cfg.reps; ++i) {
    double s = weft_async_once(rt, fs, wl, order);
    if (s < 0) wrong = true;
    samples.push_back(s * 1e9 / static_cast<double>(wl.total));
  }
  row r = make_row("spawn", name, params, samples, "ns/async");
  if (wrong) {
    r.failed = true;
    r.note = "WRONG RESULT: sum of the futures != M";
  }
  return r;
}

row measure_std_async(const config& cfg, long m) {
  const std::string params = count_params(m, "spawn all, then get all");
  watchdog_scope wd("spawn: std::async, " + params, std::chrono::seconds(120));
  std::vector<std::future<int>> fs;
  fs.reserve(static_cast<std::size_t>(m));
  bool wrong = false;
  auto samples = time_reps(cfg.reps, cfg.warmup, [&] {
    fs.clear();
    for (long i = 0; i < m; ++i) fs.push_back(std::async(std::launch::async, [] { return 1; }));
    long sum = 0;
    for (auto& f : fs) sum += f.get();
    if (sum != m) wrong = true;
  });
  row r = make_row("spawn", "std::async(launch::async) + get", params,
                   scaled(samples, 1e9 / static_cast<double>(m)), "ns/async");
  if (wrong) {
    r.failed = true;
    r.note = "WRONG RESULT";
  }
  return r;
}

row measure_std_thread(const config& cfg, long m) {
  const std::string params = count_params(m, "one at a time");
  watchdog_scope wd("spawn: std::thread, " + params, std::chrono::seconds(120));
  long count = 0;
  auto samples = time_reps(cfg.reps, cfg.warmup, [&] {
    for (long i = 0; i < m; ++i) {
      std::thread t([&count] { ++count; });
      t.join();
    }
  });
  row r = make_row("spawn", "std::thread create+join", params,
                   scaled(samples, 1e9 / static_cast<double>(m)), "ns/thread");
  r.note = "paper anchor: 3,230 ns";
  if (count != m * (cfg.reps + cfg.warmup)) {
    r.failed = true;
    r.note = "WRONG RESULT: a thread did not run";
  }
  return r;
}

// this_task::yield() when nothing else needs the worker (no other task ready,
// no level switch): ns per call, timed inside one task.
row measure_yield(const config& cfg, unsigned w) {
  const long calls = cfg.quick ? 2'000'000 : 10'000'000;
  const std::string name = "this_task::yield (nothing else ready)";
  const std::string params = std::to_string(calls) + " calls, " + workers_param(w);
  watchdog_scope wd("spawn: " + name + ", " + params, std::chrono::seconds(120));
  weft::runtime rt{weft::options{.workers = w}};
  std::vector<double> samples;
  std::size_t suspended = 0;
  for (int i = 0; i < cfg.warmup + cfg.reps; ++i) {
    const std::size_t before = rt.stats().fibers_suspended;
    double s = rt.run([&] {
      auto t0 = std::chrono::steady_clock::now();
      for (long k = 0; k < calls; ++k) weft::this_task::yield();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
    suspended += rt.stats().fibers_suspended - before;
    if (i >= cfg.warmup) samples.push_back(s * 1e9 / static_cast<double>(calls));
  }
  row r = make_row("spawn", name, params, samples, "ns/yield");
  r.goal = goal_kind::at_most;
  r.goal_value = 20;
  r.note = std::to_string(suspended) + " of the yields suspended the task";
  return r;
}

template <class F>
void add_guarded(report& rep, const std::string& name, const std::string& params, F&& f) {
  try {
    rep.add(f());
  } catch (const std::exception& e) {
    rep.add_missing("spawn", name, params, std::string("error: ") + e.what(), true);
  }
}

}  // namespace

void run_spawn(const config& cfg, report& rep) {
  const long m_weft = cfg.quick ? 200'000 : 1'000'000;
  const long m_threads = cfg.quick ? 500 : 2'000;
  // Small batches stay in cache; one big batch also measures 1M live task
  // records and a 1M-entry deque.
  const workload batched{m_weft, 1000};
  const workload one_batch{m_weft, m_weft};

  for (const workload& wl : {batched, one_batch}) {
    for (unsigned w : cfg.workers) {
      add_guarded(rep, weft_name(get_order::newest_first), wl.params(w), [&] {
        row r = measure_weft(cfg, wl, w, get_order::newest_first);
        r.goal = goal_kind::at_most;
        r.goal_value = 30;
        return r;
      });
    }
  }
  for (unsigned w : cfg.workers) {
    add_guarded(rep, weft_name(get_order::oldest_first), one_batch.params(w),
                [&] { return measure_weft(cfg, one_batch, w, get_order::oldest_first); });
  }
  for (unsigned w : cfg.workers)
    add_guarded(rep, "this_task::yield (nothing else ready)", workers_param(w),
                [&] { return measure_yield(cfg, w); });
  add_guarded(rep, "std::async(launch::async) + get",
              count_params(m_threads, "spawn all, then get all"),
              [&] { return measure_std_async(cfg, m_threads); });
  add_guarded(rep, "std::thread create+join", count_params(m_threads, "one at a time"),
              [&] { return measure_std_thread(cfg, m_threads); });

  const row* weft1 = rep.find("spawn", weft_name(get_order::newest_first), one_batch.params(1));
  rep.add_ratio("spawn", "std::thread / weft::async", one_batch.params(1),
                rep.find("spawn", "std::thread create+join", count_params(m_threads, "one at a time")),
                weft1);
  rep.add_ratio("spawn", "std::async / weft::async", one_batch.params(1),
                rep.find("spawn", "std::async(launch::async) + get",
                         count_params(m_threads, "spawn all, then get all")),
                weft1);
}

}  // namespace weft_bench
