// map_reduce — distributed map-reduce with latency hiding (Cilk-L, Figure 1).
//
// The range of items [0, items) is split recursively with fork_join. Each leaf
// "opens a connection" to a remote source, waits for its reply, then runs a
// compute-heavy map f on it; partial results are combined on the way up:
//
//   map_reduce(lo, hi):
//     if hi - lo == 1:  buf = connection(lo).read()      // latency L
//                       return f(buf)                    // a parallel fib
//     a, b = fork_join(map_reduce(lo, mid), map_reduce(mid, hi))
//     return (a + b) mod 10^9
//
// The connection is simulated by a timerfd armed with the latency: reading it
// completes after L ms, just as a reply from a remote machine would. Reading
// it with weft::io::read suspends only the leaf's task, so the workers keep
// computing other leaves while every request is in flight; with the blocking
// backend each read blocks its worker for the full latency instead.
//
// "Ideal" is the same computation with zero latency: the timerfd is armed in
// the past, so it has already expired and a plain read() returns at once.
//
//   map_reduce [--items N] [--latency-ms L] [--fib N] [--base B] [--workers P]
//              [--backend automatic|epoll|io_uring|blocking]
//              [--policy proactive|parsimonious]
//
// Exits 0 only if the result matches a serial computation.
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <weft/io.hpp>
#include <weft/weft.hpp>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace {

constexpr std::uint64_t kModulus = 1'000'000'000;

struct config {
  unsigned long items = 200;
  unsigned long latency_ms = 10;
  int fib_n = 25;
  int base = 20;
  weft::options rt;  // workers, policy, backend
};

// ---- the map: a parallel Fibonacci -----------------------------------------

std::uint64_t fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

std::uint64_t fib(int n, int base) {
  if (n < 2 || n < base) return fib_serial(n);  // below the cutoff a task costs more than it saves
  auto [a, b] = weft::fork_join([=] { return fib(n - 1, base); }, [=] { return fib(n - 2, base); });
  return a + b;
}

// What leaf i contributes. The item index makes every leaf's contribution
// distinct, so a leaf that is lost or run twice changes the final sum.
std::uint64_t leaf_value(std::uint64_t fib_value, unsigned long i) {
  return (fib_value + i) % kModulus;
}

// ---- the "connection": a timerfd that becomes readable after the latency ---

class timer_connection {
 public:
  // latency_ms == 0 arms the timer at an absolute time in the past: it has
  // expired before anyone reads it. (A zero relative time would disarm it.)
  explicit timer_connection(unsigned long latency_ms) {
    fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd_ < 0) throw std::system_error(errno, std::system_category(), "timerfd_create");
    itimerspec spec{};
    int flags = 0;
    if (latency_ms == 0) {
      spec.it_value.tv_nsec = 1;  // CLOCK_MONOTONIC time 1 ns: long past
      flags = TFD_TIMER_ABSTIME;
    } else {
      spec.it_value.tv_sec = static_cast<time_t>(latency_ms / 1000);
      spec.it_value.tv_nsec = static_cast<long>(latency_ms % 1000) * 1'000'000;
    }
    if (::timerfd_settime(fd_, flags, &spec, nullptr) != 0) {
      int e = errno;
      ::close(fd_);
      throw std::system_error(e, std::system_category(), "timerfd_settime");
    }
  }
  ~timer_connection() { ::close(fd_); }
  timer_connection(const timer_connection&) = delete;
  timer_connection& operator=(const timer_connection&) = delete;

  // The reply: the timer's expiration count (8 bytes), read with weft::io.
  // get() suspends this task until the timer fires; the worker runs others.
  std::uint64_t receive() {
    std::uint64_t expirations = 0;
    std::size_t n = weft::io::read(fd_, &expirations, sizeof expirations).get();
    return check(n, expirations);
  }
  // The ideal's reply: a plain read() of an already-expired timer.
  std::uint64_t receive_now() {
    std::uint64_t expirations = 0;
    ssize_t n = ::read(fd_, &expirations, sizeof expirations);
    if (n < 0) throw std::system_error(errno, std::system_category(), "read(timerfd)");
    return check(static_cast<std::size_t>(n), expirations);
  }

 private:
  // A one-shot timer expires exactly once; anything else is a wrong read.
  static std::uint64_t check(std::size_t n, std::uint64_t expirations) {
    if (n != sizeof expirations || expirations != 1)
      throw std::runtime_error("timerfd read returned " + std::to_string(n) + " bytes, " +
                               std::to_string(expirations) + " expirations");
    return expirations;
  }
  int fd_ = -1;
};

// ---- the reduction tree -----------------------------------------------------

enum class mode { latency, ideal };

std::uint64_t map_reduce(unsigned long lo, unsigned long hi, const config& c, mode m) {
  if (hi - lo == 0) return 0;
  if (hi - lo == 1) {
    std::uint64_t buf;
    {
      timer_connection conn(m == mode::ideal ? 0 : c.latency_ms);
      buf = m == mode::ideal ? conn.receive_now() : conn.receive();
    }  // close the connection before computing: do not hold descriptors
    return leaf_value(buf * fib(c.fib_n, c.base), lo);  // buf == 1
  }
  unsigned long mid = lo + (hi - lo) / 2;
  auto [a, b] = weft::fork_join([&] { return map_reduce(lo, mid, c, m); },
                                [&] { return map_reduce(mid, hi, c, m); });
  return (a + b) % kModulus;
}

std::uint64_t serial_reference(const config& c) {
  std::uint64_t sum = 0;
  for (unsigned long i = 0; i < c.items; ++i)
    sum = (sum + leaf_value(fib_serial(c.fib_n), i)) % kModulus;
  return sum;
}

// ---- command line -----------------------------------------------------------

[[noreturn]] void usage(int status) {
  std::fprintf(status ? stderr : stdout,
               "usage: map_reduce [--items N] [--latency-ms L] [--fib N] [--base B]\n"
               "                  [--workers P] [--backend automatic|epoll|io_uring|blocking]\n"
               "                  [--policy proactive|parsimonious]\n"
               "defaults: --items 200 --latency-ms 10 --fib 25 --base 20, workers from\n"
               "WEFT_WORKERS or the core count, backend automatic, policy proactive\n");
  std::exit(status);
}

template <class T>
T parse_number(std::string_view flag, std::string_view text, T lo, T hi) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < lo || v > hi) {
    std::fprintf(stderr, "map_reduce: %.*s wants an integer in [%lld, %lld], not '%.*s'\n",
                 static_cast<int>(flag.size()), flag.data(), static_cast<long long>(lo),
                 static_cast<long long>(hi), static_cast<int>(text.size()), text.data());
    usage(2);
  }
  return v;
}

config parse(int argc, char** argv) {
  config c;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i], value;
    if (arg == "-h" || arg == "--help") usage(0);
    // Accept both "--flag value" and "--flag=value".
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "map_reduce: %s needs a value\n", argv[i]);
      usage(2);
    }
    if (arg == "--items") {
      c.items = parse_number<unsigned long>(arg, value, 0, 1'000'000);
    } else if (arg == "--latency-ms") {
      c.latency_ms = parse_number<unsigned long>(arg, value, 0, 60'000);
    } else if (arg == "--fib") {
      c.fib_n = parse_number<int>(arg, value, 0, 60);
    } else if (arg == "--base") {
      c.base = parse_number<int>(arg, value, 2, 60);
    } else if (arg == "--workers") {
      c.rt.workers = parse_number<unsigned>(arg, value, 1, 1024);
    } else if (arg == "--backend") {
      if (value == "automatic") c.rt.io = weft::io_backend::automatic;
      else if (value == "epoll") c.rt.io = weft::io_backend::epoll;
      else if (value == "io_uring") c.rt.io = weft::io_backend::io_uring;
      else if (value == "blocking") c.rt.io = weft::io_backend::blocking;
      else usage(2);
    } else if (arg == "--policy") {
      if (value == "proactive") c.rt.policy = weft::steal_policy::proactive;
      else if (value == "parsimonious") c.rt.policy = weft::steal_policy::parsimonious;
      else usage(2);
    } else {
      std::fprintf(stderr, "map_reduce: unknown option '%.*s'\n", static_cast<int>(arg.size()),
                   arg.data());
      usage(2);
    }
  }
  return c;
}

// Every leaf may be waiting on its connection at the same time, each holding
// a descriptor: lift the soft limit on open files to the hard one.
void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Exit status ctest reports as "skipped" (SKIP_RETURN_CODE).
constexpr int kSkipped = 77;

// Builds the runtime and its I/O backend (which the runtime creates lazily, at
// the first I/O call); returns the backend's name. An explicitly requested
// io_uring backend on a kernel that refuses io_uring (too old, or disabled by
// sysctl or seccomp) is not a failure of this example: say so and exit with
// kSkipped.
const char* start_runtime(std::optional<weft::runtime>& rt, const weft::options& opts) {
  rt.emplace(opts);
  try {
    return rt->run([] { return weft::io::backend_name(); });
  } catch (const std::system_error& e) {
    if (opts.io != weft::io_backend::io_uring) throw;
    std::printf("map_reduce: skipped, io_uring is not available: %s\n", e.what());
    std::fflush(stdout);
    std::exit(kSkipped);
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const config c = parse(argc, argv);
  raise_fd_limit();

  std::optional<weft::runtime> runtime;
  const char* backend = start_runtime(runtime, c.rt);
  weft::runtime& rt = *runtime;
  const unsigned workers = rt.worker_count();
  const char* policy =
      c.rt.policy == weft::steal_policy::parsimonious ? "parsimonious" : "proactive";

  auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t result = rt.run([&] { return map_reduce(0, c.items, c, mode::latency); });
  const double t_latency = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const std::uint64_t ideal = rt.run([&] { return map_reduce(0, c.items, c, mode::ideal); });
  const double t_ideal = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const std::uint64_t expected = serial_reference(c);
  const double t_serial = seconds_since(t0);

  const double latency_s = static_cast<double>(c.latency_ms) / 1000.0;
  std::printf("map_reduce: %lu items, latency %lu ms, f = fib(%d) with base case %d\n", c.items,
              c.latency_ms, c.fib_n, c.base);
  std::printf("runtime:    %u workers, backend %s, policy %s\n", workers, backend, policy);
  std::printf("result:     %llu (ideal %llu, serial %llu)\n",
              static_cast<unsigned long long>(result), static_cast<unsigned long long>(ideal),
              static_cast<unsigned long long>(expected));
  std::printf("weft:       %.3f s\n", t_latency);
  std::printf("ideal:      %.3f s  (zero latency; weft - ideal = %+.3f s, weft / ideal = %.2f)\n",
              t_ideal, t_latency - t_ideal, t_ideal > 0 ? t_latency / t_ideal : 0.0);
  std::printf("bounds:     >= %.3f s if every leaf waited in turn on one worker, "
              ">= %.3f s if reads blocked the %u workers\n",
              static_cast<double>(c.items) * latency_s,
              static_cast<double>(c.items) * latency_s / workers, workers);
  std::printf("serial:     %.3f s  (the map alone, one thread, no latency)\n", t_serial);

  if (result != expected || ideal != expected) {
    std::fprintf(stderr, "map_reduce: WRONG result (expected %llu)\n",
                 static_cast<unsigned long long>(expected));
    return 1;
  }
  std::printf("OK\n");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "map_reduce: error: %s\n", e.what());
  return 1;
}
