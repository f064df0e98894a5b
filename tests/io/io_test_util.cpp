#include "io_test_util.hpp"

#include <dirent.h>
#include <linux/io_uring.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>

namespace weft_io_test {

namespace {

[[noreturn]] void die(const char* what) {
  throw std::system_error(errno, std::system_category(), what);
}

}  // namespace

// ---------------------------------------------------------------- fds

fd_pair make_pipe(int flags) {
  int p[2];
  if (::pipe2(p, flags) != 0) die("pipe2");
  return {unique_fd(p[0]), unique_fd(p[1])};
}

fd_pair make_socketpair(int type) {
  int s[2];
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, s) != 0) die("socketpair");
  return {unique_fd(s[0]), unique_fd(s[1])};
}

void set_socket_buffers(int fd, int bytes) {
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes) != 0) die("SO_SNDBUF");
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes) != 0) die("SO_RCVBUF");
}

sockaddr_in loopback(std::uint16_t port_net_order) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = port_net_order;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

unique_fd tcp_socket() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  return unique_fd(fd);
}

sockaddr_in local_address(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) die("getsockname");
  return a;
}

unique_fd make_listener(sockaddr_in* addr_out, int backlog) {
  unique_fd s = tcp_socket();
  int one = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(0);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("bind");
  if (::listen(s.get(), backlog) != 0) die("listen");
  if (addr_out) *addr_out = local_address(s.get());
  return s;
}

std::uint16_t closed_port() {
  unique_fd s = tcp_socket();
  sockaddr_in a = loopback(0);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("bind");
  return local_address(s.get()).sin_port;  // closed (never listened) on return
}

fd_pair tcp_pair() {
  sockaddr_in addr{};
  unique_fd l = make_listener(&addr, 4);
  unique_fd c = tcp_socket();
  if (::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("connect");
  int s = ::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC);
  if (s < 0) die("accept4");
  return {std::move(c), unique_fd(s)};
}

void reset_close(unique_fd& fd) {
  linger lg{1, 0};
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg) != 0) die("SO_LINGER");
  fd.reset();
}

bool is_nonblocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  return fl >= 0 && (fl & O_NONBLOCK) != 0;
}

bool is_cloexec(int fd) {
  int fl = ::fcntl(fd, F_GETFD);
  return fl >= 0 && (fl & FD_CLOEXEC) != 0;
}

int unused_fd_number() {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  int start = rl.rlim_cur > 4096 ? static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 1 << 20)) - 1
                                  : 4095;
  for (int fd = start; fd > 2; --fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) return fd;
  }
  throw std::runtime_error("no unused descriptor number");
}

int bytes_available(int fd) {
  int n = 0;
  if (::ioctl(fd, FIONREAD, &n) != 0) die("FIONREAD");
  return n;
}

// ---------------------------------------------------------------- plain I/O

namespace {

void poll_for(int fd, short events, clk::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clk::now());
    if (left.count() <= 0) throw std::runtime_error("plain I/O: timed out waiting for the peer");
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (r > 0) return;
    if (r < 0 && errno != EINTR) die("poll");
  }
}

}  // namespace

void plain_write_all(int fd, const void* buf, std::size_t len, std::chrono::milliseconds limit) {
  auto deadline = clk::now() + limit;
  const auto* p = static_cast<const unsigned char*>(buf);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, p, len);
    if (n > 0) {
      p += n;
      len -= static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      poll_for(fd, POLLOUT, deadline);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      die("plain write");
    }
  }
}

std::size_t plain_read_some(int fd, void* buf, std::size_t len, std::chrono::milliseconds limit) {
  auto deadline = clk::now() + limit;
  for (;;) {
    ssize_t n = ::read(fd, buf, len);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      poll_for(fd, POLLIN, deadline);
    } else if (errno != EINTR) {
      die("plain read");
    }
  }
}

std::size_t plain_read_exact(int fd, void* buf, std::size_t len, std::chrono::milliseconds limit) {
  auto deadline = clk::now() + limit;
  std::size_t got = 0;
  auto* p = static_cast<unsigned char*>(buf);
  while (got < len) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clk::now());
    if (left.count() <= 0) throw std::runtime_error("plain_read_exact: timed out");
    std::size_t n = plain_read_some(fd, p + got, len - got, left);
    if (n == 0) break;
    got += n;
  }
  return got;
}

void peer_write_all(int fd, const void* buf, std::size_t len) {
  if (on_worker()) {
    weft::io::write_all(fd, buf, len);
  } else {
    plain_write_all(fd, buf, len);
  }
}

std::size_t peer_read_exact(int fd, void* buf, std::size_t len) {
  return on_worker() ? weft::io::read_exact(fd, buf, len) : plain_read_exact(fd, buf, len);
}

void peer_sleep(std::chrono::milliseconds d) {
  if (on_worker()) {
    weft::this_task::sleep_for(d);
  } else {
    std::this_thread::sleep_for(d);
  }
}

std::vector<unsigned char> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<unsigned char> v(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

rescuer::rescuer(std::chrono::milliseconds delay, std::function<void()> action) {
  auto stopped = stop_.get_future();
  thread_ = std::thread([this, delay, stopped = std::move(stopped), action = std::move(action)] {
    if (stopped.wait_for(delay) == std::future_status::timeout) {
      fired_ = true;
      try {
        action();
      } catch (...) {
      }
    }
  });
}

void rescuer::disarm() {
  if (thread_.joinable()) {
    stop_.set_value();
    thread_.join();
  }
}

rescuer::~rescuer() { disarm(); }

scoped_ignore_sigpipe::scoped_ignore_sigpipe() : old_(std::signal(SIGPIPE, SIG_IGN)) {}
scoped_ignore_sigpipe::~scoped_ignore_sigpipe() { std::signal(SIGPIPE, old_); }

bool io_uring_supported() {
  static const bool supported = [] {
    io_uring_params p{};
    long fd = ::syscall(__NR_io_uring_setup, 4, &p);
    if (fd < 0) return false;
    ::close(static_cast<int>(fd));
    try {
      weft::options o;
      o.workers = 1;
      o.io = weft::io_backend::io_uring;
      weft::runtime rt(o);
      return rt.run([] { return std::string(weft::io::backend_name()) == "io_uring"; });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft io tests: io_uring backend unusable: %s\n", e.what());
      return false;
    }
  }();
  return supported;
}

// ---------------------------------------------------------------- params

const char* backend_string(weft::io_backend b) {
  switch (b) {
    case weft::io_backend::automatic: return "automatic";
    case weft::io_backend::epoll: return "epoll";
    case weft::io_backend::io_uring: return "io_uring";
    case weft::io_backend::blocking: return "blocking";
    case weft::io_backend::epoll_threads: return "epoll_threads";
  }
  return "?";
}

void PrintTo(const io_param& p, std::ostream* os) {
  *os << backend_string(p.backend)
      << (p.policy == weft::steal_policy::proactive ? "/proactive" : "/parsimonious") << "/w"
      << p.workers << (p.try_first ? "" : "/no-try-first");
}

std::vector<io_param> all_params() {
  std::vector<io_param> v;
  for (auto b : {weft::io_backend::epoll, weft::io_backend::io_uring, weft::io_backend::blocking})
    for (auto p : {weft::steal_policy::proactive, weft::steal_policy::parsimonious})
      for (unsigned w : {1u, 2u}) v.push_back({b, p, w, true});
  // Cilk-L's I/O threads, the non-default epoll design: proactive only (the
  // policies do not touch the backend; the CI time is bounded).
  for (unsigned w : {1u, 2u})
    v.push_back({weft::io_backend::epoll_threads, weft::steal_policy::proactive, w, true});
  return v;
}

std::vector<io_param> no_try_first_params() {
  std::vector<io_param> v;
  for (auto b : {weft::io_backend::epoll, weft::io_backend::io_uring})
    for (auto p : {weft::steal_policy::proactive, weft::steal_policy::parsimonious})
      for (unsigned w : {1u, 2u}) v.push_back({b, p, w, false});
  v.push_back({weft::io_backend::epoll_threads, weft::steal_policy::proactive, 2, false});
  return v;
}

std::string param_name(const ::testing::TestParamInfo<io_param>& info) {
  const io_param& p = info.param;
  std::string s = backend_string(p.backend);
  s += p.policy == weft::steal_policy::proactive ? "_proactive" : "_parsimonious";
  s += "_w" + std::to_string(p.workers);
  if (!p.try_first) s += "_notry";
  return s;
}

// ---------------------------------------------------------------- peer

peer::~peer() {
  // A peer must be joined; if a test bailed out early (ASSERT), join here so
  // no thread outlives the objects it uses.
  if (thread_.joinable()) thread_.join();
  if (task_.valid()) {
    try {
      task_.get();
    } catch (...) {
    }
  }
}

void peer::join() {
  if (task_.valid()) {
    task_.get();
    return;
  }
  if (thread_.joinable()) thread_.join();
  if (error_slot_ && *error_slot_) std::rethrow_exception(std::exchange(*error_slot_, nullptr));
}

// ---------------------------------------------------------------- fixture

void IoTest::SetUp() {
  if (GetParam().backend == weft::io_backend::io_uring && !io_uring_supported())
    GTEST_SKIP() << "io_uring is not available on this kernel (io_uring_setup failed)";
  fds_before_ = open_fd_count();
}

void IoTest::TearDown() {
  rt_.reset();
  if (check_fds_ && fds_before_ >= 0 && !IsSkipped()) {
    EXPECT_EQ(open_fd_count(), fds_before_)
        << "descriptors leaked (or closed) by the test's runtime";
  }
}

weft::options IoTest::options() const {
  weft::options o;
  o.workers = GetParam().workers;
  o.policy = GetParam().policy;
  o.io = GetParam().backend;
  o.io_try_first = GetParam().try_first;
  o.stack_size = stack_size_;
  return o;
}

weft::runtime& IoTest::rt() {
  if (!rt_) rt_ = std::make_unique<weft::runtime>(options());
  return *rt_;
}

void IoTest::run(std::function<void()> f, std::chrono::seconds limit) {
  auto fut = rt().async(std::move(f));
  if (fut.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "the root task did not finish within " << limit.count()
                  << " s: deadlock or lost wake-up. Its tasks still use this test's "
                     "stack, so the process is aborted.";
    std::fflush(stdout);
    std::fprintf(stderr, "*** weft io test: %s.%s hung; aborting ***\n",
                 ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name(),
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::fflush(stderr);
    std::abort();
  }
  fut.get();
}

peer IoTest::spawn_peer(std::function<void()> f, bool as_task) {
  peer p;
  if (as_task) {
    if (!on_worker()) throw std::logic_error("spawn_peer(as_task) outside a task");
    p.task_ = weft::async(std::move(f));
  } else {
    p.error_slot_ = std::make_shared<std::exception_ptr>();
    p.thread_ = std::thread([f = std::move(f), slot = p.error_slot_] {
      try {
        f();
      } catch (...) {
        *slot = std::current_exception();
      }
    });
  }
  return p;
}

}  // namespace weft_io_test
