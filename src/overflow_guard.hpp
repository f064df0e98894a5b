// weft — reports a fiber stack overflow as such. Each worker thread gets an
// alternate signal stack; a process-wide SIGSEGV/SIGBUS handler checks whether
// the faulting address lies in the guard region of the stack the thread is
// running on. If so it prints a fatal message naming the overflow and aborts;
// otherwise it restores the previous handler and lets the fault re-occur.
#pragma once

#include <cstddef>

namespace weft::detail {

// Installs the handler once per process (idempotent, thread-safe).
void install_overflow_handler();

// Per worker thread: an alternate signal stack, freed by the destructor.
class alternate_signal_stack {
 public:
  alternate_signal_stack();
  ~alternate_signal_stack();
  alternate_signal_stack(const alternate_signal_stack&) = delete;
  alternate_signal_stack& operator=(const alternate_signal_stack&) = delete;

 private:
  void* memory_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace weft::detail
