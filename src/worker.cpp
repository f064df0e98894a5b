// weft — the worker running the calling thread (a thread-local pointer, read
// through a function that is never inlined: a task may change threads at any
// suspension point).
#include "worker.hpp"

namespace weft::detail {

namespace {
thread_local worker* tls_worker = nullptr;
}  // namespace

// Never inlined, and the asm barrier keeps the compiler from reusing a thread
// pointer computed before a fiber switch: after a switch the calling code may
// run on another thread.
__attribute__((noinline)) worker* this_worker() noexcept {
  asm volatile("" ::: "memory");
  return tls_worker;
}
__attribute__((noinline)) worker_view* current_worker() noexcept {
  asm volatile("" ::: "memory");
  return tls_worker;
}
void set_this_worker(worker* w) noexcept { tls_worker = w; }

}  // namespace weft::detail
