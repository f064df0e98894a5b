// weft-bench — io: a compute server on loopback TCP (Concurrent Cilk §6.4, Table 3).
//
// Protocol: the client sends n (4 bytes), the server answers fib(n) (8 bytes).
// Five servers (Table 3's variants), each listening on its own 127.0.0.1 port:
//   weft      one task accepts with weft::io::accept and spawns a task per
//             connection; it receives with weft::io::recv, computes fib(n) in
//             parallel (fork_join down to a serial base case) and answers with
//             weft::io::send — "conc cilk/cilk" in the paper; one per backend
//             ("cilk/cilk" on io_backend::blocking: the same tasks, but every
//             accept/recv/send is the plain system call and blocks its worker)
//   threads   a thread per connection with blocking recv/send, computing fib(n)
//             sequentially — the paper's "pthread/seq" — or in parallel with a
//             std::thread per fork down to the same serial base case — the
//             paper's "pthread/pthread"
// The load: C client threads (plain std::threads, blocking sockets, outside
// any runtime) connect, wait for a common start, then each sends R requests
// in a closed loop and checks every answer. The time is from the start to the
// last answer; requests per second = C x R / time. The server must have
// served exactly C x R requests and every answer must be right, or the row
// fails. Two workloads: small requests, where the network round trip weighs,
// and large ones, where one client's request can use every core.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <latch>
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

constexpr int kBase = 15;  // serial below fib(15) (the paper: below fib(10))

[[noreturn]] void fail(const char* what) {
  throw std::system_error(errno, std::system_category(), what);
}

struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

struct listener {
  int fd = -1;
  sockaddr_in addr{};
  listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd, 128) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      int e = errno;
      ::close(fd);
      errno = e;
      fail("listen on 127.0.0.1");
    }
  }
  ~listener() { ::close(fd); }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
};

// --- blocking helpers (clients and the thread-per-client server)

// false at end of stream before the first byte.
bool recv_full(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  std::size_t done = 0;
  while (done < n) {
    ssize_t r = ::recv(fd, p + done, n - done, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("recv");
    if (r == 0) {
      if (done == 0) return false;
      throw std::runtime_error("truncated message");
    }
    done += static_cast<std::size_t>(r);
  }
  return true;
}
void send_full(int fd, const void* buf, std::size_t n) {
  auto* p = static_cast<const unsigned char*>(buf);
  std::size_t done = 0;
  while (done < n) {
    ssize_t r = ::send(fd, p + done, n - done, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("send");
    done += static_cast<std::size_t>(r);
  }
}

// --- weft server

bool weft_recv_full(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  std::size_t done = 0;
  while (done < n) {
    std::size_t r = weft::io::recv(fd, p + done, n - done).get();
    if (r == 0) {
      if (done == 0) return false;
      throw std::runtime_error("truncated request");
    }
    done += r;
  }
  return true;
}
void weft_send_full(int fd, const void* buf, std::size_t n) {
  auto* p = static_cast<const unsigned char*>(buf);
  std::size_t done = 0;
  while (done < n) done += weft::io::send(fd, p + done, n - done).get();
}

void weft_serve(int fd, std::atomic<long>& served) {
  fd_closer c{fd};  // also on error: the client then sees the end of stream
  std::int32_t n;
  while (weft_recv_full(fd, &n, sizeof n)) {
    if (n < 0 || n > 40) throw std::runtime_error("bad request");
    std::uint64_t r = io_fib_parallel(n, kBase);
    weft_send_full(fd, &r, sizeof r);
    served.fetch_add(1, std::memory_order_relaxed);
  }
}

// Accepts `clients` connections and serves each in its own task; returns the
// number of requests served once every client has closed.
long weft_server(int listen_fd, int clients) {
  std::atomic<long> served{0};
  weft::task_group g;
  for (int i = 0; i < clients; ++i) {
    int c = weft::io::accept(listen_fd).get();
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    g.spawn([c, &served] { weft_serve(c, served); });
  }
  g.sync();
  return served.load();
}

// --- thread-per-client server

// fib(n) with a std::thread per fork (pthread/pthread): the thread computes
// fib(n-1) while this one computes fib(n-2). An exception in the forked
// thread (its creation failing, say) comes back to the joiner.
std::uint64_t thread_fib(int n, int base) {
  if (n < base || n < 2) return io_fib_serial(n);
  std::uint64_t a = 0;
  std::exception_ptr err;
  std::thread t([&a, &err, n, base] {
    try {
      a = thread_fib(n - 1, base);
    } catch (...) {
      err = std::current_exception();
    }
  });
  std::uint64_t b = 0;
  try {
    b = thread_fib(n - 2, base);
  } catch (...) {
    t.join();
    throw;
  }
  t.join();
  if (err) std::rethrow_exception(err);
  return a + b;
}

long threads_server(int listen_fd, int clients, bool parallel) {
  std::atomic<long> served{0};
  std::atomic<bool> error{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < clients; ++i) {
    int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      error = true;
      break;
    }
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ts.emplace_back([c, &served, &error, parallel] {
      fd_closer closer{c};
      try {
        std::int32_t n;
        while (recv_full(c, &n, sizeof n)) {
          if (n < 0 || n > 40) throw std::runtime_error("bad request");
          std::uint64_t r = parallel ? thread_fib(n, kBase) : io_fib_serial(n);
          send_full(c, &r, sizeof r);
          served.fetch_add(1, std::memory_order_relaxed);
        }
      } catch (...) {
        error = true;
      }
    });
  }
  for (auto& t : ts) t.join();
  if (error) throw std::runtime_error("thread-per-client server: a connection failed");
  return served.load();
}

// --- the load

// C clients, R requests each, answers checked. Returns the wall time from the
// common start to the last answer; `right` is false on a wrong answer.
double run_clients(const sockaddr_in& addr, int clients, long per_client, std::int32_t n,
                   bool& right) {
  const auto expected = static_cast<std::uint64_t>(fib_reference(n));
  std::latch connected(clients);
  std::latch go(1);
  std::atomic<bool> wrong{false};
  std::atomic<bool> error{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < clients; ++i) {
    ts.emplace_back([&] {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      bool ok = fd >= 0 &&
                ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
      if (ok) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      }
      connected.count_down();
      go.wait();
      fd_closer c{fd};
      if (!ok) {
        error = true;
        return;
      }
      try {
        for (long r = 0; r < per_client; ++r) {
          send_full(fd, &n, sizeof n);
          std::uint64_t answer = 0;
          if (!recv_full(fd, &answer, sizeof answer)) throw std::runtime_error("server closed");
          if (answer != expected) wrong = true;
        }
      } catch (...) {
        error = true;
      }
    });
  }
  connected.wait();
  auto t0 = std::chrono::steady_clock::now();
  go.count_down();
  for (auto& t : ts) t.join();
  auto t1 = std::chrono::steady_clock::now();
  if (error) throw std::runtime_error("a client failed (connection error)");
  right = !wrong;
  return std::chrono::duration<double>(t1 - t0).count();
}

// After a failed load run: connects and closes `n` sockets, so that a server
// still waiting in accept gets its connections (each sees the end of stream
// at once) and returns instead of hanging.
void release_server(const sockaddr_in& addr, int n) {
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    (void)::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    ::close(fd);
  }
}

struct workload {
  const char* label;
  std::int32_t n;
  long total_requests;  // split among the clients
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void run_io_server(const config& cfg, report& rep) {
  const unsigned P = cfg.workers.back();
  const std::vector<workload> workloads = {
      {"small", 22, cfg.quick ? 480 : 2400},
      {"large", 28, cfg.quick ? 96 : 480},
  };
  const std::vector<int> client_counts = {1, 4, 8};
  using weft::io_backend;
  std::string why;
  const bool uring = io_uring_usable(&why);

  // The paper's Table 3 variants, side by side (interleaved rounds). The
  // last one, pthread/seq, is the denominator of the ratio rows.
  struct server {
    std::string name;
    const char* paper;                  // Table 3's name
    std::unique_ptr<weft::runtime> rt;  // null: thread per client
    bool parallel_threads = false;      // thread per client: a thread per fork
    std::string ratio_name;             // of its row against pthread/seq
    // Serves 1/divisor of the requests (at least one per client), its time
    // scaled to all of them (pthread/pthread: a thread per fork is ~40x
    // slower).
    long divisor = 1;
    bool blocking = false;              // weft on io_backend::blocking
    std::unique_ptr<listener> l;
    std::string missing;  // non-empty: not measured
  };
  std::vector<server> servers;
  for (io_backend b : {io_backend::epoll, io_backend::io_uring, io_backend::blocking}) {
    server s;
    s.name = std::string("server weft ") + backend_label(b) + ", task/client";
    s.paper = b == io_backend::blocking ? "cilk/cilk" : "conc cilk/cilk";
    s.blocking = b == io_backend::blocking;
    s.ratio_name = std::string("server weft ") + backend_label(b) + " / threads (req/s)";
    if (b == io_backend::io_uring && !uring) {
      s.missing = "n/a (io_uring unavailable: " + why + ")";
    } else {
      s.rt = std::make_unique<weft::runtime>(io_options(P, b));
      s.l = std::make_unique<listener>();
    }
    servers.push_back(std::move(s));
  }
  {
    server s;
    s.name = "server thread/client, thread per fork";
    s.paper = "pthread/pthread";
    s.parallel_threads = true;
    s.ratio_name = "server thread per fork / threads (req/s)";
    s.divisor = cfg.quick ? 32 : 8;
    s.l = std::make_unique<listener>();
    servers.push_back(std::move(s));
  }
  {
    server s;
    s.name = "server thread/client, sequential fib";
    s.paper = "pthread/seq";
    s.l = std::make_unique<listener>();
    servers.push_back(std::move(s));
  }

  for (const workload& w : workloads) {
    for (int C : client_counts) {
      const long per_client = (w.total_requests + C - 1) / C;
      const long total = per_client * C;
      const std::string params = std::string("fib(") + std::to_string(w.n) + ")/b" +
                                 std::to_string(kBase) + ", " + std::to_string(C) +
                                 (C == 1 ? " client" : " clients") + ", " + std::to_string(total) +
                                 " req";
      watchdog_scope wd("io: " + params, std::chrono::seconds(cfg.quick ? 120 : 300));
      std::vector<io_variant> vs;
      std::vector<int> idx;
      for (auto& s : servers) {
        if (!s.missing.empty()) {
          idx.push_back(-1);
          continue;
        }
        io_variant v;
        v.name = s.name;
        weft::runtime* rt = s.rt.get();
        listener* l = s.l.get();
        const std::int32_t n = w.n;
        const bool par = s.parallel_threads;
        const long my_per_client = std::max(1l, per_client / s.divisor);
        const long my_total = my_per_client * C;
        const double time_scale = static_cast<double>(total) / static_cast<double>(my_total);
        v.run = [rt, l, C, per_client = my_per_client, total = my_total, n, par,
                 time_scale](double& seconds) {
          bool right = false;
          long served = 0;
          if (rt) {
            const int lfd = l->fd;
            auto f = rt->async([lfd, C] { return weft_server(lfd, C); });
            try {
              seconds = run_clients(l->addr, C, per_client, n, right);
            } catch (...) {
              release_server(l->addr, C);
              try {
                f.get();
              } catch (...) {
              }
              throw;
            }
            served = f.get();
          } else {
            long result = 0;
            std::exception_ptr err;
            std::thread acceptor([&] {
              try {
                result = threads_server(l->fd, C, par);
              } catch (...) {
                err = std::current_exception();
              }
            });
            try {
              seconds = run_clients(l->addr, C, per_client, n, right);
            } catch (...) {
              release_server(l->addr, C);
              acceptor.join();
              throw;
            }
            acceptor.join();
            if (err) std::rethrow_exception(err);
            served = result;
          }
          if (served != total)
            throw std::runtime_error("server served " + std::to_string(served) + " of " +
                                     std::to_string(total) + " requests");
          seconds *= time_scale;  // as if it had served all the requests
          return right;
        };
        idx.push_back(static_cast<int>(vs.size()));
        vs.push_back(std::move(v));
      }
      run_interleaved(cfg, vs);

      for (std::size_t i = 0; i < servers.size(); ++i) {
        const std::string name = servers[i].name;
        if (idx[i] < 0) {
          rep.add_missing("io", name, params, servers[i].missing);
          continue;
        }
        const io_variant& v = vs[static_cast<std::size_t>(idx[i])];
        row r = io_row(name, params, v, 1, "req/s");
        if (!r.failed && !v.samples.empty()) {
          // Report requests per second. The samples are dropped from the row:
          // its "best" column would take the smallest, the slowest repetition.
          std::vector<double> rate;
          for (double s : v.samples) rate.push_back(static_cast<double>(total) / s);
          r.value = median(rate);
          std::string who = servers[i].rt
                                ? workers_param(P)
                                : std::to_string(C) + (C == 1 ? " thread" : " threads");
          if (servers[i].parallel_threads) who += " + a thread per fork";
          r.note = std::string(servers[i].paper) + "; best " + fmt("%.0f", max_of(rate)) +
                   " req/s, spread " + fmt("%.0f%%", 100 * spread(rate)) + ", " + who;
          if (servers[i].divisor > 1) {
            const long part = std::max(1l, per_client / servers[i].divisor) * C;
            r.note += "; served " + std::to_string(part) + " of the requests, time scaled";
          }
          r.samples.clear();
        }
        rep.add(std::move(r));
      }
      const int threads_i = idx.back();
      for (std::size_t i = 0; i + 1 < servers.size(); ++i) {
        const std::string& name = servers[i].ratio_name;
        if (idx[i] < 0) {
          rep.add_missing("io", name, params, servers[i].missing);
          continue;
        }
        // Throughput ratio = thread server's time / this server's time (same
        // requests). Goal (Concurrent Cilk Table 3): one client with large
        // requests gets every core from weft's tasks with I/O futures, but one
        // core from a thread per client.
        const bool conc = !servers[i].missing.empty() || (servers[i].rt && !servers[i].blocking);
        const bool goal = conc && C == 1 && w.n >= 28;
        std::string note = std::string(servers[i].paper) + " / pthread/seq";
        if (goal) note += "; 1 client uses all P cores in weft, 1 in threads";
        add_paired_ratio(rep, name, params, vs[static_cast<std::size_t>(threads_i)],
                         vs[static_cast<std::size_t>(idx[i])],
                         goal ? goal_kind::at_least : goal_kind::none, goal ? 1.5 : 0, note);
      }
      // Concurrent Cilk against Cilk with blocking calls (paper: 35 vs 33
      // req/s for fib(40), 1 client): the I/O futures keep the workers busy.
      const int block_i = idx[2], epoll_i = idx[0];
      if (block_i >= 0 && epoll_i >= 0)
        add_paired_ratio(rep, "server weft epoll / weft blocking (req/s)", params,
                         vs[static_cast<std::size_t>(block_i)],
                         vs[static_cast<std::size_t>(epoll_i)], goal_kind::none, 0,
                         "conc cilk/cilk / cilk/cilk");
    }
  }
}

}  // namespace weft_bench
