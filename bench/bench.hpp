// weft-bench — what the benchmark files share: the run configuration, the
// result table, the watchdog, and the entry point of each benchmark.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace weft_bench {

struct config {
  bool quick = false;
  int reps = 5;    // timed repetitions per figure; the median is reported
  int warmup = 1;  // untimed repetitions before them
  std::vector<unsigned> workers{1, 2};
  std::string self_exe = "/proc/self/exe";  // re-executed for memory children
  std::vector<std::string> only;            // empty: every section
  bool wants(const std::string& section) const;
};

// Goal direction of a row: none, value >= goal, or value <= goal.
enum class goal_kind { none, at_least, at_most };

// One line of the result table (and one object of the JSON output).
struct row {
  std::string section;  // fib, spawn, pingpong, memory, ..., server
  std::string name;     // what was measured
  std::string params;   // n, workers, counts
  double value = NAN;   // median; NaN when not measured (see note)
  std::string unit;
  std::vector<double> samples;  // every repetition, in `unit`
  std::string note;             // "n/a (oneTBB not found)", errors, remarks
  goal_kind goal = goal_kind::none;
  double goal_value = 0;
  bool failed = false;  // wrong result, crash or hang: exit status is non-zero
  bool higher_is_better = false;  // picks the "best" column: max instead of min

  bool has_value() const { return !std::isnan(value); }
  bool goal_met() const {
    return goal == goal_kind::at_least ? value >= goal_value : value <= goal_value;
  }
};

// A measured row (not yet added): value is the median of the samples.
row make_row(std::string section, std::string name, std::string params,
             std::vector<double> samples, std::string unit);

// Collects rows (report.cpp) and prints each one as soon as it is added, so that a run
// that hangs or is cut short still shows what it measured.
class report {
 public:
  void print_header(const config& cfg);
  void add(row r);
  // A row that could not be measured (missing dependency, error).
  void add_missing(std::string section, std::string name, std::string params, std::string note,
                   bool failed = false);
  // A ratio of two earlier rows' medians, with an optional goal. Missing when
  // either input is missing.
  void add_ratio(std::string section, std::string name, std::string params, const row* num,
                 const row* den, goal_kind goal = goal_kind::none, double goal_value = 0,
                 std::string note = {});
  // The row most recently added with this section/name/params, or nullptr.
  // The pointer stays valid for the report's lifetime.
  const row* find(const std::string& section, const std::string& name,
                  const std::string& params) const;
  void print_footer() const;
  bool write_json(const std::string& path, const config& cfg) const;
  bool any_failed() const;

 private:
  void print_row(const row& r) const;
  std::deque<row> rows_;  // deque: pointers from find() survive later add()s
  std::string load_at_start_;
};

// Aborts the process with a diagnostic if a measurement runs far past its
// budget (weft hang; watchdog.cpp): CI then fails with a message instead of timing out.
class watchdog_scope {
 public:
  watchdog_scope(std::string what, std::chrono::seconds limit);
  ~watchdog_scope();
  watchdog_scope(const watchdog_scope&) = delete;
  watchdog_scope& operator=(const watchdog_scope&) = delete;
};

// Machine facts for the header and the JSON (machine.cpp).
std::string compiler_string();
std::string build_type_string();
std::string cpu_model();
unsigned online_cpus();
std::string load_average();
std::string kernel_string();  // "Linux 6.1.0 x86_64"
std::string tbb_string();     // "oneTBB 2021.8.0" or "n/a (oneTBB not found)"
std::string openmp_string();  // "OpenMP 201511" or "n/a (OpenMP not found)"

std::string workers_param(unsigned w);  // "1 worker" / "2 workers"

// The benchmarks, one per file; main.cpp's section table lists them, in the
// order they run, with the name `--only` selects them by.
void run_fib(const config& cfg, report& rep);
void run_spawn(const config& cfg, report& rep);
void run_pingpong(const config& cfg, report& rep);
void run_memory(const config& cfg, report& rep);
void run_priority(const config& cfg, report& rep);
void run_io(const config& cfg, report& rep);  // io.cpp: latency-hiding I/O

void run_sync(const config& cfg, report& rep);  // sync.cpp: ivars, mvars, channels vs Go, Boost.Fiber
void run_locks(const config& cfg, report& rep);  // locks.cpp: weft::mutex vs std::mutex, Boost.Fiber
void run_server(const config& cfg, report& rep);  // server.cpp: TCP echo vs Go, Tokio
void run_compose(const config& cfg, report& rep);  // compose.cpp: when_all fan-in, then chains
void run_migrate(const config& cfg, report& rep);  // migrate.cpp: std::async vs weft-migrate'd
void run_fmm(const config& cfg, report& rep);  // fmm.cpp: FMM with futures, weft vs std::async vs serial

// --report DIR (report_script.cpp): scripts/weft-report's path, the first
// python3 that imports matplotlib ("" if none), and running the script on
// the results (its exit status; -1 if it could not run).
std::string report_script_path();
std::string report_python();
int run_report_script(const std::string& python, const std::string& results_json,
                      const std::string& dir);
void run_proxy(const config& cfg, report& rep);  // proxy.cpp: the caching proxy (I-Cilk Fig 7)
void run_kernels(const config& cfg, report& rep);  // kernels.cpp: Cilk kernels vs serial, oneTBB
void run_email(const config& cfg, report& rep);  // email.cpp: I-Cilk Fig. 6 email client, APS vs oblivious

// Hidden entry point of the memory children (`weft-bench --child KIND`).
int memory_child(const std::string& kind, unsigned workers);
int sync_child(const std::string& kind, unsigned workers);  // kinds "sync-..."

// A child process (memory.cpp): its key=value stdout lines; ok when it
// exited 0 within `limit` and printed vm_hwm_kib (its peak RSS).
struct child_result {
  bool ok = false;
  std::string error;  // why not ok
  std::map<std::string, std::string> values;
  double num(const std::string& k) const {
    auto it = values.find(k);
    return it == values.end() ? NAN : std::stod(it->second);
  }
};
// A "Vm..." line of /proc/PID/status ("VmRSS", "VmHWM"), KiB; -1 when
// unreadable.
long proc_status_kib(pid_t pid, const char* key);

// Builds the Go program `source` (one file, GOPATH mode) with `go build`
// into dir/exe_name, with its caches and build.log in `dir` (created).
// Returns "" on success, else the reason for a "not measured" row.
std::string go_build(const std::string& source, const std::string& dir,
                     const std::string& exe_name);

child_result run_process(std::vector<std::string> args, std::chrono::seconds limit,
                         const std::string& what);

// fib with weft futures; shared with the memory child. Must run inside a task.
long fib_weft_futures(int n);
// Number of calls of the doubly recursive fib(n): 2*fib(n+1) - 1.
long fib_calls(int n);
long fib_reference(int n);  // iterative, for checking results

}  // namespace weft_bench
