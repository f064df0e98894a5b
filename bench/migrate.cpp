// weft-bench — section "migrate": a std::async program before and after
// scripts/weft-migrate (Fibertures, 003 §4.1, Tables 4.1-4.2).
//
// Smith-Waterman with one future per tile (bench/smith_waterman_std.cpp) runs
// three ways, each in its own process, for several tile counts in one run:
//   serial      smith_waterman_std --serial (no futures)
//   std::async  smith_waterman_std: every tile a thread, blocked in
//               future::wait until its neighbours finish
//   weft        smith_waterman_weft: the same source after weft-migrate
//               (generated at build time): every tile a task of the default
//               runtime (WEFT_WORKERS = the online CPUs), blocked tiles
//               suspended, not their worker
// Medians of --reps runs; ratios std/weft and serial/weft. The std program is
// expected to fail (std::system_error: no more threads) or to crawl past some
// tile count, as it does in Table 4.2: the row then says where, and larger
// counts are not tried with std. Every run must print the same score.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench.hpp"

namespace weft_bench {
namespace {

std::string exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string s(buf, static_cast<std::size_t>(n));
  auto slash = s.rfind('/');
  return slash == std::string::npos ? "." : s.substr(0, slash);
}

struct outcome {
  std::vector<double> ms;
  std::string score;
  std::string error;  // empty: every run succeeded
};

// Runs `args` reps times (after cfg.warmup untimed runs).
outcome measure(const config& cfg, std::vector<std::string> args, std::chrono::seconds limit,
                const std::string& what, int reps) {
  outcome o;
  for (int r = -cfg.warmup; r < reps; ++r) {
    child_result c = run_process(args, limit, what);
    if (!c.ok) {
      o.error = c.error;
      if (c.values.count("error"))
        o.error = "std::system_error \"" + c.values["error"] + "\" after " + c.values["launched"] +
                  " of " + c.values["tiles"] + " tiles";
      return o;
    }
    if (!o.score.empty() && o.score != c.values["score"]) {
      o.error = "WRONG RESULT: scores differ between runs";
      return o;
    }
    o.score = c.values["score"];
    if (r >= 0) o.ms.push_back(c.num("ms"));
  }
  return o;
}

std::string params_of(int length, int tiles) {
  return "n=" + std::to_string(length) + ", " + std::to_string(tiles * tiles) + " tiles";
}

}  // namespace

void run_migrate(const config& cfg, report& rep) {
  const std::string dir = exe_dir();
  const std::string std_exe = dir + "/smith_waterman_std";
  const std::string weft_exe = dir + "/smith_waterman_weft";
  if (::access(std_exe.c_str(), X_OK) != 0) {
    rep.add_missing("migrate", "smith-waterman", "", "not measured: smith_waterman_std not next "
                    "to weft-bench (cmake --build ... --target weft-bench)", true);
    return;
  }
  const bool have_weft = ::access(weft_exe.c_str(), X_OK) == 0;
  const unsigned cpus = std::max(1u, online_cpus());
  ::setenv("WEFT_WORKERS", std::to_string(cpus).c_str(), 1);  // the weft children's runtime

  const int length = cfg.quick ? 2000 : 6000;
  // Tiles per side: 8^2 = 64 ... 23^2 = 529 (Table 4.1's 552), 47^2 = 2209
  // (Table 4.2's 2208), then beyond.
  std::vector<int> sides = cfg.quick ? std::vector<int>{8, 23, 47, 96}
                                     : std::vector<int>{8, 23, 47, 96, 192, 384};
  const int reps = cfg.quick ? std::min(cfg.reps, 3) : cfg.reps;
  const auto limit = std::chrono::seconds(cfg.quick ? 20 : 60);
  rlimit nproc{};
  ::getrlimit(RLIMIT_NPROC, &nproc);
  const std::string limits_note =
      "RLIMIT_NPROC " + (nproc.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                                         : std::to_string(nproc.rlim_cur));

  const std::string L = std::to_string(length);
  outcome serial = measure(cfg, {std_exe, "--serial", L, "1"}, limit, "smith_waterman_std --serial", reps);
  const std::string sparams = "n=" + L;
  if (!serial.error.empty()) {
    rep.add_missing("migrate", "serial", sparams, serial.error, true);
    return;
  }
  rep.add(make_row("migrate", "serial", sparams, serial.ms, "ms"));
  const row* serial_row = rep.find("migrate", "serial", sparams);

  std::string std_stopped;  // why std is not tried at larger counts
  for (int side : sides) {
    const std::string params = params_of(length, side);
    const std::string T = std::to_string(side);
    const row* std_row = nullptr;
    const row* weft_row = nullptr;
    if (!std_stopped.empty()) {
      rep.add_missing("migrate", "std::async", params, "not run: " + std_stopped);
    } else {
      watchdog_scope wd("migrate std " + params, limit * (reps + cfg.warmup) + std::chrono::seconds(30));
      outcome s = measure(cfg, {std_exe, L, T}, limit, "smith_waterman_std", reps);
      if (!s.error.empty()) {
        const bool wrong = s.error.rfind("WRONG", 0) == 0;
        rep.add_missing("migrate", "std::async", params, s.error + " (" + limits_note + ")", wrong);
        std_stopped = "std::async failed at " + std::to_string(side * side) + " tiles";
      } else if (s.score != serial.score) {
        rep.add_missing("migrate", "std::async", params, "WRONG RESULT: score " + s.score +
                        ", serial " + serial.score, true);
      } else {
        rep.add(make_row("migrate", "std::async", params, s.ms, "ms"));
        std_row = rep.find("migrate", "std::async", params);
      }
    }
    if (!have_weft) {
      rep.add_missing("migrate", "weft (migrated)", params, "not measured: smith_waterman_weft "
                      "not built (no libclang Python bindings at configure time)", true);
    } else {
      watchdog_scope wd("migrate weft " + params, limit * (reps + cfg.warmup) + std::chrono::seconds(30));
      outcome w = measure(cfg, {weft_exe, L, T}, limit, "smith_waterman_weft", reps);
      if (!w.error.empty()) {
        rep.add_missing("migrate", "weft (migrated)", params, w.error, true);
      } else if (w.score != serial.score) {
        rep.add_missing("migrate", "weft (migrated)", params, "WRONG RESULT: score " + w.score +
                        ", serial " + serial.score, true);
      } else {
        row r = make_row("migrate", "weft (migrated)", params, w.ms, "ms");
        r.note = workers_param(cpus);
        rep.add(std::move(r));
        weft_row = rep.find("migrate", "weft (migrated)", params);
      }
    }
    rep.add_ratio("migrate", "std::async / weft (time)", params, std_row, weft_row);
    rep.add_ratio("migrate", "serial / weft (speedup)", params, serial_row, weft_row);
  }
  ::unsetenv("WEFT_WORKERS");
}

}  // namespace weft_bench
