// worker_pool — a pool of worker tasks fed through a channel, using select
// with a timeout (Go's `select` with `time.After`).
//
// Each worker waits for the first of: a job, the quit signal (a channel that
// is closed to broadcast "stop": a receive on a closed channel is always
// ready), or a 10 ms timeout, on which it does its idle-time housekeeping.
// The dispatcher sends jobs in bursts with pauses between them, so the
// workers see all three outcomes.
#include <weft/weft.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>

using namespace std::chrono_literals;

long work(long job) {  // stands for real work: a small computation
  long x = job;
  for (int i = 0; i < 1000; ++i) x = (x * 1103515245 + 12345) % 2147483648L;
  return x;
}

int main() {
  constexpr int pool_size = 4, bursts = 4, burst_size = 50;
  weft::runtime rt;
  std::atomic<long> idle_ticks{0};

  auto [received, checksum] = rt.run([&] {
    weft::channel<long> jobs(8);                     // bounded: the dispatcher waits when the pool is busy
    weft::channel<long> results(weft::unbounded);    // workers never wait to report
    weft::channel<int> quit;                         // never sent on: closed to stop everyone
    weft::task_group pool;
    for (int w = 0; w < pool_size; ++w)
      pool.spawn([&] {
        for (;;) {
          std::optional<long> job;
          std::optional<int> stop;
          switch (weft::select_for(10ms, weft::recv_case(jobs, job), weft::recv_case(quit, stop))) {
            case 0:
              if (job) results.send(work(*job));
              break;
            case 1:
              return;  // quit was closed
            case weft::no_case:
              idle_ticks.fetch_add(1, std::memory_order_relaxed);  // housekeeping
              break;
          }
        }
      });
    long next = 0;
    for (int b = 0; b < bursts; ++b) {
      for (int i = 0; i < burst_size; ++i) jobs.send(next++);
      weft::this_task::sleep_for(30ms);  // a lull: the workers time out
    }
    // Wait until every job is done, then stop the pool.
    long count = 0, sum = 0;
    while (count < next) {
      sum += *results.recv();
      ++count;
    }
    quit.close();
    pool.sync();
    return std::pair{count, sum};
  });

  long expected = 0;
  for (long j = 0; j < bursts * burst_size; ++j) expected += work(j);
  std::printf("worker pool: %d workers on %u worker thread(s) ran %ld jobs (checksum %s), "
              "%ld idle timeouts\n",
              pool_size, rt.worker_count(), received, checksum == expected ? "ok" : "WRONG",
              idle_ticks.load());
  return received == bursts * burst_size && checksum == expected ? 0 : 1;
}
