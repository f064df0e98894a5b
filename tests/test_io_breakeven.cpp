// The oversubscription break-even latency of weft-bench's io.scale part
// (bench/io_breakeven.hpp): the last crossing of T(futures) / T(blocking 2P)
// through 1 over a latency sweep, interpolated in log-log.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "../bench/io_breakeven.hpp"

using weft_bench::break_even;
using weft_bench::find_break_even;

TEST(IoBreakEven, InterpolatesTheFirstCrossingInLogLog) {
  // Ratio 2 at 1 ms, 0.5 at 4 ms: log-log midpoint, 2 ms.
  const break_even be = find_break_even({1, 4, 16}, {2.0, 0.5, 0.25});
  EXPECT_EQ(be.where, break_even::kind::found);
  EXPECT_NEAR(be.latency, 2.0, 1e-9);
}

TEST(IoBreakEven, UnevenCrossing) {
  // log r goes from log 4 to log 0.5 between 1 and 8 ms: t = log4 / log8 = 2/3,
  // so the latency is 8^(2/3) = 4 ms.
  const break_even be = find_break_even({0.5, 1, 8}, {6.0, 4.0, 0.5});
  EXPECT_EQ(be.where, break_even::kind::found);
  EXPECT_NEAR(be.latency, 4.0, 1e-9);
}

TEST(IoBreakEven, ExactlyOneIsTheCrossing) {
  const break_even be = find_break_even({1, 2, 5}, {1.5, 1.2, 1.0});
  EXPECT_EQ(be.where, break_even::kind::found);
  EXPECT_NEAR(be.latency, 5.0, 1e-9);
}

TEST(IoBreakEven, TheLastCrossingCounts) {
  // Below 1 at 2 ms (noise), above again at 4 ms: the futures win from the
  // crossing between 4 and 8 ms on. log r goes from log 1.2 to log 0.5 there.
  const break_even be = find_break_even({1, 2, 4, 8}, {1.5, 0.9, 1.2, 0.5});
  EXPECT_EQ(be.where, break_even::kind::found);
  const double t = std::log(1.2) / (std::log(1.2) - std::log(0.5));
  EXPECT_NEAR(be.latency, 4.0 * std::pow(2.0, t), 1e-9);
  // Above 1 at the last latency: the threads still win there.
  EXPECT_EQ(find_break_even({1, 2, 5, 10}, {1.5, 1.0, 0.8, 1.1}).where,
            break_even::kind::above);
}

TEST(IoBreakEven, BelowAndAboveTheSweep) {
  const break_even below = find_break_even({0.5, 1}, {0.9, 0.5});
  EXPECT_EQ(below.where, break_even::kind::below);
  EXPECT_EQ(below.latency, 0.5);
  const break_even above = find_break_even({0.5, 1, 2}, {3, 2, 1.5});
  EXPECT_EQ(above.where, break_even::kind::above);
  EXPECT_EQ(above.latency, 2);
}

TEST(IoBreakEven, SkipsUnmeasuredPoints) {
  // The NaN at 2 ms is skipped: the crossing is between 1 and 4 ms.
  const break_even be = find_break_even({1, 2, 4}, {2.0, NAN, 0.5});
  EXPECT_EQ(be.where, break_even::kind::found);
  EXPECT_NEAR(be.latency, 2.0, 1e-9);
  const break_even none = find_break_even({1, 2}, {NAN, NAN});
  EXPECT_EQ(none.where, break_even::kind::none);
  EXPECT_TRUE(std::isnan(none.latency));
  EXPECT_EQ(find_break_even({}, {}).where, break_even::kind::none);
}
