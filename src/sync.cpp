// weft — the compiled part of the task-aware locks (weft/mutex.hpp and
// friends): who the caller is (a task identity that survives a move to
// another worker thread) and the report of a priority inversion on a lock.
#include <atomic>
#include <cstdio>

#include "worker.hpp"
#include "weft/detail/sync_core.hpp"

namespace weft {

namespace {
// The installed handler (nullptr: the default one). acq_rel exchange on
// install, acquire load on report: the handler's code/data is visible to a
// reporter that sees the pointer.
std::atomic<lock_inversion_handler> g_handler{nullptr};
// Inversions seen since the process started (relaxed: a statistic).
std::atomic<std::uint64_t> g_inversions{0};
// The default handler prints only once (relaxed: one line of diagnostics).
std::atomic<bool> g_printed{false};

void default_handler(const lock_inversion& e) {
  if (g_printed.exchange(true, std::memory_order_relaxed)) return;
  std::fprintf(stderr,
               "weft: priority inversion on a lock: a task of priority %u waits for %s %p "
               "held by a task of priority %u (reported once; see docs/priorities.md)\n",
               e.waiter_level, e.what, e.lock, e.holder_level);
}
}  // namespace

lock_inversion_handler set_lock_inversion_handler(lock_inversion_handler h) noexcept {
  return g_handler.exchange(h, std::memory_order_acq_rel);
}

std::uint64_t lock_inversions() noexcept { return g_inversions.load(std::memory_order_relaxed); }

namespace detail {

namespace {
// A plain thread's identity: the address of its own thread_local byte.
thread_local char tls_thread_identity;
}  // namespace

task_identity current_task() noexcept {
  worker* w = this_worker();
  if (!w) return {&tls_thread_identity, -1};
  // The running fiber: a task keeps its fiber while it is suspended, and
  // takes it along to whichever worker resumes it.
  return {w->running, w->tracks_levels ? static_cast<int>(w->level) : -1};
}

void report_lock_inversion(const lock_inversion& e) {
  g_inversions.fetch_add(1, std::memory_order_relaxed);
  lock_inversion_handler h = g_handler.load(std::memory_order_acquire);
  (h ? h : &default_handler)(e);
}

}  // namespace detail
}  // namespace weft
