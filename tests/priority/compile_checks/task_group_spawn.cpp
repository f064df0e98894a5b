// Compile-failure test (tests/priority/CMakeLists.txt, check_compile.cmake).
//
// A priority_task_group owned by a task of level 2 spawns a child of level 6:
// its sync would wait on less urgent work, a priority inversion that weft
// rejects at compile time. Without WEFT_VALID it must fail with the "priority
// inversion" static_assert naming check_no_priority_inversion<2, 6>; with
// -DWEFT_VALID the children are of levels 2 and 1 (at least as urgent as the
// owner) and it must compile.
#include <weft/priority.hpp>
#include <weft/runtime.hpp>

#include <atomic>

namespace {

int owner(weft::task_context<2> ctx) {
  std::atomic<int> sum{0};
  weft::priority_task_group<2> g(ctx);
  g.spawn([&](weft::task_context<2>) { sum += 1; });
#ifndef WEFT_VALID
  g.spawn(weft::at_priority<6>, [&](weft::task_context<6>) { sum += 2; });  // inversion
#else
  g.spawn(weft::at_priority<1>, [&](weft::task_context<1>) { sum += 2; });  // fine
#endif
  g.sync();
  return sum.load();
}

}  // namespace

int main() {
  weft::runtime rt;
  return rt.run(weft::at_priority<2>, [](weft::task_context<2> ctx) { return owner(ctx); }) == 3 ? 0 : 1;
}
