// cilk_kernels — the Cilk regression kernels of Concurrent Cilk (paper 004)
// §6.1, Figures 6 and 7: LU decomposition, Strassen, Black-Scholes and
// Knapsack, each written once as a divide-and-conquer over a "parallel
// policy" and run three ways:
//   serial  the serial elision (every fork a plain call)
//   weft    weft::fork_join / task_group / parallel_for on a weft::runtime
//   tbb     tbb::parallel_invoke / parallel_for in a tbb::task_arena
// with the same leaves (block sizes, cutoffs) in all three, so that the
// difference between them is the cost of the fork-join machinery.
//
// Figure 7's perturbation: leaves may wait after computing ("simulated network
// dependencies"). Two first, untimed runs without waits measure the mean
// compute time of a leaf; then one leaf in `wait_every` (chosen by a hash of
// a leaf ticket, so pseudo-randomly) waits, after computing, for wait_every x
// wait_ratio x that mean, so that over a run the waits total about wait_ratio
// x the compute time (ratio 1: half of the CPU time, as in the paper). The wait is either
// weft::this_task::sleep_for (the task suspends, its worker runs other work)
// or std::this_thread::sleep_for (the worker thread blocks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft_kernels {

enum class kernel { lu, strassen, blackscholes, knapsack };
enum class impl { serial, weft, tbb };
enum class wait_kind { none, weft_sleep, os_sleep };

inline constexpr kernel all_kernels[] = {kernel::lu, kernel::strassen, kernel::blackscholes,
                                         kernel::knapsack};

const char* to_string(kernel k);
const char* to_string(impl i);
const char* to_string(wait_kind w);
std::optional<kernel> parse_kernel(const std::string& s);
std::optional<impl> parse_impl(const std::string& s);
std::optional<wait_kind> parse_wait_kind(const std::string& s);  // none, weft, os

// What `size` means per kernel, and its bounds (run() rejects sizes outside).
//   lu, strassen   n of the n x n matrices (a power of two, 2 ... 4096)
//   blackscholes   number of options (1 ... 100,000,000)
//   knapsack       number of items (2 ... 40)
const char* size_meaning(kernel k);
// The size the program uses when none is given; `quick`: the bench's --quick
// size, `small`: the ctest size (fast under sanitizers too).
long default_size(kernel k);
long quick_size(kernel k);
long small_size(kernel k);

// Whether this build has oneTBB (impl::tbb otherwise throws).
bool have_tbb();

struct options {
  kernel which = kernel::lu;
  impl how = impl::weft;
  unsigned workers = 2;  // weft and tbb; serial ignores it
  long size = 0;         // 0: default_size(which)
  wait_kind waits = wait_kind::none;
  double wait_ratio = 1.0;  // total simulated wait / total leaf compute time
  int wait_every = 8;       // one leaf in wait_every waits
  // The wait of a waiting leaf, seconds; 0: calibrated by two first untimed
  // runs without waits (wait_every x wait_ratio x their mean leaf compute
  // time). A caller running many single runs calibrates once and passes it.
  double leaf_wait_seconds = 0;
  std::uint64_t seed = 42;  // input data and the choice of waiting leaves
  int reps = 1;             // timed runs, each on a fresh copy of the input
  int warmup = 0;           // untimed runs before them
};

struct results {
  std::vector<double> seconds;  // wall time of each timed run (kernel only)
  // CPU time of the thread running the kernel's root during each timed run:
  // serial and on one worker the whole work's CPU time, which a loaded
  // machine stretches less than the wall time. On more workers only a part.
  std::vector<double> cpu_seconds;
  bool ok = false;              // every run's result passed its check
  std::string check;            // what was checked and the worst error seen
  long leaves = 0;              // leaves run (last run)
  long waits = 0;               // simulated waits (last run)
  double wait_seconds = 0;      // requested simulated wait time (last run)
  double compute_seconds = 0;   // leaf compute time, summed (last run, with waits)
  double calibrated_wait_seconds = 0;  // the wait of one waiting leaf
  double median() const;
};

// Runs the kernel reps + warmup times and checks every result:
//   lu            max |L*U - A| over sampled rows (all rows when n <= 256),
//                 relative to max |A|
//   strassen      sampled entries of C against a naive dot product (all when n <= 128)
//   blackscholes  put-call parity for every option, and (weft, tbb) every
//                 price against the serial code's
//   knapsack      the best value against a dynamic program
// Throws std::invalid_argument on bad options (message says why) and
// std::runtime_error when impl::tbb is asked for without oneTBB.
results run(const options& o);

}  // namespace weft_kernels
