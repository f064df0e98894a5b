// hello — start a runtime, run a task that returns a value.
#include <weft/weft.hpp>

#include <cstdio>

int main() {
  weft::runtime rt;  // one worker per core (or $WEFT_WORKERS)

  // run() executes the lambda as a task on the workers and returns its result.
  int answer = rt.run([] {
    weft::future<int> six = weft::async([] { return 6; });  // a child task
    int seven = 7;                                           // meanwhile, here
    return six.get() * seven;  // runs the child inline unless it was stolen
  });

  std::printf("hello from weft: the answer is %d (%u worker(s))\n", answer, rt.worker_count());
  return answer == 42 ? 0 : 1;
}
