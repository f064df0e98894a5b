// weft-bench — io: the map-reduce microbenchmark of Cilk-L §5 (Figure 1's
// distMapReduce), with latency (Figures 2-3) and at zero latency as an
// overhead breakdown (Figure 4).
//
//   map_reduce(lo, hi):
//     leaf:  fd = timerfd armed with the latency L        // "open a connection"
//            read(fd)                                     // the reply, after L
//            return (fib(n) with serial base b + lo) mod 10^9
//     else:  (a, b) = fork_join(map_reduce(lo, mid), map_reduce(mid, hi))
//            return (a + b) mod 10^9
//
// Variants (all on the same tree, result checked against fib_reference):
//   Ideal              zero latency (timerfd armed in the past), plain read():
//                      no future, no backend — Cilk-F with reads that return
//   blocking, P / 2P   io::read on io_backend::blocking: the worker blocks for
//                      L (Cilk-F, and Cilk-F (O) oversubscribed with 2P)
//   I/O futures        io::read(...).get() on epoll / io_uring, ProWS / ParWS
//
// Every read of a leaf is issued within microseconds of the start (the tree
// is cheap) and every unit of fib work waits behind one latency edge, so no
// schedule beats L + T1/P (reported with the classic max(T1/P, span) bound,
// span = L + the fib's span): I/O futures reach Ideal only when L << T1/P.
// T1 is the CPU time of the Ideal on one worker (the work; wall time would
// count the moments other programs hold the cores).
// Two shapes, as the paper's Figure 3 has two: a latency-bound one (small fib,
// also run with the blocking variants, Figure 2's story) and a work-bound one
// (large fib). The I/O-future goal <= 1.10 x Ideal is judged where L <= 5% of
// T1/P, that is where the work term dominates the weighted span; elsewhere
// the row notes the expected ratio, about 1 + L/Ideal.
// Each variant has its own runtime; the variants of one figure are timed in
// interleaved rounds (io.cpp), ratios are medians of per-round ratios. Each
// row's note gives the median CPU time of the whole process as well.
#include <sched.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <weft/io.hpp>
#include <weft/weft.hpp>

#include "bench.hpp"
#include "io_breakeven.hpp"
#include "io_common.hpp"
#include "stats.hpp"

namespace weft_bench {
namespace {

constexpr std::uint64_t kModulus = 1'000'000'000;

struct mr_shape {
  unsigned long items;
  int n;     // fib(n) per item
  int base;  // serial below this
};

std::string shape_string(const mr_shape& s) {
  return "N=" + std::to_string(s.items) + " fib(" + std::to_string(s.n) + ")/b" +
         std::to_string(s.base);
}

std::string latency_string(long latency_us) {
  if (latency_us == 0) return "L=0";
  if (latency_us % 1000 == 0) return "L=" + std::to_string(latency_us / 1000) + "ms";
  return "L=" + std::to_string(latency_us) + "us";
}

enum class leaf_read { plain, future };

struct mr_run {
  mr_shape shape;
  long latency_us;  // 0: the timer has expired before the read
  leaf_read how;
  bool nonblocking;  // timerfd opened O_NONBLOCK (epoll / io_uring variants)
};

// The emulated connection: a timerfd that becomes readable after the latency.
// Latency 0 arms it at an absolute time long past (a zero relative time would
// disarm it), so it has expired before anyone reads it.
int open_connection(long latency_us, bool nonblocking) {
  int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | (nonblocking ? TFD_NONBLOCK : 0));
  if (fd < 0) throw std::system_error(errno, std::system_category(), "timerfd_create");
  itimerspec spec{};
  int flags = 0;
  if (latency_us == 0) {
    spec.it_value.tv_nsec = 1;
    flags = TFD_TIMER_ABSTIME;
  } else {
    spec.it_value.tv_sec = static_cast<time_t>(latency_us / 1'000'000);
    spec.it_value.tv_nsec = static_cast<long>(latency_us % 1'000'000) * 1000;
  }
  if (::timerfd_settime(fd, flags, &spec, nullptr) != 0) {
    int e = errno;
    ::close(fd);
    throw std::system_error(e, std::system_category(), "timerfd_settime");
  }
  return fd;
}

std::uint64_t leaf(unsigned long i, const mr_run& r) {
  int fd = open_connection(r.latency_us, r.nonblocking);
  std::uint64_t expirations = 0;
  std::size_t got = 0;
  std::error_code ec;
  if (r.how == leaf_read::plain) {
    ssize_t n = ::read(fd, &expirations, sizeof expirations);
    if (n < 0) ec = std::error_code(errno, std::system_category());
    got = n < 0 ? 0 : static_cast<std::size_t>(n);
  } else {
    got = weft::io::read(fd, &expirations, sizeof expirations).get(ec);
  }
  ::close(fd);  // before computing: do not hold descriptors
  if (ec) throw std::system_error(ec, "read(timerfd)");
  if (got != sizeof expirations || expirations != 1)
    throw std::runtime_error("timerfd read returned " + std::to_string(got) + " bytes, " +
                             std::to_string(expirations) + " expirations");
  return (io_fib_parallel(r.shape.n, r.shape.base) + i) % kModulus;
}

std::uint64_t map_reduce(unsigned long lo, unsigned long hi, const mr_run& r) {
  if (hi - lo == 0) return 0;
  if (hi - lo == 1) return leaf(lo, r);
  unsigned long mid = lo + (hi - lo) / 2;
  auto [a, b] = weft::fork_join([&] { return map_reduce(lo, mid, r); },
                                [&] { return map_reduce(mid, hi, r); });
  return (a + b) % kModulus;
}

std::uint64_t expected_sum(const mr_shape& s) {
  const auto f = static_cast<std::uint64_t>(fib_reference(s.n));
  std::uint64_t sum = 0;
  for (unsigned long i = 0; i < s.items; ++i) sum = (sum + (f + i) % kModulus) % kModulus;
  return sum;
}

// A variant: its own runtime (kept for the whole interleaved group) and run.
struct mr_variant {
  std::string name;
  weft::options opts;
  mr_run run;
  bool needs_uring = false;
};

// Builds the io_variants of `specs` (skipping io_uring ones when it is not
// usable) and measures them interleaved. Returns, per spec, the index into
// `out` or -1 when skipped.
std::vector<int> measure_group(const config& cfg, const std::vector<mr_variant>& specs,
                               std::vector<io_variant>& out,
                               std::vector<std::unique_ptr<weft::runtime>>& runtimes) {
  std::vector<int> index;
  out.clear();
  runtimes.clear();
  for (const auto& s : specs) {
    if (s.needs_uring && !io_uring_usable()) {
      index.push_back(-1);
      continue;
    }
    runtimes.push_back(std::make_unique<weft::runtime>(s.opts));
    weft::runtime* rt = runtimes.back().get();
    const std::uint64_t expected = expected_sum(s.run.shape);
    const mr_run run = s.run;
    io_variant v;
    v.name = s.name;
    v.run = [rt, run, expected](double&) {
      std::uint64_t got = rt->run([&] { return map_reduce(0, run.shape.items, run); });
      return got == expected;
    };
    index.push_back(static_cast<int>(out.size()));
    out.push_back(std::move(v));
  }
  run_interleaved(cfg, out);
  return index;
}

std::string uring_missing_note() {
  std::string why;
  io_uring_usable(&why);
  return "n/a (io_uring unavailable: " + why + ")";
}

// Serial time of fib(n) in seconds, the serial part of the fib's span: the
// median of a few runs, in this thread's CPU time (wall time would count the
// moments another program holds the core).
double serial_fib_seconds(int n) {
  auto thread_cpu = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  volatile int nv = n;
  std::vector<double> s;
  for (int i = 0; i < 15; ++i) {
    const double t0 = thread_cpu();
    std::uint64_t r = io_fib_serial(nv);
    do_not_optimize(r);
    s.push_back(thread_cpu() - t0);
  }
  return median(s);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// T1 (the Ideal on one worker) and the Ideal on P workers, side by side.
// Returns T1, the work, in seconds (NaN if not measured): the CPU time of the
// one-worker run, which a busy machine does not inflate as it does wall time.
double measure_t1(const config& cfg, report& rep, const mr_shape& shape, unsigned P) {
  const std::string sh = shape_string(shape);
  watchdog_scope wd("io: map-reduce T1, " + sh, std::chrono::seconds(cfg.quick ? 120 : 300));
  const mr_run ideal{shape, 0, leaf_read::plain, false};
  std::vector<mr_variant> specs = {
      {"map-reduce Ideal, 1 worker (T1)", io_options(1, weft::io_backend::epoll), ideal},
      {"map-reduce Ideal, P workers", io_options(P, weft::io_backend::epoll), ideal},
  };
  std::vector<io_variant> vs;
  std::vector<std::unique_ptr<weft::runtime>> rts;
  measure_group(cfg, specs, vs, rts);
  for (int i = 0; i < 2; ++i) {
    row r = io_row(vs[i].name, sh + " L=0, " + workers_param(i == 0 ? 1u : P), vs[i], 1, "s");
    if (r.note.empty()) r.note = "cpu " + fmt("%.3g s", median_cpu(vs[i]));
    rep.add(std::move(r));
  }
  add_paired_ratio(rep, "map-reduce Ideal speedup T1/TP", sh + " L=0, " + workers_param(P), vs[0],
                   vs[1], goal_kind::none, 0, "ideal " + std::to_string(P) + "x");
  return vs[0].ok() ? median_cpu(vs[0]) : NAN;
}

// One latency of one shape: Ideal beside the blocking and I/O-future variants.
void measure_latency(const config& cfg, report& rep, const mr_shape& shape, long latency_us,
                     unsigned P, bool with_blocking, double t1, double fib_span) {
  const std::string sh = shape_string(shape);
  const std::string lat = latency_string(latency_us);
  auto params_for = [&](unsigned w) { return sh + " " + lat + ", " + workers_param(w); };
  const std::string params = params_for(P);
  watchdog_scope wd("io: map-reduce " + params, std::chrono::seconds(cfg.quick ? 180 : 420));

  const mr_run ideal{shape, 0, leaf_read::plain, false};
  const mr_run blocking{shape, latency_us, leaf_read::future, false};
  const mr_run futures{shape, latency_us, leaf_read::future, true};
  using weft::io_backend;
  using weft::steal_policy;
  std::vector<mr_variant> specs;
  specs.push_back(
      {"map-reduce Ideal (zero latency, read())", io_options(P, io_backend::epoll), ideal});
  if (with_blocking) {
    specs.push_back({"map-reduce blocking read, P workers", io_options(P, io_backend::blocking),
                     blocking});
    specs.push_back({"map-reduce blocking read, 2P workers",
                     io_options(2 * P, io_backend::blocking), blocking});
  }
  // epoll (the workers poll), Cilk-L's I/O threads and io_uring; the paper's
  // two policies on each.
  for (io_backend b : {io_backend::epoll, io_backend::epoll_threads, io_backend::io_uring}) {
    for (steal_policy p : {steal_policy::proactive, steal_policy::parsimonious}) {
      specs.push_back({std::string("map-reduce I/O futures, ") + backend_label(b) + " " +
                           policy_label(p),
                       io_options(P, b, p), futures, b == io_backend::io_uring});
    }
  }

  std::vector<io_variant> vs;
  std::vector<std::unique_ptr<weft::runtime>> rts;
  std::vector<int> idx = measure_group(cfg, specs, vs, rts);

  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string p = params_for(specs[i].opts.workers);
    if (idx[i] < 0) {
      rep.add_missing("io", specs[i].name, p, uring_missing_note());
      continue;
    }
    const io_variant& v = vs[static_cast<std::size_t>(idx[i])];
    row r = io_row(specs[i].name, p, v, 1, "s");
    if (r.note.empty()) {
      r.note = "cpu " + fmt("%.3g s", median_cpu(v));
      if (specs[i].opts.io == io_backend::blocking) {
        const double nlp =
            static_cast<double>(shape.items) * latency_us * 1e-6 / specs[i].opts.workers;
        r.note += "; N*L/workers = " + fmt("%.3g s", nlp);
      }
    }
    rep.add(std::move(r));
  }

  // The bounds. T1/P from the measured T1; the weighted span: the latency
  // plus the fib's span (its serial base case; spawn costs ignored).
  const double L = latency_us * 1e-6;
  const double t1p = t1 / P;
  const double span = L + fib_span;
  const double classic = std::max(t1p, span);
  const double dag = L + t1p;  // all fib work waits behind a latency edge
  const bool work_dominates = !std::isnan(t1) && L <= 0.05 * t1p;
  {
    row b = make_row("io", "map-reduce bound max(T1/P, L+span)", params, {classic}, "s");
    b.samples.clear();
    b.note = "T1/P " + fmt("%.3g s", t1p) + " (T1: CPU time, 1 worker), L+span " +
             fmt("%.3g s", span) + "; every leaf's work waits behind L: L+T1/P = " +
             fmt("%.3g s", dag) +
             (work_dominates ? " (work dominates)" : " (latency matters: L > 5% of T1/P)");
    if (std::isnan(t1)) b.note = "n/a (T1 not measured)";
    rep.add(std::move(b));
  }

  const int ideal_i = idx[0];
  if (ideal_i < 0) return;
  const io_variant& iv = vs[static_cast<std::size_t>(ideal_i)];
  for (std::size_t i = 1; i < specs.size(); ++i) {
    std::string short_name = specs[i].name.substr(std::string("map-reduce ").size());
    const std::string p = params_for(specs[i].opts.workers);
    std::string name = "map-reduce " + short_name + " / Ideal";
    if (name.size() > 42) name = "mr " + short_name + " / Ideal";
    if (idx[i] < 0) {
      rep.add_missing("io", name, p, uring_missing_note());
      continue;
    }
    const io_variant& v = vs[static_cast<std::size_t>(idx[i])];
    const bool is_future = specs[i].opts.io != io_backend::blocking;
    goal_kind g = goal_kind::none;
    std::string note;
    if (is_future) {
      if (work_dominates) {
        g = goal_kind::at_most;
        note = "work dominates: L <= 5% of T1/P";
      } else if (iv.ok()) {
        // No leaf can compute before its reply: expect about L + Ideal.
        note = "latency matters: expect ~1 + L/Ideal = " +
               fmt("%.3g", 1 + L / median(iv.samples));
      }
    }
    add_paired_ratio(rep, name, p, v, iv, g, 1.10, note);
  }
}

// Paper 000 Figure 4: each mechanism's overhead at zero latency.
void measure_breakdown(const config& cfg, report& rep, const mr_shape& shape, unsigned P) {
  const std::string params = shape_string(shape) + " L=0, " + workers_param(P);
  watchdog_scope wd("io: breakdown " + params, std::chrono::seconds(cfg.quick ? 120 : 300));
  using weft::io_backend;
  const mr_run ideal{shape, 0, leaf_read::plain, false};
  const mr_run blocking{shape, 0, leaf_read::future, false};
  const mr_run future{shape, 0, leaf_read::future, true};
  const auto pro = weft::steal_policy::proactive;
  std::vector<mr_variant> specs = {
      {"breakdown Ideal (read(), no future)", io_options(P, io_backend::epoll), ideal},
      {"breakdown +future (blocking backend)", io_options(P, io_backend::blocking), blocking},
      {"breakdown +event (epoll, try first)", io_options(P, io_backend::epoll, pro, true), future},
      {"breakdown +I/O thread (epoll_threads, no try)",
       io_options(P, io_backend::epoll_threads, pro, false), future},
      {"breakdown io_uring, try first", io_options(P, io_backend::io_uring, pro, true), future,
       true},
      {"breakdown io_uring, every op to ring", io_options(P, io_backend::io_uring, pro, false),
       future, true},
  };
  const char* notes[] = {
      "",
      "io_future around the same read()",
      "the worker's non-blocking read succeeds",
      "SPSC queue + eventfd + I/O thread per op",
      "the worker's non-blocking read succeeds",
      "submit to the ring, reaper thread completes",
  };
  std::vector<io_variant> vs;
  std::vector<std::unique_ptr<weft::runtime>> rts;
  std::vector<int> idx = measure_group(cfg, specs, vs, rts);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (idx[i] < 0) {
      rep.add_missing("io", specs[i].name, params, uring_missing_note());
      continue;
    }
    const io_variant& v = vs[static_cast<std::size_t>(idx[i])];
    row r = io_row(specs[i].name, params, v, 1, "s");
    if (r.note.empty() && v.ok()) {
      r.note = "cpu " + fmt("%.3g s", median_cpu(v));
      if (*notes[i]) r.note += std::string("; ") + notes[i];
    }
    rep.add(std::move(r));
  }
  if (idx[0] < 0) return;
  const io_variant& iv = vs[static_cast<std::size_t>(idx[0])];
  for (std::size_t i = 1; i < specs.size(); ++i) {
    const std::string name =
        "bd " + specs[i].name.substr(std::string("breakdown ").size()) + " / Ideal";
    if (idx[i] < 0) {
      rep.add_missing("io", name, params, uring_missing_note());
      continue;
    }
    const io_variant& v = vs[static_cast<std::size_t>(idx[i])];
    add_paired_ratio(rep, name, params, v, iv, goal_kind::at_most, 1.03, "wall time");
  }
  // The same, in CPU time of the whole process (workers and I/O threads):
  // what each mechanism costs, and much steadier than wall time when other
  // programs compete for the cores. Per operation: the extra CPU over Ideal.
  for (std::size_t i = 1; i < specs.size(); ++i) {
    const std::string name =
        "bd " + specs[i].name.substr(std::string("breakdown ").size()) + " / Ideal CPU";
    if (idx[i] < 0) {
      rep.add_missing("io", name, params, uring_missing_note());
      continue;
    }
    const io_variant& v = vs[static_cast<std::size_t>(idx[i])];
    std::string note = "CPU time";
    if (v.ok() && iv.ok()) {
      // The extra CPU per operation that this ratio stands for.
      const double per_op_us = (paired_ratio(v, iv, true) - 1) * median_cpu(iv) * 1e6 /
                               static_cast<double>(shape.items);
      note += fmt(", %+.3g us CPU per operation", per_op_us);
    }
    add_paired_ratio(rep, name, params, v, iv, goal_kind::at_most, 1.03, note, /*use_cpu=*/true);
  }
}

// --- the papers' scale (part io.scale): Cilk-L Figure 2 and LHWS Figure 11
//
// 5,000 connections, latencies 1/50/100/500 ms, P = 1, 2, 4, 8 workers; the
// speedup of every variant over the blocking variant on one worker (Cilk-F's
// T1), as the papers plot it. And the oversubscription break-even: the
// latency at which I/O futures on P workers cost what blocking reads on 2P
// threads cost (Cilk-L: about 7 ms), from a sweep of latencies.

// Pins the threads created while it lives (a runtime's workers inherit the
// mask of the thread that creates them) to the first `cpus` CPUs this
// process may use; restores the calling thread's mask at the end. No-op
// when cpus is 0 or not below the CPUs available (nothing to restrict).
class pin_scope {
 public:
  explicit pin_scope(unsigned cpus) {
    if (cpus == 0 || ::sched_getaffinity(0, sizeof saved_, &saved_) != 0) return;
    if (static_cast<unsigned>(CPU_COUNT(&saved_)) <= cpus) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    unsigned taken = 0;
    for (int c = 0; c < CPU_SETSIZE && taken < cpus; ++c) {
      if (!CPU_ISSET(c, &saved_)) continue;
      CPU_SET(c, &set);
      ++taken;
    }
    active_ = ::sched_setaffinity(0, sizeof set, &set) == 0;
  }
  ~pin_scope() {
    if (active_) ::sched_setaffinity(0, sizeof saved_, &saved_);
  }
  pin_scope(const pin_scope&) = delete;
  pin_scope& operator=(const pin_scope&) = delete;
  bool active() const { return active_; }

 private:
  cpu_set_t saved_{};
  bool active_ = false;
};


// The paper's variant names, for the notes.
const char* paper_name(const mr_variant& v) {
  if (v.run.latency_us == 0) return "Ideal";
  if (v.opts.io == weft::io_backend::blocking) return nullptr;  // set by the caller
  if (v.opts.io == weft::io_backend::epoll_threads) return "Cilk-L's mechanism";
  return v.opts.policy == weft::steal_policy::parsimonious ? "ParWS (LHWS)" : "Cilk-L (ProWS)";
}

// Blocking reads on `workers` threads take about ceil(N/workers) x L: the
// scale points measure them on a part of the tree, `workers` x k items with
// k leaves per thread (about `budget` seconds), and scale the time by N over
// those items. Returns the number of items measured.
unsigned long blocking_items(unsigned long n, unsigned workers, long latency_us, double budget) {
  const double l = latency_us * 1e-6;
  const auto per_thread = static_cast<unsigned long>(std::max(2.0, std::round(budget / l)));
  const unsigned long k = std::min(per_thread, std::max(1ul, n / workers));
  return std::min(n, k * workers);
}

void measure_scale(const config& cfg0, report& rep, const mr_shape& shape,
                   const std::vector<long>& latencies_us, const std::vector<unsigned>& workers,
                   double budget) {
  const unsigned cpus = online_cpus();
  const std::string sh = shape_string(shape);
  using weft::io_backend;
  using weft::steal_policy;
  for (long latency_us : latencies_us) {
    // Few repetitions for the long points (the 500 ms runs dominate).
    config cfg = cfg0;
    cfg.reps = std::min(cfg0.reps, cfg0.quick ? 2 : 3);
    const std::string lat = latency_string(latency_us);
    double t1_blocking = NAN;  // the blocking variant on one worker, all N items
    for (unsigned P : workers) {
      // Not pinned: the P workers share the machine's CPUs with everything
      // else; with P = 1 the blocking 2P variant's two threads get the two
      // CPUs, as Cilk-F (O) gets a core's two hyperthreads in the paper.
      const std::string params = sh + " " + lat + ", " + workers_param(P);
      watchdog_scope wd("io: scale " + params, std::chrono::seconds(cfg.quick ? 180 : 600));
      const unsigned long nb1 = blocking_items(shape.items, P, latency_us, budget);
      const unsigned long nb2 = blocking_items(shape.items, 2 * P, latency_us, budget);
      const mr_shape part1{nb1, shape.n, shape.base}, part2{nb2, shape.n, shape.base};
      std::vector<mr_variant> specs = {
          {"scale Ideal (zero latency, read())", io_options(P, io_backend::epoll),
           {shape, 0, leaf_read::plain, false}},
          {"scale blocking read, P workers", io_options(P, io_backend::blocking),
           {part1, latency_us, leaf_read::future, false}},
          {"scale blocking read, 2P workers", io_options(2 * P, io_backend::blocking),
           {part2, latency_us, leaf_read::future, false}},
      };
      for (io_backend b : {io_backend::epoll, io_backend::io_uring})
        for (steal_policy p : {steal_policy::proactive, steal_policy::parsimonious})
          specs.push_back({std::string("scale I/O futures, ") + backend_label(b) + " " +
                               policy_label(p),
                           io_options(P, b, p), {shape, latency_us, leaf_read::future, true},
                           b == io_backend::io_uring});
      std::vector<io_variant> vs;
      std::vector<std::unique_ptr<weft::runtime>> rts;
      std::vector<int> idx = measure_group(cfg, specs, vs, rts);

      // Blocking times scaled to the N items.
      std::vector<double> scale(specs.size(), 1.0);
      scale[1] = static_cast<double>(shape.items) / static_cast<double>(nb1);
      scale[2] = static_cast<double>(shape.items) / static_cast<double>(nb2);
      if (P == 1 && idx[1] >= 0 && vs[static_cast<std::size_t>(idx[1])].ok()) {
        const io_variant& b = vs[static_cast<std::size_t>(idx[1])];
        t1_blocking = median(b.samples) * scale[1];
        row r = make_row("io", "scale blocking T1 (1 worker, the baseline)",
                         sh + " " + lat, scaled(b.samples, scale[1]), "s");
        r.note = "Cilk-F's T1: measured on " + std::to_string(nb1) + " of " +
                 std::to_string(shape.items) + " items, scaled x" + fmt("%.4g", scale[1]) +
                 " (each leaf holds the worker for L)";
        rep.add(std::move(r));
      }
      for (std::size_t i = 0; i < specs.size(); ++i) {
        const std::string& name = specs[i].name;
        std::string sname = "scale speedup " + name.substr(std::string("scale ").size());
        if (idx[i] < 0) {
          rep.add_missing("io", sname, params, uring_missing_note());
          continue;
        }
        const io_variant& v = vs[static_cast<std::size_t>(idx[i])];
        if (!v.ok() || std::isnan(t1_blocking)) {
          row r = io_row(sname, params, v, 1, "x");
          r.samples.clear();
          r.value = NAN;
          if (!r.failed) r.note = "n/a (the blocking T1 was not measured)";
          rep.add(std::move(r));
          continue;
        }
        std::vector<double> sp;
        for (double s : v.samples) sp.push_back(t1_blocking / (s * scale[i]));
        row r = make_row("io", sname, params, sp, "x");
        r.higher_is_better = true;
        const char* paper = paper_name(specs[i]);
        std::string pn = paper ? paper : (i == 1 ? "Cilk-F" : "Cilk-F (O)");
        r.note = pn + "; T_P " + fmt("%.3g s", median(v.samples) * scale[i]) + ", cpu " +
                 fmt("%.3g s", median_cpu(v));
        if (i == 1 || i == 2) {
          const unsigned long nb = i == 1 ? nb1 : nb2;
          r.note += "; measured on " + std::to_string(nb) + " of " +
                    std::to_string(shape.items) + " items, scaled";
        }
        if (P > cpus) r.note += "; P > " + std::to_string(cpus) + " cores: oversubscribed";
        rep.add(std::move(r));
      }
      // The papers' claim at high latency: the futures on P workers beat the
      // OS scheduling 2P blocking threads (Cilk-L: ~2P speedup for Cilk-F (O)
      // against 9x-313x for Cilk-L at 50 ms).
      if (latency_us >= 50'000 && idx[2] >= 0 && idx[3] >= 0) {
        const io_variant& f = vs[static_cast<std::size_t>(idx[3])];
        const io_variant& b = vs[static_cast<std::size_t>(idx[2])];
        row r;
        r.section = "io";
        r.name = "scale futures epoll ProWS / blocking 2P";
        r.params = params;
        r.unit = "x";
        r.goal = goal_kind::at_most;
        r.goal_value = 1.0;
        if (f.ok() && b.ok()) {
          r.value = median(f.samples) / (median(b.samples) * scale[2]);
          r.note = "time ratio, blocking scaled to N items";
        } else {
          r.note = "n/a (a variant failed)";
        }
        rep.add(std::move(r));
      }
    }
  }
}

// The break-even sweep: the paper's item (fib(30)/b25, ~7 ms on their
// machine) on fewer connections (the break-even is per connection: about
// where L equals the work w of one item once N >> 2P, when the 2P threads
// have twice the hardware contexts of the P workers), I/O futures on P
// workers against blocking reads on 2P threads, ratios of paired rounds per
// latency, the crossing interpolated (io_breakeven.hpp).
// One configuration of the break-even: P workers against 2P blocking
// threads, both on `cpus` CPUs (0: not pinned, the whole machine).
struct be_config {
  unsigned P;
  unsigned cpus;
};

void measure_break_even(const config& cfg0, report& rep, const mr_shape& shape,
                        const std::vector<long>& latencies_us,
                        const std::vector<be_config>& configs) {
  const unsigned cpus = online_cpus();
  const std::string sh = shape_string(shape);
  config cfg = cfg0;
  cfg.reps = std::min(cfg0.reps, cfg0.quick ? 2 : 3);
  using weft::io_backend;
  const double w_item = serial_fib_seconds(shape.n);  // one item's work
  struct fut {
    io_backend b;
    const char* label;
  };
  const std::vector<fut> futs = {{io_backend::epoll, "epoll ProWS"},
                                 {io_backend::epoll_threads, "epoll_threads ProWS (Cilk-L)"}};
  for (const be_config& bc : configs) {
    const unsigned P = bc.P;
    const unsigned on = bc.cpus == 0 ? cpus : std::min(bc.cpus, cpus);
    // The paper: Cilk-F (O) runs 2 threads per core, on its 2 hyperthreads,
    // Cilk-L one worker (and one I/O thread) per core. The spare hardware
    // contexts are what let the oversubscribed threads win at short
    // latencies: with P = 1 on 2 CPUs, weft's setting is the paper's.
    std::string who = workers_param(P) + ", " + std::to_string(2 * P) + " threads on " +
                      std::to_string(on) + (on == 1 ? " CPU" : " CPUs");
    if (bc.cpus != 0) {
      who += " (pinned)";
      const bool can_pin = pin_scope(bc.cpus).active();
      if (!can_pin) {
        for (const fut& f : futs)
          rep.add_missing("io", std::string("breakeven latency, ") + f.label + " vs blocking 2P",
                          sh + ", " + who, "n/a (cannot pin to " + std::to_string(bc.cpus) +
                                               " of the CPUs this process may use)");
        continue;
      }
    }
    std::vector<std::vector<double>> ratios(futs.size());
    std::vector<double> lat_ms;
    for (long latency_us : latencies_us) {
      const std::string params = sh + " " + latency_string(latency_us) + ", " + who;
      watchdog_scope wd("io: break-even " + params, std::chrono::seconds(cfg.quick ? 120 : 300));
      pin_scope pin(bc.cpus);
      const mr_run blocking{shape, latency_us, leaf_read::future, false};
      const mr_run futures{shape, latency_us, leaf_read::future, true};
      std::vector<mr_variant> specs = {
          {"blocking 2P", io_options(2 * P, io_backend::blocking), blocking}};
      for (const fut& f : futs)
        specs.push_back({f.label, io_options(P, f.b), futures});
      std::vector<io_variant> vs;
      std::vector<std::unique_ptr<weft::runtime>> rts;
      measure_group(cfg, specs, vs, rts);
      lat_ms.push_back(latency_us * 1e-3);
      for (std::size_t k = 0; k < futs.size(); ++k) {
        const std::string name = std::string("breakeven futures ") +
                                 (futs[k].b == io_backend::epoll ? "epoll" : "epoll_threads") +
                                 " / blocking 2P";
        ratios[k].push_back(paired_ratio(vs[k + 1], vs[0]));
        add_paired_ratio(rep, name, params, vs[k + 1], vs[0], goal_kind::none, 0,
                         "< 1: the futures win; blocking 2P " +
                             (vs[0].ok() ? fmt("%.3g s", median(vs[0].samples)) : "n/a"));
      }
    }
    for (std::size_t k = 0; k < futs.size(); ++k) {
      const break_even be = find_break_even(lat_ms, ratios[k]);
      row r;
      r.section = "io";
      r.name = std::string("breakeven latency, ") + futs[k].label + " vs blocking 2P";
      r.params = sh + ", " + who;
      r.unit = "ms";
      const std::string work = "one item's work w = " + fmt("%.3g ms", w_item * 1e3) +
                               "; paper: ~7 ms with w ~6.6 ms (fib(30)/b25, 32.87 s / 5000)";
      // A sweep whose ratios all stay near 1 has no clear break-even: its
      // crossing is the noise of the machine (a loaded machine gives the 2P
      // threads no spare CPU), say so.
      double lo = INFINITY, hi = -INFINITY;
      for (double x : ratios[k])
        if (!std::isnan(x)) {
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        }
      const bool flat = lo >= 0.85 && hi <= 1.0 / 0.85;
      std::string flat_note = flat ? "flat: every ratio within " + fmt("%.3g", lo) + "-" +
                                         fmt("%.3g", hi) + ", no clear break-even; "
                                   : "";
      switch (be.where) {
        case break_even::kind::found:
          r.value = be.latency;
          r.note = flat_note + "L*/w = " + fmt("%.3g", be.latency / (w_item * 1e3)) + "; " + work;
          break;
        case break_even::kind::below:
          r.note = "n/a: the futures win already at " + fmt("%.3g ms", be.latency) + "; " +
                   flat_note + work;
          break;
        case break_even::kind::above:
          r.note = "n/a: blocking 2P still wins at " + fmt("%.3g ms", be.latency) + "; " +
                   flat_note + work;
          break;
        case break_even::kind::none:
          r.note = "n/a (not measured)";
          break;
      }
      rep.add(std::move(r));
    }
  }
}

}  // namespace

void run_io_scale(const config& cfg, report& rep) {
  // 5,000 connections as in both papers. The item is smaller than the
  // papers' fib(30)/b25 (~7 ms) so that T1 stays about half a second: the
  // speedups over the blocking T1 then run higher than the paper's (the
  // blocking T1 is N x (L + w), the futures' time about L + N x w / P).
  const mr_shape shape = cfg.quick ? mr_shape{5000, 18, 14} : mr_shape{5000, 21, 15};
  const std::vector<long> lat = cfg.quick ? std::vector<long>{1000, 50'000}
                                          : std::vector<long>{1000, 50'000, 100'000, 500'000};
  const std::vector<unsigned> ps =
      cfg.quick ? std::vector<unsigned>{1, 2} : std::vector<unsigned>{1, 2, 4, 8};
  measure_scale(cfg, rep, shape, lat, ps, cfg.quick ? 0.1 : 0.3);

  const mr_shape item = cfg.quick ? mr_shape{32, 30, 25} : mr_shape{64, 30, 25};
  const std::vector<long> sweep =
      cfg.quick ? std::vector<long>{500, 2000, 8000, 30'000}
                : std::vector<long>{100, 500, 1000, 2000, 5000, 10'000, 20'000};
  // P = 1 on both CPUs (the paper's hardware per core: 2 contexts); full
  // mode adds P = 1 pinned to one CPU and P = 2 on two: no spare context.
  measure_break_even(cfg, rep, item, sweep,
                     cfg.quick ? std::vector<be_config>{{1, 0}}
                               : std::vector<be_config>{{1, 0}, {1, 1}, {2, 0}});
}

void run_io_mapreduce(const config& cfg, report& rep) {
  const unsigned P = cfg.workers.back();
  // Latency-bound shape (paper: n=30 b=25, ~7 ms per item against 50-100 ms
  // latency): few items so that the blocking variants (N*L/P) fit the run.
  const mr_shape small = cfg.quick ? mr_shape{32, 24, 18} : mr_shape{64, 24, 18};
  // Work-bound shape (paper: n=35 b=15): ~1 ms of work per item, T1 of about
  // 1 s in full mode (T1/P ~0.5 s on two idle cores, 3-4x that when the
  // machine is shared), 60 ms in quick mode.
  const mr_shape large = cfg.quick ? mr_shape{64, 28, 16} : mr_shape{1024, 28, 16};
  // Breakdown at zero latency (paper: n=30 b=25, ~7 ms per item): ~1 ms of
  // work per operation here; the same item in both modes, fewer in quick.
  const mr_shape many = cfg.quick ? mr_shape{64, 28, 18} : mr_shape{512, 28, 18};
  const std::vector<long> latencies_us =
      cfg.quick ? std::vector<long>{1000, 50'000} : std::vector<long>{1000, 50'000, 100'000};

  for (bool latency_bound : {true, false}) {
    const mr_shape& shape = latency_bound ? small : large;
    const double t1 = measure_t1(cfg, rep, shape, P);
    const double fib_span = serial_fib_seconds(shape.base - 1);
    for (long l : latencies_us)
      measure_latency(cfg, rep, shape, l, P, /*with_blocking=*/latency_bound, t1, fib_span);
  }
  measure_breakdown(cfg, rep, many, P);
}

}  // namespace weft_bench
