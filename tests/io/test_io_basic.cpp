// weft::io basics on every backend: each operation on pipes, socketpairs,
// regular files, eventfd and timerfd; partial transfers; end of file; the
// io_future interface.
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoBasic : public IoTest {};

// ------------------------------------------------------------- identity

TEST_P(IoBasic, BackendNameMatchesOption) {
  std::string name;
  run([&] { name = weft::io::backend_name(); });
  EXPECT_EQ(name, backend_string(param().backend));
}

// ------------------------------------------------------------- pipes

TEST_P(IoBasic, PipeWriteThenRead) {
  fd_pair p = make_pipe();
  run([&] {
    const char msg[] = "hello, weft";
    weft::io::io_future<std::size_t> wf = weft::io::write(p.b.get(), msg, sizeof msg);
    EXPECT_TRUE(wf.valid());
    EXPECT_EQ(wf.get(), sizeof msg);
    EXPECT_FALSE(wf.valid());
    char buf[64] = {};
    auto rf = weft::io::read(p.a.get(), buf, sizeof buf);
    // A partial read: 64 bytes asked, 12 available.
    EXPECT_EQ(rf.get(), sizeof msg);
    EXPECT_STREQ(buf, msg);
  });
}

TEST_P(IoBasic, SpanOverloads) {
  fd_pair p = make_pipe();
  run([&] {
    std::vector<std::byte> out(100);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::byte(i);
    EXPECT_EQ(weft::io::write(p.b.get(), std::span<const std::byte>(out)).get(), 100u);
    std::vector<std::byte> in(100);
    EXPECT_EQ(weft::io::read(p.a.get(), std::span<std::byte>(in)).get(), 100u);
    EXPECT_EQ(in, out);
  });
}

TEST_P(IoBasic, ZeroLengthTransfers) {
  fd_pair p = make_pipe();
  ASSERT_EQ(::write(p.b.get(), "x", 1), 1);  // so a read-readiness wait cannot hang
  run([&] {
    char c = 0;
    EXPECT_EQ(weft::io::write(p.b.get(), &c, 0).get(), 0u);
    EXPECT_EQ(weft::io::read(p.a.get(), &c, 0).get(), 0u);
    // A null buffer is fine with a zero length.
    EXPECT_EQ(weft::io::read(p.a.get(), nullptr, 0).get(), 0u);
    EXPECT_EQ(weft::io::write(p.b.get(), nullptr, 0).get(), 0u);
  });
  EXPECT_EQ(bytes_available(p.a.get()), 1);  // untouched
}

TEST_P(IoBasic, DescriptorIsSwitchedToNonBlocking) {
  // io.hpp: "File descriptors used with weft::io are switched to O_NONBLOCK
  // (the epoll backend needs it; the others do not care)". io_uring without
  // io_try_first leaves the flags alone (it never makes a non-blocking call).
  if (param().backend == weft::io_backend::io_uring && !param().try_first)
    GTEST_SKIP() << "io_uring without io_try_first does not switch descriptors to O_NONBLOCK";
  fd_pair p = make_pipe();
  ASSERT_FALSE(is_nonblocking(p.b.get()));
  run([&] { EXPECT_EQ(weft::io::write(p.b.get(), "abc", 3).get(), 3u); });
  EXPECT_TRUE(is_nonblocking(p.b.get())) << "io.hpp: descriptors used with weft::io are "
                                            "switched to O_NONBLOCK";
}

TEST_P(IoBasic, PartialReadReturnsWhatIsAvailable) {
  fd_pair s = make_socketpair();
  run([&] {
    EXPECT_EQ(weft::io::send(s.b.get(), "0123456789", 10).get(), 10u);
    std::vector<char> buf(1 << 16);
    std::size_t n = weft::io::recv(s.a.get(), buf.data(), buf.size()).get();
    EXPECT_EQ(n, 10u);
    EXPECT_EQ(std::string(buf.data(), n), "0123456789");
    // And a read smaller than what is queued takes only its share.
    EXPECT_EQ(weft::io::send(s.b.get(), "abcdef", 6).get(), 6u);
    EXPECT_EQ(weft::io::read(s.a.get(), buf.data(), 4).get(), 4u);
    EXPECT_EQ(std::string(buf.data(), 4), "abcd");
    EXPECT_EQ(weft::io::read(s.a.get(), buf.data(), 100).get(), 2u);
    EXPECT_EQ(std::string(buf.data(), 2), "ef");
  });
}

// A single write larger than the socket buffer while nobody reads: the
// descriptor is non-blocking, so like write(2) it transfers what fits and
// returns a short count.
TEST_P(IoBasic, PartialWriteWhenBufferFills) {
  // O_NONBLOCK from the start: not every backend switches it (see above).
  fd_pair s = make_socketpair(SOCK_STREAM | SOCK_NONBLOCK);
  set_socket_buffers(s.a.get(), 4096);
  set_socket_buffers(s.b.get(), 4096);
  const std::size_t total = 1 << 20;
  std::vector<unsigned char> data = pattern(total, 1);
  std::vector<unsigned char> got(total);
  std::size_t first = 0;
  std::atomic<bool> drained{false};
  // If the write waited for the whole buffer, drain after 5 s so the test
  // fails instead of hanging.
  rescuer r(5s, [&] {
    plain_read_exact(s.b.get(), got.data(), total);
    drained = true;
  });
  run([&] { first = weft::io::write(s.a.get(), data.data(), total).get(); });
  r.disarm();
  EXPECT_FALSE(r.fired()) << "write waited for the peer instead of returning a partial count";
  EXPECT_GT(first, 0u);
  EXPECT_LT(first, total);
  if (!r.fired()) {
    ASSERT_EQ(plain_read_exact(s.b.get(), got.data(), first), first);
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + first, data.begin()));
  }
}

// Writes far more than the pipe capacity from one task while another reads
// with a small buffer: every transfer may be partial, the bytes arrive intact
// and in order.
TEST_P(IoBasic, PartialTransfersThroughSmallPipe) {
  fd_pair p = make_pipe();
  ASSERT_GE(::fcntl(p.b.get(), F_SETPIPE_SZ, 4096), 4096);
  const std::size_t total = scaled(1 << 20, 256 << 10);
  std::vector<unsigned char> data = pattern(total, 2);
  std::vector<unsigned char> got(total);
  std::size_t writes = 0, reads = 0, max_read = 0;
  run([&] {
    peer reader = spawn_peer([&] {
      std::size_t off = 0;
      while (off < total) {
        std::size_t n = on_worker() ? weft::io::read(p.a.get(), got.data() + off,
                                                     std::min<std::size_t>(1000, total - off))
                                          .get()
                                    : plain_read_some(p.a.get(), got.data() + off,
                                                      std::min<std::size_t>(1000, total - off));
        ASSERT_GT(n, 0u) << "early EOF at " << off;
        max_read = std::max(max_read, n);
        off += n;
        ++reads;
      }
    });
    std::size_t off = 0;
    while (off < total) {
      std::size_t n = weft::io::write(p.b.get(), data.data() + off, total - off).get();
      ASSERT_GT(n, 0u);
      ASSERT_LE(n, total - off);
      off += n;
      ++writes;
    }
    reader.join();
  });
  EXPECT_TRUE(got == data) << "bytes corrupted or reordered";
  EXPECT_GE(reads, total / 1000);
  EXPECT_LE(max_read, 1000u);
  RecordProperty("writes", static_cast<int>(writes));
}

TEST_P(IoBasic, ReadExactAndWriteAllThroughSmallSocketBuffers) {
  fd_pair s = make_socketpair();
  set_socket_buffers(s.a.get(), 4096);
  set_socket_buffers(s.b.get(), 4096);
  const std::size_t total = scaled(4 << 20, 1 << 20);
  std::vector<unsigned char> data = pattern(total, 3);
  std::vector<unsigned char> got(total);
  run([&] {
    peer writer = spawn_peer([&] { peer_write_all(s.b.get(), data.data(), total); });
    EXPECT_EQ(weft::io::read_exact(s.a.get(), got.data(), total), total);
    writer.join();
  });
  EXPECT_TRUE(got == data);
}

TEST_P(IoBasic, ReadExactStopsAtEof) {
  fd_pair p = make_pipe();
  ASSERT_EQ(::write(p.b.get(), "0123456789", 10), 10);
  p.b.reset();
  run([&] {
    char buf[100];
    EXPECT_EQ(weft::io::read_exact(p.a.get(), buf, sizeof buf), 10u);
    EXPECT_EQ(weft::io::read_exact(p.a.get(), buf, sizeof buf), 0u);
  });
}

// ------------------------------------------------------------- end of file

TEST_P(IoBasic, EofAfterWriterCloses) {
  fd_pair p = make_pipe();
  run([&] {
    EXPECT_EQ(weft::io::write(p.b.get(), "abc", 3).get(), 3u);
    p.b.reset();
    char buf[16];
    EXPECT_EQ(weft::io::read(p.a.get(), buf, sizeof buf).get(), 3u);
    EXPECT_EQ(weft::io::read(p.a.get(), buf, sizeof buf).get(), 0u);
    std::error_code ec;
    EXPECT_EQ(weft::io::read(p.a.get(), buf, sizeof buf).get(ec), 0u);
    EXPECT_FALSE(ec) << "end of file is not an error";
  });
}

TEST_P(IoBasic, EofOnSocketShutdown) {
  fd_pair s = make_socketpair();
  run([&] {
    EXPECT_EQ(weft::io::send(s.b.get(), "xy", 2).get(), 2u);
    ASSERT_EQ(::shutdown(s.b.get(), SHUT_WR), 0);
    char buf[16];
    EXPECT_EQ(weft::io::recv(s.a.get(), buf, sizeof buf).get(), 2u);
    EXPECT_EQ(weft::io::recv(s.a.get(), buf, sizeof buf).get(), 0u);
  });
}

// A read waiting for data completes with 0 when the writer closes.
TEST_P(IoBasic, PendingReadCompletesAtEof) {
  fd_pair p = make_pipe();
  fd_pair s = make_socketpair();
  rescuer r(10s, [&] {
    p.b.reset();
    ::shutdown(s.b.get(), SHUT_RDWR);
  });
  run([&] {
    // A plain thread closes: no worker is needed for it.
    auto t0 = clk::now();  // before the peer starts its sleep
    std::thread closer([&] {
      std::this_thread::sleep_for(50ms);
      p.b.reset();
      s.b.reset();
    });
    char buf[16];
    std::size_t n1 = weft::io::read(p.a.get(), buf, sizeof buf).get();
    std::size_t n2 = weft::io::recv(s.a.get(), buf, sizeof buf).get();
    auto elapsed = clk::now() - t0;
    closer.join();
    EXPECT_EQ(n1, 0u);
    EXPECT_EQ(n2, 0u);
    EXPECT_GE(elapsed, 40ms);
  });
  EXPECT_FALSE(r.fired());
}

// ------------------------------------------------------------- would-block

// Reads on an empty non-blocking socket suspend (the socket is already
// O_NONBLOCK, so a naive read would fail with EAGAIN), then complete when the
// data arrives later.
TEST_P(IoBasic, ReadOnEmptyNonBlockingSocketWaitsForData) {
  fd_pair s = make_socketpair(SOCK_STREAM | SOCK_NONBLOCK);
  ASSERT_TRUE(is_nonblocking(s.a.get()));
  run([&] {
    auto t0 = clk::now();  // before the peer starts its sleep
    std::thread sender([&] {
      std::this_thread::sleep_for(100ms);
      plain_write_all(s.b.get(), "later", 5);
    });
    char buf[16] = {};
    std::error_code ec;
    std::size_t n = weft::io::recv(s.a.get(), buf, sizeof buf).get(ec);
    auto elapsed = clk::now() - t0;
    sender.join();
    EXPECT_FALSE(ec) << ec.message() << " (EAGAIN must never escape)";
    EXPECT_EQ(n, 5u);
    EXPECT_EQ(std::string(buf, n), "later");
    EXPECT_GE(elapsed, 90ms);
  });
}

TEST_P(IoBasic, WriteOnFullNonBlockingSocketWaitsForSpace) {
  fd_pair s = make_socketpair(SOCK_STREAM | SOCK_NONBLOCK);
  set_socket_buffers(s.a.get(), 4096);
  set_socket_buffers(s.b.get(), 4096);
  // Fill a's send path completely.
  std::size_t filled = 0;
  std::vector<char> junk(4096, 'j');
  for (;;) {
    ssize_t n = ::send(s.a.get(), junk.data(), junk.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    filled += static_cast<std::size_t>(n);
  }
  ASSERT_GT(filled, 0u);
  run([&] {
    auto t0 = clk::now();  // before the peer starts its sleep
    std::thread drainer([&] {
      std::this_thread::sleep_for(100ms);
      std::vector<char> sink(filled + 3);
      plain_read_exact(s.b.get(), sink.data(), filled + 3);
      EXPECT_EQ(std::string(sink.data() + filled, 3), "end");
    });
    std::error_code ec;
    std::size_t n = weft::io::send(s.a.get(), "end", 3).get(ec);
    auto elapsed = clk::now() - t0;
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(n, 3u);
    EXPECT_GE(elapsed, 90ms);
    drainer.join();
  });
}

// With one worker, a task whose read must wait does not keep the worker: a
// task spawned after it runs and supplies the data (latency hiding).
TEST_P(IoBasic, PendingReadDoesNotHoldTheWorker) {
  if (blocking())
    GTEST_SKIP() << "the blocking backend runs the read on the worker by design "
                    "(Cilk-F baseline); latency hiding is not its contract";
  fd_pair s = make_socketpair();
  rescuer r(10s, [&] { plain_write_all(s.b.get(), "R", 1); });
  run([&] {
    char c = 0;
    auto rf = weft::io::read(s.a.get(), &c, 1);
    std::atomic<int> progress{0};
    auto writer = weft::async([&] {
      progress = 1;
      weft::io::write(s.b.get(), "W", 1).get();
    });
    EXPECT_EQ(rf.get(), 1u);
    EXPECT_EQ(c, 'W');
    writer.get();
    EXPECT_EQ(progress.load(), 1);
  });
  EXPECT_FALSE(r.fired());
}

// A read and a write pending on the same descriptor at the same time (the
// readiness backends must track both interests on one fd).
TEST_P(IoBasic, ReadAndWritePendingOnSameDescriptor) {
  fd_pair s = make_socketpair(SOCK_STREAM | SOCK_NONBLOCK);
  set_socket_buffers(s.a.get(), 4096);
  set_socket_buffers(s.b.get(), 4096);
  std::size_t filled = 0;
  std::vector<char> junk(4096, 'j');
  for (;;) {
    ssize_t n = ::send(s.a.get(), junk.data(), junk.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    filled += static_cast<std::size_t>(n);
  }
  std::atomic<bool> write_done{false};
  std::atomic<std::size_t> written{0};
  run([&] {
    std::thread other([&] {
      std::this_thread::sleep_for(100ms);
      std::vector<char> sink(1 << 16);
      std::size_t got = 0;
      // Drain everything a writes (the filler and the pending write).
      while (!write_done.load() || got < filled + written.load()) {
        pollfd pf{s.b.get(), POLLIN, 0};
        if (::poll(&pf, 1, 20) > 0) {
          ssize_t n = ::read(s.b.get(), sink.data(), sink.size());
          if (n > 0) got += static_cast<std::size_t>(n);
        }
      }
      std::this_thread::sleep_for(50ms);
      plain_write_all(s.b.get(), "!", 1);
    });
    char c = 0;
    std::vector<char> msg(100, 'm');
    auto wf = weft::io::write(s.a.get(), msg.data(), msg.size());
    // Both pending at once (on the blocking backend the write has completed
    // before write() returns, and the read would block until '!', which the
    // other thread sends only after the write is known: start it later).
    weft::io::io_future<std::size_t> rf;
    if (!blocking()) rf = weft::io::read(s.a.get(), &c, 1);
    std::error_code wec, rec;
    std::size_t w = wf.get(wec);
    written = w;
    write_done = true;
    if (blocking()) rf = weft::io::read(s.a.get(), &c, 1);
    std::size_t r = rf.get(rec);
    other.join();
    EXPECT_FALSE(wec) << wec.message();
    EXPECT_FALSE(rec) << rec.message();
    EXPECT_GT(w, 0u);
    EXPECT_EQ(r, 1u);
    EXPECT_EQ(c, '!');
  });
}

// Several reads pending on one descriptor: each completes with its own byte.
TEST_P(IoBasic, ManyReadersOnOneDescriptor) {
  fd_pair s = make_socketpair();
  // The blocking backend can only have as many reads in progress as workers.
  const int readers = blocking() ? static_cast<int>(workers()) : 8;
  std::vector<char> got(readers, 0);
  run([&] {
    std::vector<weft::future<void>> fs;
    for (int i = 0; i < readers; ++i)
      fs.push_back(weft::async([&, i] { EXPECT_EQ(weft::io::read(s.a.get(), &got[i], 1).get(), 1u); }));
    std::thread writer([&] {
      std::this_thread::sleep_for(50ms);
      std::string all;
      for (int i = 0; i < readers; ++i) all.push_back(static_cast<char>('a' + i));
      plain_write_all(s.b.get(), all.data(), all.size());
    });
    for (auto& f : fs) f.get();
    writer.join();
  });
  std::multiset<char> m(got.begin(), got.end());
  std::multiset<char> want;
  for (int i = 0; i < readers; ++i) want.insert(static_cast<char>('a' + i));
  EXPECT_EQ(m, want);
}

TEST_P(IoBasic, SendRecvWithFlags) {
  fd_pair s = make_socketpair();
  run([&] {
    EXPECT_EQ(weft::io::send(s.b.get(), "abcdef", 6, MSG_DONTWAIT).get(), 6u);
    char buf[16] = {};
    EXPECT_EQ(weft::io::recv(s.a.get(), buf, 3, MSG_PEEK).get(), 3u);
    EXPECT_EQ(std::string(buf, 3), "abc");
    EXPECT_EQ(weft::io::recv(s.a.get(), buf, 6, MSG_WAITALL).get(), 6u)
        << "MSG_PEEK must not have consumed the data";
    EXPECT_EQ(std::string(buf, 6), "abcdef");
  });
}

// recv(2) with MSG_WAITALL waits until the whole length has arrived ("the
// semantics follow the system calls"); the data comes in two pieces here.
TEST_P(IoBasic, RecvWaitAllWaitsForTheFullLength) {
  fd_pair s = make_socketpair();
  run([&] {
    ASSERT_EQ(::write(s.b.get(), "abc", 3), 3);
    std::thread later([&] {
      std::this_thread::sleep_for(50ms);
      plain_write_all(s.b.get(), "def", 3);
    });
    char buf[8] = {};
    std::error_code ec;
    std::size_t n = weft::io::recv(s.a.get(), buf, 6, MSG_WAITALL).get(ec);
    later.join();
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(n, 6u) << "MSG_WAITALL returned a short count (the backend's MSG_DONTWAIT "
                        "attempt overrides it)";
  });
}

TEST_P(IoBasic, DatagramSocketPreservesBoundaries) {
  fd_pair s = make_socketpair(SOCK_DGRAM);
  run([&] {
    EXPECT_EQ(weft::io::send(s.b.get(), "one", 3).get(), 3u);
    EXPECT_EQ(weft::io::send(s.b.get(), "three", 5).get(), 5u);
    char buf[16];
    EXPECT_EQ(weft::io::recv(s.a.get(), buf, sizeof buf).get(), 3u);
    EXPECT_EQ(weft::io::recv(s.a.get(), buf, sizeof buf).get(), 5u);
    EXPECT_EQ(std::string(buf, 5), "three");
  });
}

// ------------------------------------------------------------- regular files

struct temp_file {
  std::string path;
  unique_fd fd;
  temp_file() {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/weft_io_test_XXXXXX";
    int f = ::mkostemp(path.data(), O_CLOEXEC);
    if (f < 0) throw std::system_error(errno, std::system_category(), "mkostemp");
    fd.reset(f);
  }
  ~temp_file() { ::unlink(path.c_str()); }
};

TEST_P(IoBasic, RegularFileUsesTheFilePosition) {
  temp_file f;
  run([&] {
    EXPECT_EQ(weft::io::write(f.fd.get(), "abc", 3).get(), 3u);
    EXPECT_EQ(weft::io::write(f.fd.get(), "def", 3).get(), 3u);
    EXPECT_EQ(::lseek(f.fd.get(), 0, SEEK_CUR), 6) << "writes must advance the file position";
    ASSERT_EQ(::lseek(f.fd.get(), 0, SEEK_SET), 0);
    char buf[16] = {};
    EXPECT_EQ(weft::io::read(f.fd.get(), buf, 3).get(), 3u);
    EXPECT_EQ(std::string(buf, 3), "abc");
    EXPECT_EQ(weft::io::read(f.fd.get(), buf, sizeof buf).get(), 3u);
    EXPECT_EQ(std::string(buf, 3), "def");
    EXPECT_EQ(weft::io::read(f.fd.get(), buf, sizeof buf).get(), 0u) << "end of file";
  });
  char check[8] = {};
  ASSERT_EQ(::pread(f.fd.get(), check, sizeof check, 0), 6);
  EXPECT_EQ(std::string(check, 6), "abcdef");
}

TEST_P(IoBasic, RegularFileLargeRoundTrip) {
  temp_file f;
  const std::size_t total = scaled(8 << 20, 2 << 20);
  std::vector<unsigned char> data = pattern(total, 4);
  std::vector<unsigned char> got(total);
  run([&] {
    weft::io::write_all(f.fd.get(), data.data(), total);
    ASSERT_EQ(::lseek(f.fd.get(), 0, SEEK_SET), 0);
    EXPECT_EQ(weft::io::read_exact(f.fd.get(), got.data(), total), total);
    char c;
    EXPECT_EQ(weft::io::read(f.fd.get(), &c, 1).get(), 0u);
  });
  EXPECT_TRUE(got == data);
  struct stat st {};
  ASSERT_EQ(::fstat(f.fd.get(), &st), 0);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), total);
}

TEST_P(IoBasic, RegularFileAppendMode) {
  temp_file f;
  ASSERT_EQ(::write(f.fd.get(), "head", 4), 4);
  unique_fd app(::open(f.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  ASSERT_TRUE(app);
  run([&] {
    EXPECT_EQ(weft::io::write(app.get(), "-tail", 5).get(), 5u);
    EXPECT_EQ(weft::io::write(app.get(), "!", 1).get(), 1u);
  });
  char buf[16] = {};
  ASSERT_EQ(::pread(f.fd.get(), buf, sizeof buf, 0), 10);
  EXPECT_EQ(std::string(buf, 10), "head-tail!");
}

TEST_P(IoBasic, ManyTasksReadOneFileConcurrently) {
  temp_file f;
  const std::size_t chunk = 4096, chunks = 64;
  std::vector<unsigned char> data = pattern(chunk * chunks, 5);
  ASSERT_EQ(::write(f.fd.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  std::atomic<int> ok{0};
  run([&] {
    std::vector<weft::future<void>> fs;
    for (std::size_t i = 0; i < chunks; ++i) {
      fs.push_back(weft::async([&, i] {
        // Each task its own descriptor (the file position is per descriptor).
        unique_fd fd(::open(f.path.c_str(), O_RDONLY | O_CLOEXEC));
        ASSERT_TRUE(fd);
        ASSERT_EQ(::lseek(fd.get(), static_cast<off_t>(i * chunk), SEEK_SET),
                  static_cast<off_t>(i * chunk));
        std::vector<unsigned char> buf(chunk);
        ASSERT_EQ(weft::io::read_exact(fd.get(), buf.data(), chunk), chunk);
        if (std::equal(buf.begin(), buf.end(), data.begin() + i * chunk)) ++ok;
      }));
    }
    for (auto& x : fs) x.get();
  });
  EXPECT_EQ(ok.load(), static_cast<int>(chunks));
}

TEST_P(IoBasic, DevNullAndDevZero) {
  unique_fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  unique_fd zero(::open("/dev/zero", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(null);
  ASSERT_TRUE(zero);
  run([&] {
    std::vector<char> buf(1 << 16, 'x');
    EXPECT_EQ(weft::io::write(null.get(), buf.data(), buf.size()).get(), buf.size());
    EXPECT_EQ(weft::io::read(null.get(), buf.data(), buf.size()).get(), 0u);
    EXPECT_EQ(weft::io::read(zero.get(), buf.data(), buf.size()).get(), buf.size());
    EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](char c) { return c == 0; }));
  });
}

// ------------------------------------------------------------- eventfd / timerfd

TEST_P(IoBasic, EventfdReadWaitsForSignal) {
  unique_fd efd(::eventfd(0, EFD_CLOEXEC));
  ASSERT_TRUE(efd);
  rescuer r(10s, [&] {
    std::uint64_t one = 1;
    (void)!::write(efd.get(), &one, 8);
  });
  run([&] {
    auto t0 = clk::now();  // before the peer starts its sleep
    peer signaller = spawn_peer([&] {
      peer_sleep(50ms);
      std::uint64_t v = 5;
      if (on_worker()) {
        EXPECT_EQ(weft::io::write(efd.get(), &v, sizeof v).get(), 8u);
      } else {
        EXPECT_EQ(::write(efd.get(), &v, sizeof v), 8);
      }
    });
    std::uint64_t v = 0;
    EXPECT_EQ(weft::io::read(efd.get(), &v, sizeof v).get(), 8u);
    EXPECT_GE(clk::now() - t0, 40ms);
    EXPECT_EQ(v, 5u);
    signaller.join();
    // Already signalled: completes at once.
    std::uint64_t three = 3;
    ASSERT_EQ(::write(efd.get(), &three, 8), 8);
    EXPECT_EQ(weft::io::read(efd.get(), &v, sizeof v).get(), 8u);
    EXPECT_EQ(v, 3u);
  });
  EXPECT_FALSE(r.fired());
}

TEST_P(IoBasic, EventfdShortReadIsInvalid) {
  unique_fd efd(::eventfd(1, EFD_CLOEXEC));
  ASSERT_TRUE(efd);
  run([&] {
    std::uint32_t small = 0;
    std::error_code ec;
    weft::io::read(efd.get(), &small, sizeof small).get(ec);
    EXPECT_ERRC(ec, std::errc::invalid_argument);
  });
}

TEST_P(IoBasic, TimerfdOneShot) {
  unique_fd tfd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  ASSERT_TRUE(tfd);
  run([&] {
    auto t0 = clk::now();
    itimerspec its{};
    its.it_value.tv_nsec = 30'000'000;
    ASSERT_EQ(::timerfd_settime(tfd.get(), 0, &its, nullptr), 0);
    std::uint64_t expirations = 0;
    EXPECT_EQ(weft::io::read(tfd.get(), &expirations, 8).get(), 8u);
    auto elapsed = clk::now() - t0;
    EXPECT_EQ(expirations, 1u);
    EXPECT_GE(elapsed, 30ms);
    EXPECT_LT(elapsed, 30ms + timing_slack());
  });
}

TEST_P(IoBasic, TimerfdPeriodic) {
  unique_fd tfd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  ASSERT_TRUE(tfd);
  run([&] {
    itimerspec its{};
    its.it_value.tv_nsec = 5'000'000;
    its.it_interval.tv_nsec = 5'000'000;
    auto t0 = clk::now();
    ASSERT_EQ(::timerfd_settime(tfd.get(), 0, &its, nullptr), 0);
    std::uint64_t total = 0;
    while (total < 10) {
      std::uint64_t n = 0;
      ASSERT_EQ(weft::io::read(tfd.get(), &n, 8).get(), 8u);
      ASSERT_GE(n, 1u);
      total += n;
    }
    EXPECT_GE(clk::now() - t0, 50ms);
    itimerspec off{};
    ::timerfd_settime(tfd.get(), 0, &off, nullptr);
  });
}

// ------------------------------------------------------------- io_future API

TEST_P(IoBasic, DefaultFutureHasNoState) {
  run([&] {
    weft::io::io_future<std::size_t> f;
    EXPECT_FALSE(f.valid());
    auto no_state = [](auto&& fn) {
      try {
        fn();
      } catch (const std::future_error& e) {
        return e.code() == std::future_errc::no_state;
      }
      return false;
    };
    EXPECT_TRUE(no_state([&] { (void)f.get(); }));
    EXPECT_TRUE(no_state([&] { std::error_code ec; (void)f.get(ec); }));
    EXPECT_TRUE(no_state([&] { (void)f.is_ready(); }));
    EXPECT_TRUE(no_state([&] { f.wait(); }));
    EXPECT_TRUE(no_state([&] { (void)f.wait_for(1ms); }));
    EXPECT_TRUE(no_state([&] { f.cancel(); }));
    EXPECT_TRUE(no_state([&] { (void)f.get_for(1ms); }));
    weft::io::io_future<void> v;
    EXPECT_FALSE(v.valid());
    EXPECT_TRUE(no_state([&] { v.get(); }));
    weft::io::io_future<int> a;
    EXPECT_TRUE(no_state([&] { (void)a.get(); }));
  });
}

TEST_P(IoBasic, FutureMoveAndSecondGet) {
  fd_pair p = make_pipe();
  run([&] {
    auto f = weft::io::write(p.b.get(), "abcd", 4);
    weft::io::io_future<std::size_t> g(std::move(f));
    EXPECT_FALSE(f.valid());
    EXPECT_TRUE(g.valid());
    weft::io::io_future<std::size_t> h;
    h = std::move(g);
    EXPECT_FALSE(g.valid());
    h.wait();
    EXPECT_TRUE(h.is_ready());
    EXPECT_EQ(h.wait_for(0ms), std::future_status::ready);
    EXPECT_EQ(h.get(), 4u);
    EXPECT_FALSE(h.valid());
    EXPECT_THROW((void)h.get(), std::future_error);
    // Move-assigning over a live future releases the old one.
    char buf[4];
    auto r1 = weft::io::read(p.a.get(), buf, 2);
    r1.wait();
    auto r2 = weft::io::read(p.a.get(), buf + 2, 2);
    r2.wait();
    r1 = std::move(r2);
    EXPECT_EQ(r1.get(), 2u);
    EXPECT_EQ(std::string(buf, 4), "abcd");
  });
}

// Dropping a pending read's future does not cancel it: it completes in the
// background and consumes the data.
TEST_P(IoBasic, DroppedPendingReadCompletesInBackground) {
  fd_pair s = make_socketpair();
  run([&] {
    std::thread sender([&] {
      std::this_thread::sleep_for(50ms);
      plain_write_all(s.b.get(), "z", 1);
    });
    {
      // The buffer must outlive the operation: static storage.
      static char sink[4];
      auto f = weft::io::read(s.a.get(), sink, 1);
      (void)f;
    }
    sender.join();
  });
  auto deadline = clk::now() + 10s;
  while (bytes_available(s.a.get()) != 0 && clk::now() < deadline) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(bytes_available(s.a.get()), 0) << "the dropped read did not consume the byte";
  // Nothing orders the background completion (on an I/O thread) before this
  // thread closes the socket; joining the backend's threads does.
  destroy_runtime();
}

TEST_P(IoBasic, ManySequentialOperations) {
  fd_pair s = make_socketpair();
  const int rounds = static_cast<int>(scaled(20000, 3000));
  run([&] {
    for (int i = 0; i < rounds; ++i) {
      unsigned char out[3] = {static_cast<unsigned char>(i), static_cast<unsigned char>(i >> 8), 7};
      ASSERT_EQ(weft::io::send(s.a.get(), out, 3).get(), 3u);
      unsigned char in[3] = {};
      ASSERT_EQ(weft::io::read_exact(s.b.get(), in, 3), 3u);
      ASSERT_EQ(std::memcmp(in, out, 3), 0) << "round " << i;
    }
  });
}

WEFT_IO_INSTANTIATE(IoBasic);
WEFT_IO_INSTANTIATE_NO_TRY_FIRST(IoBasic);

// Not parameterised: the automatic backend is epoll on this machine.
TEST(IoBackendSelection, AutomaticIsEpoll) {
  weft::options o;
  o.workers = 1;
  weft::runtime rt(o);
  std::string name = rt.run([] { return std::string(weft::io::backend_name()); });
  EXPECT_EQ(name, "epoll");
}

}  // namespace
}  // namespace weft_io_test
