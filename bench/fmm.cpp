// weft-bench — section "fmm": the fast multipole method with futures
// (Fibertures, 003 §4.2, Tables 4.3-4.4).
//
// The same future-based FMM (examples/apps/fmm: one future per box and pass,
// 2-D, order 20, points on the unit circle) runs, for several problem sizes:
//   serial      no futures, in this process
//   weft        weft::async / weft::shared_future on a runtime of 1 and of 2
//               workers (--workers), in this process
//   std::async  std::async(std::launch::async) / std::shared_future: one
//               thread per future, in a child process (the fmm program), so
//               that a failure (std::system_error when a thread cannot be
//               created, a crash, or the time limit) becomes a row note
//               "std::async failed: ..." as the paper reports it
// Medians of --reps rounds (after --warmup), each round running every system
// once, so that the load of a shared machine hits them alike; speedups over
// serial side by side (n = 500,000: 3 rounds, no warm-up).
// Every run is checked against a direct O(n^2) sum on 50 points.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench.hpp"

#if defined(WEFT_BENCH_HAVE_APP_FMM)
#include "fmm.hpp"
#endif

namespace weft_bench {

#if !defined(WEFT_BENCH_HAVE_APP_FMM)
void run_fmm(const config&, report& rep) {
  rep.add_missing("fmm", "fmm", "", "not measured: built without examples (WEFT_BUILD_EXAMPLES=OFF)");
}
#else
namespace {

constexpr int kOrder = 20;
constexpr int kLeaf = 64;
constexpr std::size_t kCheck = 50;

std::string params_of(std::size_t n, const std::string& rest = {}) {
  return "n=" + std::to_string(n) + (rest.empty() ? "" : ", " + rest);
}

// The paper's numbers for its two sizes (Tables 4.3, 4.4: 4-core i7-3770K,
// 3-D FMM from Zhang's benchmark, -O0).
std::string paper_note(std::size_t n, const std::string& what) {
  if (n == 20000) {
    if (what == "serial") return "";
    if (what == "std") return "Table 4.3 (n=20,000): STL 1.2 s, 7 of 20 runs aborted";
    return "Table 4.3 (n=20,000): Fibertures 8.9 s at 1 thread, 8.0 s at 2";
  }
  if (n == 100000) {
    if (what == "std") return "Table 4.4 (n=100,000): STL always failed (thread creation)";
    if (what == "serial") return "";
    return "Table 4.4 (n=100,000): Fibertures 78 s at 1 thread, 73 s at 2";
  }
  return "";
}

}  // namespace

void run_fmm(const config& cfg, report& rep) {
  namespace app = weft_app_fmm;
  const std::vector<std::size_t> sizes =
      cfg.quick ? std::vector<std::size_t>{5000, 20000}
                : std::vector<std::size_t>{10000, 20000, 50000, 100000, 200000, 500000};
  const int reps = cfg.quick ? std::min(cfg.reps, 3) : cfg.reps;
  const auto limit = std::chrono::seconds(cfg.quick ? 30 : 120);
  const std::string fmm_exe = WEFT_FMM_EXE;
  const bool have_exe = ::access(fmm_exe.c_str(), X_OK) == 0;
  rlimit nproc{};
  ::getrlimit(RLIMIT_NPROC, &nproc);
  const std::string limits_note =
      "RLIMIT_NPROC " + (nproc.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                                         : std::to_string(nproc.rlim_cur));

  std::string std_stopped;  // why std::async is not tried at larger sizes
  for (std::size_t n : sizes) {
    app::options o;
    o.n = n;
    o.order = kOrder;
    o.leaf = kLeaf;
    o.dist = app::distribution::circle;
    o.check = kCheck;
    o.reps = 1;
    o.modes = {app::mode::serial, app::mode::weft};
    o.workers = cfg.workers;
    const std::vector<std::string> std_args{fmm_exe, "--kv", "--mode", "std", "--n", std::to_string(n),
                                            "--order", std::to_string(kOrder), "--leaf", std::to_string(kLeaf),
                                            "--dist", "circle", "--check", std::to_string(kCheck)};
    const bool try_std = have_exe && std_stopped.empty();

    // Rounds: serial, weft at each worker count, std::async, then again, so
    // that the load of this shared machine hits every system alike.
    struct series {
      std::vector<double> ms;
      double rel_error = 0;
      bool wrong = false;
    };
    std::vector<series> ours;  // res.runs' order: serial, then weft per worker count
    std::vector<unsigned> ours_workers;
    std::vector<app::mode> ours_modes;
    app::tree_stats tree;
    double tolerance = 0;
    std::vector<double> std_ms;
    std::string std_error, std_rel;
    // The largest size (40,000 futures: does std::async survive them?) gets
    // at most 3 rounds and no warm-up, to keep the full run to minutes.
    const int warmup = n > 200000 ? 0 : cfg.warmup;
    const int rounds = n > 200000 ? std::min(reps, 3) : reps;
    for (int r = -warmup; r < rounds; ++r) {
      {
        watchdog_scope wd("fmm n=" + std::to_string(n), limit * (1 + cfg.workers.size()) + std::chrono::seconds(30));
        app::results res = app::run(o);
        tree = res.tree;
        tolerance = res.tolerance;
        ours.resize(res.runs.size());
        ours_workers.resize(res.runs.size());
        ours_modes.resize(res.runs.size());
        for (std::size_t k = 0; k < res.runs.size(); ++k) {
          auto& x = res.runs[k];
          ours_workers[k] = x.workers;
          ours_modes[k] = x.m;
          ours[k].rel_error = std::max(ours[k].rel_error, x.rel_error);
          ours[k].wrong = ours[k].wrong || x.wrong;
          if (r >= 0) ours[k].ms.insert(ours[k].ms.end(), x.ms.begin(), x.ms.end());
        }
      }
      if (try_std && std_error.empty()) {
        // One child per run: a thread per future, so a failure ends only the child.
        watchdog_scope wd("fmm std n=" + std::to_string(n), limit + std::chrono::seconds(30));
        child_result c = run_process(std_args, limit, "fmm --mode std");
        if (!c.ok) {
          std_error = c.values.count("run0.error") ? c.values["run0.error"] : c.error;
        } else {
          if (r >= 0) std_ms.push_back(c.num("run0.median_ms"));
          std_rel = c.values["run0.rel_error"];
        }
      }
    }

    const std::string tree_note = std::to_string(tree.tasks) + " futures, order " + std::to_string(kOrder);
    const row* serial_row = nullptr;
    std::vector<std::pair<unsigned, const row*>> weft_rows;
    for (std::size_t k = 0; k < ours.size(); ++k) {
      const bool is_serial = ours_modes[k] == app::mode::serial;
      const std::string name = is_serial ? "serial" : "weft";
      const std::string params = is_serial ? params_of(n) : params_of(n, workers_param(ours_workers[k]));
      if (ours[k].wrong) {
        rep.add_missing("fmm", name, params, "WRONG RESULT: relative error " + std::to_string(ours[k].rel_error) +
                        " above " + std::to_string(tolerance), true);
        continue;
      }
      row x = make_row("fmm", name, params, ours[k].ms, "ms");
      char err[64];
      std::snprintf(err, sizeof err, "rel error %.1e", ours[k].rel_error);
      x.note = tree_note + ", " + err;
      if (auto p = paper_note(n, is_serial ? "serial" : "weft"); !p.empty()) x.note += "; " + p;
      rep.add(std::move(x));
      if (is_serial) serial_row = rep.find("fmm", name, params);
      else weft_rows.push_back({ours_workers[k], rep.find("fmm", name, params)});
    }

    const row* std_row = nullptr;
    const std::string sparams = params_of(n, "a thread per future");
    if (!have_exe) {
      rep.add_missing("fmm", "std::async", sparams, "not measured: " + fmm_exe + " not built", true);
    } else if (!try_std) {
      rep.add_missing("fmm", "std::async", sparams, "not run: " + std_stopped);
    } else if (!std_error.empty()) {
      const bool wrong = std_error.rfind("WRONG", 0) == 0;
      std::string note = (wrong ? "" : "std::async failed: ") + std_error + " (" + limits_note + ")";
      if (auto p = paper_note(n, "std"); !p.empty()) note += "; " + p;
      rep.add_missing("fmm", "std::async", sparams, note, wrong);
      std_stopped = "std::async failed at n=" + std::to_string(n);
    } else {
      row x = make_row("fmm", "std::async", sparams, std_ms, "ms");
      x.note = tree_note + ", rel error " + std_rel;
      if (auto p = paper_note(n, "std"); !p.empty()) x.note += "; " + p;
      rep.add(std::move(x));
      std_row = rep.find("fmm", "std::async", sparams);
    }

    for (auto& [w, wr] : weft_rows)
      rep.add_ratio("fmm", "serial / weft (speedup)", params_of(n, workers_param(w)), serial_row, wr);
    rep.add_ratio("fmm", "serial / std::async (speedup)", params_of(n), serial_row, std_row);
    for (auto& [w, wr] : weft_rows)
      rep.add_ratio("fmm", "std::async / weft (time)", params_of(n, workers_param(w)), std_row, wr, goal_kind::none,
                    0, n == 20000 ? "paper, Table 4.3: STL / Fibertures = 1.2 / 8.0 = 0.15" : "");
  }
}
#endif

}  // namespace weft_bench
