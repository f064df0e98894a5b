// ivar_pipeline — a three-stage pipeline wired with write-once variables.
//
// Stage 1 produces items, stage 2 transforms them, stage 3 consumes them. Every
// hand-off is an ivar, so the tasks may run in any order: a reader that finds
// its ivar empty suspends its task (the worker goes on with other work) until
// the writer's put() resumes it. A task group runs its unstolen children newest
// first, so on one worker the last consumer starts before any producer and
// must wait; the suspension count printed at the end shows how many waited.
#include <weft/weft.hpp>

#include <cstdio>
#include <memory>
#include <vector>

int main() {
  constexpr int n = 256;
  weft::runtime rt;

  // ivars are neither copyable nor movable: allocate them once, up front.
  auto raw = std::make_unique<weft::ivar<long>[]>(n);      // stage 1 -> 2
  auto cooked = std::make_unique<weft::ivar<long>[]>(n);   // stage 2 -> 3
  std::vector<long> consumed(n, 0);

  long total = rt.run([&] {
    {
      weft::task_group g;
      for (int i = 0; i < n; ++i)  // stage 1: producers
        g.spawn([&, i] { raw[i].put(static_cast<long>(i)); });
      for (int i = 0; i < n; ++i)  // stage 2: transformers
        g.spawn([&, i] { cooked[i].put(raw[i].get() * 2 + 1); });
      for (int i = 0; i < n; ++i)  // stage 3: consumers
        g.spawn([&, i] { consumed[i] = cooked[i].get(); });
    }  // the group's destructor waits for all 3n tasks
    long s = 0;
    for (long v : consumed) s += v;
    return s;
  });

  long expected = 0;
  for (long i = 0; i < n; ++i) expected += 2 * i + 1;  // = n * n

  bool double_put_rejected = false;
  try {
    raw[0].put(7L);  // already full
  } catch (const weft::ivar_error&) {
    double_put_rejected = true;
  }

  std::printf("ivar pipeline: %d items through 3 stages on %u worker(s), total = %ld "
              "(expected %ld), %zu task suspensions, second put rejected: %s\n",
              n, rt.worker_count(), total, expected, rt.stats().fibers_suspended,
              double_put_rejected ? "yes" : "no");
  return (total == expected && double_put_rejected) ? 0 : 1;
}
