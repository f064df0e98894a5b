// Input of the migrate_rewrite_cases test: the references weft-migrate must
// rewrite (and those it must leave alone); the expected output is
// rewrite_cases.expected.cpp (which the build compiles against weft).cpp.
#include <future>
#include <vector>
#include <weft/weft.hpp>

#define MAKE_FUTURE(T) std::future<T>  // in a macro body: reported, not rewritten

namespace app {
struct future {};  // not std's: left alone
int async(int x) { return x; }
}  // namespace app

template <class T>
T dependent(weft::future<T>& f) {
  // A dependent call inside a template: std::launch::async is an enumerator,
  // not the function, and stays.
  auto g = weft::async(std::launch::async | std::launch::deferred, [] { return T{}; });
  return f.get() + g.get();
}

using weft::promise;  // a using-declaration names std::promise

int main() {
  weft::promise<int> p;
  weft::future<int> f = p.get_future();
  p.set_value(1);
  ::weft::shared_future<int> s = weft::async(std::launch::deferred, [] { return 2; }).share();
  std::vector<weft::packaged_task<int()>> tasks;
  app::future mine;
  (void)mine;
  MAKE_FUTURE(long) from_macro;  // warned about, left as std::future
  (void)from_macro;
  std::future_status st = s.wait_for(std::chrono::seconds(0));
  (void)st;
  {
    using namespace std;
    weft::future<int> u = weft::async([] { return 3; });
    return dependent(f) + s.get() + u.get() + app::async(0);
  }
}
