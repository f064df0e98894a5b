// The fast multipole method with futures: see fmm.hpp.
//
// Expansions (Greengard & Rokhlin; Beatson & Greengard, "A short course on
// fast multipole methods", Lemmas 2.1-2.5), in complex arithmetic: the
// potential of a charge q at z_j is Re(q log(z - z_j)).
//   P2M  a_0 = sum q_j,  a_k = -sum q_j (z_j - c)^k / k           (k = 1..p)
//   M2M  b_0 = a_0,      b_l = -a_0 d^l / l + sum_{k=1..l} a_k d^(l-k) C(l-1,k-1)
//        (d = child centre - parent centre)
//   M2L  b_0 = a_0 log(-d) + sum_k (-1)^k a_k / d^k
//        b_l = -a_0 / (l d^l) + d^-l sum_k (-1)^k a_k / d^k C(l+k-1,k-1)
//        (d = source centre - target centre)
//   L2L  b_l = sum_{k>=l} c_k C(k,l) d^(k-l)      (d = child centre - parent centre)
//   L2P  phi(z) = Re sum_l c_l (z - c)^l
//   P2P  phi(z_i) += q_j log|z_i - z_j| for the points of neighbouring leaves
//
// The tree: points sorted by Morton code; a box at level l is a distinct
// code prefix (empty boxes do not exist); every leaf is at level L. The
// interaction list of a box (level >= 2): the children of its parent's
// neighbours (the parent included) that are not its own neighbours.
//
// The futures: for every box of level >= 2 an upward future (its multipole
// expansion: P2M at a leaf, M2M after waiting on the children's), a downward
// future (its local expansion: after waiting on the parent's downward future
// and on the upward futures of its interaction list), and for every leaf an
// evaluation future (L2P after waiting on the leaf's downward future, then
// P2P). They are launched in that order, so that every future a task waits
// on was launched before it; the caller then waits on the evaluation futures.
#include "fmm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <future>
#include <memory>
#include <random>
#include <stdexcept>
#include <system_error>
#include <unordered_map>

#include <weft/async.hpp>
#include <weft/future.hpp>
#include <weft/runtime.hpp>

namespace weft_app_fmm {
namespace {

using cplx = std::complex<double>;
constexpr int kMaxLevel = 16;  // Morton codes of 2 x 16 bits

struct box {
  std::uint64_t key = 0;    // Morton prefix at its level
  int level = 0;
  int ix = 0, iy = 0;       // grid coordinates at its level
  std::uint32_t first = 0;  // its points: [first, first + count) of the sorted points
  std::uint32_t count = 0;
  int parent = -1;
  std::vector<int> children;
  cplx center;
  std::vector<int> ilist;   // M2L sources (level >= 2)
  std::vector<int> near;    // leaves: neighbouring leaves, itself included
};

struct problem {
  std::vector<cplx> z;      // sorted by Morton code
  std::vector<double> q;
  std::vector<box> boxes;   // by level, level 0 first
  std::vector<std::size_t> level_begin;  // boxes of level l: [level_begin[l], level_begin[l+1])
  int L = 0;
  int p = 0;
  std::vector<double> binom;  // C(n, k) at n * (2p + 1) + k, n, k <= 2p
  double C(int n, int k) const { return binom[static_cast<std::size_t>(n) * (2 * p + 1) + k]; }
};

std::uint64_t spread(std::uint32_t v) {  // bit i -> bit 2i
  std::uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
  x = (x | (x << 2)) & 0x3333333333333333ull;
  x = (x | (x << 1)) & 0x5555555555555555ull;
  return x;
}

std::uint64_t grid_key(int ix, int iy) {
  return spread(static_cast<std::uint32_t>(ix)) | (spread(static_cast<std::uint32_t>(iy)) << 1);
}

problem build(const options& o) {
  problem pr;
  pr.p = o.order;
  const std::size_t n = o.n;
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::vector<cplx> z(n);
  std::vector<double> q(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (o.dist == distribution::uniform) {
      z[i] = cplx(u01(rng), u01(rng));
    } else {
      const double t = 2 * M_PI * u01(rng);
      z[i] = cplx(std::cos(t), std::sin(t));
    }
    q[i] = 1.0 - u01(rng);  // (0, 1]
  }
  // The bounding square, slightly enlarged so that every point is inside.
  double x0 = z[0].real(), x1 = x0, y0 = z[0].imag(), y1 = y0;
  for (auto& v : z) {
    x0 = std::min(x0, v.real());
    x1 = std::max(x1, v.real());
    y0 = std::min(y0, v.imag());
    y1 = std::max(y1, v.imag());
  }
  double side = std::max({x1 - x0, y1 - y0, 1e-300}) * (1 + 1e-9);
  const double cells = static_cast<double>(1u << kMaxLevel);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> code(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto cx = static_cast<std::uint32_t>(std::min(cells - 1, (z[i].real() - x0) / side * cells));
    auto cy = static_cast<std::uint32_t>(std::min(cells - 1, (z[i].imag() - y0) / side * cells));
    code[i] = {spread(cx) | (spread(cy) << 1), static_cast<std::uint32_t>(i)};
  }
  std::sort(code.begin(), code.end());
  pr.z.resize(n);
  pr.q.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    pr.z[i] = z[code[i].second];
    pr.q[i] = q[code[i].second];
  }

  // The leaf level: the first (>= 2) whose nonempty boxes hold <= leaf points on average.
  int L = 2;
  for (;; ++L) {
    if (L == kMaxLevel) break;
    const int shift = 2 * (kMaxLevel - L);
    std::size_t distinct = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (i == 0 || (code[i].first >> shift) != (code[i - 1].first >> shift)) ++distinct;
    if (static_cast<double>(n) / static_cast<double>(distinct) <= o.leaf) break;
  }
  pr.L = L;

  std::vector<std::unordered_map<std::uint64_t, int>> index(static_cast<std::size_t>(L) + 1);
  for (int l = 0; l <= L; ++l) {
    pr.level_begin.push_back(pr.boxes.size());
    const int shift = 2 * (kMaxLevel - l);
    const double w = side / static_cast<double>(1u << l);
    for (std::size_t i = 0; i < n;) {
      const std::uint64_t key = code[i].first >> shift;
      std::size_t j = i;
      while (j < n && (code[j].first >> shift) == key) ++j;
      box b;
      b.key = key;
      b.level = l;
      int ix = 0, iy = 0;
      for (int bit = 0; bit < l; ++bit) {
        ix |= static_cast<int>((key >> (2 * bit)) & 1) << bit;
        iy |= static_cast<int>((key >> (2 * bit + 1)) & 1) << bit;
      }
      b.ix = ix;
      b.iy = iy;
      b.first = static_cast<std::uint32_t>(i);
      b.count = static_cast<std::uint32_t>(j - i);
      b.center = cplx(x0 + (ix + 0.5) * w, y0 + (iy + 0.5) * w);
      const int id = static_cast<int>(pr.boxes.size());
      if (l > 0) {
        b.parent = index[static_cast<std::size_t>(l) - 1].at(key >> 2);
        pr.boxes[static_cast<std::size_t>(b.parent)].children.push_back(id);
      }
      index[static_cast<std::size_t>(l)].emplace(key, id);
      pr.boxes.push_back(std::move(b));
      i = j;
    }
  }
  pr.level_begin.push_back(pr.boxes.size());

  auto find = [&](int l, int ix, int iy) -> int {
    const int m = 1 << l;
    if (ix < 0 || iy < 0 || ix >= m || iy >= m) return -1;
    auto& idx = index[static_cast<std::size_t>(l)];
    auto it = idx.find(grid_key(ix, iy));
    return it == idx.end() ? -1 : it->second;
  };
  for (int l = 2; l <= L; ++l)
    for (std::size_t b = pr.level_begin[static_cast<std::size_t>(l)]; b < pr.level_begin[static_cast<std::size_t>(l) + 1]; ++b) {
      box& x = pr.boxes[b];
      const int px = x.ix / 2, py = x.iy / 2;
      for (int dx = -1; dx <= 1; ++dx)
        for (int dy = -1; dy <= 1; ++dy)
          for (int a = 0; a < 2; ++a)
            for (int c = 0; c < 2; ++c) {
              const int cx = 2 * (px + dx) + a, cy = 2 * (py + dy) + c;
              if (std::abs(cx - x.ix) <= 1 && std::abs(cy - x.iy) <= 1) continue;
              const int s = find(l, cx, cy);
              if (s >= 0) x.ilist.push_back(s);
            }
      if (l == L)
        for (int dx = -1; dx <= 1; ++dx)
          for (int dy = -1; dy <= 1; ++dy) {
            const int s = find(l, x.ix + dx, x.iy + dy);
            if (s >= 0) x.near.push_back(s);
          }
    }

  const int m = 2 * pr.p + 1;
  pr.binom.assign(static_cast<std::size_t>(m) * m, 0.0);
  for (int a = 0; a < m; ++a) {
    pr.binom[static_cast<std::size_t>(a) * m] = 1;
    for (int k = 1; k <= a; ++k)
      pr.binom[static_cast<std::size_t>(a) * m + k] =
          pr.binom[static_cast<std::size_t>(a - 1) * m + k - 1] +
          (k <= a - 1 ? pr.binom[static_cast<std::size_t>(a - 1) * m + k] : 0.0);
  }
  return pr;
}

// The expansions and potentials of one evaluation. Each task writes only its
// own box's expansion (or its own leaf's potentials) and reads only what the
// futures it waited on published.
struct state {
  const problem& pr;
  std::vector<cplx> M, Lc;  // (p + 1) coefficients per box
  std::vector<double> phi;
  explicit state(const problem& p)
      : pr(p),
        M(p.boxes.size() * static_cast<std::size_t>(p.p + 1)),
        Lc(p.boxes.size() * static_cast<std::size_t>(p.p + 1)),
        phi(p.z.size(), 0.0) {}
  cplx* m(std::size_t b) { return &M[b * static_cast<std::size_t>(pr.p + 1)]; }
  cplx* loc(std::size_t b) { return &Lc[b * static_cast<std::size_t>(pr.p + 1)]; }

  // P2M at a leaf, M2M elsewhere: box b's multipole expansion.
  void upward(std::size_t b) {
    const int p = pr.p;
    const box& x = pr.boxes[b];
    cplx* a = m(b);
    std::fill(a, a + p + 1, cplx(0));
    if (x.children.empty()) {
      for (std::uint32_t i = x.first; i < x.first + x.count; ++i) {
        const cplx d = pr.z[i] - x.center;
        const double qi = pr.q[i];
        a[0] += qi;
        cplx pw = 1;
        for (int k = 1; k <= p; ++k) {
          pw *= d;
          a[k] -= qi * pw / static_cast<double>(k);
        }
      }
      return;
    }
    for (int c : x.children) {
      const cplx* ac = m(static_cast<std::size_t>(c));
      const cplx d = pr.boxes[static_cast<std::size_t>(c)].center - x.center;
      std::vector<cplx> dp(static_cast<std::size_t>(p) + 1);
      dp[0] = 1;
      for (int k = 1; k <= p; ++k) dp[static_cast<std::size_t>(k)] = dp[static_cast<std::size_t>(k) - 1] * d;
      a[0] += ac[0];
      for (int l = 1; l <= p; ++l) {
        cplx s = -ac[0] * dp[static_cast<std::size_t>(l)] / static_cast<double>(l);
        for (int k = 1; k <= l; ++k) s += ac[k] * dp[static_cast<std::size_t>(l - k)] * pr.C(l - 1, k - 1);
        a[l] += s;
      }
    }
  }

  // L2L from the parent (levels > 2), then M2L from the interaction list.
  void downward(std::size_t b) {
    const int p = pr.p;
    const box& x = pr.boxes[b];
    cplx* c = loc(b);
    std::fill(c, c + p + 1, cplx(0));
    if (x.level > 2) {
      const cplx* cp = loc(static_cast<std::size_t>(x.parent));
      const cplx d = x.center - pr.boxes[static_cast<std::size_t>(x.parent)].center;
      std::vector<cplx> dp(static_cast<std::size_t>(p) + 1);
      dp[0] = 1;
      for (int k = 1; k <= p; ++k) dp[static_cast<std::size_t>(k)] = dp[static_cast<std::size_t>(k) - 1] * d;
      for (int l = 0; l <= p; ++l) {
        cplx s = 0;
        for (int k = l; k <= p; ++k) s += cp[k] * pr.C(k, l) * dp[static_cast<std::size_t>(k - l)];
        c[l] = s;
      }
    }
    std::vector<cplx> inv(static_cast<std::size_t>(2 * p) + 1), t(static_cast<std::size_t>(p) + 1);
    for (int s : x.ilist) {
      const cplx* a = m(static_cast<std::size_t>(s));
      const cplx d = pr.boxes[static_cast<std::size_t>(s)].center - x.center;
      const cplx id = 1.0 / d;
      inv[0] = 1;
      for (int k = 1; k <= p; ++k) inv[static_cast<std::size_t>(k)] = inv[static_cast<std::size_t>(k) - 1] * id;
      // t_k = (-1)^k a_k / d^k
      for (int k = 1; k <= p; ++k)
        t[static_cast<std::size_t>(k)] = (k % 2 ? -1.0 : 1.0) * a[k] * inv[static_cast<std::size_t>(k)];
      cplx b0 = a[0] * std::log(-d);
      for (int k = 1; k <= p; ++k) b0 += t[static_cast<std::size_t>(k)];
      c[0] += b0;
      for (int l = 1; l <= p; ++l) {
        cplx s2 = -a[0] / static_cast<double>(l);
        for (int k = 1; k <= p; ++k) s2 += t[static_cast<std::size_t>(k)] * pr.C(l + k - 1, k - 1);
        c[l] += s2 * inv[static_cast<std::size_t>(l)];
      }
    }
  }

  // L2P and P2P for the points of leaf b.
  void evaluate(std::size_t b) {
    const int p = pr.p;
    const box& x = pr.boxes[b];
    const cplx* c = loc(b);
    for (std::uint32_t i = x.first; i < x.first + x.count; ++i) {
      const cplx d = pr.z[i] - x.center;
      cplx s = c[p];
      for (int l = p - 1; l >= 0; --l) s = s * d + c[l];  // Horner
      double v = s.real();
      const cplx zi = pr.z[i];
      for (int nb : x.near) {
        const box& y = pr.boxes[static_cast<std::size_t>(nb)];
        for (std::uint32_t j = y.first; j < y.first + y.count; ++j) {
          if (j == i) continue;
          const double dx = zi.real() - pr.z[j].real(), dy = zi.imag() - pr.z[j].imag();
          v += 0.5 * pr.q[j] * std::log(dx * dx + dy * dy);
        }
      }
      phi[i] = v;
    }
  }
};

void evaluate_serial(state& s) {
  const problem& pr = s.pr;
  const auto L = static_cast<std::size_t>(pr.L);
  for (std::size_t l = L + 1; l-- > 2;)
    for (std::size_t b = pr.level_begin[l]; b < pr.level_begin[l + 1]; ++b) s.upward(b);
  for (std::size_t l = 2; l <= L; ++l)
    for (std::size_t b = pr.level_begin[l]; b < pr.level_begin[l + 1]; ++b) s.downward(b);
  for (std::size_t b = pr.level_begin[L]; b < pr.level_begin[L + 1]; ++b) s.evaluate(b);
}

// The futures version, for weft (SF = weft::shared_future<void>) and std
// (SF = std::shared_future<void>): `spawn(fn)` launches fn and returns its
// shared future. Counts the launched tasks in `launched`; if spawn throws,
// waits for the tasks already launched (they depend only on earlier ones,
// so they finish) and rethrows.
template <class SF, class Spawn>
void evaluate_futures(state& s, Spawn spawn, std::size_t& launched) {
  const problem& pr = s.pr;
  const auto L = static_cast<std::size_t>(pr.L);
  const std::size_t nb = pr.boxes.size();
  std::vector<SF> up(nb), down(nb), eval(nb);
  launched = 0;
  try {
    for (std::size_t l = L + 1; l-- > 2;)
      for (std::size_t b = pr.level_begin[l]; b < pr.level_begin[l + 1]; ++b) {
        up[b] = spawn([&s, &up, b] {
          for (int c : s.pr.boxes[b].children) up[static_cast<std::size_t>(c)].wait();
          s.upward(b);
        });
        ++launched;
      }
    for (std::size_t l = 2; l <= L; ++l)
      for (std::size_t b = pr.level_begin[l]; b < pr.level_begin[l + 1]; ++b) {
        down[b] = spawn([&s, &up, &down, b] {
          const box& x = s.pr.boxes[b];
          if (x.level > 2) down[static_cast<std::size_t>(x.parent)].wait();
          for (int src : x.ilist) up[static_cast<std::size_t>(src)].wait();
          s.downward(b);
        });
        ++launched;
      }
    for (std::size_t b = pr.level_begin[L]; b < pr.level_begin[L + 1]; ++b) {
      eval[b] = spawn([&s, &down, b] {
        down[b].wait();
        s.evaluate(b);
      });
      ++launched;
    }
  } catch (...) {
    for (auto* v : {&up, &down, &eval})
      for (auto& f : *v)
        if (f.valid()) f.wait();
    throw;
  }
  for (std::size_t b = pr.level_begin[L]; b < pr.level_begin[L + 1]; ++b) eval[b].get();
  // Every other task has finished too, except possibly the upward tasks of
  // level-2 boxes that no interaction list names: wait for all, since the
  // tasks use `s` and these vectors (dropping a weft future does not wait).
  for (auto* v : {&up, &down})
    for (auto& f : *v)
      if (f.valid()) f.get();
}

double check(const problem& pr, const std::vector<double>& phi, std::size_t samples) {
  const std::size_t n = pr.z.size();
  double num = 0, den = 0;
  for (std::size_t k = 0; k < samples; ++k) {
    const std::size_t i = samples == n ? k : k * n / samples;
    double v = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double dx = pr.z[i].real() - pr.z[j].real(), dy = pr.z[i].imag() - pr.z[j].imag();
      v += 0.5 * pr.q[j] * std::log(dx * dx + dy * dy);
    }
    num += (phi[i] - v) * (phi[i] - v);
    den += v * v;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

const char* mode_name(mode m) {
  switch (m) {
    case mode::serial: return "serial";
    case mode::weft: return "weft";
    case mode::std_async: return "std::async";
  }
  return "?";
}

const char* distribution_name(distribution d) {
  return d == distribution::uniform ? "uniform" : "circle";
}

double default_tolerance(int order) { return std::max(1e-12, std::ldexp(1.0, -order)); }

std::string validate(const options& o) {
  if (o.n < 2) return "n must be at least 2";
  if (o.n > (1u << 26)) return "n must be at most 67108864";
  if (o.order < 1 || o.order > 60) return "order must be in 1..60";
  if (o.leaf < 1) return "leaf must be at least 1";
  if (o.reps < 1) return "reps must be at least 1";
  if (o.check < 1 || o.check > o.n) return "check must be in 1..n";
  if (o.modes.empty()) return "no mode to run";
  if (!(o.tolerance >= 0)) return "tolerance must be >= 0";
  for (unsigned w : o.workers)
    if (w > 1024) return "workers must be at most 1024";
  return {};
}

bool results::ok() const {
  for (auto& r : runs)
    if (r.wrong) return false;
  return true;
}

bool results::any_failed() const {
  for (auto& r : runs)
    if (r.failed) return true;
  return false;
}

results run(const options& o) {
  if (auto why = validate(o); !why.empty()) throw std::invalid_argument(why);
  const problem pr = build(o);
  results res;
  res.tolerance = o.tolerance > 0 ? o.tolerance : default_tolerance(o.order);
  res.tree.levels = pr.L;
  res.tree.boxes = pr.boxes.size();
  res.tree.leaves = pr.level_begin[static_cast<std::size_t>(pr.L) + 1] - pr.level_begin[static_cast<std::size_t>(pr.L)];
  res.tree.tasks = 2 * (pr.boxes.size() - pr.level_begin[2]) + res.tree.leaves;
  for (auto& b : pr.boxes) {
    res.tree.m2l += b.ilist.size();
    for (int nb : b.near)
      res.tree.p2p += static_cast<std::size_t>(b.count) * pr.boxes[static_cast<std::size_t>(nb)].count;
  }

  for (mode m : o.modes) {
    const std::vector<unsigned> ws = m == mode::weft ? o.workers : std::vector<unsigned>{m == mode::serial ? 1u : 0u};
    for (unsigned w : ws) {
      mode_result r;
      r.m = m;
      r.workers = w;
      std::unique_ptr<weft::runtime> rt;
      if (m == mode::weft) {
        weft::options wo;
        wo.workers = w;
        rt = std::make_unique<weft::runtime>(wo);
        r.workers = rt->worker_count();
      }
      for (int rep = 0; rep < o.reps && !r.failed; ++rep) {
        state s(pr);
        std::size_t launched = 0;
        const auto t0 = std::chrono::steady_clock::now();
        if (m == mode::serial) {
          evaluate_serial(s);
        } else if (m == mode::weft) {
          rt->run([&] {
            evaluate_futures<weft::shared_future<void>>(
                s, [](auto fn) { return weft::async(std::move(fn)).share(); }, launched);
          });
        } else {
          try {
            evaluate_futures<std::shared_future<void>>(
                s, [](auto fn) { return std::async(std::launch::async, std::move(fn)).share(); }, launched);
          } catch (const std::system_error& e) {
            r.failed = true;
            r.error = std::string("std::system_error \"") + e.what() + "\" after " + std::to_string(launched) +
                      " of " + std::to_string(res.tree.tasks) + " tasks";
            break;
          }
        }
        const auto t1 = std::chrono::steady_clock::now();
        r.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        r.rel_error = std::max(r.rel_error, check(pr, s.phi, o.check));
        if (!(r.rel_error <= res.tolerance)) r.wrong = true;
      }
      res.runs.push_back(std::move(r));
    }
  }
  return res;
}

}  // namespace weft_app_fmm
