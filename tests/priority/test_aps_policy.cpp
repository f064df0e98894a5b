// APS policy as pure functions (include/weft/detail/aps_policy.hpp):
//  * next_desire — I-Cilk Figure 1, every branch, and the unmeasured
//                  (short-window) quantum that applies only lines 1-2;
//  * allocate    — top-down allocation (§3), caps, leftovers half to each level
//                  with ready work from the top (§5, weft's refinement), and
//                  everything to the default level when no level has work.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "weft/detail/aps_policy.hpp"
#include "weft/priority_level.hpp"

namespace {

namespace aps = weft::detail::aps;

constexpr double kDelta = 0.9;  // the defaults of weft::options
constexpr double kRho = 2.0;

aps::level_quantum quantum(bool ready, double prev_desire, unsigned prev_allotment,
                           double utilization) {
  aps::level_quantum q;
  q.has_ready_work = ready;
  q.prev_desire = prev_desire;
  q.prev_allotment = prev_allotment;
  q.utilization = utilization;
  return q;
}

// --- Figure 1 -------------------------------------------------------------------

// Line 1: no ready nodes of the level -> desire 0, whatever the history.
TEST(ApsDesire, NoReadyWorkGivesZero) {
  EXPECT_EQ(aps::next_desire(quantum(false, 0, 0, 0), kDelta, kRho), 0);
  EXPECT_EQ(aps::next_desire(quantum(false, 8, 8, 1.0), kDelta, kRho), 0);  // was efficient+satisfied
  EXPECT_EQ(aps::next_desire(quantum(false, 4, 1, 1.0), kDelta, kRho), 0);  // was deprived
  EXPECT_EQ(aps::next_desire(quantum(false, 4, 4, 0.1), kDelta, kRho), 0);  // was inefficient
}

// Line 2: previous desire 0 and work appeared -> restart at 1, whatever the
// (meaningless) utilisation and allotment.
TEST(ApsDesire, RestartsAtOneAfterZero) {
  EXPECT_EQ(aps::next_desire(quantum(true, 0, 0, 0), kDelta, kRho), 1);
  EXPECT_EQ(aps::next_desire(quantum(true, 0, 3, 1.0), kDelta, kRho), 1);
  EXPECT_EQ(aps::next_desire(quantum(true, 0, 5, 0.0), kDelta, kRho), 1);
}

// Lines 3-4: inefficient (utilisation below delta: more than (1-delta)L
// incomplete steps) -> d / rho, satisfied or deprived alike.
TEST(ApsDesire, InefficientDividesByRho) {
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 8, 8, 0.5), kDelta, kRho), 4);   // satisfied
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 8, 2, 0.5), kDelta, kRho), 4);   // deprived
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 8, 8, 0.0), kDelta, kRho), 4);   // idle
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 8, 8, 0.899), kDelta, kRho), 4); // just below
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 6, 6, 0.3), 0.75, 1.5), 4);      // other rho/delta
  // A level that got no worker at all made no complete step: inefficient.
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 4, 0, 1.0), kDelta, kRho), 2);
}

// An unmeasured quantum (a short window, src/aps_master.cpp): lines 1-2
// still apply, every other desire is kept whatever the utilisation says.
TEST(ApsDesire, UnmeasuredQuantumKeepsDesiresButAppliesLinesOneAndTwo) {
  auto unmeasured = [](bool ready, double d, unsigned p, double u) {
    aps::level_quantum q = quantum(ready, d, p, u);
    q.measured = false;
    return q;
  };
  EXPECT_EQ(aps::next_desire(unmeasured(false, 4, 4, 1.0), kDelta, kRho), 0);      // line 1
  EXPECT_EQ(aps::next_desire(unmeasured(true, 0, 0, 0.0), kDelta, kRho), 1);       // line 2
  EXPECT_DOUBLE_EQ(aps::next_desire(unmeasured(true, 8, 8, 0.0), kDelta, kRho), 8);  // not halved
  EXPECT_DOUBLE_EQ(aps::next_desire(unmeasured(true, 2, 2, 1.0), kDelta, kRho), 2);  // not doubled
  EXPECT_DOUBLE_EQ(aps::next_desire(unmeasured(true, 3, 0, 0.0), kDelta, kRho), 3);  // no worker: kept
  // The same inputs, measured: Figure 1 as usual.
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 8, 8, 0.0), kDelta, kRho), 4);
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 2, 2, 1.0), kDelta, kRho), 4);
}

// A level with ready work never asks for less than one core (the desire
// restarts at 1 in the paper; weft keeps it there rather than going below).
TEST(ApsDesire, InefficientNeverBelowOne) {
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 1, 1, 0.2), kDelta, kRho), 1);
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 1.5, 1, 0.2), kDelta, kRho), 1);
  EXPECT_GE(aps::next_desire(quantum(true, 1.2, 1, 0.0), kDelta, 1.2), 1);
}

// Lines 5-6: efficient and satisfied (allotment == desire) -> rho * d.
TEST(ApsDesire, EfficientSatisfiedMultipliesByRho) {
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 1, 1, 1.0), kDelta, kRho), 2);
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 2, 2, 0.95), kDelta, kRho), 4);
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 4, 4, 0.9), kDelta, kRho), 8);   // exactly delta
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 2, 2, 1.0), kDelta, 1.2), 2.4);
  // A fractional desire is satisfied by its whole part (2.4 asks for 2 cores).
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 2.4, 2, 1.0), kDelta, 1.2), 2.4 * 1.2);
  // Leftover cores may give a level more than it asked for: still satisfied.
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 1, 2, 1.0), kDelta, kRho), 2);
}

// Line 7: efficient and deprived (allotment < desire) -> d, unchanged.
TEST(ApsDesire, EfficientDeprivedKeepsDesire) {
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 4, 2, 1.0), kDelta, kRho), 4);
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 8, 1, 0.95), kDelta, kRho), 8);
  EXPECT_DOUBLE_EQ(aps::next_desire(quantum(true, 2.4, 1, 1.0), kDelta, 1.2), 2.4);
}

// A whole history, as the master would see it: ramp up while efficient and
// satisfied, hold while deprived, back off while inefficient, drop to 0 with
// no work and restart at 1.
TEST(ApsDesire, HistoryFollowsFigure1) {
  double d = 0;
  auto step = [&](bool ready, unsigned allot, double util) {
    d = aps::next_desire(quantum(ready, d, allot, util), kDelta, kRho);
    return d;
  };
  EXPECT_EQ(step(true, 0, 0), 1);        // work appears
  EXPECT_EQ(step(true, 1, 1.0), 2);      // efficient, satisfied
  EXPECT_EQ(step(true, 2, 1.0), 4);
  EXPECT_EQ(step(true, 4, 0.97), 8);
  EXPECT_EQ(step(true, 4, 1.0), 8);      // deprived (only 4 cores)
  EXPECT_EQ(step(true, 4, 1.0), 8);
  EXPECT_EQ(step(true, 4, 0.5), 4);      // inefficient
  EXPECT_EQ(step(true, 4, 0.2), 2);
  EXPECT_EQ(step(true, 2, 0.1), 1);
  EXPECT_EQ(step(true, 1, 0.1), 1);      // stays at 1 while work remains
  EXPECT_EQ(step(false, 1, 0.0), 0);     // no ready work
  EXPECT_EQ(step(false, 0, 0.0), 0);
  EXPECT_EQ(step(true, 0, 0.0), 1);      // restart
}

TEST(ApsDesire, WholeCoresOfADesire) {
  EXPECT_EQ(aps::whole(0), 0u);
  EXPECT_EQ(aps::whole(-1), 0u);
  EXPECT_EQ(aps::whole(0.3), 1u);  // any positive desire asks for a core
  EXPECT_EQ(aps::whole(1), 1u);
  EXPECT_EQ(aps::whole(1.99), 1u);
  EXPECT_EQ(aps::whole(2), 2u);
  EXPECT_EQ(aps::whole(2.0 * 1.2 * 1.2 / 1.2 / 1.2), 2u);  // rounding noise does not lose a core
  EXPECT_EQ(aps::whole(8.4), 8u);
}

// --- allocate ----------------------------------------------------------------------

constexpr unsigned L = weft::priority_levels;
constexpr unsigned D = weft::default_priority_level;

std::vector<double> desires(std::initializer_list<std::pair<unsigned, double>> set) {
  std::vector<double> d(L, 0.0);
  for (auto [l, v] : set) d[l] = v;
  return d;
}
std::vector<bool> ready_where_desired(const std::vector<double>& d) {
  std::vector<bool> r(L);
  for (unsigned l = 0; l < L; ++l) r[l] = d[l] > 0;
  return r;
}
unsigned total(const std::vector<unsigned>& a) { return std::accumulate(a.begin(), a.end(), 0u); }

TEST(ApsAllocate, TopDownWithinDesires) {
  // Desires sum to exactly the worker count: each level gets its desire.
  auto d = desires({{0, 1}, {2, 2}, {6, 1}});
  auto a = aps::allocate(d, ready_where_desired(d), 4, D);
  EXPECT_EQ(a, (std::vector<unsigned>{1, 0, 2, 0, 0, 0, 1, 0}));
}

TEST(ApsAllocate, MostUrgentFirstAndCapped) {
  // Level 0 wants more than there is: it takes every worker, the rest starve
  // for this quantum.
  auto d = desires({{0, 16}, {1, 4}, {7, 1}});
  auto a = aps::allocate(d, ready_where_desired(d), 4, D);
  EXPECT_EQ(a, (std::vector<unsigned>{4, 0, 0, 0, 0, 0, 0, 0}));
  // Level 1 gets what level 0 left, level 7 nothing.
  d = desires({{0, 3}, {1, 4}, {7, 1}});
  a = aps::allocate(d, ready_where_desired(d), 4, D);
  EXPECT_EQ(a, (std::vector<unsigned>{3, 1, 0, 0, 0, 0, 0, 0}));
  // The order is by level, not by size of the desire.
  d = desires({{5, 1}, {6, 8}});
  a = aps::allocate(d, ready_where_desired(d), 2, D);
  EXPECT_EQ(a, (std::vector<unsigned>{0, 0, 0, 0, 0, 1, 1, 0}));
}

TEST(ApsAllocate, FractionalDesiresUseWholeCores) {
  auto d = desires({{1, 1.5}, {4, 2.9}, {5, 0.4}});
  auto a = aps::allocate(d, ready_where_desired(d), 4, D);
  EXPECT_EQ(a[1], 1u);  // 1.5 -> 1
  EXPECT_EQ(a[4], 2u);  // 2.9 -> 2
  EXPECT_EQ(a[5], 1u);  // 0.4 -> 1: any positive desire gets a core
  EXPECT_EQ(total(a), 4u);
}

TEST(ApsAllocate, LeftoversGoHalfToEachReadyLevelFromTheTop) {
  // 8 workers, desires 1 + 1: 6 left over, shared by the two ready levels
  // from the top (half of what is left each time), none to idle levels.
  auto d = desires({{0, 1}, {5, 1}});
  auto a = aps::allocate(d, ready_where_desired(d), 8, D);
  EXPECT_EQ(total(a), 8u);
  EXPECT_EQ(a[0], 1u + 3u + 1u);  // desire, then 6/2, then 2/2
  EXPECT_EQ(a[5], 1u + 1u + 1u);  // desire, then 3/2, then the last one
  for (unsigned l : {1u, 2u, 3u, 4u, 6u, 7u}) EXPECT_EQ(a[l], 0u) << "level " << l;
  EXPECT_GE(a[0], a[5]);  // the more urgent level is favoured
}

TEST(ApsAllocate, LeftoversAllToTheOnlyReadyLevel) {
  // A single ready level gets every worker even if it asked for one: no core
  // is parked on a level that has nothing to run.
  for (unsigned lvl = 0; lvl < L; ++lvl) {
    auto d = desires({{lvl, 1}});
    auto a = aps::allocate(d, ready_where_desired(d), 8, D);
    std::vector<unsigned> want(L, 0);
    want[lvl] = 8;
    EXPECT_EQ(a, want) << "level " << lvl;
  }
  // The least urgent level, with the default level idle (no starvation of
  // low priorities when higher levels have nothing to do).
  auto d = desires({{7, 1}});
  auto a = aps::allocate(d, ready_where_desired(d), 2, D);
  EXPECT_EQ(a[7], 2u);
}

TEST(ApsAllocate, LeftoversSkipLevelsWithoutReadyWork) {
  // Level 2 has a stale positive desire but no ready work: it keeps what its
  // desire earns in the top-down pass, but gets no leftovers.
  std::vector<double> d = desires({{2, 1}, {6, 1}});
  std::vector<bool> ready(L, false);
  ready[6] = true;
  auto a = aps::allocate(d, ready, 6, D);
  EXPECT_EQ(a[2], 1u);
  EXPECT_EQ(a[6], 5u);
  EXPECT_EQ(total(a), 6u);
}

TEST(ApsAllocate, NoReadyWorkGoesToDefaultLevel) {
  std::vector<double> d(L, 0.0);
  std::vector<bool> ready(L, false);
  for (unsigned workers : {1u, 2u, 8u}) {
    auto a = aps::allocate(d, ready, workers, D);
    std::vector<unsigned> want(L, 0);
    want[D] = workers;
    EXPECT_EQ(a, want) << workers << " workers";
  }
  // With another default level.
  auto a = aps::allocate(d, ready, 4, 7);
  EXPECT_EQ(a[7], 4u);
  EXPECT_EQ(total(a), 4u);
}

TEST(ApsAllocate, OneWorker) {
  auto d = desires({{1, 2}, {4, 1}, {7, 1}});
  auto a = aps::allocate(d, ready_where_desired(d), 1, D);
  EXPECT_EQ(a, (std::vector<unsigned>{0, 1, 0, 0, 0, 0, 0, 0}));
}

// Properties on random inputs: every worker is allocated exactly once; the
// top-down pass is honoured (each level gets at least min(whole(desire), what
// the more urgent levels left)); leftovers go only to ready levels (or the
// default level when none is ready); the most urgent ready level gets at
// least half of the leftovers.
TEST(ApsAllocate, RandomisedProperties) {
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int> coin(0, 2);
  std::uniform_real_distribution<double> desire(0.0, 10.0);
  std::uniform_int_distribution<unsigned> nworkers(1, 16);
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<double> d(L, 0.0);
    std::vector<bool> ready(L, false);
    for (unsigned l = 0; l < L; ++l) {
      ready[l] = coin(rng) == 0;
      // Mostly consistent inputs (desire > 0 iff ready), sometimes stale.
      if (ready[l] || coin(rng) == 0) d[l] = ready[l] && coin(rng) == 0 ? 1.0 : desire(rng);
      if (!ready[l] && coin(rng) != 0) d[l] = 0;
    }
    const unsigned P = nworkers(rng);
    auto a = aps::allocate(d, ready, P, D);
    ASSERT_EQ(a.size(), L);
    ASSERT_EQ(total(a), P) << "iteration " << iter;

    unsigned left = P;
    std::vector<unsigned> top_down(L, 0);
    for (unsigned l = 0; l < L; ++l) {
      top_down[l] = std::min(aps::whole(d[l]), left);
      left -= top_down[l];
      ASSERT_GE(a[l], top_down[l]) << "iteration " << iter << " level " << l;
    }
    bool any_ready = false;
    for (unsigned l = 0; l < L; ++l) any_ready = any_ready || ready[l];
    for (unsigned l = 0; l < L; ++l) {
      unsigned extra = a[l] - top_down[l];
      if (!any_ready) {
        ASSERT_EQ(extra, l == D ? left : 0u) << "iteration " << iter << " level " << l;
      } else if (!ready[l]) {
        ASSERT_EQ(extra, 0u) << "leftovers given to idle level " << l << ", iteration " << iter;
      }
    }
    if (any_ready && left > 0) {
      unsigned top = 0;
      while (!ready[top]) ++top;
      ASSERT_GE(a[top] - top_down[top], std::max(1u, left / 2)) << "iteration " << iter;
    }
  }
}

}  // namespace
