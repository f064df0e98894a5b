// Shared helpers for the weft::io tests (tests/io).
//
// Every test is parameterised over backend {epoll, io_uring, blocking} x
// policy {proactive, parsimonious} x workers {1, 2}, plus epoll_threads
// (proactive, 1 and 2 workers); and, for the core operations, io_try_first =
// false on the asynchronous backends.
//
// Bounding: the root task of a test runs with a deadline (run()); a runtime
// that does not finish in time is a deadlock, and since its tasks still refer
// to the test's stack the process is aborted with the test's name rather than
// continuing on dangling state. Peers that could otherwise leave a test blocked
// forever are plain threads with their own deadlines (poll timeouts).
//
// The blocking backend runs the system call on the worker, so with one worker
// a task cannot wait for another task's I/O: tests that need a concurrent
// peer use spawn_peer(), which makes the peer a task when tasks can serve each
// other and a plain std::thread (doing plain system calls) otherwise.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "test_util.hpp"  // weft_test::sanitizer_build, tsan_build
#include "weft/io.hpp"
#include "weft/weft.hpp"

namespace weft_io_test {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

// One definition of the build flags for every test directory.
using weft_test::sanitizer_build;
using weft_test::tsan_build;

// `normal` in ordinary builds, `sanitized` under ASan/TSan (5-20x slower).
constexpr long long scaled(long long normal, long long sanitized) {
  return sanitizer_build ? sanitized : normal;
}

// Upper slack on timing checks (2 noisy cores; sanitizers slower still).
inline std::chrono::milliseconds timing_slack() {
  return sanitizer_build ? 5000ms : 1500ms;
}

// ---------------------------------------------------------------- fds

class unique_fd {
 public:
  unique_fd() noexcept = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  ~unique_fd() { reset(); }
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct fd_pair {
  unique_fd a;  // pipe: read end; socketpair: one end
  unique_fd b;  // pipe: write end; socketpair: the other end
};

fd_pair make_pipe(int flags = O_CLOEXEC);
fd_pair make_socketpair(int type = SOCK_STREAM);
// Shrinks SO_SNDBUF and SO_RCVBUF (the kernel doubles and clamps the value).
void set_socket_buffers(int fd, int bytes);
// A TCP socket listening on 127.0.0.1 with an ephemeral port.
unique_fd make_listener(sockaddr_in* addr_out, int backlog = 256);
// A fresh (blocking) TCP socket.
unique_fd tcp_socket();
sockaddr_in local_address(int fd);
sockaddr_in loopback(std::uint16_t port_net_order);
// A port on 127.0.0.1 nobody listens on (bound, then closed).
std::uint16_t closed_port();
// Connects a TCP pair over loopback with plain system calls:
// {client, accepted server side}.
fd_pair tcp_pair();
// Makes the next send/recv on the peer fail: closes `fd` with SO_LINGER 0 so
// that an RST is sent.
void reset_close(unique_fd& fd);

bool is_nonblocking(int fd);
bool is_cloexec(int fd);
using weft_test::open_fd_count;  // entries of /proc/self/fd (tests/test_util.cpp)
// A descriptor number that is certainly not open (checked with fcntl).
int unused_fd_number();
// Bytes queued for reading (FIONREAD).
int bytes_available(int fd);

// ---------------------------------------------------------------- plain I/O
// For plain threads; tolerate O_NONBLOCK (weft switches descriptors to it)
// by polling, and give up (throw) after `limit`.

void plain_write_all(int fd, const void* buf, std::size_t len,
                     std::chrono::milliseconds limit = 30s);
std::size_t plain_read_some(int fd, void* buf, std::size_t len,
                            std::chrono::milliseconds limit = 30s);
std::size_t plain_read_exact(int fd, void* buf, std::size_t len,
                             std::chrono::milliseconds limit = 30s);

// True on a weft worker (inside a task).
inline bool on_worker() noexcept { return weft::this_task::worker_id() >= 0; }

// Peer I/O: weft::io inside a task, plain polling calls on a plain thread.
void peer_write_all(int fd, const void* buf, std::size_t len);
std::size_t peer_read_exact(int fd, void* buf, std::size_t len);
void peer_sleep(std::chrono::milliseconds d);

// Deterministic test data.
std::vector<unsigned char> pattern(std::size_t n, std::uint64_t seed);

// Runs `action` on a helper thread after `delay` unless disarmed first
// (destructor). Turns "the operation never completes" into a test failure
// instead of a hang.
class rescuer {
 public:
  rescuer(std::chrono::milliseconds delay, std::function<void()> action);
  ~rescuer();
  rescuer(const rescuer&) = delete;
  rescuer& operator=(const rescuer&) = delete;
  void disarm();
  bool fired() const noexcept { return fired_.load(); }

 private:
  std::promise<void> stop_;
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

// Temporarily sets the disposition of SIGPIPE to SIG_IGN.
class scoped_ignore_sigpipe {
 public:
  scoped_ignore_sigpipe();
  ~scoped_ignore_sigpipe();

 private:
  void (*old_)(int);
};

// The kernel has io_uring and this build of weft can use it (a runtime with
// io_backend::io_uring runs an operation). Cached.
bool io_uring_supported();

// ---------------------------------------------------------------- params

struct io_param {
  weft::io_backend backend;
  weft::steal_policy policy;
  unsigned workers;
  bool try_first = true;
};

void PrintTo(const io_param& p, std::ostream* os);

std::vector<io_param> all_params();          // 3 x 2 x 2, try_first = true
std::vector<io_param> no_try_first_params(); // epoll/io_uring x 2 x 2
std::string param_name(const ::testing::TestParamInfo<io_param>& info);
const char* backend_string(weft::io_backend b);

#define WEFT_IO_INSTANTIATE(fixture)                                               \
  INSTANTIATE_TEST_SUITE_P(Io, fixture, ::testing::ValuesIn(::weft_io_test::all_params()), \
                           ::weft_io_test::param_name)
#define WEFT_IO_INSTANTIATE_NO_TRY_FIRST(fixture)                                  \
  INSTANTIATE_TEST_SUITE_P(NoTryFirst, fixture,                                   \
                           ::testing::ValuesIn(::weft_io_test::no_try_first_params()), \
                           ::weft_io_test::param_name)

// A concurrent peer: a weft task (if tasks can serve each other on this
// configuration) or a plain thread.
class peer {
 public:
  peer() = default;
  peer(peer&&) = default;
  peer& operator=(peer&&) = default;
  ~peer();
  // Waits for the peer (suspends the task if the peer is a task) and
  // rethrows its exception.
  void join();
  bool is_task() const noexcept { return task_.valid(); }

 private:
  friend class IoTest;
  weft::future<void> task_;
  std::thread thread_;
  std::exception_ptr thread_error_;
  std::shared_ptr<std::exception_ptr> error_slot_;
};

class IoTest : public ::testing::TestWithParam<io_param> {
 protected:
  void SetUp() override;
  void TearDown() override;

  const io_param& param() const { return GetParam(); }
  unsigned workers() const { return GetParam().workers; }
  bool blocking() const { return GetParam().backend == weft::io_backend::blocking; }
  // Whether a task may wait for I/O that another task performs (false only
  // for the blocking backend with one worker).
  bool tasks_serve_each_other() const { return !blocking() || workers() >= 2; }

  weft::options options() const;
  weft::runtime& rt();
  // Destroys the runtime (if any) now.
  void destroy_runtime() { rt_.reset(); }

  // Runs f as the root task; aborts the process (after recording a failure)
  // if it does not finish within `limit`.
  void run(std::function<void()> f, std::chrono::seconds limit = default_limit());
  static std::chrono::seconds default_limit() {
    return sanitizer_build ? std::chrono::seconds(200) : std::chrono::seconds(60);
  }

  // Must be called inside a task.
  peer spawn_peer(std::function<void()> f) { return spawn_peer(f, tasks_serve_each_other()); }
  peer spawn_peer(std::function<void()> f, bool as_task);

  std::unique_ptr<weft::runtime> rt_;
  std::size_t stack_size_ = 0;  // options().stack_size
  int fds_before_ = -1;
  bool check_fds_ = true;
};

// Expects `ec` to equal the errc value, printing the message.
#define EXPECT_ERRC(ec, errc_value)                                              \
  EXPECT_TRUE((ec) == std::make_error_condition(errc_value))                     \
      << "got " << (ec).category().name() << ":" << (ec).value() << " ("       \
      << (ec).message() << "), expected " << std::make_error_code(errc_value).message()

#define ASSERT_ERRC(ec, errc_value)                                              \
  ASSERT_TRUE((ec) == std::make_error_condition(errc_value))                     \
      << "got " << (ec).category().name() << ":" << (ec).value() << " ("       \
      << (ec).message() << "), expected " << std::make_error_code(errc_value).message()

// Expects `expr` to throw std::system_error whose code equals errc_value.
#define EXPECT_THROWS_ERRC(expr, errc_value)                                     \
  do {                                                                           \
    bool weft_io_thrown_ = false;                                                \
    try {                                                                        \
      (void)(expr);                                                              \
    } catch (const std::system_error& e) {                                       \
      weft_io_thrown_ = true;                                                    \
      EXPECT_ERRC(e.code(), errc_value);                                         \
    }                                                                            \
    EXPECT_TRUE(weft_io_thrown_) << #expr " did not throw std::system_error";     \
  } while (0)

}  // namespace weft_io_test
