// weft — per-thread free lists for task records (async tasks, task_group
// children). A block freed on another thread joins that thread's list.
//
// Each list is capped so that producer/consumer patterns cannot hoard
// memory: a thread keeps at most max(4096, the peak number of its own blocks
// live at once) blocks per size class. A thread that frees what others
// allocated (a consumer) keeps 4096; a thread that spawns 200k tasks and then
// gets them (fork-join with many pending tasks) keeps up to 200k, so that the
// next burst is served from its list instead of malloc (which took 55% of the
// time of `weft::async`+`get` with 200k pending: weft-bench spawn). What a
// thread keeps is memory the program had in use at once, and it is returned
// when the thread exits.
#include <algorithm>
#include <cstddef>
#include <new>

#include "weft/detail/scheduler_hooks.hpp"

namespace weft::detail {

namespace {
constexpr std::size_t class_count = 4;          // 64, 128, 256, 512 bytes
constexpr std::size_t min_cached_per_class = 4096;

struct free_block { free_block* next; };

// Trivially destructible, so accessing it needs no TLS init wrapper (a call
// and a guard check on every access); the blocks are returned at thread exit
// by `cache_reaper`, which is touched only when a list first grows.
struct thread_cache {
  free_block* heads[class_count];
  std::size_t counts[class_count];
  // Blocks this thread allocated minus blocks it freed (negative for a
  // consumer), and the peak of that: the list's cap is max(floor, peak).
  long live[class_count];
  long peak_live[class_count];
  bool reaper_armed;
};
thread_local thread_cache tls_cache{};

struct cache_reaper {
  ~cache_reaper() {
    for (std::size_t c = 0; c < class_count; ++c) {
      while (free_block* b = tls_cache.heads[c]) {
        tls_cache.heads[c] = b->next;
        ::operator delete(b, std::size_t{64} << c);
      }
      tls_cache.counts[c] = 0;
    }
  }
};
thread_local cache_reaper tls_reaper;

inline int size_class(std::size_t n) noexcept {
  if (n <= 64) return 0;
  if (n <= 128) return 1;
  if (n <= 256) return 2;
  if (n <= 512) return 3;
  return -1;
}
}  // namespace

void* allocate_small(std::size_t bytes) {
  int c = size_class(bytes);
  if (c < 0) return ::operator new(bytes);
  thread_cache& tc = tls_cache;
  if (++tc.live[c] > tc.peak_live[c]) tc.peak_live[c] = tc.live[c];
  if (free_block* b = tc.heads[c]) {
    tc.heads[c] = b->next;
    --tc.counts[c];
    return b;
  }
  return ::operator new(std::size_t{64} << c);
}

void deallocate_small(void* p, std::size_t bytes) noexcept {
  int c = size_class(bytes);
  if (c < 0) {
    ::operator delete(p, bytes);
    return;
  }
  thread_cache& tc = tls_cache;
  --tc.live[c];
  const std::size_t cap = std::max(min_cached_per_class, static_cast<std::size_t>(std::max(0L, tc.peak_live[c])));
  if (tc.counts[c] >= cap) {
    ::operator delete(p, std::size_t{64} << c);
    return;
  }
  if (!tc.reaper_armed) {
    tc.reaper_armed = true;
    (void)&tls_reaper;  // odr-use: constructs it, registering its destructor
  }
  auto* b = static_cast<free_block*>(p);
  b->next = tc.heads[c];
  tc.heads[c] = b;
  ++tc.counts[c];
}

}  // namespace weft::detail
