// weft-bench — fib(n) without cutoff: the pure cost of spawning and joining.
//
// Every variant computes the doubly recursive fib(n) with one spawn per call
// (no serial cutoff), so ns per task = wall x workers / calls measures the
// scheduler's per-task overhead. Every result is checked against fib(n).
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include <weft/weft.hpp>

#if WEFT_BENCH_HAVE_TBB
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench.hpp"
#include "stats.hpp"

namespace weft_bench {

long fib_reference(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; ++i) {
    long t = a + b;
    a = b;
    b = t;
  }
  return a;
}

long fib_calls(int n) { return 2 * fib_reference(n + 1) - 1; }

long fib_weft_futures(int n) {
  if (n < 2) return n;
  auto f = weft::async(fib_weft_futures, n - 1);
  long b = fib_weft_futures(n - 2);
  return f.get() + b;
}

namespace {

// The serial baseline. The barrier on `a` keeps GCC from turning one of the
// two calls into a loop (tail recursion with an accumulator), which would
// halve the number of calls; the input is volatile (see measure below), so
// nothing can be constant-folded.
[[gnu::noinline]] long fib_serial(int n) {
  if (n < 2) return n;
  long a = fib_serial(n - 1);
  do_not_optimize(a);
  long b = fib_serial(n - 2);
  return a + b;
}

long fib_weft_fork_join(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::fork_join([&] { return fib_weft_fork_join(n - 1); },
                                [&] { return fib_weft_fork_join(n - 2); });
  return a + b;
}

long fib_weft_task_group(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  weft::task_group g;
  g.spawn([&] { a = fib_weft_task_group(n - 1); });
  b = fib_weft_task_group(n - 2);
  g.sync();
  return a + b;
}

#if WEFT_BENCH_HAVE_TBB
long fib_tbb(int n) {
  if (n < 2) return n;
  long a = 0, b = 0;
  tbb::task_group g;
  g.run([&] { a = fib_tbb(n - 1); });
  b = fib_tbb(n - 2);
  g.wait();
  return a + b;
}
#endif

#ifdef _OPENMP
long fib_omp(int n) {
  if (n < 2) return n;
  long x = 0, y = 0;
#pragma omp task shared(x)
  x = fib_omp(n - 1);
  y = fib_omp(n - 2);
#pragma omp taskwait
  return x + y;
}
#endif

std::string fib_params(int n, unsigned workers) {
  return "n=" + std::to_string(n) + ", " + workers_param(workers);
}

// Times `reps` runs of one_run(n) (n read from a volatile), checks each
// result and returns the row in ns per task (wall x workers / calls).
row measure(const config& cfg, const std::string& name, int n, unsigned workers,
            const std::function<long(int)>& one_run, const char* unit = "ns/task") {
  const std::string params = fib_params(n, workers);
  watchdog_scope wd("fib: " + name + ", " + params,
                    std::chrono::seconds(cfg.quick ? 120 : 400));
  const long expected = fib_reference(n);
  long wrong = expected;
  volatile int n_volatile = n;
  auto samples = time_reps(cfg.reps, cfg.warmup, [&] {
    long r = one_run(n_volatile);
    do_not_optimize(r);
    if (r != expected) wrong = r;
  });
  double ns_per_task_per_second = 1e9 * workers / static_cast<double>(fib_calls(n));
  row r = make_row("fib", name, params, scaled(samples, ns_per_task_per_second), unit);
  char buf[64];
  std::snprintf(buf, sizeof buf, "wall %.3g s", median(samples));
  r.note = buf;
  if (wrong != expected) {
    r.failed = true;
    r.note = "WRONG RESULT: got " + std::to_string(wrong) + ", expected " +
             std::to_string(expected);
  }
  return r;
}

void add_measured(report& rep, const config& cfg, const std::string& name, int n,
                  unsigned workers, const std::function<long(int)>& one_run,
                  goal_kind goal = goal_kind::none, double goal_value = 0,
                  const char* unit = "ns/task") {
  try {
    row r = measure(cfg, name, n, workers, one_run, unit);
    r.goal = goal;
    r.goal_value = goal_value;
    rep.add(std::move(r));
  } catch (const std::exception& e) {
    rep.add_missing("fib", name, fib_params(n, workers), std::string("error: ") + e.what(), true);
  }
}

}  // namespace

void run_fib(const config& cfg, report& rep) {
  const int n = cfg.quick ? 30 : 35;
  const int n_omp = cfg.quick ? 27 : 32;  // OpenMP tasks are slow; smaller n

  add_measured(rep, cfg, "serial (ns per call)", n, 1, fib_serial, goal_kind::none, 0,
               "ns/call");

  for (unsigned w : cfg.workers) {
    weft::runtime rt{weft::options{.workers = w}};
    add_measured(rep, cfg, "weft fork_join", n, w,
                 [&](int k) { return rt.run([k] { return fib_weft_fork_join(k); }); },
                 w == 1 ? goal_kind::at_most : goal_kind::none, 12);
    add_measured(rep, cfg, "weft futures (async/get)", n, w,
                 [&](int k) { return rt.run([k] { return fib_weft_futures(k); }); });
    add_measured(rep, cfg, "weft task_group", n, w,
                 [&](int k) { return rt.run([k] { return fib_weft_task_group(k); }); });
  }

  for (unsigned w : cfg.workers) {
#if WEFT_BENCH_HAVE_TBB
    tbb::task_arena arena(static_cast<int>(w));
    add_measured(rep, cfg, "oneTBB task_group", n, w, [&](int k) {
      long r = 0;
      arena.execute([&] { r = fib_tbb(k); });
      return r;
    });
#else
    rep.add_missing("fib", "oneTBB task_group", fib_params(n, w), "n/a (oneTBB not found)");
#endif
  }

  for (unsigned w : cfg.workers) {
#ifdef _OPENMP
    add_measured(rep, cfg, "OpenMP tasks (smaller n)", n_omp, w, [w](int k) {
      long r = 0;
      omp_set_num_threads(static_cast<int>(w));
#pragma omp parallel num_threads(static_cast<int>(w))
#pragma omp single
      r = fib_omp(k);
      return r;
    });
#else
    rep.add_missing("fib", "OpenMP tasks (smaller n)", fib_params(n_omp, w),
                    "n/a (OpenMP not found)");
#endif
  }

  // Ratios and goals.
  const unsigned wmax = cfg.workers.back();
  auto find = [&](const char* name, unsigned w) { return rep.find("fib", name, fib_params(n, w)); };
  rep.add_ratio("fib", "oneTBB / weft fork_join (ns per task)", workers_param(wmax),
                find("oneTBB task_group", wmax), find("weft fork_join", wmax),
                goal_kind::at_least, 2.5, "weft speedup over oneTBB");
  for (unsigned w : cfg.workers) {
    rep.add_ratio("fib", "weft futures / fork_join (ns per task)", workers_param(w),
                  find("weft futures (async/get)", w), find("weft fork_join", w),
                  goal_kind::at_most, 1.5);
  }
  for (unsigned w : cfg.workers) {
    rep.add_ratio("fib", "weft task_group / fork_join (ns per task)", workers_param(w),
                  find("weft task_group", w), find("weft fork_join", w));
  }
  rep.add_ratio("fib", "weft fork_join (1 worker) / serial", "per call",
                find("weft fork_join", 1), find("serial (ns per call)", 1), goal_kind::none,
                0, "spawn overhead factor");
  if (wmax > 1) {
    // Speedup T1/Tw = (ns1 x calls / 1) / (nsw x calls / w) = w x ns1 / nsw.
    const row* one = find("weft fork_join", 1);
    const row* many = find("weft fork_join", wmax);
    if (one && many && one->has_value() && many->has_value()) {
      row s = make_row("fib", "weft fork_join speedup", "1 -> " + workers_param(wmax),
                       {wmax * one->value / many->value}, "x");
      s.samples.clear();
      s.note = "ideal " + std::to_string(wmax) + "x; shared 2-core machine";
      rep.add(std::move(s));
    }
  }
}

}  // namespace weft_bench
