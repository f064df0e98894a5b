// weft-bench — io: raw I/O latency. A 64-byte message goes back and forth R
// times between two parties over a loopback connection (a Unix socketpair
// and a TCP pair on 127.0.0.1 with TCP_NODELAY):
//   threads   two std::threads, plain blocking read(2)/write(2)
//   weft      two tasks (the branches of one fork_join) using
//             weft::io::write_all / read_exact (io futures, get() suspends)
//             on each backend: blocking (each task holds a worker), epoll
//             with the worker's own first attempt or with every operation
//             through the I/O thread (Cilk-L), io_uring likewise
// Every message carries its round number, which the echo must return: a lost,
// duplicated or reordered message fails the row. Each variant has its own
// descriptor pair (weft switches its descriptors to O_NONBLOCK).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <weft/io.hpp>
#include <weft/weft.hpp>

#include "bench.hpp"
#include "io_common.hpp"
#include "stats.hpp"

namespace weft_bench {
namespace {

constexpr std::size_t kMsg = 64;

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::system_category(), what);
}

struct fd_pair {
  int a = -1, b = -1;
  fd_pair() = default;
  fd_pair(const fd_pair&) = delete;
  fd_pair& operator=(const fd_pair&) = delete;
  ~fd_pair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
};

enum class transport { unix_pair, tcp };

void make_pair(transport t, fd_pair& p) {
  if (t == transport::unix_pair) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) fail("socketpair");
    p.a = sv[0];
    p.b = sv[1];
    return;
  }
  int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0) fail("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(l, 1) != 0 ||
      ::getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int e = errno;
    ::close(l);
    errno = e;
    fail("listen on 127.0.0.1");
  }
  p.a = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p.a < 0 || ::connect(p.a, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int e = errno;
    ::close(l);
    errno = e;
    fail("connect to 127.0.0.1");
  }
  p.b = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  int e = errno;
  ::close(l);
  errno = e;
  if (p.b < 0) fail("accept");
  int one = 1;
  ::setsockopt(p.a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(p.b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void fill(unsigned char* m, std::uint64_t round) {
  std::memset(m, static_cast<int>(round & 0xff), kMsg);
  std::memcpy(m, &round, sizeof round);
}
bool check(const unsigned char* m, std::uint64_t round) {
  unsigned char want[kMsg];
  fill(want, round);
  return std::memcmp(m, want, kMsg) == 0;
}

// --- threads, blocking system calls

void read_full(int fd, unsigned char* p, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t r = ::read(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("read");
    if (r == 0) throw std::runtime_error("unexpected end of stream");
    done += static_cast<std::size_t>(r);
  }
}
void write_full(int fd, const unsigned char* p, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    ssize_t r = ::write(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("write");
    done += static_cast<std::size_t>(r);
  }
}

bool threads_once(const fd_pair& p, long rounds) {
  std::exception_ptr pong_error;
  std::thread pong([&] {
    try {
      unsigned char m[kMsg];
      for (long i = 0; i < rounds; ++i) {
        read_full(p.b, m, kMsg);
        write_full(p.b, m, kMsg);
      }
    } catch (...) {
      pong_error = std::current_exception();
      ::shutdown(p.b, SHUT_RDWR);  // let the ping side out
    }
  });
  bool right = true;
  std::exception_ptr ping_error;
  try {
    unsigned char m[kMsg];
    for (long i = 0; i < rounds; ++i) {
      fill(m, static_cast<std::uint64_t>(i));
      write_full(p.a, m, kMsg);
      read_full(p.a, m, kMsg);
      if (!check(m, static_cast<std::uint64_t>(i))) right = false;
    }
  } catch (...) {
    ping_error = std::current_exception();
    ::shutdown(p.a, SHUT_RDWR);  // let the pong thread out
  }
  pong.join();
  if (ping_error) std::rethrow_exception(ping_error);
  if (pong_error) std::rethrow_exception(pong_error);
  return right;
}

// --- weft tasks, io futures

bool weft_once(weft::runtime& rt, const fd_pair& p, long rounds) {
  return rt.run([&] {
    bool right = true;
    weft::fork_join(
        [&] {
          unsigned char m[kMsg];
          for (long i = 0; i < rounds; ++i) {
            fill(m, static_cast<std::uint64_t>(i));
            weft::io::write_all(p.a, m, kMsg);
            if (weft::io::read_exact(p.a, m, kMsg) != kMsg)
              throw std::runtime_error("unexpected end of stream");
            if (!check(m, static_cast<std::uint64_t>(i))) right = false;
          }
        },
        [&] {
          unsigned char m[kMsg];
          for (long i = 0; i < rounds; ++i) {
            if (weft::io::read_exact(p.b, m, kMsg) != kMsg)
              throw std::runtime_error("unexpected end of stream");
            weft::io::write_all(p.b, m, kMsg);
          }
        });
    return right;
  });
}

struct lat_spec {
  std::string name;
  bool weft;
  unsigned workers;
  weft::io_backend io;
  bool try_first;
};

void measure_transport(const config& cfg, report& rep, transport t, long rounds, unsigned P) {
  const std::string tname = t == transport::tcp ? "TCP loopback" : "unix socketpair";
  const std::string base_params = tname + ", " + std::to_string(rounds) + " x 64 B";
  watchdog_scope wd("io: latency " + base_params, std::chrono::seconds(cfg.quick ? 120 : 300));
  using weft::io_backend;
  std::vector<lat_spec> specs = {
      {"rtt threads, blocking read/write", false, 2, io_backend::blocking, false},
      {"rtt weft blocking backend", true, P, io_backend::blocking, true},
      {"rtt weft epoll, try first", true, P, io_backend::epoll, true},
      {"rtt weft epoll, try first", true, 1, io_backend::epoll, true},
      {"rtt weft epoll_threads, I/O thread (no try)", true, P, io_backend::epoll_threads, false},
      {"rtt weft io_uring, try first", true, P, io_backend::io_uring, true},
      {"rtt weft io_uring, try first", true, 1, io_backend::io_uring, true},
      {"rtt weft io_uring, no try", true, P, io_backend::io_uring, false},
  };
  std::string why;
  const bool uring = io_uring_usable(&why);

  std::vector<std::unique_ptr<fd_pair>> pairs;
  std::vector<std::unique_ptr<weft::runtime>> rts;
  std::vector<io_variant> vs;
  std::vector<int> idx;
  for (const auto& s : specs) {
    if (s.io == io_backend::io_uring && !uring) {
      idx.push_back(-1);
      continue;
    }
    pairs.push_back(std::make_unique<fd_pair>());
    make_pair(t, *pairs.back());
    const fd_pair* p = pairs.back().get();
    io_variant v;
    v.name = s.name;
    if (!s.weft) {
      v.run = [p, rounds](double&) { return threads_once(*p, rounds); };
    } else {
      rts.push_back(std::make_unique<weft::runtime>(io_options(s.workers, s.io,
                                                               weft::steal_policy::proactive,
                                                               s.try_first)));
      weft::runtime* rt = rts.back().get();
      v.run = [rt, p, rounds](double&) { return weft_once(*rt, *p, rounds); };
    }
    idx.push_back(static_cast<int>(vs.size()));
    vs.push_back(std::move(v));
  }
  run_interleaved(cfg, vs);

  auto params_of = [&](const lat_spec& s) {
    return base_params + ", " + (s.weft ? workers_param(s.workers) : "2 threads");
  };
  const double us_per_rtt = 1e6 / static_cast<double>(rounds);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (idx[i] < 0) {
      rep.add_missing("io", specs[i].name, params_of(specs[i]),
                      "n/a (io_uring unavailable: " + why + ")");
      continue;
    }
    rep.add(io_row(specs[i].name, params_of(specs[i]), vs[static_cast<std::size_t>(idx[i])],
                   us_per_rtt, "us/rtt"));
  }
  const io_variant& threads = vs[0];
  for (std::size_t i = 1; i < specs.size(); ++i) {
    std::string name = specs[i].name.substr(4) + " / threads";  // drop "rtt "
    if (idx[i] < 0) {
      rep.add_missing("io", name, params_of(specs[i]), "n/a (io_uring unavailable: " + why + ")");
      continue;
    }
    add_paired_ratio(rep, name, params_of(specs[i]), vs[static_cast<std::size_t>(idx[i])], threads);
  }
}

}  // namespace

void run_io_latency(const config& cfg, report& rep) {
  const unsigned P = cfg.workers.back();
  const long rounds = cfg.quick ? 1000 : 5000;
  for (transport t : {transport::unix_pair, transport::tcp}) {
    try {
      measure_transport(cfg, rep, t, rounds, P);
    } catch (const std::exception& e) {
      rep.add_missing("io", "rtt", t == transport::tcp ? "TCP loopback" : "unix socketpair",
                      std::string("error: ") + e.what(), true);
    }
  }
}

}  // namespace weft_bench
