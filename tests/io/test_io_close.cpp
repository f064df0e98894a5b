// weft::io::close: every operation pending on the descriptor completes with
// bad_file_descriptor, then the descriptor is closed; its number may be
// reused at once. On every backend.
#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoClose : public IoTest {};

bool is_closed(int fd) { return ::fcntl(fd, F_GETFD) < 0 && errno == EBADF; }

// A task suspended in recv; another task closes the descriptor: the recv
// completes with bad_file_descriptor.
TEST_P(IoClose, RecvInOtherTaskFails) {
  fd_pair s = make_socketpair();
  rescuer r(10s, [&] { plain_write_all(s.b.get(), "!", 1); });
  run([&] {
    const int fd = s.a.get();
    if (!tasks_serve_each_other()) {
      // Blocking backend, one worker: the recv cannot wait in another task
      // while this one runs; close it while it is pending (deferred).
      char buf[8];
      auto f = weft::io::recv(fd, buf, sizeof buf);
      weft::io::close(s.a.release());
      std::error_code ec;
      EXPECT_EQ(f.get(ec), 0u);
      EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
      return;
    }
    std::atomic<bool> started{false};
    std::error_code ec;
    std::size_t got = 99;
    peer p = spawn_peer(
        [&] {
          char buf[8];
          auto f = weft::io::recv(fd, buf, sizeof buf);
          started = true;
          got = f.get(ec);
        },
        true);
    while (!started) weft::io::sleep_for(1ms).get();
    weft::io::sleep_for(50ms).get();  // let the recv wait (and a blocking performer poll)
    const auto t0 = clk::now();
    weft::io::close(s.a.release());
    p.join();
    EXPECT_LT(clk::now() - t0, timing_slack());
    EXPECT_EQ(got, 0u);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    EXPECT_TRUE(is_closed(fd));
  });
  EXPECT_FALSE(r.fired()) << "the recv was not completed by io::close";
}

// Reads and writes pending on a socket (two reads queued in one direction)
// and on a pipe's two ends all fail.
TEST_P(IoClose, PendingReadsAndWritesFail) {
  fd_pair s = make_socketpair(SOCK_STREAM | SOCK_NONBLOCK);
  set_socket_buffers(s.a.get(), 4096);
  set_socket_buffers(s.b.get(), 4096);
  std::vector<char> junk(4096, 'j');
  while (::send(s.a.get(), junk.data(), junk.size(), MSG_NOSIGNAL) > 0) {
  }
  fd_pair p = make_pipe(O_CLOEXEC | O_NONBLOCK);
  while (::write(p.b.get(), junk.data(), junk.size()) > 0) {
  }
  // The socket's peer (b) keeps its data: a rescue is a write to it.
  rescuer r(10s, [&] { plain_write_all(s.b.get(), "!!", 2); });
  run([&] {
    char b1[4], b2[4];
    auto r1 = weft::io::recv(s.a.get(), b1, sizeof b1);
    auto r2 = weft::io::read(s.a.get(), b2, sizeof b2);
    auto w1 = weft::io::send(s.a.get(), "stuck", 5);
    auto pw = weft::io::write(p.b.get(), junk.data(), junk.size());  // the pipe is full: waits
    EXPECT_FALSE(w1.is_ready());
    EXPECT_FALSE(pw.is_ready());
    weft::io::close(s.a.release());
    weft::io::close(p.b.release());
    std::error_code ec;
    for (auto* f : {&r1, &r2, &w1, &pw}) {
      f->get(ec);
      EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    }
  });
  EXPECT_FALSE(r.fired());
}

// Nothing pending: it just closes.
TEST_P(IoClose, NothingPendingJustCloses) {
  fd_pair s = make_socketpair();
  fd_pair p = make_pipe();
  run([&] {
    ASSERT_EQ(weft::io::send(s.a.get(), "hi", 2).get(), 2u);
    char buf[2];
    ASSERT_EQ(weft::io::recv(s.b.get(), buf, 2).get(), 2u);
    const int a = s.a.release(), b = s.b.release(), pr = p.a.release();
    weft::io::close(a);
    std::error_code ec;
    weft::io::close(b, ec);
    EXPECT_FALSE(ec) << ec.message();
    weft::io::close(pr);
    EXPECT_TRUE(is_closed(a));
    EXPECT_TRUE(is_closed(b));
    EXPECT_TRUE(is_closed(pr));
  });
}

// An invalid descriptor: EBADF, thrown or in ec; outside a task:
// std::logic_error.
TEST_P(IoClose, InvalidDescriptor) {
  const int unused = unused_fd_number();
  EXPECT_THROW(weft::io::close(unused), std::logic_error);
  run([&] {
    std::error_code ec;
    weft::io::close(-1, ec);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    weft::io::close(unused, ec);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    EXPECT_THROWS_ERRC(weft::io::close(unused), std::errc::bad_file_descriptor);
  });
}

// The number, reused at once by a new socketpair, works normally: a recv on
// the new descriptor completes when data arrives.
TEST_P(IoClose, ReusedNumberWorks) {
  fd_pair s1 = make_socketpair();
  unique_fd keep_a, keep_b;
  rescuer r(10s, [&] { plain_write_all(s1.b.get(), "!", 1); });
  run([&] {
    const int n = s1.a.get();
    char buf[8] = {};
    auto old = weft::io::recv(n, buf, sizeof buf);
    weft::io::close(s1.a.release());
    std::error_code ec;
    old.get(ec);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    keep_a.reset(sv[0]);
    keep_b.reset(sv[1]);
    if (sv[0] != n && sv[1] != n) GTEST_LOG_(INFO) << "the number was not reused";
    const int mine = sv[0] == n ? sv[0] : sv[1] == n ? sv[1] : sv[0];
    const int other = mine == sv[0] ? sv[1] : sv[0];
    char got[8] = {};
    auto f = weft::io::recv(mine, got, sizeof got);
    if (tasks_serve_each_other()) {
      weft::io::sleep_for(20ms).get();
      EXPECT_FALSE(f.is_ready());
    }
    ASSERT_EQ(::send(other, "new", 3, MSG_NOSIGNAL), 3);
    EXPECT_EQ(f.get(), 3u);
    EXPECT_EQ(std::string(got, 3), "new");
    // And the other direction, through weft.
    EXPECT_EQ(weft::io::send(mine, "back", 4).get(), 4u);
    EXPECT_EQ(weft::io::recv(other, got, sizeof got).get(), 4u);
    EXPECT_EQ(std::string(got, 4), "back");
  });
  EXPECT_FALSE(r.fired());
}

// A pending accept on a listening socket fails.
TEST_P(IoClose, PendingAcceptFails) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  const int fd = l.get();
  rescuer r(10s, [&] {
    unique_fd c = tcp_socket();
    ::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  });
  run([&] {
    auto f = weft::io::accept(fd);
    EXPECT_FALSE(f.is_ready());
    weft::io::close(l.release());
    std::error_code ec;
    EXPECT_EQ(f.get(ec), 0);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    EXPECT_TRUE(is_closed(fd));
  });
  EXPECT_FALSE(r.fired());
}

}  // namespace

WEFT_IO_INSTANTIATE(IoClose);

}  // namespace weft_io_test
