// Consumer of an installed weft: uses weft::runtime and weft::fork_join through
// find_package(weft). Exits 0 when the results are right.
#include <weft/weft.hpp>

#include <cstdio>

namespace {

long fib(int n) {
  if (n < 2) return n;
  if (n < 16) return fib(n - 1) + fib(n - 2);  // serial below the cutoff
  auto [a, b] = weft::fork_join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return a + b;
}

}  // namespace

int main() {
  weft::runtime rt;
  long f = rt.run([] { return fib(25); });
  int sum = rt.run([] {
    weft::future<int> x = weft::async([] { return 40; });
    return x.get() + 2;
  });
  std::printf("weft consumer: fib(25) = %ld, async = %d, %u workers\n", f, sum,
              rt.worker_count());
  return (f == 75025 && sum == 42) ? 0 : 1;
}
