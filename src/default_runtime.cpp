// weft — the process-wide default runtime (weft/async.hpp): what weft::async
// uses when it is called outside any task, as std::async is from main().
//
// Lifetime: created on first use, never destroyed at exit (intentionally
// leaked; reachable from `the_default`, so leak checkers do not report it).
// Why not a static object destroyed at exit:
//  * ~runtime waits for every outstanding task. A task blocked for ever at
//    exit (waiting on a promise a global still holds, say) would hang exit,
//    and exit() called from inside a task would have the worker join itself.
//  * Static destructors run in reverse order of construction: objects built
//    before the first weft::async are destroyed after the runtime, and their
//    destructors may still call weft::async.
// Leaked, its workers sit parked in the kernel while exit() runs the static
// destructors; they touch only the runtime's own heap objects and
// trivially-destructible statics, so the order of static destruction cannot
// hurt them, and the process ends with them as it ends with detached threads.
// A task still running at exit is abandoned like a detached std::thread
// (docs/migrating.md: get() your futures before main returns, as std::async's
// blocking future destructor did for you). A program that wants the runtime
// joined calls weft::shutdown_default_runtime() itself (tests do).
#include <atomic>
#include <stdexcept>

#include "weft/async.hpp"
#include "weft/detail/mutex.hpp"
#include "weft/runtime.hpp"

namespace weft {
namespace {

// Serialises creation and shutdown. std::mutex has a constexpr constructor
// and a trivial destructor in libstdc++: usable during static
// initialisation and destruction alike.
detail::mutex default_lock;
// The default runtime, or null. Written under default_lock; read without it
// on the fast path of default_runtime().
std::atomic<runtime*> the_default{nullptr};

}  // namespace

runtime& default_runtime() {
  // acquire: pairs with the release store below, so the runtime's
  // construction is visible to every thread that sees the pointer.
  if (runtime* r = the_default.load(std::memory_order_acquire)) return *r;
  detail::lock_guard g(default_lock);
  // relaxed: under the lock, which orders this with the store below.
  runtime* r = the_default.load(std::memory_order_relaxed);
  if (!r) {
    r = new runtime(options{});  // workers: WEFT_WORKERS, else the cores; may throw
    the_default.store(r, std::memory_order_release);  // see the acquire above
  }
  return *r;
}

bool shutdown_default_runtime() {
  runtime* r = nullptr;
  {
    detail::lock_guard g(default_lock);
    // relaxed: under the lock (creation stores under it too).
    r = the_default.load(std::memory_order_relaxed);
    if (!r) return false;
    if (detail::is_worker_of(r->scheduler()))
      throw std::logic_error("weft::shutdown_default_runtime: called from a task of the default runtime");
    // release: a later default_runtime() that sees null creates a new one;
    // nothing is published through the null itself.
    the_default.store(nullptr, std::memory_order_release);
  }
  delete r;  // waits for its outstanding tasks, joins its threads
  return true;
}

namespace detail {
scheduler* default_scheduler() { return &default_runtime().scheduler(); }
}  // namespace detail

}  // namespace weft
