// weft — WEFT_ASSERT: checks an invariant that the code beside it states.
//
// On in debug builds (no NDEBUG) and whenever WEFT_ASSERTIONS is defined to 1
// (the CMake option WEFT_ASSERTIONS; the sanitizer presets turn it on); off
// in release builds, where the condition is not evaluated. It is never an
// optimisation hint: an assertion that is off tells the compiler nothing.
// A failed assertion prints the condition, the message and where, and aborts.
#pragma once

#if !defined(WEFT_ASSERTIONS)
#if defined(NDEBUG)
#define WEFT_ASSERTIONS 0
#else
#define WEFT_ASSERTIONS 1
#endif
#endif

namespace weft::detail {
[[noreturn]] void assertion_failed(const char* condition, const char* message, const char* file,
                                   int line) noexcept;
}  // namespace weft::detail

#if WEFT_ASSERTIONS
#define WEFT_ASSERT(condition, message)                                                   \
  ((condition) ? static_cast<void>(0)                                                     \
               : ::weft::detail::assertion_failed(#condition, message, __FILE__, __LINE__))
#else
// Not evaluated; sizeof keeps the expression compiled (and its names used).
#define WEFT_ASSERT(condition, message) static_cast<void>(sizeof(static_cast<bool>(condition)))
#endif
