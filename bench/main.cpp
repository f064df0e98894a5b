// weft-bench — the benchmark suite's driver: options, the section table and
// main. The result table and JSON are in report.cpp, the machine facts in
// machine.cpp, the hang watchdog in watchdog.cpp, each benchmark in its own
// file.
//
//   weft-bench [--quick] [--reps N] [--json PATH] [--only SECTIONS]
//
// `weft-bench --help` lists the sections (from `sections` below).
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
      {"io", "latency-hiding I/O: map-reduce, mechanism overheads, a TCP server", run_io, {}},
      {"sync", "programs written around blocking: ivars, mvars, channels vs Go, Boost.Fiber",
       run_sync, {}},
      {"locks", "lock contention: weft::mutex vs std::mutex (threads) and Boost.Fiber's mutex",
       run_locks, {}},
      {"server", "TCP echo servers vs Go and Tokio", run_server, {}},
      {"compose", "fan-out/fan-in: when_all over 10,000 futures vs a loop of get()s; then chains",
       run_compose, {}},
      {"migrate", "Smith-Waterman, a future per tile: std::async vs weft-migrate'd vs serial",
       run_migrate, {}},
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
               "  --quick          short run (CI/demo): smaller problem sizes\n"
               "  --reps N         timed repetitions per figure, median reported (default 5)\n"
               "  --json PATH      also write every figure as JSON to PATH\n"
               "  --only SECTIONS  comma-separated subset of the sections below (default:\n"
               "                   all); SECTION.PART selects one part of a section\n"
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
  std::string json_path, child_kind;
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
  std::printf("weft-bench: done\n");
  return rep.any_failed() ? 1 : 0;
}
