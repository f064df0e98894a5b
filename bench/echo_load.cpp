// weft-echo-load — the load generator of weft-bench's `server` section
// (bench/server.cpp). Plain C++ and epoll, no weft runtime: every server
// (weft, Go, Tokio) sees the same client.
//
//   weft-echo-load --port P [--host 127.0.0.1] --connections C --duration S
//                  --warmup S [--threads T] [--server-pid PID] [--idle]
//
// Opens C connections (TCP_NODELAY), in batches of kBatch: each batch is
// connected, then every connection of it makes one checked round trip, which
// proves the server has accepted it before the next batch arrives (a full
// accept queue drops SYNs: a 1 s retransmit stall, not a server cost). Then
// each connection runs a closed loop: send 64 bytes (connection id and
// sequence number, so the echo can be checked), wait for all 64 bytes back,
// compare, record the latency, send the next. T threads each drive C/T
// connections with their own epoll. Latencies go to a log-linear histogram
// (ns, 1/64 relative resolution, fixed size: no allocation per request).
// After `warmup` seconds the window of `duration` seconds is measured:
// requests completed in it, their latency percentiles, and (with
// --server-pid) the server's CPU time over exactly that window, read from
// /proc/PID/stat. With --idle no request is sent after the connection probes:
// the window then measures the server's idle CPU with C open connections.
//
// Output: one line of space-separated key=value. Any short read, closed connection or wrong
// echo is a hard error: a message on stderr, error=... on stdout, status 1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::size_t kMsg = 64;
constexpr int kBatch = 256;  // connections opened before their probe round trip

std::mutex error_mutex;
std::string first_error;  // guarded by error_mutex
// Set on the first error; every thread stops at its next loop iteration.
// relaxed: it only asks the threads to stop; the message itself is published
// by error_mutex.
std::atomic<bool> failed{false};

void fail(const std::string& what) {
  {
    std::lock_guard lk(error_mutex);
    if (first_error.empty()) first_error = what;
  }
  failed.store(true, std::memory_order_relaxed);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// ------------------------------------------------------------- histogram

// HdrHistogram-like: values below 128 ns exactly, above it 64 sub-buckets per
// power of two (error < 1.6%). Covers up to 2^47 ns (39 hours).
class histogram {
 public:
  static constexpr int kSub = 6;  // log2 of the sub-buckets per power of two
  static constexpr int kMaxShift = 41;
  static constexpr std::size_t kSize = (2u << kSub) + kMaxShift * (1u << kSub);

  void record(std::uint64_t ns) {
    ++counts_[index(ns)];
    ++total_;
  }
  void merge(const histogram& o) {
    for (std::size_t i = 0; i < kSize; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
  }
  std::uint64_t total() const { return total_; }
  // The value at quantile q (0..1): the middle of its bucket, in ns.
  double quantile(double q) const {
    if (total_ == 0) return 0;
    auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total_));
    if (rank >= total_) rank = total_ - 1;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kSize; ++i) {
      seen += counts_[i];
      if (seen > rank) return middle(i);
    }
    return middle(kSize - 1);
  }

 private:
  static std::size_t index(std::uint64_t v) {
    if (v < (2u << kSub)) return static_cast<std::size_t>(v);
    int msb = 63 - __builtin_clzll(v);
    int shift = std::min(msb - kSub, kMaxShift);
    std::uint64_t mant = std::min<std::uint64_t>(v >> shift, (2u << kSub) - 1);  // [64,128)
    return (2u << kSub) + static_cast<std::size_t>(shift - 1) * (1u << kSub) +
           static_cast<std::size_t>(mant - (1u << kSub));
  }
  static double middle(std::size_t i) {
    if (i < (2u << kSub)) return static_cast<double>(i);
    std::size_t k = i - (2u << kSub);
    int shift = static_cast<int>(k >> kSub) + 1;
    double lo = static_cast<double>(((1u << kSub) + (k & ((1u << kSub) - 1))) << shift);
    return lo + static_cast<double>(std::uint64_t{1} << shift) / 2;
  }
  std::uint64_t counts_[kSize] = {};
  std::uint64_t total_ = 0;
};

// ------------------------------------------------------------ connections

struct conn {
  int fd = -1;
  std::uint64_t id = 0;
  std::uint64_t seq = 0;
  std::size_t sent = 0;  // bytes of out sent
  std::size_t got = 0;   // bytes of in received
  clock_type::time_point start;
  unsigned char out[kMsg];
  unsigned char in[kMsg];
  bool want_out = false;  // EPOLLOUT registered (a partial send is pending)
};

// The message of (id, seq): both numbers, then a pattern derived from them,
// so that a reply mixed up between connections or requests cannot pass.
void fill(conn& c) {
  std::memcpy(c.out, &c.id, 8);
  std::memcpy(c.out + 8, &c.seq, 8);
  for (std::size_t i = 16; i < kMsg; ++i)
    c.out[i] = static_cast<unsigned char>((c.id * 131 + c.seq * 7 + i) & 0xff);
}

// Sends what is left of c.out; false on error. Registers EPOLLOUT while a
// partial send is pending.
bool pump_send(int ep, conn& c) {
  while (c.sent < kMsg) {
    ssize_t n = ::send(c.fd, c.out + c.sent, kMsg - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    fail(errno_text("send"));
    return false;
  }
  bool want = c.sent < kMsg;
  if (want != c.want_out) {
    epoll_event ev{};
    ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
    ev.data.ptr = &c;
    if (::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev) != 0) {
      fail(errno_text("epoll_ctl"));
      return false;
    }
    c.want_out = want;
  }
  return true;
}

void start_request(int ep, conn& c) {
  ++c.seq;
  fill(c);
  c.sent = 0;
  c.got = 0;
  c.start = clock_type::now();
  pump_send(ep, c);
}

// Reads what is available; returns 1 when the full reply is in and checked,
// 0 when more is needed, -1 on error.
int pump_recv(conn& c) {
  while (c.got < kMsg) {
    ssize_t n = ::recv(c.fd, c.in + c.got, kMsg - c.got, 0);
    if (n > 0) {
      c.got += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n == 0) {
      fail("connection " + std::to_string(c.id) + " closed by the server after " +
           std::to_string(c.got) + " of 64 reply bytes (request " + std::to_string(c.seq) + ")");
    } else {
      fail(errno_text("recv"));
    }
    return -1;
  }
  if (c.sent < kMsg) {
    fail("reply to connection " + std::to_string(c.id) + " before its request was sent");
    return -1;
  }
  if (std::memcmp(c.in, c.out, kMsg) != 0) {
    fail("WRONG ECHO on connection " + std::to_string(c.id) + " request " +
         std::to_string(c.seq));
    return -1;
  }
  return 1;
}

int connect_one(const sockaddr_in& addr) {
  // Bounded retries: a server under accept pressure may refuse briefly.
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      fail(errno_text("socket (raise RLIMIT_NOFILE?)"));
      return -1;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    int e = errno;
    ::close(fd);
    if (e != ECONNREFUSED && e != EAGAIN && e != EINTR && e != EADDRNOTAVAIL) {
      errno = e;
      fail(errno_text("connect"));
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  fail("connect: refused 100 times");
  return -1;
}

// The server's utime + stime in seconds (NaN when unreadable).
double process_cpu_seconds(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto rp = s.rfind(')');  // the command name may contain spaces
  if (rp == std::string::npos) return NAN;
  std::istringstream f(s.substr(rp + 2));
  std::string field;
  // Fields after the name start at 3 (state); utime is 14, stime 15.
  unsigned long long ut = 0, st = 0;
  for (int i = 3; i <= 15 && (f >> field); ++i) {
    if (i == 14) ut = std::stoull(field);
    if (i == 15) st = std::stoull(field);
  }
  return static_cast<double>(ut + st) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long self_hwm_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

struct worker_result {
  histogram hist;
  std::uint64_t requests = 0;  // completed inside the window
};

// Drives `cs` in a closed loop until `end`; counts and records replies that
// complete inside [window_start, end).
void drive(std::vector<conn>& cs, clock_type::time_point window_start, clock_type::time_point end,
           bool idle, worker_result& res) {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    fail(errno_text("epoll_create1"));
    return;
  }
  for (auto& c : cs) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &c;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
      fail(errno_text("epoll_ctl"));
      ::close(ep);
      return;
    }
  }
  if (!idle)
    for (auto& c : cs) start_request(ep, c);
  std::vector<epoll_event> evs(256);
  while (!failed.load(std::memory_order_relaxed)) {
    auto now = clock_type::now();
    if (now >= end) break;
    int timeout_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(end - now).count() + 1);
    int n = ::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), std::min(timeout_ms, 100));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      fail(errno_text("epoll_wait"));
      break;
    }
    for (int i = 0; i < n; ++i) {
      conn& c = *static_cast<conn*>(evs[static_cast<std::size_t>(i)].data.ptr);
      if (idle) {  // nothing was sent: any event is a close or stray data
        fail("idle connection " + std::to_string(c.id) + " became readable (closed?)");
        break;
      }
      if ((evs[static_cast<std::size_t>(i)].events & EPOLLOUT) && !pump_send(ep, c)) break;
      if (!(evs[static_cast<std::size_t>(i)].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
      int r = pump_recv(c);
      if (r < 0) break;
      if (r == 0) continue;
      auto t = clock_type::now();
      if (t >= window_start && t < end) {
        res.hist.record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t - c.start).count()));
        ++res.requests;
      }
      start_request(ep, c);
    }
  }
  ::close(ep);
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = -1;
  long connections = 1, server_pid = -1;
  double duration = 3, warmup = 1;
  int threads = 1;
  bool idle = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weft-echo-load: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--host") host = value();
    else if (a == "--port") port = std::atoi(value().c_str());
    else if (a == "--connections") connections = std::atol(value().c_str());
    else if (a == "--duration") duration = std::atof(value().c_str());
    else if (a == "--warmup") warmup = std::atof(value().c_str());
    else if (a == "--threads") threads = std::atoi(value().c_str());
    else if (a == "--server-pid") server_pid = std::atol(value().c_str());
    else if (a == "--idle") idle = true;
    else {
      std::fprintf(stderr,
                   "usage: weft-echo-load --port P [--host H] --connections C --duration S "
                   "--warmup S [--threads T] [--server-pid PID] [--idle]\n");
      return 2;
    }
  }
  if (port <= 0 || connections < 1 || threads < 1 || duration <= 0 || warmup < 0) {
    std::fprintf(stderr, "weft-echo-load: bad arguments\n");
    return 2;
  }
  threads = static_cast<int>(std::min<long>(threads, connections));

  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  ::getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur != RLIM_INFINITY && static_cast<long>(lim.rlim_cur) < connections + 64) {
    std::printf("error=RLIMIT_NOFILE %llu < needed %ld\n",
                static_cast<unsigned long long>(lim.rlim_cur), connections + 64);
    std::fprintf(stderr, "weft-echo-load: RLIMIT_NOFILE too low\n");
    return 1;
  }

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "weft-echo-load: bad host '%s'\n", host.c_str());
    return 2;
  }

  // Connect in batches, each batch proven accepted by one checked round trip
  // (its request number 0: the closed loop then starts at 1).
  std::vector<conn> cs(static_cast<std::size_t>(connections));
  const auto connect_deadline = clock_type::now() + std::chrono::seconds(60);
  for (long b = 0; b < connections && !failed.load(std::memory_order_relaxed); b += kBatch) {
    long e = std::min(connections, b + kBatch);
    for (long i = b; i < e; ++i) {
      conn& c = cs[static_cast<std::size_t>(i)];
      c.id = static_cast<std::uint64_t>(i);
      c.fd = connect_one(addr);
      if (c.fd < 0) break;
      fill(c);
      c.sent = 0;
      c.got = 0;
      // Blocking socket here: 64 bytes always fit the empty send buffer.
      while (c.sent < kMsg) {
        ssize_t n = ::send(c.fd, c.out + c.sent, kMsg - c.sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          fail(errno_text("send (probe)"));
          break;
        }
        c.sent += static_cast<std::size_t>(n);
      }
    }
    if (failed.load(std::memory_order_relaxed)) break;
    for (long i = b; i < e && !failed.load(std::memory_order_relaxed); ++i) {
      conn& c = cs[static_cast<std::size_t>(i)];
      // A receive timeout bounds the wait on a server that never answers.
      timeval tv{};
      auto left = std::chrono::duration_cast<std::chrono::microseconds>(connect_deadline -
                                                                        clock_type::now());
      if (left.count() <= 0) {
        fail("connecting and probing took over 60 s");
        break;
      }
      tv.tv_sec = static_cast<time_t>(left.count() / 1000000);
      tv.tv_usec = static_cast<suseconds_t>(left.count() % 1000000);
      ::setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      while (c.got < kMsg) {
        ssize_t n = ::recv(c.fd, c.in + c.got, kMsg - c.got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          fail("probe of connection " + std::to_string(i) + ": no reply (timeout)");
          break;
        }
        if (n <= 0) {
          fail(n == 0 ? "probe of connection " + std::to_string(i) + ": closed by the server"
                      : errno_text("recv (probe)"));
          break;
        }
        c.got += static_cast<std::size_t>(n);
      }
      if (!failed.load(std::memory_order_relaxed) && std::memcmp(c.in, c.out, kMsg) != 0)
        fail("WRONG ECHO on the probe of connection " + std::to_string(i));
    }
  }
  // Non-blocking from here: the closed loop multiplexes with epoll.
  for (auto& c : cs) {
    if (c.fd < 0) continue;
    int one = 1;
    ::ioctl(c.fd, FIONBIO, &one);
  }

  worker_result total;
  double server_cpu = NAN, window = NAN, self_cpu = NAN;
  if (!failed.load(std::memory_order_relaxed)) {
    const auto t0 = clock_type::now();
    const auto window_start = t0 + std::chrono::duration_cast<clock_type::duration>(
                                       std::chrono::duration<double>(warmup));
    const auto end = window_start + std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(duration));
    std::vector<std::unique_ptr<worker_result>> results;
    std::vector<std::vector<conn>> parts(static_cast<std::size_t>(threads));
    // conn objects move into per-thread vectors (epoll keeps pointers to them,
    // registered only after the move).
    for (std::size_t i = 0; i < cs.size(); ++i)
      parts[i % static_cast<std::size_t>(threads)].push_back(cs[i]);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      results.push_back(std::make_unique<worker_result>());
      ts.emplace_back([&, t] {
        drive(parts[static_cast<std::size_t>(t)], window_start, end, idle,
              *results[static_cast<std::size_t>(t)]);
      });
    }
    // The server's CPU over the window: sampled by this (otherwise idle)
    // thread at the window's edges.
    auto rusage_self = [] {
      rusage u{};
      ::getrusage(RUSAGE_SELF, &u);
      return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
             1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    };
    std::this_thread::sleep_until(window_start);
    double cpu0 = server_pid > 0 ? process_cpu_seconds(server_pid) : NAN;
    double self0 = rusage_self();
    auto w0 = clock_type::now();
    std::this_thread::sleep_until(end);
    double cpu1 = server_pid > 0 ? process_cpu_seconds(server_pid) : NAN;
    double self1 = rusage_self();
    window = std::chrono::duration<double>(clock_type::now() - w0).count();
    for (auto& th : ts) th.join();
    for (auto& r : results) {
      total.hist.merge(r->hist);
      total.requests += r->requests;
    }
    server_cpu = cpu1 - cpu0;
    self_cpu = self1 - self0;
  }
  for (auto& c : cs)
    if (c.fd >= 0) ::close(c.fd);

  if (failed.load(std::memory_order_relaxed)) {
    std::lock_guard lk(error_mutex);
    std::fprintf(stderr, "weft-echo-load: %s\n", first_error.c_str());
    std::string msg = first_error;
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    std::printf("errors=1\nerror=%s\n", msg.c_str());  // error= takes its whole line
    std::fflush(stdout);
    return 1;
  }
  std::printf(
      "requests=%llu req_per_s=%.1f p50_us=%.2f p99_us=%.2f p999_us=%.2f errors=0 "
      "server_cpu_s=%.4f window_s=%.4f load_cpu_s=%.4f load_vm_hwm_kib=%ld\n",
      static_cast<unsigned long long>(total.requests),
      static_cast<double>(total.requests) / duration, total.hist.quantile(0.50) / 1e3,
      total.hist.quantile(0.99) / 1e3, total.hist.quantile(0.999) / 1e3, server_cpu, window,
      self_cpu, self_hwm_kib());
  return 0;
}
