// fib — recursive fork-join: the classic Cilk benchmark on weft::fork_join.
//
//   fib [n]    (default 35)
#include <weft/weft.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

long fib(int n) {
  if (n < 20) return fib_serial(n);  // below the cutoff a task costs more than it saves
  // Both branches may run in parallel: the second one is offered to thieves
  // while this task runs the first.
  auto [a, b] = weft::fork_join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return a + b;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 35;
  if (n < 0 || n > 60) {
    std::fprintf(stderr, "usage: fib [n], 0 <= n <= 60\n");
    return 2;
  }

  weft::runtime rt;
  auto t0 = std::chrono::steady_clock::now();
  long parallel = rt.run([n] { return fib(n); });
  double tp = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  long serial = fib_serial(n);
  double ts = seconds_since(t0);

  std::printf("fib(%d) = %ld  (weft on %u worker(s): %.3f s; serial: %.3f s)\n", n, parallel,
              rt.worker_count(), tp, ts);
  if (parallel != serial) {
    std::fprintf(stderr, "fib: wrong result, expected %ld\n", serial);
    return 1;
  }
  return 0;
}
