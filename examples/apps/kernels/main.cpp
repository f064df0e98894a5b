// cilk_kernels — runs the Cilk kernels (LU, Strassen, Black-Scholes,
// Knapsack) serially, on weft and on oneTBB, checks every result and prints
// the times. `cilk_kernels --help` for the options.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels.hpp"

namespace {

using namespace weft_kernels;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: cilk_kernels [options]\n"
               "\n"
               "The Cilk kernels of Concurrent Cilk (paper 004, section 6.1, Figures 6 and 7),\n"
               "each run serially (the serial elision), with weft fork-join and with oneTBB,\n"
               "with the same leaves. Every run's result is checked; the exit status is 1 if\n"
               "any check fails, 2 on bad options.\n"
               "\n"
               "options:\n"
               "  --kernel K       lu, strassen, blackscholes, knapsack or all (default: all)\n"
               "  --impl I         serial, weft, tbb or all (default: all; tbb is skipped with a\n"
               "                   note when this build has no oneTBB)\n"
               "  --workers N      worker threads of weft and of the oneTBB arena (default: 2)\n"
               "  --size N         problem size (default: per kernel, see below)\n"
               "  --quick          the benchmark's --quick sizes\n"
               "  --small          the test sizes (fast, also under sanitizers)\n"
               "  --waits W        Figure 7's simulated waits: none, weft (weft::this_task::\n"
               "                   sleep_for: the task suspends, its worker runs other work) or\n"
               "                   os (std::this_thread::sleep_for: the worker blocks). weft\n"
               "                   needs --impl weft (with --impl all the others are skipped).\n"
               "                   Default: none\n"
               "  --wait-ratio R   total wait time / total leaf compute time (default: 1, i.e.\n"
               "                   waits are half of the CPU time, as in the paper)\n"
               "  --wait-every K   one leaf in K (pseudo-random) waits, for K x R x the mean\n"
               "                   compute time of a leaf, measured by two first untimed runs\n"
               "                   without waits (default: 8)\n"
               "  --reps N         timed runs per kernel and impl; the median is printed (default: 3)\n"
               "  --warmup N       untimed runs before them (default: 1)\n"
               "  --seed S         input data and waiting leaves (default: 42)\n"
               "  --json           print one JSON object instead of text\n"
               "  --help           this text\n"
               "\n"
               "sizes (default / --quick / --small):\n");
  for (kernel k : all_kernels)
    std::fprintf(out, "  %-13s %s: %ld / %ld / %ld\n", to_string(k), size_meaning(k),
                 default_size(k), quick_size(k), small_size(k));
}

[[noreturn]] void bad(const std::string& msg) {
  std::fprintf(stderr, "cilk_kernels: %s (see --help)\n", msg.c_str());
  std::exit(2);
}

long parse_long(const std::string& opt, const char* s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
    bad(opt + ": '" + s + "' is not an integer in " + std::to_string(lo) + " ... " +
        std::to_string(hi));
  return v;
}

double parse_double(const std::string& opt, const char* s) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0') bad(opt + ": '" + s + "' is not a number");
  return v;
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<kernel> kernels(std::begin(all_kernels), std::end(all_kernels));
  std::vector<impl> impls{impl::serial, impl::weft, impl::tbb};
  options base;
  base.reps = 3;
  base.warmup = 1;
  enum { sz_default, sz_quick, sz_small } sizes = sz_default;
  bool json = false;

  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) bad(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--kernel") {
      std::string v = value();
      if (v == "all") {
        kernels.assign(std::begin(all_kernels), std::end(all_kernels));
      } else if (auto k = parse_kernel(v)) {
        kernels = {*k};
      } else {
        bad("--kernel: unknown kernel '" + v + "'");
      }
    } else if (a == "--impl") {
      std::string v = value();
      if (v == "all") {
        impls = {impl::serial, impl::weft, impl::tbb};
      } else if (auto m = parse_impl(v)) {
        impls = {*m};
      } else {
        bad("--impl: unknown implementation '" + v + "'");
      }
    } else if (a == "--workers") {
      base.workers = static_cast<unsigned>(parse_long(a, value(), 1, 1024));
    } else if (a == "--size") {
      base.size = parse_long(a, value(), 1, 100'000'000);
    } else if (a == "--quick") {
      sizes = sz_quick;
    } else if (a == "--small") {
      sizes = sz_small;
    } else if (a == "--waits") {
      std::string v = value();
      auto w = parse_wait_kind(v);
      if (!w) bad("--waits: unknown kind '" + v + "' (none, weft or os)");
      base.waits = *w;
    } else if (a == "--wait-ratio") {
      base.wait_ratio = parse_double(a, value());
      if (!(base.wait_ratio > 0 && base.wait_ratio <= 100)) bad("--wait-ratio: must be in (0, 100]");
    } else if (a == "--wait-every") {
      base.wait_every = static_cast<int>(parse_long(a, value(), 1, 1'000'000));
    } else if (a == "--reps") {
      base.reps = static_cast<int>(parse_long(a, value(), 1, 1000));
    } else if (a == "--warmup") {
      base.warmup = static_cast<int>(parse_long(a, value(), 0, 1000));
    } else if (a == "--seed") {
      base.seed = static_cast<std::uint64_t>(parse_long(a, value(), 0, 1L << 62));
    } else if (a == "--json") {
      json = true;
    } else {
      bad("unknown option '" + a + "'");
    }
  }
  if (base.size != 0 && kernels.size() > 1) bad("--size needs a single --kernel");

  bool all_ok = true;
  std::string json_runs;
  for (kernel k : kernels) {
    options o = base;
    o.which = k;
    if (o.size == 0)
      o.size = sizes == sz_quick ? quick_size(k) : sizes == sz_small ? small_size(k) : default_size(k);
    double serial_s = 0, weft_s = 0, tbb_s = 0;
    for (impl m : impls) {
      o.how = m;
      std::string skipped;
      if (m == impl::tbb && !have_tbb()) skipped = "n/a (oneTBB not found)";
      if (o.waits == wait_kind::weft_sleep && m != impl::weft) {
        if (impls.size() == 1) bad("--waits weft needs --impl weft");
        skipped = "skipped (--waits weft needs weft)";
      }
      const std::string workers =
          m == impl::serial ? "" : ", " + std::to_string(o.workers) + " worker" + (o.workers == 1 ? "" : "s");
      if (!skipped.empty()) {
        if (!json) std::printf("%-12s size %-8ld %-6s%s: %s\n", to_string(k), o.size, to_string(m),
                               workers.c_str(), skipped.c_str());
        continue;
      }
      results r;
      try {
        r = run(o);
      } catch (const std::invalid_argument& e) {
        bad(e.what());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cilk_kernels: %s %s: %s\n", to_string(k), to_string(m), e.what());
        return 1;
      }
      all_ok = all_ok && r.ok;
      const double med = r.median();
      (m == impl::serial ? serial_s : m == impl::weft ? weft_s : tbb_s) = med;
      if (json) {
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "%s{\"kernel\":\"%s\",\"size\":%ld,\"impl\":\"%s\",\"workers\":%u,"
                      "\"waits\":\"%s\",\"median_s\":%.6g,\"ok\":%s,\"leaves\":%ld,"
                      "\"simulated_waits\":%ld,\"wait_s\":%.6g,\"compute_s\":%.6g,\"seconds\":[",
                      json_runs.empty() ? "" : ",", to_string(k), o.size, to_string(m),
                      m == impl::serial ? 1u : o.workers, to_string(o.waits), med,
                      r.ok ? "true" : "false", r.leaves, r.waits, r.wait_seconds, r.compute_seconds);
        json_runs += buf;
        for (std::size_t i = 0; i < r.seconds.size(); ++i) {
          std::snprintf(buf, sizeof buf, "%s%.6g", i ? "," : "", r.seconds[i]);
          json_runs += buf;
        }
        json_runs += "],\"check\":\"" + json_escape(r.check) + "\"}";
      } else {
        std::printf("%-12s size %-8ld %-6s%s: median %.4f s of %zu runs, %s: %s\n", to_string(k),
                    o.size, to_string(m), workers.c_str(), med, r.seconds.size(),
                    r.ok ? "OK" : "WRONG", r.check.c_str());
        if (o.waits != wait_kind::none)
          std::printf("%-12s   simulated waits (%s): %ld of %ld leaves waited %.3f ms each, %.3f s in "
                      "all; leaf compute %.3f s (last run)\n",
                      "", to_string(o.waits), r.waits, r.leaves, r.calibrated_wait_seconds * 1e3,
                      r.wait_seconds, r.compute_seconds);
      }
    }
    if (!json && o.waits == wait_kind::none && weft_s > 0) {
      if (serial_s > 0) std::printf("%-12s   weft / serial = %.3f\n", "", weft_s / serial_s);
      if (tbb_s > 0) std::printf("%-12s   weft / oneTBB = %.3f\n", "", weft_s / tbb_s);
    }
  }
  if (json) std::printf("{\"ok\":%s,\"runs\":[%s]}\n", all_ok ? "true" : "false", json_runs.c_str());
  if (!all_ok) std::fprintf(stderr, "cilk_kernels: a result check FAILED\n");
  return all_ok ? 0 : 1;
}
