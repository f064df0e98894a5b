// The worker-polled epoll backend (src/io/netpoll_backend.cpp; docs/io.md
// §The poller): what only that design can get wrong.
//  * a busy worker still completes I/O (the periodic poll in find_work);
//  * a worker blocked in epoll_wait is interrupted by new work from another
//    thread (parking_lot::park_polling and the eventfd);
//  * a descriptor number closed with close(2) and reused — with the old
//    file still open elsewhere or not — is armed again (EPOLLONESHOT re-arm:
//    MOD, else ADD).
// Parameterised over policy x workers {1, 2} on the epoll backend.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "io_test_util.hpp"
#include "weft/ivar.hpp"

namespace weft_io_test {
namespace {

class IoPoller : public IoTest {};

std::vector<io_param> poller_params() {
  std::vector<io_param> v;
  for (auto p : {weft::steal_policy::proactive, weft::steal_policy::parsimonious})
    for (unsigned w : {1u, 2u}) v.push_back({weft::io_backend::epoll, p, w, true});
  return v;
}

long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

// One worker, never idle: a chain of short tasks, each spawning its
// successor, keeps it busy (it passes through find_work between them, but
// never parks). A read that becomes ready must still complete — with one
// worker only the busy worker's periodic poll can see it.
TEST_P(IoPoller, BusyWorkerStillCompletesIo) {
  fd_pair p = make_pipe();
  run([&] {
    char c = 0;
    auto f = weft::io::read(p.a.get(), &c, 1);
    // Shared with the detached links, which may outlive this task.
    struct state {
      std::atomic<bool> done{false};
      std::atomic<long> links{0};
      clk::time_point limit = clk::now() + 20s;
    };
    auto st = std::make_shared<state>();
    struct chain {
      std::shared_ptr<state> st;
      void operator()() const {
        if (st->done.load() || clk::now() > st->limit) return;
        st->links.fetch_add(1);
        volatile long x = fib(16);
        (void)x;
        auto next = weft::async(*this);  // dropped: detached, runs next
      }
    };
    const auto start = clk::now();
    auto first = weft::async(chain{st});
    std::thread writer([&] {
      std::this_thread::sleep_for(20ms);
      plain_write_all(p.b.get(), "b", 1);
    });
    std::error_code ec;
    std::size_t n = f.get(ec);  // the root waits; the chain keeps the worker busy
    const auto took = clk::now() - start;
    st->done = true;
    writer.join();
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(c, 'b');
    EXPECT_LT(took, 10s) << "the read completed only when the chain stopped";
    EXPECT_GT(st->links.load(), 0);
  });
}

// The only idle worker blocks in epoll_wait (a read is pending, nothing
// else to do); a plain thread then makes another task ready. That task
// must run at once — the blocked poller is interrupted — not when the read
// completes (it completes only after the task ran).
TEST_P(IoPoller, BlockedPollerIsInterruptedByNewWork) {
  fd_pair p = make_pipe();
  run([&] {
    char c = 0;
    auto pending = weft::io::read(p.a.get(), &c, 1);
    weft::ivar<int> go;
    std::atomic<bool> ran{false};
    weft::future<void> task = weft::async([&] {
      EXPECT_EQ(go.get(), 7);
      ran = true;
      plain_write_all(p.b.get(), "i", 1);  // only now may the read complete
    });
    std::thread setter([&] {
      std::this_thread::sleep_for(50ms);  // every worker idle by now
      go.put(7);
    });
    // The read completes only after the task ran, so waiting for it proves
    // the task was resumed while the worker was in the poll.
    std::error_code ec;
    std::size_t n = pending.get_for(30s, ec);
    setter.join();
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(n, 1u);
    EXPECT_TRUE(ran.load());
    task.get();
  });
}

// A descriptor number that waited once, closed with close(2) (not
// io::close) and reused by a new socket: the new socket's waits work. Once
// with the old file gone, once with it still open through a dup.
TEST_P(IoPoller, ReusedDescriptorNumberIsArmedAgain) {
  for (bool keep_old_file : {false, true}) {
    SCOPED_TRACE(keep_old_file ? "old file kept open by a dup" : "old file closed");
    fd_pair first = make_socketpair();
    const int number = first.a.get();
    unique_fd dup_of_old;
    run([&] {
      char c = 0;
      auto f = weft::io::recv(first.a.get(), &c, 1);  // waits: armed in epoll
      std::thread w([&] {
        std::this_thread::sleep_for(10ms);
        plain_write_all(first.b.get(), "1", 1);
      });
      EXPECT_EQ(f.get(), 1u);
      w.join();
    });
    if (keep_old_file) dup_of_old.reset(::dup(first.a.get()));
    ::close(first.a.release());  // a plain close: the backend is not told
    fd_pair second = make_socketpair();
    // The lowest free number is reused (socketpair takes two).
    ASSERT_TRUE(second.a.get() == number || second.b.get() == number);
    const int reused = second.a.get() == number ? second.a.get() : second.b.get();
    const int other = reused == second.a.get() ? second.b.get() : second.a.get();
    run([&] {
      char c = 0;
      auto f = weft::io::recv(reused, &c, 1);
      std::thread w([&] {
        std::this_thread::sleep_for(10ms);
        plain_write_all(other, "2", 1);
      });
      std::error_code ec;
      std::size_t n = f.get_for(20s, ec);
      w.join();
      EXPECT_FALSE(ec) << ec.message();
      EXPECT_EQ(n, 1u);
      EXPECT_EQ(c, '2');
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Io, IoPoller, ::testing::ValuesIn(poller_params()), param_name);

}  // namespace
}  // namespace weft_io_test
