// weft-bench — the hang watchdog: a measurement that runs far past its
// budget aborts the process with a diagnostic (exit status 124), so CI fails
// with a message instead of sitting until its own timeout.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "bench.hpp"

namespace weft_bench {

namespace {

struct watchdog_state {
  std::mutex m;
  std::condition_variable cv;
  std::string what;
  std::chrono::steady_clock::time_point deadline;
  bool armed = false;
  bool started = false;
};

// Never destroyed: the detached watchdog thread may still wait on it at exit.
watchdog_state& wd_state() {
  static watchdog_state* s = new watchdog_state;
  return *s;
}

void watchdog_loop() {
  auto& s = wd_state();
  std::unique_lock lk(s.m);
  for (;;) {
    if (!s.armed) {
      s.cv.wait(lk);
      continue;
    }
    if (s.cv.wait_until(lk, s.deadline) == std::cv_status::timeout && s.armed &&
        std::chrono::steady_clock::now() >= s.deadline) {
      std::fflush(stdout);
      std::fprintf(stdout,
                   "\nweft-bench: TIMEOUT: '%s' exceeded its time limit; weft (or a baseline) "
                   "appears to hang. Aborting.\n",
                   s.what.c_str());
      std::fprintf(stderr, "weft-bench: TIMEOUT in '%s'\n", s.what.c_str());
      std::fflush(nullptr);
      std::_Exit(124);
    }
  }
}

}  // namespace

watchdog_scope::watchdog_scope(std::string what, std::chrono::seconds limit) {
  auto& s = wd_state();
  std::lock_guard lk(s.m);
  if (!s.started) {
    std::thread(watchdog_loop).detach();
    s.started = true;
  }
  s.what = std::move(what);
  s.deadline = std::chrono::steady_clock::now() + limit;
  s.armed = true;
  s.cv.notify_all();
}

watchdog_scope::~watchdog_scope() {
  auto& s = wd_state();
  std::lock_guard lk(s.m);
  s.armed = false;
  s.cv.notify_all();
}

}  // namespace weft_bench
