// parallel_sum — parallel_for to fill a vector, parallel_reduce to sum it.
//
//   parallel_sum [n]    (default 10,000,000)
#include <weft/weft.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <vector>

int main(int argc, char** argv) {
  long long n = argc > 1 ? std::atoll(argv[1]) : 10'000'000;
  if (n < 0) {
    std::fprintf(stderr, "usage: parallel_sum [n >= 0]\n");
    return 2;
  }
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  weft::runtime rt;

  std::int64_t sum = rt.run([&] {
    weft::parallel_for(std::int64_t{0}, std::int64_t{n}, [&](std::int64_t i) { v[i] = i; });
    return weft::parallel_reduce(
        std::int64_t{0}, std::int64_t{n}, std::int64_t{0},
        [&](std::int64_t i) { return v[i]; },  // map
        std::plus<>{});                         // combine (associative)
  });

  std::int64_t serial = std::accumulate(v.begin(), v.end(), std::int64_t{0});
  std::int64_t closed_form = n * (n - 1) / 2;
  std::printf("parallel_sum: sum of 0..%lld = %lld (serial %lld, closed form %lld; %u worker(s))\n",
              n - 1, static_cast<long long>(sum), static_cast<long long>(serial),
              static_cast<long long>(closed_form), rt.worker_count());
  return (sum == serial && sum == closed_form) ? 0 : 1;
}
