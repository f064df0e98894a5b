// first_of_reads — weft::when_any over I/O: a task waits for the first of
// several pipe reads, then for a read or a timeout, and chains a
// continuation with then(). Checks its own results; exits non-zero if wrong.
#include <unistd.h>

#include <weft/io.hpp>
#include <weft/weft.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("  %-58s %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) ++failures;
}

}  // namespace

int main() {
  using namespace std::chrono_literals;
  int pipes[3][2];
  for (auto& p : pipes)
    if (::pipe(p) != 0) return 2;

  weft::runtime rt;
  std::printf("first_of_reads (%u worker(s))\n", rt.worker_count());
  rt.run([&] {
    // 1. The first of three reads: a child task writes to the second pipe.
    char buf[3][16] = {};
    std::vector<weft::io::io_future<std::size_t>> reads;
    for (int i = 0; i < 3; ++i) reads.push_back(weft::io::read(pipes[i][0], buf[i], sizeof buf[i]));
    auto any = weft::when_any(reads.begin(), reads.end());
    weft::async([&] { (void)!::write(pipes[1][1], "second", 6); }).get();
    auto first = any.get();
    check(first.index == 1, "when_any: the read that got data is the one reported");
    check(first.futures[1].get() == 6 && std::string(buf[1], 6) == "second", "its bytes arrived");
    for (auto& f : first.futures)  // the losers: a dropped pending read would go on
      if (f.valid()) f.cancel();

    // 2. A read or a timeout: nobody writes, the timer wins.
    auto r = weft::when_any(weft::io::read(pipes[0][0], buf[0], sizeof buf[0]),
                            weft::io::sleep_for(20ms)).get();
    check(r.index == 1, "read or timeout: the timeout wins on a silent pipe");
    std::get<0>(r.futures).cancel();
    std::error_code ec;
    std::get<0>(r.futures).get(ec);
    check(ec == std::errc::operation_canceled, "the cancelled read reports operation_canceled");

    // 3. then(): a continuation on a read, run as a task when it completes.
    (void)!::write(pipes[2][1], "abc", 3);
    auto len = weft::io::read(pipes[2][0], buf[2], sizeof buf[2])
                   .then([](weft::io::io_future<std::size_t> f) { return f.get() * 10; });
    check(len.get() == 30, "then on an io_future");
  });
  for (auto& p : pipes) {
    ::close(p[0]);
    ::close(p[1]);
  }
  std::printf("%s\n", failures ? "FAILED" : "all ok");
  return failures ? 1 : 0;
}
