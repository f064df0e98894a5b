// weft-bench — server: a 64-byte TCP echo server on 127.0.0.1, weft against
// Go and Tokio, each server in its own process, all driven by one load
// generator.
//
// Servers (2 worker threads each, a task / goroutine / tokio task per
// connection):
//   weft epoll     weft-echo-server --backend epoll --workers 2 (echo_server.cpp)
//   weft io_uring  the same with --backend io_uring, when usable here
//   Go             bench/go/echoserver.go, GOMAXPROCS=2; built now with
//                  `go build` when go is on PATH (cached in the build dir)
//   Tokio          bench/rust/echo, worker_threads=2; built now with
//                  `cargo build --release` when cargo is on PATH (target dir
//                  in the build dir; the first build downloads tokio)
// Load: weft-echo-load (echo_load.cpp, plain epoll, one thread): C
// connections opened in batches, each proven accepted by one checked round
// trip, then each runs a closed loop of 64-byte requests, every reply checked
// byte for byte. C = 1, 50, 1,000, 10,000 (quick: not 10,000). Each run:
// start the server (its first stdout line is its port; RSS then is the
// baseline), warm up (1 s; quick 0.3 s), measure (3 s; quick 1 s), read the
// server's peak RSS (VmHWM), close its stdin to stop it (it must exit 0).
// The load generator samples the server's utime + stime (/proc/PID/stat) at
// the edges of the measured window, so CPU per request covers exactly the
// requests counted. Figures per server: req/s, p99 and p99.9 latency (from
// the load generator's log-linear histogram), server CPU us per request, and
// peak RSS per connection ((VmHWM - RSS at start) / C). Idle CPU: the server
// with 50 connections open and silent for 2 s, CPU seconds per second.
// Servers are interleaved within each repetition (rep r starts with server r
// mod n, so none is always first after a quiet period); medians over the
// repetitions (--reps, at most 3 in quick mode). Ratios: weft / the better of
// Go and Tokio for req/s, p99, p99.9; weft / Tokio for CPU per request.
//
// Caveat: on a 2-CPU machine the load generator's thread competes with the
// server's two workers; its own CPU per second is in the notes (near 1.0: the
// client, not the server, may be the bottleneck, alike for every server).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "io_common.hpp"
#include "stats.hpp"

#ifndef WEFT_BENCH_BINARY_DIR
#define WEFT_BENCH_BINARY_DIR "/tmp"
#endif

namespace weft_bench {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr unsigned kWorkers = 2;
constexpr int kIdleConnections = 50;
constexpr double kIdleSeconds = 2.0;

std::string exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string s(buf, static_cast<std::size_t>(n));
  auto slash = s.rfind('/');
  return slash == std::string::npos ? "." : s.substr(0, slash);
}

bool executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0; }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A peer built at bench time, once per weft-bench run (cached by path in the
// build directory: a later run reuses the binary when the build succeeds
// again, which for go and cargo is a quick no-op).
struct peer {
  std::string exe;     // empty: not available
  std::string reason;  // "not measured: ..." when not
};

const peer& go_echo() {
  static peer p = [] {
    peer r;
    const std::string d = WEFT_BENCH_BINARY_DIR "/peers/go-echo";
    r.reason = go_build(WEFT_BENCH_SOURCE_DIR "/go/echoserver.go", d, "echoserver");
    if (r.reason.empty()) r.exe = d + "/echoserver";
    return r;
  }();
  return p;
}

const peer& tokio_echo() {
  static peer p = [] {
    peer r;
    if (std::system("command -v cargo >/dev/null 2>&1") != 0) {
      r.reason = "not measured: cargo not found";
      return r;
    }
    const std::string d = WEFT_BENCH_BINARY_DIR "/peers/tokio-echo";
    (void)std::system(("mkdir -p '" + d + "'").c_str());
    std::printf("server: building the Tokio peer (cargo build --release; the first build "
                "downloads and compiles tokio)...\n");
    std::fflush(stdout);
    const std::string cmd = "cargo build --release --quiet --manifest-path " WEFT_BENCH_SOURCE_DIR
                            "/rust/echo/Cargo.toml --target-dir '" + d + "' >'" + d +
                            "/build.log' 2>&1";
    const std::string exe = d + "/release/weft-echo-tokio";
    if (std::system(cmd.c_str()) != 0 || !executable(exe)) {
      r.reason = "not measured: cargo build failed (see " + d + "/build.log)";
      return r;
    }
    r.exe = exe;
    return r;
  }();
  return p;
}

// A child with pipes to its stdin and from its stdout (stderr inherited).
struct child {
  pid_t pid = -1;
  int in = -1;   // write end of its stdin; closing it stops a server
  int out = -1;  // read end of its stdout
};

bool spawn(const std::vector<std::string>& args, child& c, std::string& error) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (::pipe2(from, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    ::close(to[0]);
    ::close(to[1]);
    return false;
  }
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {to[0], to[1], from[0], from[1]}) ::close(fd);
    return false;
  }
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::dup2(to[0], STDIN_FILENO);
    ::dup2(from[1], STDOUT_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  c.pid = pid;
  c.in = to[1];
  c.out = from[0];
  return true;
}

// Reads c.out until a newline (line mode) or EOF, up to `deadline`. False on
// timeout.
bool read_out(child& c, std::string& text, clock_type::time_point deadline, bool line_only) {
  for (;;) {
    if (line_only && text.find('\n') != std::string::npos) return true;
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    if (left.count() <= 0) return false;
    pollfd p{c.out, POLLIN, 0};
    int pr = ::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(c.out, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF
    text.append(buf, static_cast<std::size_t>(n));
  }
}

// Waits for the child to exit, up to `limit`, then kills it (SIGKILL).
// Returns "" on exit status 0, else what happened.
std::string reap(child& c, std::chrono::milliseconds limit, const std::string& what) {
  if (c.in >= 0) ::close(c.in);
  if (c.out >= 0) ::close(c.out);
  c.in = c.out = -1;
  if (c.pid < 0) return "";
  const auto deadline = clock_type::now() + limit;
  int status = 0;
  bool killed = false;
  for (;;) {
    pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid) break;
    if (r < 0 && errno != EINTR) {
      c.pid = -1;
      return "waitpid: " + std::string(std::strerror(errno));
    }
    if (!killed && clock_type::now() >= deadline) {
      ::kill(c.pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  c.pid = -1;
  if (killed) return "HANG: " + what + " did not exit within " +
                     std::to_string(limit.count()) + " ms; killed";
  if (WIFSIGNALED(status))
    return "CRASH: " + what + " died of signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return what + " exited with status " +
           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return "";
}

// Kills a child on every way out of a scope (errors included).
struct child_guard {
  child& c;
  ~child_guard() {
    if (c.pid > 0) {
      ::kill(c.pid, SIGKILL);
      (void)reap(c, std::chrono::milliseconds(2000), "child");
    }
  }
};

// key=value tokens, space or newline separated; a line "error=..." is taken
// whole (its message has spaces).
std::map<std::string, std::string> parse_values(const std::string& text) {
  std::map<std::string, std::string> v;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("error=", 0) == 0) {
      v["error"] = line.substr(6);
      continue;
    }
    std::istringstream toks(line);
    std::string t;
    while (toks >> t) {
      auto eq = t.find('=');
      if (eq != std::string::npos) v[t.substr(0, eq)] = t.substr(eq + 1);
    }
  }
  return v;
}

double num(const std::map<std::string, std::string>& v, const char* k) {
  auto it = v.find(k);
  if (it == v.end()) return NAN;
  try {
    return std::stod(it->second);
  } catch (...) {
    return NAN;
  }
}

struct server_spec {
  std::string name;               // row label
  std::vector<std::string> args;  // argv; empty when missing
  std::string missing;            // "not measured: ..." / "n/a (...)"
};

// One run's figures.
struct sample {
  double req_s = NAN, p99 = NAN, p999 = NAN, cpu_us_per_req = NAN, kib_per_conn = NAN;
  double idle_cpu = NAN;  // CPU s/s, idle runs only
  double load_cpu = NAN;  // the load generator's CPU s/s over the window
};

// Starts `s`, runs the load generator against it, stops it. Returns "" or
// the error.
std::string run_once(const server_spec& s, const std::string& load_exe, long C, double warmup,
                     double duration, bool idle, sample& out) {
  child srv;
  child_guard g{srv};
  std::string err;
  if (!spawn(s.args, srv, err)) return err;
  std::string line;
  if (!read_out(srv, line, clock_type::now() + std::chrono::seconds(20), true) ||
      line.find('\n') == std::string::npos) {
    std::string r = reap(srv, std::chrono::milliseconds(500), s.name);
    return "server printed no port within 20 s" + (r.empty() ? "" : ": " + r);
  }
  const int port = std::atoi(line.c_str());
  if (port <= 0) return "server printed '" + line.substr(0, line.find('\n')) + "', not a port";
  const long rss0 = proc_status_kib(srv.pid, "VmRSS");

  child load;
  child_guard lg{load};
  std::vector<std::string> largs = {load_exe,
                                    "--port",
                                    std::to_string(port),
                                    "--connections",
                                    std::to_string(C),
                                    "--warmup",
                                    fmt("%g", warmup),
                                    "--duration",
                                    fmt("%g", duration),
                                    "--server-pid",
                                    std::to_string(srv.pid)};
  if (idle) largs.push_back("--idle");
  if (!spawn(largs, load, err)) return err;
  ::close(load.in);  // the load generator reads no stdin
  load.in = -1;
  std::string text;
  // Connecting 10,000 connections takes a few seconds; the generator gives
  // up itself after 60 s of connecting.
  const auto limit = std::chrono::seconds(90) + std::chrono::seconds(static_cast<long>(warmup + duration));
  bool in_time = read_out(load, text, clock_type::now() + limit, false);
  const long hwm = proc_status_kib(srv.pid, "VmHWM");  // before the server stops
  std::string lr = reap(load, in_time ? std::chrono::milliseconds(10000)
                                      : std::chrono::milliseconds(0),
                        "weft-echo-load");
  auto v = parse_values(text);
  std::string sr = reap(srv, std::chrono::milliseconds(5000), s.name + " (at stop)");
  if (!in_time) return "HANG: weft-echo-load killed after " + std::to_string(limit.count()) + " s";
  if (!lr.empty() || v.count("error"))
    return "load: " + (v.count("error") ? v["error"] : lr) + (sr.empty() ? "" : "; " + sr);
  if (!sr.empty()) return sr;
  const double requests = num(v, "requests"), window = num(v, "window_s");
  const double cpu = num(v, "server_cpu_s");
  if (idle) {
    out.idle_cpu = cpu / window;
    return "";
  }
  if (!(requests > 0)) return "load: no request completed in the window";
  out.req_s = num(v, "req_per_s");
  out.p99 = num(v, "p99_us");
  out.p999 = num(v, "p999_us");
  out.cpu_us_per_req = cpu * 1e6 / requests;
  out.load_cpu = num(v, "load_cpu_s") / window;
  if (rss0 > 0 && hwm > 0) out.kib_per_conn = static_cast<double>(hwm - rss0) / static_cast<double>(C);
  return "";
}

std::string conns_param(long C) {
  std::string n = std::to_string(C);
  if (C >= 1000) n.insert(n.size() - 3, ",");
  return n + (C == 1 ? " connection, " : " connections, ") + workers_param(kWorkers);
}

}  // namespace

void run_server(const config& cfg, report& rep) {
  raise_fd_limit();
  const std::string dir = exe_dir();
  const std::string server_exe = dir + "/weft-echo-server";
  const std::string load_exe = dir + "/weft-echo-load";
  if (!executable(server_exe) || !executable(load_exe)) {
    rep.add_missing("server", "echo", "", "not measured: weft-echo-server / weft-echo-load not "
                    "next to weft-bench (build them: cmake --build ... --target weft-bench)", true);
    return;
  }
  const int reps = cfg.quick ? std::min(cfg.reps, 3) : cfg.reps;
  const double warmup = cfg.quick ? 0.3 : 1.0, duration = cfg.quick ? 1.0 : 3.0;
  std::vector<long> counts = {1, 50, 1000};
  if (!cfg.quick) counts.push_back(10000);

  // Every weft server first, Go and Tokio last (kGo, kTokio below).
  std::vector<server_spec> servers;
  const std::string W = std::to_string(kWorkers);
  servers.push_back({"weft epoll", {server_exe, "--backend", "epoll", "--workers", W}, ""});
  servers.push_back({"weft epoll_threads", {server_exe, "--backend", "epoll_threads", "--workers", W}, ""});
  {
    std::string why;
    server_spec s{"weft io_uring", {server_exe, "--backend", "io_uring", "--workers", W}, ""};
    if (!io_uring_usable(&why)) {
      s.args.clear();
      s.missing = "n/a (io_uring unavailable: " + why + ")";
    }
    servers.push_back(std::move(s));
  }
  {
    const peer& go = go_echo();
    servers.push_back({"Go", go.exe.empty() ? std::vector<std::string>{}
                                            : std::vector<std::string>{go.exe, W},
                       go.reason});
  }
  {
    const peer& tk = tokio_echo();
    servers.push_back({"Tokio", tk.exe.empty() ? std::vector<std::string>{}
                                               : std::vector<std::string>{tk.exe, W},
                       tk.reason});
  }
  const std::size_t n = servers.size();
  // The weft servers come first (a new backend is one more push_back above),
  // then the two peers, last.
  const std::size_t kGo = n - 2, kTokio = n - 1;

  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);

  for (long C : counts) {
    const std::string params = conns_param(C);
    const long needed = C + 64;
    if (lim.rlim_max != RLIM_INFINITY && static_cast<long>(lim.rlim_max) < needed) {
      for (auto& s : servers)
        rep.add_missing("server", "echo " + s.name + " req/s", params,
                        "not measured: RLIMIT_NOFILE hard limit " +
                            std::to_string(lim.rlim_max) + " < needed " + std::to_string(needed));
      continue;
    }
    watchdog_scope wd("server: " + params,
                      std::chrono::seconds(static_cast<long>(
                          60 + reps * n * (120 + warmup + duration))));
    std::vector<std::vector<sample>> samples(n);
    std::vector<std::string> errors(n);
    for (std::size_t i = 0; i < n; ++i) errors[i] = servers[i].missing;
    for (int r = 0; r < reps; ++r) {
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = (k + static_cast<std::size_t>(r)) % n;
        if (!errors[i].empty()) continue;  // missing, or failed in an earlier rep
        sample s;
        std::string e = run_once(servers[i], load_exe, C, warmup, duration, false, s);
        if (!e.empty())
          errors[i] = e;
        else
          samples[i].push_back(s);
      }
    }

    std::vector<const row*> rps(n), p99(n), p999(n), cpu(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string base = "echo " + servers[i].name;
      if (!errors[i].empty()) {
        const bool failed = servers[i].missing.empty();  // missing peers are not failures
        rep.add_missing("server", base + " req/s", params, errors[i], failed);
        continue;
      }
      auto col = [&](double sample::*f) {
        std::vector<double> v;
        for (const auto& s : samples[i]) v.push_back(s.*f);
        return v;
      };
      row a = make_row("server", base + " req/s", params, col(&sample::req_s), "req/s");
      a.higher_is_better = true;
      // The client's own CPU: near 1.0 s/s it, not the server, is the limit.
      a.note = std::to_string(samples[i].size()) + " runs; load generator CPU " +
               fmt("%.2f", median(col(&sample::load_cpu))) + " s/s";
      rep.add(std::move(a));
      rps[i] = rep.find("server", base + " req/s", params);
      rep.add(make_row("server", base + " p99", params, col(&sample::p99), "us"));
      p99[i] = rep.find("server", base + " p99", params);
      rep.add(make_row("server", base + " p99.9", params, col(&sample::p999), "us"));
      p999[i] = rep.find("server", base + " p99.9", params);
      rep.add(make_row("server", base + " CPU per request", params,
                       col(&sample::cpu_us_per_req), "us/req"));
      cpu[i] = rep.find("server", base + " CPU per request", params);
      row m = make_row("server", base + " peak RSS per connection", params,
                       col(&sample::kib_per_conn), "KiB/conn");
      m.note = "(VmHWM - RSS at start) / connections";
      rep.add(std::move(m));
    }

    // The better peer per figure: Go or Tokio; -1 if neither.
    auto better = [&](const std::vector<const row*>& rows, bool higher) -> int {
      const row* g = rows[kGo];
      const row* t = rows[kTokio];
      if (!g || !g->has_value()) return t && t->has_value() ? int(kTokio) : -1;
      if (!t || !t->has_value()) return int(kGo);
      return (higher ? g->value >= t->value : g->value <= t->value) ? int(kGo) : int(kTokio);
    };
    auto add_vs_best = [&](std::size_t i, const std::string& what,
                           const std::vector<const row*>& rows, bool higher) {
      const int b = better(rows, higher);
      if (b < 0) {  // say why, not just "an input is missing"
        rep.add_missing("server", servers[i].name + " / best peer, " + what, params,
                        "n/a (no peer measured: Go: " + errors[kGo] + "; Tokio: " +
                            errors[kTokio] + ")");
        return;
      }
      rep.add_ratio("server", servers[i].name + " / best peer, " + what, params, rows[i],
                    b < 0 ? nullptr : rows[static_cast<std::size_t>(b)], goal_kind::none, 0,
                    b < 0 ? "" : "vs " + servers[static_cast<std::size_t>(b)].name);
    };
    for (std::size_t i = 0; i < kGo; ++i) {  // the weft servers
      if (!errors[i].empty()) continue;
      add_vs_best(i, "req/s", rps, true);
      add_vs_best(i, "p99", p99, false);
      add_vs_best(i, "p99.9", p999, false);
      if (!cpu[kTokio])
        rep.add_missing("server", servers[i].name + " / Tokio, CPU per request", params,
                        "n/a (Tokio: " + errors[kTokio] + ")");
      else
        rep.add_ratio("server", servers[i].name + " / Tokio, CPU per request", params, cpu[i],
                      cpu[kTokio]);
    }
  }

  // Idle CPU: 50 silent connections for 2 s.
  {
    const std::string params = std::to_string(kIdleConnections) + " idle connections, " +
                               workers_param(kWorkers);
    watchdog_scope wd("server: idle", std::chrono::seconds(60 + reps * n * 120));
    std::vector<std::vector<double>> idle(n);
    std::vector<std::string> errors(n);
    for (std::size_t i = 0; i < n; ++i) errors[i] = servers[i].missing;
    for (int r = 0; r < reps; ++r) {
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = (k + static_cast<std::size_t>(r)) % n;
        if (!errors[i].empty()) continue;
        sample s;
        std::string e =
            run_once(servers[i], load_exe, kIdleConnections, 0.2, kIdleSeconds, true, s);
        if (!e.empty())
          errors[i] = e;
        else
          idle[i].push_back(s.idle_cpu);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::string name = "idle " + servers[i].name + " CPU";
      if (!errors[i].empty()) {
        rep.add_missing("server", name, params, errors[i], servers[i].missing.empty());
        continue;
      }
      row r = make_row("server", name, params, idle[i], "CPU s/s");
      // /proc/PID/stat counts clock ticks (10 ms): over 2 s, a resolution
      // of 0.005 s/s.
      r.note = std::to_string(idle[i].size()) + " runs; server CPU s per s, no traffic (+-0.005)";
      rep.add(std::move(r));
    }
  }
}

}  // namespace weft_bench
