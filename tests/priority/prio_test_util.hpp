// Shared helpers for the priority (APS) tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace weft_prio_test {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using mode = weft::options::priority_mode;

inline constexpr bool sanitizer_build = weft_test::sanitizer_build;
using weft_test::scaled;

// Every test of the API runs with 1 worker (every level served by the same
// thread, so each level switch must happen), 2 (= the cores of CI) and 8
// (oversubscribed), with both steal policies, and both priority modes.
struct prio_config {
  unsigned workers;
  weft::steal_policy policy;
  mode priorities;
};

inline std::ostream& operator<<(std::ostream& os, const prio_config& c) {
  return os << c.workers << " worker(s), "
            << (c.policy == weft::steal_policy::proactive ? "proactive" : "parsimonious") << ", "
            << (c.priorities == mode::adaptive ? "adaptive" : "oblivious");
}

inline std::string prio_config_name(const ::testing::TestParamInfo<prio_config>& info) {
  return "w" + std::to_string(info.param.workers) +
         (info.param.policy == weft::steal_policy::proactive ? "_proactive" : "_parsimonious") +
         (info.param.priorities == mode::adaptive ? "_adaptive" : "_oblivious");
}

inline std::vector<prio_config> all_configs(bool with_oblivious = true) {
  std::vector<prio_config> v;
  for (mode m : {mode::adaptive, mode::oblivious}) {
    if (m == mode::oblivious && !with_oblivious) continue;
    for (auto pol : {weft::steal_policy::proactive, weft::steal_policy::parsimonious})
      for (unsigned w : {1u, 2u, 8u}) v.push_back({w, pol, m});
  }
  return v;
}

class PrioWorkers : public ::testing::TestWithParam<prio_config> {
 protected:
  unsigned workers() const { return GetParam().workers; }
  bool adaptive() const { return GetParam().priorities == mode::adaptive; }
  weft::options options() const {
    weft::options o;
    o.workers = GetParam().workers;
    o.policy = GetParam().policy;
    o.priorities = GetParam().priorities;
    return o;
  }
};

inline weft::options options_for(unsigned workers, mode m,
                                 weft::steal_policy pol = weft::steal_policy::proactive) {
  weft::options o;
  o.workers = workers;
  o.policy = pol;
  o.priorities = m;
  return o;
}

inline unsigned level_now() { return weft::this_task::current_priority().level(); }

// Busy computation of roughly `iters` dependent steps (not optimised away).
inline std::uint64_t spin_work(std::uint64_t seed, std::uint64_t iters) {
  std::uint64_t x = seed | 1;
  for (std::uint64_t i = 0; i < iters; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  asm volatile("" : "+r"(x));
  return x;
}

// Busy-waits (computing) for about `d` of wall time.
inline void busy_for(std::chrono::nanoseconds d) {
  auto until = clk::now() + d;
  std::uint64_t x = 1;
  while (clk::now() < until) x = spin_work(x, 64);
}

inline double ms(clk::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace weft_prio_test
