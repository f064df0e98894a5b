// weft-bench — timing and statistics helpers shared by every benchmark.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace weft_bench {

// Keeps `value` alive and opaque to the optimiser (Google Benchmark's
// DoNotOptimize): the compiler must materialise it and cannot reason about
// its contents. Single-alternative constraints only: GCC miscompiles the
// read-write multi-alternative form "+r,m" at -O1 with sanitizers.
template <class T>
inline void do_not_optimize(T& value) {
  if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(void*)) {
    asm volatile("" : "+r"(value) : : "memory");
  } else {
    asm volatile("" : "+m"(value) : : "memory");
  }
}
template <class T>
inline void do_not_optimize(const T& value) {
  asm volatile("" : : "m"(value) : "memory");
}

// The median of a non-empty sample (mean of the two middle values when even).
inline double median(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("median of an empty sample");
  std::sort(v.begin(), v.end());
  std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

inline double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
inline double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

// (max - min) / median: a crude but honest noise indicator for a shared box.
inline double spread(const std::vector<double>& v) {
  double m = median(v);
  return m > 0 ? (max_of(v) - min_of(v)) / m : 0.0;
}

// Wall time of one call of f, in seconds, measured with steady_clock.
template <class F>
double time_once(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

// Per-repetition wall times (seconds) of `reps` calls of f, after `warmup`
// untimed calls. `f` is the whole measured region; keep set-up outside it.
template <class F>
std::vector<double> time_reps(int reps, int warmup, F&& f) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) out.push_back(time_once(f));
  return out;
}

// As time_reps, but each repetition first runs `setup` outside the timed
// region (fresh ivar arrays and the like).
template <class Setup, class F>
std::vector<double> time_reps_with_setup(int reps, int warmup, Setup&& setup, F&& f) {
  for (int i = 0; i < warmup; ++i) { setup(); f(); }
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    setup();
    out.push_back(time_once(f));
  }
  return out;
}

// Scales every sample by k (seconds -> ns per task, etc.).
inline std::vector<double> scaled(std::vector<double> v, double k) {
  for (double& x : v) x *= k;
  return v;
}

}  // namespace weft_bench
