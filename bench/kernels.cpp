// weft-bench — section "kernels": the Cilk kernels of Concurrent Cilk (paper
// 004) §6.1, Figures 6 and 7, from examples/apps/kernels (weft_app_kernels).
//
// Figure 6 ("do no harm": plain kernels must not pay for the blocking
// machinery): LU, Strassen, Black-Scholes and Knapsack, each serial (the
// serial elision), with weft fork-join and with oneTBB (a tbb::task_arena of
// the same size) at each worker count of cfg.workers, in one run, medians of
// the reps. Goals: weft <= oneTBB per kernel and worker count, and weft on
// one worker within 1.1x of serial.
//
// Figure 7: the same kernels on weft at the largest worker count, perturbed
// by simulated waits totalling the leaves' compute time (half of the CPU
// time, as the paper's), once with weft::this_task::sleep_for (the task
// suspends, the worker runs other leaves) and once with
// std::this_thread::sleep_for (the worker blocks); the unperturbed time
// beside them. weft hides the waits when the first is close to the
// unperturbed time and the second about twice it.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "bench.hpp"

#if WEFT_BENCH_HAVE_KERNELS
#include "kernels.hpp"

namespace weft_bench {
namespace {

namespace wk = weft_kernels;

const char* title(wk::kernel k) {
  switch (k) {
    case wk::kernel::lu: return "lu";
    case wk::kernel::strassen: return "strassen";
    case wk::kernel::blackscholes: return "blackscholes";
    case wk::kernel::knapsack: return "knapsack";
  }
  return "?";
}

std::string size_param(wk::kernel k, long n) {
  switch (k) {
    case wk::kernel::lu:
    case wk::kernel::strassen: return "n=" + std::to_string(n);
    case wk::kernel::blackscholes: return std::to_string(n) + " options";
    case wk::kernel::knapsack: return std::to_string(n) + " items";
  }
  return "";
}

// Runs one configuration and adds its row (ms); returns the row or nullptr.
const row* measure(const config& cfg, report& rep, const wk::options& o, const std::string& name,
                   const std::string& params, const std::string& note) {
  watchdog_scope wd("kernels: " + name + ", " + params,
                    std::chrono::seconds(cfg.quick ? 120 : 600));
  try {
    wk::results r = wk::run(o);
    std::vector<double> ms;
    for (double s : r.seconds) ms.push_back(s * 1e3);
    row out = make_row("kernels", name, params, std::move(ms), "ms");
    out.note = note;
    if (o.waits != wk::wait_kind::none) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s%s%ld of %ld leaves waited %.2f ms each, %.0f ms of waits for %.0f ms of "
                    "leaf compute (last run)", note.c_str(), note.empty() ? "" : "; ", r.waits,
                    r.leaves, r.calibrated_wait_seconds * 1e3, r.wait_seconds * 1e3, r.compute_seconds * 1e3);
      out.note = buf;
    }
    if (!r.ok) {
      out.failed = true;
      out.note = "WRONG RESULT: " + r.check;
    }
    rep.add(std::move(out));
    return rep.find("kernels", name, params);
  } catch (const std::exception& e) {
    rep.add_missing("kernels", name, params, std::string("error: ") + e.what(), true);
    return nullptr;
  }
}

}  // namespace

void run_kernels(const config& cfg, report& rep) {
  const unsigned wmax = cfg.workers.back();
  for (wk::kernel k : wk::all_kernels) {
    const std::string kn = title(k);
    wk::options o;
    o.which = k;
    o.size = cfg.quick ? wk::quick_size(k) : wk::default_size(k);
    o.reps = cfg.quick ? std::min(cfg.reps, 5) : cfg.reps;
    o.warmup = cfg.warmup;
    const std::string sp = size_param(k, o.size);

    // Figure 6.
    o.how = wk::impl::serial;
    const row* serial = measure(cfg, rep, o, kn + " serial", sp, "serial elision; Fig. 6 baseline");
    const row* weft_unperturbed = nullptr;
    for (unsigned w : cfg.workers) {
      const std::string p = sp + ", " + workers_param(w);
      o.workers = w;
      o.how = wk::impl::weft;
      const row* weft = measure(cfg, rep, o, kn + " weft fork_join", p, "");
      if (w == wmax) weft_unperturbed = weft;
      const row* tbb = nullptr;
      if (wk::have_tbb()) {
        o.how = wk::impl::tbb;
        tbb = measure(cfg, rep, o, kn + " oneTBB", p, "tbb::task_arena(" + std::to_string(w) + ")");
      } else {
        rep.add_missing("kernels", kn + " oneTBB", p, "n/a (oneTBB not found)");
      }
      rep.add_ratio("kernels", kn + " weft / oneTBB", workers_param(w), weft, tbb,
                    goal_kind::at_most, 1.0, "Fig. 6: weft no slower than oneTBB");
      if (w == 1)
        rep.add_ratio("kernels", kn + " weft 1 worker / serial", sp, weft, serial,
                      goal_kind::at_most, 1.1, "Fig. 6: overhead on one worker (paper: 1.1% geomean)");
    }

    // Figure 7, at the largest worker count.
    o.workers = wmax;
    o.how = wk::impl::weft;
    o.wait_ratio = 1.0;
    const std::string p7 = sp + ", " + workers_param(wmax) + ", waits = compute";
    o.waits = wk::wait_kind::weft_sleep;
    const row* hidden = measure(cfg, rep, o, kn + " weft + this_task::sleep_for waits", p7,
                                "Fig. 7: the task sleeps, the worker runs other leaves");
    o.waits = wk::wait_kind::os_sleep;
    const row* blocked = measure(cfg, rep, o, kn + " weft + OS sleep waits", p7,
                                 "Fig. 7: std::this_thread::sleep_for blocks the worker");
    o.waits = wk::wait_kind::none;
    rep.add_ratio("kernels", kn + " OS sleep / this_task::sleep_for", workers_param(wmax), blocked,
                  hidden, goal_kind::none, 0, "Fig. 7: > 1 when weft hides the waits (about 2 if fully)");
    rep.add_ratio("kernels", kn + " this_task::sleep_for / unperturbed", workers_param(wmax), hidden,
                  weft_unperturbed, goal_kind::none, 0,
                  "Fig. 7: 1 = waits fully hidden, 2 = not at all");
  }
}

}  // namespace weft_bench

#else  // built without examples/ (WEFT_BUILD_EXAMPLES=OFF): no kernels

namespace weft_bench {
void run_kernels(const config&, report& rep) {
  rep.add_missing("kernels", "cilk kernels", "", "not measured: weft-bench was configured with "
                  "WEFT_BUILD_EXAMPLES=OFF (the kernels live in examples/apps/kernels)");
}
}  // namespace weft_bench
#endif
