// weft-bench — section "kernels": the Cilk kernels of Concurrent Cilk (paper
// 004) §6.1, Figures 6 and 7, from examples/apps/kernels (weft_app_kernels).
//
// Figure 6 ("do no harm": plain kernels must not pay for the blocking
// machinery): LU, Strassen, Black-Scholes and Knapsack, each serial (the
// serial elision), with weft fork-join and with oneTBB (a tbb::task_arena of
// the same size) at each worker count of cfg.workers, in one run, medians of
// the reps (the configurations' runs interleaved). Goals: weft <= oneTBB per kernel and worker count, and weft on
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

// One configuration of a kernel: its runs are interleaved with the other
// configurations' (one run of each in turn, cfg.reps times), so that the
// load of a shared machine, which comes and goes, falls on all of them alike.
struct variant {
  std::string name, params, note;
  wk::options o;
  bool cpu_row = false;  // also a "<name> CPU time" row (serial and 1 worker)
  std::vector<double> wall_ms, cpu_ms;
  std::string error;  // the run threw: not measured
  std::string wrong;  // a check failed: the check's text
  wk::results last;
};

const row* add_rows(report& rep, variant& v, const row** cpu) {
  if (!v.error.empty()) {
    rep.add_missing("kernels", v.name, v.params, "error: " + v.error, true);
    return nullptr;
  }
  row out = make_row("kernels", v.name, v.params, v.wall_ms, "ms");
  out.note = v.note;
  if (v.o.waits != wk::wait_kind::none) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "; %ld of %ld leaves waited %.2f ms each: %.0f ms of waits for "
                  "%.0f ms of leaf compute (last run)", v.last.waits, v.last.leaves,
                  v.last.calibrated_wait_seconds * 1e3, v.last.wait_seconds * 1e3,
                  v.last.compute_seconds * 1e3);
    out.note += buf;
  }
  if (!v.wrong.empty()) {
    out.failed = true;
    out.note = "WRONG RESULT: " + v.wrong;
  }
  const bool ok = !out.failed;
  rep.add(std::move(out));
  if (v.cpu_row && ok && cpu != nullptr) {
    row c = make_row("kernels", v.name + " CPU time", v.params, v.cpu_ms, "ms");
    c.note = "CPU time of the thread running the work: less stretched than wall time by a "
             "loaded machine";
    rep.add(std::move(c));
    *cpu = rep.find("kernels", v.name + " CPU time", v.params);
  }
  return ok ? rep.find("kernels", v.name, v.params) : nullptr;
}

}  // namespace

void run_kernels(const config& cfg, report& rep) {
  const unsigned wmax = cfg.workers.back();
  for (wk::kernel k : wk::all_kernels) {
    const std::string kn = title(k);
    wk::options base;
    base.which = k;
    base.size = cfg.quick ? wk::quick_size(k) : wk::default_size(k);
    base.reps = 1;
    base.warmup = 0;
    const int reps = cfg.quick ? std::min(cfg.reps, 3) : cfg.reps;
    const std::string sp = size_param(k, base.size);
    watchdog_scope wd("kernels: " + kn, std::chrono::seconds(cfg.quick ? 300 : 1200));

    // Figure 6: serial, then weft and oneTBB per worker count.
    std::vector<variant> vs;
    auto add = [&](std::string name, std::string params, std::string note, wk::impl how,
                   unsigned w, bool cpu_row) {
      variant v;
      v.name = std::move(name);
      v.params = std::move(params);
      v.note = std::move(note);
      v.o = base;
      v.o.how = how;
      v.o.workers = w;
      v.cpu_row = cpu_row;
      vs.push_back(std::move(v));
    };
    add(kn + " serial", sp, "serial elision; Fig. 6 baseline", wk::impl::serial, 1, true);
    for (unsigned w : cfg.workers) {
      const std::string p = sp + ", " + workers_param(w);
      add(kn + " weft fork_join", p, "", wk::impl::weft, w, w == 1);
      if (wk::have_tbb())
        add(kn + " oneTBB", p, "tbb::task_arena(" + std::to_string(w) + ")", wk::impl::tbb, w,
            w == 1);
    }
    // Figure 7, at the largest worker count: the wait of a waiting leaf is
    // calibrated once (wait_every x the mean leaf compute time of two
    // unperturbed runs) and the same for both kinds of wait.
    const std::string p7 = sp + ", " + workers_param(wmax) + ", waits = compute";
    double leaf_wait = 0;
    std::string calib_error;
    try {
      wk::options c = base;
      c.how = wk::impl::weft;
      c.workers = wmax;
      c.waits = wk::wait_kind::weft_sleep;
      leaf_wait = wk::run(c).calibrated_wait_seconds;
    } catch (const std::exception& e) {
      calib_error = e.what();
    }
    const std::size_t fig7 = vs.size();
    add(kn + " weft + this_task::sleep_for waits", p7,
        "Fig. 7: the task sleeps, the worker runs other leaves", wk::impl::weft, wmax, false);
    add(kn + " weft + OS sleep waits", p7, "Fig. 7: std::this_thread::sleep_for blocks the worker",
        wk::impl::weft, wmax, false);
    vs[fig7].o.waits = wk::wait_kind::weft_sleep;
    vs[fig7 + 1].o.waits = wk::wait_kind::os_sleep;
    for (std::size_t i = fig7; i < vs.size(); ++i) {
      vs[i].o.leaf_wait_seconds = leaf_wait;
      if (!calib_error.empty()) vs[i].error = "calibration: " + calib_error;
    }

    for (int r = -cfg.warmup; r < reps; ++r) {
      for (variant& v : vs) {
        if (!v.error.empty()) continue;
        try {
          wk::results res = wk::run(v.o);
          if (!res.ok) v.wrong = res.check;
          if (r >= 0) {
            v.wall_ms.push_back(res.seconds.at(0) * 1e3);
            v.cpu_ms.push_back(res.cpu_seconds.at(0) * 1e3);
          }
          v.last = std::move(res);
        } catch (const std::exception& e) {
          v.error = e.what();
        }
      }
    }

    auto find = [&](const std::string& name, const std::string& params) -> variant* {
      for (variant& v : vs)
        if (v.name == name && v.params == params) return &v;
      return nullptr;
    };
    const row* serial_cpu = nullptr;
    const row* serial = add_rows(rep, *find(kn + " serial", sp), &serial_cpu);
    const row* weft_unperturbed = nullptr;
    for (unsigned w : cfg.workers) {
      const std::string p = sp + ", " + workers_param(w);
      const row* weft_cpu = nullptr;
      const row* weft = add_rows(rep, *find(kn + " weft fork_join", p), &weft_cpu);
      if (w == wmax) weft_unperturbed = weft;
      const row* tbb = nullptr;
      const row* tbb_cpu = nullptr;
      if (variant* t = find(kn + " oneTBB", p))
        tbb = add_rows(rep, *t, &tbb_cpu);
      else
        rep.add_missing("kernels", kn + " oneTBB", p, "n/a (oneTBB not found)");
      rep.add_ratio("kernels", kn + " weft / oneTBB", workers_param(w), weft, tbb,
                    goal_kind::at_most, 1.0, "Fig. 6: weft no slower than oneTBB");
      if (w == 1) {
        rep.add_ratio("kernels", kn + " weft / oneTBB (CPU time)", workers_param(w), weft_cpu,
                      tbb_cpu, goal_kind::none, 0,
                      "the same in CPU time, which the load of a shared machine stretches less");
        rep.add_ratio("kernels", kn + " weft 1 worker / serial", sp, weft, serial,
                      goal_kind::at_most, 1.1, "Fig. 6: overhead on one worker (paper: 1.1% geomean)");
        rep.add_ratio("kernels", kn + " weft 1 worker / serial (CPU time)", sp, weft_cpu,
                      serial_cpu, goal_kind::none, 0,
                      "the same in CPU time, which the load of a shared machine "
                      "stretches less");
      }
    }
    const row* hidden = add_rows(rep, vs[fig7], nullptr);
    const row* blocked = add_rows(rep, vs[fig7 + 1], nullptr);
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
