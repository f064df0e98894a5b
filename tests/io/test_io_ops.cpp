// weft::io beyond read/write/recv/send, on every backend: readiness waits
// for descriptors owned by others, positional and vectored file I/O, fsync,
// datagrams (recvfrom/sendto, recvmsg/sendmsg with SCM_RIGHTS) and
// shutdown; their argument validation, cancellation, deadlines and the
// runtime's shutdown.
#include <sys/uio.h>
#include <sys/un.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoOps : public IoTest {};

struct temp_file {
  std::string path;
  unique_fd fd;
  temp_file() {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/weft_io_ops_XXXXXX";
    int f = ::mkostemp(path.data(), O_CLOEXEC);
    if (f < 0) throw std::system_error(errno, std::system_category(), "mkostemp");
    fd.reset(f);
  }
  ~temp_file() { ::unlink(path.c_str()); }
};

// A UDP socket bound to 127.0.0.1 on an ephemeral port.
unique_fd udp_socket(sockaddr_in* addr_out) {
  unique_fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s) throw std::system_error(errno, std::system_category(), "socket");
  sockaddr_in a = loopback(0);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0)
    throw std::system_error(errno, std::system_category(), "bind");
  *addr_out = local_address(s.get());
  return s;
}

// Writes `msg` to fd from a plain thread after `delay` (joined on scope exit).
struct delayed_write {
  std::thread t;
  delayed_write(int fd, std::string msg, std::chrono::milliseconds delay)
      : t([fd, msg, delay] {
          std::this_thread::sleep_for(delay);
          (void)!::write(fd, msg.data(), msg.size());
        }) {}
  ~delayed_write() { t.join(); }
};

// ------------------------------------------------------------- readiness

TEST_P(IoOps, WaitReadableAndWritableLeaveTheDescriptorAlone) {
  fd_pair s = make_socketpair();
  ASSERT_FALSE(is_nonblocking(s.a.get()));
  rescuer r(10s, [&] { plain_write_all(s.b.get(), "!", 1); });
  run([&] {
    // Writable at once; not readable until the peer writes.
    weft::io::wait_writable(s.a.get()).get();
    std::error_code ec;
    weft::io::wait_readable(s.a.get()).get_for(50ms, ec);
    EXPECT_ERRC(ec, std::errc::timed_out);
    {
      delayed_write w(s.b.get(), "ping", 50ms);
      auto t0 = clk::now();
      weft::io::wait_readable(s.a.get()).get();
      EXPECT_GE(clk::now() - t0, 30ms);
    }
    // Nothing consumed: the owner reads the data itself (blocking mode).
    EXPECT_EQ(bytes_available(s.a.get()), 4);
    char buf[8];
    EXPECT_EQ(::read(s.a.get(), buf, sizeof buf), 4);
    // Level-triggered and hang-up counts as readable.
    s.b.reset();
    weft::io::wait_readable(s.a.get()).get();
  });
  r.disarm();
  EXPECT_FALSE(is_nonblocking(s.a.get()))
      << "io.hpp: a readiness wait must not switch the descriptor to O_NONBLOCK";
}

TEST_P(IoOps, WaitReadableCancelAndDeadline) {
  fd_pair p = make_pipe();
  rescuer r(10s, [&] { plain_write_all(p.b.get(), "!", 1); });
  run([&] {
    auto f = weft::io::wait_readable(p.a.get());
    EXPECT_FALSE(f.is_ready());
    f.cancel();
    EXPECT_THROWS_ERRC(f.get(), std::errc::operation_canceled);
    auto t0 = clk::now();
    EXPECT_THROWS_ERRC(weft::io::wait_readable(p.a.get()).get_for(80ms), std::errc::timed_out);
    EXPECT_GE(clk::now() - t0, 80ms);
    EXPECT_LT(clk::now() - t0, 80ms + timing_slack());
    // A pipe's write end: writable at once.
    weft::io::wait_writable(p.b.get()).get();
  });
  EXPECT_FALSE(r.fired());
}

// A dropped wait is cancelled (io.hpp): it returns at once, even on the
// blocking backend (which would otherwise perform it in the destructor),
// and leaves nothing watching the descriptor.
TEST_P(IoOps, DroppedWaitIsCancelled) {
  fd_pair p = make_pipe();
  rescuer r(5s, [&] { plain_write_all(p.b.get(), "!", 1); });
  run([&] {
    {
      auto f = weft::io::wait_readable(p.a.get());
      weft::io::sleep_for(10ms).get();
    }
    (void)weft::io::wait_readable(p.a.get());  // dropped at once
  });
  EXPECT_FALSE(r.fired()) << "dropping a pending wait waited for the descriptor";
  r.disarm();
  // The descriptor's number can be reused at once.
  p.a.reset();
  fd_pair q = make_pipe();
  run([&] {
    ASSERT_EQ(::write(q.b.get(), "x", 1), 1);
    weft::io::wait_readable(q.a.get()).get();
  });
}

// ------------------------------------------------------------- files

TEST_P(IoOps, PositionalAndVectoredFileIo) {
  temp_file f;
  run([&] {
    EXPECT_EQ(weft::io::pwrite(f.fd.get(), "world", 5, 6).get(), 5u);
    EXPECT_EQ(weft::io::pwrite(f.fd.get(), "hello ", 6, 0).get(), 6u);
    EXPECT_EQ(::lseek(f.fd.get(), 0, SEEK_CUR), 0) << "pwrite must not move the position";
    char buf[16] = {};
    EXPECT_EQ(weft::io::pread(f.fd.get(), buf, sizeof buf, 3).get(), 8u);
    EXPECT_EQ(std::string(buf, 8), "lo world");
    EXPECT_EQ(weft::io::pread(f.fd.get(), buf, sizeof buf, 100).get(), 0u) << "end of file";
    // writev at the position (0): overwrites "hello " with "HEL" "LO_".
    char a[] = "HEL", b[] = "LO_";
    iovec out[2] = {{a, 3}, {b, 3}};
    EXPECT_EQ(weft::io::writev(f.fd.get(), out, 2).get(), 6u);
    EXPECT_EQ(::lseek(f.fd.get(), 0, SEEK_CUR), 6) << "writev advances the position";
    ASSERT_EQ(::lseek(f.fd.get(), 0, SEEK_SET), 0);
    char x[4] = {}, y[16] = {};
    iovec in[2] = {{x, 4}, {y, sizeof y}};
    EXPECT_EQ(weft::io::readv(f.fd.get(), in, 2).get(), 11u);
    EXPECT_EQ(std::string(x, 4) + std::string(y, 7), "HELLO_world");
    weft::io::fsync(f.fd.get()).get();
    weft::io::fdatasync(f.fd.get()).get();
    // Allowed on a read-only descriptor, as fsync(2) is.
    unique_fd ro(::open(f.path.c_str(), O_RDONLY | O_CLOEXEC));
    weft::io::fsync(ro.get()).get();
    // Not a file: fsync(2)'s EINVAL; pread on a pipe: ESPIPE.
    fd_pair p = make_pipe();
    EXPECT_THROWS_ERRC(weft::io::fsync(p.b.get()).get(), std::errc::invalid_argument);
    EXPECT_THROWS_ERRC(weft::io::pread(p.a.get(), buf, 1, 0).get(),
                       std::errc::invalid_seek);
  });
  EXPECT_FALSE(is_nonblocking(f.fd.get()));
}

// readv/writev on a pipe wait for readiness like read/write.
TEST_P(IoOps, VectoredIoOnAPipeWaitsForData) {
  fd_pair p = make_pipe();
  rescuer r(10s, [&] { plain_write_all(p.b.get(), "!!!!!!", 6); });
  run([&] {
    char x[3] = {}, y[3] = {};
    iovec in[2] = {{x, 3}, {y, 3}};
    auto f = weft::io::readv(p.a.get(), in, 2);
    peer writer = spawn_peer([&] {
      peer_sleep(30ms);
      if (on_worker()) {
        char a[] = "abc", b[] = "def";
        iovec out[2] = {{a, 3}, {b, 3}};
        EXPECT_EQ(weft::io::writev(p.b.get(), out, 2).get(), 6u);
      } else {
        plain_write_all(p.b.get(), "abcdef", 6);
      }
    });
    EXPECT_EQ(f.get(), 6u);
    EXPECT_EQ(std::string(x, 3) + std::string(y, 3), "abcdef");
    writer.join();
  });
  EXPECT_FALSE(r.fired());
}

// ------------------------------------------------------------- datagrams

TEST_P(IoOps, UdpSendtoRecvfrom) {
  sockaddr_in a_addr{}, b_addr{};
  unique_fd a = udp_socket(&a_addr);
  unique_fd b = udp_socket(&b_addr);
  rescuer r(10s, [&] {
    ::sendto(a.get(), "!", 1, 0, reinterpret_cast<sockaddr*>(&b_addr), sizeof b_addr);
  });
  run([&] {
    EXPECT_EQ(weft::io::sendto(a.get(), "one", 3, 0, reinterpret_cast<sockaddr*>(&b_addr),
                               sizeof b_addr)
                  .get(),
              3u);
    char buf[64] = {};
    sockaddr_in from{};
    socklen_t from_len = sizeof from;
    EXPECT_EQ(weft::io::recvfrom(b.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from),
                                 &from_len)
                  .get(),
              3u);
    EXPECT_EQ(std::string(buf, 3), "one");
    EXPECT_EQ(from_len, sizeof(sockaddr_in));
    EXPECT_EQ(from.sin_port, a_addr.sin_port);
    EXPECT_EQ(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    // A pending recvfrom completed by a later datagram; message boundaries kept.
    auto f = weft::io::recvfrom(b.get(), buf, sizeof buf);  // addr/addrlen null
    peer sender = spawn_peer([&] {
      peer_sleep(30ms);
      if (on_worker()) {
        weft::io::sendto(a.get(), "two", 3, 0, reinterpret_cast<sockaddr*>(&b_addr), sizeof b_addr)
            .get();
        weft::io::sendto(a.get(), "three", 5, 0, reinterpret_cast<sockaddr*>(&b_addr),
                         sizeof b_addr)
            .get();
      } else {
        ASSERT_EQ(::sendto(a.get(), "two", 3, 0, reinterpret_cast<sockaddr*>(&b_addr),
                           sizeof b_addr), 3);
        ASSERT_EQ(::sendto(a.get(), "three", 5, 0, reinterpret_cast<sockaddr*>(&b_addr),
                           sizeof b_addr), 5);
      }
    });
    EXPECT_EQ(f.get(), 3u);
    EXPECT_EQ(std::string(buf, 3), "two");
    sender.join();
    EXPECT_EQ(weft::io::recvfrom(b.get(), buf, sizeof buf).get(), 5u);
    EXPECT_EQ(std::string(buf, 5), "three");
  });
  EXPECT_FALSE(r.fired());
}

TEST_P(IoOps, RecvfromCancelAndDeadline) {
  sockaddr_in a_addr{}, b_addr{};
  unique_fd a = udp_socket(&a_addr);
  unique_fd b = udp_socket(&b_addr);
  rescuer r(10s, [&] {
    ::sendto(a.get(), "!", 1, 0, reinterpret_cast<sockaddr*>(&b_addr), sizeof b_addr);
  });
  run([&] {
    char buf[16];
    sockaddr_in from{};
    socklen_t from_len = sizeof from;
    auto f = weft::io::recvfrom(b.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from),
                                &from_len);
    f.cancel();
    std::error_code ec;
    EXPECT_EQ(f.get(ec), 0u);
    EXPECT_ERRC(ec, std::errc::operation_canceled);
    EXPECT_THROWS_ERRC(weft::io::recvfrom(b.get(), buf, sizeof buf).get_for(50ms),
                       std::errc::timed_out);
    // Nothing lost: the next datagram is received whole.
    ASSERT_EQ(::sendto(a.get(), "after", 5, 0, reinterpret_cast<sockaddr*>(&b_addr),
                       sizeof b_addr), 5);
    EXPECT_EQ(weft::io::recvfrom(b.get(), buf, sizeof buf).get(), 5u);
    EXPECT_EQ(std::string(buf, 5), "after");
  });
  EXPECT_FALSE(r.fired());
}

// sendmsg/recvmsg with two iovecs and a descriptor passed with SCM_RIGHTS
// over an AF_UNIX datagram socketpair.
TEST_P(IoOps, UnixDatagramSendmsgRecvmsgPassesADescriptor) {
  fd_pair s = make_socketpair(SOCK_DGRAM);
  fd_pair p = make_pipe();
  run([&] {
    char h[] = "head", t[] = "tail";
    iovec out[2] = {{h, 4}, {t, 4}};
    alignas(cmsghdr) char ctl_out[CMSG_SPACE(sizeof(int))] = {};
    msghdr m{};
    m.msg_iov = out;
    m.msg_iovlen = 2;
    m.msg_control = ctl_out;
    m.msg_controllen = sizeof ctl_out;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    const int passed = p.b.get();
    std::memcpy(CMSG_DATA(c), &passed, sizeof passed);
    EXPECT_EQ(weft::io::sendmsg(s.a.get(), &m).get(), 8u);

    char buf[16] = {};
    iovec in{buf, sizeof buf};
    alignas(cmsghdr) char ctl_in[CMSG_SPACE(sizeof(int))] = {};
    msghdr r{};
    r.msg_iov = &in;
    r.msg_iovlen = 1;
    r.msg_control = ctl_in;
    r.msg_controllen = sizeof ctl_in;
    EXPECT_EQ(weft::io::recvmsg(s.b.get(), &r, MSG_CMSG_CLOEXEC).get(), 8u);
    EXPECT_EQ(std::string(buf, 8), "headtail");
    EXPECT_EQ(r.msg_flags & MSG_CTRUNC, 0);
    cmsghdr* rc = CMSG_FIRSTHDR(&r);
    ASSERT_NE(rc, nullptr);
    ASSERT_EQ(rc->cmsg_type, SCM_RIGHTS);
    int got = -1;
    std::memcpy(&got, CMSG_DATA(rc), sizeof got);
    unique_fd received(got);
    ASSERT_TRUE(received);
    EXPECT_NE(got, passed);
    EXPECT_TRUE(is_cloexec(got));
    // The received descriptor is the pipe's write end.
    EXPECT_EQ(weft::io::write(received.get(), "via", 3).get(), 3u);
    char via[4] = {};
    EXPECT_EQ(weft::io::read(p.a.get(), via, sizeof via).get(), 3u);
    EXPECT_EQ(std::string(via, 3), "via");
  });
}

// ------------------------------------------------------------- shutdown

TEST_P(IoOps, ShutdownWriteGivesThePeerEndOfFile) {
  fd_pair s = make_socketpair();
  rescuer r(10s, [&] { ::shutdown(s.a.get(), SHUT_RDWR); });
  run([&] {
    peer reader = spawn_peer([&] {
      char buf[8];
      if (on_worker()) {
        EXPECT_EQ(weft::io::recv(s.b.get(), buf, sizeof buf).get(), 2u);
        EXPECT_EQ(weft::io::recv(s.b.get(), buf, sizeof buf).get(), 0u) << "EOF after SHUT_WR";
      } else {
        EXPECT_EQ(plain_read_exact(s.b.get(), buf, sizeof buf, 10s), 2u);
      }
    });
    EXPECT_EQ(weft::io::send(s.a.get(), "hi", 2).get(), 2u);
    weft::io::sleep_for(30ms).get();  // let the reader block in recv
    weft::io::shutdown(s.a.get(), SHUT_WR);
    reader.join();
    // Sending after SHUT_WR: EPIPE, never SIGPIPE.
    EXPECT_THROWS_ERRC(weft::io::send(s.a.get(), "x", 1).get(), std::errc::broken_pipe);
  });
  EXPECT_FALSE(r.fired());
  std::error_code ec;
  weft::io::shutdown(-1, SHUT_WR, ec);
  EXPECT_ERRC(ec, std::errc::bad_file_descriptor);
  fd_pair p = make_pipe();
  EXPECT_THROWS_ERRC(weft::io::shutdown(p.a.get(), SHUT_RD), std::errc::not_a_socket);
}

// ------------------------------------------------------------- validation

TEST_P(IoOps, InvalidArgumentsCompleteAtOnce) {
  fd_pair p = make_pipe();
  fd_pair s = make_socketpair(SOCK_DGRAM);
  run([&] {
    char buf[4];
    iovec iov{buf, sizeof buf};
    msghdr m{};
    const auto bad_fd = std::errc::bad_file_descriptor;
    const auto inval = std::errc::invalid_argument;
    EXPECT_THROWS_ERRC(weft::io::wait_readable(-1).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::wait_writable(-1).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::wait_readable(unused_fd_number()).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::pread(-1, buf, 1, 0).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::pwrite(-1, buf, 1, 0).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::readv(-1, &iov, 1).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::writev(-1, &iov, 1).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::fsync(-1).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::fdatasync(-1).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::recvfrom(-1, buf, 1).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::sendto(-1, buf, 1, 0, nullptr, 0).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::recvmsg(-1, &m).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::sendmsg(-1, &m).get(), bad_fd);
    // Wrong direction, as read/write.
    EXPECT_THROWS_ERRC(weft::io::readv(p.b.get(), &iov, 1).get(), bad_fd);
    EXPECT_THROWS_ERRC(weft::io::writev(p.a.get(), &iov, 1).get(), bad_fd);

    EXPECT_THROWS_ERRC(weft::io::pread(p.a.get(), nullptr, 1, 0).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::pwrite(p.b.get(), buf, 1, -1).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::pread(p.a.get(), buf, 1, -5).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::pread(p.a.get(), buf, static_cast<std::size_t>(-1), 0).get(),
                       inval);
    EXPECT_THROWS_ERRC(weft::io::readv(p.a.get(), &iov, -1).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::writev(p.b.get(), &iov, IOV_MAX + 1).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::readv(p.a.get(), nullptr, 1).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::recvfrom(s.a.get(), nullptr, 4).get(), inval);
    sockaddr_in addr{};
    EXPECT_THROWS_ERRC(
        weft::io::recvfrom(s.a.get(), buf, 4, 0, reinterpret_cast<sockaddr*>(&addr), nullptr).get(),
        inval);
    EXPECT_THROWS_ERRC(weft::io::sendto(s.a.get(), nullptr, 4, 0, nullptr, 0).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::sendto(s.a.get(), buf, 4, 0, nullptr, sizeof addr).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::recvmsg(s.a.get(), nullptr).get(), inval);
    EXPECT_THROWS_ERRC(weft::io::sendmsg(s.a.get(), nullptr).get(), inval);
    // Zero-length and empty vectors are fine.
    EXPECT_EQ(weft::io::writev(p.b.get(), nullptr, 0).get(), 0u);
  });
}

// ------------------------------------------------------------- runtime shutdown

TEST_P(IoOps, RuntimeShutdownCancelsPendingWaitsAndDatagrams) {
  fd_pair p = make_pipe();
  sockaddr_in addr{};
  unique_fd u = udp_socket(&addr);
  weft::options o = options();
  o.shutdown_grace = 200ms;
  std::atomic<int> started{0}, wait_canceled{0}, recv_canceled{0};
  auto rtp = std::make_unique<weft::runtime>(o);
  (void)rtp->async([&] {
    ++started;
    std::error_code ec;
    weft::io::wait_readable(p.a.get()).get(ec);
    if (ec == std::errc::operation_canceled) ++wait_canceled;
  });
  (void)rtp->async([&] {
    ++started;
    char buf[8];
    std::error_code ec;
    weft::io::recvfrom(u.get(), buf, sizeof buf).get(ec);
    if (ec == std::errc::operation_canceled) ++recv_canceled;
  });
  // The blocking backend runs one blocking operation per worker at a time.
  const int expect_started = blocking() ? std::min(2, static_cast<int>(workers())) : 2;
  ASSERT_TRUE(weft_test::spin_until([&] { return started.load() >= expect_started; }));
  const auto t0 = clk::now();
  rtp.reset();
  EXPECT_EQ(wait_canceled.load(), 1);
  EXPECT_EQ(recv_canceled.load(), 1);
  EXPECT_LT(clk::now() - t0, 10s + timing_slack());
}

WEFT_IO_INSTANTIATE(IoOps);
// Without try-first every operation goes to the backend: on io_uring, its
// native opcodes (SENDMSG/RECVMSG for sendto/recvfrom too, POLL_ADD, READV...).
WEFT_IO_INSTANTIATE_NO_TRY_FIRST(IoOps);

}  // namespace
}  // namespace weft_io_test
