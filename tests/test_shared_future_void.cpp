// shared_future<void>, in its own binary because it currently fails to
// compile: shared_future<T>::get() is declared as returning
// std::conditional_t<std::is_void_v<T>, void, const T&>, and conditional_t
// forms both alternatives, so `const void&` is ill-formed for T = void
// ("forming reference to void", include/weft/future.hpp) and the member is
// dropped ("shared_future<void> has no member named get").
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;

class SharedFutureVoid : public Workers {};
WEFT_INSTANTIATE_WORKERS(SharedFutureVoid);

TEST_P(SharedFutureVoid, GetManyTimesFromSeveralTasks) {
  weft::runtime rt(options());
  rt.run([] {
    weft::promise<void> p;
    weft::shared_future<void> sf = p.get_future().share();
    std::atomic<int> ok{0};
    weft::task_group g;
    for (int i = 0; i < 32; ++i) {
      g.spawn([sf, &ok] {
        sf.get();
        sf.get();
        ok.fetch_add(1);
      });
    }
    g.spawn([&] { p.set_value(); });
    g.sync();
    EXPECT_EQ(ok.load(), 32);
    weft::shared_future<void> v = weft::async([] {}).share();
    v.get();
    v.get();
    weft::shared_future<void> e = weft::async([] { throw std::runtime_error("x"); }).share();
    EXPECT_THROW(e.get(), std::runtime_error);
    EXPECT_THROW(e.get(), std::runtime_error);
  });
}

}  // namespace
