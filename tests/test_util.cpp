#include "test_util.hpp"

#include <dirent.h>
#include <sys/resource.h>

#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>

// The process-wide live counts of fibers, stacks and deques (an internal
// header of the library, not installed; the leak check below is its reader).
#include "../src/live_objects.hpp"

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
#if WEFT_HAS_TSAN
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

resource_counts resource_counts::now() {
  using weft::detail::live_object_counts;
  auto& live = weft::detail::live_objects();
  return {live_object_counts::read(live.fibers), live_object_counts::read(live.stacks),
          live_object_counts::read(live.deques), thread_count(), open_fd_count()};
}

std::string describe_leak(const resource_counts& before, const resource_counts& after) {
  std::ostringstream o;
  auto item = [&](const char* what, long b, long a) {
    if (a != b) o << (o.tellp() > 0 ? ", " : "") << what << " " << b << " -> " << a;
  };
  item("fibers", before.fibers, after.fibers);
  item("stacks", before.stacks, after.stacks);
  item("deques", before.deques, after.deques);
  item("threads", before.threads, after.threads);
  item("descriptors", before.fds, after.fds);
  return o.str();
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

// Per-test leak check: after every test that passed so far, the fibers,
// fiber stacks and deques alive in the process (weft::detail::live_objects),
// the threads (/proc/self/task) and the open descriptors (/proc/self/fd) must
// be back where they were when the test started: every runtime a test creates
// is destroyed by its end, and a destroyed runtime frees its pools and joins
// every thread it started (workers, the APS master, timer, I/O and
// spawn_blocking helper threads, whose idle ones ~blocking_pool stops).
//
// Fibers, stacks and deques are compared at once: ~runtime's free_pools runs
// on the test's thread. Threads and descriptors get a grace period: a joined
// thread's /proc/self/task entry can outlive the join by a moment (the kernel
// reaps it after waking the joiner), and so can a descriptor closed by such a
// thread. A test that already failed is not checked: it may leak a hung
// runtime on purpose (run_bounded).
class leak_check_listener : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo&) override { before_ = resource_counts::now(); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const ::testing::TestResult* r = info.result();
    if (r->Skipped() || r->Failed()) return;
    resource_counts after = resource_counts::now();
    const resource_counts at_end = after;  // fibers, stacks, deques: no grace
    auto grace_end = std::chrono::steady_clock::now() + (sanitizer_build ? 10s : 2s);
    while ((after.threads != before_.threads || after.fds != before_.fds) &&
           std::chrono::steady_clock::now() < grace_end) {
      std::this_thread::sleep_for(1ms);
      after = resource_counts::now();
    }
    after.fibers = at_end.fibers;
    after.stacks = at_end.stacks;
    after.deques = at_end.deques;
    if (!(after == before_)) {
      ADD_FAILURE() << "leak check: " << info.test_suite_name() << "." << info.name()
                    << " did not leave the process as it found it: "
                    << describe_leak(before_, after) << " (see tests/test_util.cpp)";
    }
  }

 private:
  resource_counts before_{};
};

// Appended after the watchdog listener: its thread already runs when
// OnTestStart takes the first snapshot.
[[maybe_unused]] const bool leak_check_registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new leak_check_listener);
  return true;
}();

}  // namespace
}  // namespace weft_test
