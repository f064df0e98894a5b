#include "fiber.hpp"

#include <cstddef>

#include "weft/detail/arch.hpp"

#if WEFT_HAS_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if WEFT_HAS_TSAN
#include <sanitizer/tsan_interface.h>
#endif

// The Itanium C++ ABI's per-thread exception globals (libstdc++/libc++abi).
namespace __cxxabiv1 {
struct __cxa_eh_globals;
extern "C" __cxa_eh_globals* __cxa_get_globals() noexcept;
}  // namespace __cxxabiv1

namespace weft::detail {

namespace {
struct eh_globals {
  void* caught_exceptions;
  unsigned int uncaught_exceptions;
};
eh_globals* thread_eh() noexcept {
  return reinterpret_cast<eh_globals*>(__cxxabiv1::__cxa_get_globals());
}
}  // namespace

thread_local const stack_region* tls_running_stack = nullptr;

fiber* fiber::from_resume_item(work_item* item) noexcept {
  return reinterpret_cast<fiber*>(reinterpret_cast<char*>(item) - offsetof(fiber, resume_item));
}

void fiber_reset(fiber* f, void (*entry)(ctx::transfer_t)) noexcept {
  f->context = ctx::make_fcontext(reinterpret_cast<void*>(f->stack.hi), f->stack.usable(), entry);
  f->deque = nullptr;
  f->eh_caught = nullptr;
  f->eh_uncaught = 0;
#if WEFT_HAS_ASAN
  // A recycled fiber restarts over the frames it abandoned; their redzones
  // are still poisoned in ASan's shadow memory.
  ASAN_UNPOISON_MEMORY_REGION(reinterpret_cast<void*>(f->stack.lo), f->stack.usable());
#endif
#if WEFT_HAS_TSAN
  // A recycled fiber restarts from its entry; TSan would otherwise keep the
  // abandoned frames on its shadow stack, which then grows with every reuse
  // until TSan's stack depot check fails (found by the benchmarks).
  if (f->tsan_fiber) {
    __tsan_destroy_fiber(f->tsan_fiber);
    f->tsan_fiber = __tsan_create_fiber(0);
  }
#endif
}

ctx::transfer_t fiber_switch(fiber* from, fiber* to, bool from_dies) noexcept {
  // Park the outgoing fiber's exception state; the incoming one installs its
  // own in fiber_switch_finished (on this thread).
  eh_globals* g = thread_eh();
  from->eh_caught = g->caught_exceptions;
  from->eh_uncaught = g->uncaught_exceptions;
#if WEFT_HAS_ASAN
  const void* bottom = to->is_native() ? to->asan_bottom : reinterpret_cast<const void*>(to->stack.lo);
  std::size_t size = to->is_native() ? to->asan_size : to->stack.usable();
  __sanitizer_start_switch_fiber(from_dies ? nullptr : &from->asan_fake_stack, bottom, size);
#else
  (void)from_dies;
#endif
#if WEFT_HAS_TSAN
  __tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
  tls_running_stack = to->is_native() ? nullptr : &to->stack;
  return ctx::jump_fcontext(to->context, from);
}

void fiber_switch_finished(fiber* self, fiber* from) noexcept {
  eh_globals* g = thread_eh();
  g->caught_exceptions = self->eh_caught;
  g->uncaught_exceptions = self->eh_uncaught;
#if WEFT_HAS_ASAN
  const void* old_bottom = nullptr;
  std::size_t old_size = 0;
  __sanitizer_finish_switch_fiber(self->asan_fake_stack, &old_bottom, &old_size);
  if (from && from->is_native() && !from->asan_bottom) {
    from->asan_bottom = old_bottom;
    from->asan_size = old_size;
  }
#else
  (void)self;
  (void)from;
#endif
}

void fiber_sanitizer_create(fiber* f) noexcept {
#if WEFT_HAS_TSAN
  f->tsan_fiber = __tsan_create_fiber(0);
#else
  (void)f;
#endif
}

void fiber_sanitizer_destroy(fiber* f) noexcept {
#if WEFT_HAS_TSAN
  if (f->tsan_fiber && !f->is_native()) __tsan_destroy_fiber(f->tsan_fiber);
#else
  (void)f;
#endif
}

void fiber_sanitizer_adopt_native(fiber* f) noexcept {
#if WEFT_HAS_TSAN
  f->tsan_fiber = __tsan_get_current_fiber();
#else
  (void)f;
#endif
}

}  // namespace weft::detail
