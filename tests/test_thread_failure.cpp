// Helper threads that cannot be created (RLIMIT_NPROC, a pids cgroup,
// RLIMIT_AS): weft must report a weft:: error (std::system_error with the
// errno) from the call that needed the thread, and stay usable — never
// std::terminate, never a hang.
//
// Thread creation is made to fail deterministically by interposing
// pthread_create in this test binary (std::thread calls it through the
// dynamic linker, so this definition comes first; the real one, or a
// sanitizer's interceptor, is found with RTLD_NEXT). One test also hits a
// real limit (RLIMIT_AS) in a child process.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "test_util.hpp"
#include "weft/io.hpp"
#include "weft/priority.hpp"
#include "weft/weft.hpp"

namespace {
// pthread_create calls still allowed to succeed; negative: no limit.
std::atomic<long> creations_left{-1};
std::atomic<long> refused{0};
}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                              void* (*start)(void*), void* arg) {
  using fn_t = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static fn_t real = reinterpret_cast<fn_t>(::dlsym(RTLD_NEXT, "pthread_create"));
  long left = creations_left.load();
  while (left >= 0) {
    if (left == 0) {
      refused.fetch_add(1);
      return EAGAIN;  // what RLIMIT_NPROC and a pids cgroup give
    }
    if (creations_left.compare_exchange_weak(left, left - 1)) break;
  }
  return real(thread, attr, start, arg);
}

namespace {

using namespace weft_test;
using namespace std::chrono_literals;

// Thread creation fails while an object of this type lives (after `allow`
// more successful creations).
struct thread_limit {
  explicit thread_limit(long allow = 0) { creations_left.store(allow); }
  ~thread_limit() { creations_left.store(-1); }
  thread_limit(const thread_limit&) = delete;
  thread_limit& operator=(const thread_limit&) = delete;
};

// Expects f() to throw std::system_error with EAGAIN whose message starts
// with "weft: cannot start " and names `what`.
template <class F>
void expect_thread_error(F&& f, const char* what) {
  bool thrown = false;
  try {
    f();
  } catch (const std::system_error& e) {
    thrown = true;
    EXPECT_EQ(e.code(), std::errc::resource_unavailable_try_again) << e.what();
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("weft: cannot start ", 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
  EXPECT_TRUE(thrown) << "no std::system_error (expected one naming " << what << ")";
}

TEST(ThreadFailure, InterposerIsActive) {
  thread_limit limit;
  const long before = refused.load();
  std::error_code ec;
  try {
    std::thread t([] {});
    t.join();
  } catch (const std::system_error& e) {
    ec = e.code();
  }
  EXPECT_EQ(ec, std::errc::resource_unavailable_try_again);
  EXPECT_EQ(refused.load(), before + 1);
}

class ThreadFailure : public Workers {};
WEFT_INSTANTIATE_WORKERS(ThreadFailure);

// The timer thread is started by the first sleep or timed wait. It used to be
// started inside a noexcept suspension step: std::terminate.
TEST_P(ThreadFailure, SleepAndTimedWaitReportThatTheTimerThreadCannotStart) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [&] {
    {
      thread_limit limit;
      expect_thread_error([] { weft::this_task::sleep_for(1ms); }, "the timer thread");
      weft::promise<int> p;
      auto f = p.get_future();
      expect_thread_error([&] { (void)f.wait_for(1ms); }, "the timer thread");
      weft::ivar<int> iv;  // untimed waits need no thread
      auto reader = weft::async([&] { return iv.get(); });
      iv.put(3);
      EXPECT_EQ(reader.get(), 3);
    }
    // Usable once threads can be created again.
    auto t0 = std::chrono::steady_clock::now();
    weft::this_task::sleep_for(2ms);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 2ms);
    weft::promise<int> p;
    auto f = p.get_future();
    EXPECT_EQ(f.wait_for(1ms), std::future_status::timeout);
  });
}

// A timed wait from a plain thread needs no helper thread at all.
TEST(ThreadFailureOutside, PlainThreadTimedWaitNeedsNoThread) {
  weft::runtime rt(make_options(1));
  weft::promise<int> p;
  auto f = p.get_future();
  thread_limit limit;
  EXPECT_EQ(f.wait_for(1ms), std::future_status::timeout);
}

// The APS master is started by the first task of a non-default level. It
// used to be flagged as running before it was created: the spawn threw an
// unprefixed error and every later level-0 task waited forever.
TEST_P(ThreadFailure, PrioritySpawnReportsThatTheMasterCannotStart) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [&] {
    {
      thread_limit limit;
      expect_thread_error([] { (void)weft::async(weft::priority{0}, [] { return 1; }); },
                          "priority scheduler");
      weft::task_group g;
      expect_thread_error([&] { g.spawn([] {}, weft::priority{1}); }, "priority scheduler");
      g.spawn([] {});  // the group is intact
      g.sync();
      expect_thread_error(
          [] { (void)weft::async(weft::at_priority<0>, [](weft::task_context<0>) { return 2; }); },
          "priority scheduler");
    }
    // Usable once threads can be created again: level-0 work runs.
    EXPECT_EQ(weft::async(weft::priority{0}, [] { return 7; }).get(), 7);
    weft::task_group g;
    std::atomic<int> n{0};
    for (int i = 0; i < 8; ++i) g.spawn([&] { ++n; }, weft::priority{i % 3 == 0 ? 0u : 3u});
    g.sync();
    EXPECT_EQ(n.load(), 8);
  });
}

// The same from outside the runtime (runtime::run with a priority injects).
TEST_P(ThreadFailure, PriorityRunFromOutsideReportsAndRecovers) {
  weft::runtime rt(options());
  {
    thread_limit limit;
    expect_thread_error([&] { (void)rt.run(weft::priority{0}, [] { return 1; }); },
                        "priority scheduler");
  }
  auto f = rt.async([&] { return weft::async(weft::priority{0}, [] { return 5; }).get(); });
  ASSERT_EQ(f.wait_for(60s), std::future_status::ready) << "level-0 work hangs";
  EXPECT_EQ(f.get(), 5);
  EXPECT_EQ(rt.run(weft::priority{1}, [] { return 6; }), 6);
}

// Worker threads: the constructor reports, stops the workers it started and
// leaks nothing (the ASan build checks); the next runtime is fine.
TEST(ThreadFailureRuntime, ConstructorReportsThatAWorkerCannotStart) {
  for (long allow : {0L, 1L, 3L}) {
    const int threads_before = thread_count();
    {
      thread_limit limit(allow);
      expect_thread_error([] { weft::runtime rt(make_options(4)); }, "a worker thread");
    }
    EXPECT_EQ(thread_count(), threads_before) << "the workers that started were not joined";
  }
  weft::runtime rt(make_options(4));
  EXPECT_EQ(rt.run([] { return weft::async([] { return 4; }).get(); }), 4);
}

// The I/O backend's threads (epoll I/O threads, io_uring reapers) are started
// by the first I/O operation, which reports a failure; a later one retries.
TEST_P(ThreadFailure, FirstIoOperationReportsThatTheBackendCannotStart) {
  for (weft::io_backend backend : {weft::io_backend::epoll, weft::io_backend::io_uring}) {
    weft::options o = options();
    o.io = backend;
    auto rt = std::make_unique<weft::runtime>(o);
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    bool uring_missing = false;
    run_bounded(rt, [&] {
      char c = 0;
      {
        thread_limit limit;
        bool thrown = false;
        try {
          (void)weft::io::read(fds[0], &c, 1);
        } catch (const std::system_error& e) {
          thrown = true;
          const std::string msg = e.what();
          if (backend == weft::io_backend::io_uring && msg.find("io_uring_queue_init") != std::string::npos) {
            uring_missing = true;  // the kernel refused the ring itself: not this test's subject
          } else {
            EXPECT_EQ(e.code(), std::errc::resource_unavailable_try_again) << msg;
            EXPECT_EQ(msg.rfind("weft: cannot start ", 0), 0u) << msg;
          }
        }
        EXPECT_TRUE(thrown);
      }
      if (uring_missing) return;
      auto r = weft::io::read(fds[0], &c, 1);
      ASSERT_EQ(::write(fds[1], "z", 1), 1);
      EXPECT_EQ(r.get(), 1u);
      EXPECT_EQ(c, 'z');
    });
    ::close(fds[0]);
    ::close(fds[1]);
  }
}

// A real limit, not an interposer: RLIMIT_AS leaves no room for a thread's
// stack, in a child process. The timer thread cannot start; the runtime
// reports it and goes on.
TEST(ThreadFailureRealLimit, AddressSpaceLimit) {
  if (sanitizer_build)
    GTEST_SKIP() << "sanitizer runtimes reserve terabytes of address space and need more "
                    "of it as they run; RLIMIT_AS cannot be set for them";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        weft::runtime rt(make_options(2));
        // Warm up: the runtime's own mappings exist before the limit.
        rt.run([] { (void)weft::async([] { return 1; }).get(); });
        long vm_kib = 0;
        {
          std::ifstream status("/proc/self/status");
          std::string line;
          while (std::getline(status, line))
            if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stol(line.substr(7));
        }
        rlimit lim{};
        // 4 MiB of room: less than a thread's default 8 MiB stack.
        lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(vm_kib + 4096) * 1024;
        if (::setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(3);
        int status = rt.run([] {
          try {
            weft::this_task::sleep_for(1ms);
            return 4;  // the thread was created after all
          } catch (const std::system_error& e) {
            return std::string(e.what()).rfind("weft: cannot start the timer thread", 0) == 0 ? 0 : 5;
          }
        });
        // Still usable without the thread.
        if (status == 0 && rt.run([] { return weft::async([] { return 2; }).get(); }) != 2) status = 6;
        std::fflush(stdout);
        std::_Exit(status);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
