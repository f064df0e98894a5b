// Exceptions in flight across suspension points.
//
// The C++ runtime keeps the "caught exceptions" stack and the uncaught
// exception count per *thread* (__cxa_get_globals()). A task that suspends
// while an exception is being handled (inside a catch block) or while the
// stack unwinds (a destructor that syncs, gets a future, ...) may resume on
// another worker, and meanwhile other tasks run on its old thread. Unless the
// fiber switch saves and restores that per-thread state, `throw;`,
// std::current_exception() and std::uncaught_exceptions() see another task's
// state: task_group's destructor then rethrows during unwinding (terminate) or
// silently swallows a child's exception.
//
// Each scenario runs in a child process (EXPECT_EXIT) because the failure
// mode is usually std::terminate, which must not take the other tests down.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;

struct tagged_error : std::runtime_error {
  explicit tagged_error(std::string t) : std::runtime_error(t), tag(std::move(t)) {}
  std::string tag;
};

// The scenarios run in a death-test child, whose gtest output is not shown:
// they report problems on stderr (shown by EXPECT_EXIT as "Actual msg").
std::atomic<int> failures{0};

void fail(const std::string& msg) {
  std::fprintf(stderr, "scenario failure: %s\n", msg.c_str());
  failures.fetch_add(1);
}

#define SCENARIO_CHECK(cond, msg)                                              \
  do {                                                                         \
    if (!(cond)) fail(std::string(#cond " is false: ") + (msg));               \
  } while (0)

// Runs scenario(opts) and exits the (death-test child) process with 0 iff
// no check failed.
[[noreturn]] void run_and_exit(void (*scenario)(const weft::options&), const weft::options& opts) {
  scenario(opts);
  std::fflush(nullptr);
  std::_Exit(failures.load() == 0 ? 0 : 1);
}

class ExceptionsAcrossSuspension : public Workers {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};
WEFT_INSTANTIATE_WORKERS(ExceptionsAcrossSuspension);

// The parent throws while a task_group has children that suspend; the
// group's destructor joins them during unwinding (the parent's fiber suspends
// while an exception is in flight) and must keep the parent's exception,
// discarding the child's.
void destructor_joins_during_unwinding(const weft::options& opts) {
  weft::runtime rt(opts);
  std::atomic<int> finished{0};
  for (int round = 0; round < 20; ++round) {
    rt.run([&] {
      try {
        weft::task_group g;
        for (int i = 0; i < 20; ++i) {
          g.spawn([&finished, i] {
            weft::this_task::yield();
            finished.fetch_add(1);
            if (i == 3) throw tagged_error("child");
          });
        }
        throw tagged_error("parent");
      } catch (const tagged_error& e) {
        SCENARIO_CHECK(e.tag == "parent", "caught " + e.tag);
      }
    });
  }
  SCENARIO_CHECK(finished.load() == 400, std::to_string(finished.load()) + " children finished");
}

TEST_P(ExceptionsAcrossSuspension, TaskGroupDestructorJoinsDuringUnwinding) {
  EXPECT_EXIT(run_and_exit(destructor_joins_during_unwinding, options()),
              ::testing::ExitedWithCode(0), "");
}

// Suspending inside a catch block, then inspecting / rethrowing the exception
// being handled. Several tasks do it at once so that they interleave on the
// same worker(s).
void rethrow_after_suspension_in_handler(const weft::options& opts) {
  weft::runtime rt(opts);
  std::atomic<int> ok{0};
  constexpr int kTasks = 16;
  rt.run([&] {
    weft::task_group g;
    for (int i = 0; i < kTasks; ++i) {
      g.spawn([&ok, i] {
        const std::string tag = "t" + std::to_string(i);
        try {
          throw tagged_error(tag);
        } catch (const tagged_error&) {
          for (int k = 0; k < 5; ++k) weft::this_task::yield();
          weft::this_task::sleep_for(1ms);
          std::exception_ptr cur = std::current_exception();
          if (!cur) {
            fail(tag + ": std::current_exception() is null after a suspension");
            return;
          }
          try {
            throw;  // rethrows the exception being handled
          } catch (const tagged_error& e) {
            if (e.tag == tag) {
              ok.fetch_add(1);
            } else {
              fail(tag + ": `throw;` rethrew another task's exception " + e.tag);
            }
          }
        }
      });
    }
    g.sync();
  });
  SCENARIO_CHECK(ok.load() == kTasks, std::to_string(ok.load()) + " of 16 tasks rethrew their own exception");
}

TEST_P(ExceptionsAcrossSuspension, RethrowAfterSuspensionInCatchHandler) {
  EXPECT_EXIT(run_and_exit(rethrow_after_suspension_in_handler, options()),
              ::testing::ExitedWithCode(0), "");
}

// Task A suspends during unwinding (a destructor waits on an ivar). While it
// is suspended, task B runs a task_group whose child throws and which B does
// not sync explicitly: B's task_group destructor must rethrow the child's
// exception, since B itself is not unwinding. If the uncaught-exception count
// of A leaks to B's thread, B's exception is silently lost.
struct waits_in_destructor {
  weft::ivar<int>* iv;
  ~waits_in_destructor() { (void)iv->get(); }
};

void uncaught_count_does_not_leak(const weft::options& opts) {
  weft::runtime rt(opts);
  for (int round = 0; round < 20; ++round) {
    rt.run([&] {
      weft::ivar<int> release;
      std::atomic<bool> a_unwinding{false};
      bool b_caught = false, a_caught = false;
      weft::fork_join(
          [&] {
            try {
              waits_in_destructor w{&release};
              a_unwinding = true;
              throw tagged_error("A");
            } catch (const tagged_error& e) {
              a_caught = e.tag == "A";
            }
          },
          [&] {
            // With one worker, B only runs once A is suspended mid-unwinding.
            if (!yield_until([&] { return a_unwinding.load(); }, 20s)) fail("A never ran");
            try {
              weft::task_group g;
              g.spawn([] { throw tagged_error("B-child"); });
            } catch (const tagged_error& e) {
              b_caught = e.tag == "B-child";
            }
            release.put(1);
          });
      SCENARIO_CHECK(a_caught, "round " + std::to_string(round));
      SCENARIO_CHECK(b_caught, "round " + std::to_string(round) +
                                   ": task_group destructor swallowed its child's exception");
    });
  }
}

TEST_P(ExceptionsAcrossSuspension, UncaughtCountDoesNotLeakToOtherTasks) {
  EXPECT_EXIT(run_and_exit(uncaught_count_does_not_leak, options()), ::testing::ExitedWithCode(0),
              "");
}

}  // namespace
