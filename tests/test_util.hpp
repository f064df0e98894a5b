// Shared helpers for the weft tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <utility>

#include "weft/detail/arch.hpp"  // WEFT_HAS_TSAN
#include "weft/weft.hpp"

namespace weft_test {

using namespace std::chrono_literals;

#ifdef WEFT_SANITIZER_BUILD
inline constexpr bool sanitizer_build = true;
#else
inline constexpr bool sanitizer_build = false;
#endif

inline constexpr bool tsan_build = WEFT_HAS_TSAN;

// Picks a problem size: `normal` in ordinary builds, `sanitized` under ASan or
// TSan (5-20x slower). Only used where the normal size would not fit the time
// budget; each call site says why.
constexpr long long scaled(long long normal, long long sanitized) {
  return sanitizer_build ? sanitized : normal;
}

inline weft::options make_options(unsigned workers, std::size_t stack_size = 0) {
  weft::options o;
  o.workers = workers;
  o.stack_size = stack_size;
  return o;
}

// Every test of a binary that links test_util.cpp (core, priority and I/O
// tests), this fixture's included, is followed by a leak check: fibers,
// stacks, deques, threads and descriptors must be back where they were when
// it started (test_util.cpp, leak_check_listener).
//
// Fixture parameterised over worker counts (marl style) and steal policies:
// 1 worker (every blocking point must be served by the single worker), 2
// (= the cores of CI) and 8 (oversubscribed), each with the proactive (ProWS)
// and the parsimonious (ParWS) policy.
struct config {
  unsigned workers;
  weft::steal_policy policy;
};

inline std::ostream& operator<<(std::ostream& os, const config& c) {
  return os << c.workers << " worker(s), "
            << (c.policy == weft::steal_policy::proactive ? "proactive" : "parsimonious");
}

class Workers : public ::testing::TestWithParam<config> {
 protected:
  unsigned workers() const { return GetParam().workers; }
  weft::steal_policy policy() const { return GetParam().policy; }
  weft::options options() const {
    weft::options o = make_options(GetParam().workers);
    o.policy = GetParam().policy;
    return o;
  }
};

inline std::string config_name(const ::testing::TestParamInfo<config>& info) {
  return "w" + std::to_string(info.param.workers) +
         (info.param.policy == weft::steal_policy::proactive ? "_proactive" : "_parsimonious");
}

inline std::string workers_name(const ::testing::TestParamInfo<unsigned>& info) {
  return "w" + std::to_string(info.param);
}

#define WEFT_INSTANTIATE_WORKERS(fixture)                                                 \
  INSTANTIATE_TEST_SUITE_P(                                                               \
      Workers, fixture,                                                                   \
      ::testing::Values(::weft_test::config{1, ::weft::steal_policy::proactive},          \
                        ::weft_test::config{2, ::weft::steal_policy::proactive},          \
                        ::weft_test::config{8, ::weft::steal_policy::proactive},          \
                        ::weft_test::config{1, ::weft::steal_policy::parsimonious},       \
                        ::weft_test::config{2, ::weft::steal_policy::parsimonious},       \
                        ::weft_test::config{8, ::weft::steal_policy::parsimonious}),      \
      ::weft_test::config_name)

// Calls step() until pred() holds or `limit` has passed; returns pred(). The
// three helpers below are this loop with their own step. Used when a test
// needs another task or thread to reach a point first; the limit only turns a
// scheduler bug into a failure instead of a hang, it never decides a passing
// outcome.
template <class Pred, class Step>
bool poll_until(Pred pred, std::chrono::milliseconds limit, Step step) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    step();
  }
  return true;
}

// Inside a task: yields (this_task::yield) between checks.
template <class Pred>
bool yield_until(Pred pred, std::chrono::milliseconds limit = 20s) {
  return poll_until(pred, limit, [] { weft::this_task::yield(); });
}

// Inside a task: sleeps 100 us between checks. Use it to wait for work of a
// *less* urgent level. A task that yields stays runnable, so under APS its
// level keeps its workers and a less urgent level may get none (with one
// worker, never: the starvation docs/priorities.md describes). A sleeping
// task leaves its level idle, and the next quantum moves the worker to the
// level that has work.
template <class Pred>
bool sleep_until_true(Pred pred, std::chrono::milliseconds limit = 20s) {
  return poll_until(pred, limit, [] { weft::this_task::sleep_for(100us); });
}

// On a plain thread: sleeps the thread 100 us between checks.
template <class Pred>
bool spin_until(Pred pred, std::chrono::milliseconds limit = 20s) {
  return poll_until(pred, limit, [] { std::this_thread::sleep_for(100us); });
}

// Runs f as a root task of *rt and waits at most `limit` for it. On timeout it
// records a failure and deliberately leaks the runtime (a runtime with a hung
// task cannot be destroyed: its destructor would wait forever), so a scheduler
// deadlock fails the test instead of hanging it. Rethrows f's exception.
template <class F>
bool run_bounded(std::unique_ptr<weft::runtime>& rt, F&& f,
                 std::chrono::seconds limit = std::chrono::seconds(60)) {
  auto fut = rt->async(std::forward<F>(f));
  if (fut.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "root task did not finish within " << limit.count()
                  << " s (deadlock or lost task?); leaking the runtime";
    (void)rt.release();  // deliberately leaked, see above
    return false;
  }
  fut.get();
  return true;
}

// Process statistics (Linux).
long peak_rss_kib();           // getrusage(RUSAGE_SELF).ru_maxrss
long current_rss_kib();        // VmRSS from /proc/self/status
int open_fd_count();           // entries of /proc/self/fd
int thread_count();            // entries of /proc/self/task

// What the per-test leak check (test_util.cpp) compares before and after
// every test: weft's live fibers, stacks and deques (process-wide), the
// threads and the open descriptors.
struct resource_counts {
  long fibers, stacks, deques;
  int threads, fds;
  static resource_counts now();
  bool operator==(const resource_counts&) const = default;
};
// "fibers 0 -> 2, threads 3 -> 5": what differs.
std::string describe_leak(const resource_counts& before, const resource_counts& after);

// A test-local seed: WEFT_TEST_SEED if set, else random. Always printed.
unsigned long long test_seed();

// RAII setenv/unsetenv with restore.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value);  // value nullptr: unset
  ~scoped_env();
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  std::string name_;
  bool had_old_ = false;
  std::string old_;
};

}  // namespace weft_test
