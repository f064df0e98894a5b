// weft-bench — priority section, part 2 (I-Cilk §5.2, Figure 5): a job
// server. Jobs of four types arrive as a Poisson process:
//   mm    dense matrix multiply (parallel over row blocks)
//   fib   fork_join fib with a serial cutoff
//   sort  parallel merge sort
//   sw    Smith-Waterman, tiled anti-diagonal wavefront
// each type equally likely. Priorities follow smallest-work-first: the type
// with the least measured work (CPU time on one worker) gets the most urgent
// level (0), then 2, 4, 6. The arrival rate is set to 50 %, 70 % and 95 % of
// the capacity measured just before (wall clock of batches of 16 jobs spawned
// at once; on a shared machine it reflects the CPU share available then).
//
// Flow time = completion minus the *scheduled* arrival time, so a late
// dispatch counts against the scheduler. The dispatcher is a task of level 0
// that sleeps (this_task::sleep_until) until each arrival and spawns the job
// at its level; a root of level 7 waits for everything. Jobs/s counts the
// jobs of a type completed within the arrival window, divided by its length;
// jobs still queued at the end of the window are drained and count in the
// flow times. Each repetition draws a new schedule (fixed seed per
// repetition) and runs it under APS and under the oblivious scheduler.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <weft/weft.hpp>

#include "bench.hpp"
#include "prio.hpp"
#include "stats.hpp"

namespace weft_bench::prio {
namespace {

// ------------------------------------------------------------------ kernels

constexpr int kTypes = 4;
const char* const kTypeName[kTypes] = {"mm", "fib", "sort", "sw"};

// Problem sizes: works of roughly 4, 8, 15 and 30 ms (one core here).
constexpr int mm_n = 230;
constexpr int fib_n = 31, fib_leaf = 16;
constexpr int sort_n = 180000;
constexpr int sw_n = 4000, sw_tile = 200;

struct inputs {
  std::vector<double> a, b;           // mm_n x mm_n
  std::vector<int> unsorted;          // sort_n
  std::vector<char> s1, s2;           // sw_n
  long expected[kTypes] = {};         // checksums
};

long mm_job(const inputs& in) {
  const int n = mm_n;
  std::vector<double> c(static_cast<std::size_t>(n) * n, 0.0);
  weft::parallel_for(0, n, 4, [&](int i) {
    double* ci = &c[static_cast<std::size_t>(i) * n];
    for (int k = 0; k < n; ++k) {
      const double aik = in.a[static_cast<std::size_t>(i) * n + k];
      const double* bk = &in.b[static_cast<std::size_t>(k) * n];
      for (int j = 0; j < n; ++j) ci[j] += aik * bk[j];
    }
  });
  double s = 0;
  for (double x : c) s += x;
  return static_cast<long>(s);
}

long fib_job(const inputs&) { return fib_parallel(fib_n, fib_leaf, fib_leaf); }

void merge_sort(int* a, int* tmp, std::size_t n) {
  if (n <= 8192) {
    std::sort(a, a + n);
    return;
  }
  std::size_t h = n / 2;
  weft::fork_join([=] { merge_sort(a, tmp, h); }, [=] { merge_sort(a + h, tmp + h, n - h); });
  std::merge(a, a + h, a + h, a + n, tmp);
  std::copy(tmp, tmp + n, a);
}

long sort_job(const inputs& in) {
  std::vector<int> v(in.unsorted), tmp(v.size());
  merge_sort(v.data(), tmp.data(), v.size());
  long s = 0;
  for (std::size_t i = 0; i < v.size(); i += 997) s = s * 31 + v[i];
  return std::is_sorted(v.begin(), v.end()) ? s : -1;
}

// Smith-Waterman (linear gap), the best local alignment score. Tiles of
// sw_tile x sw_tile are computed anti-diagonal by anti-diagonal; tile (bi,bj)
// reads boundary row bi (written by the tiles above) and boundary column bj
// (written by the tiles to the left), and writes row bi+1 and column bj+1.
long sw_job(const inputs& in) {
  const int n = sw_n, t = sw_tile, nb = n / t;
  const int match = 2, mismatch = -1, gap = 1;
  std::vector<int> rows(static_cast<std::size_t>(nb + 1) * (n + 1), 0);  // H[bi*t][*]
  std::vector<int> cols(static_cast<std::size_t>(nb + 1) * (n + 1), 0);  // H[*][bj*t]
  std::vector<int> best(static_cast<std::size_t>(nb) * nb, 0);
  auto row = [&](int b) { return &rows[static_cast<std::size_t>(b) * (n + 1)]; };
  auto col = [&](int b) { return &cols[static_cast<std::size_t>(b) * (n + 1)]; };
  for (int d = 0; d <= 2 * (nb - 1); ++d) {
    const int lo = std::max(0, d - (nb - 1)), hi = std::min(d, nb - 1);
    weft::parallel_for(lo, hi + 1, 1, [&](int bi) {
      const int bj = d - bi;
      const int r0 = bi * t, c0 = bj * t;
      const int* top = row(bi);       // H[r0][c0 .. c0+t]
      const int* left = col(bj);      // H[r0+1 .. r0+t][c0]
      int* bottom = row(bi + 1);      // H[r0+t][c0+1 .. c0+t]
      int* right = col(bj + 1);       // H[r0+1 .. r0+t][c0+t]
      int prev[sw_tile + 1], cur[sw_tile + 1];
      for (int j = 0; j <= t; ++j) prev[j] = top[c0 + j];
      int m = 0;
      for (int i = 1; i <= t; ++i) {
        cur[0] = left[r0 + i];
        const char a = in.s1[static_cast<std::size_t>(r0 + i - 1)];
        for (int j = 1; j <= t; ++j) {
          const char b = in.s2[static_cast<std::size_t>(c0 + j - 1)];
          int h = prev[j - 1] + (a == b ? match : mismatch);
          h = std::max(h, prev[j] - gap);
          h = std::max(h, cur[j - 1] - gap);
          h = std::max(h, 0);
          cur[j] = h;
          m = std::max(m, h);
        }
        right[r0 + i] = cur[t];
        std::copy(cur, cur + t + 1, prev);
      }
      for (int j = 1; j <= t; ++j) bottom[c0 + j] = prev[j];
      best[static_cast<std::size_t>(bi) * nb + bj] = m;
    });
  }
  return *std::max_element(best.begin(), best.end());
}

long run_job(int type, const inputs& in) {
  switch (type) {
    case 0: return mm_job(in);
    case 1: return fib_job(in);
    case 2: return sort_job(in);
    default: return sw_job(in);
  }
}

std::unique_ptr<inputs> make_inputs() {
  auto in = std::make_unique<inputs>();
  std::mt19937_64 g(42);
  std::uniform_real_distribution<double> u(-1, 1);
  const std::size_t nn = static_cast<std::size_t>(mm_n) * mm_n;
  in->a.resize(nn);
  in->b.resize(nn);
  for (auto& x : in->a) x = u(g);
  for (auto& x : in->b) x = u(g);
  in->unsorted.resize(sort_n);
  for (auto& x : in->unsorted) x = static_cast<int>(g() >> 33);
  const char acgt[4] = {'A', 'C', 'G', 'T'};
  in->s1.resize(sw_n);
  in->s2.resize(sw_n);
  for (auto& c : in->s1) c = acgt[g() & 3];
  for (int i = 0; i < sw_n; ++i)  // related sequences: a real alignment exists
    in->s2[static_cast<std::size_t>(i)] = (g() % 4 == 0) ? acgt[g() & 3] : in->s1[static_cast<std::size_t>(i)];
  return in;
}

// ------------------------------------------------------------------ server

struct job {
  double arrival = 0;  // scheduled, seconds from the start of the run
  int type = 0;
  double dispatched = 0;
  double finish = -1;
  long result = 0;
};

struct run_result {
  std::vector<job> jobs;
  double window = 0;  // seconds of arrivals
  double total = 0;   // seconds until the last job finished
  bool wrong = false;
};

std::vector<job> make_schedule(double rate, double window, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<int> type(0, kTypes - 1);
  std::vector<job> out;
  for (double t = gap(g); t < window; t += gap(g)) {
    job j;
    j.arrival = t;
    j.type = type(g);
    out.push_back(j);
  }
  return out;
}

void serve(weft::runtime& rt, run_result& r, const inputs& in, const unsigned (&level)[kTypes]) {
  rt.run(weft::priority(7), [&] {
    const auto t0 = clock::now();
    // The dispatcher (level 0) waits on nothing; it returns the job futures,
    // which the root (level 7, less urgent than every job) then waits on.
    auto dispatcher = weft::async(weft::priority(0), [&r, &in, &level, t0] {
      std::vector<weft::future<void>> started;
      started.reserve(r.jobs.size());
      for (job& j : r.jobs) {
        weft::this_task::sleep_until(
            t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(j.arrival)));
        j.dispatched = seconds_since(t0);
        started.push_back(weft::async(weft::priority(level[j.type]), [&j, &in, t0] {
          j.result = run_job(j.type, in);
          j.finish = seconds_since(t0);
        }));
      }
      return started;
    });
    std::vector<weft::future<void>> started = dispatcher.get();
    for (auto& f : started) f.get();
    r.total = seconds_since(t0);
  });
  for (const job& j : r.jobs)
    if (j.result != in.expected[j.type]) r.wrong = true;
}

// Per-run statistics of one job type.
struct type_stats {
  double avg_ms = NAN, p95_ms = NAN, jobs_per_s = 0;
  int count = 0;
};

type_stats stats_of(const run_result& r, int type) {
  std::vector<double> flow;
  int done_in_window = 0;
  for (const job& j : r.jobs) {
    if (j.type != type) continue;
    flow.push_back((j.finish - j.arrival) * 1e3);
    if (j.finish <= r.window) ++done_in_window;
  }
  type_stats s;
  s.count = static_cast<int>(flow.size());
  if (!flow.empty()) {
    s.avg_ms = mean(flow);
    s.p95_ms = percentile(flow, 95);
  }
  s.jobs_per_s = done_in_window / r.window;
  return s;
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

}  // namespace

void run_jobserver(const config& cfg, report& rep) {
  const unsigned workers = cfg.workers.back();
  const double window = cfg.quick ? 1.0 : 3.0;
  const int reps = cfg.quick ? std::min(cfg.reps, 3) : cfg.reps;
  const std::string where = workers_param(workers);

  std::unique_ptr<inputs> in;
  unsigned level[kTypes];
  double work_ms[kTypes];
  double capacity = 0;
  try {
    watchdog_scope wd("priority: job server set-up", std::chrono::seconds(120));
    in = make_inputs();
    // Work (CPU time on one worker, robust to a busy machine) of each type:
    // smallest-work-first levels; and the reference results.
    {
      weft::runtime one{oblivious_options(1)};
      for (int t = 0; t < kTypes; ++t) {
        std::vector<double> s;
        for (int i = 0; i < 4; ++i) {
          const double c0 = process_cpu_seconds();
          long v = one.run([&] { return run_job(t, *in); });
          s.push_back(process_cpu_seconds() - c0);
          if (i == 0) in->expected[t] = v;
          else if (v != in->expected[t]) throw std::runtime_error(std::string("nondeterministic result of ") + kTypeName[t]);
        }
        s.erase(s.begin());  // warm-up
        work_ms[t] = median(s) * 1e3;
      }
    }
    int order[kTypes] = {0, 1, 2, 3};
    std::sort(order, order + kTypes, [&](int a, int b) { return work_ms[a] < work_ms[b]; });
    for (int r = 0; r < kTypes; ++r) level[order[r]] = static_cast<unsigned>(2 * r);
    // Capacity: batches of 4 jobs of each type, all spawned at once.
    weft::runtime rt{oblivious_options(workers)};
    std::vector<double> batch;
    for (int b = 0; b < 4; ++b) {
      auto t0 = clock::now();
      rt.run([&] {
        weft::task_group g;
        for (int k = 0; k < 4; ++k)
          for (int t = 0; t < kTypes; ++t) g.spawn([&in, t] { run_job(t, *in); });
        g.sync();
      });
      if (b > 0) batch.push_back(seconds_since(t0));
    }
    capacity = 4 * kTypes / median(batch);
  } catch (const std::exception& e) {
    rep.add_missing("priority", "job server", where, std::string("error: ") + e.what(), true);
    return;
  }
  {
    std::string note;
    for (int t = 0; t < kTypes; ++t)
      note += std::string(t ? ", " : "") + kTypeName[t] + " " + fmt("%.1f ms", work_ms[t]) +
              " (level " + std::to_string(level[t]) + ")";
    row r;
    r.section = "priority";
    r.name = "job capacity (batch of 16 jobs)";
    r.params = where;
    r.value = capacity;
    r.unit = "jobs/s";
    r.note = "work (1-worker CPU time): " + note + "; then per load: median of " +
             std::to_string(reps) + " runs of " + fmt("%.1f s", window) + " (+ drain)";
    rep.add(std::move(r));
  }

  weft::runtime aps{aps_options(workers)};
  weft::runtime obl{oblivious_options(workers)};
  for (double load : {0.5, 0.7, 0.95}) {
    const double rate = load * capacity;
    const std::string p = fmt("load %.0f%% (%.0f jobs/s), ", load * 100, rate) + where;
    // [mode][type] per-repetition statistics; [mode] throughput.
    std::vector<type_stats> st[2][kTypes];
    std::vector<double> thr[2], lag[2];
    bool wrong = false;
    try {
      watchdog_scope wd("priority: job server " + p, std::chrono::seconds(cfg.quick ? 120 : 300));
      for (int i = 0; i < reps; ++i) {
        auto sched = make_schedule(rate, window, 1000 + static_cast<std::uint64_t>(i));
        for (int mode = 0; mode < 2; ++mode) {
          run_result r;
          r.jobs = sched;
          r.window = window;
          serve(mode == 0 ? aps : obl, r, *in, level);
          wrong = wrong || r.wrong;
          int done = 0;
          std::vector<double> lags;
          for (const job& j : r.jobs) {
            if (j.finish <= window) ++done;
            lags.push_back((j.dispatched - j.arrival) * 1e3);
          }
          thr[mode].push_back(done / window);
          lag[mode].push_back(percentile(lags, 95));
          for (int t = 0; t < kTypes; ++t) st[mode][t].push_back(stats_of(r, t));
        }
      }
    } catch (const std::exception& e) {
      rep.add_missing("priority", "job server", p, std::string("error: ") + e.what(), true);
      continue;
    }
    static const char* mode_name[2] = {"APS", "oblivious"};
    for (int t = 0; t < kTypes; ++t) {
      for (int mode = 0; mode < 2; ++mode) {
        std::vector<double> avg, p95, jps;
        for (const auto& s : st[mode][t]) {
          if (s.count == 0) continue;  // no job of this type in that run
          avg.push_back(s.avg_ms);
          p95.push_back(s.p95_ms);
          jps.push_back(s.jobs_per_s);
        }
        const std::string who = std::string("job ") + kTypeName[t] + " (level " +
                                std::to_string(level[t]) + ") ";
        row a = make_row("priority", who + "avg flow, " + mode_name[mode], p, avg, "ms");
        a.note = fmt("%.1f jobs/s done in window (arrivals %.1f/s)", median(jps), rate / kTypes);
        row b = make_row("priority", who + "p95 flow, " + mode_name[mode], p, p95, "ms");
        if (wrong) a.failed = b.failed = true, a.note = "WRONG RESULT";
        rep.add(std::move(a));
        rep.add(std::move(b));
      }
    }
    for (int mode = 0; mode < 2; ++mode) {
      row r = make_row("priority", std::string("job all: jobs/s, ") + mode_name[mode], p, thr[mode],
                       "jobs/s");
      r.note = fmt("dispatch lag p95 %.2f ms (median of runs)", median(lag[mode]));
      rep.add(std::move(r));
    }
    for (int t = 0; t < kTypes; ++t) {
      std::vector<double> ratio;
      for (std::size_t i = 0; i < st[0][t].size() && i < st[1][t].size(); ++i)
        if (st[0][t][i].count > 0) ratio.push_back(st[0][t][i].avg_ms / st[1][t][i].avg_ms);
      row r = make_row("priority", std::string("job ") + kTypeName[t] + " avg flow APS / oblivious",
                       p, ratio, "x obl");
      rep.add(std::move(r));
    }
  }
}

}  // namespace weft_bench::prio
