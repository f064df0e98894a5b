#include "stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "live_objects.hpp"
#include "weft/detail/arch.hpp"

#if WEFT_HAS_ASAN
#include <sanitizer/asan_interface.h>
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102  // Linux 6.13 uapi value
#endif

namespace weft::detail {

namespace {
std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}
std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// Installs a guard over [p, p+n). Returns false if the kernel refuses both ways.
bool install_guard(void* p, std::size_t n) {
  static std::atomic<bool> madvise_guard_works{true};
  // relaxed: a cached capability probe; a stale true only costs one failed call.
  if (madvise_guard_works.load(std::memory_order_relaxed)) {
    if (::madvise(p, n, MADV_GUARD_INSTALL) == 0) return true;
    madvise_guard_works.store(false, std::memory_order_relaxed);
  }
  return ::mprotect(p, n, PROT_NONE) == 0;
}
}  // namespace

stack_pool::stack_pool(std::size_t usable_bytes)
    : usable_(round_up(usable_bytes, page_size())), stride_(guard_bytes + usable_) {}

stack_pool::~stack_pool() {
  for (auto& [p, n] : slabs_) {
#if WEFT_HAS_ASAN
    // Fibers that finished without unwinding (recycled, or abandoned at
    // shutdown) leave their frames' redzones poisoned in ASan's shadow, and
    // munmap does not clear it. The kernel may hand this address range to the
    // next mapping — a new thread's stack, whose TLS then reads as a
    // "stack-buffer-underflow" (seen in CI: RandomDag, which creates a
    // runtime every 50 DAGs, failed in fiber_switch reading the exception
    // globals). Unpoison before giving the memory back.
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
    ::munmap(p, n);
  }
}

std::size_t stack_pool::stacks_in_use() const noexcept {
  lock_guard lock(mutex_);
  return in_use_;
}

void stack_pool::add_slab() {
  // Aim for ~64 MiB of address space per slab (at least one stack): few
  // mappings, and untouched pages cost no memory.
  std::size_t count = std::max<std::size_t>(1, (std::size_t{64} << 20) / stride_);
  std::size_t bytes = count * stride_;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(),
                            "weft: cannot map fiber stacks");
  }
  slabs_.emplace_back(p, bytes);
  auto base = reinterpret_cast<std::uintptr_t>(p);
  for (std::size_t i = 0; i < count; ++i) {
    stack_region s;
    s.guard_lo = base + i * stride_;
    s.lo = s.guard_lo + guard_bytes;
    s.hi = s.lo + usable_;
    if (!install_guard(reinterpret_cast<void*>(s.guard_lo), guard_bytes)) {
      throw std::system_error(errno, std::generic_category(),
                              "weft: cannot install a stack guard page");
    }
    free_.push_back(s);
  }
}

stack_region stack_pool::acquire() {
  lock_guard lock(mutex_);
  if (free_.empty()) add_slab();
  stack_region s = free_.back();
  free_.pop_back();
  ++in_use_;
  live_object_counts::add(live_objects().stacks, 1);
  return s;
}

void stack_pool::release(const stack_region& s) noexcept {
  lock_guard lock(mutex_);
  --in_use_;
  live_object_counts::add(live_objects().stacks, -1);
  free_.push_back(s);
}

}  // namespace weft::detail
