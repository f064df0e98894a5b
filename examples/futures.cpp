// futures — weft::async / future::get inside tasks, a promise fulfilled by a
// plain std::thread, runtime::async from main(), and exceptions through futures.
#include <weft/weft.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("  %-58s %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) ++failures;
}

}  // namespace

int main() {
  weft::runtime rt;
  std::printf("futures (%u worker(s))\n", rt.worker_count());

  // 1. Child tasks with weft::async; get() waits without blocking the worker.
  long sum = rt.run([] {
    std::vector<weft::future<long>> parts;
    for (long i = 0; i < 100; ++i) parts.push_back(weft::async([i] { return i * i; }));
    long s = 0;
    for (auto& f : parts) s += f.get();
    return s;
  });
  check(sum == 328350, "sum of 100 async squares = 328350");

  // 2. A promise set by an ordinary thread: the waiting task is suspended (its
  //    worker keeps running other tasks) until the thread sets the value.
  weft::promise<std::string> p;
  weft::future<std::string> from_thread = p.get_future();
  std::thread producer([&p] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p.set_value("set by a std::thread");
  });
  std::string got = rt.run([&from_thread] { return from_thread.get(); });
  producer.join();
  check(got == "set by a std::thread", "task waits on a promise set by a std::thread");

  // 3. runtime::async from outside the runtime; get() blocks this thread.
  weft::future<int> outside = rt.async([](int a, int b) { return a + b; }, 40, 2);
  check(outside.get() == 42, "runtime::async from main(), get() on main");

  // 4. Exceptions travel through futures like std::future.
  bool caught = rt.run([] {
    weft::future<int> bad = weft::async([]() -> int { throw std::runtime_error("boom"); });
    try {
      bad.get();
    } catch (const std::runtime_error& e) {
      return std::string(e.what()) == "boom";
    }
    return false;
  });
  check(caught, "exception from a child rethrown by get()");

  // 5. shared_future: many tasks wait on one result.
  weft::promise<int> gate;
  weft::shared_future<int> shared = gate.get_future().share();
  weft::future<int> waiters = rt.async([shared] {
    std::vector<weft::future<int>> fs;
    for (int i = 0; i < 8; ++i) fs.push_back(weft::async([shared] { return shared.get(); }));
    int s = 0;
    for (auto& f : fs) s += f.get();
    return s;
  });
  gate.set_value(5);
  check(waiters.get() == 40, "8 tasks waiting on one shared_future");

  // 6. A promise destroyed unsatisfied breaks its future.
  weft::future<int> orphan;
  { weft::promise<int> dropped; orphan = dropped.get_future(); }
  bool broken = false;
  try {
    orphan.get();
  } catch (const std::future_error& e) {
    broken = e.code() == std::future_errc::broken_promise;
  }
  check(broken, "dropped promise -> future_error(broken_promise)");

  std::printf("futures: %s\n", failures ? "FAILED" : "all ok");
  return failures ? 1 : 0;
}
