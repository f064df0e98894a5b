// weft-bench — sync: programs written around blocking (Concurrent Cilk §6).
//
//  * Figure 8: parfib where every result travels through a sync variable
//    (ivar, mvar, channel), against Go (goroutines returning through
//    channels; bench/go/syncbench.go, built now when `go` is on PATH) and
//    Boost.Fiber (fibers over work-stealing threads, returning through
//    buffered_channel). Time and peak RSS, each in its own process.
//  * Table 2 (sync elision): fill then read 10,000 ivars x 1,000 iterations,
//    with and without a sync separating the phases.
//  * Figure 10 (wavefront): a grid of tiles, divide-and-conquer (NW, then NE
//    || SW, then SE) against one task per tile waiting on its neighbours'
//    ivars.
//  * Channel throughput: ns per message, 1->1 and 4->4, rendezvous and
//    buffered (64), against Go channels and Boost.Fiber channels.
//  * Blocked tasks: 100k and 1M tasks blocked at once on one gate, released
//    together: KiB of peak RSS per blocked task against Go's per goroutine.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <weft/weft.hpp>

#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
#include <boost/fiber/all.hpp>
#endif

#include "bench.hpp"
#include "stats.hpp"

namespace weft_bench {
namespace {

using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

long status_kib(const char* key) { return proc_status_kib(::getpid(), key); }

long serial_fib(int n) { return n < 2 ? n : serial_fib(n - 1) + serial_fib(n - 2); }

// ------------------------------------------------------------ parfib (Fig. 8)

long parfib_ivar(int n) {
  if (n < 2) return n;
  weft::ivar<long> a;
  weft::task_group g;
  g.spawn([&a, n] { a.put(parfib_ivar(n - 1)); });
  long b = parfib_ivar(n - 2);
  long r = a.get() + b;
  g.sync();
  return r;
}

long parfib_mvar(int n) {
  if (n < 2) return n;
  weft::mvar<long> a;
  weft::task_group g;
  g.spawn([&a, n] { a.put(parfib_mvar(n - 1)); });
  long b = parfib_mvar(n - 2);
  long r = a.take() + b;
  g.sync();
  return r;
}

long parfib_channel(int n) {
  if (n < 2) return n;
  weft::channel<long> a(1);  // Go's program: make(chan int64, 1)
  weft::task_group g;
  g.spawn([&a, n] { a.send(parfib_channel(n - 1)); });
  long b = parfib_channel(n - 2);
  long r = *a.recv() + b;
  g.sync();
  return r;
}

#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
long parfib_boost(int n) {
  if (n < 2) return n;
  boost::fibers::buffered_channel<long> a(2);  // capacity: a power of two >= 2
  boost::fibers::fiber f([&a, n] { a.push(parfib_boost(n - 1)); });
  long b = parfib_boost(n - 2);
  long r = a.value_pop() + b;
  f.join();
  return r;
}

// Runs `body` on a Boost.Fiber work-stealing scheduler over `threads`
// threads (the calling one included).
template <class F>
void with_boost_fibers(unsigned threads, F&& body) {
  boost::fibers::mutex m;
  boost::fibers::condition_variable cv;
  bool done = false;
  std::vector<std::thread> helpers;
  for (unsigned i = 1; i < threads; ++i)
    helpers.emplace_back([&] {
      boost::fibers::use_scheduling_algorithm<boost::fibers::algo::work_stealing>(threads);
      std::unique_lock lk(m);
      cv.wait(lk, [&] { return done; });
    });
  boost::fibers::use_scheduling_algorithm<boost::fibers::algo::work_stealing>(threads);
  body();
  {
    std::unique_lock lk(m);
    done = true;
  }
  cv.notify_all();
  for (auto& t : helpers) t.join();
}
#endif

// ------------------------------------------------------------------- children

// "sync-KIND:a:b:..." -> the numbers after the kind.
std::vector<long> kind_args(const std::string& kind) {
  std::vector<long> out;
  std::size_t p = kind.find(':');
  while (p != std::string::npos) {
    std::size_t q = kind.find(':', p + 1);
    out.push_back(std::atol(kind.substr(p + 1, q == std::string::npos ? q : q - p - 1).c_str()));
    p = q;
  }
  return out;
}

void print_tail(bool ok) {
  std::printf("ok=%d\n", ok ? 1 : 0);
  std::printf("vm_hwm_kib=%ld\n", status_kib("VmHWM"));
}

int child_parfib(const std::string& kind, unsigned workers) {
  const int n = static_cast<int>(kind_args(kind).at(0));
  const long expected = serial_fib(n);
  long r = -1;
  double s = 0;
  std::size_t fibers = 0;
  if (kind.rfind("sync-parfib-boost", 0) == 0) {
#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
    with_boost_fibers(workers, [&] {
      auto t0 = clock_type::now();
      r = parfib_boost(n);
      s = since(t0);
    });
#else
    return 4;
#endif
  } else {
    weft::runtime rt{weft::options{.workers = workers}};
    long (*f)(int) = kind.rfind("sync-parfib-ivar", 0) == 0   ? parfib_ivar
                     : kind.rfind("sync-parfib-mvar", 0) == 0 ? parfib_mvar
                                                              : parfib_channel;
    auto t0 = clock_type::now();
    r = rt.run([&] { return f(n); });
    s = since(t0);
    fibers = rt.stats().fibers_created;
  }
  std::printf("seconds=%.6f\nfibers_created=%zu\n", s, fibers);
  print_tail(r == expected);
  return r == expected ? 0 : 1;
}

// n tasks blocked at once on one gate (an ivar), then released together.
int child_blocked(const std::string& kind, unsigned workers) {
  const long n = kind_args(kind).at(0);
  weft::runtime rt{weft::options{.workers = workers}};
  std::atomic<long> waiting{0}, released{0};
  weft::ivar<int> gate;
  weft::ivar<bool> all_arrived;  // put by the last task to reach the gate
  double block_s = 0, release_s = 0;
  long hwm_blocked = 0;
  rt.run([&] {
    weft::task_group g;
    auto t0 = clock_type::now();
    for (long i = 0; i < n; ++i)
      g.spawn([&] {
        // acq_rel: the last arrival's put follows every other arrival.
        if (waiting.fetch_add(1, std::memory_order_acq_rel) == n - 1) all_arrived.put(true);
        released.fetch_add(gate.get(), std::memory_order_relaxed);
      });
    all_arrived.get();  // the spawner pauses; its worker runs the tasks down to the gate
    block_s = since(t0);
    hwm_blocked = status_kib("VmHWM");
    auto t1 = clock_type::now();
    gate.put(1);
    g.sync();
    release_s = since(t1);
  });
  std::printf("block_seconds=%.6f\nrelease_seconds=%.6f\nvm_hwm_blocked_kib=%ld\nfibers_created=%zu\n",
              block_s, release_s, hwm_blocked, rt.stats().fibers_created);
  print_tail(released.load() == n);
  return released.load() == n ? 0 : 1;
}

#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
template <class Channel>
bool boost_channel_run(Channel& ch, long producers, long consumers, long msgs) {
  std::vector<long> sums(static_cast<std::size_t>(consumers)), counts(sums.size());
  std::vector<boost::fibers::fiber> fs;
  for (long c = 0; c < consumers; ++c)
    fs.emplace_back([&, c] {
      for (long v : ch) {
        sums[static_cast<std::size_t>(c)] += v;
        ++counts[static_cast<std::size_t>(c)];
      }
    });
  std::vector<boost::fibers::fiber> ps;
  for (long p = 0; p < producers; ++p)
    ps.emplace_back([&, p] {
      for (long k = p; k < msgs; k += producers) ch.push(k);
    });
  for (auto& f : ps) f.join();
  ch.close();
  for (auto& f : fs) f.join();
  long sum = 0, count = 0;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    sum += sums[i];
    count += counts[i];
  }
  return count == msgs && sum == msgs * (msgs - 1) / 2;
}
#endif

int child_boost_channel(const std::string& kind, unsigned workers) {
#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
  auto a = kind_args(kind);  // producers, consumers, capacity, messages
  bool ok = false;
  double s = 0;
  with_boost_fibers(workers, [&] {
    auto t0 = clock_type::now();
    if (a.at(2) == 0) {
      boost::fibers::unbuffered_channel<long> ch;
      ok = boost_channel_run(ch, a[0], a[1], a[3]);
    } else {
      boost::fibers::buffered_channel<long> ch(static_cast<std::size_t>(a[2]));
      ok = boost_channel_run(ch, a[0], a[1], a[3]);
    }
    s = since(t0);
  });
  std::printf("seconds=%.6f\n", s);
  print_tail(ok);
  return ok ? 0 : 1;
#else
  (void)kind;
  (void)workers;
  return 4;
#endif
}

// ------------------------------------------------------------- parent helpers

// The Go peer, built once per run into a temporary directory.
struct go_peer {
  std::string exe;     // empty: not available
  std::string reason;  // why not
  std::string dir;     // the temporary build directory, removed at exit
  go_peer() = default;
  go_peer(const go_peer&) = delete;
  go_peer& operator=(const go_peer&) = delete;
  go_peer(go_peer&& o) noexcept
      : exe(std::move(o.exe)), reason(std::move(o.reason)), dir(std::exchange(o.dir, {})) {}
  ~go_peer() {
    if (!dir.empty()) (void)std::system(("rm -rf '" + dir + "'").c_str());
  }
};

const go_peer& go_binary() {
  static go_peer peer = [] {
    go_peer p;
    char dir[] = "/tmp/weft-bench-go-XXXXXX";
    if (!mkdtemp(dir)) {
      p.reason = "not measured: mkdtemp failed";
      return p;
    }
    const std::string d = dir;
    p.dir = d;
    p.reason = go_build(WEFT_BENCH_SOURCE_DIR "/go/syncbench.go", d, "syncbench");
    if (!p.reason.empty()) return p;
    p.exe = d + "/syncbench";
    return p;
  }();
  return peer;
}

bool have_boost_fiber() {
#ifdef WEFT_BENCH_HAVE_BOOST_FIBER
  return true;
#else
  return false;
#endif
}

struct measured {
  row time;  // seconds
  row rss;   // MiB
  child_result last;
  bool ok = false;
};

// Runs a child (weft-bench --child KIND, or the Go program) cfg.reps times.
measured run_children(const config& cfg, report& rep, const std::string& name,
                      const std::string& params, const std::vector<std::string>& args,
                      unsigned workers, const std::string& time_key, double time_scale,
                      const std::string& time_unit, std::chrono::seconds limit) {
  measured m;
  std::vector<double> t, mib;
  setenv("GOMAXPROCS", std::to_string(workers).c_str(), 1);
  const int reps = cfg.quick ? 1 : std::max(1, std::min(cfg.reps, 3));
  for (int i = 0; i < reps; ++i) {
    child_result c = run_process(args, limit, name + " (" + params + ")");
    if (!c.ok) {
      rep.add_missing("sync", name, params, c.error, true);
      unsetenv("GOMAXPROCS");
      return m;
    }
    t.push_back(c.num(time_key) * time_scale);
    mib.push_back(c.num("vm_hwm_kib") / 1024.0);
    m.last = std::move(c);
  }
  unsetenv("GOMAXPROCS");
  m.time = make_row("sync", name, params, t, time_unit);
  m.rss = make_row("sync", name + " peak RSS", params, mib, "MiB");
  m.ok = true;
  return m;
}

std::vector<std::string> self_child(const config& cfg, const std::string& kind, unsigned w) {
  return {cfg.self_exe, "--child", kind, "--workers", std::to_string(w)};
}

// ---------------------------------------------------------------- Figure 8

void run_parfib(const config& cfg, report& rep) {
  const int n = cfg.quick ? 25 : 30;
  const auto limit = std::chrono::seconds(cfg.quick ? 60 : 180);
  const std::string nstr = std::to_string(n);
  for (unsigned w : cfg.workers) {
    const std::string params = "parfib(" + nstr + "), " + workers_param(w);
    const row* go_t = nullptr;
    const row* go_rss = nullptr;
    if (!go_binary().exe.empty()) {
      measured g = run_children(cfg, rep, "Go goroutines + chan", params,
                                {go_binary().exe, "parfib", nstr}, w, "seconds", 1, "s", limit);
      if (g.ok) {
        rep.add(g.time);
        rep.add(g.rss);
        go_t = rep.find("sync", "Go goroutines + chan", params);
        go_rss = rep.find("sync", "Go goroutines + chan peak RSS", params);
      }
    } else {
      rep.add_missing("sync", "Go goroutines + chan", params, go_binary().reason);
    }
    if (have_boost_fiber()) {
      measured b = run_children(cfg, rep, "Boost.Fiber + buffered_channel", params,
                                self_child(cfg, "sync-parfib-boost:" + nstr, w), w, "seconds", 1,
                                "s", limit);
      if (b.ok) {
        rep.add(b.time);
        rep.add(b.rss);
      }
    } else {
      rep.add_missing("sync", "Boost.Fiber + buffered_channel", params,
                      "not measured: Boost.Fiber not found");
    }
    struct variant {
      const char* kind;
      const char* name;
      double goal;
    } variants[] = {{"sync-parfib-ivar", "weft ivar", 0.5},
                    {"sync-parfib-mvar", "weft mvar", 1.0},
                    {"sync-parfib-chan", "weft channel", 1.0}};
    for (const variant& v : variants) {
      measured m = run_children(cfg, rep, v.name, params, self_child(cfg, std::string(v.kind) + ":" + nstr, w),
                                w, "seconds", 1, "s", limit);
      if (!m.ok) continue;
      // Tasks spawned: one per call with n >= 2 (the internal nodes of the
      // call tree, which has 2 fib(n+1) - 1 calls): fib(n+1) - 1.
      const double tasks = static_cast<double>(serial_fib(n + 1)) - 1;
      const double fibers = m.last.num("fibers_created");
      m.time.note = "fibers created " + m.last.values["fibers_created"];
      rep.add(m.time);
      rep.add(m.rss);
      rep.add_ratio("sync", std::string(v.name) + " / Go (time)", params,
                    rep.find("sync", v.name, params), go_t, goal_kind::at_most, v.goal);
      if (std::string(v.kind) == "sync-parfib-ivar") {
        rep.add_ratio("sync", "weft ivar / Go (peak RSS)", params,
                      rep.find("sync", "weft ivar peak RSS", params), go_rss, goal_kind::at_most, 1.0);
        row f = make_row("sync", "weft ivar: fibers created / tasks", params, {fibers / tasks}, "x");
        f.goal = goal_kind::at_most;
        f.goal_value = 0.01;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.0f fibers, %.0f tasks", fibers, tasks);
        f.note = buf;
        rep.add(std::move(f));
      }
    }
  }
}

// ---------------------------------------------------------------- Table 2

void run_elision(const config& cfg, report& rep) {
  const long ivars = 10'000;
  const int iters = cfg.quick ? 100 : 1'000;
  const unsigned w = cfg.workers.back();
  const std::string params =
      std::to_string(ivars) + " ivars x " + std::to_string(iters) + " iterations, " + workers_param(w);
  watchdog_scope wd("sync: elision, " + params, std::chrono::seconds(300));
  weft::runtime rt{weft::options{.workers = w}};
  for (bool separate : {true, false}) {
    const std::string name =
        separate ? "fill, sync, then read ivars" : "fill and read ivars (sync elided)";
    bool wrong = false;
    auto samples = time_reps(cfg.quick ? 1 : cfg.reps, cfg.warmup, [&] {
      long sum = rt.run([&] {
        long total = 0;
        for (int it = 0; it < iters; ++it) {
          auto vs = std::make_unique<weft::ivar<long>[]>(static_cast<std::size_t>(ivars));
          weft::task_group g;
          g.spawn([&] {  // the filler
            for (long i = 0; i < ivars; ++i) vs[static_cast<std::size_t>(i)].put(i);
          });
          if (separate) g.sync();  // reads after the sync never block
          for (long i = 0; i < ivars; ++i) total += vs[static_cast<std::size_t>(i)].get();
          g.sync();
        }
        return total;
      });
      if (sum != iters * (ivars * (ivars - 1) / 2)) wrong = true;
    });
    row r = make_row("sync", name, params, samples, "s");
    if (wrong) {
      r.failed = true;
      r.note = "WRONG RESULT";
    }
    rep.add(std::move(r));
  }
  rep.add_ratio("sync", "elided / with sync (time)", params,
                rep.find("sync", "fill and read ivars (sync elided)", params),
                rep.find("sync", "fill, sync, then read ivars", params), goal_kind::none, 0,
                "paper: 0.398 s / 0.636 s = 0.63");
}

// ---------------------------------------------------------------- Figure 10

struct grid {
  int tiles;       // tiles per side
  int tile;        // cells per tile side
  int work;        // iterations of the per-cell recurrence (the cell's cost)
  std::vector<double> cells;  // (tiles*tile)^2
  int side() const { return tiles * tile; }
  double& at(int r, int c) { return cells[static_cast<std::size_t>(r) * static_cast<std::size_t>(side()) + static_cast<std::size_t>(c)]; }
};

// One tile of the wavefront: each cell depends on its north, west and
// north-west neighbours.
void compute_tile(grid& g, int tr, int tc) {
  const int r0 = tr * g.tile, c0 = tc * g.tile;
  for (int r = r0; r < r0 + g.tile; ++r)
    for (int c = c0; c < c0 + g.tile; ++c) {
      double n = r > 0 ? g.at(r - 1, c) : 1.0, w = c > 0 ? g.at(r, c - 1) : 1.0,
             nw = r > 0 && c > 0 ? g.at(r - 1, c - 1) : 1.0;
      double v = (n + w + nw) * 0.3333 + 0.001 * ((r ^ c) & 7);
      for (int k = 0; k < g.work; ++k) v = v * 0.999 + 0.0001;  // a dependent chain
      g.at(r, c) = v;
    }
}

void wavefront_serial(grid& g) {
  for (int r = 0; r < g.tiles; ++r)
    for (int c = 0; c < g.tiles; ++c) compute_tile(g, r, c);
}

// Divide and conquer over the square [r, r+n) x [c, c+n) of tiles.
void wavefront_dc(grid& g, int r, int c, int n) {
  if (n == 1) {
    compute_tile(g, r, c);
    return;
  }
  const int h = n / 2;
  wavefront_dc(g, r, c, h);                                                 // NW
  weft::fork_join([&] { wavefront_dc(g, r, c + h, h); }, [&] { wavefront_dc(g, r + h, c, h); });  // NE || SW
  wavefront_dc(g, r + h, c + h, h);                                         // SE
}

void wavefront_ivars(grid& g) {
  const auto n = static_cast<std::size_t>(g.tiles);
  auto done = std::make_unique<weft::ivar<bool>[]>(n * n);
  weft::task_group tg;
  for (int r = 0; r < g.tiles; ++r)
    for (int c = 0; c < g.tiles; ++c)
      tg.spawn([&, r, c] {
        if (r > 0) done[static_cast<std::size_t>(r - 1) * n + static_cast<std::size_t>(c)].get();
        if (c > 0) done[static_cast<std::size_t>(r) * n + static_cast<std::size_t>(c - 1)].get();
        compute_tile(g, r, c);
        done[static_cast<std::size_t>(r) * n + static_cast<std::size_t>(c)].put(true);
      });
  tg.sync();
}

void run_wavefront(const config& cfg, report& rep) {
  // Tiles per side: a power of two (the quadrants). Full: 4,096 tiles of
  // 32x32 cells, ~0.1 us per cell.
  const int tiles = cfg.quick ? 32 : 64, tile = 32, work = cfg.quick ? 16 : 64;
  std::vector<double> reference;
  {
    grid g{tiles, tile, work, std::vector<double>(static_cast<std::size_t>(tiles * tile) * static_cast<std::size_t>(tiles * tile))};
    wavefront_serial(g);
    reference = g.cells;
  }
  const std::string base = std::to_string(tiles) + "x" + std::to_string(tiles) + " tiles of " +
                           std::to_string(tile) + "x" + std::to_string(tile) + " cells x " +
                           std::to_string(work);
  {
    grid g{tiles, tile, work, std::vector<double>(reference.size())};
    auto s = time_reps(cfg.reps, cfg.warmup, [&] { wavefront_serial(g); });
    rep.add(make_row("sync", "wavefront serial", base, s, "s"));
  }
  for (unsigned w : cfg.workers) {
    const std::string params = base + ", " + workers_param(w);
    watchdog_scope wd("sync: wavefront, " + params, std::chrono::seconds(300));
    weft::runtime rt{weft::options{.workers = w}};
    for (int kind = 0; kind < 2; ++kind) {
      const std::string name = kind == 0 ? "wavefront divide-and-conquer (fork_join)"
                                         : "wavefront one task per tile (ivars)";
      grid g{tiles, tile, work, std::vector<double>(reference.size())};
      auto s = time_reps(cfg.reps, cfg.warmup, [&] {
        rt.run([&] {
          if (kind == 0) wavefront_dc(g, 0, 0, tiles);
          else wavefront_ivars(g);
        });
      });
      row r = make_row("sync", name, params, s, "s");
      if (g.cells != reference) {
        r.failed = true;
        r.note = "WRONG RESULT";
      }
      rep.add(std::move(r));
    }
    rep.add_ratio("sync", "wavefront ivars / divide-and-conquer (time)", params,
                  rep.find("sync", "wavefront one task per tile (ivars)", params),
                  rep.find("sync", "wavefront divide-and-conquer (fork_join)", params));
  }
}

// ---------------------------------------------------------- channel throughput

double weft_channel_run(weft::runtime& rt, long producers, long consumers, std::size_t capacity,
                        long msgs, bool& wrong) {
  return rt.run([&] {
    weft::channel<long> ch(capacity);
    std::vector<long> sums(static_cast<std::size_t>(consumers)), counts(sums.size());
    std::atomic<long> left{producers};
    auto t0 = clock_type::now();
    weft::task_group g;
    for (long c = 0; c < consumers; ++c)
      g.spawn([&, c] {
        for (long v : ch) {
          sums[static_cast<std::size_t>(c)] += v;
          ++counts[static_cast<std::size_t>(c)];
        }
      });
    for (long p = 0; p < producers; ++p)
      g.spawn([&, p] {
        for (long k = p; k < msgs; k += producers) ch.send(k);
        if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) ch.close();
      });
    g.sync();
    double s = since(t0);
    long sum = 0, count = 0;
    for (std::size_t i = 0; i < sums.size(); ++i) {
      sum += sums[i];
      count += counts[i];
    }
    if (count != msgs || sum != msgs * (msgs - 1) / 2) wrong = true;
    return s;
  });
}

void run_channels(const config& cfg, report& rep) {
  const unsigned w = cfg.workers.back();
  const long msgs = cfg.quick ? 200'000 : 1'000'000;
  const auto limit = std::chrono::seconds(120);
  for (long pc : {1L, 4L}) {
    for (long cap : {0L, 64L}) {
      const std::string params = std::to_string(pc) + "->" + std::to_string(pc) + ", " +
                                 (cap == 0 ? std::string("rendezvous") : "buffered(" + std::to_string(cap) + ")") +
                                 ", " + std::to_string(msgs) + " msgs, " + workers_param(w);
      const std::string nm = std::to_string(msgs);
      const double per_msg = 1e9 / static_cast<double>(msgs);
      {
        watchdog_scope wd("sync: weft channel, " + params, std::chrono::seconds(120));
        weft::runtime rt{weft::options{.workers = w}};
        bool wrong = false;
        std::vector<double> s;
        for (int i = 0; i < cfg.warmup + cfg.reps; ++i) {
          double t = weft_channel_run(rt, pc, pc, static_cast<std::size_t>(cap), msgs, wrong);
          if (i >= cfg.warmup) s.push_back(t * per_msg);
        }
        row r = make_row("sync", "weft channel", params, s, "ns/msg");
        if (wrong) {
          r.failed = true;
          r.note = "WRONG RESULT: a message lost or duplicated";
        }
        rep.add(std::move(r));
      }
      if (!go_binary().exe.empty()) {
        measured g = run_children(cfg, rep, "Go chan", params,
                                  {go_binary().exe, "chan", std::to_string(pc), std::to_string(pc),
                                   std::to_string(cap), nm},
                                  w, "seconds", per_msg, "ns/msg", limit);
        if (g.ok) rep.add(g.time);
      } else {
        rep.add_missing("sync", "Go chan", params, go_binary().reason);
      }
      if (have_boost_fiber()) {
        const std::string kind = "sync-chan-boost:" + std::to_string(pc) + ":" + std::to_string(pc) +
                                 ":" + std::to_string(cap) + ":" + nm;
        measured b = run_children(cfg, rep, cap == 0 ? "Boost.Fiber unbuffered_channel" : "Boost.Fiber buffered_channel",
                                  params, self_child(cfg, kind, w), w, "seconds", per_msg, "ns/msg", limit);
        if (b.ok) rep.add(b.time);
      } else {
        rep.add_missing("sync", "Boost.Fiber channel", params, "not measured: Boost.Fiber not found");
      }
      rep.add_ratio("sync", "weft channel / Go chan", params, rep.find("sync", "weft channel", params),
                    rep.find("sync", "Go chan", params), goal_kind::at_most, 1.0);
      rep.add_ratio("sync", "weft channel / Boost.Fiber", params, rep.find("sync", "weft channel", params),
                    rep.find("sync", cap == 0 ? "Boost.Fiber unbuffered_channel" : "Boost.Fiber buffered_channel",
                             params));
    }
  }
}

// -------------------------------------------------------------- blocked tasks

long mem_available_kib() {
  std::ifstream in("/proc/meminfo");
  std::string k;
  long v;
  std::string unit;
  while (in >> k >> v >> unit)
    if (k == "MemAvailable:") return v;
  return -1;
}

void run_blocked(const config& cfg, report& rep) {
  const unsigned w = cfg.workers.back();
  std::vector<long> counts{100'000};
  if (!cfg.quick) counts.push_back(1'000'000);
  const auto limit = std::chrono::seconds(240);
  for (long n : counts) {
    const std::string params = std::to_string(n) + " tasks on one gate, " + workers_param(w);
    // weft needs ~6 KiB per blocked task (a stack page, page tables, records).
    const long need_kib = n * 8;
    if (mem_available_kib() >= 0 && mem_available_kib() < need_kib * 2) {
      rep.add_missing("sync", "weft tasks blocked", params,
                      "not measured: needs ~" + std::to_string(need_kib / 1024 / 1024 + 1) +
                          " GiB, MemAvailable " + std::to_string(mem_available_kib() / 1024 / 1024) + " GiB");
      continue;
    }
    auto per_task = [&](const measured& m, const std::string& who) {
      row r = make_row("sync", who + " KiB per blocked task", params,
                       {m.last.num("vm_hwm_blocked_kib") / static_cast<double>(n)}, "KiB");
      char buf[160];
      std::snprintf(buf, sizeof buf, "block %.3g s, release %.3g s, peak RSS %.0f MiB",
                    m.last.num("block_seconds"), m.last.num("release_seconds"), m.rss.value);
      r.note = buf;
      rep.add(std::move(r));
    };
    measured wm = run_children(cfg, rep, "weft tasks blocked", params,
                               self_child(cfg, "sync-blocked:" + std::to_string(n), w), w,
                               "block_seconds", 1, "s", limit);
    if (wm.ok) {
      wm.time.name = "weft: time to block them";
      rep.add(wm.time);
      per_task(wm, "weft");
    }
    if (!go_binary().exe.empty()) {
      measured gm = run_children(cfg, rep, "Go goroutines blocked", params,
                                 {go_binary().exe, "blocked", std::to_string(n)}, w,
                                 "block_seconds", 1, "s", limit);
      if (gm.ok) {
        gm.time.name = "Go: time to block them";
        rep.add(gm.time);
        per_task(gm, "Go");
      }
    } else {
      rep.add_missing("sync", "Go goroutines blocked", params, go_binary().reason);
    }
    rep.add_ratio("sync", "weft / Go (KiB per blocked task)", params,
                  rep.find("sync", "weft KiB per blocked task", params),
                  rep.find("sync", "Go KiB per blocked task", params), goal_kind::at_most, 1.5,
                  "peak RSS (VmHWM) with all blocked / count; page tables not included");
  }
}

}  // namespace

int sync_child(const std::string& kind, unsigned workers) {
  try {
    if (kind.rfind("sync-parfib-", 0) == 0) return child_parfib(kind, workers);
    if (kind.rfind("sync-blocked:", 0) == 0) return child_blocked(kind, workers);
    if (kind.rfind("sync-chan-boost:", 0) == 0) return child_boost_channel(kind, workers);
    std::fprintf(stderr, "weft-bench: unknown child kind '%s'\n", kind.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-bench child %s: error: %s\n", kind.c_str(), e.what());
    return 3;
  }
}

void run_sync(const config& cfg, report& rep) {
  run_parfib(cfg, rep);
  run_elision(cfg, rep);
  run_wavefront(cfg, rep);
  run_channels(cfg, rep);
  run_blocked(cfg, rep);
}

}  // namespace weft_bench
