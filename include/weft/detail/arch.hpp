// weft — what the core needs to know about the machine and the build: the
// cache-line size, a spin-wait hint, the full fence, and the one spelling of
// the sanitizer detection macros (WEFT_HAS_ASAN, WEFT_HAS_TSAN: 1 or 0).
#pragma once

#include <atomic>
#include <cstddef>

// GCC defines __SANITIZE_ADDRESS__/__SANITIZE_THREAD__; Clang answers
// __has_feature. Every sanitizer-dependent line in weft tests these two.
#if defined(__SANITIZE_ADDRESS__)
#define WEFT_HAS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEFT_HAS_ASAN 1
#endif
#endif
#ifndef WEFT_HAS_ASAN
#define WEFT_HAS_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define WEFT_HAS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_HAS_TSAN 1
#endif
#endif
#ifndef WEFT_HAS_TSAN
#define WEFT_HAS_TSAN 0
#endif

namespace weft::detail {

// The unit of false sharing on the machines weft runs on (x86-64, AArch64
// cores other than Apple's, whose 128-byte lines only halve the separation).
// A constant, not std::hardware_destructive_interference_size, which GCC
// warns about (-Winterference-size) because it may change between compilers.
inline constexpr std::size_t cache_line_size = 64;

// A hint to the core that the caller is spinning (lets the sibling
// hyperthread run, saves power). Nothing on other architectures.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// A full (seq_cst) fence. ThreadSanitizer does not model fences, so TSan
// builds use a seq_cst read-modify-write instead, which is a full barrier on
// the hardware weft supports (x86-64, AArch64) and keeps TSan's -Wtsan quiet.
inline void full_fence() noexcept {
#if WEFT_HAS_TSAN
  static std::atomic<int> fence_word{0};
  fence_word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace weft::detail
