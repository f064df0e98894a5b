// weft-bench — the priority section (I-Cilk, I-Cilk §5): what its three
// files share. Private to bench/prio_*.cpp.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <weft/weft.hpp>

#include "bench.hpp"

namespace weft_bench::prio {

using clock = std::chrono::steady_clock;

inline double seconds_since(clock::time_point t0) {
  return std::chrono::duration<double>(clock::now() - t0).count();
}

// CPU time of the whole process (every thread), in seconds.
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Run-queue wait of a set of threads: the time they were ready to run but
// another process had the CPU (/proc/self/task/TID/schedstat, 2nd field).
// On a shared machine, wall time minus the workers' average wait is close to
// what the run would have taken on dedicated cores; on an idle machine the
// wait is ~0 and the two agree. Time a worker sleeps (parked) is not wait, so
// idle workers are still visible.
class runqueue_wait {
 public:
  // The threads of this process that do not exist yet in `before`.
  static std::vector<int> threads();
  void track_new_threads(const std::vector<int>& before);
  bool available() const { return ok_ && !tids_.empty(); }
  std::size_t count() const { return tids_.size(); }
  // Sum over the tracked threads, in seconds (0 if unavailable).
  double seconds() const;

 private:
  std::vector<int> tids_;
  bool ok_ = true;
};

// A runtime whose worker threads are tracked by a runqueue_wait.
struct tracked_runtime {
  explicit tracked_runtime(const weft::options& o)
      : before_(runqueue_wait::threads()), rt(o), workers(rt.worker_count()) {
    wait.track_new_threads(before_);
  }

 private:
  std::vector<int> before_;

 public:
  weft::runtime rt;
  runqueue_wait wait;
  unsigned workers;
  // Wait per worker, in seconds: subtract the difference of two readings
  // from a wall-clock interval.
  double per_worker() const { return wait.available() ? wait.seconds() / workers : 0.0; }
};

// Runtime options of the two schedulers compared throughout the section.
inline weft::options aps_options(unsigned workers, double rho = 2.0,
                                 std::chrono::microseconds quantum = std::chrono::microseconds(500)) {
  weft::options o;
  o.workers = workers;
  o.priorities = weft::options::priority_mode::adaptive;
  o.aps_responsiveness = rho;
  o.aps_quantum = quantum;
  return o;
}
inline weft::options oblivious_options(unsigned workers) {
  weft::options o;
  o.workers = workers;
  o.priorities = weft::options::priority_mode::oblivious;
  return o;
}

// Nearest-rank percentile (p in [0, 100]) of a non-empty sample.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return v[std::min(i, v.size() - 1)];
}
inline double mean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// --- fib kernels (prio_fib.cpp) ----------------------------------------------
// Serial doubly recursive fib (not constant-folded, not turned into a loop).
long fib_serial(int n);
// Serial recursion down to `leaf`, where each leaf is fib_serial(leaf) followed
// by this_task::yield(): a safe point where a worker may change level.
long fib_serial_yielding(int n, int leaf);
// Parallel (fork_join) recursion while n > cut, then fib_serial_yielding.
// cut == leaf: ample parallelism (fib-ep); cut == n - 2: three strands (fib-rp).
long fib_parallel(int n, int leaf, int cut);

// --- the three parts of the section ------------------------------------------
void run_fib_priorities(const config& cfg, report& rep);   // prio_fib.cpp
void run_jobserver(const config& cfg, report& rep);        // prio_jobserver.cpp
void run_interactive(const config& cfg, report& rep);      // prio_interactive.cpp

}  // namespace weft_bench::prio
