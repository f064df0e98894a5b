// weft — Adaptive Priority Scheduling (I-Cilk §3, Figure 1): the desire of
// each priority level and the allocation of workers to levels, as pure
// functions (the master thread in src/aps_master.cpp applies them every
// quantum; tests check them against Figure 1).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace weft::detail::aps {

struct level_quantum {
  bool has_ready_work = false;  // any ready task of this level now
  double prev_desire = 0;       // d_{q-1}
  unsigned prev_allotment = 0;  // p_{q-1}
  double utilization = 0;       // busy time / (p_{q-1} * L), in [0, 1]
  // false: the quantum came too soon after the last measured one for its
  // utilisation to mean anything (src/aps_master.cpp, short windows): only
  // lines 1-2 apply, any other desire is kept.
  bool measured = true;
};

inline unsigned whole(double desire);

// Figure 1. `delta` is the efficiency threshold, `rho` the responsiveness.
// The quantum was efficient if the level's workers were busy at least a
// fraction delta of it (I-Cilk measures utilization, as we do).
inline double next_desire(const level_quantum& q, double delta, double rho) {
  if (!q.has_ready_work) return 0;                      // line 1
  if (q.prev_desire == 0) return 1;                     // line 2
  if (!q.measured) return q.prev_desire;                // not measured: keep
  if (q.prev_allotment == 0 || q.utilization < delta)   // line 3: inefficient
    return std::max(1.0, q.prev_desire / rho);          // line 4
  if (q.prev_allotment >= whole(q.prev_desire))         // line 5: satisfied
    return q.prev_desire * rho;                         // line 6
  return q.prev_desire;                                 // line 7: deprived
}

// Cores a desire asks for: at least one for any positive desire.
inline unsigned whole(double desire) {
  if (desire <= 0) return 0;
  return std::max(1u, static_cast<unsigned>(std::floor(desire + 1e-9)));
}

// Top-down allocation (§3): level 0 (most urgent) first, each gets
// min(desire, what is left). Leftover workers are then handed out half to
// each level from the top (§5), among levels that have ready work — so a core
// is never parked on an idle level while another level could use it (a
// deliberate, documented refinement; the paper hands them to every level).
// If no level has ready work the leftovers go to `default_level`.
inline std::vector<unsigned> allocate(const std::vector<double>& desires,
                                      const std::vector<bool>& has_ready_work,
                                      unsigned workers, unsigned default_level) {
  const std::size_t n = desires.size();
  std::vector<unsigned> allot(n, 0);
  unsigned left = workers;
  for (std::size_t l = 0; l < n && left > 0; ++l) {
    unsigned give = std::min(whole(desires[l]), left);
    allot[l] = give;
    left -= give;
  }
  std::size_t ready_levels = 0;
  for (std::size_t l = 0; l < n; ++l) ready_levels += has_ready_work[l] ? 1 : 0;
  if (ready_levels == 0) {
    allot[default_level] += left;
    return allot;
  }
  while (left > 0) {
    for (std::size_t l = 0; l < n && left > 0; ++l) {
      if (!has_ready_work[l]) continue;
      unsigned give = std::max(1u, left / 2);
      allot[l] += give;
      left -= give;
    }
  }
  return allot;
}

}  // namespace weft::detail::aps
