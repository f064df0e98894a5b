// Compile-failure test (tests/priority/CMakeLists.txt, check_compile.cmake).
//
// A task of level 0 (the most urgent) waits on a priority_future of level 5:
// a priority inversion, which weft rejects at compile time. Built without
// WEFT_VALID it must fail with the "priority inversion" static_assert naming
// check_no_priority_inversion<0, 5>; with -DWEFT_VALID the same code waits in
// the right direction (a level-5 task waits on level-5 and level-0 work) and
// must compile. -DWEFT_USE_WAIT uses wait(ctx) instead of get(ctx).
#include <weft/priority.hpp>
#include <weft/runtime.hpp>

namespace {

int compute(weft::task_context<5>) { return 42; }
int urgent(weft::task_context<0>) { return 7; }

#ifndef WEFT_VALID
// The inversion: waiter level 0, awaited level 5.
int waiter(weft::task_context<0> ctx) {
  weft::priority_future<int, 5> f = weft::async(weft::at_priority<5>, compute);
#ifdef WEFT_USE_WAIT
  f.wait(ctx);
  return 0;
#else
  return f.get(ctx);
#endif
}
#else
// The right direction: waiter level 5, awaited levels 5 and 0.
int waiter(weft::task_context<5> ctx) {
  weft::priority_future<int, 5> f = weft::async(weft::at_priority<5>, compute);
  weft::priority_future<int, 0> g = weft::async(weft::at_priority<0>, urgent);
#ifdef WEFT_USE_WAIT
  f.wait(ctx);
  g.wait(ctx);
  return 0;
#else
  return f.get(ctx) + g.get(ctx);
#endif
}
#endif

}  // namespace

int main() {
  weft::runtime rt;
#ifndef WEFT_VALID
  return rt.run(weft::at_priority<0>, [](weft::task_context<0> ctx) { return waiter(ctx); });
#else
  return rt.run(weft::at_priority<5>, [](weft::task_context<5> ctx) { return waiter(ctx); });
#endif
}
