// weft-echo-server — the weft server of weft-bench's `server` section
// (bench/server.cpp): a TCP echo server on 127.0.0.1.
//
//   weft-echo-server --backend NAME --workers N
//
// Listens on an ephemeral port and prints it on stdout (one line). One weft
// task accepts with weft::io::accept in a loop and spawns one task per
// connection, which echoes with weft::io::recv / weft::io::send (64 bytes at a
// time, partial sends completed) until the end of stream. A plain thread
// reads stdin; at its EOF (the benchmark closes the pipe to stop the server)
// the listener is shut down and the runtime destroyed, whose shutdown grace
// cancels the receives of connections still open. Exit status 0 on a clean
// shutdown, so the benchmark can tell a clean stop from a crash.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <system_error>

#include <weft/io.hpp>
#include <weft/weft.hpp>

namespace {

// Backend names. One line per name: the runtime's io_backend enum grows
// (e.g. epoll_threads) and the benchmark should follow with one line.
struct backend_name {
  const char* name;
  weft::io_backend value;
};
constexpr backend_name kBackends[] = {
    {"automatic", weft::io_backend::automatic},
    {"epoll", weft::io_backend::epoll},
    {"epoll_threads", weft::io_backend::epoll_threads},
    {"io_uring", weft::io_backend::io_uring},
    {"blocking", weft::io_backend::blocking},
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "weft-echo-server: %s\n", what.c_str());
  std::exit(2);
}

void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// Set by the stdin thread before it shuts the listener down; read by the
// accept loop after accept fails, to tell shutdown from a real error.
// release/acquire: nothing else is published through it, but it orders the
// flag before the shutdown(2) the accept loop observes.
std::atomic<bool> stopping{false};

// One connection: echo until the end of stream. Errors (a reset peer, the
// shutdown's operation_canceled) end the connection, never the server.
void serve(int fd) {
  unsigned char buf[64];
  try {
    for (;;) {
      std::size_t n = weft::io::recv(fd, buf, sizeof buf).get();
      if (n == 0) break;
      std::size_t done = 0;
      while (done < n) done += weft::io::send(fd, buf + done, n - done).get();
    }
  } catch (const std::system_error&) {
  }
  ::close(fd);
}

// The accept loop, a weft task. Returns once the listener is shut down and
// every connection task has finished.
void accept_loop(int listen_fd) {
  weft::task_group g;
  for (;;) {
    std::error_code ec;
    int c = weft::io::accept(listen_fd).get(ec);
    if (ec) {
      if (stopping.load(std::memory_order_acquire) ||
          ec == std::errc::operation_canceled)
        break;
      // EMFILE and friends: keep serving the connections we have. A short
      // pause so a persistent error does not spin a worker.
      std::fprintf(stderr, "weft-echo-server: accept: %s\n", ec.message().c_str());
      weft::io::sleep_for(std::chrono::milliseconds(10)).get(ec);
      continue;
    }
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    g.spawn([c] { serve(c); });
  }
  g.sync();
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "automatic";
  unsigned workers = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) {
      backend = argv[++i];
    } else if (a == "--workers" && i + 1 < argc) {
      workers = static_cast<unsigned>(std::atoi(argv[++i]));
    } else {
      die("usage: weft-echo-server --backend NAME --workers N");
    }
  }
  weft::options opts;
  bool known = false;
  for (const auto& b : kBackends) {
    if (backend == b.name) {
      opts.io = b.value;
      known = true;
    }
  }
  if (!known) die("unknown backend '" + backend + "'");
  if (workers == 0) die("--workers must be >= 1");
  opts.workers = workers;
  // At shutdown, connections still open (none in the benchmark: the load
  // generator closes them first) are cancelled after this grace.
  opts.shutdown_grace = std::chrono::milliseconds(200);
  raise_fd_limit();

  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) die(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  // A large backlog: the load generator opens up to 10,000 connections in
  // batches, and a full accept queue drops SYNs (a 1 s retransmit stall).
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(lfd, 4096) != 0 ||
      ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    die(std::string("listen on 127.0.0.1: ") + std::strerror(errno));

  try {
    weft::runtime rt(opts);
    auto done = rt.async([lfd] { accept_loop(lfd); });
    std::printf("%u\n", static_cast<unsigned>(ntohs(addr.sin_port)));
    std::fflush(stdout);

    // The main thread is the "plain thread" that watches stdin: it is not a
    // worker, so blocking here costs the runtime nothing.
    char buf[256];
    for (;;) {
      ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    stopping.store(true, std::memory_order_release);
    // Wakes a pending accept (epoll reports the listener readable, accept
    // then fails with EINVAL); a backend that is not woken by it has its
    // accept cancelled by the runtime's shutdown grace instead.
    ::shutdown(lfd, SHUT_RDWR);
    // Normally done at once (the load generator has closed its connections).
    // Otherwise ~runtime cancels what is left after the shutdown grace.
    if (done.wait_for(std::chrono::seconds(1)) == std::future_status::ready) done.get();
  } catch (const std::exception& e) {
    die(e.what());
  }
  ::close(lfd);
  return 0;
}
