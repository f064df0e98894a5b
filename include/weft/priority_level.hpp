// weft — a priority level known at run time (0 is the most urgent), and the
// error a run-time priority inversion raises. See weft/priority.hpp.
#pragma once

#include <stdexcept>
#include <string>

#include "weft/detail/scheduler_hooks.hpp"

namespace weft {

inline constexpr unsigned priority_levels = detail::priority_levels;
inline constexpr unsigned default_priority_level = detail::default_priority_level;

// A priority level known at run time. Throws std::invalid_argument when the
// level is out of range.
class priority {
 public:
  constexpr explicit priority(unsigned level) : level_(check(level)) {}
  static constexpr priority highest() noexcept { return priority(0u, 0); }
  static constexpr priority normal() noexcept { return priority(default_priority_level, 0); }
  static constexpr priority lowest() noexcept { return priority(priority_levels - 1, 0); }
  constexpr unsigned level() const noexcept { return level_; }
  constexpr bool more_urgent_than(priority o) const noexcept { return level_ < o.level_; }
  friend constexpr bool operator==(priority a, priority b) noexcept { return a.level_ == b.level_; }

 private:
  constexpr priority(unsigned level, int) noexcept : level_(level) {}
  static constexpr unsigned check(unsigned level) {
    if (level >= priority_levels)
      throw std::invalid_argument("weft::priority: level " + std::to_string(level) +
                                  " is out of range [0, " + std::to_string(priority_levels - 1) + "]");
    return level;
  }
  unsigned level_;
};

// Thrown (in builds with WEFT_PRIORITY_CHECKS) when a task waits on work of a
// lower priority than its own.
class priority_inversion : public std::logic_error {
 public:
  priority_inversion(unsigned waiter, unsigned awaited)
      : std::logic_error("weft: priority inversion: a task of priority " + std::to_string(waiter) +
                         " waits on work of lower priority " + std::to_string(awaited) +
                         " (level 0 is the most urgent)"),
        waiter_level(waiter),
        awaited_level(awaited) {}
  unsigned waiter_level;
  unsigned awaited_level;
};

}  // namespace weft
