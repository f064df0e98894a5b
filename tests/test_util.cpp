#include "test_util.hpp"

#include <dirent.h>
#include <sys/resource.h>

#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>

// ThreadSanitizer cannot see the reference counting of std::exception_ptr:
// it lives in libstdc++.so, which is not instrumented (eh_ptr.cc, and
// __cxa_end_catch / rethrow_exception). When the last reference to an
// exception is dropped on another thread than the one that caught it (the
// task that produced it releases the future state after the consumer caught
// the rethrown exception), TSan reports a race between the consumer's reads of
// the exception object and the free in exception_ptr::_M_release. This is the
// known false positive suppressed the same way by other projects (e.g.
// arangodb/arangodb#21084, ex-actor/ex-actor#247); the pattern only matches
// reports with exception_ptr's own functions on the stack.
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_suppressions() {
  return "race:std::__exception_ptr::exception_ptr::_M_release\n";
}
#endif

namespace weft_test {

long peak_rss_kib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;  // KiB on Linux
}

long current_rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      long v = 0;
      in >> v;
      return v;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return -1;
}

static int count_dir_entries(const char* path) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - (std::string(path) == "/proc/self/fd" ? 1 : 0);  // opendir's own fd
}

int open_fd_count() { return count_dir_entries("/proc/self/fd"); }
int thread_count() { return count_dir_entries("/proc/self/task"); }

unsigned long long test_seed() {
  unsigned long long seed;
  if (const char* s = std::getenv("WEFT_TEST_SEED")) {
    seed = std::strtoull(s, nullptr, 0);
  } else {
    std::random_device rd;
    seed = (static_cast<unsigned long long>(rd()) << 32) ^ rd();
  }
  std::cout << "[ seed     ] WEFT_TEST_SEED=" << seed << std::endl;
  return seed;
}

scoped_env::scoped_env(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) {
    had_old_ = true;
    old_ = old;
  }
  if (value) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
}

scoped_env::~scoped_env() {
  if (had_old_) {
    setenv(name_.c_str(), old_.c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
}

namespace {

// Per-test watchdog: a test that runs longer than the limit (default 120 s,
// 280 s in sanitizer builds, WEFT_TEST_WATCHDOG_SECONDS overrides) is almost
// certainly deadlocked; print its name and abort so the failure is attributed
// and CI does not wait for the ctest TIMEOUT. The thread is joined at the end
// of the test program; the state is never freed, so that nothing races with
// static destruction if a test calls exit().
struct watchdog_state {
  std::mutex m;
  std::condition_variable cv;
  bool armed = false;
  bool stop = false;
  std::thread thread;
  std::chrono::steady_clock::time_point deadline;
  std::string test;
};

long watchdog_seconds() {
  if (const char* s = std::getenv("WEFT_TEST_WATCHDOG_SECONDS")) {
    long v = std::strtol(s, nullptr, 10);
    if (v > 0) return v;
  }
  return sanitizer_build ? 280 : 120;
}

void watchdog_loop(watchdog_state* st) {
  std::unique_lock<std::mutex> lk(st->m);
  for (;;) {
    if (st->stop) return;
    if (!st->armed) {
      st->cv.wait(lk);
      continue;
    }
    auto deadline = st->deadline;
    if (st->cv.wait_until(lk, deadline) == std::cv_status::timeout && st->armed &&
        st->deadline == deadline) {
      std::fprintf(stderr,
                   "\n*** weft test watchdog: %s still running after %ld s — "
                   "probable deadlock or lost wake-up; aborting ***\n",
                   st->test.c_str(), watchdog_seconds());
      std::fflush(stderr);
      std::fflush(stdout);
      std::abort();
    }
  }
}

// Reachable from a global, so LeakSanitizer does not report it.
watchdog_state* const the_watchdog_state = new watchdog_state;

class watchdog_listener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override {
    std::lock_guard<std::mutex> lk(st_->m);
    st_->test = std::string(info.test_suite_name()) + "." + info.name();
    st_->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(watchdog_seconds());
    st_->armed = true;
    if (!st_->thread.joinable() && !st_->stop) st_->thread = std::thread(watchdog_loop, st_);
    st_->cv.notify_all();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> lk(st_->m);
    st_->armed = false;
    st_->cv.notify_all();
  }
  // Join the thread before exit: no thread outlives main (TSan otherwise
  // sleeps a second at exit in every test process).
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    {
      std::lock_guard<std::mutex> lk(st_->m);
      st_->stop = true;
      st_->cv.notify_all();
    }
    if (st_->thread.joinable()) st_->thread.join();
  }

 private:
  watchdog_state* st_ = the_watchdog_state;
};

[[maybe_unused]] const bool watchdog_registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new watchdog_listener);
  return true;
}();

}  // namespace
}  // namespace weft_test
