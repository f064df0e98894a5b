// weft-bench — what the I/O benchmarks (section "io") share: the parallel
// fib they compute, runtime options per backend, the io_uring probe, and
// interleaved timing of several variants so that their ratios are measured
// side by side (each round runs every variant once, in turn: a disturbance
// of the shared machine hits them all alike).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <weft/weft.hpp>

#include "bench.hpp"

namespace weft_bench {

// Entry points of the io files (bench/io.cpp calls them in turn).
void run_io_mapreduce(const config& cfg, report& rep);  // io_mapreduce.cpp
void run_io_server(const config& cfg, report& rep);     // io_server.cpp
void run_io_latency(const config& cfg, report& rep);    // io_latency.cpp
// The papers' scale: 5,000 connections, P = 1..8, the break-even (io_mapreduce.cpp).
void run_io_scale(const config& cfg, report& rep);

// Doubly recursive fib, out of line so every variant runs the same code.
std::uint64_t io_fib_serial(int n);
// fib(n) with fork_join down to a serial base case: below `base` it calls
// io_fib_serial. Must run inside a task.
std::uint64_t io_fib_parallel(int n, int base);

// Runtime options of one variant.
weft::options io_options(unsigned workers, weft::io_backend io,
                         weft::steal_policy policy = weft::steal_policy::proactive,
                         bool try_first = true);
const char* backend_label(weft::io_backend io);  // "epoll", "io_uring", "blocking"
const char* policy_label(weft::steal_policy p);  // "ProWS", "ParWS"

// Whether io_backend::io_uring works here (liburing in the build, kernel
// allows it); probed once. `why` gets the reason when it does not.
bool io_uring_usable(std::string* why = nullptr);

// Lifts the soft limit on open descriptors to the hard one (thousands of
// emulated connections may be open at once).
void raise_fd_limit();

// One variant of an interleaved measurement.
struct io_variant {
  std::string name;
  // One timed run; returns false on a wrong result, throws on an error. The
  // value it returns through `seconds` (when >= 0) replaces the wall time of
  // the call (for runs that time only part of themselves).
  std::function<bool(double& seconds)> run;
  // Filled in by run_interleaved.
  std::vector<double> samples;  // seconds, one per timed round
  std::vector<double> cpu;      // CPU seconds of the whole process (every
                                // thread: workers, I/O threads) per round
  bool wrong = false;
  std::string error;  // non-empty: the variant threw and was dropped
  bool ok() const { return !wrong && error.empty() && !samples.empty(); }
};

// cfg.warmup untimed rounds, then cfg.reps timed rounds; each round runs
// every variant once, round r starting with variant r (mod n). A variant that
// throws is dropped from later rounds (its error is kept).
void run_interleaved(const config& cfg, std::vector<io_variant>& variants);

// A row from a variant's samples, scaled by k into `unit` (failed when the
// variant was wrong or threw).
row io_row(const std::string& name, const std::string& params, const io_variant& v, double k,
           const std::string& unit);

// The median of v.cpu (NaN when empty).
double median_cpu(const io_variant& v);

// The median over rounds r of num[r] / den[r], wall times or (use_cpu) CPU
// times; NaN when either variant failed.
double paired_ratio(const io_variant& num, const io_variant& den, bool use_cpu = false);

// A ratio row from paired samples: the median over rounds r of
// num.samples[r] / den.samples[r] (both from the same round, so a slow
// moment of the machine cancels out). The per-round range goes to the note.
// Missing (n/a) when either side failed.
// With use_cpu, the ratio of the CPU times instead of the wall times.
void add_paired_ratio(report& rep, const std::string& name, const std::string& params,
                      const io_variant& num, const io_variant& den,
                      goal_kind goal = goal_kind::none, double goal_value = 0,
                      const std::string& note = {}, bool use_cpu = false);

}  // namespace weft_bench
