// cilk_kernels — LU, Strassen, Black-Scholes and Knapsack over three parallel
// policies (serial elision, weft, oneTBB). See kernels.hpp.
#include "kernels.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

#include <weft/weft.hpp>

#if WEFT_KERNELS_HAVE_TBB
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_invoke.h>
#include <oneapi/tbb/task_arena.h>
#endif

namespace weft_kernels {
namespace {

using clock_type = std::chrono::steady_clock;

struct timing {
  double wall;  // seconds
  double cpu;   // seconds of CPU time of the thread running the root
};

// ---------------------------------------------------------------------------
// Simulated waits (Figure 7).

struct wait_state {
  wait_kind kind = wait_kind::none;
  double ratio = 1.0;
  int every = 8;
  std::uint64_t seed = 0;
  std::chrono::nanoseconds wait{0};  // the wait of a waiting leaf
  // Relaxed counters: tickets and statistics only. No data is published
  // through them; they are read after the run, which the runtime's join (or
  // the arena's wait) orders after every leaf.
  std::atomic<long> tickets{0};
  std::atomic<long> waits{0};
  std::atomic<long long> wait_ns{0};
  std::atomic<long long> compute_ns{0};
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Runs one leaf; with a wait_state, times it and counts it, and with waits
// on, one leaf in `every` then waits for `wait` (every x the calibrated mean
// wait per leaf).
template <class F>
inline void leaf(wait_state* w, F&& f) {
  if (w == nullptr) {
    f();
    return;
  }
  auto t0 = clock_type::now();
  f();
  auto compute = clock_type::now() - t0;
  w->compute_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(compute).count(),
                          std::memory_order_relaxed);
  long ticket = w->tickets.fetch_add(1, std::memory_order_relaxed);
  if (w->kind == wait_kind::none ||
      mix(static_cast<std::uint64_t>(ticket) ^ w->seed) % static_cast<std::uint64_t>(w->every) != 0)
    return;
  w->waits.fetch_add(1, std::memory_order_relaxed);
  w->wait_ns.fetch_add(w->wait.count(), std::memory_order_relaxed);
  if (w->kind == wait_kind::weft_sleep)
    weft::this_task::sleep_for(w->wait);
  else
    std::this_thread::sleep_for(w->wait);
}

// ---------------------------------------------------------------------------
// The parallel policies. invoke(f, g, ...) runs its callables, in parallel
// where the policy can; for_chunks(n, body) calls body(c) for c in [0, n).

struct serial_policy {
  wait_state* w = nullptr;
  template <class... F>
  void invoke(F&&... f) const {
    (f(), ...);
  }
  template <class Body>
  void for_chunks(long n, const Body& body) const {
    for (long c = 0; c < n; ++c) body(c);
  }
};

struct weft_policy {
  wait_state* w = nullptr;
  template <class F>
  void invoke(F&& f) const {
    f();
  }
  // A chain of binary forks: each fork_join exposes the rest to thieves.
  template <class F, class... G>
  void invoke(F&& f, G&&... g) const {
    weft::fork_join(f, [&] { invoke(g...); });
  }
  template <class Body>
  void for_chunks(long n, const Body& body) const {
    weft::parallel_for(0L, n, 1L, body);
  }
};

#if WEFT_KERNELS_HAVE_TBB
struct tbb_policy {
  wait_state* w = nullptr;
  template <class F>
  void invoke(F&& f) const {
    f();
  }
  template <class... F>
  void invoke(F&&... f) const {
    tbb::parallel_invoke(f...);
  }
  template <class Body>
  void for_chunks(long n, const Body& body) const {
    tbb::parallel_for(0L, n, body);
  }
};
#endif

// ---------------------------------------------------------------------------
// Matrices: row-major views with a leading dimension.

struct view {
  double* p;
  long ld;
  double& operator()(long i, long j) const { return p[i * ld + j]; }
  // Quadrant (qi, qj) of a matrix of side 2h.
  view quad(int qi, int qj, long h) const { return {p + qi * h * ld + qj * h, ld}; }
};

bool is_pow2(long n) { return n > 0 && (n & (n - 1)) == 0; }

std::vector<double> random_matrix(long n, std::uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> m(static_cast<std::size_t>(n * n));
  for (auto& x : m) x = d(rng);
  return m;
}

// Rows to check: all of them for small n, else a fixed pseudo-random sample
// (the first and last included).
std::vector<long> sample_rows(long n, long all_below, std::uint64_t seed) {
  std::vector<long> rows;
  if (n <= all_below) {
    for (long i = 0; i < n; ++i) rows.push_back(i);
    return rows;
  }
  rows = {0, n - 1};
  for (int k = 0; k < 30; ++k) rows.push_back(static_cast<long>(mix(seed + k) % static_cast<std::uint64_t>(n)));
  return rows;
}

// ---------------------------------------------------------------------------
// LU decomposition without pivoting (the Cilk benchmark's lu.cilk): A is made
// diagonally dominant, A = L U in place (L unit lower, U upper), recursively
// on quadrants down to lu_block x lu_block leaves.

constexpr long lu_block = 32;

void lu_leaf(view a, long n) {
  for (long k = 0; k < n; ++k) {
    const double inv = 1.0 / a(k, k);
    for (long i = k + 1; i < n; ++i) {
      const double l = a(i, k) *= inv;
      for (long j = k + 1; j < n; ++j) a(i, j) -= l * a(k, j);
    }
  }
}
// X = L^-1 X, L unit lower triangular.
void lower_solve_leaf(view x, view l, long n) {
  for (long i = 1; i < n; ++i)
    for (long k = 0; k < i; ++k) {
      const double lik = l(i, k);
      for (long j = 0; j < n; ++j) x(i, j) -= lik * x(k, j);
    }
}
// X = X U^-1, U upper triangular.
void upper_solve_leaf(view x, view u, long n) {
  for (long i = 0; i < n; ++i)
    for (long k = 0; k < n; ++k) {
      const double xk = x(i, k) /= u(k, k);
      for (long j = k + 1; j < n; ++j) x(i, j) -= xk * u(k, j);
    }
}
// C -= A B.
void mul_sub_leaf(view c, view a, view b, long n) {
  for (long i = 0; i < n; ++i)
    for (long k = 0; k < n; ++k) {
      const double aik = a(i, k);
      for (long j = 0; j < n; ++j) c(i, j) -= aik * b(k, j);
    }
}

template <class P>
void mul_sub(const P& p, view c, view a, view b, long n) {
  if (n <= lu_block) return leaf(p.w, [&] { mul_sub_leaf(c, a, b, n); });
  const long h = n / 2;
  p.invoke([&] { mul_sub(p, c.quad(0, 0, h), a.quad(0, 0, h), b.quad(0, 0, h), h); },
           [&] { mul_sub(p, c.quad(0, 1, h), a.quad(0, 0, h), b.quad(0, 1, h), h); },
           [&] { mul_sub(p, c.quad(1, 0, h), a.quad(1, 0, h), b.quad(0, 0, h), h); },
           [&] { mul_sub(p, c.quad(1, 1, h), a.quad(1, 0, h), b.quad(0, 1, h), h); });
  p.invoke([&] { mul_sub(p, c.quad(0, 0, h), a.quad(0, 1, h), b.quad(1, 0, h), h); },
           [&] { mul_sub(p, c.quad(0, 1, h), a.quad(0, 1, h), b.quad(1, 1, h), h); },
           [&] { mul_sub(p, c.quad(1, 0, h), a.quad(1, 1, h), b.quad(1, 0, h), h); },
           [&] { mul_sub(p, c.quad(1, 1, h), a.quad(1, 1, h), b.quad(1, 1, h), h); });
}

template <class P>
void lower_solve(const P& p, view x, view l, long n) {
  if (n <= lu_block) return leaf(p.w, [&] { lower_solve_leaf(x, l, n); });
  const long h = n / 2;
  p.invoke([&] { lower_solve(p, x.quad(0, 0, h), l.quad(0, 0, h), h); },
           [&] { lower_solve(p, x.quad(0, 1, h), l.quad(0, 0, h), h); });
  p.invoke([&] { mul_sub(p, x.quad(1, 0, h), l.quad(1, 0, h), x.quad(0, 0, h), h); },
           [&] { mul_sub(p, x.quad(1, 1, h), l.quad(1, 0, h), x.quad(0, 1, h), h); });
  p.invoke([&] { lower_solve(p, x.quad(1, 0, h), l.quad(1, 1, h), h); },
           [&] { lower_solve(p, x.quad(1, 1, h), l.quad(1, 1, h), h); });
}

template <class P>
void upper_solve(const P& p, view x, view u, long n) {
  if (n <= lu_block) return leaf(p.w, [&] { upper_solve_leaf(x, u, n); });
  const long h = n / 2;
  p.invoke([&] { upper_solve(p, x.quad(0, 0, h), u.quad(0, 0, h), h); },
           [&] { upper_solve(p, x.quad(1, 0, h), u.quad(0, 0, h), h); });
  p.invoke([&] { mul_sub(p, x.quad(0, 1, h), x.quad(0, 0, h), u.quad(0, 1, h), h); },
           [&] { mul_sub(p, x.quad(1, 1, h), x.quad(1, 0, h), u.quad(0, 1, h), h); });
  p.invoke([&] { upper_solve(p, x.quad(0, 1, h), u.quad(1, 1, h), h); },
           [&] { upper_solve(p, x.quad(1, 1, h), u.quad(1, 1, h), h); });
}

template <class P>
void lu(const P& p, view a, long n) {
  if (n <= lu_block) return leaf(p.w, [&] { lu_leaf(a, n); });
  const long h = n / 2;
  view a00 = a.quad(0, 0, h), a01 = a.quad(0, 1, h), a10 = a.quad(1, 0, h), a11 = a.quad(1, 1, h);
  lu(p, a00, h);
  p.invoke([&] { lower_solve(p, a01, a00, h); }, [&] { upper_solve(p, a10, a00, h); });
  mul_sub(p, a11, a10, a01, h);
  lu(p, a11, h);
}

struct lu_input {
  long n;
  std::vector<double> a;
};
lu_input lu_make(long n, std::uint64_t seed) {
  lu_input in{n, random_matrix(n, seed, -1.0, 1.0)};
  for (long i = 0; i < n; ++i) in.a[static_cast<std::size_t>(i * n + i)] += static_cast<double>(n);
  return in;
}
// Relative max |L U - A| over the sampled rows.
double lu_error(const lu_input& in, const std::vector<double>& f, std::uint64_t seed) {
  const long n = in.n;
  double amax = 0;
  for (double x : in.a) amax = std::max(amax, std::abs(x));
  double err = 0;
  for (long i : sample_rows(n, 256, seed)) {
    for (long j = 0; j < n; ++j) {
      const long kmax = std::min(i, j);
      double s = 0;
      for (long k = 0; k < kmax; ++k) s += f[static_cast<std::size_t>(i * n + k)] * f[static_cast<std::size_t>(k * n + j)];
      // L(i,i) = 1: the diagonal term is U(i,j) when i <= j, else L(i,j) U(j,j).
      s += i <= j ? f[static_cast<std::size_t>(i * n + j)]
                  : f[static_cast<std::size_t>(i * n + j)] * f[static_cast<std::size_t>(j * n + j)];
      err = std::max(err, std::abs(s - in.a[static_cast<std::size_t>(i * n + j)]));
    }
  }
  return err / amax;
}

// ---------------------------------------------------------------------------
// Strassen's multiply (the Cilk benchmark strassen.cilk): C = A B for n a
// power of two, seven recursive products in parallel, naive multiply below
// strassen_cutoff.

constexpr long strassen_cutoff = 64;

void mul_leaf(view c, view a, view b, long n) {
  for (long i = 0; i < n; ++i) {
    for (long j = 0; j < n; ++j) c(i, j) = 0;
    for (long k = 0; k < n; ++k) {
      const double aik = a(i, k);
      for (long j = 0; j < n; ++j) c(i, j) += aik * b(k, j);
    }
  }
}

// out = x + s*y (s = +1 or -1), h x h, into a dense buffer.
void add_into(double* out, view x, view y, double s, long h) {
  for (long i = 0; i < h; ++i)
    for (long j = 0; j < h; ++j) out[i * h + j] = x(i, j) + s * y(i, j);
}
void copy_into(double* out, view x, long h) {
  for (long i = 0; i < h; ++i)
    for (long j = 0; j < h; ++j) out[i * h + j] = x(i, j);
}

template <class P>
void strassen(const P& p, view c, view a, view b, long n) {
  if (n <= strassen_cutoff) return leaf(p.w, [&] { mul_leaf(c, a, b, n); });
  const long h = n / 2;
  const std::size_t hh = static_cast<std::size_t>(h * h);
  view a11 = a.quad(0, 0, h), a12 = a.quad(0, 1, h), a21 = a.quad(1, 0, h), a22 = a.quad(1, 1, h);
  view b11 = b.quad(0, 0, h), b12 = b.quad(0, 1, h), b21 = b.quad(1, 0, h), b22 = b.quad(1, 1, h);
  std::vector<double> m(7 * hh);
  auto mv = [&](int k) { return view{m.data() + k * hh, h}; };
  // Product k: M_k = (x1 + sx*x2) (y1 + sy*y2), a missing term (x2/y2 null) is 0.
  auto product = [&](int k, view x1, const view* x2, double sx, view y1, const view* y2, double sy) {
    std::vector<double> t(2 * hh);
    if (x2) add_into(t.data(), x1, *x2, sx, h); else copy_into(t.data(), x1, h);
    if (y2) add_into(t.data() + hh, y1, *y2, sy, h); else copy_into(t.data() + hh, y1, h);
    strassen(p, mv(k), view{t.data(), h}, view{t.data() + hh, h}, h);
  };
  p.invoke([&] { product(0, a11, &a22, 1, b11, &b22, 1); },
           [&] { product(1, a21, &a22, 1, b11, nullptr, 0); },
           [&] { product(2, a11, nullptr, 0, b12, &b22, -1); },
           [&] { product(3, a22, nullptr, 0, b21, &b11, -1); },
           [&] { product(4, a11, &a12, 1, b22, nullptr, 0); },
           [&] { product(5, a21, &a11, -1, b11, &b12, 1); },
           [&] { product(6, a12, &a22, -1, b21, &b22, 1); });
  view m1 = mv(0), m2 = mv(1), m3 = mv(2), m4 = mv(3), m5 = mv(4), m6 = mv(5), m7 = mv(6);
  view c11 = c.quad(0, 0, h), c12 = c.quad(0, 1, h), c21 = c.quad(1, 0, h), c22 = c.quad(1, 1, h);
  for (long i = 0; i < h; ++i)
    for (long j = 0; j < h; ++j) {
      c11(i, j) = m1(i, j) + m4(i, j) - m5(i, j) + m7(i, j);
      c12(i, j) = m3(i, j) + m5(i, j);
      c21(i, j) = m2(i, j) + m4(i, j);
      c22(i, j) = m1(i, j) - m2(i, j) + m3(i, j) + m6(i, j);
    }
}

// Relative max error of sampled entries of C against naive dot products.
double strassen_error(long n, const std::vector<double>& a, const std::vector<double>& b,
                      const std::vector<double>& c, std::uint64_t seed) {
  double err = 0;
  auto rows = sample_rows(n, 128, seed);
  auto cols = sample_rows(n, 128, seed ^ 0x5555);
  for (long i : rows)
    for (long j : cols) {
      double s = 0;
      for (long k = 0; k < n; ++k) s += a[static_cast<std::size_t>(i * n + k)] * b[static_cast<std::size_t>(k * n + j)];
      err = std::max(err, std::abs(s - c[static_cast<std::size_t>(i * n + j)]));
    }
  return err / static_cast<double>(n);  // entries of A, B in [-1, 1]: |C(i,j)| <= n
}

// ---------------------------------------------------------------------------
// Black-Scholes (PARSEC's blackscholes, as in the Cilk suite): call and put
// prices of independent European options, in chunks of bs_chunk options.

constexpr long bs_chunk = 2048;

struct bs_options {
  std::vector<double> s, k, r, v, t;
};
bs_options bs_make(long n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> price(10, 100), rate(0.01, 0.1), vol(0.05, 0.65),
      time(0.1, 3.0);
  bs_options o;
  for (auto* v : {&o.s, &o.k, &o.r, &o.v, &o.t}) v->resize(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    o.s[i] = price(rng);
    o.k[i] = price(rng);
    o.r[i] = rate(rng);
    o.v[i] = vol(rng);
    o.t[i] = time(rng);
  }
  return o;
}
inline double cndf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752440); }
void bs_price(const bs_options& o, std::size_t i, double& call, double& put) {
  const double s = o.s[i], k = o.k[i], r = o.r[i], v = o.v[i], t = o.t[i];
  const double sqrt_t = std::sqrt(t);
  const double d1 = (std::log(s / k) + (r + 0.5 * v * v) * t) / (v * sqrt_t);
  const double d2 = d1 - v * sqrt_t;
  const double disc = k * std::exp(-r * t);
  call = s * cndf(d1) - disc * cndf(d2);
  put = disc * cndf(-d2) - s * cndf(-d1);
}
template <class P>
void blackscholes(const P& p, const bs_options& o, std::vector<double>& call,
                  std::vector<double>& put) {
  const long n = static_cast<long>(o.s.size());
  const long chunks = (n + bs_chunk - 1) / bs_chunk;
  p.for_chunks(chunks, [&](long c) {
    leaf(p.w, [&] {
      const long hi = std::min(n, (c + 1) * bs_chunk);
      for (long i = c * bs_chunk; i < hi; ++i) {
        const auto u = static_cast<std::size_t>(i);
        bs_price(o, u, call[u], put[u]);
      }
    });
  });
}

// ---------------------------------------------------------------------------
// 0-1 Knapsack by branch and bound (the Cilk benchmark knapsack.cilk): items
// sorted by value/weight, both branches of an item forked, a branch pruned
// when its fractional bound cannot beat the best value found so far. Below
// knap_fork_levels items a subtree runs serially (one leaf).

struct item {
  long weight, value;
};
struct knap_problem {
  std::vector<item> items;  // sorted by value/weight, best first
  long capacity;
};
knap_problem knap_make(long n, std::uint64_t seed) {
  // Strongly correlated instances (value = weight + 100) with weights in a
  // narrow band: every item has nearly the same value/weight, so the bound
  // prunes little and the tree grows steadily, about 4x per 2 items (26
  // items: ~0.5 s serial; the paper's 30: ~8 s on this machine).
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<long> w(1000, 1100);
  knap_problem p;
  long total = 0;
  for (long i = 0; i < n; ++i) {
    long wi = w(rng);
    p.items.push_back({wi, wi + 100});
    total += wi;
  }
  p.capacity = total / 2;
  std::sort(p.items.begin(), p.items.end(), [](const item& a, const item& b) {
    return a.value * b.weight > b.value * a.weight;
  });
  return p;
}
long knap_dp(const knap_problem& p) {
  std::vector<long> best(static_cast<std::size_t>(p.capacity + 1), 0);
  for (const item& it : p.items)
    for (long c = p.capacity; c >= it.weight; --c)
      best[static_cast<std::size_t>(c)] = std::max(best[static_cast<std::size_t>(c)],
                                                   best[static_cast<std::size_t>(c - it.weight)] + it.value);
  return best[static_cast<std::size_t>(p.capacity)];
}

// Forked levels: the top knap_fork_levels items fork both branches; below,
// a subtree is one serial leaf (the Cilk benchmark forks at every level; with
// ~10 ns of work per node that measures spawn cost, not the kernel).
constexpr int knap_fork_levels = 12;

struct knap_search {
  const item* items;
  long n;
  // The best value found so far, for pruning only: relaxed loads and a
  // relaxed CAS-max. A stale value prunes less, never wrongly (the bound is
  // compared against a value some branch really reached); the result itself
  // travels through the return values and the forks' joins.
  std::atomic<long> best{0};

  void raise_best(long v) {
    long cur = best.load(std::memory_order_relaxed);
    while (v > cur && !best.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }
  bool pruned(long i, long cap, long value) const {
    if (i == n) return false;
    const double ub = static_cast<double>(value) + static_cast<double>(cap) *
                                                       static_cast<double>(items[i].value) /
                                                       static_cast<double>(items[i].weight);
    return ub < static_cast<double>(best.load(std::memory_order_relaxed));
  }
  long serial(long i, long cap, long value) {
    if (cap < 0) return std::numeric_limits<long>::min();
    if (i == n) return value;
    if (pruned(i, cap, value)) return std::numeric_limits<long>::min();
    long with = serial(i + 1, cap - items[i].weight, value + items[i].value);
    long without = serial(i + 1, cap, value);
    long b = std::max(with, without);
    raise_best(b);
    return b;
  }
  template <class P>
  long search(const P& p, long i, long cap, long value) {
    if (cap < 0) return std::numeric_limits<long>::min();
    if (i == n) return value;
    if (i >= knap_fork_levels) {
      long r = 0;
      leaf(p.w, [&] { r = serial(i, cap, value); });
      return r;
    }
    if (pruned(i, cap, value)) return std::numeric_limits<long>::min();
    long with = 0, without = 0;
    p.invoke([&] { with = search(p, i + 1, cap - items[i].weight, value + items[i].value); },
             [&] { without = search(p, i + 1, cap, value); });
    long b = std::max(with, without);
    raise_best(b);
    return b;
  }
};

// CPU time of the calling thread: the thread that runs the root of the
// kernel (the caller, weft's worker, the arena's master), where all of the
// work runs on one worker. Other threads' time (an earlier arena's threads
// spinning down, a runtime's timer) does not count.
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Wall and thread CPU time from construction to elapsed() (on one thread).
class stopwatch {
 public:
  stopwatch() : wall0_(clock_type::now()), cpu0_(thread_cpu_seconds()) {}
  timing elapsed() const {
    return {std::chrono::duration<double>(clock_type::now() - wall0_).count(),
            thread_cpu_seconds() - cpu0_};
  }

 private:
  clock_type::time_point wall0_;
  double cpu0_;
};

// ---------------------------------------------------------------------------
// One kernel, one policy: timed runs and checks.

struct check_acc {
  bool ok = true;
  double worst = 0;
  std::string what;
  void add(double err, double tol) {
    worst = std::max(worst, err);
    if (!(err <= tol)) ok = false;
  }
};

template <class Exec>
results run_with(const options& o, long n, Exec&& exec) {
  results res;
  check_acc acc;
  wait_state ws;
  ws.kind = o.waits;
  ws.ratio = o.wait_ratio;
  ws.every = o.wait_every;
  ws.seed = mix(o.seed ^ 0xfeed);
  wait_state* wp = o.waits == wait_kind::none ? nullptr : &ws;
  char buf[256];
  // With waits: two first (untimed) runs without waits count the leaves and
  // their compute time; a waiting leaf then waits
  // every x ratio x the mean leaf compute time, the same for every leaf, so
  // that the waits total about ratio x the compute time in every run
  // whatever the load of the machine during the timed runs.
  bool calibrating = wp != nullptr && o.leaf_wait_seconds <= 0;
  if (wp != nullptr && !calibrating) {
    ws.wait = std::chrono::nanoseconds(static_cast<long long>(o.leaf_wait_seconds * 1e9));
    res.calibrated_wait_seconds = o.leaf_wait_seconds;
  }

  // exec(policy_fn) runs policy_fn(policy) on the chosen implementation and
  // returns its wall and CPU time (timing).
  auto reset = [&ws] {
    ws.tickets.store(0, std::memory_order_relaxed);
    ws.waits.store(0, std::memory_order_relaxed);
    ws.wait_ns.store(0, std::memory_order_relaxed);
    ws.compute_ns.store(0, std::memory_order_relaxed);
  };
  auto timed = [&](auto&& body) {
    if (calibrating) {
      // Two runs, the smaller mean: the first run is cold (page faults,
      // caches) and a loaded machine can stretch either.
      ws.kind = wait_kind::none;
      double mean_ns = 0;
      for (int c = 0; c < 2; ++c) {
        reset();
        body(wp);
        const long leaves = std::max(1L, ws.tickets.load(std::memory_order_relaxed));
        const double m = static_cast<double>(ws.compute_ns.load(std::memory_order_relaxed)) /
                         static_cast<double>(leaves);
        mean_ns = c == 0 ? m : std::min(mean_ns, m);
      }
      calibrating = false;
      ws.wait = std::chrono::nanoseconds(static_cast<long long>(mean_ns * o.wait_ratio * o.wait_every));
      res.calibrated_wait_seconds = static_cast<double>(ws.wait.count()) * 1e-9;
      ws.kind = o.waits;
    }
    for (int r = -o.warmup; r < o.reps; ++r) {
      reset();
      timing s = body(wp);
      if (r >= 0) {
        res.seconds.push_back(s.wall);
        res.cpu_seconds.push_back(s.cpu);
      }
    }
  };

  switch (o.which) {
    case kernel::lu: {
      lu_input in = lu_make(n, o.seed);
      std::vector<double> f;
      timed([&](wait_state* w) {
        f = in.a;
        timing s = exec(w, [&](const auto& p) { lu(p, view{f.data(), n}, n); });
        acc.add(lu_error(in, f, o.seed), 1e-12);
        return s;
      });
      std::snprintf(buf, sizeof buf, "max |L*U - A| / max |A| over %s = %.3g (tolerance 1e-12)",
                    n <= 256 ? "all rows" : "32 sampled rows", acc.worst);
      break;
    }
    case kernel::strassen: {
      std::vector<double> a = random_matrix(n, o.seed, -1, 1), b = random_matrix(n, o.seed + 1, -1, 1);
      std::vector<double> c;
      timed([&](wait_state* w) {
        c.assign(static_cast<std::size_t>(n * n), std::nan(""));
        timing s = exec(w, [&](const auto& p) {
          strassen(p, view{c.data(), n}, view{a.data(), n}, view{b.data(), n}, n);
        });
        acc.add(strassen_error(n, a, b, c, o.seed), 1e-12);
        return s;
      });
      std::snprintf(buf, sizeof buf,
                    "max |C - naive A*B| / n over %s = %.3g (tolerance 1e-12)",
                    n <= 128 ? "all entries" : "32x32 sampled entries", acc.worst);
      break;
    }
    case kernel::blackscholes: {
      bs_options in = bs_make(n, o.seed);
      std::vector<double> ref_call, ref_put;
      if (o.how != impl::serial) {
        ref_call.resize(static_cast<std::size_t>(n));
        ref_put.resize(static_cast<std::size_t>(n));
        blackscholes(serial_policy{}, in, ref_call, ref_put);
      }
      std::vector<double> call, put;
      timed([&](wait_state* w) {
        call.assign(static_cast<std::size_t>(n), std::nan(""));
        put.assign(static_cast<std::size_t>(n), std::nan(""));
        timing s = exec(w, [&](const auto& p) { blackscholes(p, in, call, put); });
        for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
          // Put-call parity: C - P = S - K exp(-r T).
          const double parity = in.s[i] - in.k[i] * std::exp(-in.r[i] * in.t[i]);
          acc.add(std::abs(call[i] - put[i] - parity) / in.s[i], 1e-9);
          if (!ref_call.empty())
            acc.add(std::abs(call[i] - ref_call[i]) + std::abs(put[i] - ref_put[i]), 1e-9);
        }
        return s;
      });
      std::snprintf(buf, sizeof buf,
                    "put-call parity%s for all %ld options: worst error %.3g (tolerance 1e-9)",
                    o.how == impl::serial ? "" : " and prices against the serial code's", n,
                    acc.worst);
      break;
    }
    case kernel::knapsack: {
      knap_problem prob = knap_make(n, o.seed);
      const long expected = knap_dp(prob);
      long got = 0;
      bool all_right = true;
      timed([&](wait_state* w) {
        knap_search ks{prob.items.data(), n, {}};
        timing s = exec(w, [&](const auto& p) { got = ks.search(p, 0, prob.capacity, 0); });
        if (got != expected) all_right = false;
        return s;
      });
      acc.ok = all_right;
      std::snprintf(buf, sizeof buf, "best value %ld, dynamic program %ld%s", got, expected,
                    all_right ? "" : " (MISMATCH in some run)");
      break;
    }
  }
  res.ok = acc.ok;
  res.check = buf;
  res.leaves = ws.tickets.load(std::memory_order_relaxed);
  res.waits = ws.waits.load(std::memory_order_relaxed);
  res.wait_seconds = static_cast<double>(ws.wait_ns.load(std::memory_order_relaxed)) * 1e-9;
  res.compute_seconds = static_cast<double>(ws.compute_ns.load(std::memory_order_relaxed)) * 1e-9;
  return res;
}

}  // namespace

const char* to_string(kernel k) {
  switch (k) {
    case kernel::lu: return "lu";
    case kernel::strassen: return "strassen";
    case kernel::blackscholes: return "blackscholes";
    case kernel::knapsack: return "knapsack";
  }
  return "?";
}
const char* to_string(impl i) {
  switch (i) {
    case impl::serial: return "serial";
    case impl::weft: return "weft";
    case impl::tbb: return "tbb";
  }
  return "?";
}
const char* to_string(wait_kind w) {
  switch (w) {
    case wait_kind::none: return "none";
    case wait_kind::weft_sleep: return "weft";
    case wait_kind::os_sleep: return "os";
  }
  return "?";
}
std::optional<kernel> parse_kernel(const std::string& s) {
  for (kernel k : all_kernels)
    if (s == to_string(k)) return k;
  return std::nullopt;
}
std::optional<impl> parse_impl(const std::string& s) {
  for (impl i : {impl::serial, impl::weft, impl::tbb})
    if (s == to_string(i)) return i;
  return std::nullopt;
}
std::optional<wait_kind> parse_wait_kind(const std::string& s) {
  for (wait_kind w : {wait_kind::none, wait_kind::weft_sleep, wait_kind::os_sleep})
    if (s == to_string(w)) return w;
  return std::nullopt;
}

const char* size_meaning(kernel k) {
  switch (k) {
    case kernel::lu: return "n of the n x n matrix (a power of two, 2 ... 4096)";
    case kernel::strassen: return "n of the n x n matrices (a power of two, 2 ... 4096)";
    case kernel::blackscholes: return "number of options (1 ... 100000000)";
    case kernel::knapsack: return "number of items (2 ... 40)";
  }
  return "?";
}
long default_size(kernel k) {
  switch (k) {
    case kernel::lu: return 1024;
    case kernel::strassen: return 1024;
    case kernel::blackscholes: return 2'000'000;
    case kernel::knapsack: return 26;
  }
  return 0;
}
long quick_size(kernel k) {
  switch (k) {
    case kernel::lu: return 512;
    case kernel::strassen: return 512;
    case kernel::blackscholes: return 250'000;
    case kernel::knapsack: return 23;
  }
  return 0;
}
long small_size(kernel k) {
  switch (k) {
    case kernel::lu: return 128;
    case kernel::strassen: return 128;
    case kernel::blackscholes: return 20'000;
    case kernel::knapsack: return 18;
  }
  return 0;
}

bool have_tbb() { return WEFT_KERNELS_HAVE_TBB != 0; }

double results::median() const {
  if (seconds.empty()) return std::nan("");
  std::vector<double> v = seconds;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

results run(const options& o) {
  const long n = o.size == 0 ? default_size(o.which) : o.size;
  switch (o.which) {
    case kernel::lu:
    case kernel::strassen:
      if (!is_pow2(n) || n < 2 || n > 4096)
        throw std::invalid_argument(std::string(to_string(o.which)) + ": size " +
                                    std::to_string(n) + " is not a power of two in 2 ... 4096");
      break;
    case kernel::blackscholes:
      if (n < 1 || n > 100'000'000)
        throw std::invalid_argument("blackscholes: size " + std::to_string(n) +
                                    " is not in 1 ... 100000000");
      break;
    case kernel::knapsack:
      if (n < 2 || n > 40)
        throw std::invalid_argument("knapsack: size " + std::to_string(n) + " is not in 2 ... 40");
      break;
  }
  if (o.reps < 1) throw std::invalid_argument("reps must be >= 1");
  if (o.warmup < 0) throw std::invalid_argument("warmup must be >= 0");
  if (o.how != impl::serial && (o.workers < 1 || o.workers > 1024))
    throw std::invalid_argument("workers must be in 1 ... 1024");
  if (o.waits != wait_kind::none) {
    if (!(o.leaf_wait_seconds >= 0 && o.leaf_wait_seconds <= 10))
      throw std::invalid_argument("leaf wait must be in [0, 10] s");
    if (!(o.wait_ratio > 0 && o.wait_ratio <= 100))
      throw std::invalid_argument("wait ratio must be in (0, 100]");
    if (o.wait_every < 1 || o.wait_every > 1'000'000)
      throw std::invalid_argument("wait-every must be in 1 ... 1000000");
  }
  if (o.waits == wait_kind::weft_sleep && o.how != impl::weft)
    throw std::invalid_argument(
        "waits 'weft' (weft::this_task::sleep_for) need impl weft; use waits 'os' with " +
        std::string(to_string(o.how)));

  switch (o.how) {
    case impl::serial:
      return run_with(o, n, [](wait_state* w, auto&& body) {
        stopwatch sw;
        body(serial_policy{w});
        return sw.elapsed();
      });
    case impl::weft: {
      weft::runtime rt{weft::options{.workers = o.workers}};
      return run_with(o, n, [&rt](wait_state* w, auto&& body) {
        return rt.run([&] {
          stopwatch sw;
          body(weft_policy{w});
          return sw.elapsed();
        });
      });
    }
    case impl::tbb: {
#if WEFT_KERNELS_HAVE_TBB
      tbb::task_arena arena(static_cast<int>(o.workers));
      return run_with(o, n, [&arena](wait_state* w, auto&& body) {
        timing s{};
        arena.execute([&] {
          stopwatch sw;
          body(tbb_policy{w});
          s = sw.elapsed();
        });
        return s;
      });
#else
      throw std::runtime_error("impl tbb: this build has no oneTBB (install libtbb-dev and reconfigure)");
#endif
    }
  }
  throw std::invalid_argument("unknown impl");
}

}  // namespace weft_kernels
