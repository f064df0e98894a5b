// weft-bench — locks: lock contention (issue 11). 2 and 8 tasks each
// increment one shared counter under one weft::mutex, against the same
// number of threads under one std::mutex and the same number of Boost.Fiber
// fibers (shared_work scheduler: algo::work_stealing keeps process-wide state that
// cannot be set up twice in one process) under one boost::fibers::mutex. ns per
// increment (total time / total increments), medians of cfg.reps runs, and
// the ratios weft/std and weft/Boost.Fiber from the same run.
// weft and Boost.Fiber run on min(tasks, hardware threads) threads; std on
// `tasks` threads (an OS thread per contender, as std::mutex users write it).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <weft/weft.hpp>

#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
#include <boost/fiber/all.hpp>
#endif

#include "bench.hpp"
#include "stats.hpp"

namespace weft_bench {
namespace {

using clock_type = std::chrono::steady_clock;

double ns_per(clock_type::time_point t0, long ops) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() / static_cast<double>(ops);
}

unsigned threads_for(unsigned tasks) {
  return std::max(1u, std::min(tasks, std::thread::hardware_concurrency()));
}

double weft_run(weft::runtime& rt, unsigned tasks, long per) {
  weft::mutex m;
  long counter = 0;
  auto t0 = clock_type::now();
  rt.run([&] {
    weft::task_group g;
    for (unsigned t = 0; t < tasks; ++t)
      g.spawn([&] {
        for (long i = 0; i < per; ++i) {
          std::lock_guard l(m);
          ++counter;
        }
      });
    g.sync();
  });
  double r = ns_per(t0, per * tasks);
  if (counter != per * static_cast<long>(tasks)) return -1;
  return r;
}

double std_run(unsigned tasks, long per) {
  std::mutex m;
  long counter = 0;
  auto t0 = clock_type::now();
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < tasks; ++t)
    ts.emplace_back([&] {
      for (long i = 0; i < per; ++i) {
        std::lock_guard l(m);
        ++counter;
      }
    });
  for (auto& t : ts) t.join();
  double r = ns_per(t0, per * tasks);
  if (counter != per * static_cast<long>(tasks)) return -1;
  return r;
}

#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
// Boost.Fiber's scheduler is set once per thread: each run
// uses fresh threads (helpers plus a driver thread).
double boost_run(unsigned tasks, long per) {
  const unsigned threads = threads_for(tasks);
  double result = -1;
  std::thread driver([&] {
    // Fiber-aware: a helper's main fiber waits here while its thread runs
    // the shared fibers (as bench/sync.cpp's with_boost_fibers).
    boost::fibers::mutex hm;
    boost::fibers::condition_variable hcv;
    bool done = false;
    std::vector<std::thread> helpers;
    for (unsigned i = 1; i < threads; ++i)
      helpers.emplace_back([&] {
        boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
        std::unique_lock lk(hm);
        hcv.wait(lk, [&] { return done; });
      });
    boost::fibers::use_scheduling_algorithm<boost::fibers::algo::shared_work>();
    boost::fibers::mutex m;
    long counter = 0;
    auto t0 = clock_type::now();
    std::vector<boost::fibers::fiber> fs;
    for (unsigned t = 0; t < tasks; ++t)
      fs.emplace_back([&] {
        for (long i = 0; i < per; ++i) {
          std::lock_guard l(m);
          ++counter;
        }
      });
    for (auto& f : fs) f.join();
    double r = ns_per(t0, per * tasks);
    {
      std::lock_guard lk(hm);
      done = true;
    }
    hcv.notify_all();
    for (auto& t : helpers) t.join();
    result = counter == per * static_cast<long>(tasks) ? r : -1;
  });
  driver.join();
  return result;
}
#endif

}  // namespace

void run_locks(const config& cfg, report& rep) {
  const long total = cfg.quick ? 200000 : 2000000;
  for (unsigned tasks : {2u, 8u}) {
    const long per = total / tasks;
    const std::string params = std::to_string(tasks) + " tasks, " + std::to_string(total) + " increments";
    weft::options o;
    o.workers = threads_for(tasks);
    weft::runtime rt(o);
    std::vector<double> w, s, b;
    bool bad = false;
    for (int r = 0; r < cfg.warmup + cfg.reps; ++r) {
      double x = weft_run(rt, tasks, per);
      double y = std_run(tasks, per);
      if (x < 0 || y < 0) bad = true;
      if (r >= cfg.warmup) {
        w.push_back(x);
        s.push_back(y);
      }
#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
      double z = boost_run(tasks, per);
      if (z < 0) bad = true;
      if (r >= cfg.warmup) b.push_back(z);
#endif
    }
    if (bad) {
      rep.add_missing("locks", "weft::mutex", params, "wrong count (lost increments)", true);
      continue;
    }
    rep.add(make_row("locks", "weft::mutex", params, w, "ns/op"));
    rep.add(make_row("locks", "std::mutex (threads)", params, s, "ns/op"));
#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
    rep.add(make_row("locks", "boost::fibers::mutex", params, b, "ns/op"));
#else
    rep.add_missing("locks", "boost::fibers::mutex", params, "not measured (Boost.Fiber not found)");
#endif
    rep.add_ratio("locks", "weft / std::mutex", params, rep.find("locks", "weft::mutex", params),
                  rep.find("locks", "std::mutex (threads)", params));
    rep.add_ratio("locks", "weft / boost::fibers::mutex", params, rep.find("locks", "weft::mutex", params),
                  rep.find("locks", "boost::fibers::mutex", params));
  }
}

}  // namespace weft_bench
