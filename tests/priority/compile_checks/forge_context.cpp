// Compile-failure test (tests/priority/CMakeLists.txt, check_compile.cmake).
//
// A task of level 0 (the most urgent) tries to wait on a priority_future of
// level 5 by passing a context of a less urgent level it does not run at — a
// forged context. Only the runtime makes task_contexts, so every forgery must
// fail to compile. One forgery per define:
//   WEFT_FORGE_TAG          f.get(weft::at_priority<7>): a tag is not a context
//   WEFT_FORGE_TAG_WAIT     f.wait(weft::at_priority<7>)
//   WEFT_FORGE_CONSTRUCT    f.get(weft::task_context<7>{}): the constructor is private
//   WEFT_FORGE_GROUP        weft::priority_task_group<7> g(weft::at_priority<7>): a
//                           group of level 7 owned by a level-0 task
// With -DWEFT_VALID the same wait is written the legitimate way — from a task
// the runtime runs at level 7, with the context it receives — and must compile.
#include <weft/priority.hpp>
#include <weft/runtime.hpp>

namespace {

int compute(weft::task_context<5>) { return 42; }

#ifndef WEFT_VALID
int waiter(weft::task_context<0>) {
  weft::priority_future<int, 5> f = weft::async(weft::at_priority<5>, compute);
#if defined(WEFT_FORGE_TAG)
  return f.get(weft::at_priority<7>);
#elif defined(WEFT_FORGE_TAG_WAIT)
  f.wait(weft::at_priority<7>);
  return 0;
#elif defined(WEFT_FORGE_CONSTRUCT)
  return f.get(weft::task_context<7>{});
#elif defined(WEFT_FORGE_GROUP)
  int sum = 0;
  weft::priority_task_group<7> g(weft::at_priority<7>);
  g.spawn([&](weft::task_context<7>) { sum += f.get_outside_runtime(); });
  g.sync();
  return sum;
#else
#error "define one of WEFT_FORGE_TAG, WEFT_FORGE_TAG_WAIT, WEFT_FORGE_CONSTRUCT, WEFT_FORGE_GROUP"
#endif
}
#else
// Legitimate: a level-7 task (its context comes from the runtime) waits on
// level-5 work, directly and from a priority_task_group<7> it owns.
int waiter(weft::task_context<7> ctx) {
  weft::priority_future<int, 5> f = weft::async(weft::at_priority<5>, compute);
  f.wait(ctx);
  int sum = 0;
  weft::priority_task_group<7> g(ctx);
  g.spawn([&](weft::task_context<7> c7) { sum += weft::async(weft::at_priority<5>, compute).get(c7); });
  g.sync();
  weft::task_context<7> copy = ctx;  // contexts are copyable: pass them down
  return f.get(copy) + sum;
}
#endif

}  // namespace

int main() {
  weft::runtime rt;
#ifndef WEFT_VALID
  return rt.run(weft::at_priority<0>, [](weft::task_context<0> ctx) { return waiter(ctx); });
#else
  return rt.run(weft::at_priority<7>, [](weft::task_context<7> ctx) { return waiter(ctx); });
#endif
}
