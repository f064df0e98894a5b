#include "own_threads.hpp"

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace weft::detail {

namespace {
// initial-exec: read on every write(2) error path; no lazy TLS lookup.
thread_local bool tls_own_thread __attribute__((tls_model("initial-exec"))) = false;

sigset_t sigpipe_set() noexcept {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  return s;
}

// Takes a pending SIGPIPE off the calling thread (it must be blocked there).
void discard_pending_sigpipe() noexcept {
  const sigset_t s = sigpipe_set();
  const timespec zero{0, 0};
  int saved = errno;
  while (::sigtimedwait(&s, nullptr, &zero) < 0 && errno == EINTR) {
  }
  errno = saved;
}
}  // namespace

void enter_own_thread() noexcept {
  const sigset_t s = sigpipe_set();
  ::pthread_sigmask(SIG_BLOCK, &s, nullptr);
  tls_own_thread = true;
}

void throw_thread_error(const char* what, const std::system_error& e) {
  throw std::system_error(e.code(), std::string("weft: cannot start ") + what +
                                        " (is a thread limit reached? RLIMIT_NPROC, a "
                                        "pids cgroup or RLIMIT_AS)");
}

sigpipe_guard::sigpipe_guard() noexcept {
  if (tls_own_thread) return;
  foreign_ = true;
  const sigset_t s = sigpipe_set();
  ::pthread_sigmask(SIG_BLOCK, &s, &old_mask_);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
}

sigpipe_guard::~sigpipe_guard() {
  if (epipe_ && !was_pending_) discard_pending_sigpipe();
  if (foreign_) ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace weft::detail
