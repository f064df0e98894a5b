// weft — Clang thread-safety annotations (-Wthread-safety). They expand to
// nothing on other compilers. Every lock-protected member in weft says which
// lock protects it with WEFT_GUARDED_BY, and every function that expects a
// lock held says so with WEFT_REQUIRES; the clang CI phase builds with
// -Wthread-safety -Werror, so an access without the lock does not compile.
// See https://clang.llvm.org/docs/ThreadSafetyAnalysis.html.
#pragma once

#if defined(__clang__)
#define WEFT_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WEFT_THREAD_ANNOTATION(x)
#endif

// A type that is a lock ("capability").
#define WEFT_CAPABILITY(name) WEFT_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a lock for its lifetime.
#define WEFT_SCOPED_CAPABILITY WEFT_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with the lock held.
#define WEFT_GUARDED_BY(lock) WEFT_THREAD_ANNOTATION(guarded_by(lock))
// A pointer member whose pointee is read or written only with the lock held.
#define WEFT_PT_GUARDED_BY(lock) WEFT_THREAD_ANNOTATION(pt_guarded_by(lock))
// The caller must hold the lock(s).
#define WEFT_REQUIRES(...) WEFT_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// The caller must not hold the lock(s) (the function takes them).
#define WEFT_EXCLUDES(...) WEFT_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// The function takes / releases the lock(s) (no argument: `this`).
#define WEFT_ACQUIRE(...) WEFT_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define WEFT_RELEASE(...) WEFT_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define WEFT_TRY_ACQUIRE(...) WEFT_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// The function returns a reference to the lock.
#define WEFT_RETURN_CAPABILITY(x) WEFT_THREAD_ANNOTATION(lock_returned(x))
// Tells the analysis that the lock is held here (checked by the caller's
// protocol, not by the analysis).
#define WEFT_ASSERT_CAPABILITY(x) WEFT_THREAD_ANNOTATION(assert_capability(x))
// Opts one function out; every use carries a comment saying why.
#define WEFT_NO_THREAD_SAFETY_ANALYSIS WEFT_THREAD_ANNOTATION(no_thread_safety_analysis)
