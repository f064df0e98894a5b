// weft-bench — io: the oversubscription break-even latency (Cilk-L §5.1:
// "Cilk-L breaks even / outperforms the oversubscription strategy at a
// latency of 7 milliseconds or higher").
//
// Input: a sweep of latencies (increasing) and, per latency, the ratio
// T(I/O futures) / T(blocking reads on 2P threads). Below the break-even the
// oversubscribed threads win (ratio > 1), above it the futures (ratio < 1).
// The break-even is the latency from which on the futures win, as the paper
// words it ("breaks even / outperforms ... at 7 ms or higher"): the last
// crossing of 1 from above, so that a noisy dip below 1 at a short latency
// does not count when the threads win again at a longer one. It is
// interpolated linearly in log(latency) against log(ratio) between the last
// point above 1 and the next. Header-only so that a unit test
// (tests/test_io_breakeven.cpp) checks it without the benchmark.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace weft_bench {

struct break_even {
  enum class kind {
    found,  // value: the interpolated latency
    below,  // the futures win (ratio <= 1) at every latency swept
    above,  // the blocking threads win at the largest latency
    none,   // fewer than one usable point (NaN ratios are skipped)
  };
  kind where = kind::none;
  double latency = NAN;  // found: the crossing; below/above: the end of the sweep
};

// latencies: increasing, > 0; ratios: the same length (NaN: not measured,
// skipped). The crossing is the last one from above 1 to at most 1.
inline break_even find_break_even(const std::vector<double>& latencies,
                                  const std::vector<double>& ratios) {
  break_even out;
  std::vector<double> l, r;
  for (std::size_t i = 0; i < latencies.size() && i < ratios.size(); ++i) {
    if (std::isnan(ratios[i]) || !(ratios[i] > 0) || !(latencies[i] > 0)) continue;
    l.push_back(latencies[i]);
    r.push_back(ratios[i]);
  }
  if (l.empty()) return out;
  std::size_t last_above = l.size();  // none
  for (std::size_t i = 0; i < l.size(); ++i)
    if (r[i] > 1) last_above = i;
  if (last_above == l.size()) {
    out.where = break_even::kind::below;
    out.latency = l[0];
    return out;
  }
  if (last_above + 1 == l.size()) {
    out.where = break_even::kind::above;
    out.latency = l.back();
    return out;
  }
  const std::size_t i = last_above + 1;
  const double x0 = std::log(l[i - 1]), x1 = std::log(l[i]);
  const double y0 = std::log(r[i - 1]), y1 = std::log(r[i]);  // y0 > 0 >= y1
  const double t = y0 / (y0 - y1);                              // in (0, 1]
  out.where = break_even::kind::found;
  out.latency = std::exp(x0 + t * (x1 - x0));
  return out;
}

}  // namespace weft_bench
