// A program written against <future> only, run twice by ctest
// (tests/migrate/CMakeLists.txt): as it is, and after scripts/weft-migrate;
// both runs must print the same lines. It exercises what a migrated program
// leans on: async with every launch policy, deferred evaluation, promise and
// future from another thread, shared_future read by many tasks,
// packaged_task, exceptions through get(), future_status and the
// future_error codes.
#include <chrono>
#include <cstdio>
#include <future>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;

long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

// Parallel sum with recursive asyncs (default policy).
long psum(const std::vector<int>& v, std::size_t lo, std::size_t hi) {
  if (hi - lo < 1000) return std::accumulate(v.begin() + lo, v.begin() + hi, 0L);
  const std::size_t mid = lo + (hi - lo) / 2;
  std::future<long> left = std::async(psum, std::cref(v), lo, mid);
  const long right = psum(v, mid, hi);
  return left.get() + right;
}

const char* status_name(std::future_status s) {
  switch (s) {
    case std::future_status::ready: return "ready";
    case std::future_status::timeout: return "timeout";
    case std::future_status::deferred: return "deferred";
  }
  return "?";
}

template <class F>
void expect_code(const char* what, F&& f) {
  try {
    f();
    std::printf("%s: no error\n", what);
  } catch (const std::future_error& e) {
    std::printf("%s: future_error %s\n", what,
                e.code() == std::future_errc::broken_promise              ? "broken_promise"
                : e.code() == std::future_errc::future_already_retrieved  ? "future_already_retrieved"
                : e.code() == std::future_errc::promise_already_satisfied ? "promise_already_satisfied"
                : e.code() == std::future_errc::no_state                  ? "no_state"
                                                                          : "other");
  }
}

}  // namespace

int main() {
  // async, each policy.
  std::future<long> a = std::async(std::launch::async, fib, 20);
  std::future<long> b = std::async(fib, 21);
  int deferred_runs = 0;
  std::future<int> d = std::async(std::launch::deferred, [&deferred_runs] { return ++deferred_runs * 7; });
  std::printf("deferred before get: runs=%d status=%s\n", deferred_runs, status_name(d.wait_for(1ms)));
  const long fa = a.get(), fb = b.get();
  std::printf("fib: %ld %ld\n", fa, fb);
  const int dv = d.get();
  std::printf("deferred get: %d runs=%d\n", dv, deferred_runs);
  std::printf("valid after get: %d\n", static_cast<int>(d.valid()));

  // Recursive asyncs.
  std::vector<int> v(100000);
  std::iota(v.begin(), v.end(), 1);
  std::printf("psum: %ld\n", psum(v, 0, v.size()));

  // promise / future across a thread.
  std::promise<std::string> p;
  std::future<std::string> pf = p.get_future();
  std::thread producer([&p] { p.set_value("from a thread"); });
  std::printf("promise: %s\n", pf.get().c_str());
  producer.join();

  // shared_future read by many asyncs.
  std::promise<int> gate;
  std::shared_future<int> shared = gate.get_future().share();
  std::vector<std::future<int>> readers;
  for (int i = 0; i < 8; ++i)
    readers.push_back(std::async(std::launch::async, [shared, i] { return shared.get() + i; }));
  std::printf("shared before set: %s\n", status_name(shared.wait_for(0s)));
  gate.set_value(100);
  int total = 0;
  for (auto& r : readers) total += r.get();
  std::printf("shared total: %d\n", total);

  // packaged_task, on a thread and through async.
  std::packaged_task<int(int, int)> task([](int x, int y) { return x * y; });
  std::future<int> tf = task.get_future();
  std::thread worker(std::move(task), 6, 7);
  std::printf("packaged_task: %d\n", tf.get());
  worker.join();
  std::packaged_task<std::string()> t2([] { return std::string("via async"); });
  std::future<std::string> t2f = t2.get_future();
  std::future<void> runner = std::async(std::launch::async, std::move(t2));
  runner.get();
  std::printf("packaged_task: %s\n", t2f.get().c_str());

  // Exceptions travel through get().
  std::future<int> bad = std::async(std::launch::async, []() -> int { throw std::runtime_error("boom"); });
  try {
    (void)bad.get();
  } catch (const std::runtime_error& e) {
    std::printf("exception: %s\n", e.what());
  }

  // future_error codes.
  expect_code("broken promise", [] {
    std::future<int> f;
    { std::promise<int> q; f = q.get_future(); }
    (void)f.get();
  });
  expect_code("retrieved twice", [] {
    std::promise<int> q;
    std::future<int> f = q.get_future();
    (void)q.get_future();
  });
  expect_code("set twice", [] {
    std::promise<int> q;
    q.set_value(1);
    q.set_value(2);
  });
  expect_code("task invoked twice", [] {
    std::packaged_task<void()> t([] {});
    t();
    t();
  });
  expect_code("no state", [] {
    std::packaged_task<void()> t;
    t();
  });
  std::printf("done\n");
  return 0;
}
