// fib_server — a TCP server that computes Fibonacci numbers in parallel while
// its connections wait on the network (Concurrent Cilk §6.4).
//
// Protocol, one request per line ("\r\n" is accepted too):
//   fib N   ->  "N fib(N)\n"       0 <= N <= 50, computed with fork_join
//   quit    ->  "bye\n", then the server stops accepting and exits once the
//               open connections are finished
//   other   ->  "error <reason>\n"
//
// The server runs entirely in weft tasks: one task accepts connections with
// weft::io::accept and spawns a task per connection, which reads requests with
// weft::io::recv and answers with weft::io::send. Every wait suspends only the
// task, so a handful of workers serve any number of idle connections while
// the others compute. Requests may arrive split across TCP segments or
// several in one segment; a connection ends at EOF (the client closed).
//
// By default the binary also runs the client driver: C client threads (plain
// std::threads with blocking sockets — deliberately outside the runtime, so
// the server is checked by an independent peer and the workers only serve)
// each send R requests, pipelined in batches of 1 to 4, some split mid-line,
// check every answer against a table, and the throughput is reported. Then
// the driver sends "quit", which cancels the server's pending accept.
//
//   fib_server [--clients C] [--requests R] [--fib N] [--base B] [--workers P]
//              [--backend automatic|epoll|io_uring|blocking]
//              [--policy proactive|parsimonious] [--port P] [--serve]
//
//   --serve   only run the server (e.g. with --port 9000, then
//             `printf 'fib 30\nquit\n' | nc 127.0.0.1 9000`)
//
// Exits 0 only if every answer was right and the server shut down cleanly.
// Note: with --backend blocking an accept or recv blocks its worker (the
// acceptor alone keeps one), so connections are served in turn by the others
// and one worker is not enough: the server would never read a request.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <weft/io.hpp>
#include <weft/weft.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr int kMaxN = 50;                // larger requests would take minutes
constexpr std::size_t kMaxLine = 1024;   // a longer unterminated line ends the connection

// ---- the computation --------------------------------------------------------

std::uint64_t fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

std::uint64_t fib(int n, int base) {
  if (n < 2 || n < base) return fib_serial(n);  // below the cutoff a task costs more than it saves
  auto [a, b] = weft::fork_join([=] { return fib(n - 1, base); }, [=] { return fib(n - 2, base); });
  return a + b;
}

// The clients' answer key, computed independently of the server (iteratively).
std::array<std::uint64_t, kMaxN + 1> fib_table() {
  std::array<std::uint64_t, kMaxN + 1> t{};
  t[1] = 1;
  for (int i = 2; i <= kMaxN; ++i) t[i] = t[i - 1] + t[i - 2];
  return t;
}

std::string errno_text(const char* what, int e) {
  return std::string(what) + ": " + std::strerror(e);
}

// ---- the server (runs in weft tasks) ----------------------------------------

class server {
 public:
  server(int listen_fd, int base) : base_(base), listen_fd_(listen_fd) {}

  struct counters {
    std::uint64_t connections, requests, partial_reads, errors;
  };
  counters stats() const {
    return {connections_.load(), requests_.load(), partial_reads_.load(), errors_.load()};
  }

  // The acceptor task: accepts until stop(), spawning one task per connection,
  // then closes the listening socket and waits for the open connections.
  void run() {
    {
      std::lock_guard lock(mutex_);
      accept_blocks_worker_ = std::string_view(weft::io::backend_name()) == "blocking";
    }
    weft::task_group connections;
    for (;;) {
      weft::io::io_future<int> accepted = weft::io::accept(listen_fd_);
      // Publish the pending accept so that stop() can cancel it. The lock is
      // never held across a suspension; concurrent wait() and cancel() on one
      // future are fine (both only read it), get() is not, hence the lock.
      {
        std::lock_guard lock(mutex_);
        if (stopping_) accepted.cancel();
        pending_accept_ = &accepted;
      }
      accepted.wait();  // suspends this task, not the worker
      std::error_code ec;
      int fd;
      bool stopping;
      {
        std::lock_guard lock(mutex_);
        pending_accept_ = nullptr;
        fd = accepted.get(ec);
        stopping = stopping_;
      }
      // Cancelled by stop(), or (blocking backend) failed on the socket that
      // stop() shut down.
      if (ec == std::errc::operation_canceled || (ec && stopping)) break;
      if (ec) {
        // The listening socket stays usable after these; anything else is fatal.
        if (ec.value() == ECONNABORTED || ec.value() == EMFILE || ec.value() == ENFILE ||
            ec.value() == ENOBUFS || ec.value() == ENOMEM || ec.value() == EPROTO) {
          std::fprintf(stderr, "fib_server: accept: %s\n", ec.message().c_str());
          ++errors_;
          continue;
        }
        close_listener();
        throw std::system_error(ec, "accept");
      }
      ++connections_;
      connections.spawn([this, fd] { serve(fd); });
    }
    close_listener();  // nothing is pending on it any more
    connections.sync();
  }

  // Stops the acceptor. Any thread or task.
  void stop() {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (pending_accept_) pending_accept_->cancel();
    // The blocking backend runs accept() inside weft::io::accept itself, so
    // there is never a pending operation to cancel: the acceptor's worker sits
    // in the system call. Shutting the listening socket down makes that
    // accept (and any later one) fail with EINVAL.
    if (accept_blocks_worker_ && listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  }

 private:
  void close_listener() {
    std::lock_guard lock(mutex_);  // stop() must never shut down a reused descriptor
    ::close(std::exchange(listen_fd_, -1));
  }

  // One connection: read, answer every complete line, repeat until EOF.
  void serve(int fd) {
    struct closer {
      int fd;
      ~closer() { ::close(fd); }
    } close_at_exit{fd};
    // Small answers must leave at once: with Nagle's algorithm a second reply
    // waits for the client's (delayed) ACK of the first.
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    std::string in, out;
    char chunk[4096];
    try {
      for (;;) {
        std::size_t n = weft::io::recv(fd, chunk, sizeof chunk).get();
        if (n == 0) return;  // EOF: the client closed; an unfinished line is dropped
        in.append(chunk, n);

        // Answer every complete line; a line split across segments stays in
        // `in` until the rest arrives.
        bool quit = false;
        std::size_t start = 0;
        for (std::size_t nl; !quit && (nl = in.find('\n', start)) != std::string::npos;
             start = nl + 1) {
          quit = answer(std::string_view(in).substr(start, nl - start), out);
        }
        in.erase(0, start);
        if (!in.empty()) ++partial_reads_;
        const bool too_long = in.size() > kMaxLine;
        if (too_long) out += "error line too long\n";
        send_all(fd, out);
        out.clear();
        if (quit) stop();          // "quit" stops the whole server
        if (quit || too_long) return;
      }
    } catch (const std::system_error& e) {
      // A reset connection must not take the server down: log and drop it.
      std::fprintf(stderr, "fib_server: connection %d: %s\n", fd, e.what());
      ++errors_;
    }
  }

  // Appends the reply to one request line to `out`; returns true for "quit".
  bool answer(std::string_view line, std::string& out) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line == "quit") {
      out += "bye\n";
      return true;
    }
    constexpr std::string_view verb = "fib ";
    if (line.substr(0, verb.size()) != verb) {
      out += "error unknown request\n";
      return false;
    }
    std::string_view arg = line.substr(verb.size());
    int n = -1;
    auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
    if (ec != std::errc{} || end != arg.data() + arg.size() || n < 0 || n > kMaxN) {
      out += "error expected fib N with 0 <= N <= " + std::to_string(kMaxN) + "\n";
      return false;
    }
    out += std::to_string(n) + ' ' + std::to_string(fib(n, base_)) + '\n';
    ++requests_;
    return false;
  }

  // weft::io::send may transfer part of the buffer; loop until all is sent.
  // (send, not write: a client that went away gives EPIPE, never SIGPIPE.)
  static void send_all(int fd, std::string_view data) {
    while (!data.empty()) data.remove_prefix(weft::io::send(fd, data.data(), data.size()).get());
  }

  const int base_;
  std::mutex mutex_;
  int listen_fd_;  // -1 once closed; written by the acceptor under mutex_
  bool stopping_ = false;                                  // guarded by mutex_
  bool accept_blocks_worker_ = false;                      // guarded by mutex_
  weft::io::io_future<int>* pending_accept_ = nullptr;     // guarded by mutex_
  std::atomic<std::uint64_t> connections_{0}, requests_{0}, partial_reads_{0}, errors_{0};
};

// A listening socket on 127.0.0.1:port (0: any free port).
int listen_on(std::uint16_t port, std::uint16_t& bound) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, SOMAXCONN) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int e = errno;
    ::close(fd);
    throw std::system_error(e, std::system_category(), "bind/listen");
  }
  bound = ntohs(addr.sin_port);
  return fd;
}

// ---- the client driver (plain threads, blocking sockets) --------------------

// A blocking client connection with a line reader. Every call throws
// std::runtime_error on failure; the 30 s timeouts turn a hung server into an
// error instead of a hung test.
class client {
 public:
  explicit client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(errno_text("socket", errno));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // keep split sends split
    timeval tv{30, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      int e = errno;
      ::close(fd_);
      throw std::runtime_error(errno_text("connect", e));
    }
  }
  ~client() { ::close(fd_); }
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  void send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(errno_text("send", errno));
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  // Sends data in two segments cut at `at`, pausing in between so that the
  // server most likely reads the first part alone.
  void send_split(std::string_view data, std::size_t at) {
    send(data.substr(0, at));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    send(data.substr(at));
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  // The next line without its '\n'; false at EOF.
  bool read_line(std::string& line) {
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        line.assign(buf_, 0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      char chunk[4096];
      ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(errno_text("recv", errno));
      if (n == 0) {
        if (!buf_.empty()) throw std::runtime_error("EOF after a partial line '" + buf_ + "'");
        return false;
      }
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  std::string expect_line() {
    std::string line;
    if (!read_line(line)) throw std::runtime_error("unexpected EOF from the server");
    return line;
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

void expect_eq(const std::string& got, const std::string& want, const char* what) {
  if (got != want)
    throw std::runtime_error(std::string(what) + ": got '" + got + "', expected '" + want + "'");
}

// Edge cases, one connection each, run before the load. Returns the number of
// fib requests answered (the server counts them too).
int protocol_checks(std::uint16_t port, const std::array<std::uint64_t, kMaxN + 1>& table) {
  auto answer_line = [&](int n) { return std::to_string(n) + ' ' + std::to_string(table[n]); };
  {  // one byte at a time: every read ends mid-line
    client c(port);
    for (char ch : std::string_view("fib 10\n")) {
      c.send(std::string_view(&ch, 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    expect_eq(c.expect_line(), answer_line(10), "byte-at-a-time request");
  }
  {  // several requests in one segment, malformed ones, CRLF
    client c(port);
    c.send("fib 3\nhello\nfib 99\nfib -1\nfib 4\r\n\n");
    expect_eq(c.expect_line(), answer_line(3), "pipelined request 1");
    expect_eq(c.expect_line().substr(0, 6), "error ", "unknown request");
    expect_eq(c.expect_line().substr(0, 6), "error ", "out-of-range request");
    expect_eq(c.expect_line().substr(0, 6), "error ", "negative request");
    expect_eq(c.expect_line(), answer_line(4), "CRLF request");
    expect_eq(c.expect_line().substr(0, 6), "error ", "empty request");
  }
  {  // EOF in the middle of a request: no answer, the server closes its side
    client c(port);
    c.send("fib 7\nfib 8");
    c.shutdown_write();
    expect_eq(c.expect_line(), answer_line(7), "request before EOF");
    std::string line;
    if (c.read_line(line)) throw std::runtime_error("answer to an unfinished request: " + line);
  }
  {  // a client that connects and leaves at once
    client c(port);
  }
  return 4;  // fib 10, fib 3, fib 4, fib 7
}

struct load_result {
  std::uint64_t answered = 0;
  std::string error;  // empty if every answer was right
};

// One client: R requests in pipelined batches of 1-4, every fifth batch split
// mid-line across two segments, every answer checked.
void run_client(std::uint16_t port, unsigned id, unsigned requests, int fib_n,
                const std::array<std::uint64_t, kMaxN + 1>& table, load_result& result) try {
  client c(port);
  std::vector<int> batch;
  std::string out, line;
  for (unsigned r = 0, round = 0; r < requests; ++round) {
    unsigned size = std::min(1 + (id + round) % 4, requests - r);
    batch.clear();
    out.clear();
    for (unsigned j = 0; j < size; ++j, ++r) {
      int n = std::max(0, fib_n - static_cast<int>((id + r) % 4));  // vary the answers
      batch.push_back(n);
      out += "fib " + std::to_string(n) + '\n';
    }
    if ((id + round) % 5 == 0)
      c.send_split(out, out.size() / 2 + 1);  // cut inside a line
    else
      c.send(out);
    for (int n : batch) {
      line = c.expect_line();
      expect_eq(line, std::to_string(n) + ' ' + std::to_string(table[n]), "answer");
      ++result.answered;
    }
  }
} catch (const std::exception& e) {
  result.error = "client " + std::to_string(id) + ": " + e.what();
}

// ---- command line -----------------------------------------------------------

struct config {
  unsigned clients = 8;
  unsigned requests = 200;
  int fib_n = 25;
  int base = 20;
  std::uint16_t port = 0;
  bool serve_only = false;
  weft::options rt;
};

[[noreturn]] void usage(int status) {
  std::fprintf(status ? stderr : stdout,
               "usage: fib_server [--clients C] [--requests R] [--fib N] [--base B]\n"
               "                  [--workers P] [--backend automatic|epoll|io_uring|blocking]\n"
               "                  [--policy proactive|parsimonious] [--port P] [--serve]\n"
               "defaults: --clients 8 --requests 200 --fib 25 --base 20 --port 0 (any),\n"
               "workers from WEFT_WORKERS or the core count\n");
  std::exit(status);
}

template <class T>
T parse_number(std::string_view flag, std::string_view text, T lo, T hi) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < lo || v > hi) {
    std::fprintf(stderr, "fib_server: %.*s wants an integer in [%lld, %lld], not '%.*s'\n",
                 static_cast<int>(flag.size()), flag.data(), static_cast<long long>(lo),
                 static_cast<long long>(hi), static_cast<int>(text.size()), text.data());
    usage(2);
  }
  return v;
}

config parse(int argc, char** argv) {
  config c;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i], value;
    if (arg == "-h" || arg == "--help") usage(0);
    if (arg == "--serve") {
      c.serve_only = true;
      continue;
    }
    // Accept both "--flag value" and "--flag=value".
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "fib_server: %s needs a value\n", argv[i]);
      usage(2);
    }
    if (arg == "--clients") {
      c.clients = parse_number<unsigned>(arg, value, 0, 10'000);
    } else if (arg == "--requests") {
      c.requests = parse_number<unsigned>(arg, value, 0, 10'000'000);
    } else if (arg == "--fib") {
      c.fib_n = parse_number<int>(arg, value, 0, kMaxN);
    } else if (arg == "--base") {
      c.base = parse_number<int>(arg, value, 2, 60);
    } else if (arg == "--workers") {
      c.rt.workers = parse_number<unsigned>(arg, value, 1, 1024);
    } else if (arg == "--port") {
      c.port = parse_number<std::uint16_t>(arg, value, 0, 65535);
    } else if (arg == "--backend") {
      if (value == "automatic") c.rt.io = weft::io_backend::automatic;
      else if (value == "epoll") c.rt.io = weft::io_backend::epoll;
      else if (value == "io_uring") c.rt.io = weft::io_backend::io_uring;
      else if (value == "blocking") c.rt.io = weft::io_backend::blocking;
      else usage(2);
    } else if (arg == "--policy") {
      if (value == "proactive") c.rt.policy = weft::steal_policy::proactive;
      else if (value == "parsimonious") c.rt.policy = weft::steal_policy::parsimonious;
      else usage(2);
    } else {
      std::fprintf(stderr, "fib_server: unknown option '%.*s'\n", static_cast<int>(arg.size()),
                   arg.data());
      usage(2);
    }
  }
  return c;
}

// Exit status ctest reports as "skipped" (SKIP_RETURN_CODE).
constexpr int kSkipped = 77;

// Builds the runtime and its I/O backend (which the runtime creates lazily, at
// the first I/O call); returns the backend's name. An explicitly requested
// io_uring backend on a kernel that refuses io_uring (too old, or disabled by
// sysctl or seccomp) is not a failure of this example: say so and exit with
// kSkipped.
const char* start_runtime(std::optional<weft::runtime>& rt, const weft::options& opts) {
  rt.emplace(opts);
  try {
    return rt->run([] { return weft::io::backend_name(); });
  } catch (const std::system_error& e) {
    if (opts.io != weft::io_backend::io_uring) throw;
    std::printf("fib_server: skipped, io_uring is not available: %s\n", e.what());
    std::fflush(stdout);
    std::exit(kSkipped);
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const config cfg = parse(argc, argv);
  const auto table = fib_table();

  std::uint16_t port = 0;
  const int listen_fd = listen_on(cfg.port, port);
  std::optional<weft::runtime> runtime;
  const char* backend = start_runtime(runtime, cfg.rt);
  weft::runtime& rt = *runtime;
  server srv(listen_fd, cfg.base);
  const char* policy =
      cfg.rt.policy == weft::steal_policy::parsimonious ? "parsimonious" : "proactive";

  if (cfg.serve_only) {
    std::printf("fib_server: listening on 127.0.0.1:%u (%u workers, backend %s, policy %s); "
                "send 'quit' to stop\n",
                port, rt.worker_count(), backend, policy);
    std::fflush(stdout);
    rt.run([&] { srv.run(); });
    auto s = srv.stats();
    std::printf("fib_server: %llu connections, %llu requests, %llu errors\n",
                static_cast<unsigned long long>(s.connections),
                static_cast<unsigned long long>(s.requests),
                static_cast<unsigned long long>(s.errors));
    return 0;
  }

  // The server runs in the runtime; this thread drives the clients.
  weft::future<void> server_done = rt.async([&] { srv.run(); });
  std::printf("fib_server: listening on 127.0.0.1:%u (%u workers, backend %s, policy %s)\n",
              port, rt.worker_count(), backend, policy);

  std::string failure;
  std::uint64_t expected_requests = 0, expected_connections = 0;
  double elapsed = 0;
  try {
    expected_requests += static_cast<std::uint64_t>(protocol_checks(port, table));
    expected_connections += 4;
    std::printf("protocol:   OK (byte-at-a-time, pipelined, malformed, CRLF, EOF mid-request, "
                "empty connection)\n");

    std::vector<load_result> results(cfg.clients);
    std::vector<std::thread> threads;
    auto t0 = std::chrono::steady_clock::now();
    for (unsigned id = 0; id < cfg.clients; ++id)
      threads.emplace_back(run_client, port, id, cfg.requests, cfg.fib_n, std::cref(table),
                           std::ref(results[id]));
    for (auto& t : threads) t.join();
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expected_connections += cfg.clients;

    std::uint64_t answered = 0;
    for (const auto& r : results) {
      answered += r.answered;
      if (!r.error.empty() && failure.empty()) failure = r.error;
    }
    expected_requests += answered;
    std::printf("load:       %u clients x %u requests of fib(%d..%d), base case %d: %llu answers "
                "in %.3f s = %.0f requests/s\n",
                cfg.clients, cfg.requests, std::max(0, cfg.fib_n - 3), cfg.fib_n, cfg.base,
                static_cast<unsigned long long>(answered), elapsed,
                elapsed > 0 ? static_cast<double>(answered) / elapsed : 0.0);

    // Clean shutdown over the wire: "quit" cancels the server's pending accept.
    client q(port);
    q.send("quit\n");
    expect_eq(q.expect_line(), "bye", "quit");
    ++expected_connections;
  } catch (const std::exception& e) {
    if (failure.empty()) failure = e.what();
    srv.stop();  // the driver failed: stop the server directly
  }

  // A server that does not stop would keep the runtime's destructor waiting.
  if (server_done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    std::fprintf(stderr, "fib_server: FAILED: the server did not shut down within 30 s\n");
    std::fflush(nullptr);
    std::_Exit(1);
  }
  server_done.get();
  auto s = srv.stats();
  std::printf("server:     %llu connections, %llu requests, %llu reads ended mid-line, "
              "%llu errors\n",
              static_cast<unsigned long long>(s.connections),
              static_cast<unsigned long long>(s.requests),
              static_cast<unsigned long long>(s.partial_reads),
              static_cast<unsigned long long>(s.errors));

  if (failure.empty() && (s.requests != expected_requests || s.connections != expected_connections ||
                          s.errors != 0)) {
    failure = "server counters: expected " + std::to_string(expected_connections) +
              " connections, " + std::to_string(expected_requests) + " requests, 0 errors";
  }
  if (!failure.empty()) {
    std::fprintf(stderr, "fib_server: FAILED: %s\n", failure.c_str());
    return 1;
  }
  std::printf("shutdown:   clean\nOK\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fib_server: error: %s\n", e.what());
  return 1;
}
