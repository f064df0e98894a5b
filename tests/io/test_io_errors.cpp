// weft::io error reporting on every backend: EBADF, invalid arguments,
// peer reset, EPIPE, ECONNREFUSED and the errno values the system calls give.
#include <climits>
#include <csignal>
#include <string>

#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoErrors : public IoTest {};

// Every operation on fd -1 fails with EBADF, through get(ec) and get().
TEST_P(IoErrors, BadDescriptorMinusOne) {
  run([&] {
    char buf[8] = {};
    sockaddr_in addr = loopback(htons(9));
    std::error_code ec;
    EXPECT_EQ(weft::io::read(-1, buf, sizeof buf).get(ec), 0u);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    EXPECT_EQ(weft::io::write(-1, buf, sizeof buf).get(ec), 0u);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    EXPECT_EQ(weft::io::recv(-1, buf, sizeof buf).get(ec), 0u);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    EXPECT_EQ(weft::io::send(-1, buf, sizeof buf).get(ec), 0u);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    EXPECT_EQ(weft::io::accept(-1).get(ec), 0);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    weft::io::connect(-1, reinterpret_cast<sockaddr*>(&addr), sizeof addr).get(ec);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);

    EXPECT_THROWS_ERRC(weft::io::read(-1, buf, sizeof buf).get(), std::errc::bad_file_descriptor);
    EXPECT_THROWS_ERRC(weft::io::write(-1, buf, sizeof buf).get(), std::errc::bad_file_descriptor);
    EXPECT_THROWS_ERRC(weft::io::recv(-1, buf, sizeof buf).get(), std::errc::bad_file_descriptor);
    EXPECT_THROWS_ERRC(weft::io::send(-1, buf, sizeof buf).get(), std::errc::bad_file_descriptor);
    EXPECT_THROWS_ERRC(weft::io::accept(-1).get(), std::errc::bad_file_descriptor);
    EXPECT_THROWS_ERRC(weft::io::connect(-1, reinterpret_cast<sockaddr*>(&addr), sizeof addr).get(),
                       std::errc::bad_file_descriptor);
    EXPECT_THROWS_ERRC(weft::io::read_exact(-1, buf, sizeof buf), std::errc::bad_file_descriptor);
    EXPECT_THROWS_ERRC(weft::io::write_all(-1, buf, sizeof buf), std::errc::bad_file_descriptor);
    // Other negative values too.
    EXPECT_THROWS_ERRC(weft::io::read(-42, buf, sizeof buf).get(), std::errc::bad_file_descriptor);
  });
}

// A descriptor number that is not open.
TEST_P(IoErrors, BadDescriptorClosed) {
  const int fd = unused_fd_number();
  run([&] {
    weft::io::sleep_for(0ms).get();  // the backend (and its descriptors) exists now
    fd_pair p = make_pipe();
    const int closed = p.a.release();
    ::close(closed);  // a number that was open a moment ago
    char buf[8] = {};
    sockaddr_in addr = loopback(htons(9));
    for (int bad : {fd, closed}) {
      // (No SCOPED_TRACE: gtest keeps it per thread, and a task may resume on
      // another worker.)
      const std::string where = "fd " + std::to_string(bad);
      std::error_code ec;
      weft::io::read(bad, buf, sizeof buf).get(ec);
      EXPECT_ERRC(ec, std::errc::bad_file_descriptor) << " [" << where << "]";
      weft::io::write(bad, buf, sizeof buf).get(ec);
      EXPECT_ERRC(ec, std::errc::bad_file_descriptor) << " [" << where << "]";
      weft::io::recv(bad, buf, sizeof buf).get(ec);
      EXPECT_ERRC(ec, std::errc::bad_file_descriptor) << " [" << where << "]";
      weft::io::send(bad, buf, sizeof buf).get(ec);
      EXPECT_ERRC(ec, std::errc::bad_file_descriptor) << " [" << where << "]";
      weft::io::accept(bad).get(ec);
      EXPECT_ERRC(ec, std::errc::bad_file_descriptor) << " [" << where << "]";
      weft::io::connect(bad, reinterpret_cast<sockaddr*>(&addr), sizeof addr).get(ec);
      EXPECT_ERRC(ec, std::errc::bad_file_descriptor) << " [" << where << "]";
    }
  });
}

// Reading the write end of a pipe (and writing the read end, or a read-only
// file) is EBADF from the kernel.
TEST_P(IoErrors, WrongDirectionIsBadDescriptor) {
  fd_pair p = make_pipe();
  unique_fd ro(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(ro);
  run([&] {
    char buf[8] = {};
    std::error_code ec;
    weft::io::read(p.b.get(), buf, sizeof buf).get(ec);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    weft::io::write(p.a.get(), buf, sizeof buf).get(ec);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
    weft::io::write(ro.get(), buf, sizeof buf).get(ec);
    EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
  });
}

// A null buffer with a non-zero length is invalid_argument, for every
// transfer (a pipe with data, so a missing check shows as EFAULT, not a hang).
TEST_P(IoErrors, NullBufferIsInvalidArgument) {
  fd_pair p = make_pipe();
  fd_pair s = make_socketpair();
  ASSERT_EQ(::write(p.b.get(), "data", 4), 4);
  ASSERT_EQ(::write(s.b.get(), "data", 4), 4);
  run([&] {
    std::error_code ec;
    EXPECT_EQ(weft::io::read(p.a.get(), nullptr, 16).get(ec), 0u);
    EXPECT_ERRC(ec, std::errc::invalid_argument);
    weft::io::write(p.b.get(), nullptr, 16).get(ec);
    EXPECT_ERRC(ec, std::errc::invalid_argument);
    weft::io::recv(s.a.get(), nullptr, 16).get(ec);
    EXPECT_ERRC(ec, std::errc::invalid_argument);
    weft::io::send(s.a.get(), nullptr, 16).get(ec);
    EXPECT_ERRC(ec, std::errc::invalid_argument);
    EXPECT_THROWS_ERRC(weft::io::read(p.a.get(), nullptr, 1).get(), std::errc::invalid_argument);
    EXPECT_THROWS_ERRC(weft::io::read_exact(p.a.get(), nullptr, 1), std::errc::invalid_argument);
    EXPECT_THROWS_ERRC(weft::io::write_all(p.b.get(), nullptr, 1), std::errc::invalid_argument);
  });
  // Nothing was consumed.
  EXPECT_EQ(bytes_available(p.a.get()), 4);
  EXPECT_EQ(bytes_available(s.a.get()), 4);
}

// A length above SSIZE_MAX (a negative length converted to size_t) is
// invalid_argument.
TEST_P(IoErrors, HugeLengthIsInvalidArgument) {
  fd_pair p = make_pipe();
  fd_pair s = make_socketpair();
  ASSERT_EQ(::write(p.b.get(), "data", 4), 4);
  ASSERT_EQ(::write(s.b.get(), "data", 4), 4);
  run([&] {
    char buf[16];
    for (std::size_t len : {static_cast<std::size_t>(-1), static_cast<std::size_t>(-4096),
                            static_cast<std::size_t>(SSIZE_MAX) + 1}) {
      // (No SCOPED_TRACE: gtest keeps it per thread, and a task may resume on
      // another worker.)
      const std::string where = "len " + std::to_string(len);
      std::error_code ec;
      weft::io::read(p.a.get(), buf, len).get(ec);
      EXPECT_ERRC(ec, std::errc::invalid_argument) << " [" << where << "]";
      weft::io::write(p.b.get(), buf, len).get(ec);
      EXPECT_ERRC(ec, std::errc::invalid_argument) << " [" << where << "]";
      weft::io::recv(s.a.get(), buf, len).get(ec);
      EXPECT_ERRC(ec, std::errc::invalid_argument) << " [" << where << "]";
      weft::io::send(s.a.get(), buf, len).get(ec);
      EXPECT_ERRC(ec, std::errc::invalid_argument) << " [" << where << "]";
    }
  });
  EXPECT_EQ(bytes_available(p.a.get()), 4);
  EXPECT_EQ(bytes_available(s.a.get()), 4);
}

// Large but valid lengths behave as read(2): the kernel caps the count and a
// read returns what is there. (2^32 must not be truncated to 0 — which would
// look like end of file — by a 32-bit length field.)
TEST_P(IoErrors, LargeValidLengthReadsWhatIsAvailable) {
  fd_pair p = make_pipe();
  fd_pair s = make_socketpair();
  run([&] {
    char buf[16] = {};
    // (Not SSIZE_MAX itself: the kernel checks that the whole range is
    // addressable and fails with EFAULT.)
    for (std::size_t len : {std::size_t(1) << 32, (std::size_t(1) << 32) + 3,
                            std::size_t(1) << 33}) {
      // (No SCOPED_TRACE: gtest keeps it per thread, and a task may resume on
      // another worker.)
      const std::string where = "len " + std::to_string(len);
      ASSERT_EQ(::write(p.b.get(), "12345", 5), 5) << " [" << where << "]";
      std::error_code ec;
      EXPECT_EQ(weft::io::read(p.a.get(), buf, len).get(ec), 5u) << " [" << where << "]";
      EXPECT_FALSE(ec) << ec.message() << " [" << where << "]";
      ASSERT_EQ(::write(s.b.get(), "678", 3), 3) << " [" << where << "]";
      EXPECT_EQ(weft::io::recv(s.a.get(), buf, len).get(ec), 3u) << " [" << where << "]";
      EXPECT_FALSE(ec) << ec.message() << " [" << where << "]";
    }
  });
}

// send() adds MSG_NOSIGNAL: a closed peer gives EPIPE and no SIGPIPE (the
// default disposition would kill the test).
TEST_P(IoErrors, SendToClosedPeerIsEpipeWithoutSignal) {
  ASSERT_EQ(std::signal(SIGPIPE, SIG_DFL), SIG_DFL);
  fd_pair s = make_socketpair();
  s.b.reset();
  run([&] {
    std::error_code ec;
    EXPECT_EQ(weft::io::send(s.a.get(), "x", 1).get(ec), 0u);
    EXPECT_ERRC(ec, std::errc::broken_pipe);
    EXPECT_THROWS_ERRC(weft::io::send(s.a.get(), "x", 1).get(), std::errc::broken_pipe);
    char c;
    EXPECT_EQ(weft::io::recv(s.a.get(), &c, 1).get(), 0u) << "EOF from the closed peer";
  });
}

TEST_P(IoErrors, WriteToClosedPipeIsEpipe) {
  scoped_ignore_sigpipe ignore;  // write(2) on a pipe raises SIGPIPE
  fd_pair p = make_pipe();
  p.a.reset();
  run([&] {
    std::error_code ec;
    weft::io::write(p.b.get(), "x", 1).get(ec);
    EXPECT_ERRC(ec, std::errc::broken_pipe);
    EXPECT_THROWS_ERRC(weft::io::write_all(p.b.get(), "xyz", 3), std::errc::broken_pipe);
  });
}

// Peer reset: the peer closes with SO_LINGER 0 (RST). send fails with
// ECONNRESET (the pending socket error) or EPIPE (after it was reported).
TEST_P(IoErrors, SendAfterPeerResetFails) {
  fd_pair t = tcp_pair();
  run([&] {
    ASSERT_EQ(weft::io::send(t.a.get(), "hi", 2).get(), 2u);
    reset_close(t.b);
    std::error_code ec;
    // The RST arrives asynchronously (immediately on loopback): retry a bit.
    for (int i = 0; i < 200 && !ec; ++i) {
      weft::io::send(t.a.get(), "x", 1).get(ec);
      if (!ec) weft::this_task::sleep_for(5ms);
    }
    EXPECT_TRUE(ec == std::errc::connection_reset || ec == std::errc::broken_pipe)
        << ec.message();
    // Once reported, further sends keep failing with EPIPE.
    weft::io::send(t.a.get(), "x", 1).get(ec);
    EXPECT_ERRC(ec, std::errc::broken_pipe);
  });
}

// A receive that is waiting when the RST arrives fails with ECONNRESET.
TEST_P(IoErrors, PendingRecvFailsOnPeerReset) {
  fd_pair t = tcp_pair();
  run([&] {
    std::thread resetter([&] {
      std::this_thread::sleep_for(50ms);
      reset_close(t.b);
    });
    char buf[8];
    std::error_code ec;
    weft::io::recv(t.a.get(), buf, sizeof buf).get(ec);
    resetter.join();
    EXPECT_ERRC(ec, std::errc::connection_reset);
  });
}

TEST_P(IoErrors, ConnectToClosedPortIsRefused) {
  const std::uint16_t port = closed_port();
  run([&] {
    sockaddr_in addr = loopback(port);
    {
      unique_fd c = tcp_socket();
      std::error_code ec;
      weft::io::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get(ec);
      EXPECT_ERRC(ec, std::errc::connection_refused);
    }
    {
      unique_fd c = tcp_socket();
      EXPECT_THROWS_ERRC(
          weft::io::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get(),
          std::errc::connection_refused);
    }
  });
}

// (Connected with a plain blocking connect: after a non-blocking connect
// completes, Linux returns 0 to the next connect() and EISCONN only after.)
TEST_P(IoErrors, ConnectOnConnectedSocketIsEisconn) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  unique_fd c = tcp_socket();
  ASSERT_EQ(::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  run([&] {
    std::error_code ec;
    weft::io::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get(ec);
    EXPECT_ERRC(ec, std::errc::already_connected);
  });
}

TEST_P(IoErrors, AcceptOnNonListeningOrNonSocket) {
  unique_fd s = tcp_socket();
  fd_pair p = make_pipe();
  run([&] {
    std::error_code ec;
    weft::io::accept(s.get()).get(ec);
    EXPECT_ERRC(ec, std::errc::invalid_argument);
    weft::io::accept(p.a.get()).get(ec);
    EXPECT_ERRC(ec, std::errc::not_a_socket);
  });
}

TEST_P(IoErrors, RecvOnNonSocketIsEnotsock) {
  fd_pair p = make_pipe();
  ASSERT_EQ(::write(p.b.get(), "x", 1), 1);
  run([&] {
    char c;
    std::error_code ec;
    weft::io::recv(p.a.get(), &c, 1).get(ec);
    EXPECT_ERRC(ec, std::errc::not_a_socket);
    weft::io::send(p.b.get(), &c, 1).get(ec);
    EXPECT_ERRC(ec, std::errc::not_a_socket);
  });
}

TEST_P(IoErrors, ReadDirectoryIsEisdir) {
  unique_fd d(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(d);
  run([&] {
    char buf[16];
    std::error_code ec;
    weft::io::read(d.get(), buf, sizeof buf).get(ec);
    EXPECT_ERRC(ec, std::errc::is_a_directory);
  });
}

TEST_P(IoErrors, ErrorsUseSystemCategoryOrGeneric) {
  run([&] {
    char c;
    try {
      weft::io::read(-1, &c, 1).get();
      ADD_FAILURE() << "no exception";
    } catch (const std::system_error& e) {
      EXPECT_TRUE(e.code().category() == std::system_category() ||
                  e.code().category() == std::generic_category())
          << e.code().category().name();
      EXPECT_EQ(e.code().value(), EBADF);
      EXPECT_NE(std::string(e.what()).find("weft::io"), std::string::npos) << e.what();
    }
  });
}

// After a failed operation the runtime and the descriptor keep working.
TEST_P(IoErrors, FailureDoesNotPoisonLaterOperations) {
  fd_pair s = make_socketpair();
  run([&] {
    char buf[8];
    for (int i = 0; i < 50; ++i) {
      std::error_code ec;
      weft::io::read(-1, buf, 1).get(ec);
      ASSERT_TRUE(ec);
      weft::io::read(s.a.get(), nullptr, 5).get(ec);
      ASSERT_TRUE(ec);
      ASSERT_EQ(weft::io::send(s.b.get(), "ok", 2).get(), 2u);
      ASSERT_EQ(weft::io::read_exact(s.a.get(), buf, 2), 2u);
    }
  });
}

WEFT_IO_INSTANTIATE(IoErrors);
WEFT_IO_INSTANTIATE_NO_TRY_FIRST(IoErrors);

}  // namespace
}  // namespace weft_io_test
