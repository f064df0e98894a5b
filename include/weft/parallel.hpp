// weft — parallel loops built on fork_join (recursive halving).
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "weft/future.hpp"
#include "weft/priority_level.hpp"
#include "weft/task_group.hpp"

namespace weft {

namespace detail {
unsigned current_worker_count() noexcept;

template <class I, class Body>
void parallel_for_range(I lo, I hi, I grain, const Body& body) {
  while (hi - lo > grain) {
    I mid = lo + (hi - lo) / 2;
    fork_join([&] { parallel_for_range(lo, mid, grain, body); },
              [&] { parallel_for_range(mid, hi, grain, body); });
    return;
  }
  for (I i = lo; i < hi; ++i) body(i);
}

template <class I, class T, class Map, class Combine>
T parallel_reduce_range(I lo, I hi, I grain, const T& identity, const Map& map,
                        const Combine& combine) {
  if (hi - lo <= grain) {
    T acc = identity;
    for (I i = lo; i < hi; ++i) acc = combine(std::move(acc), map(i));
    return acc;
  }
  I mid = lo + (hi - lo) / 2;
  auto [a, b] = fork_join(
      [&] { return parallel_reduce_range(lo, mid, grain, identity, map, combine); },
      [&] { return parallel_reduce_range(mid, hi, grain, identity, map, combine); });
  return combine(std::move(a), std::move(b));
}

template <class I>
I default_grain(I lo, I hi) {
  // About 8 chunks per worker: enough slack for load balance, few enough that
  // the per-chunk overhead is invisible for any body worth parallelising.
  auto n = static_cast<std::size_t>(hi - lo);
  std::size_t chunks = std::size_t{8} * std::max(1u, current_worker_count());
  return static_cast<I>(std::max<std::size_t>(1, n / chunks));
}

template <class I>
void check_range(I lo, I hi, I grain, const char* what) {
  if (hi < lo) throw std::invalid_argument(std::string(what) + ": hi < lo");
  if (grain < I{1}) throw std::invalid_argument(std::string(what) + ": grain must be >= 1");
}
}  // namespace detail

// Calls body(i) for every i in [lo, hi), in parallel, in chunks of at most
// `grain` iterations. Exceptions from body propagate (the first one wins).
template <class I, class Body>
  requires std::is_integral_v<I>
void parallel_for(I lo, I hi, I grain, const Body& body) {
  detail::check_range(lo, hi, grain, "weft::parallel_for");
  detail::require_worker("weft::parallel_for");
  detail::parallel_for_range(lo, hi, grain, body);
}

template <class I, class Body>
  requires std::is_integral_v<I>
void parallel_for(I lo, I hi, const Body& body) {
  detail::check_range(lo, hi, I{1}, "weft::parallel_for");
  detail::require_worker("weft::parallel_for");
  if (hi == lo) return;
  detail::parallel_for_range(lo, hi, detail::default_grain(lo, hi), body);
}

// parallel_for run as a task of priority p (its chunks inherit p); the caller
// waits for it, so p should be at least as urgent as the caller.
template <class I, class Body>
  requires std::is_integral_v<I>
void parallel_for(I lo, I hi, const Body& body, priority p) {
  detail::check_range(lo, hi, I{1}, "weft::parallel_for");
  // Check before launching: a rejected wait must not leave a task running
  // with references to this frame.
  detail::check_wait_priority(p.level());
  detail::launch_async_at(nullptr, static_cast<int>(p.level()),
                          [&] { parallel_for(lo, hi, body); }).get();
}

// Returns combine(... combine(identity, map(lo)) ..., map(hi-1)), evaluated in
// parallel. combine must be associative and identity its neutral element.
template <class I, class T, class Map, class Combine>
  requires std::is_integral_v<I>
T parallel_reduce(I lo, I hi, I grain, T identity, const Map& map, const Combine& combine) {
  detail::check_range(lo, hi, grain, "weft::parallel_reduce");
  detail::require_worker("weft::parallel_reduce");
  return detail::parallel_reduce_range(lo, hi, grain, identity, map, combine);
}

template <class I, class T, class Map, class Combine>
  requires std::is_integral_v<I>
T parallel_reduce(I lo, I hi, T identity, const Map& map, const Combine& combine) {
  detail::check_range(lo, hi, I{1}, "weft::parallel_reduce");
  detail::require_worker("weft::parallel_reduce");
  if (hi == lo) return identity;
  return detail::parallel_reduce_range(lo, hi, detail::default_grain(lo, hi), identity, map,
                                       combine);
}

}  // namespace weft
