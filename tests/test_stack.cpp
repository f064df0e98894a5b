// Fiber stacks: deep recursion that blocks at the bottom, and stack overflow
// detection (guard page + a clear fatal message). The death tests also run
// under ASan and TSan: weft's overflow handler reports the guard-page hit
// there too (checked with the CI's ASAN_OPTIONS / TSAN_OPTIONS).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <iostream>
#include <memory>
#include <vector>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;

constexpr int kDepth = 10000;

struct deep_probe {
  const weft::ivar<long>* iv;
  std::atomic<bool>* at_bottom;
  std::uintptr_t bottom_sp = 0;
};

// Not a tail call and not foldable into a loop: the empty asm after the call
// makes the frame live across it.
[[gnu::noinline]] long deep(int n, deep_probe& p) {
  if (n == 0) {
    char marker;
    p.bottom_sp = reinterpret_cast<std::uintptr_t>(&marker);
    p.at_bottom->store(true);
    return p.iv->get();  // blocks: suspends the task with 10,000 frames live
  }
  long r = deep(n - 1, p);
  asm volatile("" : "+r"(r) : : "memory");
  return r + 1;
}

class DeepRecursion : public Workers {};
WEFT_INSTANTIATE_WORKERS(DeepRecursion);

// 10,000 frames with the default stack size, blocked at the bottom on an ivar
// that another task fills; the value comes back through every frame. fork_join
// starts the recursion first on the calling worker, so with one worker it is
// certainly suspended before the writer runs.
TEST_P(DeepRecursion, BlocksAtTheBottomOfTenThousandFrames) {
  auto rt = std::make_unique<weft::runtime>(options());  // default stack size
  long got = 0;
  std::uintptr_t top_sp = 0, bottom_sp = 0;
  run_bounded(rt, [&] {
    weft::ivar<long> iv;
    std::atomic<bool> at_bottom{false};
    deep_probe probe{&iv, &at_bottom};
    auto [r, unused] = weft::fork_join(
        [&] {
          char marker;
          top_sp = reinterpret_cast<std::uintptr_t>(&marker);
          return deep(kDepth, probe);
        },
        [&] {
          iv.put(1000000);
          return 0;
        });
    (void)unused;
    got = r;
    bottom_sp = probe.bottom_sp;
  });
  EXPECT_EQ(got, 1000000 + kDepth);
  ASSERT_NE(bottom_sp, 0u);
  ASSERT_GT(top_sp, bottom_sp) << "stacks grow down on x86-64";
  // Proves the frames were really there (not turned into a loop).
  EXPECT_GE((top_sp - bottom_sp) / kDepth, 16u);
  std::cout << "[ info     ] " << kDepth << " frames used " << (top_sp - bottom_sp) << " bytes of a "
            << rt->stack_size() << "-byte stack" << std::endl;
}

// The same, with the deep task started by async and the value put by the root
// after the recursion reached the bottom; several deep tasks at once.
TEST_P(DeepRecursion, SeveralDeepTasksBlockedAtOnce) {
  auto rt = std::make_unique<weft::runtime>(options());
  constexpr int kTasks = 8;
  long total = 0;
  run_bounded(rt, [&] {
    weft::ivar<long> iv;
    std::atomic<bool> at_bottom[kTasks] = {};
    deep_probe probes[kTasks];
    std::vector<weft::future<long>> fs;
    for (int i = 0; i < kTasks; ++i) {
      probes[i].iv = &iv;
      probes[i].at_bottom = &at_bottom[i];
      fs.push_back(weft::async([&probes, i] { return deep(kDepth, probes[i]); }));
    }
    ASSERT_TRUE(yield_until([&] {
      for (auto& b : at_bottom)
        if (!b.load()) return false;
      return true;
    })) << "not all deep tasks reached the bottom";
    iv.put(5);
    for (auto& f : fs) total += f.get();
  });
  EXPECT_EQ(total, kTasks * (5L + kDepth));
}

// ------------------------------------------------------------ overflow

volatile int never = -1;

[[gnu::noinline]] int recurse_forever(int n) {
  volatile char pad[256];
  pad[0] = static_cast<char>(n);
  if (n == never) return 0;
  int r = recurse_forever(n + 1);
  return r + pad[0];
}

TEST(StackOverflowDeathTest, InfiniteRecursionInRootTask) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        weft::runtime rt(make_options(2));
        rt.run([] { return recurse_forever(0); });
      },
      "[Ss]tack overflow");
}

// Overflow in a task that has been suspended and resumed once (so it runs on a
// promoted fiber, possibly on another worker), and in a nested async child.
TEST(StackOverflowDeathTest, InfiniteRecursionAfterSuspension) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        weft::runtime rt(make_options(1));
        rt.run([] {
          weft::ivar<int> iv;
          auto [a, b] = weft::fork_join([&] { return iv.get(); }, [&] { iv.put(1); return 0; });
          return a + b + recurse_forever(0);
        });
      },
      "[Ss]tack overflow");
}

TEST(StackOverflowDeathTest, InfiniteRecursionInAsyncChild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        weft::runtime rt(make_options(2));
        rt.run([] {
          auto f = weft::async([] { return recurse_forever(0); });
          weft::this_task::yield();
          return f.get();
        });
      },
      "[Ss]tack overflow");
}

// A small custom stack overflows sooner, and is reported the same way.
TEST(StackOverflowDeathTest, SmallCustomStack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        weft::runtime rt(make_options(1, 64 * 1024));
        rt.run([] { return recurse_forever(0); });
      },
      "[Ss]tack overflow");
}

// A frame larger than the 64 KiB guard region: without a probe of every
// page, its first write lands below the guard, in the neighbouring fiber's
// stack (silent corruption) or in unmapped memory (a bare SIGSEGV). weft::weft
// exports -fstack-clash-protection, so the frame's pages are touched in order
// from the top and the first touch below the stack hits the guard.
[[gnu::noinline]] int huge_frame(int seed) {
  volatile char big[512 * 1024];
  big[0] = static_cast<char>(seed);  // the lowest address, 512 KiB down
  big[sizeof big - 1] = 1;
  return big[0] + big[sizeof big - 1];
}

// The same with a run-time size (alloca), which the probes cover too.
[[gnu::noinline]] int huge_alloca(std::size_t n) {
  auto* p = static_cast<volatile char*>(__builtin_alloca(n));
  p[0] = 1;
  p[n - 1] = 2;
  return p[0] + p[n - 1];
}

TEST(StackOverflowDeathTest, FrameLargerThanTheGuardRegion) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        weft::runtime rt(make_options(1, 128 * 1024));
        rt.run([] { return huge_frame(1); });
      },
      "[Ss]tack overflow in a task");
}

TEST(StackOverflowDeathTest, AllocaLargerThanTheGuardRegion) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        weft::runtime rt(make_options(2, 128 * 1024));
        rt.run([] {
          auto f = weft::async([] { return huge_alloca(std::size_t{1} << 20); });
          weft::this_task::yield();
          return f.get();
        });
      },
      "[Ss]tack overflow in a task");
}

// Below the limit, a big frame is fine (the probes cost nothing visible).
TEST(StackFrames, LargeFrameWithinTheStack) {
  weft::runtime rt(make_options(2, 2 * 1024 * 1024));
  EXPECT_EQ(rt.run([] { return huge_frame(3); }), 4);
}

}  // namespace
