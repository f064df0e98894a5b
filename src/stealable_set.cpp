#include "stealable_set.hpp"

#include "weft/detail/assert.hpp"
#include "worker.hpp"

namespace weft::detail {

namespace {
// A random number for threads that are not workers (resumers, injectors).
std::uint64_t any_thread_random() noexcept {
  thread_local std::uint64_t x =
      0x9E3779B97F4A7C15ULL ^ reinterpret_cast<std::uintptr_t>(&x);
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 0x2545F4914F6CDD1DULL;
}
}  // namespace

// --- deque sets (ProWS: each worker holds a share of the inactive deques) -------

void stealable_sets::ensure_stealable(deque_record* d, int preferred) noexcept {
  d->membership.lock();
  if (d->set_owner < 0) {
    auto v = preferred >= 0 ? static_cast<unsigned>(preferred)
                            : static_cast<unsigned>(any_thread_random() % workers_.size());
    stealable_set& set = workers_[v]->inactive[d->level];
    set.lock.lock();
    d->set_pos = set.deques.size();
    set.deques.push_back(d);
    // release: a thief reading the hint then taking the lock finds the entry.
    set.size_hint.store(set.deques.size(), std::memory_order_release);
    set.lock.unlock();
    d->set_owner = static_cast<int>(v);
  }
  d->membership.unlock();
}

// Requires d->membership held and d->set_owner >= 0.
void stealable_sets::remove_from_set(deque_record* d) noexcept {
  WEFT_ASSERT(d->set_owner >= 0 && static_cast<std::size_t>(d->set_owner) < workers_.size(),
              "remove_from_set: the deque is in a set");
  stealable_set& set = workers_[static_cast<unsigned>(d->set_owner)]->inactive[d->level];
  set.lock.lock();
  WEFT_ASSERT(d->set_pos < set.deques.size() && set.deques[d->set_pos] == d,
              "remove_from_set: set_pos is the deque's entry in its owner's set");
  deque_record* last = set.deques.back();
  set.deques[d->set_pos] = last;
  last->set_pos = d->set_pos;
  set.deques.pop_back();
  // release: see ensure_stealable().
  set.size_hint.store(set.deques.size(), std::memory_order_release);
  set.lock.unlock();
  d->set_owner = -1;
}

void stealable_sets::leave_set(deque_record* d) noexcept {
  d->membership.lock();
  if (d->set_owner >= 0) remove_from_set(d);
  d->membership.unlock();
}

void stealable_sets::retire_if_empty(deque_record* d) noexcept {
  d->membership.lock();
  // Under membership: a resumer pushes before taking this lock, so if its push
  // precedes us we see it (looks_empty loads with acquire) and keep the deque;
  // otherwise it finds the deque in no set after us and re-inserts it.
  if (d->set_owner >= 0 && d->looks_empty()) remove_from_set(d);
  d->membership.unlock();
}

bool stealable_sets::steal_from_set(worker* thief, worker* victim, work_item*& out) {
  stealable_set& set = victim->inactive[thief->level];
  set.lock.lock();
  std::size_t n = set.deques.size();
  if (n == 0) {
    set.lock.unlock();
    return false;
  }
  deque_record* d = set.deques[thief->next_random() % n];
  set.lock.unlock();
  // `d` may leave the set (or be adopted, or recycled) right now; deques are
  // type-stable and never change level, so the steal below is still valid,
  // takes work of our level, and its CAS decides.
  for (int attempt = 0; attempt < 4; ++attempt) {
    switch (d->steal(out)) {
      case chase_lev_deque::steal_result::success:
        return true;
      case chase_lev_deque::steal_result::empty:
        retire_if_empty(d);
        return false;
      case chase_lev_deque::steal_result::lost_race:
        break;
    }
  }
  return false;
}

}  // namespace weft::detail
