// weft::io sockets: accept/connect on loopback TCP and AF_UNIX, and a
// loopback echo stress test with many clients, on every backend.
#include <sys/un.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoNet : public IoTest {};

TEST_P(IoNet, ConnectAcceptLoopback) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  ASSERT_NE(addr.sin_port, 0);
  unique_fd c = tcp_socket();
  run([&] {
    // Loopback completes the handshake without accept(): connect first.
    weft::io::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get();
    sockaddr_in peer_addr{};
    socklen_t len = sizeof peer_addr;
    unique_fd a(weft::io::accept(l.get(), reinterpret_cast<sockaddr*>(&peer_addr), &len).get());
    ASSERT_TRUE(a);
    EXPECT_EQ(len, sizeof(sockaddr_in));
    EXPECT_EQ(peer_addr.sin_family, AF_INET);
    EXPECT_EQ(peer_addr.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    EXPECT_EQ(peer_addr.sin_port, local_address(c.get()).sin_port);
    // accept4(SOCK_CLOEXEC | SOCK_NONBLOCK).
    EXPECT_TRUE(is_nonblocking(a.get()));
    EXPECT_TRUE(is_cloexec(a.get()));
    // Both directions.
    EXPECT_EQ(weft::io::send(c.get(), "ping", 4).get(), 4u);
    char buf[8] = {};
    EXPECT_EQ(weft::io::read_exact(a.get(), buf, 4), 4u);
    EXPECT_EQ(std::string(buf, 4), "ping");
    EXPECT_EQ(weft::io::write(a.get(), "pong", 4).get(), 4u);
    EXPECT_EQ(weft::io::read_exact(c.get(), buf, 4), 4u);
    EXPECT_EQ(std::string(buf, 4), "pong");
    // EOF when the accepted side closes.
    a.reset();
    EXPECT_EQ(weft::io::recv(c.get(), buf, sizeof buf).get(), 0u);
  });
}

// accept() waits for a client that connects later.
TEST_P(IoNet, PendingAcceptCompletesWhenClientConnects) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  rescuer r(10s, [&] {
    unique_fd c = tcp_socket();
    ::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  });
  run([&] {
    auto t0 = clk::now();  // before the peer starts its sleep
    peer client = spawn_peer([&] {
      peer_sleep(50ms);
      unique_fd c = tcp_socket();
      if (on_worker()) {
        weft::io::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get();
      } else {
        ASSERT_EQ(::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
      }
      peer_write_all(c.get(), "hello", 5);
    });
    unique_fd a(weft::io::accept(l.get()).get());  // addr/addrlen null
    EXPECT_GE(clk::now() - t0, 40ms);
    ASSERT_TRUE(a);
    char buf[8] = {};
    EXPECT_EQ(weft::io::read_exact(a.get(), buf, 5), 5u);
    EXPECT_EQ(std::string(buf, 5), "hello");
    client.join();
  });
  EXPECT_FALSE(r.fired());
}

// Many connections, accepted in order, each identified by what it sends.
TEST_P(IoNet, ManyConnectionsAndAccepts) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr, 256);
  const int n = 64;
  run([&] {
    std::vector<unique_fd> clients;
    for (int i = 0; i < n; ++i) {
      clients.push_back(tcp_socket());
      weft::io::connect(clients.back().get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get();
      int id = i;
      ASSERT_EQ(weft::io::send(clients.back().get(), &id, sizeof id).get(), sizeof id);
    }
    std::vector<bool> seen(n, false);
    for (int i = 0; i < n; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      unique_fd a(weft::io::accept(l.get(), reinterpret_cast<sockaddr*>(&ss), &len).get());
      ASSERT_TRUE(a);
      int id = -1;
      ASSERT_EQ(weft::io::read_exact(a.get(), &id, sizeof id), sizeof id);
      ASSERT_GE(id, 0);
      ASSERT_LT(id, n);
      EXPECT_FALSE(seen[id]);
      seen[id] = true;
    }
  });
}

// A non-blocking socket that weft::io::connect must finish (EINPROGRESS path)
// and a blocking one (weft switches it).
TEST_P(IoNet, ConnectOnNonBlockingSocket) {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  unique_fd c(fd);
  run([&] {
    std::error_code ec;
    weft::io::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get(ec);
    EXPECT_FALSE(ec) << ec.message();
    int err = -1;
    socklen_t len = sizeof err;
    ASSERT_EQ(::getsockopt(c.get(), SOL_SOCKET, SO_ERROR, &err, &len), 0);
    EXPECT_EQ(err, 0);
    sockaddr_in peer{};
    len = sizeof peer;
    EXPECT_EQ(::getpeername(c.get(), reinterpret_cast<sockaddr*>(&peer), &len), 0)
        << "connect completed but the socket is not connected";
    unique_fd a(weft::io::accept(l.get()).get());
    EXPECT_TRUE(a);
  });
}

TEST_P(IoNet, UnixDomainConnectAccept) {
  unique_fd l(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(l);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract namespace: no file to clean up.
  std::string name = "weft_io_test_" + std::to_string(::getpid()) + "_" +
                     std::to_string(reinterpret_cast<std::uintptr_t>(&addr));
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  socklen_t alen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(::bind(l.get(), reinterpret_cast<sockaddr*>(&addr), alen), 0);
  ASSERT_EQ(::listen(l.get(), 16), 0);
  run([&] {
    unique_fd c(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    weft::io::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), alen).get();
    sockaddr_un from{};
    socklen_t flen = sizeof from;
    unique_fd a(weft::io::accept(l.get(), reinterpret_cast<sockaddr*>(&from), &flen).get());
    ASSERT_TRUE(a);
    EXPECT_EQ(from.sun_family, AF_UNIX);
    EXPECT_EQ(weft::io::send(a.get(), "unix", 4).get(), 4u);
    char buf[4];
    EXPECT_EQ(weft::io::read_exact(c.get(), buf, 4), 4u);
    EXPECT_EQ(std::string(buf, 4), "unix");
  });
}

// ------------------------------------------------------------- echo stress
//
// A server task accepts `clients` connections and serves each with an echo
// task (recv, write_all back, until EOF). Each client sends `messages`
// messages of random sizes up to 64 KiB from one task while another task
// reads the echo back and checks every byte against the same generator.
// With the blocking backend every blocked operation holds a worker, so there
// the clients are plain threads and there are as many connections as
// workers (each echo task holds one worker for its connection's lifetime).

struct message_plan {
  std::vector<std::size_t> sizes;
  std::size_t total = 0;
  std::uint64_t seed = 0;
};

message_plan make_plan(int client, int messages, std::uint64_t seed) {
  message_plan p;
  p.seed = seed * 1000003u + static_cast<std::uint64_t>(client);
  std::mt19937_64 rng(p.seed);
  for (int m = 0; m < messages; ++m) {
    std::size_t sz = 1 + rng() % (64 * 1024);
    p.sizes.push_back(sz);
    p.total += sz;
  }
  return p;
}

TEST_P(IoNet, EchoStressManyClients) {
  const int clients = blocking() ? static_cast<int>(workers()) : static_cast<int>(scaled(32, 8));
  const int messages = static_cast<int>(scaled(200, 40));
  const std::uint64_t seed = 0x5eed0000u + static_cast<std::uint64_t>(clients);
  std::vector<message_plan> plans;
  for (int c = 0; c < clients; ++c) plans.push_back(make_plan(c, messages, seed));

  sockaddr_in addr{};
  unique_fd l = make_listener(&addr, 256);
  std::atomic<std::size_t> echoed{0};
  std::atomic<int> verified{0};
  const bool client_tasks = !blocking();

  auto client_body = [&](int c) {
    const message_plan& plan = plans[c];
    unique_fd s = tcp_socket();
    if (on_worker()) {
      weft::io::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr).get();
    } else {
      ASSERT_EQ(::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    }
    std::vector<unsigned char> stream = pattern(plan.total, plan.seed);
    auto reader = [&] {
      std::vector<unsigned char> buf(64 * 1024);
      std::size_t off = 0;
      while (off < plan.total) {
        std::size_t want = std::min(buf.size(), plan.total - off);
        std::size_t n = on_worker() ? weft::io::recv(s.get(), buf.data(), want).get()
                                    : plain_read_some(s.get(), buf.data(), want);
        ASSERT_GT(n, 0u) << "client " << c << ": early EOF at " << off << "/" << plan.total;
        ASSERT_TRUE(std::equal(buf.begin(), buf.begin() + n, stream.begin() + off))
            << "client " << c << ": corrupted echo at offset " << off;
        off += n;
      }
      ++verified;
    };
    auto writer = [&] {
      std::size_t off = 0;
      for (std::size_t sz : plan.sizes) {
        peer_write_all(s.get(), stream.data() + off, sz);
        off += sz;
      }
      ::shutdown(s.get(), SHUT_WR);
    };
    if (on_worker()) {
      weft::fork_join(writer, reader);
    } else {
      std::thread w(writer);
      reader();
      w.join();
    }
  };

  run(
      [&] {
        // Server: accept every client, one echo task per connection.
        auto server = weft::async([&] {
          std::vector<weft::future<void>> conns;
          for (int i = 0; i < clients; ++i) {
            int fd = weft::io::accept(l.get()).get();
            conns.push_back(weft::async([&, fd] {
              unique_fd conn(fd);
              std::vector<unsigned char> buf(64 * 1024);
              for (;;) {
                std::size_t n = weft::io::recv(conn.get(), buf.data(), buf.size()).get();
                if (n == 0) break;
                weft::io::write_all(conn.get(), buf.data(), n);
                echoed += n;
              }
            }));
          }
          for (auto& f : conns) f.get();
        });
        if (client_tasks) {
          std::vector<weft::future<void>> cs;
          for (int c = 0; c < clients; ++c) cs.push_back(weft::async(client_body, c));
          for (auto& f : cs) f.get();
        } else {
          // Joining a thread blocks the worker: wait for the server first
          // (with one worker it runs inline here), then join.
          std::vector<std::thread> cs;
          for (int c = 0; c < clients; ++c) cs.emplace_back(client_body, c);
          server.get();
          for (auto& t : cs) t.join();
        }
        if (server.valid()) server.get();
      },
      sanitizer_build ? std::chrono::seconds(240) : std::chrono::seconds(120));

  std::size_t expected = 0;
  for (auto& p : plans) expected += p.total;
  EXPECT_EQ(verified.load(), clients);
  EXPECT_EQ(echoed.load(), expected);
}

WEFT_IO_INSTANTIATE(IoNet);
WEFT_IO_INSTANTIATE_NO_TRY_FIRST(IoNet);

}  // namespace
}  // namespace weft_io_test
