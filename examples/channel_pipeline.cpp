// channel_pipeline — stages joined by channels (Go's pipeline pattern).
//
//   generate ──numbers(16)──▶ 4 × square ──squares(rendezvous)──▶ sum
//
// Each stage is a task. A full or empty channel pauses the task that waits on
// it (its worker runs other stages meanwhile), so the pipeline runs in
// bounded memory at any worker count, even on one worker. A stage signals
// "no more" by closing its output channel; the next stage's range-for ends
// when the channel is closed and drained. Several squarers share one input
// (fan-out) and one output (fan-in): the last one to finish closes it.
#include <weft/weft.hpp>

#include <atomic>
#include <cstdio>

int main() {
  constexpr long n = 100'000;
  constexpr int squarers = 4;
  weft::runtime rt;

  long total = rt.run([&] {
    weft::channel<long> numbers(16);  // buffered: the generator runs ahead by 16
    weft::channel<long> squares;      // rendezvous: each send meets a receive
    std::atomic<int> running{squarers};
    weft::task_group g;
    g.spawn([&] {  // stage 1
      for (long i = 1; i <= n; ++i) numbers.send(i);
      numbers.close();
    });
    for (int s = 0; s < squarers; ++s)  // stage 2, fanned out
      g.spawn([&] {
        for (long v : numbers) squares.send(v * v % 1'000'003);
        // acq_rel: the last squarer to finish closes the fan-in channel.
        if (running.fetch_sub(1, std::memory_order_acq_rel) == 1) squares.close();
      });
    long sum = 0;  // stage 3, here in the root task
    for (long v : squares) sum += v;
    g.sync();
    return sum;
  });

  long expected = 0;
  for (long i = 1; i <= n; ++i) expected += i * i % 1'000'003;

  // Misuse is reported, never lost: a send on a closed channel throws and
  // leaves the value with the caller.
  weft::channel<long> closed(1);
  closed.close();
  bool send_rejected = false;
  try {
    closed.send(1);
  } catch (const weft::channel_closed&) {
    send_rejected = true;
  }

  std::printf("channel pipeline: %ld numbers through 3 stages (%d squarers) on %u worker(s): "
              "sum = %ld (expected %ld), %zu task suspensions, send on closed channel rejected: %s\n",
              n, squarers, rt.worker_count(), total, expected, rt.stats().fibers_suspended,
              send_rejected ? "yes" : "no");
  return total == expected && send_rejected ? 0 : 1;
}
