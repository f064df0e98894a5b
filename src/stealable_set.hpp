// weft — stealable sets (ProWS, Cilk-L §4.2): each worker holds, per level,
// a share of the runtime's inactive deques that still hold work (a blocked
// task's parked deque, a deque donated at a fairness turn). Thieves pick a
// random worker, then a random entry of its set. A deque is in at most one
// set; its membership lock orders putting it in and taking it out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "weft/detail/chase_lev_deque.hpp"
#include "weft/detail/completion.hpp"
#include "weft/detail/scheduler_hooks.hpp"
#include "weft/detail/thread_annotations.hpp"

namespace weft::detail {

struct worker;

// A deque as the scheduler sees it: the Chase-Lev core plus its membership in
// a worker's set of stealable inactive deques.
struct deque_record : chase_lev_deque {
  // Orders the decisions "put into a set" (donation, resumption) and "take out
  // of its set" (found empty by a thief, adopted by a mugger), so a deque that
  // holds work is never left in no set (docs/design.md §Deques).
  spin_lock membership;
  unsigned level = default_priority_level;  // fixed while the deque is in use
  // The worker whose set holds it, or -1.
  int set_owner WEFT_GUARDED_BY(membership) = -1;
  // Its index in that set. Guarded by the set_owner's inactive[level].lock: a
  // lock of another object, chosen by set_owner, which the analysis cannot
  // name; remove_from_set and ensure_stealable write it under that lock.
  std::size_t set_pos = 0;
  deque_record* next_free = nullptr;  // deque pool link
};

// The inactive deques donated to one worker. Thieves pick a random worker,
// then a random entry here (or the worker's active deque).
struct stealable_set {
  spin_lock lock;
  std::vector<deque_record*> deques WEFT_GUARDED_BY(lock);
  // Number of entries; written under lock (release), read without it as a hint
  // (acquire) by thieves and by parking workers.
  std::atomic<std::size_t> size_hint{0};
};

// The membership protocol over every worker's sets of one runtime.
class stealable_sets {
 public:
  explicit stealable_sets(const std::vector<std::unique_ptr<worker>>& workers) noexcept
      : workers_(workers) {}

  // Puts a deque that holds work into a random worker's stealable set, unless
  // it is in one already. Any thread.
  // `preferred` >= 0 names the worker; -1 picks one at random.
  void ensure_stealable(deque_record* d, int preferred = -1) noexcept;
  // Takes d out of its set, if it is in one (a resumer adopting it).
  void leave_set(deque_record* d) noexcept;
  // Takes d out of its set if it looks empty (a thief found it so).
  void retire_if_empty(deque_record* d) noexcept;
  // A thief's steal from a random entry of victim's set at the thief's level.
  bool steal_from_set(worker* thief, worker* victim, work_item*& out);

 private:
  // Requires d->membership held and d->set_owner >= 0.
  void remove_from_set(deque_record* d) noexcept WEFT_REQUIRES(d->membership);

  const std::vector<std::unique_ptr<worker>>& workers_;
};

}  // namespace weft::detail
