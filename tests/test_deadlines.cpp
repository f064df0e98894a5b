// Deadlines given as durations or time points of any clock and
// representation, "forever" (max()) and "long ago" (min()) included: every
// conversion to weft's steady_clock deadlines saturates (weft/detail/deadline.hpp).
// Before, now() + seconds::max() overflowed (UBSan reports it; the ASan build
// of this binary aborts on it) and "forever" expired at once.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "test_util.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;
using namespace std::chrono;
using weft::detail::deadline_after;
using weft::detail::to_steady_deadline;

constexpr steady_clock::time_point forever = steady_clock::time_point::max();
constexpr steady_clock::time_point long_ago = steady_clock::time_point::min();

// A clock of our own, with an odd period and epoch.
struct odd_clock {
  using rep = std::int32_t;
  using period = std::ratio<3, 7>;
  using duration = std::chrono::duration<rep, period>;
  using time_point = std::chrono::time_point<odd_clock>;
  [[maybe_unused]] static constexpr bool is_steady = false;  // a Clock's member; unused here
  static time_point now() noexcept {
    return time_point(duration_cast<duration>(steady_clock::now().time_since_epoch() % hours(24)));
  }
};

TEST(DeadlineConversion, DurationsSaturate) {
  EXPECT_EQ(deadline_after(seconds::max()), forever);
  EXPECT_EQ(deadline_after(milliseconds::max()), forever);
  EXPECT_EQ(deadline_after(nanoseconds::max()), forever);
  EXPECT_EQ(deadline_after(hours::max()), forever);
  EXPECT_EQ(deadline_after(duration<double>::max()), forever);
  EXPECT_EQ(deadline_after(duration<double>(1e300)), forever);
  EXPECT_EQ(deadline_after(duration<unsigned long long, std::milli>::max()), forever);
  // A narrow representation's max() is just a far deadline (127 days).
  EXPECT_GT(deadline_after(duration<std::int8_t, std::ratio<86400>>::max()),
            steady_clock::now() + hours(24) * 126);
  EXPECT_EQ(deadline_after(seconds::min()), long_ago);
  EXPECT_EQ(deadline_after(hours::min()), long_ago);
  EXPECT_EQ(deadline_after(-duration<double>::max()), long_ago);
  // Ordinary values are exact.
  const auto before = steady_clock::now();
  const auto d = deadline_after(250ms);
  const auto after = steady_clock::now();
  EXPECT_GE(d, before + 250ms);
  EXPECT_LE(d, after + 250ms);
  EXPECT_LE(deadline_after(-5s), steady_clock::now() - 5s + 1ms);
}

TEST(DeadlineConversion, TimePointsOfAnyClockSaturate) {
  EXPECT_EQ(to_steady_deadline(steady_clock::time_point::max()), forever);
  EXPECT_EQ(to_steady_deadline(steady_clock::time_point::min()), long_ago);
  EXPECT_EQ(to_steady_deadline(system_clock::time_point::max()), forever);
  EXPECT_EQ(to_steady_deadline(system_clock::time_point::min()), long_ago);
  EXPECT_EQ(to_steady_deadline(high_resolution_clock::time_point::max()), forever);
  EXPECT_EQ(to_steady_deadline(time_point<steady_clock, seconds>::max()), forever);
  EXPECT_EQ(to_steady_deadline(time_point<system_clock, hours>::max()), forever);
  EXPECT_EQ(to_steady_deadline(time_point<system_clock, hours>::min()), long_ago);
  EXPECT_EQ(to_steady_deadline(odd_clock::time_point::max()), forever);
  EXPECT_EQ(to_steady_deadline(odd_clock::time_point::min()), long_ago);
  // A time point in an hour, on the system clock, is about an hour away.
  const auto d = to_steady_deadline(system_clock::now() + 1h);
  EXPECT_GT(d, steady_clock::now() + 59min);
  EXPECT_LT(d, steady_clock::now() + 61min);
}

class Deadlines : public Workers {};
WEFT_INSTANTIATE_WORKERS(Deadlines);

// A promise set ~30 ms after the wait starts, by another task.
template <class Wait>
std::future_status wait_on_late_promise(Wait&& wait) {
  weft::promise<int> p;
  auto f = p.get_future();
  auto setter = weft::async([&] {
    weft::this_task::sleep_for(30ms);
    p.set_value(1);
  });
  auto status = wait(f);
  setter.get();
  return status;
}

TEST_P(Deadlines, ForeverTimedWaitsWaitForTheValue) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [&] {
    EXPECT_EQ(wait_on_late_promise([](auto& f) { return f.wait_for(seconds::max()); }),
              std::future_status::ready);
    EXPECT_EQ(wait_on_late_promise([](auto& f) { return f.wait_for(hours::max()); }),
              std::future_status::ready);
    EXPECT_EQ(wait_on_late_promise([](auto& f) { return f.wait_for(duration<double>::max()); }),
              std::future_status::ready);
    EXPECT_EQ(wait_on_late_promise([](auto& f) { return f.wait_until(system_clock::time_point::max()); }),
              std::future_status::ready);
    EXPECT_EQ(wait_on_late_promise([](auto& f) { return f.wait_until(steady_clock::time_point::max()); }),
              std::future_status::ready);
    EXPECT_EQ(wait_on_late_promise([](auto& f) { return f.wait_until(odd_clock::time_point::max()); }),
              std::future_status::ready);
    EXPECT_EQ(wait_on_late_promise([](auto& f) {
                weft::shared_future<int> s = f.share();
                return s.wait_for(seconds::max());
              }),
              std::future_status::ready);
  });
}

TEST_P(Deadlines, PastTimedWaitsTimeOutAtOnce) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [&] {
    weft::promise<int> p;
    auto f = p.get_future();
    const auto t0 = steady_clock::now();
    EXPECT_EQ(f.wait_for(seconds::min()), std::future_status::timeout);
    EXPECT_EQ(f.wait_for(-1h), std::future_status::timeout);
    EXPECT_EQ(f.wait_until(system_clock::time_point::min()), std::future_status::timeout);
    EXPECT_EQ(f.wait_until(steady_clock::time_point::min()), std::future_status::timeout);
    EXPECT_EQ(f.wait_until(odd_clock::time_point::min()), std::future_status::timeout);
    weft::shared_future<int> s = f.share();
    EXPECT_EQ(s.wait_for(hours::min()), std::future_status::timeout);
    EXPECT_LT(steady_clock::now() - t0, 5s);
    p.set_value(2);
    EXPECT_EQ(s.wait_for(seconds::min()), std::future_status::ready);
  });
}

TEST_P(Deadlines, ForeverSleepSleepsUntilShutdownEndsIt) {
  weft::options o = options();
  o.shutdown_grace = 0ms;  // the destructor ends every sleep at once
  auto rt = std::make_unique<weft::runtime>(o);
  std::atomic<int> woke{0};
  std::atomic<int> started{0};
  (void)rt->async([&] {
    ++started;
    weft::this_task::sleep_for(seconds::max());
    ++woke;
  });
  (void)rt->async([&] {
    ++started;
    weft::this_task::sleep_until(system_clock::time_point::max());
    ++woke;
  });
  ASSERT_TRUE(spin_until([&] { return started.load() == 2; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(woke.load(), 0) << "a sleep of seconds::max() returned at once";
  const auto t0 = steady_clock::now();
  rt.reset();
  EXPECT_EQ(woke.load(), 2);
  EXPECT_LT(steady_clock::now() - t0, 10s);
}

TEST_P(Deadlines, PastSleepsReturnAtOnce) {
  auto rt = std::make_unique<weft::runtime>(options());
  run_bounded(rt, [&] {
    const auto t0 = steady_clock::now();
    weft::this_task::sleep_for(seconds::min());
    weft::this_task::sleep_for(-1h);
    weft::this_task::sleep_for(duration<double>(-1e300));
    weft::this_task::sleep_until(system_clock::time_point::min());
    weft::this_task::sleep_until(odd_clock::time_point::min());
    EXPECT_LT(steady_clock::now() - t0, 5s);
    // And an ordinary one, on another clock, lasts its time.
    const auto t1 = steady_clock::now();
    weft::this_task::sleep_until(system_clock::now() + 20ms);
    EXPECT_GE(steady_clock::now() - t1, 15ms);
  });
}

// The same from a plain thread (condition-variable waits).
TEST(DeadlinesOutside, PlainThreadForeverWait) {
  weft::runtime rt(make_options(2));
  weft::promise<int> p;
  auto f = p.get_future();
  std::thread setter([&] {
    std::this_thread::sleep_for(30ms);
    p.set_value(4);
  });
  EXPECT_EQ(f.wait_for(seconds::max()), std::future_status::ready);
  EXPECT_EQ(f.wait_until(system_clock::time_point::max()), std::future_status::ready);
  EXPECT_EQ(f.get(), 4);
  setter.join();
  weft::promise<int> q;
  auto g = q.get_future();
  EXPECT_EQ(g.wait_for(seconds::min()), std::future_status::timeout);
  EXPECT_EQ(g.wait_until(system_clock::time_point::min()), std::future_status::timeout);
  q.set_value(0);
}

}  // namespace
