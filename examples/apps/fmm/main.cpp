// fmm: the fast multipole method with futures, serial vs weft vs std::async
// (Fibertures, paper 003 §4.2, Tables 4.3-4.4). See fmm.hpp and README.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "fmm.hpp"

namespace {

using namespace weft_app_fmm;

const char* const kUsage =
    "usage: fmm [OPTIONS]\n"
    "\n"
    "The 2-D fast multipole method (quadtree; P2M, M2M, M2L, L2L, L2P, P2P) written\n"
    "with futures: one future per box and pass. Runs it serially, on weft::async /\n"
    "weft::shared_future, and on std::async(std::launch::async) / std::shared_future,\n"
    "and checks every run against a direct O(n^2) sum on a sample of points.\n"
    "\n"
    "options:\n"
    "  --n N           number of points (default 20000)\n"
    "  --order P       expansion order: terms beyond the log term (default 20; 1..60)\n"
    "  --leaf S        tree depth: the first level whose nonempty leaves hold at most S\n"
    "                  points on average (default 64)\n"
    "  --dist D        uniform (unit square) or circle (unit circle, the 2-D analogue\n"
    "                  of the paper's data type II; default circle)\n"
    "  --seed S        random seed for points and charges (default 1)\n"
    "  --mode LIST     comma-separated modes to run: serial, weft, std\n"
    "                  (default serial,weft,std)\n"
    "  --workers LIST  weft runs: comma-separated worker counts, one run each;\n"
    "                  0 = the WEFT_WORKERS environment variable, else the\n"
    "                  hardware threads (default 0)\n"
    "  --reps R        timed runs per mode and worker count (default 1)\n"
    "  --check K       points compared with the direct sum (default 100; at most N)\n"
    "  --tol X         relative error bound of the check (default 2^-P, at least 1e-12)\n"
    "  --kv            print key=value lines instead of the table\n"
    "  --json          print one JSON object instead of the table\n"
    "  --help          this text\n"
    "\n"
    "Times are of the evaluation only (the tree is built once, before). The\n"
    "relative error is ||phi - direct||_2 / ||direct||_2 over the sampled points.\n"
    "\n"
    "exit status: 0 every run correct; 1 a run's error above the bound;\n"
    "2 bad options; 3 a mode could not run (std::async: thread creation failed)\n";

[[noreturn]] void bad(const std::string& what) {
  std::fprintf(stderr, "fmm: %s\n(try fmm --help)\n", what.c_str());
  std::exit(2);
}

unsigned long long parse_uint(const std::string& opt, const std::string& v) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 18)
    bad(opt + ": expected a non-negative integer, got '" + v + "'");
  return std::strtoull(v.c_str(), nullptr, 10);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    auto c = s.find(',', pos);
    out.push_back(s.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
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
  options o;
  bool kv = false, json = false, check_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--kv") { kv = true; continue; }
    if (a == "--json") { json = true; continue; }
    if (i + 1 >= argc) bad("unknown option or missing value: " + a);
    const std::string v = argv[++i];
    if (a == "--n") o.n = parse_uint(a, v);
    else if (a == "--order") o.order = static_cast<int>(std::min(parse_uint(a, v), 1000ull));
    else if (a == "--leaf") o.leaf = static_cast<int>(std::min(parse_uint(a, v), 1ull << 30));
    else if (a == "--seed") o.seed = parse_uint(a, v);
    else if (a == "--reps") o.reps = static_cast<int>(std::min(parse_uint(a, v), 1000000ull));
    else if (a == "--check") {
      o.check = parse_uint(a, v);
      check_set = true;
    }
    else if (a == "--dist") {
      if (v == "uniform") o.dist = distribution::uniform;
      else if (v == "circle") o.dist = distribution::circle;
      else bad("--dist: expected uniform or circle, got '" + v + "'");
    } else if (a == "--mode") {
      o.modes.clear();
      for (auto& m : split(v)) {
        if (m == "serial") o.modes.push_back(mode::serial);
        else if (m == "weft") o.modes.push_back(mode::weft);
        else if (m == "std") o.modes.push_back(mode::std_async);
        else bad("--mode: expected serial, weft or std, got '" + m + "'");
      }
    } else if (a == "--workers") {
      o.workers.clear();
      for (auto& w : split(v)) o.workers.push_back(static_cast<unsigned>(std::min(parse_uint(a, w), 100000ull)));
    } else if (a == "--tol") {
      char* end = nullptr;
      o.tolerance = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.tolerance > 0)) bad("--tol: expected a positive number, got '" + v + "'");
    } else {
      bad("unknown option: " + a);
    }
  }
  if (!check_set) o.check = std::min<std::size_t>(o.check, o.n);
  if (kv && json) bad("--kv and --json exclude each other");
  if (auto why = validate(o); !why.empty()) bad(why);

  results r;
  try {
    r = run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fmm: %s\n", e.what());
    return 1;
  }
  const int status = !r.ok() ? 1 : r.any_failed() ? 3 : 0;

  if (kv) {
    std::printf("n=%zu\norder=%d\nlevels=%d\nboxes=%zu\nleaves=%zu\ntasks=%zu\ntolerance=%.3g\n", o.n, o.order,
                r.tree.levels, r.tree.boxes, r.tree.leaves, r.tree.tasks, r.tolerance);
    for (std::size_t i = 0; i < r.runs.size(); ++i) {
      auto& x = r.runs[i];
      std::printf("run%zu.mode=%s\nrun%zu.workers=%u\n", i, mode_name(x.m), i, x.workers);
      std::string ms;
      for (double t : x.ms) {
        if (!ms.empty()) ms += ',';
        ms += std::to_string(t);
      }
      std::printf("run%zu.ms=%s\nrun%zu.median_ms=%.3f\nrun%zu.rel_error=%.3e\n", i, ms.c_str(), i, median(x.ms), i,
                  x.rel_error);
      if (x.failed) std::printf("run%zu.error=%s\n", i, x.error.c_str());
    }
    std::printf("ok=%d\nvm_hwm_kib=%ld\n", r.ok() ? 1 : 0, vm_hwm_kib());
  } else if (json) {
    std::printf("{\"n\":%zu,\"order\":%d,\"leaf\":%d,\"dist\":\"%s\",\"levels\":%d,\"boxes\":%zu,\"leaves\":%zu,"
                "\"tasks\":%zu,\"m2l\":%zu,\"p2p\":%zu,\"tolerance\":%.3g,\"ok\":%s,\"runs\":[",
                o.n, o.order, o.leaf, distribution_name(o.dist), r.tree.levels, r.tree.boxes, r.tree.leaves,
                r.tree.tasks, r.tree.m2l, r.tree.p2p, r.tolerance, r.ok() ? "true" : "false");
    for (std::size_t i = 0; i < r.runs.size(); ++i) {
      auto& x = r.runs[i];
      std::printf("%s{\"mode\":\"%s\",\"workers\":%u,\"ms\":[", i ? "," : "", mode_name(x.m), x.workers);
      for (std::size_t k = 0; k < x.ms.size(); ++k) std::printf("%s%.3f", k ? "," : "", x.ms[k]);
      std::printf("],\"median_ms\":%.3f,\"rel_error\":%.3e,\"failed\":%s,\"wrong\":%s,\"error\":\"%s\"}",
                  median(x.ms), x.rel_error, x.failed ? "true" : "false", x.wrong ? "true" : "false",
                  json_escape(x.error).c_str());
    }
    std::printf("]}\n");
  } else {
    std::printf("fmm: n=%zu (%s), order %d, leaf level %d, %zu boxes (%zu leaves), %zu futures per run,\n"
                "     %zu M2L, %zu P2P pairs; check: %zu points vs direct sum, bound %.3g\n\n",
                o.n, distribution_name(o.dist), o.order, r.tree.levels, r.tree.boxes, r.tree.leaves, r.tree.tasks,
                r.tree.m2l, r.tree.p2p, o.check, r.tolerance);
    double serial_ms = 0;
    for (auto& x : r.runs)
      if (x.m == mode::serial && !x.ms.empty()) serial_ms = median(x.ms);
    std::printf("  %-12s %8s %12s %10s %11s  %s\n", "mode", "workers", "median ms", "speedup", "rel error", "");
    for (auto& x : r.runs) {
      std::string w = x.m == mode::std_async ? "thread/task" : std::to_string(x.workers);
      if (x.failed) {
        std::printf("  %-12s %8s %12s %10s %11s  std::async failed: %s\n", mode_name(x.m), w.c_str(), "-", "-", "-",
                    x.error.c_str());
        continue;
      }
      const double m = median(x.ms);
      char sp[32] = "-";
      if (serial_ms > 0 && m > 0) std::snprintf(sp, sizeof sp, "%.2fx", serial_ms / m);
      std::printf("  %-12s %8s %12.1f %10s %11.2e  %s\n", mode_name(x.m), w.c_str(), m, sp, x.rel_error,
                  x.wrong ? "WRONG: above the bound" : "ok");
    }
    std::printf("\n%s\n", status == 0 ? "all runs correct" : status == 1 ? "FAILED: a result is wrong"
                                                                         : "a mode could not run (see above)");
  }
  return status;
}
