// weft-bench — machine facts for the report's header and the JSON output:
// compiler, build type, CPU, kernel, load, and the baselines found at build
// time.
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#if WEFT_BENCH_HAVE_TBB
#include <oneapi/tbb/version.h>
#endif

#include "bench.hpp"

#ifndef WEFT_BENCH_BUILD_TYPE
#define WEFT_BENCH_BUILD_TYPE "unknown"
#endif

namespace weft_bench {

std::string compiler_string() {
#if defined(__clang__)
  return std::string("Clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("GCC ") + __VERSION__;
#else
  return "unknown compiler";
#endif
}

std::string build_type_string() {
  std::string s = WEFT_BENCH_BUILD_TYPE;
#ifndef __OPTIMIZE__
  s += " (NOT OPTIMISED: numbers are meaningless)";
#endif
#ifndef NDEBUG
  s += ", assertions on";
#endif
  return s;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

unsigned online_cpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : std::thread::hardware_concurrency();
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a.empty() ? "unknown" : a + " " + b + " " + c;
}

std::string kernel_string() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::string tbb_string() {
#if WEFT_BENCH_HAVE_TBB
  return std::string("oneTBB ") + TBB_VERSION_STRING;
#else
  return "n/a (oneTBB not found)";
#endif
}

std::string openmp_string() {
#ifdef _OPENMP
  return "OpenMP " + std::to_string(_OPENMP);
#else
  return "n/a (OpenMP not found)";
#endif
}

}  // namespace weft_bench
