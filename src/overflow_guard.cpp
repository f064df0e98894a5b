#include "overflow_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "fiber.hpp"

namespace weft::detail {

namespace {
struct sigaction previous_segv;
struct sigaction previous_bus;

// Async-signal-safe formatting helpers.
void write_str(const char* s) { (void)!::write(2, s, std::strlen(s)); }
void write_num(std::uintptr_t v, int base) {
  char buf[32];
  int i = 31;
  buf[i] = '\0';
  if (v == 0) buf[--i] = '0';
  while (v && i > 0) {
    int d = static_cast<int>(v % static_cast<unsigned>(base));
    buf[--i] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
    v /= static_cast<unsigned>(base);
  }
  write_str(buf + i);
}

void on_fault(int sig, siginfo_t* info, void* uctx) {
  auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  const stack_region* s = tls_running_stack;
  if (s && addr >= s->guard_lo && addr < s->lo) {
    write_str("weft: fatal: stack overflow in a task: its fiber stack of ");
    write_num(s->usable(), 10);
    write_str(" bytes is exhausted (guard page hit at 0x");
    write_num(addr, 16);
    write_str("). Raise weft::options::stack_size or reduce the recursion depth.\n");
    ::signal(SIGABRT, SIG_DFL);
    std::abort();
  }
  // Not ours: hand the fault to whoever was there before.
  struct sigaction& prev = sig == SIGSEGV ? previous_segv : previous_bus;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) {
      prev.sa_sigaction(sig, info, uctx);
      return;
    }
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  ::sigaction(sig, &prev, nullptr);  // default action when the fault repeats
}
}  // namespace

void install_overflow_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &previous_segv);
    ::sigaction(SIGBUS, &sa, &previous_bus);
  });
}

alternate_signal_stack::alternate_signal_stack() {
  size_ = std::max<std::size_t>(64 * 1024, static_cast<std::size_t>(SIGSTKSZ));
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;  // no alternate stack: overflow reports degrade to a crash
  stack_t ss;
  std::memset(&ss, 0, sizeof ss);
  ss.ss_sp = p;
  ss.ss_size = size_;
  if (::sigaltstack(&ss, nullptr) != 0) {
    ::munmap(p, size_);
    return;
  }
  memory_ = p;
}

alternate_signal_stack::~alternate_signal_stack() {
  if (!memory_) return;
  stack_t ss;
  std::memset(&ss, 0, sizeof ss);
  ss.ss_flags = SS_DISABLE;
  ::sigaltstack(&ss, nullptr);
  ::munmap(memory_, size_);
}

}  // namespace weft::detail
