// weft-bench — priority section, part 3 (I-Cilk §5.2, Figure 6 in
// spirit): response time of an interactive service under background load.
//
// The service is a loopback TCP server written as weft tasks: a handler of
// level 0 accepts one connection with weft::io::accept, then repeatedly reads
// a 16-byte request (weft::io::read_exact), computes a little (serial
// fib(req_n), about 0.1 ms), and writes a 16-byte reply (weft::io::write_all).
// Meanwhile a background task of level 6 computes parallel fib in a loop,
// enough to keep every worker busy, yielding at every leaf. A root of level 7
// starts both and waits for them.
//
// A client std::thread (outside the runtime, blocking sockets, TCP_NODELAY)
// sends the requests one after the other, with a random think time of 0 to
// 1 ms between them, and measures each response time (send to full reply).
// Reported: p50/p95/p99 under APS (default quantum L = 500 us, and L = 100 us),
// under the oblivious scheduler, and with no background at all (the floor:
// network + compute). The handler, not the root, stops the background when
// the client hangs up: the root (level 7) gets no worker while level 6 has
// work, which is what prompt scheduling asks for.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <weft/io.hpp>
#include <weft/weft.hpp>

#include "bench.hpp"
#include "prio.hpp"
#include "stats.hpp"

namespace weft_bench::prio {
namespace {

constexpr int req_n = 22;              // compute per request: serial fib(22)
constexpr int bg_n = 27, bg_leaf = 18; // one background round: parallel fib(27)
constexpr std::size_t msg = 16;
constexpr int warm_requests = 20;      // not measured

struct session_result {
  std::vector<double> latency_us;
  double background_rounds_per_s = 0;
  bool wrong = false;
};

[[noreturn]] void sys_fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

// The client: blocking socket, one request at a time.
void client(int port, int requests, std::uint64_t seed, session_result& out, std::string& error) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  try {
    if (fd < 0) sys_fail("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) sys_fail("connect");
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::mt19937_64 g(seed);
    std::uniform_int_distribution<int> think_us(0, 1000);
    const long expected = fib_reference(req_n);
    for (int i = 0; i < warm_requests + requests; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(think_us(g)));
      char buf[msg] = {};
      std::memcpy(buf, &i, sizeof i);
      auto t0 = clock::now();
      if (::send(fd, buf, msg, MSG_NOSIGNAL) != static_cast<ssize_t>(msg)) sys_fail("send");
      std::size_t got = 0;
      while (got < msg) {
        ssize_t k = ::recv(fd, buf + got, msg - got, 0);
        if (k <= 0) sys_fail("recv");
        got += static_cast<std::size_t>(k);
      }
      double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
      long v = 0;
      int echo = -1;
      std::memcpy(&echo, buf, sizeof echo);
      std::memcpy(&v, buf + 8, sizeof v);
      if (v != expected || echo != i) out.wrong = true;
      if (i >= warm_requests) out.latency_us.push_back(us);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (fd >= 0) ::close(fd);  // EOF ends the handler
}

session_result run_session(weft::runtime& rt, int requests, bool background, std::uint64_t seed) {
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) sys_fail("socket");
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_listener{lfd};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) sys_fail("bind");
  if (::listen(lfd, 4) != 0) sys_fail("listen");
  if (::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) sys_fail("getsockname");
  const int port = ntohs(a.sin_port);

  session_result out;
  std::string client_error;
  std::atomic<bool> stop{false};
  long rounds = 0;
  double seconds = 0;
  // The listening socket queues the connection until the handler accepts.
  std::thread cl(client, port, requests, seed, std::ref(out), std::ref(client_error));
  std::exception_ptr failure;
  try {
    rt.run(weft::priority(7), [&] {
      const auto t0 = clock::now();
      // The handler is spawned before the background: with APS, once level 6
      // has work the root (level 7) may lose its worker at its next strand
      // boundary and would then never spawn the handler (strict priority, as
      // designed: a less urgent task does not run while more urgent work
      // waits; the background only stops when the handler tells it to).
      // The handler, not the root, stops the background when the client is
      // done: the root (level 7) gets no worker while level 6 has work.
      auto handler = weft::async(weft::priority(0), [lfd, &stop] {
        struct stopper {
          std::atomic<bool>& stop;
          ~stopper() { stop.store(true, std::memory_order_relaxed); }
        } stop_background{stop};
        struct closer {
          int fd;
          ~closer() { ::close(fd); }  // also on error: the client sees EOF
        } conn{weft::io::accept(lfd).get()};
        int one = 1;
        ::setsockopt(conn.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char buf[msg];
        while (weft::io::read_exact(conn.fd, buf, msg) == msg) {
          long v = fib_serial(req_n);
          std::memcpy(buf + 8, &v, sizeof v);
          weft::io::write_all(conn.fd, buf, msg);
        }
      });
      weft::future<long> bg;
      if (background) {
        bg = weft::async(weft::priority(6), [&stop] {
          long k = 0;
          while (!stop.load(std::memory_order_relaxed)) {
            long r = fib_parallel(bg_n, bg_leaf, bg_leaf);
            do_not_optimize(r);
            ++k;
          }
          return k;
        });
      }
      std::exception_ptr handler_error;
      try {
        handler.get();
      } catch (...) {
        handler_error = std::current_exception();
      }
      seconds = seconds_since(t0);
      if (background) rounds = bg.get();
      if (handler_error) std::rethrow_exception(handler_error);
    });
  } catch (...) {
    failure = std::current_exception();
  }
  cl.join();
  if (failure) std::rethrow_exception(failure);
  if (!client_error.empty()) throw std::runtime_error("client: " + client_error);
  out.background_rounds_per_s = seconds > 0 ? static_cast<double>(rounds) / seconds : 0;
  return out;
}

}  // namespace

void run_interactive(const config& cfg, report& rep) {
  const int requests = cfg.quick ? 150 : 500;
  enum { aps_bg, aps_short_bg, obl_bg, obl_idle, kinds };
  static const char* kind_name[kinds] = {"APS", "APS L=100us", "oblivious", "no background"};
  for (unsigned workers : cfg.workers) {
    char pbuf[96];
    std::snprintf(pbuf, sizeof pbuf, "%d requests, fib(%d) each, %s", requests, req_n,
                  workers_param(workers).c_str());
    const std::string p = pbuf;
    std::vector<double> pct[kinds][3], bg_rate[kinds];
    bool wrong = false;
    try {
      watchdog_scope wd("priority: interactive, " + p, std::chrono::seconds(cfg.quick ? 120 : 300));
      weft::runtime aps{aps_options(workers)};
      weft::runtime aps_short{aps_options(workers, 2.0, std::chrono::microseconds(100))};
      weft::runtime obl{oblivious_options(workers)};
      for (int i = 0; i < cfg.warmup + cfg.reps; ++i) {
        for (int k = 0; k < kinds; ++k) {
          session_result s = run_session(k == aps_bg ? aps : k == aps_short_bg ? aps_short : obl,
                                         requests, k != obl_idle,
                                         77 + static_cast<std::uint64_t>(i));
          wrong = wrong || s.wrong;
          if (i < cfg.warmup) continue;
          pct[k][0].push_back(percentile(s.latency_us, 50));
          pct[k][1].push_back(percentile(s.latency_us, 95));
          pct[k][2].push_back(percentile(s.latency_us, 99));
          bg_rate[k].push_back(s.background_rounds_per_s);
        }
      }
    } catch (const std::exception& e) {
      rep.add_missing("priority", "interactive", p, std::string("error: ") + e.what(), true);
      continue;
    }
    static const char* pname[3] = {"p50", "p95", "p99"};
    for (int k = 0; k < kinds; ++k) {
      for (int q = 0; q < 3; ++q) {
        row r = make_row("priority", std::string("interactive ") + pname[q] + " response, " +
                                         kind_name[k], p, pct[k][q], "us");
        if (q == 0 && k != obl_idle) {
          char note[96];
          std::snprintf(note, sizeof note, "background %.0f rounds/s of fib(%d)",
                        median(bg_rate[k]), bg_n);
          r.note = note;
        }
        if (wrong) {
          r.failed = true;
          r.note = "WRONG RESULT";
        }
        rep.add(std::move(r));
      }
    }
    // Goals (issue 12): the urgent level's p50, p95 and p99 at most half the
    // oblivious scheduler's, with the background's throughput within 5% of
    // it. Ratios repetition by repetition (APS and oblivious sessions of one
    // repetition run back to back), then the median.
    for (int q = 0; q < 3; ++q) {
      std::vector<double> ratio;
      for (std::size_t i = 0; i < pct[aps_bg][q].size(); ++i)
        ratio.push_back(pct[aps_bg][q][i] / pct[obl_bg][q][i]);
      row r = make_row("priority", std::string("interactive ") + pname[q] + " APS / oblivious", p,
                       ratio, "x obl");
      r.goal = goal_kind::at_most;
      r.goal_value = 0.5;
      r.note = "I-Cilk Fig. 6 in spirit: urgent-level response";
      if (wrong) r.failed = true;
      rep.add(std::move(r));
    }
    std::vector<double> tput;
    for (std::size_t i = 0; i < bg_rate[aps_bg].size(); ++i)
      tput.push_back(bg_rate[obl_bg][i] > 0 ? bg_rate[aps_bg][i] / bg_rate[obl_bg][i] : NAN);
    row t = make_row("priority", "interactive background throughput APS / oblivious", p, tput,
                     "x obl");
    t.goal = goal_kind::at_least;
    t.goal_value = 0.95;
    t.note = "fib(27) rounds/s of the level-6 background";
    if (wrong) t.failed = true;
    rep.add(std::move(t));
  }
}

}  // namespace weft_bench::prio
