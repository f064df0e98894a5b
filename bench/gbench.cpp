// weft-gbench — a few weft micro-benchmarks under Google Benchmark, for
// --benchmark_filter, --benchmark_repetitions and its JSON/CSV reporters.
// The side-by-side comparison with oneTBB, OpenMP and threads is weft-bench.
//
// Counters: per_task = wall x workers / fib calls (as in weft-bench);
// per_async and per_round_trip = wall / count. Google Benchmark warns that
// the Debian libbenchmark was "built as DEBUG"; that concerns only its own
// harness, not the timed code.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <weft/weft.hpp>

namespace {

// One runtime per worker count, created on first use and kept until exit.
weft::runtime& runtime_for(unsigned workers) {
  static std::mutex m;
  static std::map<unsigned, std::unique_ptr<weft::runtime>> runtimes;
  std::lock_guard lk(m);
  auto& rt = runtimes[workers];
  if (!rt) rt = std::make_unique<weft::runtime>(weft::options{.workers = workers});
  return *rt;
}

long fib_calls(int n) {
  long a = 0, b = 1;
  for (int i = 0; i <= n; ++i) {
    long t = a + b;
    a = b;
    b = t;
  }
  return 2 * a - 1;  // a = fib(n + 1)
}

long fib_fork_join(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::fork_join([&] { return fib_fork_join(n - 1); },
                                [&] { return fib_fork_join(n - 2); });
  return a + b;
}

long fib_futures(int n) {
  if (n < 2) return n;
  auto f = weft::async(fib_futures, n - 1);
  long b = fib_futures(n - 2);
  return f.get() + b;
}

template <long (*Fib)(int)>
void BM_fib(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const auto workers = static_cast<unsigned>(state.range(1));
  weft::runtime& rt = runtime_for(workers);
  for (auto _ : state) {
    long r = rt.run([n] { return Fib(n); });
    benchmark::DoNotOptimize(r);
  }
  state.counters["per_task"] = benchmark::Counter(
      static_cast<double>(fib_calls(n)) / workers,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK_TEMPLATE(BM_fib, fib_fork_join)
    ->ArgsProduct({{25, 30}, {1, 2}})
    ->ArgNames({"n", "workers"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_fib, fib_futures)
    ->ArgsProduct({{25, 30}, {1, 2}})
    ->ArgNames({"n", "workers"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_async(benchmark::State& state) {
  const long batch = state.range(0);
  const auto workers = static_cast<unsigned>(state.range(1));
  weft::runtime& rt = runtime_for(workers);
  std::vector<weft::future<int>> fs;
  fs.reserve(static_cast<std::size_t>(batch));
  for (auto _ : state) {
    long sum = rt.run([&] {
      fs.clear();
      for (long i = 0; i < batch; ++i) fs.push_back(weft::async([] { return 1; }));
      long s = 0;
      for (long i = batch - 1; i >= 0; --i) s += fs[static_cast<std::size_t>(i)].get();
      return s;
    });
    if (sum != batch) state.SkipWithError("wrong sum");
  }
  state.counters["per_async"] = benchmark::Counter(
      static_cast<double>(batch),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_async)
    ->ArgsProduct({{1000, 100000}, {1, 2}})
    ->ArgNames({"M", "workers"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_pingpong(benchmark::State& state) {
  const long rounds = state.range(0);
  const auto workers = static_cast<unsigned>(state.range(1));
  weft::runtime& rt = runtime_for(workers);
  for (auto _ : state) {
    state.PauseTiming();
    auto ping = std::make_unique<weft::ivar<long>[]>(static_cast<std::size_t>(rounds));
    auto pong = std::make_unique<weft::ivar<long>[]>(static_cast<std::size_t>(rounds));
    state.ResumeTiming();
    rt.run([&] {
      weft::fork_join(
          [&] {
            for (long i = 0; i < rounds; ++i) {
              ping[i].put(i);
              benchmark::DoNotOptimize(pong[i].get());
            }
          },
          [&] {
            for (long i = 0; i < rounds; ++i) pong[i].put(ping[i].get() + 1);
          });
    });
  }
  state.counters["per_round_trip"] = benchmark::Counter(
      static_cast<double>(rounds),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_pingpong)
    ->ArgsProduct({{10000}, {1, 2}})
    ->ArgNames({"rounds", "workers"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
