// The default runtime at exit (ctest default_runtime_exit): main returns, or
// a task calls std::exit, while tasks of the default runtime are still
// running or blocked for ever. The process must end promptly with main's
// status, neither hanging on the blocked task nor crashing in static
// destruction (the runtime is deliberately never destroyed:
// src/default_runtime.cpp).
//
//   exit_with_tasks return   main returns 0 with a blocked and a busy task
//   exit_with_tasks exit     a task calls std::exit(0) while main waits
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <weft/weft.hpp>

namespace {

// Statics destroyed at exit while the tasks still exist: a string the busy
// task reads is not touched by it (it only spins on an atomic).
std::string banner = "exit_with_tasks";
weft::promise<int>* never_set = new weft::promise<int>();  // leaked: its waiter waits for ever
std::atomic<bool> spin{true};

}  // namespace

int main(int argc, char** argv) {
  const bool via_exit = argc > 1 && std::strcmp(argv[1], "exit") == 0;
  auto blocked = weft::async([] { return never_set->get_future().get(); });
  auto busy = weft::async([] {
    while (spin.load(std::memory_order_relaxed)) weft::this_task::yield();
  });
  auto started = weft::async([] { return 1; });
  if (started.get() != 1) return 1;
  if (via_exit) {
    auto exiter = weft::async([] {
      std::printf("%s: exit from a task\n", banner.c_str());
      std::fflush(stdout);
      std::exit(0);
    });
    exiter.wait();  // never returns: the task ends the process
    return 1;
  }
  std::printf("%s: returning from main\n", banner.c_str());
  return 0;  // blocked and busy are abandoned, like detached threads
}
