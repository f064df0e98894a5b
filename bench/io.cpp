// weft-bench — section "io": latency-hiding I/O (Cilk-L §5 and Concurrent Cilk §6.4).
//
//   map-reduce   Cilk-L Figures 2-3: N emulated connections (timerfds),
//                a parallel fib per item; Ideal, blocking reads on P and 2P
//                workers, I/O futures per backend and steal policy
//   breakdown    Cilk-L Figure 4: the overhead of each mechanism at zero
//                latency (future, event mechanism, I/O thread, io_uring)
//   server       Concurrent Cilk Table 3: a loopback TCP server with parallel
//                requests against a thread-per-client server
//   latency      a 64-byte round trip, weft I/O futures against blocking
//                system calls on two threads
//   scale        Cilk-L Figure 2 / LHWS Figure 11 at the papers' scale: 5,000
//                connections, L = 1-500 ms, P = 1-8, speedup over the
//                blocking T1; the oversubscription break-even latency
// Each is a part: `--only io.scale` runs one (main.cpp's section table).
//
// This file holds the helpers the three benchmark files share and run_io.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>

#include <weft/io.hpp>

#include "io_common.hpp"
#include "stats.hpp"

namespace weft_bench {

[[gnu::noinline]] std::uint64_t io_fib_serial(int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  std::uint64_t a = io_fib_serial(n - 1);
  do_not_optimize(a);  // keep both calls (no accumulator loop): fixed work
  return a + io_fib_serial(n - 2);
}

std::uint64_t io_fib_parallel(int n, int base) {
  if (n < base || n < 2) return io_fib_serial(n);
  auto [a, b] = weft::fork_join([=] { return io_fib_parallel(n - 1, base); },
                                [=] { return io_fib_parallel(n - 2, base); });
  return a + b;
}

weft::options io_options(unsigned workers, weft::io_backend io, weft::steal_policy policy,
                         bool try_first) {
  weft::options o;
  o.workers = workers;
  o.policy = policy;
  o.io = io;
  o.io_try_first = try_first;
  return o;
}

const char* backend_label(weft::io_backend io) {
  switch (io) {
    case weft::io_backend::automatic: return "automatic";
    case weft::io_backend::epoll: return "epoll";
    case weft::io_backend::io_uring: return "io_uring";
    case weft::io_backend::blocking: return "blocking";
    case weft::io_backend::epoll_threads: return "epoll_threads";
  }
  return "?";
}

const char* policy_label(weft::steal_policy p) {
  return p == weft::steal_policy::parsimonious ? "ParWS" : "ProWS";
}

bool io_uring_usable(std::string* why) {
  static std::once_flag once;
  static bool ok = false;
  static std::string reason;
  std::call_once(once, [] {
    try {
      // The backend is created at the first I/O call of a task.
      weft::runtime rt{io_options(1, weft::io_backend::io_uring)};
      rt.run([] { weft::io::sleep_for(std::chrono::microseconds(1)).get(); });
      ok = true;
    } catch (const std::exception& e) {
      reason = e.what();
    }
  });
  if (why) *why = reason;
  return ok;
}

void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

void run_interleaved(const config& cfg, std::vector<io_variant>& variants) {
  auto cpu_now = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  for (auto& v : variants) {
    v.samples.clear();
    v.cpu.clear();
    v.wrong = false;
    v.error.clear();
  }
  const std::size_t n = variants.size();
  for (int round = 0; round < cfg.warmup + cfg.reps; ++round) {
    const bool timed = round >= cfg.warmup;
    // Each round starts one variant later: no variant always runs first (or
    // always right after the same neighbour).
    for (std::size_t k = 0; k < n; ++k) {
      auto& v = variants[(k + static_cast<std::size_t>(round)) % n];
      if (!v.error.empty()) continue;
      try {
        double s = -1;
        const double c0 = cpu_now();
        auto t0 = std::chrono::steady_clock::now();
        bool right = v.run(s);
        auto t1 = std::chrono::steady_clock::now();
        const double c1 = cpu_now();
        if (s < 0) s = std::chrono::duration<double>(t1 - t0).count();
        if (!right) v.wrong = true;
        if (timed) {
          v.samples.push_back(s);
          v.cpu.push_back(c1 - c0);
        }
      } catch (const std::exception& e) {
        v.error = e.what();
        if (v.error.empty()) v.error = "exception";
      }
    }
  }
}

row io_row(const std::string& name, const std::string& params, const io_variant& v, double k,
           const std::string& unit) {
  row r = make_row("io", name, params,
                   v.error.empty() ? scaled(v.samples, k) : std::vector<double>{}, unit);
  if (!v.error.empty()) {
    r.failed = true;
    r.note = "error: " + v.error;
  } else if (v.wrong) {
    r.failed = true;
    r.note = "WRONG RESULT";
  }
  return r;
}

double median_cpu(const io_variant& v) { return v.cpu.empty() ? NAN : median(v.cpu); }

namespace {
std::vector<double> round_ratios(const io_variant& num, const io_variant& den, bool use_cpu) {
  std::vector<double> ratios;
  if (!num.ok() || !den.ok()) return ratios;
  const auto& a = use_cpu ? num.cpu : num.samples;
  const auto& b = use_cpu ? den.cpu : den.samples;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (b[i] > 0) ratios.push_back(a[i] / b[i]);
  return ratios;
}
}  // namespace

double paired_ratio(const io_variant& num, const io_variant& den, bool use_cpu) {
  std::vector<double> r = round_ratios(num, den, use_cpu);
  return r.empty() ? NAN : median(r);
}

void add_paired_ratio(report& rep, const std::string& name, const std::string& params,
                      const io_variant& num, const io_variant& den, goal_kind goal,
                      double goal_value, const std::string& note, bool use_cpu) {
  row r;
  r.section = "io";
  r.name = name;
  r.params = params;
  r.unit.push_back('x');
  r.goal = goal;
  r.goal_value = goal_value;
  r.note = note;
  const std::vector<double> ratios = round_ratios(num, den, use_cpu);
  if (!ratios.empty()) {
    r.value = median(ratios);
    // No samples in the row: its "best" column would take the largest
    // ratio, which is the worst one here. The range goes to the note.
    char buf[64];
    std::snprintf(buf, sizeof buf, "rounds %.3g-%.3g", min_of(ratios), max_of(ratios));
    r.note = r.note.empty() ? buf : r.note + "; " + buf;
  } else {
    r.note = "n/a (" + std::string(!num.ok() ? num.name : den.name) + " not measured)";
  }
  rep.add(std::move(r));
}

void run_io(const config& cfg, report& rep) {
  raise_fd_limit();
  // The parts (main.cpp's table): `--only io` runs them all, io.PART one.
  auto part = [&](const char* p) { return cfg.wants("io") || cfg.wants(std::string("io.") + p); };
  if (part("mapreduce")) run_io_mapreduce(cfg, rep);
  if (part("server")) run_io_server(cfg, rep);
  if (part("latency")) run_io_latency(cfg, rep);
  if (part("scale")) run_io_scale(cfg, rep);
}

}  // namespace weft_bench
