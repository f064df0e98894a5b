// weft-bench — the benchmark suite's driver: options, the section table and
// main. The result table and JSON are in report.cpp, the machine facts in
// machine.cpp, the hang watchdog in watchdog.cpp, each benchmark in its own
// file.
//
//   weft-bench [--quick] [--reps N] [--json PATH] [--only SECTIONS] [--report DIR]
//
// --report DIR also writes DIR/results.json and runs scripts/weft-report on it
// (DIR/index.md with plots; report_script.cpp, docs/report.md).
//
// `weft-bench --help` lists the sections (from `sections` below).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "bench.hpp"

namespace weft_bench {

bool config::wants(const std::string& section) const {
  if (only.empty()) return true;
  for (const auto& s : only)
    if (s == section) return true;
  return false;
}

namespace {

// One row per section, in the order they run. This table is the only list of
// the sections: --help prints it, --only checks its names against it, and main
// runs the selected rows. A section with parts (priority) is selected whole by
// its name or in part by NAME.PART; the section's own code asks cfg.wants()
// which parts to run.
struct section {
  const char* name;
  const char* description;  // one line of --help
  void (*run)(const config&, report&);
  std::vector<std::string> parts;  // selectable as name.part
};

const std::vector<section>& sections() {
  static const std::vector<section> table{
      {"fib", "fib(n) without cutoff: the per-task cost of spawn and join", run_fib, {}},
      {"spawn", "task creation: one weft::async against a thread", run_spawn, {}},
      {"pingpong", "round trips between two tasks (ivars) against two threads", run_pingpong,
       {}},
      {"memory", "peak resident set of weft workloads, each in its own process", run_memory,
       {}},
      {"priority", "APS priorities: fib-ep/fib-rp, a job server, an interactive service",
       run_priority, {"fib", "jobs", "interactive"}},
      {"io", "latency-hiding I/O: map-reduce, mechanism overheads, a TCP server", run_io,
       {"mapreduce", "server", "latency", "scale"}},
      {"sync", "programs written around blocking: ivars, mvars, channels vs Go, Boost.Fiber",
       run_sync, {}},
      {"locks", "lock contention: weft::mutex vs std::mutex (threads) and Boost.Fiber's mutex",
       run_locks, {}},
      {"server", "TCP echo servers vs Go and Tokio", run_server, {}},
      {"compose", "fan-out/fan-in: when_all over 10,000 futures vs a loop of get()s; then chains",
       run_compose, {}},
      {"migrate", "Smith-Waterman, a future per tile: std::async vs weft-migrate'd vs serial",
       run_migrate, {}},
      {"fmm", "fast multipole method, a future per box: weft vs std::async vs serial",
       run_fmm, {}},
      {"proxy", "caching proxy server, four priority levels (I-Cilk Fig 7): APS vs oblivious",
       run_proxy, {}},
      {"kernels", "Cilk kernels LU, Strassen, Black-Scholes, Knapsack: weft vs serial, oneTBB; "
       "simulated waits", run_kernels, {}},
      {"email", "I-Cilk Fig. 6: the email client app, APS vs priority-oblivious, 1-30 clients",
       run_email, {}},
  };
  return table;
}

// Whether `--only` names section s or one of its parts.
bool selected(const config& cfg, const section& s) {
  if (cfg.wants(s.name)) return true;
  for (const auto& p : s.parts)
    if (cfg.wants(std::string(s.name) + "." + p)) return true;
  return false;
}

bool known_section(const std::string& name) {
  for (const auto& s : sections()) {
    if (name == s.name) return true;
    for (const auto& p : s.parts)
      if (name == std::string(s.name) + "." + p) return true;
  }
  return false;
}

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: weft-bench [--quick] [--reps N] [--json PATH] [--only SECTIONS]\n"
               "                  [--report DIR]\n"
               "  --quick          short run (CI/demo): smaller problem sizes\n"
               "  --reps N         timed repetitions per figure, median reported (default 5)\n"
               "  --json PATH      also write every figure as JSON to PATH\n"
               "  --only SECTIONS  comma-separated subset of the sections below (default:\n"
               "                   all); SECTION.PART selects one part of a section\n"
               "  --report DIR     after the run, write DIR/results.json (the --json format)\n"
               "                   and the report: DIR/index.md, one section per paper\n"
               "                   figure with SVG plots (scripts/weft-report; needs python3\n"
               "                   with matplotlib: Debian's python3-matplotlib). With --quick\n"
               "                   it takes a few minutes. See docs/report.md\n"
               "sections, in the order they run:\n");
  for (const auto& s : sections()) {
    std::fprintf(f, "  %-10s %s\n", s.name, s.description);
    if (s.parts.empty()) continue;
    std::string parts;
    for (const auto& p : s.parts)
      parts += (parts.empty() ? "" : ", ") + std::string(s.name) + "." + p;
    std::fprintf(f, "  %-10s parts: %s\n", "", parts.c_str());
  }
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace
}  // namespace weft_bench

int main(int argc, char** argv) {
  using namespace weft_bench;
  config cfg;
  std::string json_path, child_kind, report_dir;
  unsigned child_workers = 2;

  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* opt) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weft-bench: %s needs a value\n", opt);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") {
      cfg.quick = true;
    } else if (a == "--reps") {
      cfg.reps = std::atoi(value("--reps").c_str());
      if (cfg.reps < 1) {
        std::fprintf(stderr, "weft-bench: --reps must be >= 1\n");
        return 2;
      }
    } else if (a == "--json") {
      json_path = value("--json");
    } else if (a == "--report") {
      report_dir = value("--report");
    } else if (a == "--only") {
      cfg.only = split_commas(value("--only"));
      for (const auto& s : cfg.only) {
        if (!known_section(s)) {
          std::fprintf(stderr, "weft-bench: unknown section '%s'\n", s.c_str());
          return 2;
        }
      }
    } else if (a == "--child") {  // hidden: memory child process
      child_kind = value("--child");
    } else if (a == "--workers") {  // hidden: worker count of a memory child
      child_workers = static_cast<unsigned>(std::atoi(value("--workers").c_str()));
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "weft-bench: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }

  if (!child_kind.empty()) return memory_child(child_kind, child_workers);

  // --report: fail before the (long) run on what can be checked now.
  std::string report_python_exe;
  if (!report_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(report_dir, ec);
    if (ec || !std::filesystem::is_directory(report_dir)) {
      std::fprintf(stderr, "weft-bench: --report %s: cannot create the directory: %s\n",
                   report_dir.c_str(), ec ? ec.message().c_str() : "not a directory");
      return 2;
    }
    if (!std::filesystem::is_regular_file(report_script_path(), ec)) {
      std::fprintf(stderr, "weft-bench: --report: the report script %s is missing (it is "
                   "run from the source tree weft-bench was built from)\n",
                   report_script_path().c_str());
      return 2;
    }
    report_python_exe = report_python();
    if (report_python_exe.empty())
      std::fprintf(stderr, "weft-bench: WARNING: neither /usr/bin/python3 nor python3 on PATH "
                   "can import matplotlib (Debian/Ubuntu: apt-get install python3-matplotlib): "
                   "%s/results.json will be written, but no report\n", report_dir.c_str());
  }

  report rep;
  rep.print_header(cfg);
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& s : sections())
    if (selected(cfg, s)) s.run(cfg, rep);
  rep.print_footer();
  std::printf("total time %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  if (!json_path.empty()) {
    if (rep.write_json(json_path, cfg))
      std::printf("JSON written to %s\n", json_path.c_str());
    else
      std::fprintf(stderr, "weft-bench: cannot write %s\n", json_path.c_str());
  }
  bool report_ok = true;
  if (!report_dir.empty()) {
    const std::string results = (std::filesystem::path(report_dir) / "results.json").string();
    if (!rep.write_json(results, cfg)) {
      std::fprintf(stderr, "weft-bench: cannot write %s\n", results.c_str());
      report_ok = false;
    } else if (report_python_exe.empty()) {
      std::fprintf(stderr, "weft-bench: results written to %s, but no report: neither "
                   "/usr/bin/python3 nor python3 on PATH can import matplotlib (install "
                   "python3-matplotlib, then run: %s %s %s)\n",
                   results.c_str(), report_script_path().c_str(), results.c_str(),
                   report_dir.c_str());
      report_ok = false;
    } else {
      int rc = run_report_script(report_python_exe, results, report_dir);
      if (rc == 0) {
        std::printf("report written to %s/index.md\n", report_dir.c_str());
      } else {
        std::fprintf(stderr, "weft-bench: the report script %s (exit status %d); see "
                     "%s/index.md if it was written\n",
                     rc < 0 ? "could not run" : "failed", rc, report_dir.c_str());
        report_ok = false;
      }
    }
  }
  std::printf("weft-bench: done\n");
  return rep.any_failed() || !report_ok ? 1 : 0;
}
