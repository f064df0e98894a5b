// The fast multipole method written with futures (Fibertures, paper 003
// §4.2, Tables 4.3-4.4): the 2-D Laplace potential
//
//   phi(z_i) = sum_{j != i} q_j log|z_i - z_j|
//
// of n charged points, evaluated with a uniform-depth quadtree (empty boxes
// omitted), multipole and local expansions of order p (P2M, M2M, M2L, L2L,
// L2P) and direct sums between neighbouring leaves (P2P). The same
// future-based code runs three ways:
//   serial  no futures: the boxes in dependency order on the calling thread
//   weft    one weft::async task per box and pass, waiting on weft::shared_future
//   std     the same code on std::async(std::launch::async) and
//           std::shared_future: one thread per box and pass
// Every run is checked against a direct O(n^2) sum on a sample of points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft_app_fmm {

enum class distribution {
  uniform,  // uniform in the unit square
  circle,   // on the unit circle: the 2-D analogue of the paper's data type II
            // (points on the surface of the unit sphere)
};

enum class mode { serial, weft, std_async };

const char* mode_name(mode m);              // "serial", "weft", "std::async"
const char* distribution_name(distribution d);

struct options {
  std::size_t n = 20000;       // points
  int order = 20;              // p: terms of the expansions beyond the log term
  int leaf = 64;               // the tree's depth: the first level whose nonempty leaves hold
                               // at most `leaf` points on average
  distribution dist = distribution::circle;
  std::uint64_t seed = 1;      // points and charges (charges uniform in (0,1])
  std::vector<mode> modes{mode::serial, mode::weft, mode::std_async};
  std::vector<unsigned> workers{0};  // weft runs: one per entry (0: WEFT_WORKERS, else hardware threads)
  int reps = 1;                // timed runs per mode (and worker count)
  std::size_t check = 100;     // points compared with the direct sum (at most n)
  double tolerance = 0;        // relative error bound; 0: default_tolerance(order)
};

// The bound the direct-sum check uses by default: 2^-p (at least 1e-12). The
// error of a well-separated interaction falls roughly as 3^-p to 4^-p here
// (the boxes are one box apart), so 2^-p has a wide margin while a missing
// or wrong M2L/L2L/P2P term (an error of order 1) cannot pass.
double default_tolerance(int order);

// Checks the options; returns "" or what is wrong.
std::string validate(const options& o);

struct tree_stats {
  int levels = 0;           // leaf level L (the root is level 0)
  std::size_t boxes = 0;    // nonempty boxes, all levels
  std::size_t leaves = 0;   // nonempty leaves
  std::size_t tasks = 0;    // futures per parallel run: boxes of levels >= 2 twice, leaves once
  std::size_t m2l = 0;      // M2L translations
  std::size_t p2p = 0;      // point pairs summed directly
};

struct mode_result {
  mode m = mode::serial;
  unsigned workers = 0;        // weft: the runtime's workers; std: 0; serial: 1
  std::vector<double> ms;      // one per successful rep: the evaluation only (tree built before)
  double rel_error = 0;        // worst over the reps: ||phi - direct||_2 / ||direct||_2 on the sample
  bool failed = false;         // this mode could not run (std: thread creation failed)
  std::string error;           // why (std::system_error's what() and how far it got)
  bool wrong = false;          // rel_error above the tolerance
};

struct results {
  tree_stats tree;
  double tolerance = 0;
  std::vector<mode_result> runs;
  bool ok() const;             // no wrong result (a failed std run is not a wrong result)
  bool any_failed() const;     // some mode could not run
};

// Builds the points and the tree, runs every mode reps times, checks each run.
results run(const options& o);

}  // namespace weft_app_fmm
