// Regression tests: a connection the kernel accepted for weft is never lost
// or leaked. 127.0.0.1 only; every wait is bounded (2 s polls; run()'s
// watchdog as the backstop).
//
// (Issue "Hardening", item 11. The reported 19,999-of-20,000 accept storm was
// the kernel's accept queue overflowing while SYN cookies were in use: the
// cookie ACK of a connection its client saw established was dropped and the
// server never heard of it; see docs/io.md. These tests cover the ways weft
// itself could lose or leak an accepted socket.)
//
// Before the fix, DroppedPendingAccept* and CancelThenDrop* fail on epoll and
// io_uring: the accept completes for an abandoned future, its descriptor is
// never closed (IoTest::TearDown's open_fd_count check) and the client's
// connection stays established with nobody serving it. The other tests are
// guards for paths that are correct today.
#include <fcntl.h>
#include <poll.h>

#include <random>

#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoAcceptLoss : public IoTest {};

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Plain accept4 on the listener until it stays empty for `idle`.
int drain_backlog(int l, std::chrono::milliseconds idle) {
  set_nonblocking(l);
  int n = 0;
  auto until = clk::now() + idle;
  while (clk::now() < until) {
    int s = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    if (s >= 0) {
      ::close(s);
      ++n;
      until = clk::now() + idle;
      continue;
    }
    pollfd p{l, POLLIN, 0};
    ::poll(&p, 1, 10);
  }
  return n;
}

// How many of `clients` are accounted for within `limit`: connections still
// in the listener's backlog (taken with plain accept4 and kept open until the
// count is done, so that their clients do not see EOF) plus clients whose
// connection the server side closed (EOF or RST). A connection that is
// neither was taken off the backlog by weft and is held open by a descriptor
// nobody owns.
int accounted_for(int l, const std::vector<int>& clients, std::chrono::milliseconds limit) {
  set_nonblocking(l);
  std::vector<unique_fd> from_backlog;
  std::vector<bool> closed(clients.size(), false);
  int eof = 0;
  auto deadline = clk::now() + limit;
  for (;;) {
    for (int s; (s = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) from_backlog.emplace_back(s);
    for (std::size_t i = 0; i < clients.size(); ++i) {
      if (closed[i]) continue;
      char b;
      ssize_t r = ::recv(clients[i], &b, 1, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno == ECONNRESET)) {
        closed[i] = true;
        ++eof;
      }
    }
    int n = static_cast<int>(from_backlog.size()) + eof;
    if (n >= static_cast<int>(clients.size()) || clk::now() >= deadline) return n;
    pollfd p{l, POLLIN, 0};
    ::poll(&p, 1, 10);
  }
}

// A future dropped while its accept is pending: the connection that arrives
// next must not end up on a descriptor nobody owns.
TEST_P(IoAcceptLoss, DroppedPendingAcceptDoesNotLeakTheConnection) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  run([&] {
    {
      auto f = weft::io::accept(l.get());
      ASSERT_FALSE(f.is_ready());
    }  // dropped while pending
    unique_fd c = tcp_socket();
    ASSERT_EQ(::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    // Give the backend time to act on the connection (the epoll I/O thread
    // wakes up and accepts; the ring's accept completes).
    weft::io::sleep_for(100ms).get();
    EXPECT_EQ(accounted_for(l.get(), {c.get()}, 2000ms), 1)
        << "the connection was accepted for a dropped future and is held open by a leaked descriptor";
  });
  // IoTest::TearDown: open_fd_count() is back to where it was.
  destroy_runtime();  // before the listener closes: the I/O thread may still touch it
}

// Deterministic: the accept has completed (the future is ready) but nobody
// ever reads it.
TEST_P(IoAcceptLoss, CompletedAcceptNeverReadIsClosed) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  unique_fd c = tcp_socket();
  run([&] {
    auto f = weft::io::accept(l.get());
    ASSERT_EQ(::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  });  // f dropped unread
  EXPECT_EQ(accounted_for(l.get(), {c.get()}, 2000ms), 1)
      << "the accepted socket of a dropped, completed future was never closed";
  destroy_runtime();  // before the listener closes: the I/O thread may still touch it
}

// cancel() then drop, with a client connecting meanwhile: the accept may
// complete despite the cancel (documented: the result is kept); nobody reads
// it, so weft must close it.
TEST_P(IoAcceptLoss, CancelThenDropNeverLeaks) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr, 1024);
  constexpr int rounds = 200;
  std::vector<unique_fd> clients;
  run([&] {
    for (int i = 0; i < rounds; ++i) {
      auto f = weft::io::accept(l.get());
      unique_fd c = tcp_socket();
      ASSERT_EQ(::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
      f.cancel();
      f = {};  // dropped without get()
      clients.push_back(std::move(c));
    }
  });
  std::this_thread::sleep_for(100ms);
  std::vector<int> fds;
  for (auto& c : clients) fds.push_back(c.get());
  EXPECT_EQ(accounted_for(l.get(), fds, 2000ms), rounds)
      << "connections accepted for abandoned futures and never closed";
  destroy_runtime();  // before the listener closes: the I/O thread may still touch it
}

// Guard (passes today): cancel racing completion. A client thread connects
// continuously; the task starts an accept, cancels it after 0..5 us and reads
// the result. Every connection is either delivered or still in the backlog.
TEST_P(IoAcceptLoss, CancelRacingCompletionDeliversEveryConnection) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr, 4096);
  std::atomic<bool> stop{false};
  std::atomic<int> connected{0};
  std::vector<unique_fd> clients;
  std::thread client([&] {
    while (!stop.load() && clients.size() < 3000) {
      unique_fd c = tcp_socket();
      if (::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        clients.push_back(std::move(c));
        ++connected;
      }
      auto t = clk::now() + 10us;
      while (clk::now() < t) {
      }
    }
  });
  int delivered = 0, cancelled = 0;
  run([&] {
    std::mt19937 rng(42);
    auto end = clk::now() + 1s;
    while (clk::now() < end) {
      auto f = weft::io::accept(l.get());
      auto t = clk::now() + std::chrono::nanoseconds(rng() % 5000);
      while (clk::now() < t) {
      }
      f.cancel();
      std::error_code ec;
      int fd = f.get(ec);
      if (!ec) {
        ++delivered;
        ::close(fd);
      } else {
        ASSERT_ERRC(ec, std::errc::operation_canceled);
        ++cancelled;
      }
    }
  });
  stop = true;
  client.join();
  int left = drain_backlog(l.get(), 300ms);
  EXPECT_EQ(delivered + left, connected.load())
      << "delivered " << delivered << ", cancelled " << cancelled << ", left in the backlog " << left;
  destroy_runtime();  // before the listener closes: the I/O thread may still touch it
}

// Guard (passes today): the runtime is destroyed while tasks wait in accept
// and a client keeps connecting. Every connection is delivered to a task or
// left in the backlog.
TEST_P(IoAcceptLoss, TeardownWithPendingAcceptsLosesNothing) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr, 4096);
  for (int round = 0; round < 10; ++round) {
    std::atomic<bool> stop{false};
    std::atomic<int> connected{0}, delivered{0};
    std::vector<unique_fd> clients;
    std::thread client([&] {
      while (!stop.load() && clients.size() < 2000) {
        unique_fd c = tcp_socket();
        if (::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
          clients.push_back(std::move(c));
          ++connected;
        }
      }
    });
    {
      weft::options o = options();
      // The accepts are still pending at teardown by design: cancel them
      // after a short grace period instead of the default second.
      o.shutdown_grace = std::chrono::milliseconds(20);
      weft::runtime rt(o);
      for (int k = 0; k < 4; ++k) {
        (void)rt.async([&] {
          for (;;) {
            std::error_code ec;
            int fd = weft::io::accept(l.get()).get(ec);
            if (ec) return;  // operation_canceled: shutting down
            ++delivered;
            ::close(fd);
          }
        });
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1 + round * 2));
    }  // ~runtime cancels the pending accepts
    stop = true;
    client.join();
    int left = drain_backlog(l.get(), 200ms);
    EXPECT_EQ(delivered.load() + left, connected.load()) << "round " << round;
  }
}

WEFT_IO_INSTANTIATE(IoAcceptLoss);
WEFT_IO_INSTANTIATE_NO_TRY_FIRST(IoAcceptLoss);

// Guard (passes today): more accepts completing at once on one ring than its
// completion queue holds (256 SQ entries -> 512 CQEs; the kernel keeps the
// rest on its overflow list, IORING_FEAT_NODROP). Every accept completes with
// its own connection.
TEST(IoUringAcceptBurst, MoreCompletionsThanTheCompletionQueue) {
  if (!io_uring_supported()) GTEST_SKIP() << "no io_uring";
  constexpr int n = 1500;  // 3 descriptors each
  std::vector<unique_fd> ls, cs;
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < n; ++i) {
    sockaddr_in a{};
    ls.push_back(make_listener(&a, 4));
    cs.push_back(tcp_socket());
    ASSERT_EQ(::connect(cs.back().get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ports.push_back(local_address(cs.back().get()).sin_port);
  }
  int before = open_fd_count();
  weft::options o;
  o.workers = 1;  // one ring
  o.io = weft::io_backend::io_uring;
  o.io_try_first = false;  // every accept goes to the ring
  int ok = 0;
  {
    weft::runtime rt(o);
    rt.run([&] {
      std::vector<weft::io::io_future<int>> fs;
      for (int i = 0; i < n; ++i) fs.push_back(weft::io::accept(ls[i].get()));
      for (int i = 0; i < n; ++i) {
        std::error_code ec;
        unique_fd s(fs[i].get_for(10s, ec));
        ASSERT_FALSE(ec) << i << ": " << ec.message();
        sockaddr_in peer{};
        socklen_t len = sizeof peer;
        ::getpeername(s.get(), reinterpret_cast<sockaddr*>(&peer), &len);
        ok += peer.sin_port == ports[i];
      }
    });
  }
  EXPECT_EQ(ok, n);
  EXPECT_EQ(open_fd_count(), before);
}

}  // namespace
}  // namespace weft_io_test
