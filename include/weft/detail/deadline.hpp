// weft — turning the durations and time points users pass (any clock, any
// representation, including the "forever" values max() and min()) into the
// steady_clock deadlines weft waits with, without overflow: every conversion
// saturates. duration::max() and time_point::max() give
// steady_clock::time_point::max(), which weft treats as "no deadline";
// negative durations and time points in the past give a deadline that has
// already passed.
#pragma once

#include <chrono>
#include <cmath>
#include <type_traits>

namespace weft::detail {

using steady_time = std::chrono::steady_clock::time_point;

// `base + d`, saturated to the range of steady_clock::time_point.
template <class Rep, class Period>
steady_time saturating_deadline(steady_time base, const std::chrono::duration<Rep, Period>& d) noexcept {
  using tick = std::chrono::steady_clock::duration;
  using ld_tick = std::chrono::duration<long double, tick::period>;
  // Exact in long double for every 64-bit count (64-bit mantissa); a
  // duration of any period and representation fits without overflow.
  const long double add = std::chrono::duration_cast<ld_tick>(d).count();
  if (std::isnan(add)) return base;
  const long double target = static_cast<long double>(base.time_since_epoch().count()) + add;
  constexpr long double hi = static_cast<long double>(tick::max().count());
  constexpr long double lo = static_cast<long double>(tick::min().count());
  if (target >= hi) return steady_time::max();
  if (target <= lo) return steady_time::min();
  return steady_time(tick(static_cast<tick::rep>(target)));
}

// now + d, saturated.
template <class Rep, class Period>
steady_time deadline_after(const std::chrono::duration<Rep, Period>& d) noexcept {
  return saturating_deadline(std::chrono::steady_clock::now(), d);
}

// The steady_clock deadline equivalent to t on its own clock, saturated. For
// another clock it is now + (t - Clock::now()), as std::condition_variable
// does: a later change of that clock is not followed.
template <class Clock, class Duration>
steady_time to_steady_deadline(const std::chrono::time_point<Clock, Duration>& t) noexcept {
  // max() of any clock is "forever", min() "long ago", whatever its epoch.
  if (t == std::chrono::time_point<Clock, Duration>::max()) return steady_time::max();
  if (t == std::chrono::time_point<Clock, Duration>::min()) return steady_time::min();
  if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
    return saturating_deadline(steady_time{}, t.time_since_epoch());
  } else {
    using ld = std::chrono::duration<long double, std::nano>;
    const long double left = std::chrono::duration_cast<ld>(t.time_since_epoch()).count() -
                             std::chrono::duration_cast<ld>(Clock::now().time_since_epoch()).count();
    return saturating_deadline(std::chrono::steady_clock::now(), ld(left));
  }
}

}  // namespace weft::detail
