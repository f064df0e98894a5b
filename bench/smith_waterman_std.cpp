// Smith-Waterman local alignment with one std::async future per tile, as in
// Fibertures (003 §4.1, Figures 4.2-4.3, Tables 4.1-4.2): a standalone
// program written against the standard library only. The weft-bench section
// "migrate" runs it as it is (every tile a thread), after scripts/weft-migrate
// (the build generates smith_waterman_weft.cpp from this file: every tile a
// weft task), and with --serial.
//
//   smith_waterman_std [--serial] LENGTH TILES_PER_SIDE
//
// Two pseudo-random sequences of LENGTH nucleotides; the score matrix is cut
// into TILES_PER_SIDE^2 tiles, launched in row-major order with
// std::async(std::launch::async); a tile waits on the futures of its upper,
// left and upper-left neighbours, then fills its cells. Prints key=value
// lines: score, ms (the alignment only), tiles, vm_hwm_kib. A failure to
// start a tile (std::system_error: the thread limit) prints error=... and
// launched=K and exits with status 3.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <system_error>
#include <vector>

namespace {

constexpr int match = 2, mismatch = -1, gap = -1;

std::string make_sequence(std::size_t n, unsigned seed) {
  static const char bases[] = "ACGT";
  std::string s(n, 'A');
  unsigned x = seed;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;  // an LCG: the same sequences on every run
    c = bases[(x >> 16) & 3];
  }
  return s;
}

struct problem {
  std::string a, b;
  int rows, cols;        // matrix size: (|a|+1) x (|b|+1)
  std::vector<int> h;    // the score matrix, row-major
  int& at(int i, int j) { return h[static_cast<std::size_t>(i) * cols + j]; }
};

// Fills cells [i0,i1) x [j0,j1); returns the best score among them.
int fill(problem& p, int i0, int i1, int j0, int j1) {
  int best = 0;
  for (int i = i0; i < i1; ++i)
    for (int j = j0; j < j1; ++j) {
      if (i == 0 || j == 0) {
        p.at(i, j) = 0;
        continue;
      }
      const int s = p.a[i - 1] == p.b[j - 1] ? match : mismatch;
      const int v = std::max({0, p.at(i - 1, j - 1) + s, p.at(i - 1, j) + gap, p.at(i, j - 1) + gap});
      p.at(i, j) = v;
      best = std::max(best, v);
    }
  return best;
}

long vm_hwm_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmHWM:", 6) == 0) kib = std::strtol(line + 6, nullptr, 10);
  std::fclose(f);
  return kib;
}

}  // namespace

int main(int argc, char** argv) {
  bool serial = false;
  int arg = 1;
  if (arg < argc && std::strcmp(argv[arg], "--serial") == 0) {
    serial = true;
    ++arg;
  }
  if (argc - arg != 2) {
    std::fprintf(stderr, "usage: %s [--serial] LENGTH TILES_PER_SIDE\n", argv[0]);
    return 2;
  }
  const int length = std::atoi(argv[arg]);
  const int tiles = std::atoi(argv[arg + 1]);
  if (length < 1 || tiles < 1 || tiles > length + 1) {
    std::fprintf(stderr, "bad LENGTH or TILES_PER_SIDE\n");
    return 2;
  }
  problem p{make_sequence(static_cast<std::size_t>(length), 1), make_sequence(static_cast<std::size_t>(length), 2),
            length + 1, length + 1, {}};
  p.h.assign(static_cast<std::size_t>(p.rows) * p.cols, 0);

  const auto start = std::chrono::steady_clock::now();
  int score = 0;
  if (serial) {
    score = fill(p, 0, p.rows, 0, p.cols);
  } else {
    std::vector<std::vector<std::future<void>>> futures(tiles);
    for (auto& row : futures) row.resize(tiles);
    std::vector<int> best(static_cast<std::size_t>(tiles) * tiles, 0);
    int launched = 0;
    try {
      for (int ti = 0; ti < tiles; ++ti)
        for (int tj = 0; tj < tiles; ++tj) {
          futures[ti][tj] = std::async(std::launch::async, [=, &p, &futures, &best] {
            if (ti != 0 && tj != 0) futures[ti - 1][tj - 1].wait();
            if (ti != 0) futures[ti - 1][tj].wait();
            if (tj != 0) futures[ti][tj - 1].wait();
            const int i0 = p.rows * ti / tiles, i1 = p.rows * (ti + 1) / tiles;
            const int j0 = p.cols * tj / tiles, j1 = p.cols * (tj + 1) / tiles;
            best[static_cast<std::size_t>(ti) * tiles + tj] = fill(p, i0, i1, j0, j1);
          });
          ++launched;
        }
    } catch (const std::system_error& e) {
      std::printf("error=%s\nlaunched=%d\ntiles=%d\n", e.what(), launched, tiles * tiles);
      std::fflush(stdout);
      std::_Exit(3);  // the launched tiles' threads may still run: do not join them
    }
    futures.back().back().wait();
    score = *std::max_element(best.begin(), best.end());
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("score=%d\nms=%.3f\ntiles=%d\nvm_hwm_kib=%ld\n", score, ms, serial ? 0 : tiles * tiles, vm_hwm_kib());
  return 0;
}
